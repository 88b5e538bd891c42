//! Every error type a tool may return, and deriving the schema through `duomcp::schemars`.

use duomcp::server::{Args, HandlerError, Server};

#[derive(serde::Deserialize, duomcp::schemars::JsonSchema)]
#[schemars(crate = "duomcp::schemars")]
struct City {
    city: String,
}

#[duomcp::tool]
async fn with_anyhow(Args(City { city }): Args<City>) -> anyhow::Result<String> {
    anyhow::ensure!(!city.is_empty(), "no city");
    Ok(city)
}

#[duomcp::tool]
async fn with_string() -> Result<String, String> {
    Err("no".to_owned())
}

#[duomcp::tool]
async fn with_str() -> Result<&'static str, &'static str> {
    Err("no")
}

#[duomcp::tool]
async fn with_box() -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    Err("no".into())
}

#[duomcp::tool]
async fn with_io() -> Result<String, std::io::Error> {
    Err(std::io::Error::other("no"))
}

#[duomcp::tool]
async fn with_handler_error() -> Result<String, HandlerError> {
    Err(HandlerError::msg("no"))
}

fn main() {
    let _ = Server::builder()
        .tool(with_anyhow::spec(), with_anyhow)
        .tool(with_string::spec(), with_string)
        .tool(with_str::spec(), with_str)
        .tool(with_box::spec(), with_box)
        .tool(with_io::spec(), with_io)
        .tool(with_handler_error::spec(), with_handler_error)
        .build();
}
