//! Skills (extension `io.modelcontextprotocol/skills`, SEP-2640): folders of instructions with a
//! `SKILL.md`, served as `skill://` resources with `skills/list`, `skills/get` and
//! `resources/directory/read`.
//!
//! Skills come from a directory tree (every folder holding a `SKILL.md` is a skill; the folders
//! above it are its path) or from memory. Both are checked when added: the frontmatter must
//! parse and carry `name` (which must equal the folder name and follow the Agent Skills naming
//! rules) and `description`, and a skill may hold at most 512 files and 16 MiB. Entries carry
//! the frontmatter verbatim and the SHA-256 digest and size of every file, computed from the
//! bytes served.
//!
//! Directory skills are read from disk at each request, so an edited file is served (with its
//! new digest) without a restart; hidden files and symbolic links are not served.
//!
//! ```
//! use duomcp::server::skills::{Skill, SkillSet};
//! use duomcp::server::Server;
//!
//! let skill = Skill::new("acme/release-notes")
//!     .file("SKILL.md", "---\nname: release-notes\ndescription: Write release notes\n---\n# Steps\n")
//!     .file("templates/entry.md", "## {version}\n");
//! let skills = SkillSet::new().skill(skill).expect("a valid skill");
//! let server = Server::builder().skills(skills).build();
//! # let _ = server;
//! ```
//!
//! (The wire methods are in `methods.rs`, reading skills from directories in `disk.rs`, the
//! frontmatter parser in `common/`.)

mod disk;
mod methods;

use disk::{scan_root, DigestCache};
pub(crate) use methods::handle;

use crate::common::frontmatter;
use crate::common::skills::digest_of;
use crate::era::ProtocolError;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use duomcp_schema::{
    BlobResourceContents, ReadResourceResult, Resource, ResourceContents, TextResourceContents,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// Their documented path is [`crate::skills`]; kept here so code naming them compiles.
#[doc(hidden)]
pub use crate::common::skills::{SkillResource, EXTENSION_ID, MAX_FILES, MAX_TOTAL_BYTES};
/// The most characters a `description` may have (Agent Skills).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The MIME type of directory resources.
pub const DIRECTORY_MIME: &str = "inode/directory";

const SKILL_MD: &str = "SKILL.md";
const SCHEME: &str = "skill://";

/// A skill entry as `skills/list` and `skills/get` return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillListing {
    /// URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter, verbatim.
    pub frontmatter: Map<String, Value>,
    /// Every file of the skill, `SKILL.md` and nested skills' files included.
    pub resources: Vec<SkillResource>,
}

/// One thing wrong with a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// The skill (its path) or the file the problem is in.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

/// Why skills could not be added: every problem found, not just the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRejection {
    problems: Vec<SkillProblem>,
}

impl SkillRejection {
    /// The problems found.
    pub fn problems(&self) -> &[SkillProblem] {
        &self.problems
    }
}

impl std::fmt::Display for SkillRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.problems.as_slice() {
            [p] => write!(f, "invalid skill {}: {}", p.location, p.message),
            ps => {
                write!(f, "{} problems with skills:", ps.len())?;
                for p in ps {
                    write!(f, "\n  {}: {}", p.location, p.message)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for SkillRejection {}

/// A skill held in memory: a path and its files.
///
/// `path` locates the skill: `git-workflow`, or with an organizational prefix
/// `acme/billing/refunds`; its last segment must equal the frontmatter `name`.
///
/// ```
/// use duomcp::server::skills::Skill;
/// let skill = Skill::new("git-workflow")
///     .file("SKILL.md", "---\nname: git-workflow\ndescription: Branch and commit the team's way\n---\n");
/// assert_eq!(skill.uri(), "skill://git-workflow/SKILL.md");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    path: String,
    files: BTreeMap<String, Arc<[u8]>>,
}

impl Skill {
    /// A skill at `path`, without files yet.
    pub fn new(path: impl Into<String>) -> Self {
        Skill {
            path: path.into(),
            files: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) the file at `relative_path` (`/`-separated, e.g. `references/FORMS.md`).
    pub fn file(mut self, relative_path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.insert(
            relative_path.into(),
            Arc::from(bytes.into().into_boxed_slice()),
        );
        self
    }

    /// The skill's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The URI of its `SKILL.md`.
    pub fn uri(&self) -> String {
        format!("{SCHEME}{}/{SKILL_MD}", self.path)
    }
}

/// Skills to serve: directory trees and in-memory skills, checked as they are added.
///
/// ```no_run
/// use duomcp::server::skills::SkillSet;
/// let skills = SkillSet::from_dir("./skills").unwrap_or_else(|e| panic!("{e}"));
/// # let _ = skills;
/// ```
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    sources: Vec<Source>,
}

#[derive(Debug, Clone)]
enum Source {
    /// A directory whose sub-folders holding a `SKILL.md` are skills.
    Root(PathBuf),
    /// A skill given as bytes, already checked.
    Memory(Arc<Loaded>),
}

impl SkillSet {
    /// No skills yet.
    pub fn new() -> Self {
        SkillSet::default()
    }

    /// The skills under `root` (see [`dir`](Self::dir)).
    pub fn from_dir(root: impl AsRef<Path>) -> Result<Self, SkillRejection> {
        SkillSet::new().dir(root)
    }

    /// Adds the skills under `root`: every folder below it that holds a `SKILL.md` is a skill
    /// whose path is the folder's path relative to `root`. Every skill is checked now, and all
    /// problems are reported together.
    pub fn dir(mut self, root: impl AsRef<Path>) -> Result<Self, SkillRejection> {
        let root = root.as_ref().to_path_buf();
        let cache = Mutex::default();
        let (skills, problems) = scan_root(&root, &cache);
        if !problems.is_empty() {
            return Err(SkillRejection { problems });
        }
        self.check_unique(skills.iter().map(|s| s.uri.clone()))?;
        self.sources.push(Source::Root(root));
        Ok(self)
    }

    /// Adds an in-memory skill after checking it.
    pub fn skill(mut self, skill: Skill) -> Result<Self, SkillRejection> {
        let loaded = load_memory(skill)?;
        self.check_unique(std::iter::once(loaded.uri.clone()))?;
        self.sources.push(Source::Memory(Arc::new(loaded)));
        Ok(self)
    }

    fn check_unique(&self, uris: impl Iterator<Item = String>) -> Result<(), SkillRejection> {
        let cache = Mutex::default();
        let existing: BTreeSet<String> = self
            .sources
            .iter()
            .flat_map(|s| match s {
                Source::Root(r) => scan_root(r, &cache)
                    .0
                    .into_iter()
                    .map(|l| l.uri.clone())
                    .collect::<Vec<_>>(),
                Source::Memory(l) => vec![l.uri.clone()],
            })
            .collect();
        let problems: Vec<SkillProblem> = uris
            .filter(|u| existing.contains(u))
            .map(|u| SkillProblem {
                location: u,
                message: "a skill with this URI was added already".into(),
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(SkillRejection { problems })
        }
    }
}

/// What a file's bytes come from.
#[derive(Debug, Clone)]
enum Content {
    Memory(Arc<[u8]>),
    Disk(PathBuf),
}

/// A file of a loaded skill.
#[derive(Debug, Clone)]
struct LoadedFile {
    /// Path relative to the skill's folder.
    rel: String,
    uri: String,
    digest: String,
    size: u64,
    content: Content,
}

/// A checked skill at one moment.
#[derive(Debug, Clone)]
struct Loaded {
    path: String,
    uri: String,
    frontmatter: Map<String, Value>,
    files: Vec<LoadedFile>,
}

impl Loaded {
    fn entry(&self) -> SkillListing {
        SkillListing {
            uri: self.uri.clone(),
            frontmatter: self.frontmatter.clone(),
            resources: self
                .files
                .iter()
                .map(|f| SkillResource {
                    uri: f.uri.clone(),
                    digest: f.digest.clone(),
                    size: f.size,
                })
                .collect(),
        }
    }
}

fn is_unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')
}

/// Percent-encodes a path segment (everything but RFC 3986 unreserved characters).
fn encode_segment(seg: &str) -> String {
    let mut out = String::with_capacity(seg.len());
    for b in seg.bytes() {
        if is_unreserved(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn file_uri(skill_path: &str, rel: &str) -> String {
    let rel: Vec<String> = rel.split('/').map(encode_segment).collect();
    format!("{SCHEME}{skill_path}/{}", rel.join("/"))
}

/// The Agent Skills naming rule: 1–64 of `a-z0-9-`, no leading, trailing or double hyphen.
fn name_problem(name: &str) -> Option<String> {
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if name.is_empty() || name.len() > 64 {
        Some(format!("name {name:?} must be 1 to 64 characters long"))
    } else if !ok_chars {
        Some(format!(
            "name {name:?} may hold only lowercase letters, digits and hyphens"
        ))
    } else if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        Some(format!(
            "name {name:?} must not start or end with a hyphen nor hold two in a row"
        ))
    } else {
        None
    }
}

fn path_problems(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    if path.is_empty() {
        out.push("the skill path is empty".to_owned());
        return out;
    }
    for seg in path.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            out.push(format!(
                "the skill path {path:?} has an empty, `.` or `..` segment"
            ));
        } else if !seg.bytes().all(is_unreserved) {
            out.push(format!(
                "the skill path segment {seg:?} may hold only letters, digits and `-._~` (it becomes part of the skill:// URI)"
            ));
        }
    }
    out
}

fn rel_problem(rel: &str) -> Option<String> {
    if rel.is_empty()
        || rel.starts_with('/')
        || rel.contains('\\')
        || rel
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        Some(format!(
            "file path {rel:?} must be relative, `/`-separated, without empty, `.` or `..` segments"
        ))
    } else {
        None
    }
}

/// Checks a skill's `SKILL.md`, path and totals; returns the frontmatter.
fn check(
    path: &str,
    skill_md: Option<&[u8]>,
    file_count: usize,
    total: u64,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut problems = path_problems(path);
    let frontmatter = match skill_md {
        None => {
            problems.push(format!("the skill has no {SKILL_MD}"));
            None
        }
        Some(bytes) => match std::str::from_utf8(bytes) {
            Err(_) => {
                problems.push(format!("{SKILL_MD} is not UTF-8"));
                None
            }
            Ok(text) => match frontmatter::parse(text) {
                Err(e) => {
                    problems.push(e.to_string());
                    None
                }
                Ok(fm) => Some(fm),
            },
        },
    };
    if let Some(fm) = &frontmatter {
        match fm.get("name") {
            Some(Value::String(name)) => {
                if let Some(p) = name_problem(name) {
                    problems.push(p);
                }
                let last = path.rsplit('/').next().unwrap_or_default();
                if name != last {
                    problems.push(format!(
                        "the frontmatter name {name:?} must equal the skill's folder name {last:?}"
                    ));
                }
            }
            _ => problems.push("the frontmatter must have a string `name`".to_owned()),
        }
        match fm.get("description") {
            Some(Value::String(d)) if !d.trim().is_empty() => {
                if d.chars().count() > MAX_DESCRIPTION_CHARS {
                    problems.push(format!(
                        "the description is longer than {MAX_DESCRIPTION_CHARS} characters"
                    ));
                }
            }
            _ => problems
                .push("the frontmatter must have a non-empty string `description`".to_owned()),
        }
    }
    if file_count > MAX_FILES {
        problems.push(format!(
            "the skill has {file_count} files; at most {MAX_FILES} are allowed"
        ));
    }
    if total > MAX_TOTAL_BYTES {
        problems.push(format!(
            "the skill's files add up to {total} bytes; at most {MAX_TOTAL_BYTES} (16 MiB) are allowed"
        ));
    }
    match (problems.is_empty(), frontmatter) {
        (true, Some(fm)) => Ok(fm),
        _ => Err(problems),
    }
}

fn load_memory(skill: Skill) -> Result<Loaded, SkillRejection> {
    let Skill { path, files } = skill;
    let mut problems: Vec<SkillProblem> = files
        .keys()
        .filter_map(|rel| {
            rel_problem(rel).map(|m| SkillProblem {
                location: format!("{path}/{rel}"),
                message: m,
            })
        })
        .collect();
    let total: u64 = files.values().map(|b| b.len() as u64).sum();
    let fm = match check(
        &path,
        files.get(SKILL_MD).map(|b| &b[..]),
        files.len(),
        total,
    ) {
        Ok(fm) => Some(fm),
        Err(ps) => {
            problems.extend(ps.into_iter().map(|m| SkillProblem {
                location: path.clone(),
                message: m,
            }));
            None
        }
    };
    let (Some(frontmatter), true) = (fm, problems.is_empty()) else {
        return Err(SkillRejection { problems });
    };
    let files = files
        .into_iter()
        .map(|(rel, bytes)| LoadedFile {
            uri: file_uri(&path, &rel),
            digest: digest_of(&bytes),
            size: bytes.len() as u64,
            rel,
            content: Content::Memory(bytes),
        })
        .collect();
    Ok(Loaded {
        uri: file_uri(&path, SKILL_MD),
        path,
        frontmatter,
        files,
    })
}

/// The MIME type of a skill file, from its extension.
fn mime_of(rel: &str) -> &'static str {
    let ext = rel
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

/// The skills of a running server.
pub(crate) struct SkillRegistry {
    /// Whether the server serves skills at all (declares the extension).
    enabled: std::sync::atomic::AtomicBool,
    sources: RwLock<Vec<Source>>,
    cache: Arc<DigestCache>,
}

/// The skills at one moment.
pub(crate) struct Snapshot {
    skills: Vec<Loaded>,
}

impl SkillRegistry {
    pub(crate) fn new(set: Option<SkillSet>) -> Self {
        SkillRegistry {
            enabled: std::sync::atomic::AtomicBool::new(set.is_some()),
            sources: RwLock::new(set.map(|s| s.sources).unwrap_or_default()),
            cache: Arc::default(),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn sources(&self) -> Vec<Source> {
        self.sources
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Adds or replaces a memory skill; returns the URIs of files that changed or went away.
    pub(crate) fn put(&self, skill: Skill) -> Result<Vec<String>, SkillRejection> {
        let loaded = load_memory(skill)?;
        self.enabled
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let mut sources = self.sources.write().unwrap_or_else(|p| p.into_inner());
        let mut changed: BTreeSet<String> = loaded.files.iter().map(|f| f.uri.clone()).collect();
        if let Some(i) = sources
            .iter()
            .position(|s| matches!(s, Source::Memory(l) if l.uri == loaded.uri))
        {
            if let Source::Memory(old) = &sources[i] {
                for f in &old.files {
                    let same = loaded
                        .files
                        .iter()
                        .any(|n| n.uri == f.uri && n.digest == f.digest);
                    if same {
                        changed.remove(&f.uri);
                    } else {
                        changed.insert(f.uri.clone());
                    }
                }
            }
            sources[i] = Source::Memory(Arc::new(loaded));
        } else {
            sources.push(Source::Memory(Arc::new(loaded)));
        }
        Ok(changed.into_iter().collect())
    }

    /// Removes a memory skill by the URI of its `SKILL.md` or by its path.
    pub(crate) fn remove(&self, skill: &str) -> bool {
        let mut sources = self.sources.write().unwrap_or_else(|p| p.into_inner());
        let before = sources.len();
        sources.retain(|s| !matches!(s, Source::Memory(l) if l.uri == skill || l.path == skill));
        sources.len() != before
    }

    /// The current skills; directory skills are read from disk now.
    pub(crate) async fn snapshot(&self) -> Result<Snapshot, ProtocolError> {
        let sources = self.sources();
        let cache = self.cache.clone();
        let needs_disk = sources.iter().any(|s| matches!(s, Source::Root(_)));
        let build = move || {
            let mut skills = Vec::new();
            for source in sources {
                match source {
                    Source::Memory(l) => skills.push((*l).clone()),
                    Source::Root(root) => {
                        let (found, problems) = scan_root(&root, &cache);
                        for p in problems {
                            tracing::warn!(location = %p.location, "skill not served: {}", p.message);
                        }
                        skills.extend(found);
                    }
                }
            }
            skills.sort_by(|a, b| a.uri.cmp(&b.uri));
            skills.dedup_by(|a, b| a.uri == b.uri);
            Snapshot { skills }
        };
        if needs_disk {
            tokio::task::spawn_blocking(build).await.map_err(|e| {
                ProtocolError::Internal(format!("Internal error: reading skills failed: {e}"))
            })
        } else {
            Ok(build())
        }
    }
}

impl Snapshot {
    /// Entries in URI order, after `after` (a skill URI), at most `limit`; and whether more follow.
    pub(crate) fn entries(&self, after: Option<&str>, limit: usize) -> (Vec<SkillListing>, bool) {
        let mut it = self
            .skills
            .iter()
            .filter(|s| after.is_none_or(|a| s.uri.as_str() > a));
        let page: Vec<SkillListing> = it.by_ref().take(limit.max(1)).map(Loaded::entry).collect();
        (page, it.next().is_some())
    }

    /// The entry of the skill whose `SKILL.md` is `uri`.
    pub(crate) fn get(&self, uri: &str) -> Option<SkillListing> {
        self.skills.iter().find(|s| s.uri == uri).map(Loaded::entry)
    }

    /// Each served file once, with the innermost skill holding it (nested skills' files also
    /// belong to the skills around them).
    fn files(&self) -> BTreeMap<&str, (&LoadedFile, &Loaded)> {
        let mut out: BTreeMap<&str, (&LoadedFile, &Loaded)> = BTreeMap::new();
        for skill in &self.skills {
            for f in &skill.files {
                let slot = out.entry(f.uri.as_str()).or_insert((f, skill));
                if slot.1.path.len() < skill.path.len() {
                    *slot = (f, skill);
                }
            }
        }
        out
    }

    /// Whether some skill serves the file `uri`.
    pub(crate) fn serves(&self, uri: &str) -> bool {
        self.files().contains_key(uri)
    }

    /// Every skill file as a resource (for `resources/list`), keyed by URI.
    pub(crate) fn resources(&self) -> Vec<(String, Resource)> {
        self.files()
            .into_iter()
            .map(|(uri, (f, skill))| (uri.to_owned(), resource_of(f, skill)))
            .collect()
    }

    /// Reads a skill file; `None` when no skill serves `uri`.
    pub(crate) async fn read(
        &self,
        uri: &str,
    ) -> Option<Result<ReadResourceResult, ProtocolError>> {
        let (file, _) = self.files().get(uri).copied()?;
        let mime = mime_of(&file.rel);
        let bytes: Arc<[u8]> = match &file.content {
            Content::Memory(b) => b.clone(),
            Content::Disk(p) => match tokio::fs::read(p).await {
                Ok(b) => Arc::from(b.into_boxed_slice()),
                Err(e) => {
                    return Some(Err(ProtocolError::Internal(format!(
                        "Internal error: cannot read skill file {uri}: {e}"
                    ))))
                }
            },
        };
        let text_like = mime.starts_with("text/")
            || matches!(
                mime,
                "application/json"
                    | "application/yaml"
                    | "application/toml"
                    | "application/xml"
                    | "image/svg+xml"
            );
        let contents = match (text_like, std::str::from_utf8(&bytes)) {
            (true, Ok(text)) => ResourceContents::Text(TextResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime.to_owned()),
                text: text.to_owned(),
                ..Default::default()
            }),
            _ => ResourceContents::Blob(BlobResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime.to_owned()),
                blob: STANDARD.encode(&bytes),
                ..Default::default()
            }),
        };
        Some(Ok(ReadResourceResult::new(vec![contents])))
    }

    /// The direct children of the directory `uri` (`resources/directory/read`).
    pub(crate) fn directory(&self, uri: &str) -> Result<Vec<Resource>, ProtocolError> {
        let not_dir = || ProtocolError::InvalidParams(format!("{uri} is not a directory resource"));
        let Some(rest) = uri.strip_prefix(SCHEME) else {
            return Err(not_dir());
        };
        if rest.is_empty() || rest.ends_with('/') {
            return Err(not_dir());
        }
        let dir: Vec<&str> = rest.split('/').collect();
        let files = self.files();
        let mut children: BTreeMap<String, Resource> = BTreeMap::new();
        for (file_uri, (f, skill)) in &files {
            let Some(segs) = file_uri
                .strip_prefix(SCHEME)
                .map(|r| r.split('/').collect::<Vec<_>>())
            else {
                continue;
            };
            if segs.len() <= dir.len() || segs[..dir.len()] != dir[..] {
                continue;
            }
            let name = segs[dir.len()];
            let child_uri = format!("{SCHEME}{}", segs[..=dir.len()].join("/"));
            if segs.len() == dir.len() + 1 {
                let mut r = resource_of(f, skill);
                r.name = name.to_owned();
                children.insert(child_uri, r);
            } else {
                children.entry(child_uri.clone()).or_insert_with(|| {
                    let mut r = Resource::new(child_uri, name);
                    r.mime_type = Some(DIRECTORY_MIME.to_owned());
                    r
                });
            }
        }
        if children.is_empty() {
            return Err(if files.contains_key(uri) {
                not_dir()
            } else {
                ProtocolError::InvalidParams(format!("No directory is served at {uri}"))
            });
        }
        Ok(children.into_values().collect())
    }
}

/// A skill file's resource: `SKILL.md` is named and described from the frontmatter, the
/// other files by their path in the skill.
fn resource_of(f: &LoadedFile, skill: &Loaded) -> Resource {
    let field = |k: &str| skill.frontmatter.get(k).and_then(Value::as_str);
    let skill_name = field("name").unwrap_or(&skill.path);
    let (name, description) = if f.uri == skill.uri {
        (
            skill_name.to_owned(),
            field("description").unwrap_or_default().to_owned(),
        )
    } else {
        (
            f.rel.rsplit('/').next().unwrap_or(&f.rel).to_owned(),
            format!("{} of the {skill_name} skill", f.rel),
        )
    };
    let mut r = Resource::new(f.uri.clone(), name);
    r.description = Some(description);
    r.mime_type = Some(mime_of(&f.rel).to_owned());
    r.size = Some(f.size);
    r
}

#[cfg(test)]
mod tests;
