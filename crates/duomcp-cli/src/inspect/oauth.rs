//! The page's **Authorize** action: the library's OAuth flow for an HTTP server, run by the
//! inspector (`POST /api/authorize {"url"}`), its tokens kept where `duomcp login` keeps them
//! (so the next connect to that URL, here or from any client command, uses them).
//!
//! The flow listens for the redirect on a free loopback port (`http://127.0.0.1:PORT/callback`)
//! and opens no browser: the authorization URL is answered to the page at once, the page
//! opens it. One flow at a time per inspector, [`FLOW_TIMEOUT`] at most; its outcome is an
//! `authorization` event on the page's stream, and `GET /api/authorize` says where it stands.

use super::session::Shared;
use crate::commands::login;
use duomcp::auth::{
    AuthorizationResponse, LoopbackRedirect, OAuthClient, RedirectHandler, StoredToken,
};
use duomcp::client::auth::{AuthError, AuthFuture};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a flow waits for the user to come back through the redirect.
pub(super) const FLOW_TIMEOUT: Duration = Duration::from_secs(300);
/// How long `POST /api/authorize` waits for the authorization URL (discovery and
/// registration come first).
const START_WAIT: Duration = Duration::from_secs(30);

/// The inspector's flow: the state of the last one (`GET /api/authorize`).
#[derive(Default)]
pub(crate) struct Flow {
    state: Mutex<Option<Value>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Flow {
    /// Where the last flow stands: `{"state": "idle"}` when none ran.
    pub(super) fn status(&self) -> Value {
        lock(&self.state)
            .clone()
            .unwrap_or_else(|| json!({ "state": "idle" }))
    }

    fn set(&self, value: Value) {
        *lock(&self.state) = Some(value);
    }
}

/// What `POST /api/authorize` answers.
pub(super) enum Started {
    /// The page opens this URL; the outcome comes later.
    Url(String),
    /// The flow already ended (a stored token was still good).
    Done(Value),
}

/// Why a flow did not start.
pub(super) enum Refused {
    /// Another flow is under way.
    Busy(String),
    /// A bad request (not an http(s) URL).
    Bad(String),
    /// The flow failed before the authorization URL (discovery, registration, …).
    Failed(String),
}

enum Step {
    Url(String),
    Done(Result<StoredToken, String>),
}

/// A [`LoopbackRedirect`] that also hands the authorization URL over (instead of a browser).
struct Announce {
    inner: LoopbackRedirect,
    tx: mpsc::UnboundedSender<Step>,
}

impl RedirectHandler for Announce {
    fn redirect_uri(&self) -> String {
        self.inner.redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>> {
        let _ = self.tx.send(Step::Url(authorization_url.to_owned()));
        self.inner.authorize(authorization_url)
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port for the redirect: {e}"))
}

fn done(url: &str, token: &StoredToken) -> Value {
    json!({ "state": "authorized", "url": url, "issuer": token.issuer, "scopes": token.scopes })
}

/// Starts the flow for `url`; the tokens go to the credentials file of `duomcp login`.
pub(super) async fn start(
    flow: &Arc<Flow>,
    shared: &Arc<Shared>,
    url: String,
) -> Result<Started, Refused> {
    if !crate::commands::is_url(&url) {
        return Err(Refused::Bad(format!("`{url}` is not an http(s) URL")));
    }
    let store = login::default_store()
        .ok_or_else(|| Refused::Failed("no home directory for the credentials file".into()))?;
    {
        let mut state = lock(&flow.state);
        if let Some(s) = state.as_ref().filter(|s| s["state"] == "pending") {
            return Err(Refused::Busy(format!(
                "an authorization for {} is already under way; finish it or wait for it to time out",
                s["url"].as_str().unwrap_or("")
            )));
        }
        *state = Some(json!({ "state": "pending", "url": url }));
    }
    let fail = |message: String| {
        flow.set(json!({ "state": "failed", "url": url, "error": { "message": message } }));
        Refused::Failed(message)
    };
    let port = free_port().map_err(&fail)?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = OAuthClient::builder()
        .client_name("duomcp")
        .redirect(Announce {
            inner: LoopbackRedirect::new(port)
                .open_browser(false)
                .timeout(FLOW_TIMEOUT),
            tx: tx.clone(),
        })
        .store(store)
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let (flow2, shared2, url2) = (flow.clone(), shared.clone(), url.clone());
    tokio::spawn(async move {
        // Bounded even if the authorization server stalls after the redirect.
        let outcome =
            match tokio::time::timeout(FLOW_TIMEOUT + START_WAIT * 2, client.login(&url2)).await {
                Ok(Ok(token)) => Ok(token),
                Ok(Err(e)) => Err(format!("{url2}: {e}")),
                Err(_) => Err(format!("authorization for {url2} timed out")),
            };
        let state = match &outcome {
            Ok(token) => done(&url2, token),
            Err(message) => {
                json!({ "state": "failed", "url": url2, "error": { "message": message } })
            }
        };
        flow2.set(state.clone());
        let mut event = state;
        event["type"] = json!("authorization");
        shared2.event(event);
        let _ = tx.send(Step::Done(outcome));
    });
    match tokio::time::timeout(START_WAIT, rx.recv()).await {
        Ok(Some(Step::Url(u))) => Ok(Started::Url(u)),
        Ok(Some(Step::Done(Ok(token)))) => Ok(Started::Done(done(&url, &token))),
        Ok(Some(Step::Done(Err(message)))) => Err(Refused::Failed(message)),
        // The flow goes on (and ends within its own bound); the page hears of it.
        Ok(None) | Err(_) => Err(Refused::Failed(format!(
            "the authorization for {url} did not reach the authorization server's page within {} s",
            START_WAIT.as_secs()
        ))),
    }
}
