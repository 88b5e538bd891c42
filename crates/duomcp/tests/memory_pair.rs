//! The in-memory transport pair (`duomcp::transport::memory`): a client and a server in one
//! process, in both revisions, with server→client requests and shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice};
use duomcp::era::Era;
use duomcp::schema::{ElicitRequestFormParams, ElicitRequestedSchema, ElicitResult, StringSchema};
use duomcp::server::{Args, Context, HandlerError, Server};
use duomcp::transport::memory;
use serde_json::json;
use std::time::Duration;

fn server() -> Server {
    Server::builder()
        .tool("echo", |Args(v): Args<serde_json::Value>| async move {
            v["text"].as_str().unwrap_or_default().to_owned()
        })
        .tool("ask", |ctx: Context| async move {
            let form = ElicitRequestFormParams::new(
                "Your name?",
                ElicitRequestedSchema::default().with_property("name", StringSchema::new(), true),
            );
            let answer = ctx.elicit("name", form.into()).await?;
            let name = answer.content.as_ref().and_then(|c| c.get("name")).cloned();
            Ok::<_, HandlerError>(format!("hello {}", name.unwrap_or_default()))
        })
        .build()
}

#[tokio::test]
async fn both_revisions_are_served_over_the_pair() {
    for (choice, era) in [
        (EraChoice::Legacy, Era::Legacy),
        (EraChoice::Modern, Era::Modern),
    ] {
        let (transport, _serving) = memory::pair(server());
        let client = Client::builder()
            .era(choice)
            .connect_transport(transport)
            .await
            .unwrap();
        assert_eq!(client.era(), era);
        let r = client
            .call_tool("echo", json!({ "text": "over memory" }))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some("over memory"), "{era}");
        let tools = client.list_tools(None).await.unwrap();
        let mut names: Vec<_> = tools.tools.iter().map(|t| t.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["ask", "echo"]);
    }
}

#[tokio::test]
async fn a_server_to_client_request_crosses_the_pair_in_both_revisions() {
    for choice in [EraChoice::Legacy, EraChoice::Modern] {
        let (transport, _serving) = memory::pair(server());
        let client = Client::builder()
            .era(choice)
            .on_elicit(|_params| async {
                Ok(ElicitResult::accept(Some(
                    serde_json::from_value(json!({ "name": "Ada" })).unwrap(),
                )))
            })
            .connect_transport(transport)
            .await
            .unwrap();
        let r = client.call_tool("ask", json!({})).await.unwrap();
        assert_eq!(r.content[0].as_text(), Some(r#"hello "Ada""#), "{choice:?}");
    }
}

#[tokio::test]
async fn the_serving_task_ends_when_the_client_closes_or_the_server_stops() {
    let (transport, serving) = memory::pair(server());
    let client = Client::builder()
        .connect_transport(transport)
        .await
        .unwrap();
    client.close().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the server end saw the client go")
        .unwrap()
        .unwrap();

    let server = server();
    let (transport, serving) = memory::pair(server.clone());
    let _client = Client::builder()
        .connect_transport(transport)
        .await
        .unwrap();
    server.shutdown();
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the server end stopped on shutdown")
        .unwrap()
        .unwrap();
}

/// Each request's method and `target()`, as a layer saw them.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

/// A layer that records each request's method and `target()` (read when first asked).
#[derive(Clone)]
struct Targets<S> {
    inner: S,
    seen: Seen,
}

impl<S> duomcp::server::middleware::Service<duomcp::server::middleware::McpRequest> for Targets<S>
where
    S: duomcp::server::middleware::Service<duomcp::server::middleware::McpRequest>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: duomcp::server::middleware::McpRequest) -> Self::Future {
        // Asked twice: the second answer is the first one's, kept.
        let first = req.target().map(str::to_owned);
        assert_eq!(req.target().map(str::to_owned), first);
        self.seen
            .lock()
            .unwrap()
            .push((req.method().to_owned(), first));
        self.inner.call(req)
    }
}

#[tokio::test]
async fn a_layer_sees_the_target_of_each_request() {
    for choice in [EraChoice::Legacy, EraChoice::Modern] {
        let seen = Seen::default();
        let s = seen.clone();
        let server = Server::builder()
            .tool("echo", |Args(v): Args<serde_json::Value>| async move {
                v["text"].as_str().unwrap_or_default().to_owned()
            })
            .layer(duomcp::server::middleware::layer_fn(move |inner| Targets {
                inner,
                seen: s.clone(),
            }))
            .build();
        let (transport, _serving) = memory::pair(server);
        let client = Client::builder()
            .era(choice)
            .connect_transport(transport)
            .await
            .unwrap();
        client
            .call_tool("echo", json!({ "text": "t" }))
            .await
            .unwrap();
        client.list_tools(None).await.unwrap();
        let seen = seen.lock().unwrap().clone();
        assert!(
            seen.contains(&("tools/call".to_owned(), Some("echo".to_owned()))),
            "{choice:?}: {seen:?}"
        );
        assert!(
            seen.contains(&("tools/list".to_owned(), None)),
            "{choice:?}: {seen:?}"
        );
    }
}
