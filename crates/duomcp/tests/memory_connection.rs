//! The message-level in-memory connection (`duomcp::transport::memory::Connection`): a client
//! and a server joined in one line with a tap; a server driven by hand; a client facing a
//! scripted server; two clients on one server at once; a hostile peer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice};
use duomcp::server::{Args, Context, Server, ServerConfig};
use duomcp::transport::memory::{self, Connection, MemoryError, MemoryTransport, Side};
use serde_json::{json, Value};
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(10);

fn server() -> Server {
    Server::builder()
        .tool("echo", |Args(v): Args<Value>| async move {
            v["text"].as_str().unwrap_or_default().to_owned()
        })
        .tool("slow", |ctx: Context| async move {
            ctx.progress(1.0, Some(2.0), None).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            "done"
        })
        .build()
}

/// Reads messages until the answer to `id`, returning it and what came before it.
async fn answer_to(end: &mut Connection, id: Value) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let m = tokio::time::timeout(WITHIN, end.recv_json())
            .await
            .expect("an answer within the deadline")
            .unwrap();
        if m["id"] == id && m.get("method").is_none() {
            return (m, before);
        }
        before.push(m);
    }
}

#[tokio::test]
async fn one_line_connects_a_client_and_the_tap_sees_both_ways_in_both_revisions() {
    for (choice, version) in [
        (EraChoice::Legacy, "2025-11-25"),
        (EraChoice::Modern, "2026-07-28"),
    ] {
        let (client, tap) = memory::connect_with(Client::builder().era(choice), server())
            .await
            .unwrap();
        assert_eq!(client.protocol_version(), version);
        let r = client
            .call_tool("echo", json!({ "text": "tapped" }))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("tapped"));

        let call = tap
            .wait_for(Side::Client, "tools/call", WITHIN)
            .await
            .expect("the call crossed the tap");
        assert_eq!(call["params"]["name"], "echo");
        // The answer to that call crossed the other way, after it.
        let messages = tap.messages();
        let asked = messages
            .iter()
            .position(|t| t.from == Side::Client && t.json()["id"] == call["id"])
            .unwrap();
        let answered = messages
            .iter()
            .position(|t| {
                t.from == Side::Server
                    && t.json()["id"] == call["id"]
                    && t.json()["result"].is_object()
            })
            .expect("the answer crossed the tap");
        assert!(asked < answered, "{version}");
        assert!(messages[asked].at <= messages[answered].at);
        // The handshake is there too, in the revision's own form.
        let first = &tap.from(Side::Client)[0];
        let expected = if version == "2025-11-25" {
            "initialize"
        } else {
            "server/discover"
        };
        assert_eq!(first["method"], expected, "{version}");
        assert_eq!(tap.dropped(), 0);
    }
}

#[tokio::test]
async fn a_server_driven_by_hand_answers_both_revisions_on_one_connection() {
    let (mut end, server_end) = Connection::memory();
    let serving = tokio::spawn(server().serve_memory(server_end));

    // 2026-07-28: stateless, the revision in `_meta`.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "hand", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    end.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "modern"}, "_meta": meta}}))
        .await
        .unwrap();
    let (answer, _) = answer_to(&mut end, json!(1)).await;
    assert_eq!(answer["result"]["content"][0]["text"], "modern", "{answer}");

    // 2025-11-25 on the same connection: initialize, then a call with progress.
    end.send_json(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "hand", "version": "1"}}}),
    )
    .await
    .unwrap();
    let (init, _) = answer_to(&mut end, json!(2)).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    end.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    end.send_json(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "slow", "arguments": {}, "_meta": {"progressToken": "p"}}}),
    )
    .await
    .unwrap();
    let (done, before) = answer_to(&mut end, json!(3)).await;
    assert_eq!(done["result"]["content"][0]["text"], "done");
    assert!(
        before
            .iter()
            .any(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "p"),
        "{before:?}"
    );

    drop(end);
    tokio::time::timeout(WITHIN, serving)
        .await
        .expect("the server ends with its peer")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_hostile_peer_gets_errors_and_the_connection_goes_on() {
    let server = Server::builder()
        .config({
            let mut c = ServerConfig::default();
            c.max_message_size = 1024;
            c
        })
        .build();
    let (mut end, server_end) = Connection::memory();
    tokio::spawn(server.serve_memory(server_end));

    // Not JSON: a parse error with a null id.
    end.send(b"{not json".to_vec()).await.unwrap();
    let m = end.recv_json().await.unwrap();
    assert_eq!(m["error"]["code"], -32700, "{m}");
    assert_eq!(m["id"], Value::Null);

    // Over the limit: refused as a line that long is, and never parsed.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(4096)
    );
    end.send(big.into_bytes()).await.unwrap();
    let m = end.recv_json().await.unwrap();
    assert_eq!(m["error"]["code"], -32600, "{m}");
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1024 bytes"),
        "{m}"
    );

    // A batch is refused; an answer to nothing is ignored.
    end.send(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec())
        .await
        .unwrap();
    let m = end.recv_json().await.unwrap();
    assert!(m["error"]["code"].is_i64(), "{m}");
    end.send(br#"{"jsonrpc":"2.0","id":"nobody","result":{}}"#.to_vec())
        .await
        .unwrap();

    // And the connection still serves.
    end.send(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.to_vec())
        .await
        .unwrap();
    let (m, before) = answer_to(&mut end, json!(7)).await;
    assert_eq!(m["result"], json!({}));
    assert!(
        before.is_empty(),
        "nothing answered the stray response: {before:?}"
    );
}

#[tokio::test]
async fn a_client_faces_a_scripted_server_that_breaks_the_rules() {
    let (client_end, mut server_end) = Connection::memory();
    let script = tokio::spawn(async move {
        // Discovery: refused, so the client falls back to initialize.
        let discover = server_end.recv_json().await.unwrap();
        assert_eq!(discover["method"], "server/discover");
        server_end
            .send_json(&json!({"jsonrpc": "2.0", "id": discover["id"],
                "error": {"code": -32601, "message": "Method not found"}}))
            .await
            .unwrap();
        let init = server_end.recv_json().await.unwrap();
        assert_eq!(init["method"], "initialize");
        // Noise first: not JSON, an answer to no request, then the real answer.
        server_end.send(b"garbage".to_vec()).await.unwrap();
        server_end
            .send_json(&json!({"jsonrpc": "2.0", "id": 999_999, "result": {}}))
            .await
            .unwrap();
        server_end
            .send_json(&json!({"jsonrpc": "2.0", "id": init["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "0"}}}))
            .await
            .unwrap();
        let initialized = server_end.recv_json().await.unwrap();
        assert_eq!(initialized["method"], "notifications/initialized");
        // The next request is left unanswered: the script ends, the connection with it.
        let list = server_end.recv_json().await.unwrap();
        assert_eq!(list["method"], "tools/list");
    });
    let client = Client::builder()
        .connect_transport(MemoryTransport::new(client_end))
        .await
        .unwrap();
    assert_eq!(client.protocol_version(), "2025-11-25");
    let err = tokio::time::timeout(WITHIN, client.list_tools(None))
        .await
        .expect("a closed connection ends the request, not its timeout")
        .unwrap_err();
    let said = err.to_string();
    assert!(said.contains("closed"), "{said}");
    script.await.unwrap();
}

#[tokio::test]
async fn two_clients_on_one_server_each_hear_only_their_own() {
    let server = server();
    let (a, tap_a) = memory::connect_with(Client::builder().era(EraChoice::Legacy), server.clone())
        .await
        .unwrap();
    let (b, tap_b) = memory::connect_with(Client::builder().era(EraChoice::Modern), server)
        .await
        .unwrap();
    let (ra, rb) = tokio::join!(
        a.call_tool("echo", json!({"text": "for a"})),
        b.call_tool("echo", json!({"text": "for b"})),
    );
    assert_eq!(ra.unwrap().content[0].as_text(), Some("for a"));
    assert_eq!(rb.unwrap().content[0].as_text(), Some("for b"));
    let heard = |tap: &memory::Tap| {
        tap.from(Side::Server)
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(heard(&tap_a).contains("for a") && !heard(&tap_a).contains("for b"));
    assert!(heard(&tap_b).contains("for b") && !heard(&tap_b).contains("for a"));
}

#[tokio::test]
async fn the_ends_report_a_gone_peer_and_the_tap_keeps_a_bounded_record() {
    let (a, b) = Connection::memory();
    drop(b);
    assert!(matches!(
        a.send(b"{}".to_vec()).await,
        Err(MemoryError::Closed)
    ));

    let (a, mut b, tap) = Connection::tapped();
    let n = memory::TAP_LIMIT + 10;
    let reader = tokio::spawn(async move {
        let mut got = 0;
        while b.recv().await.is_some() {
            got += 1;
        }
        got
    });
    for i in 0..n {
        a.send(format!(r#"{{"n":{i}}}"#).into_bytes())
            .await
            .unwrap();
    }
    drop(a);
    assert_eq!(reader.await.unwrap(), n, "every message was passed on");
    assert_eq!(tap.messages().len(), memory::TAP_LIMIT);
    assert_eq!(tap.dropped(), 10);
    assert_eq!(tap.messages()[0].json()["n"], 10, "the oldest were dropped");
    tap.clear();
    assert!(tap.messages().is_empty());
}
