//! Test helpers for duomcp: validate JSON-RPC wire messages against the official MCP JSON
//! schemas of revisions 2025-11-25 and 2026-07-28 (plus the ext-tasks schema, used with
//! 2026-07-28), and the MCP Apps extension's messages against its published schema ([`apps`]).
//! Read what a test got back: a tool result's [`text`], the requests and notifications among
//! recorded messages ([`Messages`], e.g. on an in-memory connection's tap).
//!
//! ```
//! use duomcp_testkit::WireValidator;
//! use serde_json::json;
//!
//! let v = WireValidator::for_revision("2026-07-28");
//! let ok = json!({"content": [], "resultType": "complete"});
//! assert!(v.validate_result("tools/call", &ok).is_ok());
//! let err = v.validate_result("tools/call", &json!({"content": []})).unwrap_err();
//! assert!(err.contains("CallToolResult"), "{err}");
//! ```
//!
//! Compiled validators are cached process-wide per schema document and definition.
#![warn(missing_docs)]

pub mod apps;
pub mod cluster;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod process;
pub mod raw_http;
pub mod results;

pub use results::{text, Messages, ToolText};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use duomcp_schema::methods;
use duomcp_schema::version;
use serde_json::{json, Value};

const LEGACY_SCHEMA: &str = include_str!("../../duomcp-schema/schemas/schema-2025-11-25.json");
const MODERN_SCHEMA: &str = include_str!("../../duomcp-schema/schemas/schema-2026-07-28.json");
const EXT_TASKS_SCHEMA: &str =
    include_str!("../../duomcp-schema/schemas/ext-tasks-draft-schema.json");
/// The MCP Apps schema, as `@modelcontextprotocol/ext-apps` 2.0.4 publishes it
/// (`dist/src/generated/schema.json`).
const EXT_APPS_SCHEMA: &str = include_str!("../schemas/ext-apps-2.0.4-schema.json");

/// How many schema errors an error string reports at most.
const MAX_ERRORS: usize = 5;

/// One of the vendored schema documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Doc {
    Legacy,
    Modern,
    ExtTasks,
    ExtApps,
}

impl Doc {
    fn name(self) -> &'static str {
        match self {
            Doc::Legacy => "2025-11-25",
            Doc::Modern => "2026-07-28",
            Doc::ExtTasks => "ext-tasks",
            Doc::ExtApps => "ext-apps",
        }
    }

    fn document(self) -> Result<&'static Value, String> {
        static DOCS: OnceLock<[Result<Value, String>; 4]> = OnceLock::new();
        let docs = DOCS.get_or_init(|| {
            [
                LEGACY_SCHEMA,
                MODERN_SCHEMA,
                EXT_TASKS_SCHEMA,
                EXT_APPS_SCHEMA,
            ]
            .map(|src| serde_json::from_str(src).map_err(|e| format!("bad schema JSON: {e}")))
        });
        let i = match self {
            Doc::Legacy => 0,
            Doc::Modern => 1,
            Doc::ExtTasks => 2,
            Doc::ExtApps => 3,
        };
        docs[i].as_ref().map_err(Clone::clone)
    }

    fn has_definition(self, def: &str) -> bool {
        self.document().is_ok_and(|d| {
            d["$defs"]
                .as_object()
                .is_some_and(|defs| defs.contains_key(def))
        })
    }
}

type Cache = Mutex<HashMap<(Doc, String), Arc<jsonschema::Validator>>>;

/// The compiled validator for `#/$defs/<def>` of `doc` (cached).
fn compiled(doc: Doc, def: &str) -> Result<Arc<jsonschema::Validator>, String> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (doc, def.to_owned());
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(v.clone());
    }
    if !doc.has_definition(def) {
        return Err(format!("{} schema has no definition {def}", doc.name()));
    }
    let schema = doc.document()?;
    let wrapper = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": schema["$defs"],
        "$ref": format!("#/$defs/{def}"),
    });
    let validator = jsonschema::validator_for(&wrapper)
        .map_err(|e| format!("cannot compile {} {def}: {e}", doc.name()))?;
    let validator = Arc::new(validator);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, validator.clone());
    Ok(validator)
}

/// Validates `instance` against `def` of `doc`; the error names the definition and the
/// instance path of each failure.
fn check(doc: Doc, def: &str, instance: &Value) -> Result<(), String> {
    let validator = compiled(doc, def)?;
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .take(MAX_ERRORS)
        .map(|e| describe(&e, 0))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} {def} validation failed: {}",
            doc.name(),
            errors.join("; ")
        ))
    }
}

/// One schema error as `at <instance path>: <message>`; for a failed `anyOf`, the errors
/// of the closest branch (the one without `const` mismatches and with the fewest errors)
/// are appended, since the `anyOf` message alone does not say what is wrong.
fn describe(e: &jsonschema::ValidationError<'_>, depth: usize) -> String {
    let path = e.instance_path().to_string();
    let path = if path.is_empty() {
        "(root)".to_owned()
    } else {
        path
    };
    let mut out = format!("at {path}: {e}");
    if let jsonschema::error::ValidationErrorKind::AnyOf { context } = e.kind() {
        let closest = context
            .iter()
            .filter(|branch| !branch.is_empty())
            .min_by_key(|branch| {
                let const_mismatch = branch.iter().any(|e| e.kind().keyword() == "const");
                (const_mismatch, branch.len())
            });
        if let (Some(branch), true) = (closest, depth < 3) {
            let inner: Vec<String> = branch
                .iter()
                .take(MAX_ERRORS)
                .map(|e| describe(e, depth + 1))
                .collect();
            out.push_str(&format!(" [closest match: {}]", inner.join("; ")));
        }
    }
    out
}

/// Validates against a union definition; on failure, when a more specific definition is
/// known, reports that definition's errors (the union's own errors are rarely helpful).
fn check_union(
    doc: Doc,
    union: &str,
    specific: Option<(Doc, &str)>,
    instance: &Value,
) -> Result<(), String> {
    let union_result = check(doc, union, instance);
    match (union_result, specific) {
        (Ok(()), _) => Ok(()),
        (Err(e), None) => Err(e),
        (Err(e), Some((sdoc, sdef))) => match check(sdoc, sdef, instance) {
            Ok(()) => Err(e),
            Err(specific) => Err(format!("{union} validation failed; as {specific}")),
        },
    }
}

/// The kind of a JSON-RPC message, from its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Notification,
    Result,
    Error,
}

fn kind_of(msg: &Value) -> Option<Kind> {
    let obj = msg.as_object()?;
    if obj.contains_key("method") {
        Some(if obj.contains_key("id") {
            Kind::Request
        } else {
            Kind::Notification
        })
    } else if obj.contains_key("result") {
        Some(Kind::Result)
    } else if obj.contains_key("error") {
        Some(Kind::Error)
    } else {
        None
    }
}

fn envelope_def(kind: Kind) -> &'static str {
    match kind {
        Kind::Request => "JSONRPCRequest",
        Kind::Notification => "JSONRPCNotification",
        Kind::Result => "JSONRPCResultResponse",
        Kind::Error => "JSONRPCErrorResponse",
    }
}

fn method_of(msg: &Value) -> &str {
    msg.get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Validates MCP wire messages of one protocol revision against the official schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireValidator {
    modern: bool,
}

impl WireValidator {
    /// A validator for `rev`: `"2025-11-25"` or `"2026-07-28"`.
    ///
    /// # Panics
    ///
    /// Panics on any other revision (use [`WireValidator::try_for_revision`] to avoid that).
    #[allow(clippy::panic)]
    pub fn for_revision(rev: &str) -> WireValidator {
        match Self::try_for_revision(rev) {
            Some(v) => v,
            None => panic!("no vendored schema for MCP revision {rev:?}"),
        }
    }

    /// A validator for `rev`, or `None` if no schema for it is vendored.
    pub fn try_for_revision(rev: &str) -> Option<WireValidator> {
        if rev == version::LATEST_LEGACY {
            Some(WireValidator { modern: false })
        } else if rev == version::LATEST_MODERN {
            Some(WireValidator { modern: true })
        } else {
            None
        }
    }

    /// The revision this validator checks.
    pub fn revision(&self) -> &'static str {
        self.doc().name()
    }

    fn doc(&self) -> Doc {
        if self.modern {
            Doc::Modern
        } else {
            Doc::Legacy
        }
    }

    /// Validates `instance` against the definition `def` of this revision's schema (for
    /// 2026-07-28, definitions only the ext-tasks schema has are looked up there).
    pub fn validate_definition(&self, def: &str, instance: &Value) -> Result<(), String> {
        let doc =
            if self.modern && !Doc::Modern.has_definition(def) && Doc::ExtTasks.has_definition(def)
            {
                Doc::ExtTasks
            } else {
                self.doc()
            };
        check(doc, def, instance)
    }

    /// Validates any JSON-RPC message against `JSONRPCMessage`.
    pub fn validate_message(&self, msg: &Value) -> Result<(), String> {
        let specific = kind_of(msg).map(|k| (self.doc(), envelope_def(k)));
        check_union(self.doc(), "JSONRPCMessage", specific, msg)
    }

    /// Validates the `result` of a response to `method` against that method's result
    /// definition in this revision.
    ///
    /// In 2026-07-28 the definition follows `resultType`: `input_required` selects
    /// `InputRequiredResult` (only for `tools/call`, `prompts/get`, `resources/read`),
    /// `task` selects ext-tasks `CreateTaskResult` (only for `tools/call`); any other
    /// value is an error. Unknown methods are checked against the base `Result`.
    pub fn validate_result(&self, method: &str, result: &Value) -> Result<(), String> {
        self.result_def(method, result)
            .and_then(|(doc, def)| check(doc, def, result))
            .map_err(|e| format!("result of {method}: {e}"))
    }

    /// Validates a message a server sends: the envelope, then requests and notifications
    /// against the server unions (2025-11-25) or the specific definitions (2026-07-28),
    /// and results against the result of `request_method` when known.
    pub fn validate_server_message(
        &self,
        msg: &Value,
        request_method: Option<&str>,
    ) -> Result<(), String> {
        self.validate_message(msg)?;
        let method = method_of(msg);
        match kind_of(msg) {
            Some(Kind::Request) if self.modern => Err(format!(
                "2026-07-28 servers must not send JSON-RPC requests (got {method:?})"
            )),
            Some(Kind::Request) => {
                check_union(Doc::Legacy, "ServerRequest", self.request_def(method), msg)
            }
            Some(Kind::Notification) if self.modern => match self.notification_def(method) {
                Some((doc, def)) => check(doc, def, msg),
                None => Err(format!(
                    "{method:?} is not a 2026-07-28 server notification"
                )),
            },
            Some(Kind::Notification) => check_union(
                Doc::Legacy,
                "ServerNotification",
                self.notification_def(method),
                msg,
            ),
            Some(Kind::Result) => self.check_response_result(msg, request_method, "ServerResult"),
            Some(Kind::Error) | None => Ok(()),
        }
    }

    /// Validates a message a client sends: the envelope, then requests against
    /// `ClientRequest` (ext-tasks requests in 2026-07-28), notifications against
    /// `ClientNotification`, and results against `ClientResult` (plus the result of
    /// `request_method` when known). 2026-07-28 clients send no responses.
    pub fn validate_client_message(
        &self,
        msg: &Value,
        request_method: Option<&str>,
    ) -> Result<(), String> {
        self.validate_message(msg)?;
        let method = method_of(msg);
        match kind_of(msg) {
            Some(Kind::Request) if self.modern && methods::ext::is_tasks_method(method) => {
                match self.request_def(method) {
                    Some((doc, def)) => check(doc, def, msg),
                    None => Err(format!("{method:?} is not an ext-tasks request")),
                }
            }
            Some(Kind::Request) => {
                check_union(self.doc(), "ClientRequest", self.request_def(method), msg)
            }
            Some(Kind::Notification) => check_union(
                self.doc(),
                "ClientNotification",
                self.notification_def(method),
                msg,
            ),
            Some(Kind::Result | Kind::Error) if self.modern => {
                Err("2026-07-28 clients must not send JSON-RPC responses".to_owned())
            }
            Some(Kind::Result) => self.check_response_result(msg, request_method, "ClientResult"),
            Some(Kind::Error) | None => Ok(()),
        }
    }

    fn check_response_result(
        &self,
        msg: &Value,
        request_method: Option<&str>,
        union: &str,
    ) -> Result<(), String> {
        let result = &msg["result"];
        match request_method {
            Some(method) => {
                if !self.modern {
                    check(Doc::Legacy, union, result)?;
                }
                self.validate_result(method, result)
            }
            None => check(self.doc(), union, result),
        }
    }

    /// The definition of the request envelope for `method` in this revision.
    fn request_def(&self, method: &str) -> Option<(Doc, &'static str)> {
        use methods::*;
        let shared = match method {
            ListResources::NAME => Some("ListResourcesRequest"),
            ListResourceTemplates::NAME => Some("ListResourceTemplatesRequest"),
            ReadResource::NAME => Some("ReadResourceRequest"),
            ListPrompts::NAME => Some("ListPromptsRequest"),
            GetPrompt::NAME => Some("GetPromptRequest"),
            ListTools::NAME => Some("ListToolsRequest"),
            CallTool::NAME => Some("CallToolRequest"),
            Complete::NAME => Some("CompleteRequest"),
            _ => None,
        };
        if let Some(def) = shared {
            return Some((self.doc(), def));
        }
        if self.modern {
            match method {
                Discover::NAME => Some((Doc::Modern, "DiscoverRequest")),
                SubscriptionsListen::NAME => Some((Doc::Modern, "SubscriptionsListenRequest")),
                GetTask::NAME => Some((Doc::ExtTasks, "GetTaskRequest")),
                UpdateTask::NAME => Some((Doc::ExtTasks, "UpdateTaskRequest")),
                CancelTask::NAME => Some((Doc::ExtTasks, "CancelTaskRequest")),
                _ => None,
            }
        } else {
            let def = match method {
                Initialize::NAME => "InitializeRequest",
                Ping::NAME => "PingRequest",
                Subscribe::NAME => "SubscribeRequest",
                Unsubscribe::NAME => "UnsubscribeRequest",
                SetLevel::NAME => "SetLevelRequest",
                GetTask::NAME => "GetTaskRequest",
                GetTaskPayload::NAME => "GetTaskPayloadRequest",
                ListTasks::NAME => "ListTasksRequest",
                CancelTask::NAME => "CancelTaskRequest",
                CreateMessage::NAME => "CreateMessageRequest",
                ListRoots::NAME => "ListRootsRequest",
                Elicit::NAME => "ElicitRequest",
                _ => return None,
            };
            Some((Doc::Legacy, def))
        }
    }

    /// The definition of the notification envelope for `method` in this revision.
    fn notification_def(&self, method: &str) -> Option<(Doc, &'static str)> {
        use methods::*;
        let shared = match method {
            Cancelled::NAME => Some("CancelledNotification"),
            Progress::NAME => Some("ProgressNotification"),
            LoggingMessage::NAME => Some("LoggingMessageNotification"),
            ResourceUpdated::NAME => Some("ResourceUpdatedNotification"),
            ResourceListChanged::NAME => Some("ResourceListChangedNotification"),
            ToolListChanged::NAME => Some("ToolListChangedNotification"),
            PromptListChanged::NAME => Some("PromptListChangedNotification"),
            _ => None,
        };
        if let Some(def) = shared {
            return Some((self.doc(), def));
        }
        if self.modern {
            match method {
                SubscriptionsAcknowledged::NAME => {
                    Some((Doc::Modern, "SubscriptionsAcknowledgedNotification"))
                }
                Tasks::NAME => Some((Doc::ExtTasks, "TaskStatusNotification")),
                _ => None,
            }
        } else {
            let def = match method {
                Initialized::NAME => "InitializedNotification",
                RootsListChanged::NAME => "RootsListChangedNotification",
                ElicitationComplete::NAME => "ElicitationCompleteNotification",
                TaskStatus::NAME => "TaskStatusNotification",
                _ => return None,
            };
            Some((Doc::Legacy, def))
        }
    }

    /// The result definition for a response to `method`.
    fn result_def(&self, method: &str, result: &Value) -> Result<(Doc, &'static str), String> {
        use methods::*;
        let shared = match method {
            ListTools::NAME => Some("ListToolsResult"),
            CallTool::NAME => Some("CallToolResult"),
            ListPrompts::NAME => Some("ListPromptsResult"),
            GetPrompt::NAME => Some("GetPromptResult"),
            ListResources::NAME => Some("ListResourcesResult"),
            ListResourceTemplates::NAME => Some("ListResourceTemplatesResult"),
            ReadResource::NAME => Some("ReadResourceResult"),
            Complete::NAME => Some("CompleteResult"),
            CreateMessage::NAME => Some("CreateMessageResult"),
            Elicit::NAME => Some("ElicitResult"),
            ListRoots::NAME => Some("ListRootsResult"),
            _ => None,
        };
        if self.modern {
            if let Some(rt) = result.get("resultType").and_then(Value::as_str) {
                match rt {
                    "complete" => {}
                    "input_required" if MRTR_METHODS.contains(&method) => {
                        return Ok((Doc::Modern, "InputRequiredResult"))
                    }
                    "task" if method == CallTool::NAME => {
                        return Ok((Doc::ExtTasks, "CreateTaskResult"))
                    }
                    "input_required" | "task" => {
                        return Err(format!("resultType {rt:?} is not allowed for {method}"))
                    }
                    other => return Err(format!("unrecognized resultType {other:?}")),
                }
            }
            if let Some(def) = shared {
                return Ok((Doc::Modern, def));
            }
            let found = match method {
                Discover::NAME => (Doc::Modern, "DiscoverResult"),
                SubscriptionsListen::NAME => (Doc::Modern, "SubscriptionsListenResult"),
                GetTask::NAME => (Doc::ExtTasks, "GetTaskResult"),
                UpdateTask::NAME => (Doc::ExtTasks, "UpdateTaskResult"),
                CancelTask::NAME => (Doc::ExtTasks, "CancelTaskResult"),
                m if LEGACY_ONLY_REQUESTS.contains(&m) => {
                    return Err(format!("{m} does not exist in 2026-07-28"))
                }
                _ => (Doc::Modern, "Result"),
            };
            Ok(found)
        } else {
            let task_augmentable = [CallTool::NAME, CreateMessage::NAME, Elicit::NAME];
            let primary = match method {
                m if m == CallTool::NAME => "content",
                m if m == CreateMessage::NAME => "model",
                _ => "action",
            };
            if task_augmentable.contains(&method)
                && result.get("task").is_some_and(Value::is_object)
                && result.get(primary).is_none()
            {
                return Ok((Doc::Legacy, "CreateTaskResult"));
            }
            if let Some(def) = shared {
                return Ok((Doc::Legacy, def));
            }
            let def = match method {
                Initialize::NAME => "InitializeResult",
                Ping::NAME | Subscribe::NAME | Unsubscribe::NAME | SetLevel::NAME => "EmptyResult",
                GetTask::NAME => "GetTaskResult",
                GetTaskPayload::NAME => "GetTaskPayloadResult",
                ListTasks::NAME => "ListTasksResult",
                CancelTask::NAME => "CancelTaskResult",
                m if MODERN_ONLY_REQUESTS.contains(&m) => {
                    return Err(format!("{m} does not exist in 2025-11-25"))
                }
                _ => "Result",
            };
            Ok((Doc::Legacy, def))
        }
    }
}

#[cfg(test)]
mod tests;
