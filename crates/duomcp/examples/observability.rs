//! The README's "Observability" snippet, compiled: OpenTelemetry from the `OTEL_*` variables,
//! an audit log, and the Prometheus text a `/metrics` endpoint answers with.
//! `crates/duomcp/tests/otel.rs` checks that the README shows the code between the `README`
//! marks as it is here.
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
    // README begin
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
    pipeline.shutdown(); // flushes at exit
                         // README end
    drop(server);
    print!("{metrics}");
    Ok(())
}
