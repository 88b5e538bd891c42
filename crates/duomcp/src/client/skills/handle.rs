//! What a [`SkillHandle`] does: resolve paths to the skill's URIs, read files and check each
//! against the held entry (size, digest, `SKILL.md` frontmatter), list directories.

use super::{
    DirectoryListing, Integrity, SkillEntry, SkillError, SkillFile, SkillHandle, SkillResource,
    SkillResources, MAX_TOTAL_BYTES, READ, SKILL_MD,
};
use crate::client::cache::{Cache, Invalidate};
use crate::client::{decode, RequestOptions, MAX_PAGES};
use crate::util::lock;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use duomcp_schema::{ReadResourceResult, ResourceContents};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// RFC 3986 unreserved characters stay; everything else is percent-encoded (as the duomcp
/// server builds skill URIs).
fn encode_segment(seg: &str) -> String {
    let mut out = String::with_capacity(seg.len());
    for b in seg.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Equal as JSON values, numbers by value (`1` and `1.0` are the same number).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The first field that differs between the listed and the served frontmatter.
pub(super) fn frontmatter_difference(
    listed: &Map<String, Value>,
    served: &Map<String, Value>,
) -> Option<(String, Option<Value>, Option<Value>)> {
    let keys: BTreeSet<&String> = listed.keys().chain(served.keys()).collect();
    keys.into_iter().find_map(|k| {
        let (l, s) = (listed.get(k), served.get(k));
        let equal = match (l, s) {
            (Some(l), Some(s)) => same(l, s),
            _ => false,
        };
        (!equal).then(|| (k.clone(), l.cloned(), s.cloned()))
    })
}

impl SkillHandle {
    /// The held entry: what the skill was loaded from, and what every read is checked against.
    ///
    /// ```no_run
    /// # fn run(skill: duomcp::client::skills::SkillHandle) {
    /// println!("{}: {}", skill.entry().uri, skill.entry().description().unwrap_or_default());
    /// # }
    /// ```
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The skill's root directory URI (`skill://release-notes`).
    ///
    /// ```no_run
    /// # fn run(skill: duomcp::client::skills::SkillHandle) {
    /// assert!(skill.entry().uri.starts_with(skill.root_uri()));
    /// # }
    /// ```
    pub fn root_uri(&self) -> &str {
        &self.root
    }

    /// Whether the skill is dynamic (no digests: its content cannot be verified).
    ///
    /// ```no_run
    /// # fn run(skill: duomcp::client::skills::SkillHandle) {
    /// if skill.is_dynamic() {
    ///     eprintln!("{} cannot be verified", skill.entry().uri);
    /// }
    /// # }
    /// ```
    pub fn is_dynamic(&self) -> bool {
        self.entry.resources == SkillResources::Dynamic
    }

    /// The URIs of the files read (and verified) so far.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// assert!(skill.fetched().is_empty());
    /// skill.skill_md().await?;
    /// assert_eq!(skill.fetched(), [skill.entry().uri.clone()]);
    /// # Ok(()) }
    /// ```
    pub fn fetched(&self) -> Vec<String> {
        let mut uris: Vec<String> = lock(&self.read).files.keys().cloned().collect();
        uris.sort();
        uris
    }

    /// Reads the skill's `SKILL.md` (once; later calls return the kept copy) and checks its
    /// size and digest, then parses its frontmatter and compares it field by field with the
    /// entry's. Content that fails is refused.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// let md = skill.skill_md().await?;
    /// println!("{}", md.text().unwrap_or_default());
    /// # Ok(()) }
    /// ```
    pub async fn skill_md(&self) -> Result<SkillFile, SkillError> {
        let uri = self.entry.uri.clone();
        self.read_uri(&uri).await
    }

    /// The URI a path names: a full URI as is; a path relative to the skill's root
    /// (`templates/entry.md`, `./a.md`) resolved against it.
    ///
    /// ```no_run
    /// # fn run(skill: duomcp::client::skills::SkillHandle) {
    /// assert_eq!(skill.resolve("templates/entry.md"), format!("{}/templates/entry.md", skill.root_uri()));
    /// # }
    /// ```
    pub fn resolve(&self, path: &str) -> String {
        if path.contains("://") {
            return path.to_owned();
        }
        let mut segs: Vec<&str> = Vec::new();
        for seg in path.split('/') {
            match seg {
                "" | "." => {}
                // Above the root: kept, so the URI names no file of the skill.
                ".." if segs.is_empty() || segs.last() == Some(&"..") => segs.push(".."),
                ".." => {
                    segs.pop();
                }
                s => segs.push(s),
            }
        }
        let raw = format!("{}/{}", self.root, segs.join("/"));
        if self.listed(&raw).is_some() || self.is_dynamic() {
            return raw;
        }
        let encoded: Vec<String> = segs.iter().map(|s| encode_segment(s)).collect();
        format!("{}/{}", self.root, encoded.join("/"))
    }

    fn listed(&self, uri: &str) -> Option<&SkillResource> {
        self.entry.files()?.iter().find(|f| f.uri == uri)
    }

    /// Reads a file of the skill: a path relative to its root (`references/sections.md`) or a
    /// full URI. Only files the held entry lists are read (a dynamic skill: files under its
    /// root); each is checked against the entry, and `SKILL.md` also by its frontmatter.
    /// Verified files are kept: a second read sends nothing.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// let sections = skill.read("references/sections.md").await?;
    /// assert!(skill.read("../other-skill/SKILL.md").await.is_err());
    /// # let _ = sections; Ok(()) }
    /// ```
    pub async fn read(&self, path: &str) -> Result<SkillFile, SkillError> {
        let uri = self.resolve(path);
        self.read_uri(&uri).await
    }

    async fn read_uri(&self, uri: &str) -> Result<SkillFile, SkillError> {
        if let Some(f) = lock(&self.read).files.get(uri) {
            return Ok(f.clone());
        }
        let listed = self.listed(uri).cloned();
        let under_root = uri
            .strip_prefix(&*self.root)
            .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1);
        if listed.is_none() && !(self.is_dynamic() && under_root) {
            return Err(SkillError::Unlisted {
                skill: self.entry.uri.clone(),
                uri: uri.to_owned(),
            });
        }
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        let inner = &self.client.inner;
        let mut attempts = 0;
        let file = loop {
            attempts += 1;
            // A copy in the client's cache (per `ttlMs`) may predate the held entry: when it
            // fails, it is dropped and the file fetched once more.
            let cached = inner.cache.get(&Cache::key(READ, &params)).is_some();
            let value = inner
                .call(READ, params.clone(), &RequestOptions::default())
                .await?;
            let result: ReadResourceResult = decode(READ, value)?;
            match self.check(uri, listed.as_ref(), result) {
                Ok(file) => break file,
                Err(e) => {
                    inner.cache.invalidate(Invalidate::Read(uri.to_owned()));
                    if !(cached && attempts == 1) {
                        return Err(e);
                    }
                }
            }
        };
        let mut reads = lock(&self.read);
        reads.files.insert(uri.to_owned(), file.clone());
        Ok(file)
    }

    /// Checks what `resources/read` returned for `uri` against the held entry.
    fn check(
        &self,
        uri: &str,
        listed: Option<&SkillResource>,
        result: ReadResourceResult,
    ) -> Result<SkillFile, SkillError> {
        let bad = |reason: String| SkillError::BadContent {
            uri: uri.to_owned(),
            reason,
        };
        let contents = result
            .contents
            .into_iter()
            .find(|c| c.uri() == uri)
            .ok_or_else(|| bad("the server returned no contents for this URI".into()))?;
        let (bytes, mime_type): (Vec<u8>, Option<String>) = match contents {
            ResourceContents::Text(t) => (t.text.into_bytes(), t.mime_type),
            ResourceContents::Blob(b) => (
                STANDARD
                    .decode(b.blob.as_bytes())
                    .map_err(|e| bad(format!("the blob is not valid base64: {e}")))?,
                b.mime_type,
            ),
        };
        let served = bytes.len() as u64;
        let integrity = match listed {
            Some(l) => {
                if served != l.size {
                    return Err(SkillError::SizeMismatch {
                        uri: uri.to_owned(),
                        listed: l.size,
                        served,
                    });
                }
                let digest = crate::common::skills::digest_of(&bytes);
                if digest != l.digest {
                    return Err(SkillError::DigestMismatch {
                        uri: uri.to_owned(),
                        listed: l.digest.clone(),
                        served: digest,
                    });
                }
                Integrity::Verified
            }
            None => {
                let mut reads = lock(&self.read);
                let total = reads.retrieved.saturating_add(served);
                if total > MAX_TOTAL_BYTES {
                    return Err(SkillError::TooLarge {
                        uri: self.entry.uri.clone(),
                        reason: format!(
                            "the dynamic skill served {total} bytes; at most {MAX_TOTAL_BYTES} (16 MiB) are read"
                        ),
                    });
                }
                reads.retrieved = total;
                Integrity::Unverifiable
            }
        };
        if uri == self.entry.uri {
            let text =
                std::str::from_utf8(&bytes).map_err(|_| bad(format!("{SKILL_MD} is not UTF-8")))?;
            let served_fm =
                crate::common::frontmatter::parse(text).map_err(|e| bad(e.to_string()))?;
            if let Some((field, listed, served)) =
                frontmatter_difference(&self.entry.frontmatter, &served_fm)
            {
                return Err(SkillError::FrontmatterMismatch {
                    uri: uri.to_owned(),
                    field,
                    listed,
                    served,
                });
            }
        }
        Ok(SkillFile {
            uri: uri.to_owned(),
            mime_type,
            bytes: Arc::from(bytes.into_boxed_slice()),
            integrity,
        })
    }

    /// The direct children of a directory of the skill (`""` for its root, `templates`…) as the
    /// server sees them now (`resources/directory/read`, every page), split into those the held
    /// entry lists and those it does not (files added since the entry was taken: they cannot be
    /// read under this entry). For a dynamic skill every child counts as listed.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// let dir = skill.read_directory("templates").await?;
    /// for child in &dir.listed {
    ///     println!("{}", child.uri);
    /// }
    /// if !dir.unlisted.is_empty() {
    ///     eprintln!("the skill changed; refresh it with skills/get");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read_directory(&self, path: &str) -> Result<DirectoryListing, SkillError> {
        let path = path.trim_matches('/');
        let uri = if path.is_empty() {
            self.root.to_string()
        } else {
            self.resolve(path)
        };
        let mut children = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self.client.read_directory(&uri, cursor).await?;
            children.extend(page.resources);
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => break,
            }
        }
        let (listed, unlisted) = match self.entry.files() {
            None => (children, Vec::new()),
            Some(files) => children.into_iter().partition(|child| {
                let dir_prefix = format!("{}/", child.uri);
                files
                    .iter()
                    .any(|f| f.uri == child.uri || f.uri.starts_with(&dir_prefix))
            }),
        };
        Ok(DirectoryListing { listed, unlisted })
    }
}
