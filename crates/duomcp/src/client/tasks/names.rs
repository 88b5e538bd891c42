//! The task methods' names, and which requests carry the tasks extension: what the engine,
//! the adapters and the task code share, in a module that depends on none of them.

pub(crate) use duomcp_schema::tasks::ext::EXTENSION_ID;

pub(crate) const CALL: &str = "tools/call";
pub(crate) const GET: &str = "tasks/get";
pub(crate) const RESULT: &str = "tasks/result";
pub(crate) const LIST: &str = "tasks/list";
pub(crate) const CANCEL: &str = "tasks/cancel";
pub(crate) const UPDATE: &str = "tasks/update";

/// The requests that carry the tasks extension in their capabilities (2026-07-28).
pub(crate) fn declares_extension(method: &str) -> bool {
    method == CALL || method.starts_with("tasks/")
}
