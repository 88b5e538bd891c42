use duomcp::server::Context;

/// Takes a `bool`, which is no extractor.
#[duomcp::tool]
async fn toggle(ctx: Context, on: bool) -> String {
    let _ = ctx;
    on.to_string()
}

fn main() {}
