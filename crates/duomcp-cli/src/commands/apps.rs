//! MCP Apps in the CLI: the VIEW column of `duomcp tools`, and `duomcp read --output FILE`
//! (which saves a view's HTML and prints its `_meta.ui`).

use super::Failure;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use duomcp::client::apps;
use duomcp::schema::{ReadResourceResult, ResourceContents, Tool};
use std::path::Path;

/// `headers` and `rows` with a VIEW column when any tool links to a view or is only for
/// views: the view's URI, `(app only)` after it for tools the model must not see.
pub(crate) fn with_view_column(
    headers: &[&'static str],
    tools: &[Tool],
    mut rows: Vec<Vec<String>>,
) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let mut headers = headers.to_vec();
    let marks: Vec<String> = tools.iter().map(view_mark).collect();
    if marks.iter().any(|m| !m.is_empty()) {
        headers.push("VIEW");
        for (row, mark) in rows.iter_mut().zip(marks) {
            row.push(mark);
        }
    }
    (headers, rows)
}

fn view_mark(tool: &Tool) -> String {
    let view = apps::view_of(tool).unwrap_or_default();
    match (apps::model_visible(tool), view.is_empty()) {
        (true, _) => view,
        (false, true) => "(app only)".to_owned(),
        (false, false) => format!("{view} (app only)"),
    }
}

/// Saves the first contents of `result` to `path` (text as is, a blob decoded) and says what
/// was saved, with the contents' `_meta.ui` when it has one.
pub(crate) fn save(result: &ReadResourceResult, path: &Path) -> Result<(), Failure> {
    let contents = result
        .contents
        .first()
        .ok_or_else(|| Failure::new("the resource has no contents to save".to_owned()))?;
    let bytes = match contents {
        ResourceContents::Text(t) => t.text.clone().into_bytes(),
        ResourceContents::Blob(b) => STANDARD
            .decode(&b.blob)
            .map_err(|e| Failure::new(format!("the blob is not base64: {e}")))?,
    };
    std::fs::write(path, &bytes)
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?;
    println!(
        "saved {} ({} bytes, {}) to {}",
        contents.uri(),
        bytes.len(),
        contents.mime_type().unwrap_or("no MIME type"),
        path.display()
    );
    if let Some(ui) = duomcp::schema::apps::contents_ui(contents) {
        println!(
            "_meta.ui: {}",
            serde_json::to_string(&ui).unwrap_or_default()
        );
    }
    if result.contents.len() > 1 {
        println!(
            "({} more contents not saved; see --json)",
            result.contents.len() - 1
        );
    }
    Ok(())
}
