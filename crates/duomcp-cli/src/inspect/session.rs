//! The inspector's one connection to the server, and what the page sees of it: the events it
//! streams (notifications, progress, task status, input requests), the input requests waiting
//! for the page's answer, and the trace of every exchange. Each of them is bounded
//! (LIMITS.md, "duomcp inspect").

use crate::commands::{errors, Failure, Target};
use duomcp::client::{Client, ClientBuilder, EraChoice, InputError, RequestOptions, ServerEvent};
use duomcp::schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    LoggingLevel, Root, SubscriptionFilter,
};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, oneshot, RwLock};

/// Events buffered for a page that reads slowly; past it the page is told how many it missed.
pub(super) const EVENT_BUFFER: usize = 256;
/// Trace entries kept (the oldest go first).
pub(super) const TRACE_ENTRIES: usize = 2_000;
/// Bytes of trace kept, counted as serialized JSON (the oldest go first).
pub(super) const TRACE_BYTES: usize = 16 << 20;
/// Input requests (elicitation, sampling) waiting for the page at once; more are refused.
pub(super) const PENDING_INPUTS: usize = 16;
/// How long an input request waits for the page before it is answered with an error.
pub(super) const INPUT_WAIT: Duration = Duration::from_secs(600);
/// Calls in flight at once (each can be cancelled from the page); more are refused.
pub(super) const CALLS_IN_FLIGHT: usize = 64;
/// Roots the page may offer the server at once.
pub(super) const MAX_ROOTS: usize = 64;
/// Bytes of one root's URI (and of its name).
pub(super) const MAX_ROOT_BYTES: usize = 8 << 10;
/// Resources the page listens to at once.
pub(super) const MAX_SUBSCRIPTIONS: usize = 32;
/// HTTP exchanges of requests kept until their response's trace entry takes them; past it the
/// oldest becomes a trace entry of its own.
pub(super) const HTTP_UNCLAIMED: usize = 256;
/// Headers whose values the trace never shows (the scheme of an `Authorization` stays).
const REDACTED: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// A live connection.
struct Live {
    client: Client,
    shown: String,
    target: Target,
    notes: tokio::task::JoinHandle<()>,
}

/// What the page and the connection share: events, pending input, the trace.
pub(super) struct Shared {
    started: Instant,
    events: broadcast::Sender<Value>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, (oneshot::Sender<Value>, Value)>>,
    trace: Mutex<Trace>,
    calls: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// HTTP exchanges of requests, by JSON-RPC id, until a trace entry takes them.
    http: Mutex<VecDeque<(String, Value)>>,
}

/// A header map as the trace shows it: `[name, value]` pairs, in order, credentials redacted.
fn shown_headers(headers: &axum::http::HeaderMap) -> Value {
    let pairs: Vec<Value> = headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes());
            let value = if REDACTED.contains(&name.as_str()) {
                match value.split_once(' ') {
                    Some((scheme, _)) if name.as_str().ends_with("authorization") => {
                        format!("{scheme} [redacted]")
                    }
                    _ => "[redacted]".to_owned(),
                }
            } else {
                value.into_owned()
            };
            json!([name.as_str(), value])
        })
        .collect();
    Value::Array(pairs)
}

/// The JSON-RPC id as a key (the same id gives the same key whatever its type).
fn id_key(id: &duomcp::jsonrpc::RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

#[derive(Default)]
struct Trace {
    entries: VecDeque<(usize, Value)>,
    bytes: usize,
    seq: u64,
    dropped: u64,
}

/// The inspector: its token and port, the configured target, and the live connection.
pub(crate) struct Inspector {
    token: String,
    port: u16,
    /// The views' origin (MCP Apps): its own token and port.
    sandbox: (String, u16),
    configured: Option<Target>,
    live: RwLock<Option<Live>>,
    shared: Arc<Shared>,
    /// The roots offered to the server (`--root`, then edited in the page); kept across
    /// reconnects.
    roots: Mutex<Vec<Root>>,
    /// The resources the page listens to, each followed by a task (ended with the connection).
    subscriptions: Mutex<HashMap<String, tokio::task::JoinHandle<()>>>,
    /// The page's OAuth flow (one at a time).
    oauth: Arc<super::oauth::Flow>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn ms(&self) -> f64 {
        (self.started.elapsed().as_micros() as f64) / 1000.0
    }

    /// Sends an event to every open page (none open: it is dropped; the trace keeps it).
    pub(super) fn event(&self, event: Value) {
        let _ = self.events.send(event);
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<Value> {
        self.events.subscribe()
    }

    /// Adds `entry` to the trace (with its sequence number and time) and shows it to the page.
    pub(super) fn trace(&self, mut entry: Value) {
        let mut trace = lock(&self.trace);
        trace.seq += 1;
        if let Value::Object(o) = &mut entry {
            o.insert("seq".into(), json!(trace.seq));
            o.insert("t".into(), json!(self.ms()));
        }
        let size = entry.to_string().len();
        trace.bytes += size;
        trace.entries.push_back((size, entry.clone()));
        while trace.entries.len() > TRACE_ENTRIES
            || (trace.bytes > TRACE_BYTES && trace.entries.len() > 1)
        {
            if let Some((gone, _)) = trace.entries.pop_front() {
                trace.bytes -= gone;
                trace.dropped += 1;
            }
        }
        drop(trace);
        self.event(json!({ "type": "trace", "entry": entry }));
    }

    /// An HTTP exchange of the connection: a request's is kept for its response's trace entry
    /// ([`take_http`](Self::take_http)); any other (a notification, a response, a `GET`
    /// stream, a `DELETE`) is a trace entry of its own.
    fn http_exchange(&self, x: &duomcp::client::transport::http::HttpExchange) {
        let shown = json!({
            "method": x.method.as_str(),
            "url": x.url,
            "status": x.status.as_u16(),
            "request": shown_headers(&x.request_headers),
            "response": shown_headers(&x.response_headers),
            "message": x.message_method,
        });
        match (&x.message_id, &x.message_method) {
            (Some(id), Some(_)) => {
                let evicted = {
                    let mut http = lock(&self.http);
                    http.push_back((id_key(id), shown));
                    (http.len() > HTTP_UNCLAIMED)
                        .then(|| http.pop_front())
                        .flatten()
                };
                if let Some((_, old)) = evicted {
                    self.http_entry(old);
                }
            }
            _ => self.http_entry(shown),
        }
    }

    /// An HTTP exchange as a trace entry of its own: named for the message it carried, else
    /// for its HTTP method (`GET`, `DELETE`).
    fn http_entry(&self, shown: Value) {
        let method = match &shown["message"] {
            Value::String(m) => m.clone(),
            _ => shown["method"].as_str().unwrap_or_default().to_owned(),
        };
        self.trace(json!({ "dir": "out", "kind": "http", "method": method, "http": [shown] }));
    }

    /// Takes the HTTP exchanges kept for the requests `ids` (all of them with `None`).
    fn take_http(&self, ids: Option<&[String]>) -> Vec<Value> {
        let mut http = lock(&self.http);
        let mut taken = Vec::new();
        http.retain(|(id, x)| {
            let take = ids.is_none_or(|ids| ids.contains(id));
            if take {
                taken.push(x.clone());
            }
            !take
        });
        taken
    }

    /// The trace kept, oldest first, and how many entries were dropped to keep it bounded.
    pub(super) fn trace_entries(&self) -> (Vec<Value>, u64) {
        let trace = lock(&self.trace);
        (
            trace.entries.iter().map(|(_, e)| e.clone()).collect(),
            trace.dropped,
        )
    }

    /// Asks the page for input (`kind` "elicitation" or "sampling") and waits for its answer.
    async fn ask(&self, kind: &str, method: &str, params: Value) -> Result<Value, InputError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.len() >= PENDING_INPUTS {
                return Err(InputError::new(format!(
                    "the inspector has {PENDING_INPUTS} input requests waiting for the page already"
                )));
            }
            let event = json!({ "type": "input", "id": id, "kind": kind, "params": params });
            pending.insert(id, (tx, event));
        }
        self.trace(json!({ "dir": "in", "kind": "request", "method": method, "params": params }));
        if let Some((_, event)) = lock(&self.pending).get(&id) {
            self.event(event.clone());
        }
        let answer = tokio::time::timeout(INPUT_WAIT, rx).await;
        lock(&self.pending).remove(&id);
        match answer {
            Ok(Ok(value)) => {
                self.trace(
                    json!({ "dir": "out", "kind": "response", "method": method, "result": value }),
                );
                self.event(json!({ "type": "input_done", "id": id }));
                Ok(value)
            }
            Ok(Err(_)) => Err(InputError::new(
                "the inspector stopped before the page answered",
            )),
            Err(_) => {
                self.event(json!({ "type": "input_done", "id": id }));
                Err(InputError::new(format!(
                    "nobody answered in the inspector's page within {} s",
                    INPUT_WAIT.as_secs()
                )))
            }
        }
    }

    /// [`ask`](Self::ask) with the server's typed params, reading the page's answer as `R`
    /// (`what` names it in the error when it does not fit).
    async fn ask_as<R: serde::de::DeserializeOwned>(
        &self,
        kind: &str,
        method: &str,
        params: impl serde::Serialize,
        what: &str,
    ) -> Result<R, InputError> {
        let params = serde_json::to_value(params).map_err(InputError::new)?;
        let answer = self.ask(kind, method, params).await?;
        serde_json::from_value(answer)
            .map_err(|e| InputError::new(format!("the page's answer is not {what}: {e}")))
    }

    /// The page's answer to input request `id`; false when nothing waits under that id.
    pub(super) fn answer(&self, id: u64, value: Value) -> bool {
        match lock(&self.pending).remove(&id) {
            Some((tx, _)) => tx.send(value).is_ok(),
            None => false,
        }
    }

    /// The input requests still waiting, oldest first (for a page opened after they came).
    pub(super) fn pending(&self) -> Vec<Value> {
        let pending = lock(&self.pending);
        let mut ids: Vec<&u64> = pending.keys().collect();
        ids.sort_unstable();
        ids.into_iter().map(|id| pending[id].1.clone()).collect()
    }
}

/// A notification as the page shows it: its method and params.
fn notification_json(n: &ServerEvent) -> (String, Value) {
    let to = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    match n {
        ServerEvent::ToolsListChanged => ("notifications/tools/list_changed".into(), json!({})),
        ServerEvent::PromptsListChanged => ("notifications/prompts/list_changed".into(), json!({})),
        ServerEvent::ResourcesListChanged => {
            ("notifications/resources/list_changed".into(), json!({}))
        }
        ServerEvent::ResourceUpdated { uri } => (
            "notifications/resources/updated".into(),
            json!({ "uri": uri }),
        ),
        ServerEvent::Log(m) => ("notifications/message".into(), to(serde_json::to_value(m))),
        ServerEvent::Progress(p) => ("notifications/progress".into(), to(serde_json::to_value(p))),
        ServerEvent::ElicitationComplete(p) => (
            "notifications/elicitation/complete".into(),
            to(serde_json::to_value(p)),
        ),
        ServerEvent::Other { method, params } => (method.clone(), params.clone()),
        other => ("notification".into(), Value::String(format!("{other:?}"))),
    }
}

impl Inspector {
    pub(super) fn new(
        token: String,
        port: u16,
        sandbox: (String, u16),
        target: Target,
    ) -> Inspector {
        let roots = target.roots.iter().map(Root::new).collect();
        let configured = target.usage_problem().is_none().then_some(target);
        Inspector {
            roots: Mutex::new(roots),
            subscriptions: Mutex::new(HashMap::new()),
            oauth: Arc::default(),
            token,
            port,
            sandbox,
            configured,
            live: RwLock::new(None),
            shared: Arc::new(Shared {
                started: Instant::now(),
                events: broadcast::channel(EVENT_BUFFER).0,
                next_id: AtomicU64::new(1),
                pending: Mutex::new(HashMap::new()),
                trace: Mutex::new(Trace::default()),
                calls: Mutex::new(HashMap::new()),
                http: Mutex::new(VecDeque::new()),
            }),
        }
    }

    pub(super) fn token(&self) -> &str {
        &self.token
    }

    pub(super) fn port(&self) -> u16 {
        self.port
    }

    /// The token of the views' origin.
    pub(super) fn sandbox_token(&self) -> &str {
        &self.sandbox.0
    }

    /// The port of the views' origin.
    pub(super) fn sandbox_port(&self) -> u16 {
        self.sandbox.1
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The page's OAuth flow.
    pub(super) fn oauth(&self) -> &Arc<super::oauth::Flow> {
        &self.oauth
    }

    /// Whether a server was named on the command line.
    pub(super) fn has_target(&self) -> bool {
        self.configured.is_some()
    }

    /// Connects to the server named on the command line.
    pub(super) async fn connect_configured(&self) -> Result<Value, Failure> {
        let Some(target) = &self.configured else {
            return Err(Failure::new("no server was named on the command line"));
        };
        self.connect(target.clone()).await
    }

    /// Connects to `target` (closing the connection held, if any) and returns what
    /// [`info`](Self::info) says.
    pub(super) async fn connect(&self, mut target: Target) -> Result<Value, Failure> {
        // A refused stored token is reported; the page's Authorize gets a new one.
        target.no_browser_login = true;
        let shared = self.shared.clone();
        let shared2 = self.shared.clone();
        let shared3 = self.shared.clone();
        // Always offered (an empty list included), so the page can change them later.
        let roots = lock(&self.roots).clone();
        let customize = move |b: ClientBuilder| {
            // The page renders views (MCP Apps), and the trace shows HTTP headers.
            b.log_level(LoggingLevel::Debug)
                .apps()
                .on_http_exchange(move |x| shared3.http_exchange(x))
                .roots(roots.clone())
                .on_elicit(move |params: ElicitRequestParams| {
                    let shared = shared.clone();
                    async move {
                        let what = "an ElicitResult";
                        shared
                            .ask_as::<ElicitResult>(
                                "elicitation",
                                "elicitation/create",
                                params,
                                what,
                            )
                            .await
                    }
                })
                .on_sample(move |params: CreateMessageRequestParams| {
                    let shared = shared2.clone();
                    async move {
                        let what = "a CreateMessageResult";
                        shared
                            .ask_as::<CreateMessageResult>(
                                "sampling",
                                "sampling/createMessage",
                                params,
                                what,
                            )
                            .await
                    }
                })
        };
        let shown = target.shown();
        self.shared.trace(json!({ "dir": "out", "kind": "connect", "target": shown, "era": era_name(target.era) }));
        let started = Instant::now();
        // The handshake's HTTP exchanges go with its trace entry; those no response took
        // (requests the client made on its own: task polls, listens) are shown now.
        for left in self.shared.take_http(None) {
            self.shared.http_entry(left);
        }
        let connected = target.connect_with(customize).await;
        let (client, _logs) = match connected {
            Ok(c) => c,
            Err(f) => {
                let http = self.shared.take_http(None);
                self.shared.trace(
                    json!({ "dir": "in", "kind": "connect", "error": { "message": f.message }, "http": http }),
                );
                return Err(f);
            }
        };
        let mut notes = client.notifications();
        let shared = self.shared.clone();
        let notes = tokio::spawn(async move {
            while let Some(n) = notes.recv().await {
                let (method, params) = notification_json(&n);
                shared.trace(json!({ "dir": "in", "kind": "notification", "method": method, "params": params }));
            }
        });
        let live = Live {
            client,
            shown,
            target,
            notes,
        };
        // Subscriptions belong to the connection being replaced.
        for (_, follow) in lock(&self.subscriptions).drain() {
            follow.abort();
        }
        let old = self.live.write().await.replace(live);
        if let Some(old) = old {
            close(old).await;
        }
        let info = self.info().await;
        let mut entry = json!({
            "dir": "in", "kind": "connect", "ms": started.elapsed().as_secs_f64() * 1000.0, "result": info
        });
        let http = self.shared.take_http(None);
        if !http.is_empty() {
            entry["http"] = Value::Array(http);
        }
        self.shared.trace(entry);
        Ok(info)
    }

    /// Reconnects to the same server in another revision (`era`: auto, legacy or modern).
    pub(super) async fn switch_era(&self, era: EraChoice) -> Result<Value, Failure> {
        let target = match &*self.live.read().await {
            Some(live) => live.target.clone(),
            None => return Err(Failure::new("not connected")),
        };
        let mut target = target;
        target.era = era;
        self.connect(target).await
    }

    /// What the page shows of the connection: revision, capabilities, server, instructions.
    pub(super) async fn info(&self) -> Value {
        match &*self.live.read().await {
            None => {
                json!({ "connected": false, "configured": self.configured.as_ref().map(Target::shown) })
            }
            Some(live) => {
                let c = &live.client;
                json!({
                    "connected": true,
                    "sandbox": { "port": self.sandbox.1, "token": self.sandbox.0 },
                    "target": live.shown,
                    "era": c.era().to_string(),
                    "eraChoice": era_name(live.target.era),
                    "protocolVersion": c.protocol_version(),
                    "serverInfo": c.server_info(),
                    "capabilities": c.server_capabilities(),
                    "instructions": c.instructions(),
                    "closed": c.closed_reason(),
                    "roots": lock(&self.roots).clone(),
                    "subscriptions": lock(&self.subscriptions).keys().cloned().collect::<Vec<_>>(),
                })
            }
        }
    }

    /// Sends one request for the page (`call` names it, for progress and cancel) and traces
    /// it both ways.
    pub(super) async fn request(
        &self,
        method: String,
        params: Value,
        call: Option<String>,
    ) -> Value {
        let client = match &*self.live.read().await {
            Some(live) => live.client.clone(),
            None => return json!({ "error": { "message": "not connected" } }),
        };
        let shared = self.shared.clone();
        // The JSON-RPC ids the call went out with: its HTTP exchanges go with its response.
        let sent: Arc<Mutex<Vec<String>>> = Arc::default();
        let ids = sent.clone();
        let mut options = RequestOptions::new().on_sent(move |id| lock(&ids).push(id_key(id)));
        // A tool run as a task goes through `call_tool_with`, which asks for the task in the
        // revision's own form and follows it to its result.
        let as_task = method == "tools/call" && params.get("task").is_some();
        if let Some(call) = call.clone() {
            let (s1, s2, c1, c2) = (shared.clone(), shared.clone(), call.clone(), call.clone());
            options = options
                .on_progress(move |p| {
                    s1.event(json!({ "type": "progress", "call": c1, "progress": p }));
                })
                .on_task_status(move |t| {
                    s2.event(json!({
                        "type": "task", "call": c2, "taskId": t.task_id,
                        "status": t.status.as_str(), "message": t.status_message,
                    }));
                });
        }
        if as_task {
            options = options.as_task();
        }
        let mut params = params;
        // `task` is the page's wish, not a param: the client adds the revision's own form.
        if let Value::Object(o) = &mut params {
            o.remove("task");
        }
        shared.trace(json!({ "dir": "out", "kind": "request", "method": method, "params": params, "call": call }));
        let started = Instant::now();
        let m = method.clone();
        let work = tokio::spawn(async move {
            if as_task {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let arguments = params
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                let result = client.call_tool_with(&name, arguments, options).await?;
                Ok(serde_json::to_value(result).unwrap_or(Value::Null))
            } else {
                client.request(&m, params, options).await
            }
        });
        if let Some(call) = &call {
            let mut calls = lock(&shared.calls);
            if calls.len() >= CALLS_IN_FLIGHT {
                work.abort();
                return json!({ "error": { "message": format!("{CALLS_IN_FLIGHT} calls are in flight already") } });
            }
            calls.insert(call.clone(), work.abort_handle());
        }
        let outcome = work.await;
        if let Some(call) = &call {
            lock(&shared.calls).remove(call);
        }
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let answer = match outcome {
            Ok(Ok(result)) => json!({ "result": result }),
            Ok(Err(e)) => {
                let rpc = e.rpc_error();
                json!({ "error": {
                    "message": errors::describe(&e, None),
                    "code": rpc.map(|r| r.code),
                    "data": rpc.and_then(|r| r.data.clone()),
                } })
            }
            Err(j) if j.is_cancelled() => {
                json!({ "error": { "message": "cancelled in the inspector" } })
            }
            Err(j) => json!({ "error": { "message": format!("the request failed: {j}") } }),
        };
        let mut entry =
            json!({ "dir": "in", "kind": "response", "method": method, "call": call, "ms": ms });
        if let (Value::Object(e), Value::Object(a)) = (&mut entry, &answer) {
            e.extend(a.clone());
        }
        let ids = std::mem::take(&mut *lock(&sent));
        if !ids.is_empty() {
            let http = shared.take_http(Some(&ids));
            if !http.is_empty() {
                entry["http"] = Value::Array(http);
            }
        }
        shared.trace(entry);
        answer
    }

    /// Replaces the roots offered to the server (a 2025-11-25 server is told they changed).
    /// `Err` says why the list is refused; nothing changes then.
    pub(super) async fn set_roots(&self, roots: Vec<Root>) -> Result<Vec<Root>, String> {
        if roots.len() > MAX_ROOTS {
            return Err(format!("at most {MAX_ROOTS} roots"));
        }
        for root in &roots {
            if !root.uri.starts_with("file://") {
                return Err(format!("a root is a file:// URI, not {:?}", root.uri));
            }
            let name = root.name.as_deref().unwrap_or_default();
            if root.uri.len() > MAX_ROOT_BYTES || name.len() > MAX_ROOT_BYTES {
                return Err(format!(
                    "a root's URI and name are at most {MAX_ROOT_BYTES} bytes"
                ));
            }
        }
        *lock(&self.roots) = roots.clone();
        self.shared
            .trace(json!({ "dir": "out", "kind": "roots", "roots": roots }));
        let client = self.live.read().await.as_ref().map(|l| l.client.clone());
        if let Some(client) = client {
            client
                .set_roots(roots.clone())
                .await
                .map_err(|e| errors::describe(&e, None))?;
        }
        Ok(roots)
    }

    /// Listens to changes of resource `uri` (2025-11-25: `resources/subscribe`; 2026-07-28:
    /// `subscriptions/listen`): each `notifications/resources/updated` goes to the page as an
    /// `updated` event, and into the trace.
    pub(super) async fn subscribe(&self, uri: String) -> Result<(), String> {
        if uri.is_empty() || uri.len() > MAX_ROOT_BYTES {
            return Err(format!("a resource URI of 1 to {MAX_ROOT_BYTES} bytes"));
        }
        {
            let subs = lock(&self.subscriptions);
            if subs.contains_key(&uri) {
                return Ok(());
            }
            if subs.len() >= MAX_SUBSCRIPTIONS {
                return Err(format!("at most {MAX_SUBSCRIPTIONS} subscriptions at once"));
            }
        }
        let client = match &*self.live.read().await {
            Some(live) => live.client.clone(),
            None => return Err("not connected".into()),
        };
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![uri.clone()]),
            ..SubscriptionFilter::default()
        };
        self.shared
            .trace(json!({ "dir": "out", "kind": "subscribe", "uri": uri }));
        let mut subscription = client
            .listen(filter)
            .await
            .map_err(|e| errors::describe(&e, None))?;
        let shared = self.shared.clone();
        let watched = uri.clone();
        let follow = tokio::spawn(async move {
            while let Some(n) = subscription.next().await {
                if let ServerEvent::ResourceUpdated { uri } = n {
                    shared.trace(json!({ "dir": "in", "kind": "update", "method": "notifications/resources/updated", "params": { "uri": uri } }));
                    shared.event(json!({ "type": "updated", "uri": uri }));
                }
            }
            shared.event(json!({ "type": "subscription_ended", "uri": watched }));
        });
        if let Some(old) = lock(&self.subscriptions).insert(uri, follow) {
            old.abort();
        }
        Ok(())
    }

    /// Stops listening to resource `uri`; false when the page was not listening to it.
    pub(super) fn unsubscribe(&self, uri: &str) -> bool {
        match lock(&self.subscriptions).remove(uri) {
            Some(follow) => {
                follow.abort();
                self.shared
                    .trace(json!({ "dir": "out", "kind": "unsubscribe", "uri": uri }));
                true
            }
            None => false,
        }
    }

    /// Cancels call `call`; false when no such call is in flight.
    pub(super) fn cancel(&self, call: &str) -> bool {
        match lock(&self.shared.calls).remove(call) {
            Some(handle) => {
                handle.abort();
                true
            }
            None => false,
        }
    }

    /// Closes the connection (at exit).
    pub(super) async fn close(&self) {
        if let Some(live) = self.live.write().await.take() {
            close(live).await;
        }
    }
}

async fn close(live: Live) {
    live.notes.abort();
    let _ = tokio::time::timeout(Duration::from_secs(3), live.client.close()).await;
}

fn era_name(era: EraChoice) -> &'static str {
    era.as_str()
}

/// Parses the page's era choice.
pub(super) fn parse_era(s: &str) -> Result<EraChoice, Failure> {
    s.parse().map_err(Failure::new)
}
