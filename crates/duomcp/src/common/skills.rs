//! The skills extension (`io.modelcontextprotocol/skills`) as both runtimes know it: its
//! identifier, its limits, a listed file, and how a file's digest is computed (the server lists
//! it, the client checks it).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The extension identifier.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// The most files a skill may hold (`SKILL.md` included).
pub const MAX_FILES: usize = 512;
/// The most bytes a skill's files may add up to (16 MiB).
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

/// One file of a skill entry: its URI, digest and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// Resource URI of the file.
    pub uri: String,
    /// `sha256:` and the 64 lowercase hex digits of the SHA-256 of the file's bytes.
    pub digest: String,
    /// Length of the file in bytes.
    pub size: u64,
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`: a skill file's digest, as the server
/// lists it and the client checks it.
pub(crate) fn digest_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in hash {
        s.push_str(&format!("{b:02x}"));
    }
    s
}
