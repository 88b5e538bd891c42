//! The routes: the page's files, and the JSON API the page calls (all behind [`guard`]).
//!
//! | route | what |
//! |---|---|
//! | `GET /`, `/app.js`, `/bridge.js`, `/app.css` | the page ([`page`]) |
//! | `GET /api/info` | the connection: revision, capabilities, server, instructions |
//! | `POST /api/connect` | `{"url"}` or `{"command": [..]}`, with `"era"` and `"headers"`; or only `{"era"}` to reconnect in another revision |
//! | `POST /api/rpc` | `{"method", "params", "call"?}` → `{"result"}` or `{"error"}` |
//! | `POST /api/cancel/{call}` | cancels call `call` |
//! | `POST /api/input/{id}` | the page's answer to an input request (the result object) |
//! | `GET /api/events` | server-sent events: trace entries, progress, task status, input requests |
//! | `GET /api/trace`, `/api/trace.jsonl` | the trace kept, as JSON or JSON Lines |
//! | `POST /api/subscribe`, `/api/unsubscribe` | `{"uri"}`: listen to a resource's updates (`updated` events), or stop |
//! | `POST /api/authorize` | `{"url"}`: starts the OAuth flow for an HTTP server ([`oauth`]) → `{"authorizationUrl"}` to open; the outcome is an `authorization` event |
//! | `GET /api/authorize` | where the last flow stands: `{"state": "idle" \| "pending" \| "authorized" \| "failed", "url", "error"?}` |
//! | `POST /api/roots` | `{"roots": [{"uri", "name"?}]}`: the roots offered to the server from now on |
//!
//! The views' origin ([`sandbox_router`], its own port and token) serves one file:
//! `GET /sandbox.html`, the sandbox proxy a tool's view renders in.

use super::guard;
use super::oauth;
use super::page;
use super::session::{parse_era, Inspector};
use crate::commands::Target;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use serde::Deserialize;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// The largest request body the API takes (a tool's arguments, an answer).
pub(super) const BODY_LIMIT: usize = 4 << 20;

pub(super) fn router(inspector: Arc<Inspector>) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/app.js", get(page::script))
        .route("/bridge.js", get(page::bridge))
        .route("/app.css", get(page::style))
        .route("/api/info", get(info))
        .route("/api/connect", post(connect))
        .route("/api/rpc", post(rpc))
        .route("/api/cancel/{call}", post(cancel))
        .route("/api/input/{id}", post(input))
        .route("/api/events", get(events))
        .route("/api/trace", get(trace))
        .route("/api/trace.jsonl", get(trace_lines))
        .route("/api/authorize", post(authorize).get(authorize_status))
        .route("/api/roots", post(roots))
        .route("/api/subscribe", post(subscribe))
        .route("/api/unsubscribe", post(unsubscribe))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            inspector.clone(),
            guard::check,
        ))
        .with_state(inspector)
}

/// The views' origin: the sandbox proxy only.
pub(super) fn sandbox_router(inspector: Arc<Inspector>) -> Router {
    Router::new()
        .route("/sandbox.html", get(page::sandbox))
        .layer(axum::middleware::from_fn_with_state(
            inspector.clone(),
            guard::check_sandbox,
        ))
        .with_state(inspector)
}

fn problem(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({ "error": { "message": message.into() } })),
    )
        .into_response()
}

async fn info(State(inspector): State<Arc<Inspector>>) -> Json<Value> {
    Json(inspector.info().await)
}

#[derive(Deserialize)]
struct ConnectBody {
    url: Option<String>,
    #[serde(default)]
    command: Vec<String>,
    era: Option<String>,
    #[serde(default)]
    headers: Vec<String>,
}

/// The client commands' own options, parsed from what the page sent (so a server is reached
/// exactly as `duomcp tools` would reach it).
#[derive(Parser)]
#[command(no_binary_name = true)]
struct FormTarget {
    #[arg(value_name = "URL|NAME")]
    target_url: Option<String>,
    #[command(flatten)]
    target: Target,
}

fn target_of(body: &ConnectBody) -> Result<Target, String> {
    let mut args: Vec<String> = Vec::new();
    if let Some(era) = &body.era {
        args.extend(["--era".into(), era.clone()]);
    }
    for h in &body.headers {
        args.extend(["--header".into(), h.clone()]);
    }
    match (&body.url, body.command.is_empty()) {
        (Some(url), true) => args.push(url.clone()),
        (None, false) => {
            args.push("--".into());
            args.extend(body.command.iter().cloned());
        }
        _ => return Err("give either a URL or a command".into()),
    }
    let form = FormTarget::try_parse_from(&args).map_err(|e| e.to_string())?;
    let mut target = form.target;
    target.adopt_url(form.target_url);
    target.resolve().map_err(|f| f.message)?;
    if let Some(problem) = target.usage_problem() {
        return Err(problem.into());
    }
    Ok(target)
}

async fn connect(
    State(inspector): State<Arc<Inspector>>,
    Json(body): Json<ConnectBody>,
) -> Response {
    let outcome = if body.url.is_none() && body.command.is_empty() {
        let Some(era) = &body.era else {
            return problem(
                StatusCode::BAD_REQUEST,
                "give a URL, a command, or an era to switch to",
            );
        };
        match parse_era(era) {
            Ok(era) => inspector.switch_era(era).await,
            Err(f) => return problem(StatusCode::BAD_REQUEST, f.message),
        }
    } else {
        match target_of(&body) {
            Ok(target) => inspector.connect(target).await,
            Err(e) => return problem(StatusCode::BAD_REQUEST, e),
        }
    };
    match outcome {
        Ok(info) => Json(info).into_response(),
        Err(f) => problem(StatusCode::BAD_GATEWAY, f.message),
    }
}

#[derive(Deserialize)]
struct AuthorizeBody {
    url: String,
}

async fn authorize(
    State(inspector): State<Arc<Inspector>>,
    Json(body): Json<AuthorizeBody>,
) -> Response {
    match oauth::start(inspector.oauth(), inspector.shared(), body.url).await {
        Ok(oauth::Started::Url(url)) => Json(json!({ "authorizationUrl": url })).into_response(),
        Ok(oauth::Started::Done(state)) => Json(state).into_response(),
        Err(oauth::Refused::Busy(m)) => problem(StatusCode::CONFLICT, m),
        Err(oauth::Refused::Bad(m)) => problem(StatusCode::BAD_REQUEST, m),
        Err(oauth::Refused::Failed(m)) => problem(StatusCode::BAD_GATEWAY, m),
    }
}

async fn authorize_status(State(inspector): State<Arc<Inspector>>) -> Json<Value> {
    Json(inspector.oauth().status())
}

#[derive(Deserialize)]
struct RpcBody {
    method: String,
    #[serde(default)]
    params: Option<Value>,
    call: Option<String>,
}

async fn rpc(State(inspector): State<Arc<Inspector>>, Json(body): Json<RpcBody>) -> Response {
    let params = body.params.unwrap_or_else(|| json!({}));
    if !params.is_object() {
        return problem(StatusCode::BAD_REQUEST, "params must be a JSON object");
    }
    Json(inspector.request(body.method, params, body.call).await).into_response()
}

#[derive(Deserialize)]
struct RootsBody {
    roots: Vec<duomcp::schema::Root>,
}

async fn roots(State(inspector): State<Arc<Inspector>>, Json(body): Json<RootsBody>) -> Response {
    match inspector.set_roots(body.roots).await {
        Ok(roots) => Json(json!({ "roots": roots })).into_response(),
        Err(e) => problem(StatusCode::BAD_REQUEST, e),
    }
}

#[derive(Deserialize)]
struct UriBody {
    uri: String,
}

async fn subscribe(State(inspector): State<Arc<Inspector>>, Json(body): Json<UriBody>) -> Response {
    match inspector.subscribe(body.uri.clone()).await {
        Ok(()) => Json(json!({ "subscribed": body.uri })).into_response(),
        Err(e) => problem(StatusCode::BAD_REQUEST, e),
    }
}

async fn unsubscribe(
    State(inspector): State<Arc<Inspector>>,
    Json(body): Json<UriBody>,
) -> Response {
    if inspector.unsubscribe(&body.uri) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        problem(
            StatusCode::NOT_FOUND,
            format!("not subscribed to {}", body.uri),
        )
    }
}

async fn cancel(State(inspector): State<Arc<Inspector>>, Path(call): Path<String>) -> Response {
    if inspector.cancel(&call) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        problem(StatusCode::NOT_FOUND, format!("no call `{call}` in flight"))
    }
}

async fn input(
    State(inspector): State<Arc<Inspector>>,
    Path(id): Path<u64>,
    Json(answer): Json<Value>,
) -> Response {
    if inspector.shared().answer(id, answer) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        problem(
            StatusCode::NOT_FOUND,
            format!("no input request {id} is waiting"),
        )
    }
}

async fn events(State(inspector): State<Arc<Inspector>>) -> impl IntoResponse {
    let rx = inspector.shared().subscribe();
    let hello = json!({ "type": "hello", "pending": inspector.shared().pending() });
    let stream = futures_util::stream::unfold((Some(hello), rx), |(first, mut rx)| async move {
        if let Some(hello) = first {
            return Some((
                Ok::<_, Infallible>(Event::default().data(hello.to_string())),
                (None, rx),
            ));
        }
        let event = match rx.recv().await {
            Ok(v) => v,
            Err(RecvError::Lagged(n)) => json!({ "type": "lagged", "missed": n }),
            Err(RecvError::Closed) => return None,
        };
        Some((Ok(Event::default().data(event.to_string())), (None, rx)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn trace(State(inspector): State<Arc<Inspector>>) -> Json<Value> {
    let (entries, dropped) = inspector.shared().trace_entries();
    Json(json!({ "entries": entries, "dropped": dropped }))
}

async fn trace_lines(State(inspector): State<Arc<Inspector>>) -> Response {
    let (entries, _) = inspector.shared().trace_entries();
    let mut body = String::new();
    for e in entries {
        body.push_str(&e.to_string());
        body.push('\n');
    }
    (
        [
            (header::CONTENT_TYPE, "application/jsonl; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"duomcp-trace.jsonl\"",
            ),
        ],
        body,
    )
        .into_response()
}
