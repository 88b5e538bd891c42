//! The engine's side of what the era adapters decide: the two handshakes run (the adapters
//! say what to send and what the answers mean; this sends and reads), and the era-specific
//! messages sent on the client's behalf (`logging/setLevel`, the roots notification,
//! opening a subscription).

use super::Inner;
use crate::client::era::modern::{Discovery, ProbeFailure};
use crate::client::era::{self, legacy, modern, Adapter, Listen};
use crate::client::error::ClientError;
use crate::client::notify::Subscription;
use crate::client::options::RequestOptions;
use crate::era::Era;
use crate::util::lock;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{LoggingLevel, SubscriptionFilter};
use serde_json::{json, Map};
use std::sync::Arc;

impl Inner {
    /// The negotiated era's adapter; before a handshake, the unmarked era's (as `Client` uses).
    fn adapter_or_unmarked(&self) -> &'static dyn Adapter {
        era::of(self.era().unwrap_or(Era::UNMARKED))
    }

    /// `initialize` + `notifications/initialized` (2025-11-25), then the log level the client
    /// set, if the server logs. Also run after a restart.
    pub(crate) async fn initialize(self: &Arc<Self>) -> Result<(), ClientError> {
        let method = <methods::Initialize as RequestMethod>::NAME;
        let params = legacy::initialize_params(&self.handlers, &self.config.info)?;
        let speak = legacy::speak();
        let value = self
            .request_as(method, params, &legacy::initialize_options(), &speak)
            .await?;
        let (negotiated, has_logging) = legacy::accept_initialize(value)?;
        self.set_negotiated(negotiated);
        self.notify(
            <methods::Initialized as NotificationMethod>::NAME,
            json!({}),
        )
        .await?;
        let level = *lock(&self.log_level);
        if let (Some(level), true) = (level, has_logging) {
            self.send_log_level(level).await?;
        }
        Ok(())
    }

    /// `server/discover` (2026-07-28), retried with another version on `-32022` or when the
    /// answer does not list the one asked. `probing`: the era is not known yet (a failure may
    /// mean a 2025-11-25 server: [`ProbeFailure::Legacy`]).
    pub(crate) async fn discover(self: &Arc<Self>, probing: bool) -> Result<(), ProbeFailure> {
        let method = <methods::Discover as RequestMethod>::NAME;
        let opts = modern::discover_options(probing, self.config.probe_timeout);
        let mut version = self.config.preferred_version.clone();
        let mut tried: Vec<String> = Vec::new();
        loop {
            modern::may_try(&tried)?;
            tried.push(version.clone());
            let speak = modern::speak(&version);
            let step = match self.request_as(method, Map::new(), &opts, &speak).await {
                Ok(value) => modern::accept_discover(value, &version, &tried),
                Err(e) => {
                    let evidence = self.transport.era_evidence();
                    modern::discover_failed(e, &version, &tried, probing, evidence)
                }
            };
            match step {
                Discovery::Done(negotiated) => {
                    self.set_negotiated(*negotiated);
                    return Ok(());
                }
                Discovery::Retry(next) => version = next,
                Discovery::Failed(failure) => return Err(failure),
            }
        }
    }

    /// Tells the server the log level, if the era has a request for it.
    pub(crate) async fn send_log_level(
        self: &Arc<Self>,
        level: LoggingLevel,
    ) -> Result<(), ClientError> {
        match self.adapter_or_unmarked().set_log_level(level)? {
            Some(out) => self
                .request(out.method, out.params, &RequestOptions::default())
                .await
                .map(drop),
            None => Ok(()),
        }
    }

    /// Tells the server the roots changed, if the era has a notification for it.
    pub(crate) async fn send_roots_changed(self: &Arc<Self>) -> Result<(), ClientError> {
        match self.adapter_or_unmarked().roots_changed() {
            Some(method) => self.notify(method, json!({})).await,
            None => Ok(()),
        }
    }

    /// Opens a subscription to the changes named in `filter`, the way the era does.
    pub(crate) async fn listen(
        self: &Arc<Self>,
        filter: SubscriptionFilter,
    ) -> Result<Subscription, ClientError> {
        match self.adapter_or_unmarked().listen() {
            Listen::InSession => self.listen_legacy(filter).await,
            Listen::ListenRequest => self.listen_modern(filter, &RequestOptions::default()).await,
        }
    }
}
