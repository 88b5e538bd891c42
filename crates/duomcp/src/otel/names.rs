//! The names of the semantic conventions for MCP (spans, attributes, metrics), in one place.

pub const MCP_METHOD_NAME: &str = "mcp.method.name";
pub const MCP_SESSION_ID: &str = "mcp.session.id";
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
pub const ERROR_TYPE: &str = "error.type";
pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
pub const NETWORK_TRANSPORT: &str = "network.transport";
pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
/// Not in the conventions: the task a request is about.
pub const TASK_ID: &str = "duomcp.task.id";
/// Not in the conventions: a task's status, on the `duomcp.server.tasks` counter.
pub const TASK_STATUS: &str = "duomcp.task.status";

/// `error.type` of a `CallToolResult` with `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";
/// `error.type` of a request that ended without an answer (cancelled, connection gone).
pub const CANCELLED: &str = "cancelled";

pub const SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
pub const CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
pub const SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
#[cfg(feature = "client")]
pub const CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";
pub const ACTIVE_REQUESTS: &str = "duomcp.server.requests.active";
pub const ACTIVE_SESSIONS: &str = "duomcp.server.sessions.active";
pub const LISTEN_STREAMS: &str = "duomcp.server.listen_streams.active";
pub const TASKS: &str = "duomcp.server.tasks";
/// Not in the conventions: messages published on the replicas' Redis bus (feature `redis`).
#[cfg(feature = "redis")]
pub const BUS_PUBLISHED: &str = "duomcp.bus.messages.published";
/// Not in the conventions: messages from other replicas received on the Redis bus.
#[cfg(feature = "redis")]
pub const BUS_RECEIVED: &str = "duomcp.bus.messages.received";
