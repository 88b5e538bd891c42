//! Every definition of the three official schemas has fixtures in `tests/fixtures/`; each
//! fixture must validate against its definition, deserialise into the Rust type for that
//! definition, and serialise back to an equal JSON value.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_schema as s;
use duomcp_schema::tasks::ext;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

const LEGACY_SCHEMA: &str = include_str!("../schemas/schema-2025-11-25.json");
const MODERN_SCHEMA: &str = include_str!("../schemas/schema-2026-07-28.json");
const EXT_SCHEMA: &str = include_str!("../schemas/ext-tasks-draft-schema.json");
const LEGACY_FIXTURES: &str = include_str!("fixtures/schema-2025-11-25.json");
const MODERN_FIXTURES: &str = include_str!("fixtures/schema-2026-07-28.json");
const EXT_FIXTURES: &str = include_str!("fixtures/ext-tasks-draft-schema.json");

/// Definitions without a Rust type of their own, with the reason.
const NO_RUST_TYPE: &[(&str, &str)] = &[(
    "ResourceContents",
    "abstract base; concrete contents are the `ResourceContents` enum (text | blob)",
)];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rev {
    Legacy,
    Modern,
    Ext,
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("valid JSON")
}

/// A validator for `#/$defs/<def>` of `schema`, via a wrapper document.
fn validator(schema: &Value, def: &str) -> jsonschema::Validator {
    let wrapper = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": schema["$defs"],
        "$ref": format!("#/$defs/{def}"),
    });
    jsonschema::validator_for(&wrapper).unwrap_or_else(|e| panic!("compiling {def}: {e}"))
}

/// Round trip through `T`, both from a `Value` and from JSON text; both must agree.
fn rt<T: Serialize + DeserializeOwned>(v: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(v.clone()).map_err(|e| format!("deserialise: {e}"))?;
    let back = serde_json::to_value(&typed).map_err(|e| format!("serialise: {e}"))?;
    let text = serde_json::to_string(v).map_err(|e| e.to_string())?;
    let typed: T = serde_json::from_str(&text).map_err(|e| format!("deserialise text: {e}"))?;
    let back_text = serde_json::to_string(&typed).map_err(|e| format!("serialise text: {e}"))?;
    let back_text: Value = serde_json::from_str(&back_text).map_err(|e| e.to_string())?;
    if back_text != back {
        return Err(format!(
            "text and value round trips differ: {back_text} vs {back}"
        ));
    }
    Ok(back)
}

/// Round-trips `v` through the Rust type of definition `def`; `None` if it has none.
fn roundtrip(rev: Rev, def: &str, v: &Value) -> Option<Result<Value, String>> {
    use Rev::*;
    let r = match (rev, def) {
        // Server→client requests: JSON-RPC envelopes in 2025-11-25, input requests later.
        (Legacy, "CreateMessageRequest") => rt::<s::CreateMessageRequest>(v),
        (Legacy, "ElicitRequest") => rt::<s::ElicitRequest>(v),
        (Legacy, "ListRootsRequest") => rt::<s::ListRootsRequest>(v),
        (_, "CreateMessageRequest" | "ElicitRequest" | "ListRootsRequest") => {
            rt::<s::InputRequest>(v)
        }
        // ext-tasks definitions whose names clash with the 2025-11-25 core.
        (Ext, "Task") => rt::<ext::ExtTask>(v),
        (Ext, "CreateTaskResult") => rt::<ext::ExtCreateTaskResult>(v),
        (Ext, "GetTaskResult") => rt::<ext::ExtGetTaskResult>(v),
        (Ext, "CancelTaskResult") => rt::<ext::ExtCancelTaskResult>(v),
        (Ext, "TaskStatusNotification") => rt::<ext::ExtTaskStatusNotification>(v),
        (Ext, "TaskStatusNotificationParams") => rt::<ext::ExtTaskStatusNotificationParams>(v),
        (Ext, "DetailedTask") => rt::<ext::DetailedTask>(v),
        (Ext, "WorkingTask") => rt::<ext::WorkingTask>(v),
        (Ext, "InputRequiredTask") => rt::<ext::InputRequiredTask>(v),
        (Ext, "CompletedTask") => rt::<ext::CompletedTask>(v),
        (Ext, "FailedTask") => rt::<ext::FailedTask>(v),
        (Ext, "CancelledTask") => rt::<ext::CancelledTask>(v),
        (Ext, "UpdateTaskRequest") => rt::<ext::UpdateTaskRequest>(v),
        (Ext, "UpdateTaskResult") => rt::<ext::UpdateTaskResult>(v),
        (Ext, "TasksExtensionCapability") => rt::<ext::TasksExtensionCapability>(v),
        (Ext, "TaskSubscriptionNotifications") => rt::<ext::TaskSubscriptionNotifications>(v),
        (Ext, "TaskSubscriptionAcknowledgedNotifications") => {
            rt::<ext::TaskSubscriptionAcknowledgedNotifications>(v)
        }
        _ => return shared(def, v),
    };
    Some(r)
}

/// Definitions that map to the same Rust type in every revision.
fn shared(def: &str, v: &Value) -> Option<Result<Value, String>> {
    let r = match def {
        // JSON-RPC and primitives
        "JSONRPCMessage" => rt::<s::JsonRpcMessage>(v),
        "JSONRPCRequest" => rt::<s::JsonRpcRequest>(v),
        "JSONRPCNotification" => rt::<s::JsonRpcNotification>(v),
        "JSONRPCResponse" => rt::<s::JsonRpcResponse>(v),
        "JSONRPCResultResponse" => rt::<s::JsonRpcResultResponse>(v),
        "JSONRPCErrorResponse" => rt::<s::JsonRpcErrorResponse>(v),
        "Error" => rt::<s::ErrorObject>(v),
        "ParseError" => rt::<s::ParseError>(v),
        "InvalidRequestError" => rt::<s::InvalidRequestError>(v),
        "MethodNotFoundError" => rt::<s::MethodNotFoundError>(v),
        "InvalidParamsError" => rt::<s::InvalidParamsError>(v),
        "InternalError" => rt::<s::InternalError>(v),
        "URLElicitationRequiredError" => rt::<s::UrlElicitationRequiredError>(v),
        "HeaderMismatchError" => rt::<s::HeaderMismatchError>(v),
        "MissingRequiredClientCapabilityError" => rt::<s::MissingRequiredClientCapabilityError>(v),
        "UnsupportedProtocolVersionError" => rt::<s::UnsupportedProtocolVersionError>(v),
        "Request" => rt::<s::Request>(v),
        "Notification" => rt::<s::Notification>(v),
        "RequestId" => rt::<s::RequestId>(v),
        "ProgressToken" => rt::<s::ProgressToken>(v),
        "Cursor" => rt::<s::Cursor>(v),
        "JSONValue" => rt::<s::JsonValue>(v),
        "JSONObject" => rt::<s::JsonObject>(v),
        "JSONArray" => rt::<s::JsonArray>(v),
        // _meta
        "MetaObject" => rt::<s::MetaObject>(v),
        "RequestMetaObject" => rt::<s::RequestMetaObject>(v),
        "ResultMetaObject" => rt::<s::ResultMetaObject>(v),
        "NotificationMetaObject" => rt::<s::NotificationMetaObject>(v),
        "SubscriptionsListenResultMetaObject" => rt::<s::SubscriptionsListenResultMetaObject>(v),
        // common
        "Role" => rt::<s::Role>(v),
        "Annotations" => rt::<s::Annotations>(v),
        "Icon" => rt::<s::Icon>(v),
        "Icons" => rt::<s::Icons>(v),
        "BaseMetadata" => rt::<s::BaseMetadata>(v),
        "Implementation" => rt::<s::Implementation>(v),
        "ResultType" => rt::<s::ResultType>(v),
        "Result" | "EmptyResult" => rt::<s::EmptyResult>(v),
        "PaginatedResult" => rt::<s::PaginatedResult>(v),
        "CacheableResult" => rt::<s::CacheableResult>(v),
        "RequestParams" => rt::<s::RequestParams>(v),
        "PaginatedRequestParams" => rt::<s::PaginatedRequestParams>(v),
        "PaginatedRequest" => rt::<s::JsonRpcRequest<s::PaginatedRequestParams>>(v),
        "NotificationParams" => rt::<s::NotificationParams>(v),
        // capabilities
        "ClientCapabilities" => rt::<s::ClientCapabilities>(v),
        "ServerCapabilities" => rt::<s::ServerCapabilities>(v),
        // content (the `type` tag is written by the unions)
        "ContentBlock" | "TextContent" | "ImageContent" | "AudioContent" | "ResourceLink"
        | "EmbeddedResource" => rt::<s::ContentBlock>(v),
        "TextResourceContents" => rt::<s::TextResourceContents>(v),
        "BlobResourceContents" => rt::<s::BlobResourceContents>(v),
        // tools
        "Tool" => rt::<s::Tool>(v),
        "ToolAnnotations" => rt::<s::ToolAnnotations>(v),
        "ToolExecution" => rt::<s::ToolExecution>(v),
        "CallToolRequest" => rt::<s::CallToolRequest>(v),
        "CallToolRequestParams" => rt::<s::CallToolRequestParams>(v),
        "CallToolResult" => rt::<s::CallToolResult>(v),
        "CallToolResultResponse" => rt::<s::CallToolResultResponse>(v),
        "ListToolsRequest" => rt::<s::ListToolsRequest>(v),
        "ListToolsResult" => rt::<s::ListToolsResult>(v),
        "ListToolsResultResponse" => rt::<s::ListToolsResultResponse>(v),
        "ToolListChangedNotification" => rt::<s::ToolListChangedNotification>(v),
        // resources
        "Resource" => rt::<s::Resource>(v),
        "ResourceTemplate" => rt::<s::ResourceTemplate>(v),
        "ResourceRequestParams" => rt::<s::ResourceRequestParams>(v),
        "ReadResourceRequest" => rt::<s::ReadResourceRequest>(v),
        "ReadResourceRequestParams" => rt::<s::ReadResourceRequestParams>(v),
        "ReadResourceResult" => rt::<s::ReadResourceResult>(v),
        "ReadResourceResultResponse" => rt::<s::ReadResourceResultResponse>(v),
        "ListResourcesRequest" => rt::<s::ListResourcesRequest>(v),
        "ListResourcesResult" => rt::<s::ListResourcesResult>(v),
        "ListResourcesResultResponse" => rt::<s::ListResourcesResultResponse>(v),
        "ListResourceTemplatesRequest" => rt::<s::ListResourceTemplatesRequest>(v),
        "ListResourceTemplatesResult" => rt::<s::ListResourceTemplatesResult>(v),
        "ListResourceTemplatesResultResponse" => rt::<s::ListResourceTemplatesResultResponse>(v),
        "SubscribeRequest" => rt::<s::SubscribeRequest>(v),
        "SubscribeRequestParams" => rt::<s::SubscribeRequestParams>(v),
        "UnsubscribeRequest" => rt::<s::UnsubscribeRequest>(v),
        "UnsubscribeRequestParams" => rt::<s::UnsubscribeRequestParams>(v),
        "ResourceListChangedNotification" => rt::<s::ResourceListChangedNotification>(v),
        "ResourceUpdatedNotification" => rt::<s::ResourceUpdatedNotification>(v),
        "ResourceUpdatedNotificationParams" => rt::<s::ResourceUpdatedNotificationParams>(v),
        // prompts
        "Prompt" => rt::<s::Prompt>(v),
        "PromptArgument" => rt::<s::PromptArgument>(v),
        "PromptMessage" => rt::<s::PromptMessage>(v),
        "GetPromptRequest" => rt::<s::GetPromptRequest>(v),
        "GetPromptRequestParams" => rt::<s::GetPromptRequestParams>(v),
        "GetPromptResult" => rt::<s::GetPromptResult>(v),
        "GetPromptResultResponse" => rt::<s::GetPromptResultResponse>(v),
        "ListPromptsRequest" => rt::<s::ListPromptsRequest>(v),
        "ListPromptsResult" => rt::<s::ListPromptsResult>(v),
        "ListPromptsResultResponse" => rt::<s::ListPromptsResultResponse>(v),
        "PromptListChangedNotification" => rt::<s::PromptListChangedNotification>(v),
        // completion
        "PromptReference" | "ResourceTemplateReference" => rt::<s::CompleteReference>(v),
        "CompleteRequest" => rt::<s::CompleteRequest>(v),
        "CompleteRequestParams" => rt::<s::CompleteRequestParams>(v),
        "CompleteResult" => rt::<s::CompleteResult>(v),
        "CompleteResultResponse" => rt::<s::CompleteResultResponse>(v),
        // logging
        "LoggingLevel" => rt::<s::LoggingLevel>(v),
        "SetLevelRequest" => rt::<s::SetLevelRequest>(v),
        "SetLevelRequestParams" => rt::<s::SetLevelRequestParams>(v),
        "LoggingMessageNotification" => rt::<s::LoggingMessageNotification>(v),
        "LoggingMessageNotificationParams" => rt::<s::LoggingMessageNotificationParams>(v),
        // sampling
        "SamplingMessage" => rt::<s::SamplingMessage>(v),
        "SamplingMessageContentBlock" | "ToolUseContent" | "ToolResultContent" => {
            rt::<s::SamplingMessageContentBlock>(v)
        }
        "ToolChoice" => rt::<s::ToolChoice>(v),
        "ModelPreferences" => rt::<s::ModelPreferences>(v),
        "ModelHint" => rt::<s::ModelHint>(v),
        "CreateMessageRequestParams" => rt::<s::CreateMessageRequestParams>(v),
        "CreateMessageResult" => rt::<s::CreateMessageResult>(v),
        // elicitation
        "ElicitRequestParams" => rt::<s::ElicitRequestParams>(v),
        "ElicitRequestFormParams" => rt::<s::ElicitRequestFormParams>(v),
        "ElicitRequestURLParams" => rt::<s::ElicitRequestUrlParams>(v),
        "ElicitResult" => rt::<s::ElicitResult>(v),
        "ElicitationCompleteNotification" => rt::<s::ElicitationCompleteNotification>(v),
        "PrimitiveSchemaDefinition" => rt::<s::PrimitiveSchemaDefinition>(v),
        "EnumSchema" => rt::<s::EnumSchema>(v),
        "SingleSelectEnumSchema" => rt::<s::SingleSelectEnumSchema>(v),
        "MultiSelectEnumSchema" => rt::<s::MultiSelectEnumSchema>(v),
        "StringSchema" => rt::<s::StringSchema>(v),
        "NumberSchema" => rt::<s::NumberSchema>(v),
        "BooleanSchema" => rt::<s::BooleanSchema>(v),
        "UntitledSingleSelectEnumSchema" => rt::<s::UntitledSingleSelectEnumSchema>(v),
        "TitledSingleSelectEnumSchema" => rt::<s::TitledSingleSelectEnumSchema>(v),
        "UntitledMultiSelectEnumSchema" => rt::<s::UntitledMultiSelectEnumSchema>(v),
        "TitledMultiSelectEnumSchema" => rt::<s::TitledMultiSelectEnumSchema>(v),
        "LegacyTitledEnumSchema" => rt::<s::LegacyTitledEnumSchema>(v),
        // roots
        "Root" => rt::<s::Root>(v),
        "ListRootsResult" => rt::<s::ListRootsResult>(v),
        "RootsListChangedNotification" => rt::<s::RootsListChangedNotification>(v),
        // lifecycle
        "InitializeRequest" => rt::<s::InitializeRequest>(v),
        "InitializeRequestParams" => rt::<s::InitializeRequestParams>(v),
        "InitializeResult" => rt::<s::InitializeResult>(v),
        "InitializedNotification" => rt::<s::InitializedNotification>(v),
        "PingRequest" => rt::<s::PingRequest>(v),
        "DiscoverRequest" => rt::<s::DiscoverRequest>(v),
        "DiscoverResult" => rt::<s::DiscoverResult>(v),
        "DiscoverResultResponse" => rt::<s::DiscoverResultResponse>(v),
        // notifications
        "CancelledNotification" => rt::<s::CancelledNotification>(v),
        "CancelledNotificationParams" => rt::<s::CancelledNotificationParams>(v),
        "ProgressNotification" => rt::<s::ProgressNotification>(v),
        "ProgressNotificationParams" => rt::<s::ProgressNotificationParams>(v),
        // MRTR
        "InputRequest" => rt::<s::InputRequest>(v),
        "InputRequests" => rt::<s::InputRequests>(v),
        "InputResponse" => rt::<s::InputResponse>(v),
        "InputResponses" => rt::<s::InputResponses>(v),
        "InputRequiredResult" => rt::<s::InputRequiredResult>(v),
        "InputResponseRequestParams" => rt::<s::InputResponseRequestParams>(v),
        // subscriptions
        "SubscriptionFilter" => rt::<s::SubscriptionFilter>(v),
        "SubscriptionsListenRequest" => rt::<s::SubscriptionsListenRequest>(v),
        "SubscriptionsListenRequestParams" => rt::<s::SubscriptionsListenRequestParams>(v),
        "SubscriptionsListenResult" => rt::<s::SubscriptionsListenResult>(v),
        "SubscriptionsListenResultResponse" => rt::<s::SubscriptionsListenResultResponse>(v),
        "SubscriptionsAcknowledgedNotification" => {
            rt::<s::SubscriptionsAcknowledgedNotification>(v)
        }
        "SubscriptionsAcknowledgedNotificationParams" => {
            rt::<s::SubscriptionsAcknowledgedNotificationParams>(v)
        }
        // 2025-11-25 tasks
        "Task" => rt::<s::Task>(v),
        "TaskStatus" => rt::<s::TaskStatus>(v),
        "TaskMetadata" => rt::<s::TaskMetadata>(v),
        "RelatedTaskMetadata" => rt::<s::RelatedTaskMetadata>(v),
        "TaskAugmentedRequestParams" => rt::<s::TaskAugmentedRequestParams>(v),
        "CreateTaskResult" => rt::<s::CreateTaskResult>(v),
        "GetTaskRequest" => rt::<s::GetTaskRequest>(v),
        "GetTaskResult" => rt::<s::GetTaskResult>(v),
        "GetTaskPayloadRequest" => rt::<s::GetTaskPayloadRequest>(v),
        "GetTaskPayloadResult" => rt::<s::GetTaskPayloadResult>(v),
        "CancelTaskRequest" => rt::<s::CancelTaskRequest>(v),
        "CancelTaskResult" => rt::<s::CancelTaskResult>(v),
        "ListTasksRequest" => rt::<s::ListTasksRequest>(v),
        "ListTasksResult" => rt::<s::ListTasksResult>(v),
        "TaskStatusNotification" => rt::<s::TaskStatusNotification>(v),
        "TaskStatusNotificationParams" => rt::<s::TaskStatusNotificationParams>(v),
        // message unions
        "ClientRequest" => rt::<s::ClientRequest>(v),
        "ServerRequest" => rt::<s::ServerRequest>(v),
        "ClientNotification" => rt::<s::ClientNotification>(v),
        "ServerNotification" => rt::<s::ServerNotification>(v),
        "ClientResult" => rt::<s::ClientResult>(v),
        "ServerResult" => rt::<s::ServerResult>(v),
        _ if NO_RUST_TYPE.iter().any(|(d, _)| *d == def) => return None,
        _ => Err(format!("no Rust type mapped for definition {def}")),
    };
    Some(r)
}

/// Checks every fixture of one schema; returns the number of instances checked.
fn check_schema(rev: Rev, schema_src: &str, fixtures_src: &str) -> usize {
    let schema = parse(schema_src);
    let fixtures = parse(fixtures_src);
    let defs = schema["$defs"].as_object().expect("$defs");
    let fixtures = fixtures.as_object().expect("fixture object");
    let mut failures = Vec::new();
    let mut count = 0;

    for def in defs.keys() {
        if !fixtures.contains_key(def) {
            failures.push(format!("{def}: no fixture"));
        }
    }
    for (def, instances) in fixtures {
        if !defs.contains_key(def) {
            failures.push(format!("{def}: fixture for a definition the schema lacks"));
            continue;
        }
        let validator = validator(&schema, def);
        let instances = instances.as_array().expect("fixture list");
        if instances.is_empty() {
            failures.push(format!("{def}: empty fixture list"));
        }
        for (i, instance) in instances.iter().enumerate() {
            count += 1;
            for err in validator.iter_errors(instance) {
                failures.push(format!(
                    "{def}[{i}]: invalid at {}: {err}",
                    err.instance_path()
                ));
            }
            match roundtrip(rev, def, instance) {
                None => {}
                Some(Err(e)) => failures.push(format!("{def}[{i}]: {e}")),
                Some(Ok(back)) if back != *instance => failures.push(format!(
                    "{def}[{i}]: round trip changed the value\n  in:  {instance}\n  out: {back}"
                )),
                Some(Ok(_)) => {}
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{rev:?}: {} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    count
}

#[test]
fn legacy_2025_11_25_fixtures_validate_and_round_trip() {
    let n = check_schema(Rev::Legacy, LEGACY_SCHEMA, LEGACY_FIXTURES);
    println!("Legacy: {n} instances checked");
    assert!(n > 200, "only {n} instances");
}

#[test]
fn modern_2026_07_28_fixtures_validate_and_round_trip() {
    let n = check_schema(Rev::Modern, MODERN_SCHEMA, MODERN_FIXTURES);
    println!("Modern: {n} instances checked");
    assert!(n > 200, "only {n} instances");
}

#[test]
fn ext_tasks_fixtures_validate_and_round_trip() {
    let n = check_schema(Rev::Ext, EXT_SCHEMA, EXT_FIXTURES);
    println!("Ext: {n} instances checked");
    assert!(n > 100, "only {n} instances");
}

/// Each fixture file covers every definition of its schema, and the fixtures include
/// unknown keys in several places.
#[test]
fn fixtures_carry_unknown_keys() {
    for src in [LEGACY_FIXTURES, MODERN_FIXTURES] {
        for key in [
            "\"x-extra\"",
            "\"x-custom\"",
            "\"x-vendor\"",
            "\"x-checksum\"",
        ] {
            assert!(src.contains(key), "fixtures lack {key}");
        }
    }
}

/// The harness itself can fail: the validators reject invalid instances and the
/// round trip reports type errors.
#[test]
fn harness_detects_invalid_instances() {
    let modern = parse(MODERN_SCHEMA);
    let v = validator(&modern, "CallToolResult");
    assert!(
        !v.is_valid(&json!({"content": []})),
        "resultType is required"
    );
    assert!(v.is_valid(&json!({"content": [], "resultType": "complete"})));
    assert!(!v.is_valid(&json!({"content": [{"type": "text"}], "resultType": "complete"})));
    let legacy = parse(LEGACY_SCHEMA);
    let v = validator(&legacy, "Task");
    assert!(!v.is_valid(&json!({"taskId": "t", "status": "working"})));
    let bad = json!({"content": [], "resultType": "bogus"});
    assert!(matches!(
        roundtrip(Rev::Modern, "CallToolResult", &bad),
        Some(Err(_))
    ));
    let unmapped = roundtrip(Rev::Modern, "NoSuchDefinition", &json!({}));
    assert!(matches!(unmapped, Some(Err(_))));
}
