//! Skills (extension `io.modelcontextprotocol/skills`, SEP-2640) from the host's side: list
//! them, get one by URI, and load one lazily with every read verified.
//!
//! * [`Client::list_skills`] / [`Client::list_all_skills`] (`skills/list`) and
//!   [`Client::get_skill`] (`skills/get`) return [`SkillEntry`]s: the frontmatter and the
//!   manifest (URI, digest, size) of every file. Nothing is read.
//! * [`Client::load_skill`] checks an entry (its URI, name, manifest and the per-skill limits)
//!   and returns a [`SkillHandle`], still without reading anything.
//! * [`SkillHandle::skill_md`] reads `SKILL.md` with `resources/read` when asked, and
//!   [`SkillHandle::read`] any other file of the skill. Each read is checked against the held
//!   entry: its size, its SHA-256 digest, and for `SKILL.md` its frontmatter, field by field.
//!   Content that fails is refused with a [`SkillError`] and never returned; files the entry
//!   does not list are refused without a request. Verified files are kept, so a second read is
//!   served from the handle.
//!
//! The client declares the extension (`capabilities.extensions`, at `initialize` in
//! 2025-11-25 and in every request's `_meta` in 2026-07-28) when built with
//! [`ClientBuilder::skills`]; the skills methods are only sent to a server that declares it.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::client::Client;
//! use duomcp::server::skills::{Skill, SkillSet};
//! use duomcp::server::Server;
//!
//! let skills = SkillSet::new()
//!     .skill(Skill::new("notes").file("SKILL.md", "---\nname: notes\ndescription: Take notes\n---\nWrite it down.\n"))
//!     .unwrap();
//! let server = Server::builder().skills(skills).build();
//! let (client_end, server_end) = tokio::io::duplex(64 * 1024);
//! let (sr, sw) = tokio::io::split(server_end);
//! tokio::spawn(server.serve_connection(sr, sw));
//! let (cr, cw) = tokio::io::split(client_end);
//! let client = Client::builder().skills().connect(cr, cw).await.unwrap();
//!
//! let entries = client.list_all_skills().await.unwrap();
//! assert_eq!(entries[0].name(), Some("notes"));
//! let skill = client.load_skill(entries[0].clone()).unwrap(); // nothing read yet
//! let md = skill.skill_md().await.unwrap(); // read now, and verified
//! assert!(md.text().unwrap().ends_with("Write it down.\n"));
//! # });
//! ```

mod handle;

use super::{decode, list_params, Client, ClientBuilder, ClientError, RequestOptions, MAX_PAGES};
use duomcp_schema::{JsonObject, Resource};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Their documented path is [`crate::skills`]; kept here so code naming them compiles.
#[doc(hidden)]
pub use crate::common::skills::{SkillResource, EXTENSION_ID, MAX_FILES, MAX_TOTAL_BYTES};

/// `skills/list`.
const LIST: &str = "skills/list";
/// `skills/get`.
const GET: &str = "skills/get";
/// `resources/directory/read`.
const DIRECTORY_READ: &str = "resources/directory/read";
/// `resources/read`.
const READ: &str = "resources/read";
/// The file every skill has at its root.
const SKILL_MD: &str = "SKILL.md";

/// A skill's files as its entry gives them: a complete manifest, or `"dynamic"` (content
/// generated on demand, so no digests). Anything else makes the entry unloadable.
///
/// ```
/// use duomcp::client::skills::SkillResources;
/// let r: SkillResources = serde_json::from_value(serde_json::json!("dynamic")).unwrap();
/// assert_eq!(r, SkillResources::Dynamic);
/// let r: SkillResources = serde_json::from_value(serde_json::json!(42)).unwrap();
/// assert!(matches!(r, SkillResources::Invalid(_)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum SkillResources {
    /// Every file of the skill (`SKILL.md` included) with its digest and size.
    Files(Vec<SkillResource>),
    /// `"dynamic"`: the content is generated, no digests are published.
    Dynamic,
    /// What the server sent instead of either (`null` when it sent nothing).
    Invalid(Value),
}

impl Default for SkillResources {
    fn default() -> Self {
        SkillResources::Invalid(Value::Null)
    }
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str("dynamic"),
            SkillResources::Invalid(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match &v {
            Value::String(s) if s == "dynamic" => SkillResources::Dynamic,
            Value::Array(_) => match serde_json::from_value::<Vec<SkillResource>>(v.clone()) {
                Ok(files) => SkillResources::Files(files),
                Err(_) => SkillResources::Invalid(v),
            },
            _ => SkillResources::Invalid(v),
        })
    }
}

/// One skill as `skills/list` and `skills/get` describe it.
///
/// A malformed `resources` value does not fail the listing: the entry is kept, and
/// [`Client::load_skill`] refuses it.
///
/// ```
/// use duomcp::client::skills::{SkillEntry, SkillResources};
/// let entry: SkillEntry = serde_json::from_value(serde_json::json!({
///     "uri": "skill://acme/refunds/SKILL.md",
///     "frontmatter": { "name": "refunds", "description": "Process refunds" },
///     "resources": [{ "uri": "skill://acme/refunds/SKILL.md", "digest": "sha256:…", "size": 120 }]
/// })).unwrap();
/// assert_eq!(entry.name(), Some("refunds"));
/// assert_eq!(entry.root_uri(), Some("skill://acme/refunds"));
/// assert_eq!(entry.total_size(), Some(120));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// URI of the skill's `SKILL.md`; with the server, the skill's identity.
    pub uri: String,
    /// The `SKILL.md` frontmatter, verbatim (`name` and `description` at least).
    #[serde(default)]
    pub frontmatter: Map<String, Value>,
    /// The skill's files.
    #[serde(default)]
    pub resources: SkillResources,
}

impl SkillEntry {
    /// The frontmatter `name`.
    ///
    /// ```
    /// # let entry: duomcp::client::skills::SkillEntry = serde_json::from_value(serde_json::json!({
    /// #     "uri": "skill://notes/SKILL.md", "frontmatter": { "name": "notes", "description": "d" }, "resources": "dynamic" })).unwrap();
    /// assert_eq!(entry.name(), Some("notes"));
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter `description`.
    ///
    /// ```
    /// # let entry: duomcp::client::skills::SkillEntry = serde_json::from_value(serde_json::json!({
    /// #     "uri": "skill://notes/SKILL.md", "frontmatter": { "name": "notes", "description": "Take notes" }, "resources": "dynamic" })).unwrap();
    /// assert_eq!(entry.description(), Some("Take notes"));
    /// ```
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The skill's root directory: the URI without `/SKILL.md` (`None` when the URI does not
    /// end in `/SKILL.md`).
    ///
    /// ```
    /// # let entry: duomcp::client::skills::SkillEntry = serde_json::from_value(serde_json::json!({
    /// #     "uri": "skill://a/b/notes/SKILL.md", "frontmatter": {}, "resources": "dynamic" })).unwrap();
    /// assert_eq!(entry.root_uri(), Some("skill://a/b/notes"));
    /// ```
    pub fn root_uri(&self) -> Option<&str> {
        self.uri
            .strip_suffix(SKILL_MD)
            .and_then(|r| r.strip_suffix('/'))
            .filter(|r| !r.is_empty() && !r.ends_with('/'))
    }

    /// The listed files (`None` for a dynamic or malformed manifest).
    ///
    /// ```
    /// # let entry: duomcp::client::skills::SkillEntry = serde_json::from_value(serde_json::json!({
    /// #     "uri": "skill://notes/SKILL.md", "frontmatter": {}, "resources": "dynamic" })).unwrap();
    /// assert!(entry.files().is_none());
    /// ```
    pub fn files(&self) -> Option<&[SkillResource]> {
        match &self.resources {
            SkillResources::Files(f) => Some(f),
            _ => None,
        }
    }

    /// The sum of the listed files' sizes (`None` for a dynamic or malformed manifest).
    ///
    /// ```
    /// # let entry: duomcp::client::skills::SkillEntry = serde_json::from_value(serde_json::json!({
    /// #     "uri": "skill://notes/SKILL.md", "frontmatter": {},
    /// #     "resources": [{ "uri": "skill://notes/SKILL.md", "digest": "sha256:x", "size": 7 },
    /// #                   { "uri": "skill://notes/a.md", "digest": "sha256:y", "size": 5 }] })).unwrap();
    /// assert_eq!(entry.total_size(), Some(12));
    /// ```
    pub fn total_size(&self) -> Option<u64> {
        self.files()
            .map(|f| f.iter().fold(0u64, |a, r| a.saturating_add(r.size)))
    }
}

/// One page of `skills/list`.
///
/// ```no_run
/// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
/// let page = client.list_skills(None).await?;
/// if let Some(cursor) = page.next_cursor {
///     let _next = client.list_skills(Some(cursor)).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The skills on this page.
    pub skills: Vec<SkillEntry>,
    /// Where the next page starts, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct GetSkillResult {
    skill: SkillEntry,
}

/// One page of `resources/directory/read`: the direct children of a directory resource.
///
/// ```no_run
/// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
/// let page = client.read_directory("skill://release-notes/templates", None).await?;
/// for child in page.resources {
///     println!("{} {:?}", child.uri, child.mime_type);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// The children: files, and sub-directories with `mimeType` `inode/directory`.
    pub resources: Vec<Resource>,
    /// Where the next page starts, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Why a skill was not loaded, or a file of it was refused.
///
/// Every variant but [`Client`](SkillError::Client) is decided by the host from what it
/// holds; [`is_verification_failure`](SkillError::is_verification_failure) tells the reads that
/// returned content other than the entry describes (refresh the entry with
/// [`Client::get_skill`] and load it again).
///
/// ```
/// use duomcp::client::skills::SkillError;
/// let e = SkillError::SizeMismatch { uri: "skill://notes/SKILL.md".into(), listed: 10, served: 12 };
/// assert!(e.is_verification_failure());
/// assert!(e.to_string().starts_with("refusing skill://notes/SKILL.md:"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The request failed (connection, JSON-RPC error, the server not offering skills…).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The entry breaks the extension's rules, so it may not be loaded.
    #[error("skill {uri} cannot be loaded: {reason}")]
    InvalidEntry {
        /// The entry's `uri`.
        uri: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The entry lists more than 512 files or 16 MiB, or a dynamic skill served more than
    /// 16 MiB.
    #[error("skill {uri} is too large: {reason}")]
    TooLarge {
        /// The entry's `uri`.
        uri: String,
        /// Which limit, and by how much.
        reason: String,
    },
    /// A read of a file the held entry does not list.
    #[error("refusing {uri}: it is not a file of the skill {skill} as listed (the skill may have changed: refresh it with skills/get)")]
    Unlisted {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The file asked for.
        uri: String,
    },
    /// The server sent more or fewer bytes than the entry lists.
    #[error("refusing {uri}: the server sent {served} bytes but the skill entry lists {listed} (the skill changed or was tampered with: refresh it with skills/get)")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The size in the entry.
        listed: u64,
        /// The size read.
        served: u64,
    },
    /// The bytes' SHA-256 digest differs from the entry's.
    #[error("refusing {uri}: its digest is {served} but the skill entry lists {listed} (the skill changed or was tampered with: refresh it with skills/get)")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The digest in the entry.
        listed: String,
        /// The digest of the bytes read.
        served: String,
    },
    /// A frontmatter field of the `SKILL.md` read differs from the entry's.
    #[error(
        "refusing {uri}: frontmatter field `{field}` is {} in SKILL.md but {} in the skill entry",
        show(served),
        show(listed)
    )]
    FrontmatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The field that differs.
        field: String,
        /// Its value in the entry (`None`: absent).
        listed: Option<Value>,
        /// Its value in the file read (`None`: absent).
        served: Option<Value>,
    },
    /// The content cannot be checked: no contents for the URI, bad base64, a `SKILL.md` that
    /// is not UTF-8 or has no parseable frontmatter.
    #[error("refusing {uri}: {reason}")]
    BadContent {
        /// The file.
        uri: String,
        /// What is wrong.
        reason: String,
    },
}

fn show(v: &Option<Value>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "absent".to_owned(),
    }
}

impl SkillError {
    /// Whether a read returned content the held entry does not describe (size, digest or
    /// frontmatter mismatch, or a file it does not list): the content was not used.
    ///
    /// ```
    /// use duomcp::client::skills::SkillError;
    /// let e = SkillError::Unlisted { skill: "skill://a/SKILL.md".into(), uri: "skill://a/x".into() };
    /// assert!(e.is_verification_failure());
    /// ```
    pub fn is_verification_failure(&self) -> bool {
        matches!(
            self,
            SkillError::Unlisted { .. }
                | SkillError::SizeMismatch { .. }
                | SkillError::DigestMismatch { .. }
                | SkillError::FrontmatterMismatch { .. }
        )
    }
}

/// How a file's content was checked.
///
/// ```
/// use duomcp::client::skills::Integrity;
/// assert_ne!(Integrity::Verified, Integrity::Unverifiable);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    /// Size and digest match the entry (and for `SKILL.md`, the frontmatter).
    Verified,
    /// The skill is dynamic: there is no digest to check (the frontmatter of `SKILL.md` was
    /// still checked).
    Unverifiable,
}

/// A file of a loaded skill, as read and checked.
///
/// ```no_run
/// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
/// let file = skill.read("references/sections.md").await?;
/// println!("{} ({} bytes): {}", file.uri(), file.bytes().len(), file.text().unwrap_or("[binary]"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SkillFile {
    uri: String,
    mime_type: Option<String>,
    bytes: Arc<[u8]>,
    integrity: Integrity,
}

impl SkillFile {
    /// The file's URI.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// assert_eq!(skill.skill_md().await?.uri(), skill.entry().uri);
    /// # Ok(()) }
    /// ```
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The MIME type the server gave.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// assert_eq!(skill.skill_md().await?.mime_type(), Some("text/markdown"));
    /// # Ok(()) }
    /// ```
    pub fn mime_type(&self) -> Option<&str> {
        self.mime_type.as_deref()
    }

    /// The raw bytes (those the digest covers).
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// let md = skill.skill_md().await?;
    /// assert!(md.bytes().starts_with(b"---"));
    /// # Ok(()) }
    /// ```
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The content as text, if it is UTF-8.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// println!("{}", skill.skill_md().await?.text().unwrap_or_default());
    /// # Ok(()) }
    /// ```
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }

    /// How the content was checked.
    ///
    /// ```no_run
    /// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
    /// use duomcp::client::skills::Integrity;
    /// assert_eq!(skill.skill_md().await?.integrity(), Integrity::Verified);
    /// # Ok(()) }
    /// ```
    pub fn integrity(&self) -> Integrity {
        self.integrity
    }
}

/// A loaded skill: the entry it was loaded from (the *held entry*) and the files read so far.
///
/// Nothing is read until asked for: [`skill_md`](Self::skill_md) reads `SKILL.md`,
/// [`read`](Self::read) any listed file. Reads are resolved only to files the held entry
/// lists, and each is checked against it; verified files are kept, so reading one again sends
/// nothing. Cheap to clone; clones share what was read.
///
/// ```no_run
/// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::skills::SkillError> {
/// let entry = client.get_skill("skill://release-notes/SKILL.md").await?;
/// let skill = client.load_skill(entry)?;
/// let instructions = skill.skill_md().await?;
/// let template = skill.read("templates/entry.md").await?;
/// # let _ = (instructions, template);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SkillHandle {
    client: Client,
    entry: Arc<SkillEntry>,
    root: Arc<str>,
    read: Arc<Mutex<Reads>>,
}

#[derive(Debug, Default)]
struct Reads {
    files: HashMap<String, SkillFile>,
    /// Bytes retrieved so far (the limit of dynamic skills applies to this).
    retrieved: u64,
}

impl ClientBuilder {
    /// Declares the skills extension (`extensions: {"io.modelcontextprotocol/skills": {}}`),
    /// in `initialize` (2025-11-25) and in every request's `_meta` (2026-07-28).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), duomcp::client::ClientError> {
    /// let mut cmd = tokio::process::Command::new("duomcp");
    /// cmd.arg("serve");
    /// let client = duomcp::client::Client::builder().skills().connect_stdio(cmd).await?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn skills(self) -> Self {
        self.extension(EXTENSION_ID, JsonObject::new())
    }
}

impl Client {
    /// Whether the server declares the skills extension.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) {
    /// if client.offers_skills() {
    ///     println!("{} skills", client.list_all_skills().await.map(|s| s.len()).unwrap_or(0));
    /// }
    /// # }
    /// ```
    pub fn offers_skills(&self) -> bool {
        self.server_capabilities().has_extension(EXTENSION_ID)
    }

    /// Whether the server declares `directoryRead` (`resources/directory/read`).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) {
    /// println!("directory reads: {}", client.offers_directory_read());
    /// # }
    /// ```
    pub fn offers_directory_read(&self) -> bool {
        self.server_capabilities()
            .extensions
            .as_ref()
            .and_then(|e| e.get(EXTENSION_ID))
            .and_then(|s| s.get("directoryRead"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn require_skills(&self, method: &str) -> Result<(), ClientError> {
        if self.offers_skills() {
            Ok(())
        } else {
            Err(ClientError::Unsupported(format!(
                "{method}: the server does not declare the extension {EXTENSION_ID}"
            )))
        }
    }

    /// One page of `skills/list` (the first when `cursor` is `None`). A listing may be partial:
    /// a skill missing from it can still be loaded by URI with [`get_skill`](Self::get_skill).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let page = client.list_skills(None).await?;
    /// for skill in &page.skills {
    ///     println!("{} {}", skill.uri, skill.description().unwrap_or_default());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_skills(
        &self,
        cursor: Option<String>,
    ) -> Result<ListSkillsResult, ClientError> {
        self.require_skills(LIST)?;
        let v = self
            .inner
            .call(LIST, list_params(cursor), &RequestOptions::default())
            .await?;
        decode(LIST, v)
    }

    /// Every skill the server lists, following `nextCursor`.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let skills = client.list_all_skills().await?;
    /// println!("{} skills", skills.len());
    /// # Ok(()) }
    /// ```
    pub async fn list_all_skills(&self) -> Result<Vec<SkillEntry>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self.list_skills(cursor).await?;
            all.extend(page.skills);
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(all),
            }
        }
        Err(ClientError::Protocol(format!(
            "{LIST} returned more than {MAX_PAGES} pages"
        )))
    }

    /// The entry of the skill whose `SKILL.md` is `uri` (`skills/get`): a fresh snapshot, also
    /// for skills the listing leaves out. An unknown skill is a JSON-RPC error `-32602`.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let entry = client.get_skill("skill://release-notes/SKILL.md").await?;
    /// println!("{} files", entry.files().map_or(0, |f| f.len()));
    /// # Ok(()) }
    /// ```
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, ClientError> {
        self.require_skills(GET)?;
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        let v = self
            .inner
            .call(GET, params, &RequestOptions::default())
            .await?;
        decode::<GetSkillResult>(GET, v).map(|r| r.skill)
    }

    /// One page of `resources/directory/read`: the direct children of the directory resource
    /// `uri` (e.g. `skill://release-notes/templates`). Only sent to a server that declares
    /// `directoryRead`.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let page = client.read_directory("skill://release-notes", None).await?;
    /// println!("{} children", page.resources.len());
    /// # Ok(()) }
    /// ```
    pub async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<String>,
    ) -> Result<ReadDirectoryResult, ClientError> {
        if !self.offers_directory_read() {
            return Err(ClientError::Unsupported(format!(
                "{DIRECTORY_READ}: the server does not declare directoryRead"
            )));
        }
        let mut params = list_params(cursor);
        params.insert("uri".into(), json!(uri));
        let v = self
            .inner
            .call(DIRECTORY_READ, params, &RequestOptions::default())
            .await?;
        decode(DIRECTORY_READ, v)
    }

    /// Loads a skill from its entry, without reading anything: the entry is checked (a URI
    /// ending in `/SKILL.md` whose last path segment is the frontmatter `name`, a
    /// `description`, a manifest that is complete, well-formed and within 512 files and
    /// 16 MiB, or `"dynamic"`) and becomes the held entry of the returned handle.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::skills::SkillError> {
    /// for entry in client.list_all_skills().await? {
    ///     match client.load_skill(entry) {
    ///         Ok(skill) => println!("{} is loadable", skill.entry().uri),
    ///         Err(e) => eprintln!("{e}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn load_skill(&self, entry: SkillEntry) -> Result<SkillHandle, SkillError> {
        let root = check_entry(&entry)?;
        Ok(SkillHandle {
            client: self.clone(),
            root: root.into(),
            entry: Arc::new(entry),
            read: Arc::default(),
        })
    }
}

fn is_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Checks an entry; returns the skill's root URI.
fn check_entry(entry: &SkillEntry) -> Result<String, SkillError> {
    let invalid = |reason: String| SkillError::InvalidEntry {
        uri: entry.uri.clone(),
        reason,
    };
    let root = entry
        .root_uri()
        .ok_or_else(|| invalid(format!("its uri does not end in /{SKILL_MD}")))?
        .to_owned();
    let name = entry
        .name()
        .ok_or_else(|| invalid("its frontmatter has no string `name`".into()))?;
    if entry.description().is_none() {
        return Err(invalid(
            "its frontmatter has no string `description`".into(),
        ));
    }
    let last = root.rsplit('/').next().unwrap_or_default();
    if last != name {
        return Err(invalid(format!(
            "the last segment of its path ({last:?}) is not its name ({name:?})"
        )));
    }
    let files = match &entry.resources {
        SkillResources::Dynamic => return Ok(root),
        SkillResources::Invalid(Value::Null) => {
            return Err(invalid("it has no `resources`".into()))
        }
        SkillResources::Invalid(v) => {
            return Err(invalid(format!(
                "its `resources` is neither a list of {{uri, digest, size}} nor \"dynamic\": {v}"
            )))
        }
        SkillResources::Files(files) => files,
    };
    let prefix = format!("{root}/");
    let mut seen = BTreeSet::new();
    for f in files {
        if !seen.insert(f.uri.as_str()) {
            return Err(invalid(format!("it lists {} twice", f.uri)));
        }
        if !f.uri.starts_with(&prefix) {
            return Err(invalid(format!(
                "it lists {}, which is outside the skill's directory {root}",
                f.uri
            )));
        }
        if !is_digest(&f.digest) {
            return Err(invalid(format!(
                "the digest of {} is not `sha256:` and 64 lowercase hex digits: {:?}",
                f.uri, f.digest
            )));
        }
    }
    if !seen.contains(entry.uri.as_str()) {
        return Err(invalid(format!("its resources do not list its {SKILL_MD}")));
    }
    let too_large = |reason: String| SkillError::TooLarge {
        uri: entry.uri.clone(),
        reason,
    };
    if files.len() > MAX_FILES {
        return Err(too_large(format!(
            "it lists {} files; at most {MAX_FILES} are supported",
            files.len()
        )));
    }
    let total = entry.total_size().unwrap_or_default();
    if total > MAX_TOTAL_BYTES {
        return Err(too_large(format!(
            "its files add up to {total} bytes; at most {MAX_TOTAL_BYTES} (16 MiB) are supported"
        )));
    }
    Ok(root)
}

/// What [`SkillHandle::read_directory`] found.
///
/// ```no_run
/// # async fn run(skill: duomcp::client::skills::SkillHandle) -> Result<(), duomcp::client::skills::SkillError> {
/// let root = skill.read_directory("").await?;
/// println!("{} listed, {} new", root.listed.len(), root.unlisted.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DirectoryListing {
    /// Children the held entry lists (files, or directories holding listed files).
    pub listed: Vec<Resource>,
    /// Children the server shows but the held entry does not list.
    pub unlisted: Vec<Resource>,
}

#[cfg(test)]
mod tests;
