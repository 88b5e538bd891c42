//! A server running as a child process, spoken to over its stdin and stdout.

use super::stream::{Core, EofReason};
use super::{BoxFuture, Outgoing, RequestStream, Transport, TransportError, TransportEvent};
use crate::util::lock;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::{mpsc, watch};

/// How a server process is supervised.
///
/// ```
/// use duomcp::client::transport::ProcessOptions;
/// use std::time::Duration;
/// let opts = ProcessOptions { max_restarts: 3, ..ProcessOptions::default() };
/// assert_eq!(opts.shutdown_grace, Duration::from_secs(2));
/// // Restarts wait 100 ms, 200 ms, 400 ms…, at most 30 s.
/// assert_eq!(opts.restart_delay(1), Duration::from_millis(100));
/// assert_eq!(opts.restart_delay(3), Duration::from_millis(400));
/// assert_eq!(opts.restart_delay(30), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// On [`close`](Transport::close): how long to wait for the process to exit after stdin is
    /// closed, and again after SIGTERM, before SIGKILL (default 2 s).
    pub shutdown_grace: Duration,
    /// How many times in a row the process is restarted after it exits on its own (default 0:
    /// never); a process that ran for [`RESTART_COUNT_RESET`] or longer before it exited
    /// starts the count again. Requests in flight at the exit fail with a "closed" error at
    /// once, as do requests sent before the new process runs; the client runtime redoes the
    /// `initialize` handshake in the 2025-11-25 era.
    pub max_restarts: u32,
    /// The back-off before the first restart in a row (default 100 ms); it doubles for each
    /// further one, up to [`MAX_RESTART_BACKOFF`] ([`restart_delay`](Self::restart_delay)).
    pub restart_backoff: Duration,
    /// Whether errors quote a line the server wrote to stdout that is not a JSON-RPC message
    /// (default `true`: the likely reason a call got no answer, e.g. a server logging to
    /// stdout). The `warn` log quotes it either way. Set it to `false` where the errors reach
    /// other parties than the server's operator (a gateway's clients): such a line belongs to
    /// no request, so it must not reach whichever client's call failed next.
    pub quote_stray_lines: bool,
}

/// The longest wait before a restart of a server process ([`ProcessOptions::restart_backoff`]).
pub const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(30);

/// A server process that ran this long before it exited is restarted as a first restart
/// (back-off and [`ProcessOptions::max_restarts`] count from the start again).
pub const RESTART_COUNT_RESET: Duration = Duration::from_secs(60);

impl ProcessOptions {
    /// The wait before restart number `n` in a row (1 for the first): `restart_backoff`
    /// doubled `n - 1` times, at most [`MAX_RESTART_BACKOFF`].
    pub fn restart_delay(&self, n: u32) -> Duration {
        let doublings = n.saturating_sub(1).min(31);
        self.restart_backoff
            .saturating_mul(1u32 << doublings)
            .min(MAX_RESTART_BACKOFF)
    }
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            shutdown_grace: Duration::from_secs(2),
            max_restarts: 0,
            restart_backoff: Duration::from_millis(100),
            quote_stray_lines: true,
        }
    }
}

/// One running child.
struct Instance {
    core: Core,
    pid: Option<u32>,
    exit: watch::Receiver<Option<String>>,
    kill: mpsc::Sender<()>,
}

impl Instance {
    /// Waits up to `limit` for the process to exit; `true` if it did.
    async fn wait_exit(&self, limit: Duration) -> bool {
        let mut exit = self.exit.clone();
        let exited = matches!(
            tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await,
            Ok(Ok(_))
        );
        exited
    }
}

struct Inner {
    command: Mutex<Command>,
    name: String,
    options: ProcessOptions,
    current: Mutex<Option<Arc<Instance>>>,
    events: mpsc::Sender<TransportEvent>,
    closing: AtomicBool,
    restarts: AtomicU32,
    /// Event messages sent so far, over every instance (see `RequestStream::ordered`).
    sent: Arc<AtomicU64>,
}

/// A server started as a child process: newline-delimited JSON over its stdin and stdout; its
/// stderr is forwarded to `tracing` (target `duomcp::client::stderr`), never treated as an error.
///
/// Closing follows the stdio shutdown sequence of both revisions: close stdin, wait, SIGTERM,
/// wait, SIGKILL. Dropping the transport kills the process.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use duomcp::client::transport::{ProcessOptions, ProcessTransport};
/// use duomcp::client::Client;
///
/// let mut cmd = tokio::process::Command::new("duomcp");
/// cmd.arg("serve");
/// let transport = ProcessTransport::spawn(cmd, ProcessOptions::default())?;
/// let client = Client::builder().connect_transport(transport).await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
pub struct ProcessTransport {
    inner: Arc<Inner>,
    events: Mutex<Option<mpsc::Receiver<TransportEvent>>>,
}

impl ProcessTransport {
    /// Starts the process. Its stdin, stdout and stderr are replaced by pipes.
    pub fn spawn(command: Command, options: ProcessOptions) -> std::io::Result<Self> {
        let name = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let (events, rx) = mpsc::channel(1024);
        let inner = Arc::new(Inner {
            command: Mutex::new(command),
            name,
            options,
            current: Mutex::new(None),
            events,
            closing: AtomicBool::new(false),
            restarts: AtomicU32::new(0),
            sent: Arc::default(),
        });
        let first = spawn_instance(&inner)?;
        *lock(&inner.current) = Some(first);
        Ok(ProcessTransport {
            inner,
            events: Mutex::new(Some(rx)),
        })
    }

    /// The operating-system id of the current process, while it runs.
    pub fn pid(&self) -> Option<u32> {
        lock(&self.inner.current).as_ref().and_then(|i| i.pid)
    }

    fn current(&self) -> Result<Arc<Instance>, TransportError> {
        lock(&self.inner.current)
            .clone()
            .ok_or_else(|| TransportError::Closed("the server process is not running".into()))
    }
}

fn spawn_instance(inner: &Arc<Inner>) -> std::io::Result<Arc<Instance>> {
    let mut child: Child = {
        let mut cmd = lock(&inner.command);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd.spawn()?
    };
    let missing = || std::io::Error::other("the child process has no piped stdio");
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    let pid = child.id();
    let (exit_tx, exit_rx) = watch::channel(None);
    let (kill_tx, kill_rx) = mpsc::channel(1);
    tokio::spawn(supervise(child, exit_tx, kill_rx));
    tokio::spawn(forward_stderr(stderr, inner.name.clone()));

    let mut exit = exit_rx.clone();
    let eof_reason: EofReason = Box::pin(async move {
        // stdout closes a moment before the exit status is known; wait for it briefly.
        let status =
            tokio::time::timeout(Duration::from_secs(2), exit.wait_for(Option::is_some)).await;
        let reason = match status {
            Ok(Ok(s)) => format!(
                "the server process exited ({})",
                s.as_deref().unwrap_or("unknown status")
            ),
            _ => "the server closed its stdout".to_owned(),
        };
        reason
    });
    let (itx, irx) = mpsc::channel(1024);
    // The instance counts what it forwards into the transport-wide counter; the forwarder keeps
    // the order, so the count stays exact across restarts.
    let core = Core::start(
        stdout,
        stdin,
        itx,
        inner.sent.clone(),
        Some(eof_reason),
        inner.options.quote_stray_lines,
    );
    tokio::spawn(forward_events(
        Arc::downgrade(inner),
        irx,
        tokio::time::Instant::now(),
    ));
    tracing::debug!(server = %inner.name, pid, "started the server process");
    Ok(Arc::new(Instance {
        core,
        pid,
        exit: exit_rx,
        kill: kill_tx,
    }))
}

/// Owns the child: reports its exit, kills it on request (or when the transport is gone).
async fn supervise(
    mut child: Child,
    exit: watch::Sender<Option<String>>,
    mut kill: mpsc::Receiver<()>,
) {
    let status = tokio::select! {
        status = child.wait() => status,
        _ = kill.recv() => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    let text = match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("status unknown: {e}"),
    };
    let _ = exit.send(Some(text));
}

async fn forward_stderr(stderr: ChildStderr, name: String) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "duomcp::client::stderr", server = %name, "{line}");
    }
}

/// Forwards one instance's events; on an unexpected exit, restarts the process if allowed,
/// after the back-off.
async fn forward_events(
    weak: Weak<Inner>,
    mut rx: mpsc::Receiver<TransportEvent>,
    started: tokio::time::Instant,
) {
    while let Some(event) = rx.recv().await {
        let Some(inner) = weak.upgrade() else { return };
        match event {
            TransportEvent::Closed(reason) => {
                if started.elapsed() >= RESTART_COUNT_RESET {
                    inner.restarts.store(0, Ordering::SeqCst);
                }
                let used = inner.restarts.load(Ordering::SeqCst);
                if !inner.closing.load(Ordering::SeqCst) && used < inner.options.max_restarts {
                    inner.restarts.store(used + 1, Ordering::SeqCst);
                    let delay = inner.options.restart_delay(used + 1);
                    tracing::warn!(server = %inner.name, "{reason}; restarting it in {delay:?} ({} of {})", used + 1, inner.options.max_restarts);
                    // Not holding the transport meanwhile: dropped, it ends here.
                    drop(inner);
                    tokio::time::sleep(delay).await;
                    let Some(inner) = weak.upgrade() else { return };
                    if inner.closing.load(Ordering::SeqCst) {
                        let _ = inner.events.send(TransportEvent::Closed(reason)).await;
                        return;
                    }
                    match spawn_instance(&inner) {
                        Ok(instance) => {
                            *lock(&inner.current) = Some(instance);
                            let _ = inner.events.send(TransportEvent::Restarted).await;
                        }
                        Err(e) => {
                            let _ = inner
                                .events
                                .send(TransportEvent::Closed(format!(
                                    "{reason}; restarting it failed: {e}"
                                )))
                                .await;
                        }
                    }
                } else {
                    let _ = inner.events.send(TransportEvent::Closed(reason)).await;
                }
                return;
            }
            other => {
                let _ = inner.events.send(other).await;
            }
        }
    }
}

#[cfg(unix)]
async fn sigterm(pid: u32) {
    // `kill(1)` rather than libc: this crate forbids unsafe code.
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    if let Err(e) = status {
        tracing::debug!("could not run kill -TERM {pid}: {e}");
    }
}

#[cfg(not(unix))]
async fn sigterm(_pid: u32) {}

impl Transport for ProcessTransport {
    fn request(&self, msg: Outgoing) -> BoxFuture<'_, Result<RequestStream, TransportError>> {
        let instance = self.current();
        Box::pin(async move { instance?.core.request(msg).await })
    }

    fn send(&self, msg: Outgoing) -> BoxFuture<'_, Result<(), TransportError>> {
        let instance = self.current();
        Box::pin(async move { instance?.core.send(msg).await })
    }

    fn events(&self) -> Option<mpsc::Receiver<TransportEvent>> {
        lock(&self.events).take()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.inner.closing.store(true, Ordering::SeqCst);
            let instance = self.current()?;
            let grace = self.inner.options.shutdown_grace;
            instance.core.close_writer().await;
            if instance.wait_exit(grace).await {
                return Ok(());
            }
            if let Some(pid) = instance.pid {
                tracing::debug!(server = %self.inner.name, pid, "the server did not exit after stdin closed; sending SIGTERM");
                sigterm(pid).await;
                if instance.wait_exit(grace).await {
                    return Ok(());
                }
            }
            tracing::debug!(server = %self.inner.name, "the server did not exit after SIGTERM; killing it");
            let _ = instance.kill.send(()).await;
            if instance.wait_exit(grace).await {
                Ok(())
            } else {
                Err(TransportError::Other(
                    "the server process did not exit even after SIGKILL".into(),
                ))
            }
        })
    }
}
