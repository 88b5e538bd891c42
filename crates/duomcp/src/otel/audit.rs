//! The audit log: one JSON line per tool call.
//!
//! ```json
//! {"time":"2026-12-02T01:02:03.456Z","tool":"greet","outcome":"ok","duration_ms":0.412,"request_id":"3","subject":"alice","client_id":"cli"}
//! ```
//!
//! `outcome` is `ok`, `tool_error` (`isError: true`), `error` (with `error_code`) or
//! `cancelled`. The principal is its subject and client id, never a token. Arguments are left
//! out unless [`AuditLog::with_arguments`] names the tool. Lines are written (and flushed)
//! one at a time under a lock, so they never interleave.

use super::outcome::Outcome;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Where the audit lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditTarget {
    /// Standard error.
    Stderr,
    /// A file, appended to (created when missing).
    File(PathBuf),
}

/// An audit log of tool calls: one JSON line each.
///
/// ```json
/// {"time":"2026-12-02T01:02:03.456Z","tool":"greet","outcome":"ok","duration_ms":0.412,"request_id":"3","subject":"alice","client_id":"cli"}
/// ```
///
/// `outcome` is `ok`, `tool_error` (`isError: true`), `error` (with `error_code`) or
/// `cancelled`. The principal is its subject and client id, never a token. Arguments are left
/// out unless [`AuditLog::with_arguments`] names the tool.
///
/// ```
/// use duomcp::otel::AuditLog;
/// let audit = AuditLog::to_writer(std::io::sink()).with_arguments("search");
/// # let _ = audit;
/// ```
pub struct AuditLog {
    out: Mutex<Box<dyn Write + Send>>,
    with_arguments: HashSet<String>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("with_arguments", &self.with_arguments)
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// An audit log written to `target`.
    pub fn open(target: &AuditTarget) -> std::io::Result<Self> {
        match target {
            AuditTarget::Stderr => Ok(Self::to_writer(std::io::stderr())),
            AuditTarget::File(path) => Self::file(path),
        }
    }

    /// An audit log appended to the file at `path`.
    pub fn file(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self::to_writer(file))
    }

    /// An audit log written to any writer.
    pub fn to_writer(out: impl Write + Send + 'static) -> Self {
        AuditLog {
            out: Mutex::new(Box::new(out)),
            with_arguments: HashSet::new(),
        }
    }

    /// Records the arguments of calls to `tool` too (they are left out by default).
    pub fn with_arguments(mut self, tool: impl Into<String>) -> Self {
        self.with_arguments.insert(tool.into());
        self
    }

    pub(crate) fn write(&self, line: AuditLine) {
        let Ok(mut text) = serde_json::to_vec(&line) else {
            return;
        };
        text.push(b'\n');
        let mut out = crate::util::lock(&self.out);
        // An audit sink that fails (disk full, closed pipe) must not fail the request.
        if let Err(e) = out.write_all(&text).and_then(|()| out.flush()) {
            tracing::warn!("audit log: {e}");
        }
    }
}

/// What is known of a tool call when it starts.
pub(crate) struct AuditEntry {
    time: String,
    tool: String,
    request_id: String,
    subject: Option<String>,
    client_id: Option<String>,
    arguments: Option<Value>,
}

#[derive(serde::Deserialize)]
struct Arguments {
    #[serde(default)]
    arguments: Option<Value>,
}
impl AuditEntry {
    pub(crate) fn new(
        log: &AuditLog,
        tool: &str,
        request_id: &str,
        principal: Option<&duomcp_proto::principal::Principal>,
        params: Option<&str>,
    ) -> Self {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let arguments = if log.with_arguments.contains(tool) {
            params
                .and_then(|p| serde_json::from_str::<Arguments>(p).ok())
                .and_then(|a| a.arguments)
        } else {
            None
        };
        AuditEntry {
            time: duomcp_proto::time::iso8601(now_ms),
            tool: tool.to_owned(),
            request_id: request_id.to_owned(),
            subject: principal.and_then(|p| p.subject()).map(str::to_owned),
            client_id: principal.and_then(|p| p.client_id()).map(str::to_owned),
            arguments,
        }
    }

    pub(crate) fn finish(self, elapsed: Duration, outcome: &Outcome<'_>) -> AuditLine {
        let (outcome, error_code) = match outcome.error {
            Some((code, _)) => ("error", Some(code)),
            None if outcome.cancelled => ("cancelled", None),
            None if outcome.tool_error => ("tool_error", None),
            None => ("ok", None),
        };
        AuditLine {
            time: self.time,
            tool: self.tool,
            outcome,
            error_code,
            duration_ms: elapsed.as_secs_f64() * 1000.0,
            request_id: self.request_id,
            subject: self.subject,
            client_id: self.client_id,
            arguments: self.arguments,
        }
    }
}

/// One line of the audit log.
#[derive(Serialize)]
pub(crate) struct AuditLine {
    time: String,
    tool: String,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<i64>,
    duration_ms: f64,
    request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Value>,
}
