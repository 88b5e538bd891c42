//! Serving connections thread-per-core: several single-threaded runtimes, one thread each, and
//! each accepted connection handed to one of them for its whole life.
//!
//! On tokio's multi-threaded runtime a task runs on whichever worker woke it. A server whose
//! requests wait on another task (a gateway waiting on its upstream's reader) has each
//! connection's state (hyper's buffers, the handler's future) move between cores several times
//! per request, and frees memory on another thread than the one that allocated it. With
//! [`Workers`] a connection, its requests and their handlers stay on one thread; only the wake-up
//! that ends a wait crosses threads. See bench/README.md, "Gateway", for what it changes.

use super::listener::{Peer, Stream};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::task::JoinSet;

/// A set of single-threaded tokio runtimes, each on a thread of its own, that serve the
/// connections [`serve_with`](super::serve_with) accepts when set in
/// [`ServeOptions::workers`](super::ServeOptions::workers) (or
/// [`StreamableHttp::serve`](super::StreamableHttp::serve), in
/// [`HttpConfig::workers`](super::HttpConfig::workers)): each new connection goes to the
/// worker with the fewest open connections and stays there.
///
/// It pays most where a request waits on other tasks: `duomcp gateway` in front of a stdio
/// server went from 54–56 % to 62–66 % of the direct server's throughput with it
/// (bench/README.md, "Gateway", round 11); `duomcp-echo` over HTTP, whose handler answers at
/// once, carries 9–16 % more requests a second (32 connections, 2 cores). The cost is work
/// stealing: a worker never takes work from
/// another, so a handler that computes for long holds up the other connections on its worker
/// (run such work with `tokio::task::spawn_blocking`).
///
/// Tasks a handler spawns run on its connection's worker. The threads stop when the last clone
/// of the `Workers` is dropped; the tasks still on them are then dropped, so keep it until the
/// server's background work (upstream connections, for a gateway) is closed.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::transport::http::{serve_with, ServeOptions, Workers};
///
/// let app = axum::Router::new().route(
///     "/",
///     axum::routing::get(|| async { std::thread::current().name().unwrap_or("").to_owned() }),
/// );
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let addr = listener.local_addr().unwrap();
/// let mut options = ServeOptions::default();
/// options.workers = Some(Workers::start(2).unwrap());
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = tokio::spawn(serve_with(listener, app, options, async { let _ = stopped.await; }));
///
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
/// tcp.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await.unwrap();
/// let mut response = String::new();
/// tcp.read_to_string(&mut response).await.unwrap();
/// assert!(response.ends_with("duomcp-http-0"), "{response}");
/// let _ = stop.send(());
/// server.await.unwrap().unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct Workers {
    inner: Arc<Inner>,
}

struct Inner {
    workers: Vec<Worker>,
}

struct Worker {
    handle: Handle,
    /// Connections open on this worker.
    open: Arc<AtomicUsize>,
    /// Ends the thread's `block_on`; taken when the workers are dropped.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("threads", &self.inner.workers.len())
            .finish()
    }
}

impl Workers {
    /// Starts `threads` workers (at least one), named `duomcp-http-0`, `duomcp-http-1`, ….
    ///
    /// # Errors
    /// When a runtime or a thread cannot be created (out of memory or of threads).
    pub fn start(threads: usize) -> std::io::Result<Workers> {
        let threads = threads.max(1);
        let mut workers = Vec::with_capacity(threads);
        for i in 0..threads {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let handle = runtime.handle().clone();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let join = std::thread::Builder::new()
                .name(format!("duomcp-http-{i}"))
                .spawn(move || {
                    runtime.block_on(async {
                        let _ = stopped.await;
                    });
                })?;
            workers.push(Worker {
                handle,
                open: Arc::default(),
                stop: Some(stop),
                thread: Some(join),
            });
        }
        Ok(Workers {
            inner: Arc::new(Inner { workers }),
        })
    }

    /// One worker per core: as many as [`std::thread::available_parallelism`] reports (one
    /// when it cannot tell).
    ///
    /// # Errors
    /// As [`Workers::start`].
    pub fn per_core() -> std::io::Result<Workers> {
        Workers::start(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// The runtime of worker `i` (`0 ≤ i <` [`threads`](Workers::threads)), to run work next
    /// to the connections it serves: `workers.handle(0).spawn(…)`.
    ///
    /// # Panics
    /// When `i` is not below [`threads`](Workers::threads).
    pub fn handle(&self, i: usize) -> &Handle {
        &self.inner.workers[i].handle
    }

    /// How many worker threads there are.
    pub fn threads(&self) -> usize {
        self.inner.workers.len()
    }

    /// Connections open on each worker, in worker order.
    pub fn open_connections(&self) -> Vec<usize> {
        self.inner
            .workers
            .iter()
            .map(|w| w.open.load(Ordering::Relaxed))
            .collect()
    }

    /// Spawns `serve(io)` into `tasks` on the worker with the fewest open connections, which
    /// counts it until the task ends. The socket is registered again with that worker's
    /// reactor, so that its readiness wakes that worker and no other.
    pub(super) fn spawn_connection<S, F, Fut>(
        &self,
        tasks: &mut JoinSet<()>,
        io: S,
        peer: Peer,
        serve: F,
    ) where
        S: Stream,
        F: FnOnce(S) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send,
    {
        let io = match io.into_std() {
            Ok(io) => io,
            Err(e) => {
                tracing::debug!(%peer, "connection dropped: {e}");
                return;
            }
        };
        let mut best = &self.inner.workers[0];
        for w in &self.inner.workers[1..] {
            if w.open.load(Ordering::Relaxed) < best.open.load(Ordering::Relaxed) {
                best = w;
            }
        }
        best.open.fetch_add(1, Ordering::Relaxed);
        let open = OpenGuard(best.open.clone());
        tasks.spawn_on(
            async move {
                let _open = open;
                match S::from_std(io) {
                    Ok(io) => serve(io).await,
                    Err(e) => tracing::debug!(%peer, "connection dropped: {e}"),
                }
            },
            &best.handle,
        );
    }
}

struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for w in &mut self.workers {
            if let Some(stop) = w.stop.take() {
                let _ = stop.send(());
            }
        }
        let me = std::thread::current().id();
        for thread in self.workers.iter_mut().filter_map(|w| w.thread.take()) {
            // Dropped on a worker's own thread (by a task there), that thread cannot wait for
            // itself: it stops when its runtime returns.
            if thread.thread().id() != me {
                let _ = thread.join();
            }
        }
    }
}
