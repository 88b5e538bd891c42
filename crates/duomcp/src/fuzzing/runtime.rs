//! One current-thread tokio runtime for the async entries, and a poll loop for futures over
//! in-memory readers.
//!
//! The runtime's clock is paused: time moves only when every task waits on a timer, and then
//! straight to the next one. A run therefore never depends on how fast the machine is (the
//! server's grace period after input ends, the 10 s hang oracle of `stdio_server`), and two
//! runs of the same input schedule the same way (the scheduler's own generator is seeded from
//! std's `RandomState`, which the fuzz binaries fix: `fuzz/fuzz_targets/common/fixed_random.rs`).

use std::future::Future;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

/// Runs `f` to completion on a shared current-thread runtime (with paused time, for timeouts).
pub(super) fn block_on<F: Future>(f: F) -> F::Output {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a tokio runtime")
    })
    .block_on(f)
}

/// Polls `f` once with a no-op waker: `Some` when it finished.
pub(super) fn poll_once<F: Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}
