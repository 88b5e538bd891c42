//! Finding out which era the server speaks: the [`EraChoice`] decides which handshake runs;
//! the era adapters say what each handshake sends and what its answers mean
//! (`era::legacy::accept_initialize`, `era::modern::accept_discover`), and the engine runs
//! them (`engine/handshake.rs`).
//!
//! `Auto` probes with `server/discover` carrying the preferred 2026-07-28 version: a
//! `DiscoverResult` means modern; `-32022` (unsupported version) means modern too, and the
//! probe is retried with a version from `data.supported`; `-32020` and `-32021` (header
//! mismatch, missing capability) come only from modern servers and end the attempt, as does an
//! error the transport recognised as modern (HTTP: a `404` carrying `-32601`); any other error,
//! a result that is not a `DiscoverResult`, or no answer within the probe timeout means legacy,
//! so `initialize` follows. The fallback does not depend on any one error code.

use super::engine::Inner;
use super::era::modern::ProbeFailure;
use super::error::ClientError;
use super::EraChoice;
use std::sync::Arc;

pub(crate) async fn connect(inner: &Arc<Inner>) -> Result<(), ClientError> {
    match inner.config.era {
        EraChoice::Legacy => inner.initialize().await,
        EraChoice::Modern => inner.discover(false).await.map_err(|f| match f {
            ProbeFailure::Fatal(e) => e,
            ProbeFailure::Legacy(why) => {
                ClientError::Protocol(format!("the server does not speak 2026-07-28: {why}"))
            }
        }),
        EraChoice::Auto => match inner.discover(true).await {
            Ok(()) => Ok(()),
            Err(ProbeFailure::Fatal(e)) => Err(e),
            Err(ProbeFailure::Legacy(why)) => {
                tracing::debug!("not a 2026-07-28 server ({why}); trying 2025-11-25");
                inner.initialize().await
            }
        },
    }
}
