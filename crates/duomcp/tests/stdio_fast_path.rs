//! The stdio connection loop's fast path (handlers that finish at once are answered inline,
//! the others on tasks of their own) and the 2026-07-28 result encoding that splices
//! `resultType`/`serverInfo` into the encoded bytes (issue 9).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::server::Server;
use duomcp_schema::CallToolResult;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn server() -> Server {
    Server::builder()
        .name("fast-path")
        .tool("quick", || async { "quick" })
        .tool("slow", || async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            "slow"
        })
        .tool("with_meta", || async {
            let mut r = CallToolResult::text("has meta");
            let mut meta = serde_json::Map::new();
            meta.insert("example.com/mine".into(), json!(1));
            r.meta = Some(meta);
            r
        })
        .tool("says_meta", || async { "\"_meta\"" })
        .build()
}

/// Sends `lines` at once and returns the first `n` answers in the order they arrived.
async fn exchange(lines: &[String], n: usize) -> Vec<Value> {
    // A byte duplex on purpose, not `Connection::memory`: this tests the stdio loop's lines.
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let serving = tokio::spawn(server().serve_connection(read, write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut batch = String::new();
    for l in lines {
        batch.push_str(l);
        batch.push('\n');
    }
    client_write.write_all(batch.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(client_read);
    let mut out = Vec::new();
    for _ in 0..n {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), reader.read_line(&mut line))
            .await
            .expect("an answer in time")
            .unwrap();
        assert!(read > 0, "the connection ended early");
        out.push(serde_json::from_str(&line).unwrap());
    }
    // The duplex ends (EOF for the server) once both halves are gone.
    drop(client_write);
    drop(reader);
    serving.await.unwrap().unwrap();
    out
}

fn modern_call(id: u64, name: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","_meta":{META}}}}}"#
    )
}

#[tokio::test]
async fn a_waiting_handler_does_not_hold_up_the_quick_ones_behind_it() {
    let answers = exchange(
        &[
            modern_call(1, "slow"),
            modern_call(2, "quick"),
            modern_call(3, "quick"),
        ],
        3,
    )
    .await;
    let ids: Vec<u64> = answers.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [2, 3, 1], "the slow call answers last: {answers:?}");
    assert_eq!(answers[2]["result"]["content"][0]["text"], "slow");
    assert_eq!(answers[0]["result"]["content"][0]["text"], "quick");
}

#[tokio::test]
async fn a_complete_modern_result_gets_result_type_and_server_info_once() {
    let answers = exchange(&[modern_call(1, "quick")], 1).await;
    let result = &answers[0]["result"];
    assert_eq!(
        result,
        &json!({
            "content": [{ "type": "text", "text": "quick" }],
            "resultType": "complete",
            "_meta": { "io.modelcontextprotocol/serverInfo": result["_meta"]["io.modelcontextprotocol/serverInfo"] },
        })
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "fast-path"
    );
}

#[tokio::test]
async fn a_result_with_its_own_meta_is_merged_not_repeated() {
    // Raw text: a repeated key would vanish in a parsed `Value`. A byte duplex on purpose:
    // the bytes `serve_connection` writes are what is checked.
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let serving = tokio::spawn(server().serve_connection(read, write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let batch = format!(
        "{}\n{}\n",
        modern_call(1, "with_meta"),
        modern_call(2, "says_meta")
    );
    client_write.write_all(batch.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(client_read);
    let mut first = String::new();
    reader.read_line(&mut first).await.unwrap();
    let mut second = String::new();
    reader.read_line(&mut second).await.unwrap();
    drop(client_write);
    drop(reader);
    serving.await.unwrap().unwrap();

    assert_eq!(first.matches("\"_meta\"").count(), 1, "{first}");
    assert_eq!(first.matches("\"resultType\"").count(), 1, "{first}");
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["result"]["_meta"]["example.com/mine"], 1);
    assert_eq!(
        v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "fast-path"
    );
    // A text that merely mentions "_meta" is still one result with one `_meta`.
    let v: Value = serde_json::from_str(&second).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "\"_meta\"");
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(
        v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "fast-path"
    );
}

#[tokio::test]
async fn list_pages_are_the_same_in_both_eras_apart_from_the_modern_additions() {
    let legacy = exchange(
        &[
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_owned(),
        ],
        2,
    )
    .await;
    let modern = exchange(
        &[format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{META}}}}}"#
        )],
        1,
    )
    .await;
    let legacy = &legacy[1]["result"];
    let modern = &modern[0]["result"];
    let names: Vec<&str> = legacy["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["quick", "says_meta", "slow", "with_meta"]);
    assert_eq!(legacy["tools"], modern["tools"]);
    assert!(legacy.get("resultType").is_none());
    assert_eq!(modern["resultType"], "complete");
    assert!(modern["ttlMs"].is_u64());
    assert!(modern["cacheScope"].is_string());
}

/// Only answers that wait are in the in-flight table: their id is refused meanwhile and a
/// cancellation finds them; an id answered at once is free again for the next request.
#[tokio::test]
async fn ids_of_waiting_answers_are_refused_and_cancellable_and_answered_ids_are_free() {
    let cancel = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"_meta":{META}}}}}"#
        )
    };
    let answers = exchange(
        &[
            modern_call(1, "slow"),
            modern_call(1, "quick"),
            modern_call(2, "quick"),
            modern_call(2, "quick"),
            modern_call(3, "slow"),
            cancel(3),
            modern_call(4, "slow"),
        ],
        5,
    )
    .await;
    let by_id = |id: u64| -> Vec<&Value> { answers.iter().filter(|a| a["id"] == id).collect() };
    // Id 1 waits, so the second request with it is refused.
    let one = by_id(1);
    assert_eq!(one.len(), 2, "{answers:?}");
    assert!(one.iter().any(|a| a["error"]["code"] == -32600
        && a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in use")));
    assert!(one
        .iter()
        .any(|a| a["result"]["content"][0]["text"] == "slow"));
    // Id 2 was answered at once, so it could be used again.
    let two = by_id(2);
    assert_eq!(two.len(), 2, "{answers:?}");
    assert!(two
        .iter()
        .all(|a| a["result"]["content"][0]["text"] == "quick"));
    // Id 3 was cancelled while it waited: no answer at all; id 4 still answered.
    assert!(by_id(3).is_empty(), "{answers:?}");
    assert_eq!(by_id(4)[0]["result"]["content"][0]["text"], "slow");
}

/// Records how many lines each write to it carried.
#[derive(Clone, Default)]
struct WriteSizes(std::sync::Arc<std::sync::Mutex<Vec<usize>>>);

impl tokio::io::AsyncWrite for WriteSizes {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let lines = buf.iter().filter(|b| **b == b'\n').count();
        self.0.lock().unwrap().push(lines);
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// A batch of pipelined calls is answered in writes of at most 16 answers, so the first answers
/// do not wait for the whole batch; what is left goes out once the input runs dry.
#[tokio::test]
async fn a_long_batch_is_answered_in_writes_of_at_most_sixteen() {
    let mut input = String::new();
    for id in 1..=40 {
        input.push_str(&modern_call(id, "quick"));
        input.push('\n');
    }
    let sizes = WriteSizes::default();
    server()
        .serve_connection(input.as_bytes(), sizes.clone())
        .await
        .unwrap();
    let sizes = sizes.0.lock().unwrap().clone();
    assert_eq!(sizes.iter().sum::<usize>(), 40, "{sizes:?}");
    assert_eq!(sizes, vec![16, 16, 8], "{sizes:?}");
}
