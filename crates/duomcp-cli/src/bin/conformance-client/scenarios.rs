//! One function per client scenario of the conformance suite, dispatched on its name.

use duomcp::client::{Client, ClientBuilder, EraChoice, InputError, RequestOptions};
use duomcp::schema::{version, ElicitRequestParams, ElicitResult, Root, Tool};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// What a scenario function returns.
pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;

/// One run, as the suite describes it.
#[derive(Debug)]
pub(crate) struct Run {
    /// `MCP_CONFORMANCE_SCENARIO`.
    pub scenario: String,
    /// The server URL (the last command-line argument).
    pub url: String,
    /// `MCP_CONFORMANCE_PROTOCOL_VERSION` (default `2025-11-25`).
    pub version: String,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed (`null` when absent).
    pub context: Value,
}

impl Run {
    /// Reads the environment and the command line.
    pub(crate) fn from_env() -> Result<Run, String> {
        let url = std::env::args()
            .skip(1)
            .last()
            .ok_or("usage: conformance-client URL (with MCP_CONFORMANCE_SCENARIO set)")?;
        let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO")
            .map_err(|_| "MCP_CONFORMANCE_SCENARIO is not set")?;
        let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| version::LATEST_LEGACY.to_owned());
        let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text)
                .map_err(|e| format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}"))?,
            _ => Value::Null,
        };
        Ok(Run {
            scenario,
            url,
            version,
            context,
        })
    }

    /// The era the suite asks for: 2026-07-28 is stateless, a dated legacy version is
    /// `initialize`.
    fn era(&self) -> EraChoice {
        if version::is_modern(&self.version) {
            EraChoice::Modern
        } else {
            EraChoice::Legacy
        }
    }

    /// A client builder for this run: its era, an identity, and an elicitation handler that
    /// accepts (schema defaults are filled in by the client, SEP-1034).
    pub(crate) fn builder(&self) -> ClientBuilder {
        let mut builder = Client::builder()
            .name("duomcp-conformance-client")
            .version(env!("CARGO_PKG_VERSION"))
            .era(self.era())
            .on_elicit(|request| async move { Ok(accept(&request)) });
        if version::is_modern(&self.version) {
            builder = builder.protocol_version(self.version.clone());
        }
        builder
    }

    /// A client builder for a scenario of 2025-11-25 alone, whatever version the run names.
    fn legacy_builder(&self) -> ClientBuilder {
        Client::builder()
            .name("duomcp-conformance-client")
            .version(env!("CARGO_PKG_VERSION"))
            .era(EraChoice::Legacy)
            .on_elicit(|request| async move { Ok(accept(&request)) })
    }

    async fn connect(&self) -> Result<Client, Error> {
        Ok(self.builder().connect_http(&self.url).await?)
    }
}

/// Accepts an elicitation, answering the fields without a default (the client adds the
/// defaults): `true` for booleans, the first option of an enum, `1` for numbers, text otherwise.
fn accept(request: &ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::Form(form) = request else {
        return ElicitResult::accept(None);
    };
    let schema = serde_json::to_value(&form.requested_schema).unwrap_or(Value::Null);
    let mut content = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if prop.get("default").is_some() {
                continue;
            }
            content.insert(name.clone(), sample_value(prop));
        }
    }
    match serde_json::from_value(Value::Object(content)) {
        Ok(content) => ElicitResult::accept(Some(content)),
        Err(_) => ElicitResult::accept(None),
    }
}

/// A plausible value for a property schema.
fn sample_value(prop: &Value) -> Value {
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("array") => json!([]),
        Some("object") => json!({}),
        Some("null") => Value::Null,
        _ => json!("us-west1"),
    }
}

/// Arguments for a tool: a sample value for every required property.
fn sample_arguments(tool: &Tool) -> Value {
    let schema = &tool.input_schema;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut args = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for name in required {
            if let Some(prop) = props.get(name) {
                args.insert(name.to_owned(), sample_value(prop));
            }
        }
    }
    Value::Object(args)
}

/// Lists the tools and calls each with sample arguments.
pub(crate) async fn call_every_tool(client: &Client) -> Result<(), Error> {
    for tool in client.list_all_tools().await? {
        client
            .call_tool(&tool.name, sample_arguments(&tool))
            .await?;
    }
    Ok(())
}

/// Runs the scenario the suite named.
pub(crate) async fn run(run: &Run) -> Result<(), Error> {
    match run.scenario.as_str() {
        "initialize" => initialize(run).await,
        "tools_call" => tools_call(run).await,
        "elicitation-sep1034-client-defaults" => elicitation_defaults(run).await,
        "sse-retry" => sse_retry(run).await,
        "json-schema-2020-12-preservation" => schema_preservation(run).await,
        "request-metadata" => request_metadata(run).await,
        "sep-2322-client-request-state" => request_state(run).await,
        "http-standard-headers" => standard_headers(run).await,
        "http-custom-headers" => custom_headers(run).await,
        "http-invalid-tool-headers" => invalid_tool_headers(run).await,
        "json-schema-ref-no-deref" => ref_no_deref(run).await,
        "sep-2640-client-no-prefetch" => skills_no_prefetch(run).await,
        "sep-2640-client-verify-digest"
        | "sep-2640-client-verify-size"
        | "sep-2640-client-verify-frontmatter" => skills_verify(run).await,
        "session-renegotiation-404" => session_renegotiation(run).await,
        "legacy-extensions" => legacy_extensions(run).await,
        "events-client-no-extension"
        | "events-client-poll"
        | "events-client-push"
        | "events-client-webhook" => events_client(run).await,
        s if s.starts_with("auth/") => crate::auth::run(run).await,
        other => Err(format!("unknown scenario `{other}`").into()),
    }
}

/// `initialize`: the handshake (clientInfo, protocol version), then a listing.
async fn initialize(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    client.list_all_tools().await?;
    client.close().await?;
    Ok(())
}

/// `session-renegotiation-404`: the server forgets the session after `initialize` (HTTP 404 to
/// the next request); the client starts a new session and goes on: a listing, then a ping, each
/// of which must succeed.
async fn session_renegotiation(run: &Run) -> Result<(), Error> {
    let client = run.legacy_builder().connect_http(&run.url).await?;
    client.list_all_tools().await?;
    client.ping().await?;
    client.close().await?;
    Ok(())
}

/// The extensions this client declares in `legacy-extensions` (the scenario's fixture).
fn fixture_client_extensions() -> Map<String, Value> {
    let fixture = json!({
        "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html;profile=mcp-app"] },
        "com.example/conformance": { "nested": { "enabled": false, "limit": 0 }, "values": ["a", 2, null] },
        "com.example/empty": {}
    });
    fixture.as_object().cloned().unwrap_or_default()
}

/// `legacy-extensions`: a 2025-11-25 handshake declaring the fixture's extensions, then a report
/// of the extensions the server declared, as the client read them
/// (`test_legacy_extension_capabilities` with `{ "extensions": … }`).
async fn legacy_extensions(run: &Run) -> Result<(), Error> {
    let mut builder = run.legacy_builder();
    for (id, settings) in fixture_client_extensions() {
        let Value::Object(settings) = settings else {
            return Err(format!("the fixture's settings of {id} are not an object").into());
        };
        builder = builder.extension(id, settings);
    }
    let client = builder.connect_http(&run.url).await?;
    let declared = client.server_capabilities().extensions.unwrap_or_default();
    let result = client
        .call_tool(
            "test_legacy_extension_capabilities",
            json!({ "extensions": declared }),
        )
        .await?;
    if result.is_error() {
        return Err(format!("the report failed: {:?}", result.content).into());
    }
    client.close().await?;
    Ok(())
}

/// `tools_call`: list, then `add_numbers`.
async fn tools_call(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    let tools = client.list_all_tools().await?;
    if !tools.iter().any(|t| t.name == "add_numbers") {
        return Err("the server does not list add_numbers".into());
    }
    let result = client
        .call_tool("add_numbers", json!({ "a": 5, "b": 3 }))
        .await?;
    if result.is_error() {
        return Err(format!("add_numbers failed: {:?}", result.content).into());
    }
    client.close().await?;
    Ok(())
}

/// `elicitation-sep1034-client-defaults`: the server asks for a form whose fields all have
/// defaults; the accepted answer must carry them.
async fn elicitation_defaults(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    client.list_all_tools().await?;
    client
        .call_tool("test_client_elicitation_defaults", ())
        .await?;
    client.close().await?;
    Ok(())
}

/// `sse-retry`: the server closes the tool call's stream after a `retry:` field; the client
/// waits that long and resumes with `GET` and `Last-Event-ID`.
async fn sse_retry(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    client.list_all_tools().await?;
    client.call_tool("test_reconnection", ()).await?;
    client.close().await?;
    Ok(())
}

/// `json-schema-2020-12-preservation`: echo a tool's input schema back, untouched.
async fn schema_preservation(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    let tools = client.list_all_tools().await?;
    let focal = tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .ok_or("the server does not list json_schema_2020_12_tool")?;
    let schema = Value::Object(focal.input_schema.clone());
    client
        .call_tool("json_schema_echo", json!({ "schema": schema }))
        .await?;
    client.close().await?;
    Ok(())
}

/// `request-metadata`: `_meta` and the version header on every request; the first one is
/// refused with `-32022` and must be retried with a supported version. Declares roots,
/// sampling and elicitation so that their capability shapes are checked.
async fn request_metadata(run: &Run) -> Result<(), Error> {
    let client = run
        .builder()
        .roots(vec![Root::new("file:///tmp")])
        .on_sample(|_request| async {
            Err::<duomcp::schema::CreateMessageResult, _>(InputError::new(
                "no model in the conformance client",
            ))
        })
        .connect_http(&run.url)
        .await?;
    client.list_all_tools().await?;
    client.close().await?;
    Ok(())
}

/// `sep-2322-client-request-state`: the MRTR loop (state echoed, no state invented, nothing
/// carried over to another call, an absent `resultType` taken as complete).
async fn request_state(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    client.list_all_tools().await?;
    for tool in [
        "test_mrtr_echo_state",
        "test_mrtr_unrelated",
        "test_mrtr_no_state",
        "test_mrtr_no_result_type",
    ] {
        client.call_tool(tool, ()).await?;
    }
    client.close().await?;
    Ok(())
}

/// `http-standard-headers`: every kind of request, so that `Mcp-Method` and `Mcp-Name` are
/// seen on each.
async fn standard_headers(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    call_every_tool(&client).await?;
    for resource in client.list_all_resources().await? {
        client.read_resource(&resource.uri).await?;
    }
    for prompt in client.list_all_prompts().await? {
        client.get_prompt(&prompt.name, ()).await?;
    }
    client.close().await?;
    Ok(())
}

/// `http-custom-headers`: the calls in the context's `toolCalls`, whose arguments are mirrored
/// into `Mcp-Param-*` headers.
async fn custom_headers(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    client.list_all_tools().await?;
    let calls = run
        .context
        .get("toolCalls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for call in calls {
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a toolCalls entry has no name")?;
        let arguments = call.get("arguments").cloned().unwrap_or(Value::Null);
        client
            .call_tool_with(name, arguments, RequestOptions::new())
            .await?;
    }
    client.close().await?;
    Ok(())
}

/// `http-invalid-tool-headers`: tools with invalid `x-mcp-header` annotations are not listed
/// by the client, so only the valid ones get called.
async fn invalid_tool_headers(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    call_every_tool(&client).await?;
    client.close().await?;
    Ok(())
}

/// `json-schema-ref-no-deref`: list the tools; a network `$ref` must not be fetched.
async fn ref_no_deref(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    client.list_all_tools().await?;
    client.close().await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Skills (SEP-2640, extension `io.modelcontextprotocol/skills`), over the raw request API.

/// `skills/list`.
async fn list_skills(client: &Client) -> Result<Vec<Value>, Error> {
    let listed = client
        .request("skills/list", json!({}), RequestOptions::new())
        .await?;
    Ok(listed
        .get("skills")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The text of a resource.
async fn read_text(client: &Client, uri: &str) -> Result<String, Error> {
    let read = client.read_resource(uri).await?;
    let value = serde_json::to_value(&read)?;
    value
        .pointer("/contents/0/text")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("{uri} has no text content").into())
}

/// `sep-2640-client-no-prefetch`: listing skills reads none of their files.
async fn skills_no_prefetch(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    let skills = list_skills(&client).await?;
    tracing::info!("{} skill(s) listed; nothing loaded", skills.len());
    client.close().await?;
    Ok(())
}

/// `sep-2640-client-verify-*`: load the first skill: read its `SKILL.md`, check it against the
/// listing (size, digest, frontmatter), and only then read its other files.
async fn skills_verify(run: &Run) -> Result<(), Error> {
    let client = run.connect().await?;
    let skills = list_skills(&client).await?;
    let skill = skills.first().ok_or("the server lists no skill")?;
    let uri = skill
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the skill has no uri")?;
    let files: Vec<Value> = skill
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text = read_text(&client, uri).await?;
    if let Some(entry) = files
        .iter()
        .find(|f| f.get("uri").and_then(Value::as_str) == Some(uri))
    {
        if let Err(why) = verify_file(entry, &text) {
            client.close().await?;
            eprintln!("conformance-client: refusing skill {uri}: {why}");
            return Ok(());
        }
    }
    if let Err(why) = verify_frontmatter(skill.get("frontmatter"), &text) {
        client.close().await?;
        eprintln!("conformance-client: refusing skill {uri}: {why}");
        return Ok(());
    }
    for file in &files {
        let Some(other) = file.get("uri").and_then(Value::as_str) else {
            continue;
        };
        if other == uri {
            continue;
        }
        let content = read_text(&client, other).await?;
        verify_file(file, &content).map_err(|why| format!("{other}: {why}"))?;
    }
    client.close().await?;
    Ok(())
}

/// Checks content against a listing entry's `size` and `digest` (`sha256:<hex>`).
fn verify_file(entry: &Value, content: &str) -> Result<(), String> {
    if let Some(size) = entry.get("size").and_then(Value::as_u64) {
        if content.len() as u64 != size {
            return Err(format!(
                "{} bytes instead of the {size} listed",
                content.len()
            ));
        }
    }
    if let Some(digest) = entry.get("digest").and_then(Value::as_str) {
        let actual: String = Sha256::digest(content.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if digest != format!("sha256:{actual}") {
            return Err(format!("digest sha256:{actual} instead of {digest}"));
        }
    }
    Ok(())
}

/// Compares the YAML frontmatter of a `SKILL.md` (simple `key: value` lines) with the
/// listing's, field by field.
fn verify_frontmatter(listed: Option<&Value>, text: &str) -> Result<(), String> {
    let Some(listed) = listed.and_then(Value::as_object) else {
        return Ok(());
    };
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md has no frontmatter")?;
    let end = body.find("\n---").ok_or("the frontmatter is not closed")?;
    let mut parsed = Map::new();
    for line in body[..end].lines() {
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim().trim_matches('"').trim_matches('\'');
            parsed.insert(key.trim().to_owned(), json!(value));
        }
    }
    for (key, value) in listed {
        if parsed.get(key) != Some(value) {
            return Err(format!(
                "frontmatter `{key}` is {:?}, the listing says {value}",
                parsed.get(key)
            ));
        }
    }
    for key in parsed.keys() {
        if !listed.contains_key(key) {
            return Err(format!("frontmatter `{key}` is not in the listing"));
        }
    }
    Ok(())
}

/// The longest run an events scenario may ask for (`durationMs`).
const MAX_EVENTS_RUN: std::time::Duration = std::time::Duration::from_secs(120);

/// `events-client-*`: the server plays an events source. When it declares the extension, the
/// client lists the event types (and keeps the listing current on `list_changed`) and
/// subscribes to each, in push mode when the type offers it, else poll, else webhook (kept
/// refreshed; the callback URL is never called by the suite), for the `durationMs` of the
/// context, then stops. When it does not, the library refuses to send any `events/*` request
/// and the run ends there. A subscription that fails fails the run.
async fn events_client(run: &Run) -> Result<(), Error> {
    use duomcp::client::events::{DeliveryMode, SubscribeOptions, WebhookOptions};
    use duomcp::client::ClientError;
    use std::time::Duration;

    let duration = run
        .context
        .get("durationMs")
        .and_then(Value::as_u64)
        .map_or(Duration::from_secs(5), Duration::from_millis)
        .min(MAX_EVENTS_RUN);
    let until = tokio::time::Instant::now() + duration;
    let client = run.connect().await?;
    let types = match client.event_types().await {
        Ok(types) => types,
        Err(ClientError::Unsupported(why)) => {
            eprintln!("conformance-client: {why}");
            client.close().await?;
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let (failed_tx, mut failed) = tokio::sync::mpsc::channel::<String>(16);
    let mut streams = Vec::new();
    let mut webhooks = Vec::new();
    for t in types.current() {
        let offers = |m: &str| t.delivery.iter().any(|d| d == m);
        let mode = if offers("push") {
            DeliveryMode::Push
        } else if offers("poll") {
            DeliveryMode::Poll
        } else if offers("webhook") {
            let options = WebhookOptions::new(
                "https://webhook.invalid/duomcp-conformance",
                duomcp::webhook::Secret::generate(),
            );
            webhooks.push(client.keep_webhook(&t.name, json!({}), options).await?);
            continue;
        } else {
            return Err(format!("{} offers no delivery mode", t.name).into());
        };
        let mut sub = client
            .subscribe_events(&t.name, json!({}), SubscribeOptions::new(mode))
            .await?;
        let failed_tx = failed_tx.clone();
        let name = t.name.clone();
        streams.push(tokio::spawn(async move {
            while let Some(item) = sub.next().await {
                match item {
                    Ok(item) => tracing::info!(%name, ?item, "event item"),
                    Err(e) => {
                        let _ = failed_tx.send(format!("{name}: {e}")).await;
                    }
                }
            }
        }));
    }
    let mut refreshes = Vec::new();
    for mut kept in webhooks {
        let failed_tx = failed_tx.clone();
        refreshes.push(tokio::spawn(async move {
            while let Some(outcome) = kept.next().await {
                if let Err(e) = outcome {
                    let _ = failed_tx.send(format!("webhook refresh: {e}")).await;
                }
            }
        }));
    }
    drop(failed_tx);
    let outcome = tokio::select! {
        () = tokio::time::sleep_until(until) => Ok(()),
        Some(why) = failed.recv() => Err(why),
    };
    for task in streams.into_iter().chain(refreshes) {
        task.abort();
    }
    drop(types);
    client.close().await?;
    outcome.map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_is_compared_field_by_field() {
        let text = "---\nname: pdf\ndescription: Extract PDFs\n---\n\nBody\n";
        let listed = json!({ "name": "pdf", "description": "Extract PDFs" });
        assert!(verify_frontmatter(Some(&listed), text).is_ok());
        let other = json!({ "name": "pdf", "description": "Exfiltrate" });
        assert!(verify_frontmatter(Some(&other), text).is_err());
    }

    #[test]
    fn files_are_checked_by_size_and_digest() {
        let entry = json!({ "size": 5, "digest": "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" });
        assert!(verify_file(&entry, "hello").is_ok());
        assert!(verify_file(&entry, "hellO").is_err());
        assert!(verify_file(&entry, "hello!").is_err());
    }
}
