//! `duomcp discover`: the era, the server's identity and what it offers.

use super::{finish, output, Failure, Outcome, Target};
use serde_json::{json, Value};

pub(crate) async fn run(target: &Target) -> Result<Outcome, Failure> {
    let (client, logs) = target.connect().await?;
    let caps = client.server_capabilities();
    let info = client.server_info();
    logs.flush().await;
    if target.json {
        target.print_json(&json!({
            "era": match client.era() { duomcp::era::Era::Legacy => "legacy", duomcp::era::Era::Modern => "modern" },
            "protocolVersion": client.protocol_version(),
            "serverInfo": info,
            "capabilities": caps,
            "instructions": client.instructions(),
        }))?;
        return finish(client, Outcome::Ok).await;
    }
    match &info {
        Some(i) => println!(
            "server:       {} {}",
            i.title.as_deref().unwrap_or(&i.name),
            i.version
        ),
        None => println!("server:       (did not say)"),
    }
    println!("era:          {}", client.era());
    println!("protocol:     {}", client.protocol_version());
    let caps_value = serde_json::to_value(&caps).unwrap_or(Value::Null);
    let mut offered: Vec<String> = Vec::new();
    if let Value::Object(map) = &caps_value {
        for (name, detail) in map {
            let flags: Vec<&str> = detail
                .as_object()
                .map(|d| {
                    d.iter()
                        .filter(|(_, v)| **v == json!(true))
                        .map(|(k, _)| k.as_str())
                        .collect()
                })
                .unwrap_or_default();
            if flags.is_empty() {
                offered.push(name.clone());
            } else {
                offered.push(format!("{name} ({})", flags.join(", ")));
            }
        }
    }
    println!(
        "capabilities: {}",
        if offered.is_empty() {
            "none".to_owned()
        } else {
            offered.join(", ")
        }
    );
    if let Some(text) = client.instructions() {
        println!("instructions:");
        for line in output::wrap(&text, output::width().saturating_sub(2)) {
            println!("  {line}");
        }
    }
    finish(client, Outcome::Ok).await
}
