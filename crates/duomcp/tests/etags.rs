//! ETags on cacheable 2026-07-28 answers over Streamable HTTP (experimental): the server tags
//! the JSON answer of `tools/list`, `resources/read`, … with a strong `ETag` over its result and
//! answers a matching `If-None-Match` with `304` and no body; the client sends the tag it kept
//! and answers a `304` from the kept result. Real sockets on both sides; a middleware in front
//! of the server records what crossed.

#![cfg(all(feature = "http-server", feature = "http-client"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use duomcp::client::{Client, EraChoice};
use duomcp::schema::Resource;
use duomcp::server::Server;
use duomcp::transport::http::StreamableHttp;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// What one POST carried and got: its `Mcp-Method`, its `If-None-Match`, the status, the
/// `ETag`.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    if_none_match: Option<String>,
    status: u16,
    etag: Option<String>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

fn server() -> Server {
    Server::builder()
        .name("etags")
        .tool("hello", || async { "hi" })
        .resource(Resource::new("memo://a", "a"), || async {
            "the memo".to_owned()
        })
        .build()
}

fn header(req: &Request, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

/// Serves `server` on loopback behind the recorder; the endpoint's URL.
async fn serve(server: Server, log: Log) -> String {
    let app = StreamableHttp::new(server)
        .router()
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            let log = log.clone();
            async move {
                let method = header(&req, "mcp-method").unwrap_or_default();
                let if_none_match = header(&req, "if-none-match");
                let res: Response = next.run(req).await;
                log.lock().unwrap().push(Seen {
                    method,
                    if_none_match,
                    status: res.status().as_u16(),
                    etag: res
                        .headers()
                        .get("etag")
                        .map(|v| v.to_str().unwrap().to_owned()),
                });
                res
            }
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    url
}

/// A raw POST of a 2026-07-28 request: status, `ETag`, body.
async fn post(
    url: &str,
    id: u64,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> (u16, Option<String>, String) {
    let uri: http::Uri = url.parse().unwrap();
    let addr = uri.authority().unwrap().as_str().to_owned();
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let mut req = http::Request::post(uri.path())
        .header("host", &addr)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str().or(params["uri"].as_str()) {
        req = req.header("mcp-name", name);
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let res = tx
        .send_request(
            req.body(Full::new(bytes::Bytes::from(body.to_string())))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = res.status().as_u16();
    let etag = res
        .headers()
        .get("etag")
        .map(|v| v.to_str().unwrap().to_owned());
    let text =
        String::from_utf8(res.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    (status, etag, text)
}

#[tokio::test]
async fn the_server_tags_cacheable_results_and_answers_a_match_with_304() {
    let server = server();
    let url = serve(server.clone(), Log::default()).await;
    let (status, tag, body) = post(&url, 1, "tools/list", json!({}), &[]).await;
    assert_eq!(status, 200, "{body}");
    let tag = tag.expect("an ETag on tools/list");
    assert!(tag.starts_with('"') && tag.ends_with('"'), "{tag}");
    // Another id, the same result: the same tag (it covers the result, not the id).
    let (_, again, _) = post(&url, 2, "tools/list", json!({}), &[]).await;
    assert_eq!(again.as_deref(), Some(tag.as_str()));
    // A match, alone, in a list, weak, or `*`: 304, no body, the tag again.
    let weak = format!("W/{tag}");
    let list = format!("\"other\", {tag}");
    for inm in [tag.as_str(), list.as_str(), weak.as_str(), "*"] {
        let (status, t, body) =
            post(&url, 3, "tools/list", json!({}), &[("if-none-match", inm)]).await;
        assert_eq!((status, body.as_str()), (304, ""), "{inm}");
        assert_eq!(t.as_deref(), Some(tag.as_str()));
    }
    // No match: the whole answer.
    let (status, _, body) = post(
        &url,
        4,
        "tools/list",
        json!({}),
        &[("if-none-match", "\"stale\"")],
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains("hello"));
    // The list changes: a new tag, and the old one no longer matches.
    server.add_tool("added", || async { "new" });
    let (status, newer, body) =
        post(&url, 5, "tools/list", json!({}), &[("if-none-match", &tag)]).await;
    assert_eq!(status, 200);
    assert!(body.contains("added"));
    assert_ne!(newer.as_deref(), Some(tag.as_str()));
    // A read is tagged too; each URI its own.
    let (status, read_tag, body) =
        post(&url, 6, "resources/read", json!({ "uri": "memo://a" }), &[]).await;
    assert_eq!(status, 200, "{body}");
    let read_tag = read_tag.unwrap();
    let (status, _, _) = post(
        &url,
        7,
        "resources/read",
        json!({ "uri": "memo://a" }),
        &[("if-none-match", &read_tag)],
    )
    .await;
    assert_eq!(status, 304);
}

#[tokio::test]
async fn only_complete_results_of_cacheable_methods_are_tagged() {
    let url = serve(server(), Log::default()).await;
    // A call is not cacheable: no tag, and If-None-Match does not matter.
    let (status, tag, _) = post(
        &url,
        1,
        "tools/call",
        json!({ "name": "hello", "arguments": {} }),
        &[("if-none-match", "*")],
    )
    .await;
    assert_eq!((status, tag), (200, None));
    // An error is never tagged nor 304.
    let (status, tag, body) = post(
        &url,
        2,
        "resources/read",
        json!({ "uri": "memo://missing" }),
        &[("if-none-match", "*")],
    )
    .await;
    assert_ne!(status, 304, "{body}");
    assert_eq!(tag, None);
    assert!(body.contains("error"));
}

#[tokio::test]
async fn the_2025_11_25_revision_has_no_tags() {
    let log = Log::default();
    let url = serve(server(), log.clone()).await;
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .cache(false)
        .connect_http(&url)
        .await
        .unwrap();
    for _ in 0..2 {
        assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 1);
    }
    let seen = log.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|s| s.etag.is_none() && s.if_none_match.is_none()),
        "{seen:?}"
    );
}

#[tokio::test]
async fn the_client_revalidates_with_the_tag_and_answers_a_304_from_what_it_kept() {
    let log = Log::default();
    let server = server();
    let url = serve(server.clone(), log.clone()).await;
    // Its ttlMs cache off: every list goes to the server, revalidated.
    let client = Client::builder()
        .era(EraChoice::Modern)
        .cache(false)
        .connect_http(&url)
        .await
        .unwrap();
    let first = client.list_tools(None).await.unwrap().tools;
    let second = client.list_tools(None).await.unwrap().tools;
    assert_eq!(first.len(), 1);
    assert_eq!(
        serde_json::to_value(&first).unwrap(),
        serde_json::to_value(&second).unwrap()
    );
    let lists: Vec<Seen> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == "tools/list")
        .cloned()
        .collect();
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert_eq!(lists[0].if_none_match, None);
    assert_eq!(lists[0].status, 200);
    assert_eq!(lists[1].if_none_match, lists[0].etag, "{lists:?}");
    assert_eq!(lists[1].status, 304);
    // A change on the server: the tag no longer matches, the client gets the new list.
    server.add_tool("added", || async { "new" });
    let third = client.list_tools(None).await.unwrap().tools;
    assert_eq!(third.len(), 2);
    let last = log.lock().unwrap().last().cloned().unwrap();
    assert_eq!((last.method.as_str(), last.status), ("tools/list", 200));
    // A read, revalidated the same way, still reads.
    for _ in 0..2 {
        let read = client.read_resource("memo://a").await.unwrap();
        let text = serde_json::to_value(&read).unwrap();
        assert!(text.to_string().contains("the memo"), "{text}");
    }
    let reads: Vec<u16> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == "resources/read")
        .map(|s| s.status)
        .collect();
    assert_eq!(reads, [200, 304]);
}

#[tokio::test]
async fn two_clients_keep_their_own_tags() {
    let log = Log::default();
    let url = serve(server(), log.clone()).await;
    let connect = || {
        Client::builder()
            .era(EraChoice::Modern)
            .cache(false)
            .connect_http(&url)
    };
    let (a, b) = tokio::join!(connect(), connect());
    let (a, b) = (a.unwrap(), b.unwrap());
    a.list_tools(None).await.unwrap();
    a.list_tools(None).await.unwrap();
    // B has kept nothing: it asks without a tag, and is answered in full.
    log.lock().unwrap().clear();
    assert_eq!(b.list_tools(None).await.unwrap().tools.len(), 1);
    let seen = log.lock().unwrap().clone();
    let list = seen.iter().find(|s| s.method == "tools/list").unwrap();
    assert_eq!((list.if_none_match.as_deref(), list.status), (None, 200));
}

#[tokio::test]
async fn a_304_the_client_did_not_ask_for_is_an_error_not_a_hang() {
    // A hostile server: 304 to everything.
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(|| async {
            let mut res = Response::new(Body::empty());
            *res.status_mut() = http::StatusCode::NOT_MODIFIED;
            res
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    let connected = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        Client::builder().era(EraChoice::Modern).connect_http(&url),
    )
    .await
    .expect("no hang");
    assert!(connected.is_err());
}
