//! The client's own task state: the task support of the listed tools, and the tasks this
//! client hosts (2025-11-25, [`ClientBuilder::host_tasks`](crate::client::ClientBuilder::host_tasks)).

use super::names::{CANCEL, GET, LIST, RESULT};
use crate::client::handlers::{HandlerCall, Handlers};
use crate::client::options::InputFn;
use crate::jsonrpc::{self, error_code, ErrorObject};
use crate::util::lock;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use duomcp_schema::{
    meta, ClientTasksCapability, ClientTasksElicitationCapability, ClientTasksRequestsCapability,
    ClientTasksSamplingCapability, JsonObject, TaskStatus, TaskSupport, Tool,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// Task support of the listed tools, and the tasks this client hosts.
#[derive(Default)]
pub(crate) struct ClientTasks {
    /// `None` until the tools were listed (or after they changed).
    support: Mutex<Option<HashMap<String, TaskSupport>>>,
    hosted: Hosted,
}

impl ClientTasks {
    /// Records the task support of listed tools (a page of `tools/list`).
    pub(crate) fn remember(&self, tools: &[Tool]) {
        let mut support = lock(&self.support);
        let map = support.get_or_insert_with(HashMap::new);
        for tool in tools {
            let s = tool
                .execution
                .as_ref()
                .and_then(|e| e.task_support)
                .unwrap_or_default();
            map.insert(tool.name.clone(), s);
        }
    }

    /// Forgets the tools' task support (the tool list changed).
    pub(crate) fn forget_tools(&self) {
        *lock(&self.support) = None;
    }

    /// `None` when the tools were not listed yet; an unlisted tool is `forbidden`.
    pub(super) fn support(&self, tool: &str) -> Option<TaskSupport> {
        lock(&self.support)
            .as_ref()
            .map(|m| m.get(tool).copied().unwrap_or_default())
    }

    /// Serves what the server asks of the tasks this client hosts: a task-augmented
    /// elicitation or sampling request, or `tasks/*`. `None`: not a hosted-task matter.
    pub(crate) async fn serve(
        &self,
        handlers: &Handlers,
        method: &str,
        params: Option<&str>,
        own: Option<&Arc<InputFn>>,
    ) -> Option<Result<Value, ErrorObject>> {
        if !handlers.host_tasks {
            return None;
        }
        let parse = || -> Result<Value, ErrorObject> {
            match params {
                Some(p) => {
                    serde_json::from_str(p).map_err(|e| invalid(format!("Invalid params: {e}")))
                }
                None => Ok(json!({})),
            }
        };
        match method {
            "elicitation/create" | "sampling/createMessage" => {
                let has_handler = if method == "elicitation/create" {
                    handlers.elicit.is_some()
                } else {
                    handlers.sample.is_some()
                };
                if !has_handler && own.is_none() {
                    return None;
                }
                let (raw, value) = match (params, parse()) {
                    (Some(raw), Ok(value)) => (raw, value),
                    (_, Err(e)) => return Some(Err(e)),
                    (None, Ok(_)) => return None,
                };
                let task = value.get("task")?;
                Some(
                    self.hosted
                        .create(handlers.clone(), own.cloned(), method, task, raw),
                )
            }
            GET | RESULT | LIST | CANCEL => {
                let params = match parse() {
                    Ok(p) => p,
                    Err(e) => return Some(Err(e)),
                };
                Some(match method {
                    GET => self.hosted.lookup(&params).map(|t| t.value()),
                    RESULT => self.hosted.result(&params).await,
                    LIST => self.hosted.list(&params),
                    _ => self.hosted.cancel(&params),
                })
            }
            _ => None,
        }
    }
}

/// The `tasks` capability a 2025-11-25 client declares when it hosts tasks.
pub(crate) fn hosted_capability(handlers: &Handlers) -> Option<ClientTasksCapability> {
    if !handlers.host_tasks || (handlers.elicit.is_none() && handlers.sample.is_none()) {
        return None;
    }
    Some(ClientTasksCapability {
        list: Some(JsonObject::new()),
        cancel: Some(JsonObject::new()),
        requests: Some(ClientTasksRequestsCapability {
            sampling: handlers
                .sample
                .as_ref()
                .map(|_| ClientTasksSamplingCapability {
                    create_message: Some(JsonObject::new()),
                    ..Default::default()
                }),
            elicitation: handlers
                .elicit
                .as_ref()
                .map(|_| ClientTasksElicitationCapability {
                    create: Some(JsonObject::new()),
                    ..Default::default()
                }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn invalid(message: String) -> ErrorObject {
    jsonrpc::error(error_code::INVALID_PARAMS, message)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// How long a hosted task is kept when the server asks for no ttl, and at most.
const HOSTED_DEFAULT_TTL_MS: u64 = 3_600_000;
const HOSTED_MAX_TTL_MS: u64 = 24 * 3_600_000;
/// The polling interval hosted tasks suggest.
const HOSTED_POLL_MS: u64 = 100;
/// `tasks/list` page size of hosted tasks.
const HOSTED_PAGE: usize = 50;

#[derive(Clone)]
struct HostedState {
    status: TaskStatus,
    message: Option<String>,
    updated_ms: u64,
    outcome: Option<Result<Value, ErrorObject>>,
}

struct HostedTask {
    id: String,
    created_ms: u64,
    ttl_ms: u64,
    state: watch::Sender<HostedState>,
    job: Mutex<Option<AbortHandle>>,
}

impl HostedTask {
    fn expired(&self, now: u64) -> bool {
        duomcp_proto::tasks::expired(self.created_ms, Some(self.ttl_ms), now)
    }

    /// The task as 2025-11-25 writes it (`Task`).
    fn value(&self) -> Value {
        let s = self.state.borrow().clone();
        let mut t = json!({
            "taskId": self.id,
            "status": s.status,
            "createdAt": duomcp_proto::time::iso8601(self.created_ms),
            "lastUpdatedAt": duomcp_proto::time::iso8601(s.updated_ms),
            "ttl": self.ttl_ms,
            "pollInterval": HOSTED_POLL_MS,
        });
        if let Some(m) = s.message {
            t["statusMessage"] = json!(m);
        }
        t
    }

    /// Moves to a terminal status unless already there. Returns whether it did.
    fn finish(
        &self,
        status: TaskStatus,
        message: Option<String>,
        outcome: Option<Result<Value, ErrorObject>>,
    ) -> bool {
        self.state.send_if_modified(|s| {
            if s.status.is_terminal() {
                return false;
            }
            s.status = status;
            s.message = message;
            s.outcome = outcome;
            s.updated_ms = now_ms();
            true
        })
    }
}

/// The tasks this client hosts, in creation order.
#[derive(Default)]
struct Hosted {
    tasks: Mutex<Vec<Arc<HostedTask>>>,
}

impl Hosted {
    /// Drops expired tasks (stopping their handlers).
    fn purge(&self, now: u64) {
        lock(&self.tasks).retain(|t| {
            if t.expired(now) {
                if let Some(job) = lock(&t.job).take() {
                    job.abort();
                }
                false
            } else {
                true
            }
        });
    }

    fn create(
        &self,
        handlers: Handlers,
        own: Option<Arc<InputFn>>,
        method: &str,
        task: &Value,
        params: &str,
    ) -> Result<Value, ErrorObject> {
        let requested = match task.get("ttl") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                invalid(format!(
                    "Invalid params: task.ttl must be a non-negative integer, got {v}"
                ))
            })?),
        };
        let ttl =
            duomcp_proto::tasks::grant_ttl(requested, HOSTED_DEFAULT_TTL_MS, HOSTED_MAX_TTL_MS);
        let call = match HandlerCall::parse(method, Some(params)) {
            Some(call) => call?,
            None => {
                return Err(invalid(format!(
                    "Invalid params: {method} cannot be a task"
                )))
            }
        };
        // The request's own answerer (the one request of ours it belongs to, see
        // `RequestOptions::on_input`) when it has one, else the client's handlers.
        let job = async move {
            match own {
                Some(own) => call.run_own(own.as_ref()).await,
                None => call.run(&handlers).await,
            }
        };
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| {
            jsonrpc::error(
                error_code::INTERNAL_ERROR,
                format!("Internal error: no randomness for a task id ({e})"),
            )
        })?;
        let now = now_ms();
        let task = Arc::new(HostedTask {
            id: URL_SAFE_NO_PAD.encode(bytes),
            created_ms: now,
            ttl_ms: ttl,
            state: watch::channel(HostedState {
                status: TaskStatus::Working,
                message: None,
                updated_ms: now,
                outcome: None,
            })
            .0,
            job: Mutex::new(None),
        });
        self.purge(now);
        lock(&self.tasks).push(task.clone());
        let running = task.clone();
        let handle = tokio::spawn(async move {
            let outcome = job.await;
            let (status, message) = match &outcome {
                Ok(_) => (TaskStatus::Completed, None),
                Err(e) => (TaskStatus::Failed, Some(e.message.clone())),
            };
            running.finish(status, message, Some(outcome));
            lock(&running.job).take();
        });
        // The job may have finished already; then there is nothing to abort.
        if !task.state.borrow().status.is_terminal() {
            *lock(&task.job) = Some(handle.abort_handle());
        }
        tracing::debug!(task = %task.id, method, "hosting a task");
        Ok(json!({ "task": task.value() }))
    }

    fn lookup(&self, params: &Value) -> Result<Arc<HostedTask>, ErrorObject> {
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(invalid("Invalid params: taskId is required".into()));
        };
        self.purge(now_ms());
        lock(&self.tasks)
            .iter()
            .find(|t| t.id == id)
            .cloned()
            .ok_or_else(|| {
                invalid(format!(
                    "Failed to retrieve task: no task {id:?} (unknown or expired)"
                ))
            })
    }

    async fn result(&self, params: &Value) -> Result<Value, ErrorObject> {
        let task = self.lookup(params)?;
        let mut rx = task.state.subscribe();
        let state = rx
            .wait_for(|s| s.status.is_terminal())
            .await
            .map(|s| s.clone())
            .map_err(|_| jsonrpc::error(error_code::INTERNAL_ERROR, "the task is gone"))?;
        match state.outcome {
            Some(Ok(mut v)) => {
                if let Value::Object(m) = &mut v {
                    let meta = m.entry("_meta").or_insert_with(|| json!({}));
                    if let Value::Object(meta) = meta {
                        meta.insert(meta::RELATED_TASK.into(), json!({ "taskId": task.id }));
                    }
                }
                Ok(v)
            }
            Some(Err(e)) => Err(e),
            None => Err(invalid(format!(
                "Task {} was {} before it produced a result",
                task.id,
                state.status.as_str()
            ))),
        }
    }

    fn list(&self, params: &Value) -> Result<Value, ErrorObject> {
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => c
                .parse::<usize>()
                .map_err(|_| invalid(format!("Invalid params: bad cursor {c:?}")))?,
            Some(other) => return Err(invalid(format!("Invalid params: bad cursor {other}"))),
        };
        self.purge(now_ms());
        let tasks = lock(&self.tasks).clone();
        if start > tasks.len() {
            return Err(invalid(format!("Invalid params: bad cursor \"{start}\"")));
        }
        let end = (start + HOSTED_PAGE).min(tasks.len());
        let mut page =
            json!({ "tasks": tasks[start..end].iter().map(|t| t.value()).collect::<Vec<_>>() });
        if end < tasks.len() {
            page["nextCursor"] = json!(end.to_string());
        }
        Ok(page)
    }

    fn cancel(&self, params: &Value) -> Result<Value, ErrorObject> {
        let task = self.lookup(params)?;
        let moved = task.finish(
            TaskStatus::Cancelled,
            Some("The task was cancelled by request.".into()),
            None,
        );
        if !moved {
            return Err(invalid(format!(
                "Cannot cancel task: already in terminal status '{}'",
                task.state.borrow().status.as_str()
            )));
        }
        if let Some(job) = lock(&task.job).take() {
            job.abort();
        }
        Ok(task.value())
    }
}
