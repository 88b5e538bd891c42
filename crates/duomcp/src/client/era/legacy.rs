//! The 2025-11-25 adapter: the `initialize` handshake, the server's requests for input,
//! `logging/setLevel`, `notifications/roots/list_changed`, `resources/subscribe` and the
//! session's notifications.

use super::{Adapter, Envelope};
use crate::client::engine::{Inner, Negotiated, Speak};
use crate::client::error::ClientError;
use crate::client::handlers::{Handlers, RootsSource};
use crate::client::notify::Subscription;
use crate::client::options::RequestOptions;
use crate::era::Era;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{
    version, ClientCapabilities, InitializeRequestParams, InitializeResult, LoggingLevel,
    SubscriptionFilter,
};
use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// 2025-11-25.
pub(crate) struct Legacy;

impl Adapter for Legacy {
    fn capabilities(&self, handlers: &Handlers) -> ClientCapabilities {
        let mut caps = handlers.capabilities();
        // Only a static list can change under the client's control, and only 2025-11-25
        // has the notification that announces it.
        if let (Some(roots), Some(RootsSource::Static(_))) = (&mut caps.roots, &handlers.roots) {
            roots.list_changed = Some(true);
        }
        caps.tasks = crate::client::tasks::hosted_capability(handlers);
        caps
    }

    fn envelope<'a>(
        &self,
        _inner: &'a Inner,
        _method: &str,
        _version: &'a str,
        _opts: &RequestOptions,
        _caller: &dyn Fn(&str) -> bool,
    ) -> Envelope<'a> {
        // The session holds what 2026-07-28 repeats on every request.
        Envelope::default()
    }

    fn mirrors_headers(&self) -> bool {
        false
    }

    fn input_in_rounds(&self) -> bool {
        false
    }

    fn serves_server_requests(&self) -> bool {
        true
    }

    fn ping_method(&self) -> &'static str {
        <methods::Ping as RequestMethod>::NAME
    }

    fn set_log_level<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        level: LoggingLevel,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let mut params = Map::new();
            params.insert(
                "level".into(),
                serde_json::to_value(level)
                    .map_err(|e| ClientError::InvalidArguments(e.to_string()))?,
            );
            inner
                .request(
                    <methods::SetLevel as RequestMethod>::NAME,
                    params,
                    &RequestOptions::default(),
                )
                .await
                .map(drop)
        })
    }

    fn roots_changed<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(inner.notify(
            <methods::RootsListChanged as NotificationMethod>::NAME,
            json!({}),
        ))
    }

    fn listen<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        filter: SubscriptionFilter,
    ) -> BoxFuture<'a, Result<Subscription, ClientError>> {
        Box::pin(inner.listen_legacy(filter))
    }

    fn after_restart(&self, inner: &Arc<Inner>) {
        let inner = inner.clone();
        tokio::spawn(async move {
            if let Err(e) = initialize(&inner).await {
                tracing::warn!("re-initializing the restarted server failed: {e}");
            }
        });
    }
}

/// `initialize` + `notifications/initialized` (2025-11-25). Also used after a restart.
pub(crate) async fn initialize(inner: &Arc<Inner>) -> Result<(), ClientError> {
    let method = <methods::Initialize as RequestMethod>::NAME;
    let params = InitializeRequestParams::new(
        version::LATEST_LEGACY,
        Legacy.capabilities(&inner.handlers),
        inner.config.info.clone(),
    );
    let params = match serde_json::to_value(params) {
        Ok(Value::Object(m)) => m,
        _ => {
            return Err(ClientError::Protocol(
                "cannot encode the initialize params".into(),
            ))
        }
    };
    // `initialize` must not be cancelled.
    let opts = RequestOptions {
        no_cancel: true,
        ..RequestOptions::default()
    };
    let speak = Speak {
        era: Era::Legacy,
        version: version::LATEST_LEGACY.to_owned(),
    };
    let value = inner.request_as(method, params, &opts, &speak).await?;
    let result: InitializeResult = serde_json::from_value(value).map_err(|e| {
        ClientError::Protocol(format!(
            "the answer to initialize is not an InitializeResult: {e}"
        ))
    })?;
    if !version::is_legacy(&result.protocol_version) {
        return Err(ClientError::UnsupportedVersion {
            requested: version::LATEST_LEGACY.to_owned(),
            supported: vec![result.protocol_version],
        });
    }
    let has_logging = result.capabilities.logging.is_some();
    inner.set_negotiated(Negotiated {
        era: Era::Legacy,
        protocol_version: result.protocol_version,
        capabilities: result.capabilities,
        server_info: Some(result.server_info),
        instructions: result.instructions,
    });
    inner
        .notify(
            <methods::Initialized as NotificationMethod>::NAME,
            json!({}),
        )
        .await?;
    let level = *inner.log_level.lock().unwrap_or_else(|p| p.into_inner());
    if let (Some(level), true) = (level, has_logging) {
        Legacy.set_log_level(inner, level).await?;
    }
    Ok(())
}
