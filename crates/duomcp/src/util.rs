//! Small runtime helpers.

use std::future::Future;
use std::panic::{catch_unwind as catch, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Runs `fut`, turning a panic inside it into `Err(message)` instead of unwinding the task.
pub(crate) fn catch_unwind<F: Future>(fut: F) -> CatchUnwind<F> {
    CatchUnwind { fut: Box::pin(fut) }
}

pub(crate) struct CatchUnwind<F> {
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = self.fut.as_mut();
        match catch(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                Poll::Ready(Err(msg))
            }
        }
    }
}
