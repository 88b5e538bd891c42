//! Micro-benchmarks of the request path, so regressions show before they reach the
//! side-by-side table: decode, a whole `tools/call` (decode → dispatch → validate → handler →
//! encode) in the 2026-07-28 era, its `_meta` validation (first sight and repeated), schema
//! validation alone (the server's check against `jsonschema`'s), encoding, and SSE framing.
//!
//! `cargo bench -p duomcp --bench hot_path`

#![allow(clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use duomcp::server::{Args, Server};
use std::hint::black_box;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}"#;

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("hot_path");
    g.throughput(Throughput::Elements(1));

    g.bench_function("decode tools/call", |b| {
        b.iter(|| duomcp::jsonrpc::decode(black_box(CALL)).ok())
    });

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = Server::builder()
        .tool(
            "echo",
            |Args(Echo { text }): Args<Echo>| async move { text },
        )
        .build();
    g.bench_function("tools/call end to end (2026-07-28)", |b| {
        b.iter(|| {
            rt.block_on(server.respond(black_box(CALL)))
                .map(|r| r.len())
        })
    });

    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{}},"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}"#;
    g.bench_function("_meta validation, first sight (2026-07-28)", |b| {
        b.iter(|| duomcp::era::modern::validate_meta(black_box(Some(meta))).is_ok())
    });
    let memo = duomcp::era::modern::MetaMemo::default();
    g.bench_function("_meta validation, repeated (2026-07-28)", |b| {
        b.iter(|| memo.validate(black_box(Some(meta))).is_ok())
    });

    let schema = serde_json::to_value(schemars::schema_for!(Echo)).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    let args = serde_json::json!({ "text": "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl" });
    g.bench_function("validate arguments (jsonschema)", |b| {
        b.iter(|| validator.is_valid(black_box(&args)))
    });
    let check = duomcp::__bench::schema_check(schema.clone());
    g.bench_function("validate arguments (as the server does)", |b| {
        b.iter(|| check(black_box(&args)))
    });

    let result = duomcp::schema::CallToolResult::text(
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl",
    );
    let id = duomcp::jsonrpc::RequestId::Number(42.into());
    g.bench_function("encode result", |b| {
        b.iter(|| duomcp::jsonrpc::encode_result(black_box(&id), black_box(&result)).ok())
    });
    let frame = duomcp::jsonrpc::encode_result(&id, &result).expect("encodes");
    g.bench_function("SSE framing", |b| {
        b.iter(|| duomcp::__bench::sse_event(black_box(Some("17")), black_box(&frame)).len())
    });
    g.finish();
}

criterion_group!(hot_path, benches);
criterion_main!(hot_path);
