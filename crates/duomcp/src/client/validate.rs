//! Checking `structuredContent` against the `outputSchema` a tool was listed with.

use super::error::ClientError;
use crate::schema_check::{SchemaCheck, SchemaViolation};
use crate::util::lock;
use duomcp_schema::{CallToolResult, Tool};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

struct OutputSchema {
    schema: Value,
    /// Compiled on first use, once per listed schema.
    compiled: OnceLock<SchemaCheck>,
}

/// Output schemas from the latest tool listings, by tool name.
#[derive(Default)]
pub(crate) struct ToolSchemas {
    map: Mutex<HashMap<String, Arc<OutputSchema>>>,
}

impl ToolSchemas {
    /// Records the output schemas of listed tools (a page of `tools/list`).
    pub(crate) fn remember(&self, tools: &[Tool]) {
        let mut map = lock(&self.map);
        for tool in tools {
            match &tool.output_schema {
                Some(schema) => {
                    let schema = Value::Object(schema.clone());
                    if map
                        .get(&tool.name)
                        .is_none_or(|known| known.schema != schema)
                    {
                        map.insert(
                            tool.name.clone(),
                            Arc::new(OutputSchema {
                                schema,
                                compiled: OnceLock::new(),
                            }),
                        );
                    }
                }
                None => {
                    map.remove(&tool.name);
                }
            }
        }
    }

    /// Forgets everything (the tool list changed).
    pub(crate) fn clear(&self) {
        lock(&self.map).clear();
    }

    /// Checks a result of `tool` against its known output schema (no schema known: fine).
    pub(crate) fn check(&self, tool: &str, result: &CallToolResult) -> Result<(), ClientError> {
        if result.is_error() {
            return Ok(());
        }
        let Some(entry) = lock(&self.map).get(tool).cloned() else {
            return Ok(());
        };
        let invalid = |message: String| ClientError::InvalidStructuredContent {
            tool: tool.to_owned(),
            message,
        };
        let Some(content) = &result.structured_content else {
            return Err(invalid(
                "the tool has an outputSchema but the result has no structuredContent".into(),
            ));
        };
        let compiled = entry
            .compiled
            .get_or_init(|| SchemaCheck::new(entry.schema.clone()));
        match compiled.check(content) {
            Ok(()) => Ok(()),
            Err(SchemaViolation::Mismatch(problems)) => Err(invalid(problems)),
            Err(SchemaViolation::BadSchema(e)) => {
                tracing::warn!(
                    tool,
                    "the tool's outputSchema does not compile, so its results are not checked: {e}"
                );
                Ok(())
            }
        }
    }
}
