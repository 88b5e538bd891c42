//! A view directory made into one HTML document: `index.html` with the local scripts,
//! stylesheets and images it references inlined, so the host (which renders the HTML in a
//! sandbox with no way to fetch `ui://` files) gets everything in one `resources/read`.
//!
//! Hand-written rather than an HTML parser dependency: it only needs three tag kinds
//! (`<script src>`, `<link rel="stylesheet" href>`, `<img src>`) and leaves every other byte
//! of the document as it is.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use std::path::{Component, Path, PathBuf};

/// The largest view a directory may produce (16 MiB): hosts hold it in memory, and so do we.
pub const MAX_VIEW_BYTES: u64 = 16 * 1024 * 1024;

/// Why a view could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A file could not be read.
    #[error("cannot read view file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A reference leaves the view's directory (`..`, an absolute path).
    #[error("view reference {0:?} leaves the view's directory")]
    Escapes(String),
    /// The view (with what it inlines) is larger than [`MAX_VIEW_BYTES`].
    #[error("view is larger than {MAX_VIEW_BYTES} bytes")]
    TooLarge,
    /// A script or stylesheet is not UTF-8.
    #[error("view file {0} is not UTF-8 text")]
    NotText(PathBuf),
}

/// Reads `path` (at most [`MAX_VIEW_BYTES`]).
pub(crate) async fn read_bounded(path: &Path) -> Result<Vec<u8>, ViewError> {
    let io = |source| ViewError::Io {
        path: path.to_owned(),
        source,
    };
    let len = tokio::fs::metadata(path).await.map_err(io)?.len();
    if len > MAX_VIEW_BYTES {
        return Err(ViewError::TooLarge);
    }
    tokio::fs::read(path).await.map_err(io)
}

async fn read_text(path: &Path) -> Result<String, ViewError> {
    String::from_utf8(read_bounded(path).await?).map_err(|_| ViewError::NotText(path.to_owned()))
}

/// `index.html` of `dir` with its local references inlined.
pub(crate) async fn inline_dir(dir: &Path) -> Result<String, ViewError> {
    let html = read_text(&dir.join("index.html")).await?;
    inline(&html, dir).await
}

/// A tag found in the document: its byte range, kind and attributes.
struct Tag {
    start: usize,
    end: usize,
    kind: TagKind,
    attrs: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq)]
enum TagKind {
    Script,
    Link,
    Img,
}

impl Tag {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The attributes but `skip`, written back (`name="value"`).
    fn attrs_without(&self, skip: &str) -> String {
        let mut out = String::new();
        for (k, v) in self.attrs.iter().filter(|(k, _)| k != skip) {
            out.push(' ');
            out.push_str(k);
            if !v.is_empty() {
                out.push_str("=\"");
                out.push_str(&v.replace('"', "&quot;"));
                out.push('"');
            }
        }
        out
    }
}

/// Inlines the local references of `html`, resolved against `dir`.
pub(crate) async fn inline(html: &str, dir: &Path) -> Result<String, ViewError> {
    let mut out = String::with_capacity(html.len());
    let mut pos = 0;
    while let Some(tag) = next_tag(html, pos) {
        out.push_str(&html[pos..tag.start]);
        pos = tag.end;
        let local = |attr: &str| tag.attr(attr).filter(|v| is_local(v)).map(str::to_owned);
        match tag.kind {
            TagKind::Script => {
                if let Some(src) = local("src") {
                    let code = read_text(&resolve(dir, &src)?).await?;
                    // Drop the (empty) body and the closing tag of the original element.
                    pos = close_of(html, pos, "</script").unwrap_or(pos);
                    out.push_str(&format!(
                        "<script{}>{}</script>",
                        tag.attrs_without("src"),
                        escape_close(&code, "</script")
                    ));
                } else {
                    // An inline script: copy it up to and with its closing tag untouched.
                    let end = close_of(html, pos, "</script").unwrap_or(html.len());
                    out.push_str(&html[tag.start..end]);
                    pos = end;
                }
            }
            TagKind::Link => {
                let stylesheet = tag
                    .attr("rel")
                    .is_some_and(|r| r.eq_ignore_ascii_case("stylesheet"));
                match local("href") {
                    Some(href) if stylesheet => {
                        let css = read_text(&resolve(dir, &href)?).await?;
                        out.push_str(&format!("<style>{}</style>", escape_close(&css, "</style")));
                    }
                    _ => out.push_str(&html[tag.start..tag.end]),
                }
            }
            TagKind::Img => match local("src") {
                Some(src) => {
                    let path = resolve(dir, &src)?;
                    let bytes = read_bounded(&path).await?;
                    let data = format!(
                        "data:{};base64,{}",
                        image_type(&src),
                        STANDARD.encode(bytes)
                    );
                    let attrs = tag.attrs_without("src");
                    out.push_str(&format!("<img src=\"{data}\"{attrs}>"));
                }
                None => out.push_str(&html[tag.start..tag.end]),
            },
        }
        if out.len() as u64 > MAX_VIEW_BYTES {
            return Err(ViewError::TooLarge);
        }
    }
    out.push_str(&html[pos..]);
    if out.len() as u64 > MAX_VIEW_BYTES {
        return Err(ViewError::TooLarge);
    }
    Ok(out)
}

/// `</script` inside inlined code would end the element early; `<\/script` means the same
/// in JavaScript strings, regular expressions and comments (and `\/` is `/` in CSS).
fn escape_close(code: &str, close: &str) -> String {
    let lower = code.to_ascii_lowercase();
    let mut out = String::with_capacity(code.len());
    let mut last = 0;
    for (i, _) in lower.match_indices(close) {
        out.push_str(&code[last..i]);
        out.push_str("<\\/");
        last = i + 2;
    }
    out.push_str(&code[last..]);
    out
}

/// The byte after `close…>` at or after `from` (`close` lowercase ASCII, matched
/// case-insensitively, without copying the document).
fn close_of(html: &str, from: usize, close: &str) -> Option<usize> {
    let at = find_ci(html, from, close)?;
    let gt = html.get(at..)?.find('>')?;
    Some(at + gt + 1)
}

/// Where `needle` (lowercase ASCII, starting with `<`) first occurs at or after `from`,
/// ignoring ASCII case.
fn find_ci(html: &str, mut from: usize, needle: &str) -> Option<usize> {
    let (bytes, n) = (html.as_bytes(), needle.as_bytes());
    while let Some(off) = html.get(from..)?.find('<') {
        let at = from + off;
        if bytes
            .get(at..at + n.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(n))
        {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// A relative URL naming a file: no scheme, no leading `/`, no query or fragment.
fn is_local(v: &str) -> bool {
    !v.is_empty()
        && !v.starts_with('/')
        && !v.starts_with('#')
        && !v.contains(':')
        && !v.contains('?')
}

/// `rel` under `dir`, refused when it climbs out.
fn resolve(dir: &Path, rel: &str) -> Result<PathBuf, ViewError> {
    let rel = rel.strip_prefix("./").unwrap_or(rel);
    let path = Path::new(rel);
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(ViewError::Escapes(rel.to_owned()));
    }
    Ok(dir.join(path))
}

fn image_type(name: &str) -> &'static str {
    let ext = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

/// The next `<script`, `<link` or `<img` start tag at or after `from`, with HTML comments
/// skipped.
fn next_tag(html: &str, mut from: usize) -> Option<Tag> {
    let bytes = html.as_bytes();
    while let Some(off) = html.get(from..)?.find('<') {
        let start = from + off;
        let rest = &html[start..];
        if rest.starts_with("<!--") {
            from = start + rest.find("-->").map_or(rest.len(), |e| e + 3);
            continue;
        }
        let kind = [
            ("<script", TagKind::Script),
            ("<link", TagKind::Link),
            ("<img", TagKind::Img),
        ]
        .into_iter()
        .find(|(p, _)| {
            rest.as_bytes()
                .get(..p.len())
                .is_some_and(|b| b.eq_ignore_ascii_case(p.as_bytes()))
                && bytes
                    .get(start + p.len())
                    .is_some_and(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
        });
        let Some((prefix, kind)) = kind else {
            from = start + 1;
            continue;
        };
        let (attrs, end) = parse_attrs(html, start + prefix.len())?;
        return Some(Tag {
            start,
            end,
            kind,
            attrs,
        });
    }
    None
}

/// The attributes from `at` to the tag's `>`, and the byte after it.
fn parse_attrs(html: &str, mut at: usize) -> Option<(Vec<(String, String)>, usize)> {
    let b = html.as_bytes();
    let mut attrs = Vec::new();
    loop {
        while b
            .get(at)
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b'/')
        {
            at += 1;
        }
        match b.get(at)? {
            b'>' => return Some((attrs, at + 1)),
            _ => {
                let name_start = at;
                while b
                    .get(at)
                    .is_some_and(|c| !c.is_ascii_whitespace() && !matches!(c, b'=' | b'>' | b'/'))
                {
                    at += 1;
                }
                let name = html[name_start..at].to_ascii_lowercase();
                while b.get(at).is_some_and(u8::is_ascii_whitespace) {
                    at += 1;
                }
                let mut value = String::new();
                if b.get(at) == Some(&b'=') {
                    at += 1;
                    while b.get(at).is_some_and(u8::is_ascii_whitespace) {
                        at += 1;
                    }
                    match b.get(at)? {
                        q @ (b'"' | b'\'') => {
                            let close = html[at + 1..].find(*q as char)?;
                            value = html[at + 1..at + 1 + close].to_owned();
                            at += close + 2;
                        }
                        _ => {
                            let v_start = at;
                            while b
                                .get(at)
                                .is_some_and(|c| !c.is_ascii_whitespace() && *c != b'>')
                            {
                                at += 1;
                            }
                            value = html[v_start..at].to_owned();
                        }
                    }
                }
                if !name.is_empty() {
                    attrs.push((name, value));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &[u8])]) -> tempdir::Dir {
        let d = tempdir::Dir::new();
        for (name, body) in files {
            std::fs::write(d.path().join(name), body).unwrap();
        }
        d
    }

    /// A scratch directory removed on drop (no tempfile dependency for two tests).
    mod tempdir {
        use std::path::{Path, PathBuf};
        pub struct Dir(PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                let n = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                let p =
                    std::env::temp_dir().join(format!("duomcp-view-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub fn path(&self) -> &Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[tokio::test]
    async fn inlines_scripts_styles_and_images() {
        let d = dir_with(&[
            (
                "index.html",
                b"<!doctype html><html><head><link rel=\"stylesheet\" href=\"style.css\">\
                  <!-- <script src=\"commented.js\"></script> -->\
                  <script type=\"module\" src=\"./app.js\"></script></head>\
                  <body><img alt=\"logo\" src=\"logo.png\"><script>let a = 1;</script>\
                  <script src=\"https://cdn.example.com/x.js\"></script></body></html>",
            ),
            ("style.css", b"body { color: red }"),
            ("app.js", b"const s = \"</script>\"; console.log(s);"),
            ("logo.png", b"\x89PNG"),
        ]);
        let html = inline_dir(d.path()).await.unwrap();
        assert!(
            html.contains("<style>body { color: red }</style>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<script type=\"module\">const s = \"<\\/script>\"; console.log(s);</script>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<img src=\"data:image/png;base64,iVBORw==\" alt=\"logo\">"),
            "{html}"
        );
        assert!(html.contains("<script>let a = 1;</script>"), "{html}");
        assert!(
            html.contains("<!-- <script src=\"commented.js\"></script> -->"),
            "{html}"
        );
        assert!(
            html.contains("<script src=\"https://cdn.example.com/x.js\"></script>"),
            "{html}"
        );
        assert!(!html.contains("app.js"), "{html}");
    }

    #[tokio::test]
    async fn non_ascii_and_odd_markup_do_not_break_it() {
        let d = dir_with(&[]);
        for html in [
            "<scrip€",
            "<€",
            "<script src=\"x",
            "<img",
            "<SCRIPT>x</SCRIPT>",
            "é<link rel=icon href=a.png>",
        ] {
            let out = inline(html, d.path()).await.unwrap();
            assert_eq!(out, html);
        }
    }

    #[tokio::test]
    async fn refuses_escapes_and_missing_files() {
        let d = dir_with(&[("index.html", b"<script src=\"../secret.js\"></script>")]);
        assert!(matches!(
            inline_dir(d.path()).await,
            Err(ViewError::Escapes(_))
        ));
        let d = dir_with(&[("index.html", b"<script src=\"gone.js\"></script>")]);
        assert!(matches!(
            inline_dir(d.path()).await,
            Err(ViewError::Io { .. })
        ));
        let d = dir_with(&[
            ("index.html", b"<script src=\"bin.js\"></script>"),
            ("bin.js", b"\xff\xfe"),
        ]);
        assert!(matches!(
            inline_dir(d.path()).await,
            Err(ViewError::NotText(_))
        ));
    }
}
