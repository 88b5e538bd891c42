//! Protocol revisions and era classification.

/// The newest modern (stateless) revision.
pub const LATEST_MODERN: &str = "2026-07-28";
/// The newest legacy (stateful, `initialize`-based) revision.
pub const LATEST_LEGACY: &str = "2025-11-25";
/// Modern revisions, newest first.
pub const MODERN_VERSIONS: &[&str] = &[LATEST_MODERN];
/// Legacy revisions, newest first (every one a peer may name; see [`OFFERED_LEGACY_VERSIONS`]
/// for those a server negotiates).
pub const LEGACY_VERSIONS: &[&str] = &[LATEST_LEGACY, "2025-06-18", "2025-03-26", "2024-11-05"];
/// Legacy revisions a server agrees to in `initialize`, newest first. 2025-03-26 is not
/// offered: that revision requires servers to accept JSON-RPC batches, which this
/// implementation does not (no other revision has them); a client asking for it is answered
/// with [`LATEST_LEGACY`], and may then decide to disconnect.
pub const OFFERED_LEGACY_VERSIONS: &[&str] = &[LATEST_LEGACY, "2025-06-18", "2024-11-05"];

/// Whether `v` is a known modern revision.
pub fn is_modern(v: &str) -> bool {
    MODERN_VERSIONS.contains(&v)
}

/// Whether `v` is a known legacy revision.
pub fn is_legacy(v: &str) -> bool {
    LEGACY_VERSIONS.contains(&v)
}

/// Whether `v` is any known revision.
pub fn is_known(v: &str) -> bool {
    is_modern(v) || is_legacy(v)
}
