//! The weather server of the `weather_*` examples: two tools (one with structured output, one
//! that fails with an `anyhow` error), a resource and a prompt. Shared by `weather_stdio` (over
//! stdio) and `weather_axum` (inside an axum application) with `#[path]`.

use anyhow::Context as _;
use duomcp::server::{Args, Json, Server};

// Deriving through duomcp's re-export: no `schemars` in this crate's own dependencies needed.
#[derive(serde::Deserialize, duomcp::schemars::JsonSchema)]
#[schemars(crate = "duomcp::schemars")]
pub struct City {
    /// The city, e.g. `Lisbon`.
    pub city: String,
}

#[derive(serde::Serialize, duomcp::schemars::JsonSchema)]
#[schemars(crate = "duomcp::schemars")]
pub struct Forecast {
    pub city: String,
    /// Degrees Celsius.
    pub high_c: i32,
    pub sky: String,
}

/// Tomorrow's forecast for a city, as structured output (`structuredContent`, with
/// `Forecast`'s schema as the tool's `outputSchema`).
#[duomcp::tool(read_only)]
pub async fn forecast(Args(City { city }): Args<City>) -> Json<Forecast> {
    let high_c = 12 + (city.len() as i32 % 10);
    Json(Forecast {
        city,
        high_c,
        sky: "sunny".into(),
    })
}

/// Weather alerts for a city. No alert service is configured, so it always fails: the
/// `anyhow` error (with its context) becomes an `isError` result the model can read.
#[duomcp::tool(read_only)]
pub async fn alerts(Args(City { city }): Args<City>) -> anyhow::Result<String> {
    let feed =
        std::env::var("WEATHER_ALERTS_URL").with_context(|| format!("no alert feed for {city}"))?;
    Ok(format!("alerts for {city} come from {feed}"))
}

/// The stations the forecasts come from.
#[duomcp::resource(uri = "weather://stations", mime_type = "text/plain")]
pub async fn stations() -> String {
    "Lisbon, Porto, Faro".to_owned()
}

/// Asks the model to plan a day out around the forecast.
#[duomcp::prompt(title = "Plan a day out")]
pub async fn plan_day(Args(City { city }): Args<City>) -> String {
    format!("Call `forecast` for {city}, then suggest a day out that suits the weather.")
}

/// The server definition.
pub fn server() -> Server {
    Server::builder()
        .name("weather")
        .version("1.0.0")
        .tool(forecast::spec(), forecast)
        .tool(alerts::spec(), alerts)
        .resource(stations::spec(), stations)
        .prompt(plan_day::spec(), plan_day)
        .build()
}
