//! A plain `fn` is not a handler: one error each, saying to make it `async fn`, and the
//! registration adds none of its own.

use duomcp::server::{Args, Server};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

#[duomcp::tool]
fn forecast(Args(City { city }): Args<City>) -> String {
    city
}

#[duomcp::resource(uri = "weather://stations")]
fn stations() -> String {
    String::new()
}

fn main() {
    let _ = Server::builder()
        .tool(forecast::spec(), forecast)
        .resource(stations::spec(), stations)
        .build();
}
