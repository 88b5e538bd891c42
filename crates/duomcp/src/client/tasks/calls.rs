//! The [`Client`] methods of tasks: a call that becomes a task, the explicit task API, and
//! `tasks/list` (2025-11-25).

use super::names::{CALL, LIST};
use super::{task_metadata, TaskHandle, TaskInfo, TaskStart, MAX_PAGES};
use crate::client::error::ClientError;
use crate::client::options::RequestOptions;
use crate::client::{decode, object, Client};
use duomcp_schema::{CallToolResult, ListTasksResult, Task, TaskStatus, TaskSupport};
use serde::Serialize;
use serde_json::{json, Map, Value};

impl Client {
    /// 2025-11-25: adds `params.task` when the tool runs as a task (see the module docs).
    /// Returns whether it did.
    pub(in crate::client) async fn augment_for_task(
        &self,
        name: &str,
        params: &mut Map<String, Value>,
        opts: &RequestOptions,
    ) -> bool {
        if !self.era().tasks().asks_for_task() {
            return false;
        }
        let offered = self.inner.with_negotiated(|n| {
            n.and_then(|n| n.capabilities.tasks.as_ref())
                .and_then(|t| t.requests.as_ref())
                .and_then(|r| r.tools.as_ref())
                .and_then(|t| t.call.as_ref())
                .is_some()
        });
        if !offered {
            return false;
        }
        let support = match self.inner.tasks.support(name) {
            Some(s) => s,
            None => {
                // The tool's taskSupport is in its listing.
                // Boxed: once per tool, and it would weigh on every call's future.
                if let Err(e) = Box::pin(self.list_all_tools()).await {
                    tracing::debug!("could not list the tools to learn their task support: {e}");
                }
                self.inner.tasks.support(name).unwrap_or_default()
            }
        };
        let wanted = match support {
            TaskSupport::Required => true,
            TaskSupport::Optional => opts.as_task,
            TaskSupport::Forbidden => false,
        };
        if wanted {
            params.insert("task".into(), task_metadata(opts));
        }
        wanted
    }

    /// Tells a task apart from a result: `Err` carries the task.
    fn classify(
        &self,
        value: Value,
        augmented: bool,
    ) -> Result<Result<Value, (TaskHandle, TaskInfo)>, ClientError> {
        let era = self.era();
        let task = era.tasks().task_in_result(&value, augmented);
        let Some(task) = task else {
            return Ok(Ok(value));
        };
        let info = TaskInfo::parse(era, task)?;
        tracing::debug!(task = %info.task_id, "the call runs as a task");
        let handle = TaskHandle {
            client: self.clone(),
            id: info.task_id.clone(),
            era,
        };
        Ok(Err((handle, info)))
    }

    /// The result of a `tools/call`, polling the task when the server answered with one.
    pub(in crate::client) async fn settle_task(
        &self,
        value: Value,
        augmented: bool,
        opts: &RequestOptions,
    ) -> Result<Value, ClientError> {
        match self.classify(value, augmented)? {
            Ok(v) => Ok(v),
            // Boxed: following a task is rare next to a result, and large.
            Err((handle, info)) => Box::pin(handle.drive(opts, info)).await,
        }
    }

    /// Starts a tool call as a task and returns its handle without waiting for the result.
    /// In 2025-11-25 the call asks for a task (`params.task`, with
    /// [`RequestOptions::task_ttl`] if given); in 2026-07-28 the server decides, and may
    /// answer at once ([`TaskStart::Completed`]). Input the server asks for before the task
    /// starts (2026-07-28 MRTR rounds) is gathered with the handlers.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::{RequestOptions, TaskStart};
    /// match client.start_tool_task("slow_compute", serde_json::json!({ "seconds": 3 }), RequestOptions::new()).await? {
    ///     TaskStart::Task(task) => println!("running as task {}", task.id()),
    ///     TaskStart::Completed(result) => println!("done at once: {:?}", result.content),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn start_tool_task(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: RequestOptions,
    ) -> Result<TaskStart, ClientError> {
        let arguments = serde_json::to_value(arguments)
            .map_err(|e| ClientError::InvalidArguments(e.to_string()))?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        let arguments = object(CALL, arguments)?;
        if !arguments.is_empty() {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        let asks = self.era().tasks().asks_for_task();
        if asks {
            params.insert("task".into(), task_metadata(&options));
        }
        let value = self.inner.call(CALL, params, &options).await?;
        match self.classify(value, asks)? {
            Ok(v) => {
                let result: CallToolResult = decode(CALL, v)?;
                self.inner.tools.check(name, &result)?;
                Ok(TaskStart::Completed(Box::new(result)))
            }
            Err((handle, _)) => Ok(TaskStart::Task(handle)),
        }
    }

    /// A handle on the task `task_id` of this connection (no request is sent).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let status = client.task("a-task-id-from-earlier").get().await?.status;
    /// # let _ = status;
    /// # Ok(()) }
    /// ```
    pub fn task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle {
            client: self.clone(),
            id: task_id.into(),
            era: self.era(),
        }
    }

    /// The state of the task `task_id` (`tasks/get`).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let info = client.get_task("a-task-id").await?;
    /// println!("{}", info.status.as_str());
    /// # Ok(()) }
    /// ```
    pub async fn get_task(&self, task_id: &str) -> Result<TaskInfo, ClientError> {
        self.task(task_id).get().await
    }

    /// Cancels the task `task_id`; see [`TaskHandle::cancel`].
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let status = client.cancel_task("a-task-id").await?;
    /// # let _ = status;
    /// # Ok(()) }
    /// ```
    pub async fn cancel_task(&self, task_id: &str) -> Result<TaskStatus, ClientError> {
        self.task(task_id).cancel().await
    }

    /// One page of `tasks/list` (2025-11-25; the first page when `cursor` is `None`).
    /// 2026-07-28 has no `tasks/list`: [`ClientError::Unsupported`].
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let page = client.list_tasks(None).await?;
    /// for task in page.tasks {
    ///     println!("{} {}", task.task_id, task.status.as_str());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_tasks(&self, cursor: Option<String>) -> Result<ListTasksResult, ClientError> {
        if !self.era().tasks().has_list() {
            return Err(ClientError::Unsupported(
                "tasks/list exists only in 2025-11-25".into(),
            ));
        }
        let mut params = Map::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), Value::String(c));
        }
        let v = self
            .inner
            .request(LIST, params, &RequestOptions::default())
            .await?;
        decode(LIST, v)
    }

    /// Every task `tasks/list` shows, following `nextCursor` (2025-11-25).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let all = client.list_all_tasks().await?;
    /// println!("{} tasks", all.len());
    /// # Ok(()) }
    /// ```
    pub async fn list_all_tasks(&self) -> Result<Vec<Task>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self.list_tasks(cursor).await?;
            all.extend(page.tasks);
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(all),
            }
        }
        Err(ClientError::Protocol(format!(
            "tasks/list returned more than {MAX_PAGES} pages"
        )))
    }
}
