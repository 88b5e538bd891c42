//! Small runtime helpers.

// The futures helpers serve the runtimes; `lock` is used without them too.
#[cfg(feature = "server")]
use futures_util::FutureExt as _;
#[cfg(feature = "server")]
use std::future::Future;
#[cfg(feature = "server")]
use std::panic::AssertUnwindSafe;
#[cfg(feature = "server")]
use std::pin::Pin;
#[cfg(feature = "server")]
use std::task::{Context, Poll, Waker};

/// Runs `fut`, turning a panic inside it into `Err(message)` instead of unwinding the task.
///
/// The future is polled in place (no box of its own): the caller decides where it lives.
#[cfg(feature = "server")]
pub(crate) fn catch_unwind<F: Future>(fut: F) -> impl Future<Output = Result<F::Output, String>> {
    AssertUnwindSafe(fut).catch_unwind().map(|outcome| {
        outcome.map_err(|payload| {
            payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned())
        })
    })
}

/// Polls `fut` once, without a waker to be woken by: `Ready` when it finished without
/// waiting. A `Pending` future is then handed to a task, which polls it again with a real waker
/// (a future must register its current waker on every poll, so none is lost).
#[cfg(feature = "server")]
pub(crate) fn poll_now<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    fut.poll(&mut cx)
}

/// Locks `m`, also when a panic poisoned it.
///
/// The crate's mutexes guard state that a panic cannot leave half-changed (single assignments,
/// inserts and removals), so a poisoned lock is still usable: serving goes on instead of every
/// later request panicking in turn.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
