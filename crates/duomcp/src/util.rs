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

#[cfg(any(feature = "server", feature = "client"))]
/// How many characters of a peer's text `excerpt` and `excerpt_bytes` keep by default: enough to recognise a
/// line, little enough that a peer cannot fill a log with it.
pub(crate) const EXCERPT_CHARS: usize = 200;

#[cfg(feature = "server")]
/// `text` made safe to quote in a log line or an error message: control characters escaped
/// (`\n`, `\u{1b}`), at most `max` characters kept, and how many more there were said.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let (mut out, left) = escaped_prefix(text, max);
    if left > 0 {
        out.push_str(&format!("… ({left} more characters)"));
    }
    out
}

#[cfg(feature = "client")]
/// Bytes a peer sent, made safe to quote as `excerpt` does (invalid UTF-8 shown as `�`); only
/// the first bytes are looked at, however many there are, and a cut says the length in bytes.
pub(crate) fn excerpt_bytes(bytes: &[u8], max: usize) -> String {
    let head = &bytes[..bytes.len().min(max.saturating_mul(4))];
    let (mut out, left) = escaped_prefix(&String::from_utf8_lossy(head), max);
    if left > 0 || head.len() < bytes.len() {
        out.push_str(&format!("… ({} bytes in all)", bytes.len()));
    }
    out
}

#[cfg(any(feature = "server", feature = "client"))]
/// The first `max` characters of `text`, control characters escaped, and how many were left.
fn escaped_prefix(text: &str, max: usize) -> (String, usize) {
    let mut out = String::with_capacity(text.len().min(max) + 2);
    let mut chars = text.chars();
    for c in chars.by_ref().take(max) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    (out, chars.count())
}

#[cfg(all(test, feature = "server", feature = "client"))]
mod excerpt_tests {
    use super::*;

    #[test]
    fn excerpts_escape_control_characters_and_stop_at_the_limit() {
        assert_eq!(excerpt("a\nb\u{1b}[31m", 100), "a\\nb\\u{1b}[31m");
        assert_eq!(excerpt("abcdef", 3), "abc… (3 more characters)");
        assert_eq!(excerpt("abc", 3), "abc");
        let long = vec![b'x'; 10_000];
        let e = excerpt_bytes(&long, 5);
        assert_eq!(e, "xxxxx… (10000 bytes in all)");
        assert_eq!(excerpt_bytes(b"hi\xff", 10), "hi\u{fffd}");
    }
}
