//! `scopes` takes a list of string literals, reported at the offending value.

#[duomcp::tool(scopes = "files:read")]
async fn one() -> String {
    String::new()
}

#[duomcp::tool(scopes = ["files:read", 42])]
async fn two() -> String {
    String::new()
}

#[duomcp::prompt(scopes)]
async fn three() -> String {
    String::new()
}

fn main() {}
