//! Tool results serialized already (`RawToolResult`): written into the server's answer as they
//! are, in both revisions, with the 2026-07-28 envelope added; parsed only where the server
//! must read them (an `outputSchema` to check). And `Client::request_raw`, the client's side:
//! a result as the server sent it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice, RequestOptions};
use duomcp::server::{HandlerError, RawToolResult, Server, ToolSpec};
use duomcp::transport::memory;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

fn raw(text: &str) -> Result<RawToolResult, HandlerError> {
    let json =
        RawValue::from_string(text.to_owned()).map_err(|e| HandlerError::msg(e.to_string()))?;
    RawToolResult::new(json).map_err(|e| HandlerError::msg(e.to_string()))
}

fn server() -> Server {
    let out = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] });
    Server::builder()
        .name("raw")
        .version("1")
        .tool("relay", || async {
            raw(r#"{"content":[{"type":"text","text":"as it came"}],"structuredContent":{"k":[1,2]}}"#)
        })
        .tool("failed", || async {
            raw(r#"{"content":[{"type":"text","text":"no"}],"isError":true}"#)
        })
        .tool(ToolSpec::new("checked").output_schema(out), || async {
            raw(r#"{"content":[],"structuredContent":{"n":"not a number"}}"#)
        })
        .build()
}

async fn connect(era: EraChoice) -> Client {
    let builder = Client::builder().name("test").era(era);
    let (client, _tap) = memory::connect_with(builder, server()).await.unwrap();
    client
}

fn call(name: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    params
}

#[tokio::test]
async fn a_raw_result_is_answered_as_it_is_in_both_revisions() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = connect(era).await;
        let text = client
            .request_raw("tools/call", call("relay"), RequestOptions::new())
            .await
            .unwrap();
        let v: Value = serde_json::from_str(text.get()).unwrap();
        assert_eq!(v["content"][0]["text"], "as it came", "{era:?}: {v}");
        assert_eq!(v["structuredContent"], json!({ "k": [1, 2] }), "{era:?}");
        if era == EraChoice::Modern {
            // The envelope of the revision, added as to any result.
            assert_eq!(v["resultType"], "complete", "{v}");
            assert_eq!(
                v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "raw",
                "{v}"
            );
        } else {
            assert!(v.get("resultType").is_none(), "{v}");
        }
        // The typed call reads the same answer.
        let typed = client.call_tool("relay", json!({})).await.unwrap();
        assert_eq!(typed.content[0].as_text(), Some("as it came"));
        let failed = client.call_tool("failed", json!({})).await.unwrap();
        assert_eq!(failed.is_error, Some(true), "{era:?}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_raw_result_is_checked_against_the_tools_output_schema() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = connect(era).await;
        let err = client.call_tool("checked", json!({})).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("structuredContent does not match outputSchema"),
            "{era:?}: {err}"
        );
        client.close().await.unwrap();
    }
}

#[test]
fn without_leaves_out_the_named_members_and_keeps_the_rest_as_written() {
    let text = r#"{"resultType":"complete","content":[{"type":"text","text":"a\"b"}],"_meta":{"x":1},"isError":false}"#;
    let json = RawValue::from_string(text.to_owned()).unwrap();
    let r = RawToolResult::without(json, &["resultType", "_meta", "ttlMs"]).unwrap();
    assert_eq!(
        r.get(),
        r#"{"content":[{"type":"text","text":"a\"b"}],"isError":false}"#
    );
    assert!(!r.is_error());
    // Nothing to leave out: the text is kept, not written again.
    let json = RawValue::from_string(r#"{ "content": [], "isError": true }"#.to_owned()).unwrap();
    let r = RawToolResult::without(json, &["_meta"]).unwrap();
    assert_eq!(r.get(), r#"{ "content": [], "isError": true }"#);
    assert!(r.is_error());
    // Not an object: refused.
    let json = RawValue::from_string("[1]".to_owned()).unwrap();
    assert!(RawToolResult::without(json, &[]).is_err());
}
