//! Readable output: aligned tables, wrapped text, binary content summarised.

use base64::Engine as _;
use duomcp::schema::{ContentBlock, ResourceContents};

/// The width to wrap to: `$COLUMNS`, else 100.
pub(crate) fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w: &usize| *w >= 40)
        .unwrap_or(100)
}

/// Wraps `text` at word boundaries to `width` columns (whitespace collapsed within lines;
/// blank lines kept).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(10);
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            let needed = if line.is_empty() {
                word.chars().count()
            } else {
                line.chars().count() + 1 + word.chars().count()
            };
            if needed > width && !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// Middle columns longer than this are cut (with `…`), so the last one keeps some room.
const MIDDLE_MAX: usize = 32;

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// An aligned table; middle columns are cut to a sane width, the last column is wrapped to the
/// terminal width.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = headers.len();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    if i > 0 && i + 1 < columns {
                        cut(c, MIDDLE_MAX)
                    } else {
                        c.clone()
                    }
                })
                .collect()
        })
        .collect();
    let rows = &rows[..];
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns.saturating_sub(1)) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let lead: usize = widths
        .iter()
        .take(columns.saturating_sub(1))
        .map(|w| w + 2)
        .sum();
    let last_width = width().saturating_sub(lead).max(20);
    let mut out = String::new();
    let mut push_row = |cells: &[String]| {
        let last = cells.get(columns - 1).map(String::as_str).unwrap_or("");
        for (n, piece) in wrap(last, last_width).into_iter().enumerate() {
            let mut line = String::new();
            for (i, w) in widths.iter().enumerate().take(columns - 1) {
                let cell = if n == 0 {
                    cells.get(i).map(String::as_str).unwrap_or("")
                } else {
                    ""
                };
                line.push_str(cell);
                line.push_str(&" ".repeat(w - cell.chars().count() + 2));
            }
            line.push_str(&piece);
            out.push_str(line.trim_end());
            out.push('\n');
        }
    };
    push_row(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for row in rows {
        push_row(row);
    }
    out
}

/// The size in bytes of base64 `data` (decoded), or of the text itself if it is not base64.
pub(crate) fn decoded_len(data: &str) -> usize {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map(|b| b.len())
        .unwrap_or(data.len())
}

/// One content block as readable text.
pub(crate) fn content(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image {}, {} bytes]", i.mime_type, decoded_len(&i.data))
        }
        ContentBlock::Audio(a) => {
            format!("[audio {}, {} bytes]", a.mime_type, decoded_len(&a.data))
        }
        ContentBlock::ResourceLink(l) => match &l.mime_type {
            Some(mime) => format!("[resource link {} ({}, {mime})]", l.uri, l.name),
            None => format!("[resource link {} ({})]", l.uri, l.name),
        },
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::Text(t) => format!("[resource {}]\n{}", t.uri, t.text),
            blob @ ResourceContents::Blob(b) => {
                resource_contents(blob).replace("[blob", &format!("[resource {}:", b.uri))
            }
        },
    }
}

/// Resource contents as readable text: text as is, blobs summarised.
pub(crate) fn resource_contents(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::Text(t) => t.text.clone(),
        ResourceContents::Blob(b) => format!(
            "[blob {}, {} bytes]",
            b.mime_type.as_deref().unwrap_or("application/octet-stream"),
            decoded_len(&b.blob)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_words() {
        assert_eq!(wrap("aaa bbb ccc", 7), ["aaa bbb", "ccc"]);
        assert_eq!(wrap("one\n\ntwo", 20), ["one", "", "two"]);
        assert_eq!(wrap("", 20), [""]);
    }

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["NAME", "DESCRIPTION"],
            &[
                vec!["a".into(), "first".into()],
                vec!["longer".into(), "second".into()],
            ],
        );
        assert_eq!(t, "NAME    DESCRIPTION\na       first\nlonger  second\n");
    }

    #[test]
    fn middle_columns_are_cut() {
        let long = "x".repeat(40);
        let t = table(&["A", "B", "C"], &[vec!["a".into(), long, "c".into()]]);
        assert!(
            t.lines()
                .nth(1)
                .unwrap()
                .contains(&format!("{}…  c", "x".repeat(31))),
            "{t}"
        );
    }

    #[test]
    fn binary_content_is_summarised() {
        let png = ContentBlock::image("iVBORw0KGgo=", "image/png");
        assert_eq!(content(&png), "[image image/png, 8 bytes]");
        let blob = ResourceContents::blob("x://b", "AAEC");
        assert_eq!(
            resource_contents(&blob),
            "[blob application/octet-stream, 3 bytes]"
        );
    }
}
