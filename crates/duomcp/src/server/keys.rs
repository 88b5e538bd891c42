//! The `requestState` keys: [`SealingKey`], [`Keyring`] and [`KeyringError`] live in
//! `duomcp-proto` (sealing is pure: [`duomcp_proto::request_state`]); this module adds what
//! needs the operating system, a random key ([`SealingKeyExt::random`]) and reading a keyring
//! file ([`KeyringExt::from_file`]).
//!
//! Replicas behind one load balancer must hold the same keys. The keyring file read by
//! [`KeyringExt::from_file`] (and `duomcp serve --state-key-file`) has one base64 key of at
//! least 32 random bytes per line, newest first (`head -c 32 /dev/urandom | base64`).

pub use duomcp_proto::keyring::{Keyring, KeyringError};
pub use duomcp_proto::request_state::SealingKey;

/// What makes a [`SealingKey`] from the operating system's generator.
pub trait SealingKeyExt {
    /// A fresh random key (from the operating system's generator).
    ///
    /// ```
    /// use duomcp::server::{SealingKey, SealingKeyExt as _};
    /// let a = SealingKey::random();
    /// let b = SealingKey::random();
    /// assert_ne!(a.id(), b.id());
    /// ```
    fn random() -> Self;
}

impl SealingKeyExt for SealingKey {
    fn random() -> Self {
        let mut k = [0u8; 32];
        // If the OS generator fails there is no safe key; fall back to a time-and-address mix
        // only so that the server still starts, and say so loudly.
        if getrandom::fill(&mut k).is_err() {
            tracing::error!(
                "operating system random generator failed; requestState sealing key is weak"
            );
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            k[..16].copy_from_slice(&t.to_le_bytes());
        }
        SealingKey::from_bytes(k)
    }
}

/// What reads a [`Keyring`] from a file.
pub trait KeyringExt: Sized {
    /// [`Keyring::parse`] of a file's contents.
    ///
    /// ```no_run
    /// use duomcp::server::{Keyring, KeyringExt as _};
    /// let ring = Keyring::from_file("/etc/duomcp/state-keys")?;
    /// # let _ = ring;
    /// # Ok::<(), duomcp::server::KeyringError>(())
    /// ```
    fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, KeyringError>;
}

impl KeyringExt for Keyring {
    fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, KeyringError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| KeyringError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Keyring::parse(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_names_its_path() {
        let err = Keyring::from_file("/nonexistent/duomcp-keyring").unwrap_err();
        assert!(matches!(err, KeyringError::Io { .. }));
        assert!(
            err.to_string()
                .starts_with("keyring /nonexistent/duomcp-keyring: "),
            "{err}"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn random_keys_differ_and_seal_what_they_open() {
        let a = SealingKey::random();
        assert_ne!(a.id(), SealingKey::random().id());
        assert_eq!(Keyring::from(a.clone()).newest_id(), a.id());
    }
}
