//! A host for the weather server: spawns `weather_stdio` (or the command given), lists its
//! tools and calls both: the structured `forecast`, read back as a typed value, and `alerts`,
//! whose failure arrives as an `isError` result.
//!
//! ```sh
//! cargo build -q -p duomcp --example weather_stdio
//! cargo run -q -p duomcp --features client --example weather_host
//! ```
//!
//! ```text
//! tools: alerts, forecast
//! forecast: Faro, 16 °C, sunny
//! alerts failed: no alert feed for Faro: environment variable not found
//! ```

use duomcp::client::Client;
use serde_json::json;
use tokio::process::Command;

// ANCHOR: forecast_type
#[derive(serde::Deserialize)]
struct Forecast {
    city: String,
    high_c: i32,
    sky: String,
}
// ANCHOR_END: forecast_type

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match args.split_first() {
        Some((program, rest)) => {
            let mut command = Command::new(program);
            command.args(rest);
            command
        }
        None => {
            let me = std::env::current_exe()?;
            let mut command = Command::new(me.with_file_name("weather_stdio"));
            // The server's alert feed is unset, so `alerts` fails (on purpose).
            command.env_remove("WEATHER_ALERTS_URL");
            command
        }
    };
    let client = Client::builder()
        .name("weather-host")
        .connect_stdio(command)
        .await?;

    let mut names: Vec<String> = client
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    println!("tools: {}", names.join(", "));

    // ANCHOR: typed
    let result = client
        .call_tool("forecast", json!({ "city": "Faro" }))
        .await?;
    let value = result
        .structured_content
        .ok_or_else(|| anyhow::anyhow!("`forecast` returned no structured content"))?;
    let f: Forecast = serde_json::from_value(value)?;
    println!("forecast: {}, {} °C, {}", f.city, f.high_c, f.sky);
    // ANCHOR_END: typed

    let result = client
        .call_tool("alerts", json!({ "city": "Faro" }))
        .await?;
    let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
    if result.is_error == Some(true) {
        println!("alerts failed: {}", text.join(" "));
    } else {
        println!("alerts: {}", text.join(" "));
    }
    client.close().await?;
    Ok(())
}
