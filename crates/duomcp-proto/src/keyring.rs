//! The `requestState` keyring: the keys replicas seal and open multi-round-trip state with.
//!
//! The newest key seals; every key of the ring opens what it sealed, so a rotation (a new key
//! put first, the old one kept behind it) does not break a round trip in progress. A sealed
//! state names its key (a short id derived from the key), so opening it costs one MAC however
//! many keys the ring holds. A state still expires on its own (the server's
//! `request_state_ttl`): an old key can leave the ring once that long has passed since it
//! stopped sealing.
//!
//! Replicas behind one load balancer must hold the same keys. A keyring file's text
//! ([`Keyring::parse`]; `duomcp`'s `KeyringExt::from_file` and `duomcp serve --state-key-file`
//! read the file) has one base64 key of at least 32 random bytes per line, newest first
//! (`head -c 32 /dev/urandom | base64`).

use crate::request_state::{Keys, SealingKey};
use base64::Engine as _;
use std::sync::{Arc, RwLock};

/// Keys accepted in one ring at most (a file with more is refused).
pub(crate) const MAX_KEYS: usize = 16;

/// Why a keyring could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyringError {
    /// The file could not be read.
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A line is not one base64 key of at least 32 bytes.
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// No key at all, or more than 16.
    Count(String),
}

impl std::fmt::Display for KeyringError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyringError::Io { path, source } => write!(f, "keyring {path}: {source}"),
            KeyringError::BadLine { line, reason } => write!(f, "keyring line {line}: {reason}"),
            KeyringError::Count(what) => write!(f, "keyring: {what}"),
        }
    }
}

impl std::error::Error for KeyringError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            KeyringError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The keys that seal (the newest, first) and open (all, at most 16) `requestState`, so that
/// replicas keep opening what an older key sealed after a rotation; a sealed state names its
/// key. A keyring file ([`Keyring::parse`] of its text; `duomcp`'s `KeyringExt::from_file`,
/// `duomcp serve --state-key-file`) has one base64 key of at least 32 random bytes per line,
/// newest first (`head -c 32 /dev/urandom | base64`). Cloning shares the ring:
/// [`replace`](Keyring::replace) on one clone is seen by every clone (a server keeps one
/// clone, whoever configures it another).
///
/// ```
/// use duomcp_proto::keyring::Keyring;
/// let ring = Keyring::parse(
///     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\
///      AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n",
/// )
/// .unwrap();
/// assert_eq!(ring.len(), 2);
/// assert!(Keyring::parse("c2hvcnQ=").is_err()); // 5 bytes: too short
/// ```
#[derive(Clone)]
pub struct Keyring {
    keys: Arc<RwLock<Arc<Ring>>>,
}

/// The keys of a ring: never empty, the sealing key first.
pub(crate) struct Ring {
    newest: Entry,
    older: Vec<Entry>,
}

impl Ring {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        std::iter::once(&self.newest).chain(&self.older)
    }
}

#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) key: SealingKey,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self.snapshot().iter().map(|e| e.id.clone()).collect();
        f.debug_struct("Keyring").field("ids", &ids).finish()
    }
}

impl From<SealingKey> for Keyring {
    fn from(key: SealingKey) -> Self {
        Keyring::new(key, Vec::new())
    }
}

impl Keyring {
    /// A ring sealing with `newest` and also opening with `older` (newest first).
    pub fn new(newest: SealingKey, older: Vec<SealingKey>) -> Self {
        let ring = Ring {
            newest: Entry::new(newest),
            older: older
                .into_iter()
                .take(MAX_KEYS - 1)
                .map(Entry::new)
                .collect(),
        };
        Keyring {
            keys: Arc::new(RwLock::new(Arc::new(ring))),
        }
    }

    /// A ring from the text of a keyring file: one base64 key (standard or URL-safe alphabet,
    /// padded or not) of at least 32 bytes per line, newest first. Blank lines and lines
    /// starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<Self, KeyringError> {
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bytes = decode_key(line).ok_or_else(|| KeyringError::BadLine {
                line: n + 1,
                reason: "not base64".into(),
            })?;
            if bytes.len() < 32 {
                return Err(KeyringError::BadLine {
                    line: n + 1,
                    reason: format!("{} bytes; a key needs at least 32", bytes.len()),
                });
            }
            keys.push(SealingKey::derive(&bytes));
        }
        if keys.len() > MAX_KEYS {
            return Err(KeyringError::Count(format!(
                "{} keys; at most {MAX_KEYS}",
                keys.len()
            )));
        }
        let mut keys = keys.into_iter();
        let Some(newest) = keys.next() else {
            return Err(KeyringError::Count("no key".into()));
        };
        Ok(Keyring::new(newest, keys.collect()))
    }

    /// Puts `other`'s keys in place of this ring's, for every clone (a reloaded file, a key
    /// fetched from a shared store).
    pub fn replace(&self, other: &Keyring) {
        let keys = other.snapshot();
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = keys;
    }

    /// Keys in the ring.
    pub fn len(&self) -> usize {
        1 + self.snapshot().older.len()
    }

    /// Never true: a ring always holds its sealing key.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The id sealed states name the sealing key by.
    pub fn newest_id(&self) -> String {
        self.newest().id
    }

    /// The sealing key and its id.
    pub(crate) fn newest(&self) -> Entry {
        self.snapshot().newest.clone()
    }

    pub(crate) fn snapshot(&self) -> Arc<Ring> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Entry {
    fn new(key: SealingKey) -> Self {
        Entry { id: key.id(), key }
    }
}

fn decode_key(line: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(line).ok())
}

/// The newest key seals; any key held opens.
impl Keys for Keyring {
    fn sealing(&self) -> (String, SealingKey) {
        let newest = self.newest();
        (newest.id.clone(), newest.key.clone())
    }
    fn opening(&self, id: &str) -> Option<SealingKey> {
        self.snapshot()
            .iter()
            .find(|e| e.id == id)
            .map(|e| e.key.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_newest_first_and_refuses_bad_lines() {
        let a = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let b = base64::engine::general_purpose::STANDARD.encode([2u8; 48]);
        let ring = Keyring::parse(&format!("# rotated\n{a}\n\n{b}\n")).unwrap();
        assert_eq!(ring.len(), 2);
        assert_eq!(ring.newest_id(), SealingKey::derive(&[1u8; 32]).id());
        let err = Keyring::parse(&format!("{a}\nnot*base64\n")).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(Keyring::parse("# nothing\n").is_err());
        let many = std::iter::repeat_n(a.as_str(), MAX_KEYS + 1).collect::<Vec<_>>();
        assert!(Keyring::parse(&many.join("\n")).is_err());
    }

    #[test]
    fn replace_is_seen_by_every_clone() {
        let ring = Keyring::from(SealingKey::from_bytes([1; 32]));
        let clone = ring.clone();
        ring.replace(&Keyring::new(
            SealingKey::from_bytes([2; 32]),
            vec![SealingKey::from_bytes([1; 32])],
        ));
        assert_eq!(clone.len(), 2);
        assert_eq!(clone.newest_id(), SealingKey::from_bytes([2; 32]).id());
    }

    #[test]
    fn a_ring_holds_at_most_sixteen_keys_and_the_newest_seals() {
        let older: Vec<SealingKey> = (0..40).map(|i| SealingKey::from_bytes([i; 32])).collect();
        let ring = Keyring::new(SealingKey::from_bytes([99; 32]), older);
        assert_eq!(ring.len(), MAX_KEYS);
        assert!(!ring.is_empty());
        assert_eq!(ring.newest_id(), SealingKey::from_bytes([99; 32]).id());
    }
}
