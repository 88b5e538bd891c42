//! Thousands of random and malformed lines: no panic, every request-shaped line answered,
//! and the server still serves a valid request afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::{json, Value};
use std::collections::HashSet;
use support::{Wire, LEGACY};

/// The reference server in-process over a byte pipe, not an in-memory connection, on purpose:
/// these tests write raw lines, testing the stdio loop's newline framing itself.
fn wire() -> Wire {
    Wire::in_process_lines(duomcp_cli::reference::server(), LEGACY)
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const METHODS: &[&str] = &[
    "ping",
    "tools/list",
    "prompts/list",
    "resources/list",
    "no/such",
    "tools/call",
    "completion/complete",
];

/// One line and, if it is a request with a usable id, that id.
fn line(rng: &mut Rng, n: usize) -> (Vec<u8>, Option<Value>) {
    let id = json!(format!("r{n}"));
    let method = METHODS[rng.below(METHODS.len() as u64) as usize];
    let valid = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": { "name": "test_simple_text" } }).to_string();
    match rng.below(12) {
        0 => (valid.as_bytes()[..rng.below(valid.len() as u64) as usize].to_vec(), None), // truncated
        1 => (json!({ "jsonrpc": "2.0", "id": id, "method": 17 }).to_string().into_bytes(), Some(id)), // wrong type
        2 => (json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": [1, 2] }).to_string().into_bytes(), Some(id)),
        3 => (format!(r#"{{"jsonrpc":"2.0","id":{}{},"method":"ping"}}"#, "9".repeat(40), n).into_bytes(), None), // huge id
        4 => {
            let depth = 1 + rng.below(5000) as usize;
            (format!(r#"{{"jsonrpc":"2.0","id":"{n}","method":"ping","params":{{"x":{}{}}}}}"#, "[".repeat(depth), "]".repeat(depth)).into_bytes(), None)
        }
        5 => {
            let mut v = valid.into_bytes();
            let at = rng.below(v.len() as u64) as usize;
            v[at] = 0xff; // invalid UTF-8
            (v, None)
        }
        6 => ((0..rng.below(200)).map(|_| (rng.below(255) + 1) as u8).filter(|b| *b != b'\n').collect(), None),
        7 => (json!({ "jsonrpc": "1.0", "id": id, "method": "ping" }).to_string().into_bytes(), Some(id)),
        8 => (json!([{ "jsonrpc": "2.0", "id": id, "method": "ping" }]).to_string().into_bytes(), None), // batch
        9 => (json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": 5, "arguments": "x" } }).to_string().into_bytes(), Some(id)),
        10 => (json!({ "jsonrpc": "2.0", "method": "notifications/whatever", "params": { "a": [] } }).to_string().into_bytes(), None),
        _ => (valid.into_bytes(), Some(id)),
    }
}

async fn run(seed: u64, initialize: bool) {
    let mut w = wire();
    if initialize {
        w.initialize(json!({})).await;
    }
    let mut rng = Rng(seed);
    let mut expected: HashSet<String> = HashSet::new();
    let mut batch = Vec::new();
    for n in 0..3000 {
        let (bytes, id) = line(&mut rng, n);
        if let Some(id) = id {
            expected.insert(id.to_string());
        }
        batch.extend_from_slice(&bytes);
        batch.push(b'\n');
    }
    w.send_raw(&batch).await;
    let last = w.ok("ping", json!({})).await;
    assert_eq!(last, json!({}), "the server still serves a valid request");
    // Responses to the garbage may still trail the ping's: collect until all expected ids came.
    let mut answered: HashSet<String> = w
        .side
        .iter()
        .filter_map(|m| m.get("id"))
        .map(Value::to_string)
        .collect();
    while !expected.is_subset(&answered) {
        let m = w.recv().await;
        if let Some(id) = m.get("id") {
            answered.insert(id.to_string());
        }
    }
    for m in &w.side {
        assert!(
            m.get("method").is_none()
                || m["method"].as_str().unwrap().starts_with("notifications/"),
            "{m}"
        );
    }
    let r = w.ok("ping", json!({})).await;
    assert_eq!(r, json!({}));
}

#[tokio::test]
async fn random_and_malformed_lines_before_initialize() {
    run(0x9E37_79B9_7F4A_7C15, false).await;
}

#[tokio::test]
async fn random_and_malformed_lines_after_initialize() {
    run(0xD1B5_4A32_D192_ED03, true).await;
}

#[tokio::test]
async fn an_oversized_line_is_refused_without_killing_the_connection() {
    let mut w = wire();
    let mut huge = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'a', 5 * 1024 * 1024));
    huge.extend_from_slice(b"\"}}\n");
    w.send_raw(&huge).await;
    let e = w.recv().await;
    assert_eq!(e["error"]["code"], -32600);
    assert!(e["error"]["message"].as_str().unwrap().contains("limit"));
    assert_eq!(w.ok("ping", json!({})).await, json!({}));
}
