//! Readable output: tables fitted to the terminal (comfy-table), wrapped text (textwrap),
//! binary content summarised.

use base64::Engine as _;
use comfy_table::{presets, Cell, ColumnConstraint, ContentArrangement, Table, Width};
use duomcp::schema::{ContentBlock, ResourceContents};

/// The width to lay out to: the terminal's (stdout, else stderr), else `$COLUMNS`, else 100.
pub(crate) fn width() -> usize {
    let terminal = terminal_size::terminal_size_of(std::io::stdout())
        .or_else(|| terminal_size::terminal_size_of(std::io::stderr()))
        .map(|(terminal_size::Width(w), _)| usize::from(w));
    terminal
        .or_else(|| std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()))
        .filter(|w: &usize| *w >= 40)
        .unwrap_or(100)
}

/// Wraps `text` at word boundaries to `width` columns (blank lines kept).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let options =
        textwrap::Options::new(width.max(10)).word_splitter(textwrap::WordSplitter::NoHyphenation);
    let mut lines: Vec<String> = text
        .lines()
        .flat_map(|paragraph| {
            let wrapped = textwrap::wrap(paragraph.trim_end(), &options);
            if wrapped.is_empty() {
                vec![String::new()]
            } else {
                wrapped.into_iter().map(|l| l.into_owned()).collect()
            }
        })
        .collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// `text` from a server, safe to print on a terminal: control characters (CR, LF, ESC, NUL,
/// …) and bidirectional overrides and isolates are shown escaped (`\u{1b}`), so a name cannot
/// move the cursor, clear the screen, fake a line or reverse what follows it.
pub(crate) fn safe(text: &str) -> String {
    escape(text, false)
}

/// [`safe`], but keeping line feeds and tabs (for multi-line text such as a tool's result).
pub(crate) fn safe_text(text: &str) -> String {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> String {
    let bad = |c: char| {
        (c.is_control() && !(keep_lines && matches!(c, '\n' | '\t')))
            || duomcp_gateway::names::is_bidi_control(c)
    };
    if !text.chars().any(bad) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Middle columns are kept to this width at most, so the last one keeps some room.
const MIDDLE_MAX: u16 = 32;

/// An aligned table, without borders, fitted to [`width`]: columns are two spaces apart,
/// middle columns at most 32 wide, and the last column (the description) wraps.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    table_of_width(headers, rows, width())
}

fn table_of_width(headers: &[&str], rows: &[Vec<String>], width: usize) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX))
        .set_header(headers.iter().map(Cell::new));
    for row in rows {
        // The first column (a name) on one line; the others may keep their line feeds.
        table.add_row(
            row.iter()
                .enumerate()
                .map(|(i, cell)| Cell::new(if i == 0 { safe(cell) } else { safe_text(cell) })),
        );
    }
    let columns = headers.len();
    for (i, column) in table.column_iter_mut().enumerate() {
        // The NOTHING preset keeps one space of padding each side: two between columns.
        column.set_padding(if i == 0 { (0, 1) } else { (1, 1) });
        if i > 0 && i + 1 < columns {
            column.set_constraint(ColumnConstraint::UpperBoundary(Width::Fixed(
                MIDDLE_MAX + 2,
            )));
        }
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
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
        ContentBlock::Text(t) => safe_text(&t.text),
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
        ResourceContents::Text(t) => safe_text(&t.text),
        ResourceContents::Blob(b) => format!(
            "[blob {}, {} bytes]",
            b.mime_type.as_deref().unwrap_or("application/octet-stream"),
            decoded_len(&b.blob)
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn safe_escapes_controls_and_bidi() {
        assert_eq!(
            super::safe("a\r\nb\u{1b}[2J\0\u{202e}c"),
            "a\\u{d}\\u{a}b\\u{1b}[2J\\u{0}\\u{202e}c"
        );
        assert_eq!(
            super::safe_text("line\nnext\tx\u{7}"),
            "line\nnext\tx\\u{7}"
        );
        assert_eq!(super::safe("plain_name"), "plain_name");
    }

    use super::*;

    #[test]
    fn wraps_at_words() {
        assert_eq!(wrap("aaa bbb ccc", 7), ["aaa bbb", "ccc"]);
        assert_eq!(wrap("one\n\ntwo", 20), ["one", "", "two"]);
        assert_eq!(wrap("", 20), [""]);
    }

    #[test]
    fn tables_align_columns() {
        let t = table_of_width(
            &["NAME", "DESCRIPTION"],
            &[
                vec!["a".into(), "first".into()],
                vec!["longer".into(), "second".into()],
            ],
            100,
        );
        assert_eq!(t, "NAME    DESCRIPTION\na       first\nlonger  second\n");
    }

    #[test]
    fn tables_fit_the_width_by_wrapping_the_last_column() {
        let long = "word ".repeat(40);
        let t = table_of_width(
            &["NAME", "ARGS", "DESCRIPTION"],
            &[vec!["tool".into(), "a b?".into(), long.trim().into()]],
            60,
        );
        assert!(t.lines().count() > 3, "{t}");
        for line in t.lines() {
            assert!(line.chars().count() <= 60, "{} > 60: {t}", line.len());
        }
        let desc = t.lines().next().unwrap().find("DESCRIPTION").unwrap();
        let second = t.lines().nth(2).unwrap();
        assert_eq!(
            second.find("word"),
            Some(desc),
            "continuation lines stay in the column: {t}"
        );
    }

    #[test]
    fn middle_columns_are_bounded() {
        let long = "x".repeat(60);
        let t = table_of_width(&["A", "B", "C"], &[vec!["a".into(), long, "c".into()]], 120);
        let c = t.lines().next().unwrap().find('C').unwrap();
        assert!(c <= 1 + 2 + 34, "the middle column is at most 32 wide: {t}");
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
