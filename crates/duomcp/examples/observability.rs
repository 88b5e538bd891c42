//! The book's "Observability" snippet, compiled: OpenTelemetry from the `OTEL_*` variables,
//! an audit log, and the Prometheus text a `/metrics` endpoint answers with. The book includes
//! the code between the `ANCHOR` marks (`scripts/book_check.py` checks that they exist).
//!
//! ```text
//! $ cargo run -q -p duomcp --features otel --example observability
//! ```

use duomcp::server::Args;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    name: String,
}

async fn greet(Args(g): Args<Greet>) -> String {
    format!("Hello, {}!", g.name)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: snippet
    use duomcp::otel::{AuditLog, Pipeline};
    use duomcp::server::Server;

    let pipeline = Pipeline::builder().prometheus(true).build()?; // OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set
    let telemetry = pipeline
        .telemetry()
        .with_audit(AuditLog::file("audit.jsonl")?);
    let server = Server::builder()
        .tool("greet", greet)
        .telemetry(telemetry)
        .build();
    // …serve; a `/metrics` endpoint answers with the Prometheus text:
    let metrics: String = pipeline
        .prometheus()
        .map(|p| p.render())
        .unwrap_or_default();
    // Flushes at exit.
    pipeline.shutdown();
    // ANCHOR_END: snippet
    drop(server);
    print!("{metrics}");
    Ok(())
}
