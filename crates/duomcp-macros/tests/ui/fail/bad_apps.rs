//! MCP Apps keys: `ui` names a `ui://` view, `visibility` lists "model" and/or "app".

#[duomcp::tool(ui = "https://example.com/view.html", visibility = ["app", "robot"])]
async fn show() -> String {
    String::new()
}

fn main() {}
