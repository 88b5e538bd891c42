//! Named servers from a config file in the `mcpServers` format that Claude Desktop, Cursor,
//! Claude Code and others use (VS Code's `servers` key is read too):
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "everything": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
//!                     "env": { "LOG": "1" } },
//!     "remote": { "url": "https://mcp.example.com/mcp",
//!                 "headers": { "Authorization": "Bearer s3cret" } }
//!   }
//! }
//! ```
//!
//! so that `duomcp tools everything` works. The file is `--config PATH`, else
//! `$DUOMCP_CONFIG`, else the first of the usual locations (`default_locations`) that names
//! the server.

use super::Failure;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Config files larger than this are refused (they are hand-written, a few KiB).
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// The environment variable naming the config file.
pub(crate) const ENV_VAR: &str = "DUOMCP_CONFIG";

/// How a named server is reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// A command to start, speaking stdio.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// The files searched, in order, when neither `--config` nor `$DUOMCP_CONFIG` names one:
/// the project's `.mcp.json` (Claude Code), `.cursor/mcp.json`, `.vscode/mcp.json`; then
/// `~/.config/duomcp/mcp.json` (`$XDG_CONFIG_HOME`), `~/.cursor/mcp.json` and Claude Desktop's
/// `claude_desktop_config.json` (`~/Library/Application Support/Claude/` on macOS,
/// `~/.config/Claude/` on Linux, `%APPDATA%\Claude\` on Windows).
pub(crate) fn default_locations() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from);
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(dir) = &config_home {
        out.push(dir.join("duomcp").join("mcp.json"));
    }
    if let Some(home) = &home {
        out.push(home.join(".cursor").join("mcp.json"));
        out.push(
            home.join("Library")
                .join("Application Support")
                .join("Claude")
                .join("claude_desktop_config.json"),
        );
    }
    if let Some(dir) = &config_home {
        out.push(dir.join("Claude").join("claude_desktop_config.json"));
    }
    if let Some(appdata) = std::env::var_os("APPDATA") {
        out.push(
            PathBuf::from(appdata)
                .join("Claude")
                .join("claude_desktop_config.json"),
        );
    }
    out
}

/// The file to read: `explicit` (`--config`), else `$DUOMCP_CONFIG`.
fn chosen_file(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(ENV_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// Reads the servers of one file (`mcpServers`, or VS Code's `servers`).
pub(crate) fn read_file(path: &Path) -> Result<Map<String, Value>, Failure> {
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| Failure::new(format!("cannot read the config file {shown}: {e}")))?;
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(Failure::new(format!(
            "the config file {shown} is larger than {MAX_CONFIG_BYTES} bytes"
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::new(format!("cannot read the config file {shown}: {e}")))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::new(format!("the config file {shown} is not valid JSON: {e}")))?;
    let servers = value
        .get("mcpServers")
        .or_else(|| value.get("servers"))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    match servers {
        Value::Object(map) => Ok(map),
        _ => Err(Failure::new(format!(
            "the config file {shown}: `mcpServers` is not an object of named servers"
        ))),
    }
}

/// Finds the server `name`: in the chosen file, or in the first default location naming it.
/// Returns the entry and the file it came from.
pub(crate) fn lookup(name: &str, explicit: Option<&Path>) -> Result<(Entry, PathBuf), Failure> {
    if let Some(file) = chosen_file(explicit) {
        let servers = read_file(&file)?;
        return match servers.get(name) {
            Some(v) => Ok((parse_entry(name, v, &file)?, file)),
            None => Err(not_found(name, &[file], servers.keys())),
        };
    }
    let mut searched = Vec::new();
    let mut known = Vec::new();
    for file in default_locations() {
        if !file.is_file() {
            searched.push(file);
            continue;
        }
        let servers = read_file(&file)?;
        if let Some(v) = servers.get(name) {
            return Ok((parse_entry(name, v, &file)?, file));
        }
        known.extend(servers.keys().cloned());
        searched.push(file);
    }
    Err(not_found(name, &searched, known.iter()))
}

/// Every configured server, first definition of a name winning: `(name, entry, file)`. With
/// `explicit` (or `$DUOMCP_CONFIG`) only that file is read, else every usual location there is.
pub(crate) fn all(explicit: Option<&Path>) -> Result<Vec<(String, Entry, PathBuf)>, Failure> {
    let files = match chosen_file(explicit) {
        Some(file) => vec![file],
        None => default_locations()
            .into_iter()
            .filter(|f| f.is_file())
            .collect(),
    };
    let mut out: Vec<(String, Entry, PathBuf)> = Vec::new();
    for file in files {
        for (name, value) in read_file(&file)? {
            if out.iter().any(|(n, _, _)| *n == name) {
                continue;
            }
            let entry = parse_entry(&name, &value, &file)?;
            out.push((name, entry, file.clone()));
        }
    }
    Ok(out)
}

/// `duomcp servers`: the configured servers, as a table or JSON.
pub fn list(explicit: Option<&Path>, json: bool) -> std::process::ExitCode {
    let servers = match all(explicit) {
        Ok(s) => s,
        Err(failure) => {
            failure.report(json);
            return std::process::ExitCode::FAILURE;
        }
    };
    if json {
        let items: Vec<Value> = servers
            .iter()
            .map(|(name, entry, file)| {
                let mut v = match entry {
                    Entry::Stdio { command, args, .. } => {
                        serde_json::json!({ "name": name, "command": command, "args": args })
                    }
                    Entry::Http { url, .. } => serde_json::json!({ "name": name, "url": url }),
                };
                v["file"] = Value::String(file.display().to_string());
                v
            })
            .collect();
        println!("{}", Value::Array(items));
        return std::process::ExitCode::SUCCESS;
    }
    if servers.is_empty() {
        eprintln!(
            "(no configured servers: looked in {})",
            match chosen_file(explicit) {
                Some(f) => f.display().to_string(),
                None => default_locations()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        );
        return std::process::ExitCode::SUCCESS;
    }
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|(name, entry, file)| {
            let what = match entry {
                Entry::Stdio { command, args, .. } => std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                Entry::Http { url, .. } => url.clone(),
            };
            vec![name.clone(), file.display().to_string(), what]
        })
        .collect();
    print!(
        "{}",
        super::output::table(&["NAME", "FILE", "SERVER"], &rows)
    );
    std::process::ExitCode::SUCCESS
}

fn not_found<'a>(
    name: &str,
    searched: &[PathBuf],
    known: impl Iterator<Item = &'a String>,
) -> Failure {
    let known: Vec<&str> = known.map(String::as_str).collect();
    let mut text = format!("`{name}` is not a URL, and no configured server has that name");
    if let Some(url) = did_you_mean(name) {
        text = format!("`{name}` is not a URL: did you mean {url} ?");
        return Failure::new(text);
    }
    match searched {
        [one] => text.push_str(&format!(" (in {})", one.display())),
        _ => text.push_str(&format!(
            " (looked in {}; name the file with --config or ${ENV_VAR})",
            searched
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
    if !known.is_empty() {
        text.push_str(&format!("; configured: {}", known.join(", ")));
    }
    Failure::new(text)
}

/// `http://WORD` when `word` looks like an address without its scheme (`127.0.0.1:3000/mcp`,
/// `localhost:3000`, `mcp.example.com/mcp`).
pub(crate) fn did_you_mean(word: &str) -> Option<String> {
    let authority = word.split('/').next().unwrap_or(word);
    let looks_like_host = word.contains('/')
        || authority.contains(':')
        || authority.contains('.')
        || authority.eq_ignore_ascii_case("localhost");
    let plausible = !authority.is_empty()
        && authority
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-.:[]_".contains(c));
    if !(looks_like_host && plausible) {
        return None;
    }
    let scheme = if authority.starts_with("localhost")
        || authority.starts_with("127.")
        || authority.starts_with("[::1]")
        || authority.contains(':')
    {
        "http"
    } else {
        "https"
    };
    Some(format!("{scheme}://{word}"))
}

fn parse_entry(name: &str, value: &Value, file: &Path) -> Result<Entry, Failure> {
    let bad = |what: &str| {
        Failure::new(format!(
            "the config file {}: server `{name}` {what}",
            file.display()
        ))
    };
    let Value::Object(entry) = value else {
        return Err(bad("is not an object"));
    };
    let strings = |key: &str| -> Result<Vec<(String, String)>, Failure> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    _ => Err(bad(&format!("has a non-string value in `{key}.{k}`"))),
                })
                .collect(),
            Some(_) => Err(bad(&format!("has a `{key}` that is not an object"))),
        }
    };
    let url = entry
        .get("url")
        .or_else(|| entry.get("serverUrl"))
        .and_then(Value::as_str);
    if let Some(url) = url {
        return Ok(Entry::Http {
            url: url.to_owned(),
            headers: strings("headers")?,
        });
    }
    let Some(command) = entry.get("command").and_then(Value::as_str) else {
        return Err(bad("has neither a `command` nor a `url`"));
    };
    let args = match entry.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| {
                a.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| bad("has an argument that is not a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("has `args` that is not an array")),
    };
    Ok(Entry::Stdio {
        command: command.to_owned(),
        args,
        env: strings("env")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(v: Value) -> Result<Entry, Failure> {
        parse_entry("s", &v, Path::new("x.json"))
    }

    #[test]
    fn entries_of_both_kinds_parse() {
        assert_eq!(
            entry(json!({ "command": "npx", "args": ["-y", "pkg"], "env": { "A": "1" } })).unwrap(),
            Entry::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "pkg".into()],
                env: vec![("A".into(), "1".into())],
            }
        );
        assert_eq!(
            entry(json!({ "type": "http", "url": "https://h/mcp", "headers": { "X": "y" } }))
                .unwrap(),
            Entry::Http {
                url: "https://h/mcp".into(),
                headers: vec![("X".into(), "y".into())],
            }
        );
        let e = entry(json!({ "args": [] })).unwrap_err();
        assert!(
            e.message.contains("neither a `command` nor a `url`"),
            "{e:?}"
        );
        let e = entry(json!({ "command": "x", "args": [1] })).unwrap_err();
        assert!(e.message.contains("not a string"), "{e:?}");
    }

    #[test]
    fn addresses_without_a_scheme_get_a_suggestion() {
        assert_eq!(
            did_you_mean("127.0.0.1:3000/mcp").as_deref(),
            Some("http://127.0.0.1:3000/mcp")
        );
        assert_eq!(
            did_you_mean("mcp.example.com/mcp").as_deref(),
            Some("https://mcp.example.com/mcp")
        );
        assert_eq!(did_you_mean("myserver"), None);
        assert_eq!(did_you_mean("name=value"), None);
    }
}
