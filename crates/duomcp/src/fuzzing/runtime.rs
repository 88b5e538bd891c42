//! One current-thread tokio runtime for the async entries, and a poll loop for futures over
//! in-memory readers.

use std::future::Future;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

/// Runs `f` to completion on a shared current-thread runtime (with time, for timeouts).
pub(super) fn block_on<F: Future>(f: F) -> F::Output {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
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
