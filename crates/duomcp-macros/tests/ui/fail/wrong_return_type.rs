use duomcp::server::{HandlerError, Json};

/// Returns a number, which is no tool result.
#[duomcp::tool]
async fn answer() -> u32 {
    42
}

/// The error type is not an error.
#[duomcp::tool]
async fn fallible() -> Result<String, u8> {
    Ok(String::new())
}

#[derive(serde::Serialize)]
struct Sum {
    total: i64,
}

/// Structured output needs a schema.
#[duomcp::tool]
async fn total() -> Result<Json<Sum>, HandlerError> {
    Ok(Json(Sum { total: 1 }))
}

/// Prompts must return something.
#[duomcp::prompt]
async fn empty() {}

fn main() {}
