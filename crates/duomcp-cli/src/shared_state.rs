//! `duomcp serve --http ADDR --redis URL --state-key-file PATH`: the state several replicas
//! behind one load balancer share.
//!
//! `--state-key-file` is the `requestState` keyring (one base64 key of at least 32 random bytes
//! per line, newest first). Without it, `--redis` makes the replicas share one key kept in
//! Redis. `--redis` also keeps legacy sessions, their SSE event log and tasks there, so a session
//! minted by one replica is served by every replica. `--redis redis+cluster://HOST:PORT,…`
//! names a Redis Cluster by its seed nodes (`duomcp::redis::RedisConfig::url`). The `--limit events-*` keys size the
//! in-memory log only; the Redis log has the bounds of `RedisEventStore::new`.

use duomcp::server::{Keyring, KeyringExt as _, Server};
use duomcp::transport::http::HttpConfig;
use std::path::Path;
use std::time::Duration;

/// Installs the shared stores in `config` and the keyring in `server`.
pub async fn apply(
    server: &Server,
    config: &mut HttpConfig,
    redis_url: Option<&str>,
    key_file: Option<&Path>,
) -> Result<(), String> {
    if let Some(path) = key_file {
        let ring = Keyring::from_file(path).map_err(|e| e.to_string())?;
        server.keyring().replace(&ring);
    }
    let Some(url) = redis_url else {
        return Ok(());
    };
    let redis = duomcp::redis::Redis::connect(url).map_err(|e| e.to_string())?;
    if key_file.is_none() {
        // The replicas' shared key: Redis must answer once at start (a few tries, bounded).
        let mut tries = 0;
        let ring = loop {
            match redis.shared_keyring().await {
                Ok(ring) => break ring,
                Err(e) if tries >= 10 => return Err(format!("{e} (--redis {url})")),
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            }
        };
        server.keyring().replace(&ring);
    }
    *config = std::mem::take(config).redis(&redis);
    Ok(())
}
