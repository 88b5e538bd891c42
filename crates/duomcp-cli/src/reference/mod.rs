//! The reference server: every fixture the official MCP conformance suite expects, in one
//! server that serves both revisions. It doubles as the "everything" demo of the server API.
//!
//! | area | fixtures |
//! |---|---|
//! | tools | `test_simple_text`, `test_image_content`, `test_audio_content`, `test_embedded_resource`, `test_multiple_content_types`, `test_tool_with_logging`, `test_tool_with_progress`, `test_error_handling`, `test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`, `json_schema_2020_12_tool`, `test_reconnection` |
//! | 2026-07-28 | `test_input_required_result_*`, `test_missing_capability`, `test_streaming_elicitation`, `test_logging_tool`, `test_trigger_tool_change`, `test_trigger_prompt_change`, `test_custom_header` |
//! | prompts | `test_simple_prompt`, `test_prompt_with_arguments`, `test_prompt_with_embedded_resource`, `test_prompt_with_image`, `test_input_required_result_prompt` |
//! | resources | `test://static-text`, `test://static-binary`, `test://watched-resource`, template `test://template/{id}/data` |
//! | tasks | `greet`, `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`, `test_tool_with_task` |
//! | skills | `skill://release-notes/SKILL.md`, `skill://duomcp/protocol-eras/SKILL.md` (and their files) |

pub mod era;
pub mod events;
mod input_required;
mod prompts;
mod resources;
pub mod skills;
mod tasks;
mod tools;

use duomcp::server::skills::SkillRejection;
use duomcp::server::tasks::TaskConfig;
use duomcp::server::{CachePolicy, Server, ServerBuilder, ServerConfig};
use std::path::Path;
use std::time::Duration;

/// A 1×1 PNG, base64.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny 8 kHz mono WAV file, base64.
pub const WAV_BASE64: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// Builds the reference server.
///
/// ```
/// let server = duomcp_cli::reference::server();
/// assert_eq!(server.info().name, "duomcp-reference");
/// ```
pub fn server() -> Server {
    builder().build()
}

/// The reference server, also serving the skills found under each of `dirs`, in addition to
/// its demo skills (see [`SkillSet::dir`](duomcp::server::skills::SkillSet::dir) for the
/// layout). Every skill is checked now: a skill that breaks the naming rules or the limits, or
/// whose URI another skill has, is an error naming every problem.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("duomcp-doc-skills-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("greeting")).unwrap();
/// std::fs::write(dir.join("greeting/SKILL.md"), "---\nname: greeting\ndescription: Say hello\n---\n").unwrap();
/// let server = duomcp_cli::reference::server_with_skill_dirs(&[&dir]);
/// std::fs::remove_dir_all(&dir).unwrap();
/// assert!(server.is_ok());
/// ```
pub fn server_with_skill_dirs(dirs: &[impl AsRef<Path>]) -> Result<Server, SkillRejection> {
    Ok(builder_with_skill_dirs(dirs)?.build())
}

/// [`server_with_skill_dirs`], not yet built (to add telemetry, say).
pub fn builder_with_skill_dirs(dirs: &[impl AsRef<Path>]) -> Result<ServerBuilder, SkillRejection> {
    with_skill_dirs(builder(), dirs)
}

/// `builder` serving the demo skills and those under `dirs`.
fn with_skill_dirs(
    builder: ServerBuilder,
    dirs: &[impl AsRef<Path>],
) -> Result<ServerBuilder, SkillRejection> {
    let mut set = skills::demo()?;
    for dir in dirs {
        set = set.dir(dir)?;
    }
    Ok(builder.skills(set))
}

/// [`server_with_skill_dirs`], speaking only the revisions `era` names (`duomcp serve --era`).
pub fn server_for_era(
    dirs: &[impl AsRef<Path>],
    era: era::ServeEra,
) -> Result<Server, SkillRejection> {
    Ok(builder_for_era(dirs, era, false)?.build())
}

/// [`server_for_era`], not yet built (to add telemetry, say). With `scoped`, the fixtures of
/// the conformance suite's SEP-2350 scenario need their OAuth scopes (what `duomcp serve
/// --auth-*` serves; see [`FIXTURE_SCOPES`]); without, nothing needs a scope.
///
/// ```
/// use duomcp_cli::reference::{builder_for_era, era::ServeEra};
/// let server = builder_for_era(&[] as &[&str], ServeEra::Both, true).unwrap().build();
/// assert_eq!(server.info().name, "duomcp-reference");
/// ```
pub fn builder_for_era(
    dirs: &[impl AsRef<Path>],
    era: era::ServeEra,
    scoped: bool,
) -> Result<ServerBuilder, SkillRejection> {
    let builder = with_skill_dirs(builder_scoped(scoped), dirs)?;
    Ok(match era {
        era::ServeEra::Both => builder,
        only => builder.layer(duomcp::server::middleware::layer_fn(move |inner| {
            era::OnlyEra::new(inner, only)
        })),
    })
}

/// Reads `duomcp serve --extension`'s value: `ID` (settings `{}`) or `ID=JSON`, the JSON an
/// object, the id an extension identifier (SEP-2133).
///
/// ```
/// use duomcp_cli::reference::parse_extension;
/// let (id, settings) = parse_extension(r#"com.example/feature={"level":2}"#).unwrap();
/// assert_eq!((id.as_str(), settings["level"].as_i64()), ("com.example/feature", Some(2)));
/// assert!(parse_extension("com.example/empty").unwrap().1.is_empty());
/// assert!(parse_extension("feature={}").is_err());
/// assert!(parse_extension("com.example/x=[1]").is_err());
/// ```
pub fn parse_extension(arg: &str) -> Result<(String, duomcp::schema::JsonObject), String> {
    let (id, settings) = match arg.split_once('=') {
        Some((id, json)) => {
            let value: serde_json::Value = serde_json::from_str(json)
                .map_err(|e| format!("the settings are not JSON: {e}"))?;
            match value {
                serde_json::Value::Object(settings) => (id, settings),
                _ => return Err("the settings are not a JSON object".to_owned()),
            }
        }
        None => (arg, duomcp::schema::JsonObject::new()),
    };
    if let Some(problem) = duomcp::schema::extension_id_problem(id) {
        return Err(format!(
            "`{id}` is not an extension identifier (like `com.example/name`): {problem}"
        ));
    }
    Ok((id.to_owned(), settings))
}

/// The scopes the conformance suite's SEP-2350 scenario (`sep-2350-server-scope-challenge`)
/// expects of each fixture, as `(method, name or URI, scopes)`; the template's `{id}` is the
/// id read. `duomcp serve --auth-*` requires them; a token lacking one is challenged for both.
pub const FIXTURE_SCOPES: [(&str, &str, [&str; 2]); 4] = [
    (
        "tools/call",
        "test_simple_text",
        [
            "mcp:conformance:tools:call",
            "mcp:conformance:tools:test_simple_text",
        ],
    ),
    (
        "resources/read",
        "test://static-text",
        [
            "mcp:conformance:resources:read",
            "mcp:conformance:resources:static",
        ],
    ),
    (
        "resources/read",
        "test://template/{id}/data",
        [
            "mcp:conformance:resources:read",
            "mcp:conformance:resources:template:{id}",
        ],
    ),
    (
        "prompts/get",
        "test_simple_prompt",
        [
            "mcp:conformance:prompts:get",
            "mcp:conformance:prompts:test_simple_prompt",
        ],
    ),
];

/// The scopes of fixture `name` (see [`FIXTURE_SCOPES`]) when `scoped`, else none.
fn fixture_scopes(scoped: bool, name: &str) -> Vec<&'static str> {
    FIXTURE_SCOPES
        .iter()
        .find(|(_, n, _)| *n == name)
        .filter(|_| scoped)
        .map_or_else(Vec::new, |(_, _, scopes)| scopes.to_vec())
}

fn builder() -> ServerBuilder {
    builder_scoped(false)
}

fn builder_scoped(scoped: bool) -> ServerBuilder {
    let cache = CachePolicy {
        ttl_ms: 30_000,
        scope: duomcp::schema::CacheScope::Public,
    };
    let mut config = ServerConfig::default();
    config.tools_cache = cache;
    config.prompts_cache = cache;
    config.resources_cache = cache;
    config.read_cache = CachePolicy {
        ttl_ms: 0,
        scope: duomcp::schema::CacheScope::Private,
    };
    let builder = Server::builder()
        .name("duomcp-reference")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("The duomcp reference server: every conformance fixture, both MCP revisions.")
        .config(config)
        .tasks(TaskConfig::default().poll_interval(Duration::from_millis(500)));
    let builder = tools::register(builder, scoped);
    let builder = input_required::register(builder);
    let builder = prompts::register(builder, scoped);
    let builder = tasks::register(builder);
    let builder = skills::register(builder);
    let builder = events::register(builder);
    resources::register(builder, scoped)
}
