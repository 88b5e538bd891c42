use duomcp::server::Args;

#[derive(serde::Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

/// `Add` derives `Deserialize` but not `JsonSchema`.
#[duomcp::tool]
async fn add(Args(Add { a, b }): Args<Add>) -> String {
    (a + b).to_string()
}

fn main() {}
