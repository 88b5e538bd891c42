//! Elicitation for the command line: asked interactively when stdin and stderr are a terminal,
//! declined otherwise (a script cannot answer).

use duomcp::client::InputError;
use duomcp::schema::{ElicitRequestParams, ElicitResult, JsonObject};
use serde_json::Value;
use std::io::{BufRead, IsTerminal, Write};

/// The elicitation handler the client commands register.
pub(crate) async fn answer(params: ElicitRequestParams) -> Result<ElicitResult, InputError> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        eprintln!(
            "duomcp: the server asked for input ({}); declined, as there is no terminal to ask on",
            params.message()
        );
        return Ok(ElicitResult::decline());
    }
    tokio::task::spawn_blocking(move || ask(&params))
        .await
        .map_err(|e| InputError::new(format!("the prompt failed: {e}")))?
        .map_err(InputError::from)
}

fn read_line(prompt: &str) -> std::io::Result<Option<String>> {
    let mut err = std::io::stderr().lock();
    write!(err, "{prompt}")?;
    err.flush()?;
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\r', '\n']).to_owned()))
}

fn ask(params: &ElicitRequestParams) -> std::io::Result<ElicitResult> {
    eprintln!();
    eprintln!("The server asks: {}", params.message());
    match params {
        ElicitRequestParams::Url(u) => {
            eprintln!("It wants you to open: {}", u.url);
            match read_line("Open it yourself and continue? [y/N/c(ancel)] ")? {
                Some(a) if a.eq_ignore_ascii_case("y") => Ok(ElicitResult::accept(None)),
                Some(a) if a.eq_ignore_ascii_case("c") => Ok(ElicitResult::cancel()),
                None => Ok(ElicitResult::cancel()),
                _ => Ok(ElicitResult::decline()),
            }
        }
        ElicitRequestParams::Form(form) => {
            let required: Vec<String> = form.requested_schema.required.clone().unwrap_or_default();
            let mut content = JsonObject::new();
            for (name, property) in &form.requested_schema.properties {
                let schema = serde_json::to_value(property).unwrap_or(Value::Null);
                let Some(value) = ask_field(name, &schema, required.contains(name))? else {
                    return Ok(ElicitResult::cancel());
                };
                if let Some(v) = value {
                    content.insert(name.clone(), v);
                }
            }
            match read_line("Send? [Y/n(decline)/c(ancel)] ")? {
                Some(a) if a.is_empty() || a.eq_ignore_ascii_case("y") => {
                    Ok(ElicitResult::accept(Some(content)))
                }
                Some(a) if a.eq_ignore_ascii_case("n") => Ok(ElicitResult::decline()),
                _ => Ok(ElicitResult::cancel()),
            }
        }
    }
}

/// Asks for one field until the answer fits its type. `Ok(None)`: input ended (cancel);
/// `Ok(Some(None))`: left empty (the client fills in a default when there is one).
fn ask_field(name: &str, schema: &Value, required: bool) -> std::io::Result<Option<Option<Value>>> {
    let title = schema.get("title").and_then(Value::as_str).unwrap_or(name);
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        eprintln!("  {description}");
    }
    let choices: Vec<String> = schema
        .get("enum")
        .or_else(|| schema.get("items").and_then(|i| i.get("enum")))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .or_else(|| {
            let options = schema
                .get("oneOf")
                .or_else(|| schema.get("items").and_then(|i| i.get("anyOf")))?;
            Some(
                options
                    .as_array()?
                    .iter()
                    .filter_map(|o| o.get("const").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect(),
            )
        })
        .unwrap_or_default();
    let mut hint = kind.to_owned();
    if !choices.is_empty() {
        hint = format!("{kind}: {}", choices.join(" | "));
    }
    if let Some(d) = schema.get("default") {
        hint.push_str(&format!(", default {d}"));
    }
    if required {
        hint.push_str(", required");
    }
    loop {
        let Some(line) = read_line(&format!("{title} ({hint}): "))? else {
            return Ok(None);
        };
        if line.is_empty() {
            if required && schema.get("default").is_none() {
                eprintln!("  a value is required");
                continue;
            }
            return Ok(Some(None));
        }
        let value = match kind {
            "boolean" => match line.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Some(Value::Bool(true)),
                "n" | "no" | "false" => Some(Value::Bool(false)),
                _ => None,
            },
            "integer" => line.parse::<i64>().ok().map(Value::from),
            "number" => line
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
            "array" => Some(Value::Array(
                line.split(',')
                    .map(|s| Value::String(s.trim().to_owned()))
                    .collect(),
            )),
            _ => Some(Value::String(line.clone())),
        };
        let valid_choice = |v: &Value| match v {
            Value::String(s) => choices.is_empty() || choices.contains(s),
            Value::Array(items) => {
                choices.is_empty()
                    || items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| choices.iter().any(|c| c == s)))
            }
            _ => true,
        };
        match value {
            Some(v) if valid_choice(&v) => return Ok(Some(Some(v))),
            _ => eprintln!(
                "  that is not a valid {kind}{}",
                if choices.is_empty() {
                    String::new()
                } else {
                    format!(" (choose from {})", choices.join(", "))
                }
            ),
        }
    }
}
