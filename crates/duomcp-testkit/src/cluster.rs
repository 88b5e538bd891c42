//! Real parts for tests across replicas: a `redis-server` on a free loopback port with no
//! persistence ([`RedisServer`]), `duomcp serve --http 127.0.0.1:0 --redis URL` replicas
//! ([`Replica`]) and HAProxy round-robin in front of them ([`Balancer`]).
//!
//! Starting fails (an `Err` naming the binary, which the test turns into a failure) when a
//! binary is missing: these tests never skip. Every process is killed when its handle drops.
//!
//! ```no_run
//! use duomcp_testkit::cluster::{Balancer, RedisServer, Replica};
//! let redis = RedisServer::start().unwrap();
//! let a = Replica::start("target/debug/duomcp", &redis.url(), &[]).unwrap();
//! let lb = Balancer::start(&[a.addr()]).unwrap();
//! println!("through the balancer: http://{}/mcp", lb.addr());
//! ```

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a part may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A free loopback port (bound, then released: another process could take it meanwhile, which
/// the start then reports).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn spawn(cmd: &mut Command, what: &str) -> std::io::Result<Child> {
    cmd.spawn().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot start {what} ({e}); install it (Debian: see PACKAGES in .ci/run)"),
        )
    })
}

/// A child process killed (and reaped) on drop.
struct Proc(Option<Child>);

impl Proc {
    fn kill(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn pid(&self) -> Option<u32> {
        self.0.as_ref().map(Child::id)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A directory under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> std::io::Result<TempDir> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("duomcp-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) -> std::io::Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("{what} did not start within {START_TIMEOUT:?}"),
    ))
}

/// Sends one command to Redis at `addr` (RESP) and returns its reply as text: bulk strings as
/// they are, integers and simple strings without their type byte, errors as `ERR …`. Enough
/// for `PING`, `INFO commandstats`, `CONFIG`, `DBSIZE`, `KEYS` in tests.
pub fn redis_command(addr: SocketAddr, args: &[&str]) -> std::io::Result<String> {
    let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    tcp.write_all(req.as_bytes())?;
    let mut r = BufReader::new(tcp);
    read_reply(&mut r)
}

fn read_reply(r: &mut impl BufRead) -> std::io::Result<String> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let line = line.trim_end_matches("\r\n");
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "bad RESP reply");
    match line.as_bytes().first() {
        Some(b'+') | Some(b':') => Ok(line[1..].to_owned()),
        Some(b'-') => Ok(line[1..].to_owned()),
        Some(b'$') => {
            let n: i64 = line[1..].parse().map_err(|_| bad())?;
            if n < 0 {
                return Ok(String::new());
            }
            let mut buf = vec![0; n as usize + 2];
            r.read_exact(&mut buf)?;
            buf.truncate(n as usize);
            String::from_utf8(buf).map_err(|_| bad())
        }
        Some(b'*') => {
            let n: i64 = line[1..].parse().map_err(|_| bad())?;
            let mut items = Vec::new();
            for _ in 0..n.max(0) {
                items.push(read_reply(r)?);
            }
            Ok(items.join("\n"))
        }
        _ => Err(bad()),
    }
}

/// `redis-server` on a free loopback port, no persistence (no RDB, no AOF), killed on drop.
pub struct RedisServer {
    proc: Proc,
    port: u16,
    _dir: TempDir,
}

impl RedisServer {
    /// Starts it and waits until it answers `PING`.
    pub fn start() -> std::io::Result<RedisServer> {
        let port = free_port()?;
        let dir = TempDir::new("redis")?;
        let mut server = RedisServer {
            proc: Proc(None),
            port,
            _dir: dir,
        };
        server.restart()?;
        Ok(server)
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Kills it (`SIGKILL`): Redis is then unavailable until [`restart`](Self::restart).
    pub fn stop(&mut self) {
        self.proc.kill();
    }

    /// Starts it again on the same port (empty: nothing was persisted), after a
    /// [`stop`](Self::stop).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.proc.kill();
        let child = spawn(
            Command::new("redis-server")
                .args(["--port", &self.port.to_string()])
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(["--dir", &self._dir.0.display().to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            "redis-server",
        )?;
        self.proc = Proc(Some(child));
        let addr = self.addr();
        wait_until("redis-server", || {
            redis_command(addr, &["PING"]).is_ok_and(|r| r == "PONG")
        })
    }

    /// One command (see [`redis_command`]).
    pub fn command(&self, args: &[&str]) -> std::io::Result<String> {
        redis_command(self.addr(), args)
    }

    /// Calls per command name from `INFO commandstats` (`cmdstat_get:calls=3,…` → `get: 3`).
    pub fn command_calls(&self) -> std::io::Result<std::collections::BTreeMap<String, u64>> {
        let info = self.command(&["INFO", "commandstats"])?;
        Ok(info
            .lines()
            .filter_map(|l| {
                let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = rest
                    .strip_prefix("calls=")?
                    .split(',')
                    .next()?
                    .parse()
                    .ok()?;
                Some((name.to_owned(), calls))
            })
            .collect())
    }
}

impl RedisServer {
    /// Waits (up to 10 s) until `n` clients are subscribed to the replicas' bus channel
    /// (`duomcp:bus`): each replica's bus subscribes in the background after it started.
    pub fn wait_bus_subscribers(&self, n: usize) -> std::io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.command(&["PUBSUB", "NUMSUB", "duomcp:bus"])?;
            if out.lines().any(|l| l.trim() == n.to_string()) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("{n} buses not subscribed within 10 s: {out}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `n` replicas of `bin` on `redis` (no extra arguments), their buses subscribed.
pub fn replicas(
    bin: impl AsRef<Path>,
    redis: &RedisServer,
    n: usize,
) -> std::io::Result<Vec<Replica>> {
    replicas_with(bin, redis, n, &[])
}

/// As [`replicas`], each started with `extra` arguments too (e.g. `--limit KEY=VALUE`).
pub fn replicas_with(
    bin: impl AsRef<Path>,
    redis: &RedisServer,
    n: usize,
    extra: &[&str],
) -> std::io::Result<Vec<Replica>> {
    let started = (0..n)
        .map(|_| Replica::start(bin.as_ref(), &redis.url(), extra))
        .collect::<std::io::Result<Vec<_>>>()?;
    redis.wait_bus_subscribers(n)?;
    Ok(started)
}

/// A `duomcp serve --http 127.0.0.1:0` child (with `--redis URL` when given one), killed on
/// drop.
pub struct Replica {
    proc: Proc,
    addr: SocketAddr,
}

impl Replica {
    /// Starts `bin serve --http 127.0.0.1:0 --redis redis_url` plus `extra` arguments and waits
    /// for its address. An empty `redis_url` starts it without `--redis`.
    pub fn start(bin: impl AsRef<Path>, redis_url: &str, extra: &[&str]) -> std::io::Result<Self> {
        let bin = bin.as_ref();
        let mut cmd = Command::new(bin);
        cmd.args(["serve", "--http", "127.0.0.1:0"]);
        if !redis_url.is_empty() {
            cmd.args(["--redis", redis_url]);
        }
        cmd.args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = spawn(&mut cmd, &bin.display().to_string())?;
        let stderr = child.stderr.take();
        let proc = Proc(Some(child));
        let (tx, rx) = mpsc::channel();
        if let Some(stderr) = stderr {
            std::thread::spawn(move || {
                let mut said = false;
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if !said {
                        if let Some(rest) = line.split("http://").nth(1) {
                            let addr = rest.split('/').next().and_then(|a| a.parse().ok());
                            said = true;
                            let _ = tx.send(addr.ok_or(line));
                        } else if line.starts_with("duomcp:") {
                            said = true;
                            let _ = tx.send(Err(line));
                        }
                    }
                    // Keep reading so the child never blocks on a full pipe.
                }
            });
        }
        let addr = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(addr)) => addr,
            Ok(Err(line)) => {
                return Err(std::io::Error::other(format!("duomcp serve: {line}")));
            }
            Err(_) => {
                return Err(std::io::Error::other(
                    "duomcp serve did not say its address",
                ))
            }
        };
        Ok(Replica { proc, addr })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.proc.pid()
    }

    /// `kill -9`: the replica dies mid-whatever it was doing.
    pub fn kill(&mut self) {
        self.proc.kill();
    }
}

/// HAProxy on a free loopback port, round robin over `backends`, no stickiness, timeouts fit
/// for SSE; killed on drop.
pub struct Balancer {
    proc: Proc,
    addr: SocketAddr,
    _dir: TempDir,
}

impl Balancer {
    /// Starts `haproxy -db -f CONFIG` (the same settings as `deploy/haproxy.cfg`) and waits
    /// until it accepts connections.
    pub fn start(backends: &[SocketAddr]) -> std::io::Result<Self> {
        let port = free_port()?;
        let dir = TempDir::new("haproxy")?;
        let mut cfg = format!(
            "global\n  maxconn 4096\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 1h\n  timeout server 1h\n  \
             timeout http-request 30s\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n"
        );
        for (i, b) in backends.iter().enumerate() {
            cfg.push_str(&format!("  server r{i} {b}\n"));
        }
        let path = dir.0.join("haproxy.cfg");
        std::fs::write(&path, cfg)?;
        let child = spawn(
            Command::new("haproxy")
                .arg("-db")
                .arg("-f")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            "haproxy",
        )?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let balancer = Balancer {
            proc: Proc(Some(child)),
            addr,
            _dir: dir,
        };
        wait_until("haproxy", || {
            TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        })?;
        Ok(balancer)
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.proc.pid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_replies_are_read() {
        let mut r = std::io::Cursor::new(b"*2\r\n$3\r\nabc\r\n:5\r\n".to_vec());
        assert_eq!(read_reply(&mut r).unwrap(), "abc\n5");
        let mut r = std::io::Cursor::new(b"$-1\r\n".to_vec());
        assert_eq!(read_reply(&mut r).unwrap(), "");
        let mut r = std::io::Cursor::new(b"?\r\n".to_vec());
        assert!(read_reply(&mut r).is_err());
    }

    #[test]
    fn redis_server_starts_answers_and_stops() {
        let mut redis = RedisServer::start().expect("redis-server (a test needing it fails)");
        assert_eq!(redis.command(&["SET", "k", "v"]).unwrap(), "OK");
        assert_eq!(redis.command(&["GET", "k"]).unwrap(), "v");
        assert!(redis.command_calls().unwrap()["set"] >= 1);
        redis.stop();
        assert!(redis.command(&["PING"]).is_err());
        redis.restart().unwrap();
        // Nothing persisted.
        assert_eq!(redis.command(&["GET", "k"]).unwrap(), "");
    }
}
