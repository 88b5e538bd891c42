//! Transcript tests of MCP Apps (`io.modelcontextprotocol/ui`) in both revisions: the
//! capability negotiation, a tool's `_meta.ui` (`resourceUri`, `visibility`), and every field of
//! a view's `_meta.ui` (`csp.connectDomains`, `csp.resourceDomains`, `csp.frameDomains`,
//! `csp.baseUriDomains`, `permissions.camera|microphone|geolocation|clipboardWrite`, `domain`,
//! `prefersBorder`) on `resources/list` and `resources/read`. Every message is validated against
//! the core schema of its revision and its MCP Apps parts against the extension's published
//! schema (`duomcp_testkit::apps`, run by `support::Wire`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::schema::apps::UiVisibility;
use duomcp::schema::CallToolResult;
use duomcp::server::apps::View;
use duomcp::server::{Context, Server, ToolSpec};
use duomcp_testkit::text;
use serde_json::{json, Value};
use support::{modern, TempDir, Wire, LEGACY, MODERN};

const VIEW: &str = "ui://board/index.html";
const EXT: &str = "io.modelcontextprotocol/ui";
const MIME: &str = "text/html;profile=mcp-app";
const HTML: &str = "<!doctype html><html><body><p id=x>board</p></body></html>";

/// Shows the board; says everything in text for hosts without views.
#[duomcp::tool(ui = "ui://board/index.html", read_only)]
async fn show_board(ctx: Context) -> CallToolResult {
    if ctx.renders_views() {
        CallToolResult::text("board (in the view)")
    } else {
        CallToolResult::text("board as text")
    }
}

/// Refreshes the board: only the view calls it.
#[duomcp::tool(ui = "ui://board/index.html", visibility = ["app"])]
async fn refresh_board() -> &'static str {
    "refreshed"
}

/// Every field of a view's `_meta.ui`.
fn full_view() -> View {
    View::html(VIEW, HTML)
        .name("board")
        .title("Board")
        .connect_domains(["https://api.example.com", "wss://live.example.com"])
        .resource_domains(["https://cdn.example.com"])
        .frame_domains(["https://www.youtube.com"])
        .base_uri_domains(["https://base.example.com"])
        .camera()
        .microphone()
        .geolocation()
        .clipboard_write()
        .domain("board.example-usercontent.com")
        .prefers_border(false)
}

fn full_meta() -> Value {
    json!({
        "csp": {
            "connectDomains": ["https://api.example.com", "wss://live.example.com"],
            "resourceDomains": ["https://cdn.example.com"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://base.example.com"]
        },
        "permissions": {"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}},
        "domain": "board.example-usercontent.com",
        "prefersBorder": false
    })
}

fn server() -> Server {
    Server::builder()
        .name("apps-transcript")
        .view(full_view())
        .tool(show_board::spec(), show_board)
        .tool(refresh_board::spec(), refresh_board)
        .tool(ToolSpec::new("plain"), || async { "plain" })
        .build()
}

fn ui_caps() -> Value {
    json!({ "extensions": { EXT: { "mimeTypes": [MIME] } } })
}

fn names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {list}"))
}

/// What both eras must show once the client declared the extension.
fn assert_listing_with_views(list: &Value) {
    assert_eq!(names(list), ["plain", "refresh_board", "show_board"]);
    assert_eq!(
        tool(list, "show_board")["_meta"],
        json!({"ui": {"resourceUri": VIEW}, "ui/resourceUri": VIEW})
    );
    assert_eq!(
        tool(list, "refresh_board")["_meta"],
        json!({"ui": {"resourceUri": VIEW, "visibility": ["app"]}, "ui/resourceUri": VIEW})
    );
    assert!(tool(list, "plain").get("_meta").is_none());
}

fn assert_view_listed_and_read(resources: &Value, read: &Value) {
    let listed = &resources["resources"][0];
    assert_eq!(listed["uri"], VIEW);
    assert_eq!(listed["name"], "board");
    assert_eq!(listed["title"], "Board");
    assert_eq!(listed["mimeType"], MIME);
    assert_eq!(listed["_meta"]["ui"], full_meta());
    let contents = &read["contents"];
    assert_eq!(contents.as_array().unwrap().len(), 1);
    assert_eq!(
        contents[0],
        json!({"uri": VIEW, "mimeType": MIME, "text": HTML, "_meta": {"ui": full_meta()}})
    );
}

#[tokio::test]
async fn legacy_negotiation_listing_and_every_view_field() {
    // Without the extension: the server still declares it; the app-only tool is not listed;
    // the tool answers in text.
    let mut w = Wire::in_process(server(), LEGACY);
    let init = w.initialize(json!({})).await;
    assert_eq!(init["capabilities"]["extensions"][EXT], json!({}));
    assert!(init["capabilities"]["resources"].is_object());
    let list = w.ok("tools/list", json!({})).await;
    assert_eq!(names(&list), ["plain", "show_board"]);
    let r = w.ok("tools/call", json!({"name": "show_board"})).await;
    assert_eq!(text(&r), "board as text");

    // With it (declared at initialize): everything listed, the view's text.
    let mut w = Wire::in_process(server(), LEGACY);
    w.initialize(ui_caps()).await;
    let list = w.ok("tools/list", json!({})).await;
    assert_listing_with_views(&list);
    let r = w.ok("tools/call", json!({"name": "show_board"})).await;
    assert_eq!(text(&r), "board (in the view)");
    let r = w.ok("tools/call", json!({"name": "refresh_board"})).await;
    assert_eq!(text(&r), "refreshed");
    let resources = w.ok("resources/list", json!({})).await;
    let read = w.ok("resources/read", json!({"uri": VIEW})).await;
    assert_view_listed_and_read(&resources, &read);
}

#[tokio::test]
async fn modern_negotiation_per_request_and_every_view_field() {
    let mut w = Wire::in_process(server(), MODERN);
    let d = w.ok("server/discover", modern(json!({}), json!({}))).await;
    assert_eq!(d["capabilities"]["extensions"][EXT], json!({}));
    // Stateless: each request says what the client renders.
    let without = w.ok("tools/list", modern(json!({}), json!({}))).await;
    assert_eq!(names(&without), ["plain", "show_board"]);
    let with = w.ok("tools/list", modern(json!({}), ui_caps())).await;
    assert_listing_with_views(&with);
    let r = w
        .ok(
            "tools/call",
            modern(json!({"name": "show_board"}), json!({})),
        )
        .await;
    assert_eq!(text(&r), "board as text");
    let r = w
        .ok(
            "tools/call",
            modern(json!({"name": "show_board"}), ui_caps()),
        )
        .await;
    assert_eq!(text(&r), "board (in the view)");
    // A client declaring the extension with other MIME types does not render HTML views.
    let other = json!({ "extensions": { EXT: { "mimeTypes": ["text/uri-list"] } } });
    let r = w
        .ok("tools/call", modern(json!({"name": "show_board"}), other))
        .await;
    assert_eq!(text(&r), "board as text");
    let resources = w.ok("resources/list", modern(json!({}), ui_caps())).await;
    let read = w
        .ok("resources/read", modern(json!({"uri": VIEW}), ui_caps()))
        .await;
    assert_view_listed_and_read(&resources, &read);
    assert_eq!(read["resultType"], "complete");
}

#[tokio::test]
async fn views_from_a_file_and_a_directory_are_read_when_asked() {
    let dir = TempDir::new("apps-views");
    dir.write("single.html", "<p>one</p>");
    dir.write(
        "app/index.html",
        "<html><head><link rel=\"stylesheet\" href=\"s.css\"></head>\
         <body><script type=\"module\" src=\"js/app.js\"></script></body></html>",
    );
    dir.write("app/s.css", "p { color: blue }");
    dir.write("app/js/app.js", "document.body.append('hi');");
    dir.write("bad/index.html", "<script src=\"../single.html\"></script>");
    let root = std::path::PathBuf::from(dir.arg());
    let server = Server::builder()
        .view(View::file("ui://one/view.html", root.join("single.html")))
        .view(View::dir("ui://app/index.html", root.join("app")))
        .view(View::dir("ui://bad/index.html", root.join("bad")))
        .build();
    for revision in [LEGACY, MODERN] {
        let mut w = Wire::in_process(server.clone(), revision);
        let params = |uri: &str| {
            let p = json!({ "uri": uri });
            if revision == MODERN {
                modern(p, json!({}))
            } else {
                p
            }
        };
        if revision == LEGACY {
            w.initialize(json!({})).await;
        }
        let one = w.ok("resources/read", params("ui://one/view.html")).await;
        assert_eq!(one["contents"][0]["text"], "<p>one</p>");
        assert_eq!(one["contents"][0]["mimeType"], MIME);
        assert!(
            one["contents"][0].get("_meta").is_none(),
            "no _meta.ui when none is set"
        );
        let app = w.ok("resources/read", params("ui://app/index.html")).await;
        assert_eq!(
            app["contents"][0]["text"],
            "<html><head><style>p { color: blue }</style></head>\
             <body><script type=\"module\">document.body.append('hi');</script></body></html>"
        );
        let bad = w.err("resources/read", params("ui://bad/index.html")).await;
        assert!(
            bad["message"]
                .as_str()
                .unwrap()
                .contains("leaves the view's directory"),
            "{bad}"
        );
    }
    // Files are read at every read: an edit shows without a restart.
    dir.write("single.html", "<p>two</p>");
    let mut w = Wire::in_process(server, MODERN);
    let one = w
        .ok(
            "resources/read",
            modern(json!({"uri": "ui://one/view.html"}), json!({})),
        )
        .await;
    assert_eq!(one["contents"][0]["text"], "<p>two</p>");
}

#[tokio::test]
async fn a_server_without_views_does_not_declare_the_extension() {
    let plain = Server::builder()
        .tool(ToolSpec::new("plain"), || async { "plain" })
        .build();
    let mut w = Wire::in_process(plain, LEGACY);
    let init = w.initialize(ui_caps()).await;
    assert!(init["capabilities"].get("extensions").is_none(), "{init}");
    // A view added at run time declares it, and says the resource list changed.
    let server = Server::builder().build();
    server.add_view(View::html("ui://late/v.html", "<p>late</p>"));
    server.add_tool(
        ToolSpec::new("late")
            .ui("ui://late/v.html")
            .visibility([UiVisibility::Model]),
        || async { "late" },
    );
    let mut w = Wire::in_process(server, MODERN);
    let d = w.ok("server/discover", modern(json!({}), json!({}))).await;
    assert_eq!(d["capabilities"]["extensions"][EXT], json!({}));
    let list = w.ok("tools/list", modern(json!({}), json!({}))).await;
    assert_eq!(
        tool(&list, "late")["_meta"]["ui"],
        json!({"resourceUri": "ui://late/v.html", "visibility": ["model"]})
    );
}
