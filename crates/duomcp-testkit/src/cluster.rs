//! Real parts for tests across replicas: a `redis-server` on a free loopback port with no
//! persistence ([`RedisServer`]), a Redis Cluster of six of them ([`RedisCluster`]), `duomcp serve --http 127.0.0.1:0 --redis URL` replicas
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

    /// Sends `SIGTERM` (through `kill`, the workspace forbidding `unsafe`) and waits up to
    /// `within` for the exit; killed after that.
    fn terminate(&mut self, within: Duration) -> std::io::Result<std::process::ExitStatus> {
        let Some(mut child) = self.0.take() else {
            return Err(std::io::Error::other("not running"));
        };
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        if !sent.is_ok_and(|s| s.success()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("kill -TERM failed"));
        }
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no exit within {within:?} of SIGTERM; killed"),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
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

/// One `GET path` (HTTP/1.0: the body ends with the connection) to `addr`: the response's
/// status and body (de-chunked).
fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    use std::io::Read;
    let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    tcp.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())?;
    let mut text = String::new();
    tcp.read_to_string(&mut text)?;
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not HTTP"))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    // HAProxy's statistics page comes chunked, even to HTTP/1.0.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        crate::raw_http::dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

fn http_get_status(addr: SocketAddr, path: &str) -> std::io::Result<u16> {
    http_get(addr, path).map(|(status, _)| status)
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

/// A Redis Cluster on loopback: three masters with one replica each (six `redis-server`
/// processes with `--cluster-enabled yes`, no persistence, each on a free port with a free
/// cluster-bus port), joined by `redis-cli --cluster create … --cluster-replicas 1`. A node
/// not heard from for 1 s is taken as failed (`cluster-node-timeout`), so a killed master's
/// replica is promoted within a few seconds. Every process is killed on drop.
pub struct RedisCluster {
    nodes: Vec<ClusterNode>,
    _dir: TempDir,
}

struct ClusterNode {
    proc: Proc,
    port: u16,
}

impl RedisCluster {
    /// Starts the six nodes, makes the cluster, and waits (up to 20 s) until every node says
    /// `cluster_state:ok` and every replica is in sync with its master.
    pub fn start() -> std::io::Result<RedisCluster> {
        let dir = TempDir::new("redis-cluster")?;
        let mut nodes = Vec::new();
        for i in 0..6 {
            let (port, bus) = (free_port()?, free_port()?);
            let node_dir = dir.0.join(format!("node-{i}"));
            std::fs::create_dir_all(&node_dir)?;
            let child = spawn(
                Command::new("redis-server")
                    .args(["--port", &port.to_string()])
                    .args(["--cluster-port", &bus.to_string()])
                    .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                    .args(["--cluster-enabled", "yes"])
                    .args(["--cluster-config-file", "nodes.conf"])
                    .args(["--cluster-node-timeout", "1000"])
                    .args(["--cluster-replica-validity-factor", "0"])
                    .args(["--dir", &node_dir.display().to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
                "redis-server",
            )?;
            nodes.push(ClusterNode {
                proc: Proc(Some(child)),
                port,
            });
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            wait_until("redis-server (cluster node)", || {
                redis_command(addr, &["PING"]).is_ok_and(|r| r == "PONG")
            })?;
        }
        let cluster = RedisCluster { nodes, _dir: dir };
        let mut create = Command::new("redis-cli");
        create.args(["--cluster", "create"]);
        for n in &cluster.nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out =
            spawn(&mut create, "redis-cli (Debian package redis-tools)")?.wait_with_output()?;
        if !out.status.success() {
            return Err(std::io::Error::other(format!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        wait_until("the Redis Cluster", || cluster.healthy())?;
        Ok(cluster)
    }

    /// Whether every live node says `cluster_state:ok`, three masters serve the slots and
    /// every live replica's link to its master is up.
    fn healthy(&self) -> bool {
        let mut masters = 0;
        for n in self.nodes.iter().filter(|n| n.proc.0.is_some()) {
            let addr = n.addr();
            let Ok(info) = redis_command(addr, &["CLUSTER", "INFO"]) else {
                return false;
            };
            if !info.contains("cluster_state:ok") {
                return false;
            }
            let Ok(repl) = redis_command(addr, &["INFO", "replication"]) else {
                return false;
            };
            if repl.contains("role:master") {
                masters += 1;
            } else if !repl.contains("master_link_status:up") {
                return false;
            }
        }
        masters == 3
    }

    /// Waits (up to 20 s) until the cluster is whole again (after [`kill`](Self::kill): the
    /// killed master's replica promoted; the killed node stays dead).
    pub fn wait_healthy(&self) -> std::io::Result<()> {
        wait_until("the Redis Cluster (healthy again)", || self.healthy())
    }

    /// `redis+cluster://127.0.0.1:P1,…` naming every node as a seed.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", seeds.join(","))
    }

    /// The ports of its nodes (index `i` is node `i`).
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// One command on node `i` (see [`redis_command`]).
    pub fn command_on(&self, i: usize, args: &[&str]) -> std::io::Result<String> {
        let node = self
            .nodes
            .get(i)
            .ok_or_else(|| std::io::Error::other(format!("no node {i}")))?;
        redis_command(node.addr(), args)
    }

    /// One command on the master serving `key`'s slot now (a key, or a shard channel).
    pub fn command_for(&self, key: &str, args: &[&str]) -> std::io::Result<String> {
        self.command_on(self.master_of(key)?, args)
    }

    /// The node that is the master of `key`'s slot now, as the live nodes see it.
    pub fn master_of(&self, key: &str) -> std::io::Result<usize> {
        let bad = |why: String| std::io::Error::other(why);
        let live = self
            .nodes
            .iter()
            .position(|n| n.proc.0.is_some())
            .ok_or_else(|| bad("no live node".into()))?;
        let slot: u16 = self
            .command_on(live, &["CLUSTER", "KEYSLOT", key])?
            .trim()
            .parse()
            .map_err(|_| bad("CLUSTER KEYSLOT: not a number".into()))?;
        let nodes = self.command_on(live, &["CLUSTER", "NODES"])?;
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(addr), Some(flags)) = (fields.get(1), fields.get(2)) else {
                continue;
            };
            if !flags.contains("master") || flags.contains("fail") {
                continue;
            }
            let serves = fields.iter().skip(8).any(|range| {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                match (lo.parse::<u16>(), hi.parse::<u16>()) {
                    (Ok(lo), Ok(hi)) => (lo..=hi).contains(&slot),
                    _ => false,
                }
            });
            let port = addr
                .split('@')
                .next()
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse::<u16>().ok());
            if let (true, Some(port)) = (serves, port) {
                return self
                    .nodes
                    .iter()
                    .position(|n| n.port == port)
                    .ok_or_else(|| bad(format!("port {port} is not one of ours")));
            }
        }
        Err(bad(format!("no live master serves slot {slot}")))
    }

    /// Kills node `i` with `SIGKILL` (`kill -9`); it stays dead.
    pub fn kill(&mut self, i: usize) {
        if let Some(n) = self.nodes.get_mut(i) {
            n.proc.kill();
        }
    }

    /// Waits (up to 10 s) until `n` clients are subscribed to the shard channel `channel`
    /// (`PUBSUB SHARDNUMSUB` on its slot's master).
    pub fn wait_shard_subscribers(&self, channel: &str, n: usize) -> std::io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.command_for(channel, &["PUBSUB", "SHARDNUMSUB", channel]);
            if let Ok(out) = &out {
                if out.lines().nth(1).map(str::trim) == Some(n.to_string().as_str()) {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("{n} shard subscribers of {channel} not there within 10 s: {out:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl ClusterNode {
    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
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
    /// What started it, for [`restart`](Self::restart).
    bin: PathBuf,
    redis_url: String,
    extra: Vec<String>,
}

impl Replica {
    /// Starts `bin serve --http 127.0.0.1:0 --redis redis_url` plus `extra` arguments and waits
    /// for its address. An empty `redis_url` starts it without `--redis`.
    pub fn start(bin: impl AsRef<Path>, redis_url: &str, extra: &[&str]) -> std::io::Result<Self> {
        let listen = SocketAddr::from(([127, 0, 0, 1], 0));
        let (proc, addr) = Self::spawn_on(bin.as_ref(), listen, redis_url, extra)?;
        Ok(Replica {
            proc,
            addr,
            bin: bin.as_ref().to_owned(),
            redis_url: redis_url.to_owned(),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        })
    }

    /// Stops it as an orchestrator does: `SIGTERM`, then waits up to `within` for it to exit
    /// (after its drain and graceful shutdown) and returns its exit status; killed and an
    /// error when it takes longer.
    pub fn terminate(&mut self, within: Duration) -> std::io::Result<std::process::ExitStatus> {
        self.proc.terminate(within)
    }

    /// Starts it again, with the same arguments, on the same address (after
    /// [`terminate`](Self::terminate) or [`kill`](Self::kill)); a running one is killed first.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.proc.kill();
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        let (proc, addr) = Self::spawn_on(&self.bin, self.addr, &self.redis_url, &extra)?;
        self.proc = proc;
        self.addr = addr;
        Ok(())
    }

    /// `GET /readyz` (the readiness probe of `duomcp serve --http`): its status, or an error
    /// when nothing answers.
    pub fn readiness(&self) -> std::io::Result<u16> {
        http_get_status(self.addr, "/readyz")
    }

    fn spawn_on(
        bin: &Path,
        listen: SocketAddr,
        redis_url: &str,
        extra: &[&str],
    ) -> std::io::Result<(Proc, SocketAddr)> {
        let mut cmd = Command::new(bin);
        cmd.args(["serve", "--http", &listen.to_string()]);
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
        Ok((proc, addr))
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
/// for SSE, health checks on `duomcp serve`'s readiness probe and retries of a request that
/// meets a closing replica (as `deploy/haproxy.cfg`, with checks 4x as frequent: every 250 ms,
/// every 100 ms once one failed; out after 2 failed, in after 2 good); killed on drop.
pub struct Balancer {
    proc: Proc,
    addr: SocketAddr,
    /// Its statistics page (`/stats;csv`), on a port of its own.
    stats: SocketAddr,
    _dir: TempDir,
}

impl Balancer {
    /// Starts `haproxy -db -f CONFIG` (the same settings as `deploy/haproxy.cfg`, checks
    /// faster) and waits until it accepts connections. Server `i` is named `r{i}`.
    pub fn start(backends: &[SocketAddr]) -> std::io::Result<Self> {
        let port = free_port()?;
        let stats_port = free_port()?;
        let dir = TempDir::new("haproxy")?;
        let mut cfg = format!(
            "global\n  maxconn 4096\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 1h\n  timeout server 1h\n  \
             timeout http-request 30s\n  option http-no-delay\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             listen stats\n  bind 127.0.0.1:{stats_port}\n  stats enable\n  stats uri /stats\n\
             backend replicas\n  balance roundrobin\n\
             \x20 option httpchk GET /readyz\n  http-check expect status 200\n  timeout check 1s\n\
             \x20 default-server check inter 250ms fastinter 100ms fall 2 rise 2\n\
             \x20 retries 3\n  option redispatch 1\n  retry-on conn-failure empty-response\n"
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
            stats: SocketAddr::from(([127, 0, 0, 1], stats_port)),
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

    /// The status HAProxy gives each server now, by name (`r0` → `UP`, `DOWN`, `UP 1/2`, …),
    /// from its statistics page.
    pub fn server_states(&self) -> std::io::Result<std::collections::BTreeMap<String, String>> {
        let (status, csv) = http_get(self.stats, "/stats;csv")?;
        if status != 200 {
            return Err(std::io::Error::other(format!("stats page: {status}")));
        }
        // `# pxname,svname,…,status,…`: the columns named by the header line.
        let mut lines = csv.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let col = |name: &str| header.iter().position(|h| *h == name);
        let (Some(px), Some(sv), Some(st)) = (col("pxname"), col("svname"), col("status")) else {
            let start: String = csv.chars().take(200).collect();
            return Err(std::io::Error::other(format!(
                "stats page: no pxname/svname/status: {start}"
            )));
        };
        Ok(lines
            .filter_map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                let (name, state) = (f.get(sv)?, f.get(st)?);
                (f.get(px) == Some(&"replicas") && *name != "BACKEND")
                    .then(|| ((*name).to_owned(), (*state).to_owned()))
            })
            .collect())
    }

    /// Waits up to `within` until server `name` (`r0`, …) has status `state` (`UP`, `DOWN`).
    pub fn wait_server(&self, name: &str, state: &str, within: Duration) -> std::io::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let states = self.server_states()?;
            if states.get(name).is_some_and(|s| s == state) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("{name} not {state} within {within:?}: {states:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
