//! A scripted client for transcript tests: talks JSON-RPC to a server (in-process over an
//! in-memory connection, or a spawned `duomcp serve` over newline-delimited stdio) and validates
//! every message the server sends against the official JSON schema of the revision under test
//! (and its MCP Apps parts against the extension's published schema).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(dead_code)]

use duomcp::transport::memory::Connection;
use duomcp_testkit::WireValidator;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

pub const LEGACY: &str = "2025-11-25";
pub const MODERN: &str = "2026-07-28";

/// The client's end of the wire.
enum End {
    /// Bytes, one message a line: a child's stdio, or a pipe for the tests of that framing.
    Lines {
        write: Box<dyn AsyncWrite + Unpin + Send>,
        lines: tokio::io::Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>,
    },
    /// Whole messages: an in-memory connection (`None` once the input is closed).
    Messages {
        sender: Option<mpsc::Sender<Vec<u8>>>,
        receiver: mpsc::Receiver<Vec<u8>>,
    },
}

pub struct Wire {
    end: End,
    validator: WireValidator,
    methods: HashMap<String, String>,
    next_id: i64,
    /// Notifications and server requests received while waiting for responses.
    pub side: Vec<Value>,
    _guard: Option<tokio::process::Child>,
}

impl Wire {
    /// The reference server in-process.
    pub fn reference(revision: &str) -> Self {
        Self::in_process(duomcp_cli::reference::server(), revision)
    }

    /// Any server in-process, over an in-memory connection (whole messages, no framing).
    pub fn in_process(server: duomcp::server::Server, revision: &str) -> Self {
        let (client, server_end) = Connection::memory();
        tokio::spawn(server.serve_memory(server_end));
        let end = End::Messages {
            sender: Some(client.sender),
            receiver: client.receiver,
        };
        Self::over(end, revision, None)
    }

    /// Any server in-process over a byte pipe with the stdio framing (one message a line),
    /// for the tests of that framing itself ([`Wire::send_raw`]).
    pub fn in_process_lines(server: duomcp::server::Server, revision: &str) -> Self {
        let (client, server_end) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server_end);
        tokio::spawn(server.serve_connection(read, write));
        let (client_read, client_write) = tokio::io::split(client);
        let end = End::Lines {
            write: Box::new(client_write),
            lines: BufReader::new(Box::new(client_read) as Box<dyn AsyncRead + Unpin + Send>)
                .lines(),
        };
        Self::over(end, revision, None)
    }

    /// The real `duomcp serve` binary over its stdin/stdout.
    pub fn spawn_binary(revision: &str) -> Self {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
            .arg("serve")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn duomcp serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let end = End::Lines {
            write: Box::new(stdin),
            lines: BufReader::new(Box::new(stdout) as Box<dyn AsyncRead + Unpin + Send>).lines(),
        };
        Self::over(end, revision, Some(child))
    }

    fn over(end: End, revision: &str, guard: Option<tokio::process::Child>) -> Self {
        Wire {
            end,
            validator: WireValidator::for_revision(revision),
            methods: HashMap::new(),
            next_id: 0,
            side: Vec::new(),
            _guard: guard,
        }
    }

    /// Sends raw bytes (a line terminator is NOT added). Only on a byte wire
    /// ([`Wire::in_process_lines`], [`Wire::spawn_binary`]): an in-memory connection carries
    /// whole messages, not bytes.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let End::Lines { write, .. } = &mut self.end else {
            panic!("send_raw needs a byte wire (Wire::in_process_lines or Wire::spawn_binary)");
        };
        write.write_all(bytes).await.expect("write");
        write.flush().await.expect("flush");
    }

    /// Sends one message; requests are remembered so their responses can be schema-checked.
    pub async fn send(&mut self, msg: Value) {
        if let (Some(id), Some(method)) = (msg.get("id"), msg.get("method").and_then(Value::as_str))
        {
            self.methods.insert(id.to_string(), method.to_owned());
        }
        if let Err(e) = duomcp_testkit::apps::validate_client_message(&msg) {
            panic!("the test sends a message the MCP Apps schema refuses: {e}\n{msg}");
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        match &mut self.end {
            End::Lines { .. } => {
                bytes.push(b'\n');
                self.send_raw(&bytes).await;
            }
            End::Messages { sender, .. } => {
                let sender = sender.as_ref().expect("the input is open");
                sender.send(bytes).await.expect("write");
            }
        }
    }

    /// Closes the client's side of the input (the server sees EOF).
    pub async fn close_input(&mut self) {
        match &mut self.end {
            End::Lines { write, .. } => {
                write.shutdown().await.expect("shutdown");
                // Dropping the writer closes a child's stdin (shutdown alone does not).
                *write = Box::new(tokio::io::sink());
            }
            End::Messages { sender, .. } => *sender = None,
        }
    }

    /// The next message from the server (schema-validated), or `None` at EOF.
    pub async fn recv_opt(&mut self) -> Option<Value> {
        // Generous: a gateway test starts several upstream servers (debug builds) at once,
        // beside the other tests; a hang still ends the test.
        let next = async {
            match &mut self.end {
                End::Lines { lines, .. } => lines.next_line().await.expect("read"),
                End::Messages { receiver, .. } => receiver
                    .recv()
                    .await
                    .map(|m| String::from_utf8(m).expect("read")),
            }
        };
        let line = tokio::time::timeout(Duration::from_secs(30), next)
            .await
            .expect("timed out waiting for the server")?;
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("server sent invalid JSON ({e}): {line}"));
        let method = msg
            .get("id")
            .and_then(|id| self.methods.get(&id.to_string()))
            .cloned();
        let method = if msg.get("method").is_some() {
            None
        } else {
            method
        };
        if let Err(e) = self
            .validator
            .validate_server_message(&msg, method.as_deref())
        {
            panic!("server message violates the schema: {e}\n{msg}");
        }
        if let Err(e) = duomcp_testkit::apps::validate_server_message(&msg, method.as_deref()) {
            panic!("server message violates the MCP Apps schema: {e}\n{msg}");
        }
        Some(msg)
    }

    /// The next message from the server.
    pub async fn recv(&mut self) -> Value {
        self.recv_opt().await.expect("server closed the connection")
    }

    /// Sends a request and returns its response; other messages are kept in `side`.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        self.response_to(&id).await
    }

    /// Waits for the response with `id`, or takes it from `side` when it came already (while
    /// waiting for another one: responses to requests in flight together come in any order).
    pub async fn response_to(&mut self, id: &Value) -> Value {
        let is_it = |msg: &Value| msg.get("id") == Some(id) && msg.get("method").is_none();
        if let Some(i) = self.side.iter().position(is_it) {
            return self.side.remove(i);
        }
        loop {
            let msg = self.recv().await;
            if is_it(&msg) {
                return msg;
            }
            self.side.push(msg);
        }
    }

    /// The `result` of a request that must succeed.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params).await;
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    /// The `error` of a request that must fail.
    pub async fn err(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params).await;
        r.get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should have failed: {r}"))
    }

    /// Legacy handshake with the given client capabilities.
    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        let r = self
            .ok(
                "initialize",
                json!({ "protocolVersion": LEGACY, "capabilities": capabilities, "clientInfo": { "name": "transcript", "version": "1" } }),
            )
            .await;
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        r
    }
}

/// The `_meta` of a modern request.
pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "transcript", "version": "1" }
    })
}

/// Modern params: `params` plus `_meta`.
pub fn modern(mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = meta(capabilities);
    params
}

/// A fresh directory under the system temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `duomcp-test-{tag}-{pid}-{nanos}`: unique per test run.
    pub fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path =
            std::env::temp_dir().join(format!("duomcp-test-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// Writes `content` to `rel` inside the directory, creating parent folders.
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// The path as a command-line argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Records the `Authorization` header of every HTTP request a server receives (`<none>` when
/// a request has none): middleware for an upstream behind the gateway, to assert on what it
/// was sent.
#[derive(Clone)]
pub struct RecordAuth<S> {
    pub inner: S,
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl<S, B> duomcp::server::middleware::Service<hyper::Request<B>> for RecordAuth<S>
where
    S: duomcp::server::middleware::Service<hyper::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: hyper::Request<B>) -> S::Future {
        let auth = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("<none>")
            .to_owned();
        self.seen.lock().unwrap().push(auth);
        self.inner.call(req)
    }
}

/// `GET path` over a fresh HTTP/1.1 connection to `addr` (`host:port`), with `headers` (whole
/// header lines, each ending in `\r\n`); the raw response, status line to body.
pub async fn http_get(addr: &str, path: &str, headers: &str) -> String {
    use tokio::io::AsyncReadExt;
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).await.unwrap();
    response
}

/// The pids of the processes whose command line contains `marker` (e.g. a directory on an
/// upstream's command line), sorted.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmd)
                .contains(marker)
                .then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The names of the tools `client` lists (every page), sorted.
pub async fn tool_names(client: &duomcp::client::Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}
