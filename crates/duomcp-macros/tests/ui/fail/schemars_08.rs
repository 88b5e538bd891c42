//! `JsonSchema` derived from schemars 0.8 while duomcp uses schemars 1: the error names the
//! version clash, not a derive the struct already has.

use duomcp::server::Args;

#[derive(serde::Deserialize, schemars08::JsonSchema)]
struct City {
    city: String,
}

#[duomcp::tool]
async fn forecast(Args(City { city }): Args<City>) -> String {
    city
}

fn main() {}
