//! The correlation engine: requests this side sent and waits to hear back about, and requests
//! it received and is still running, both keyed by JSON-RPC id.
//!
//! Every peer keeps these two tables, whatever the transport:
//!
//! * **pending** (outgoing): a request sent to the other side waits for its response. The engine
//!   allocates the id (or takes the caller's), hands back a [`Waiter`], routes the answer that
//!   arrives with that id ([`Correlation::complete`]), and forgets the entry when the waiter is
//!   dropped, times out or is cancelled. The server's 2025-11-25 `elicitation/create`,
//!   `sampling/createMessage` and `roots/list` wait here; so do the client's requests on a byte
//!   stream.
//! * **running** (incoming): a request received and not yet answered, with the
//!   [`CancellationToken`] its handler watches. `notifications/cancelled` finds it by id
//!   ([`Correlation::cancel`]); while it runs, its id is refused to another request
//!   ([`CorrelationRejection::Duplicate`]). The [`Running`] guard removes it when the request ends.
//!
//! Both halves are bounded ([`Limits`], with protective defaults) and [`Correlation::close`]
//! ends them together: every waiter sees [`WaitError::Closed`], every running request is
//! cancelled.
//!
//! Users of the engine hold a [`Correlation`]; what it stores behind is a [`Table`].
//! [`LocalTable`] keeps both halves in this process (the default): it is `duomcp-proto`'s
//! [`Entries`](duomcp_proto::correlation::Entries), where every rule of the two tables lives
//! and is tested without a runtime, behind a mutex; this module adds what needs one (the
//! waiters' channels and timeouts, the cancellation tokens). A table backed by shared
//! state can take its place in one spot ([`Correlation::with_table`]), so that an answer or a
//! cancellation arriving at another replica of a server reaches the request waiting or running
//! here: its `complete` and `cancel` try the local entries first and forward the misses.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::correlation::{Correlation, Limits, CorrelationRejection, WaitError};
//! use duomcp::jsonrpc::RequestId;
//! use serde_json::value::RawValue;
//! use std::time::Duration;
//! use tokio_util::sync::CancellationToken;
//!
//! let engine: Correlation = Correlation::new("s-", Limits::default()); // answers: `Outcome`
//!
//! // Outgoing: a fresh id, the request goes out, its answer comes back by id.
//! let waiter = engine.request().unwrap();
//! let id = waiter.id().clone();
//! assert_eq!(id, RequestId::String("s-0".into()));
//! let answer = RawValue::from_string("{}".into()).unwrap();
//! assert!(engine.complete(&id, Ok(answer)));
//! let outcome = waiter.wait(Duration::from_secs(1), &CancellationToken::new()).await;
//! assert_eq!(outcome.unwrap().unwrap().get(), "{}");
//! assert!(!engine.complete(&id, Ok(RawValue::from_string("1".into()).unwrap()))); // answered
//!
//! // Incoming: a running request, cancelled by id; its id is taken meanwhile.
//! let token = CancellationToken::new();
//! let running = engine.admit(RequestId::from(7), token.clone()).unwrap();
//! assert_eq!(
//!     engine.admit(RequestId::from(7), CancellationToken::new()).unwrap_err(),
//!     CorrelationRejection::Duplicate
//! );
//! assert!(engine.cancel(&RequestId::from(7)));
//! assert!(token.is_cancelled());
//! drop(running);
//!
//! // Closing ends every waiter.
//! let waiter = engine.request().unwrap();
//! engine.close();
//! let outcome = waiter.wait(Duration::from_secs(1), &CancellationToken::new()).await;
//! assert_eq!(outcome.unwrap_err(), WaitError::Closed);
//! # });
//! ```

use crate::jsonrpc::{ErrorObject, RequestId};
use crate::util::lock;
use duomcp_proto::correlation::Entries;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// What a JSON-RPC response brings: the raw `result`, or the `error` object.
pub type Outcome = Result<Box<RawValue>, ErrorObject>;

pub use duomcp_proto::correlation::{CorrelationRejection, Limits, Ticket};

/// The name the rejection had before (`duomcp::correlation::Refused`), kept so that code
/// naming it compiles.
#[doc(hidden)]
pub use CorrelationRejection as Refused;

/// Why a [`Waiter`] got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// The engine was closed (or the entry forgotten) before an answer came.
    #[error("the connection closed before an answer came")]
    Closed,
    /// No answer within the time given.
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    /// The waiting side gave up (its cancellation token fired).
    #[error("cancelled")]
    Cancelled,
}

/// Where a [`Correlation`] keeps its entries: one implementation per kind of storage.
///
/// [`LocalTable`] is the in-process one. A table backed by state shared between replicas
/// implements the same methods; `complete` and `cancel` are the ones that may find their
/// entry elsewhere (an answer, or a cancellation, that reached another replica).
pub trait Table<A>: Send + Sync + 'static {
    /// Adds an outgoing request waiting under `id`; its answer is sent on `answer`.
    fn insert_pending(
        &self,
        id: RequestId,
        answer: oneshot::Sender<A>,
    ) -> Result<(), CorrelationRejection>;
    /// Delivers the answer to the request waiting under `id`; `false` when none waits (or its
    /// waiter is gone). A table that passes a miss on (to another replica) returns `true` when
    /// it did; so does `cancel`.
    fn complete(&self, id: &RequestId, answer: A) -> bool;
    /// Forgets an outgoing request (its waiter is done with it).
    fn forget(&self, id: &RequestId);
    /// Adds a running incoming request; refused while another with `id` runs.
    fn insert_running(
        &self,
        id: RequestId,
        cancel: CancellationToken,
    ) -> Result<Ticket, CorrelationRejection>;
    /// Whether a request with `id` is running.
    fn is_running(&self, id: &RequestId) -> bool;
    /// Removes a running request's entry, if it is still the one `ticket` names.
    fn finish(&self, id: &RequestId, ticket: Ticket);
    /// Cancels the running request `id` and removes its entry; `false` when none runs.
    fn cancel(&self, id: &RequestId) -> bool;
    /// Cancels every running request (the table stays open).
    fn cancel_running(&self);
    /// Ends both halves: waiters see [`WaitError::Closed`], running requests are cancelled,
    /// and later entries are refused ([`CorrelationRejection::Closed`]).
    fn close(&self);
    /// How many requests wait and run now: `(pending, running)`.
    fn counts(&self) -> (usize, usize);
}

/// The in-process [`Table`]: `duomcp-proto`'s [`Entries`] (every rule of the two tables)
/// behind one mutex, holding the waiters' channels and the running requests' tokens.
pub struct LocalTable<A> {
    state: Mutex<Entries<oneshot::Sender<A>, CancellationToken>>,
}

impl<A> LocalTable<A> {
    /// An empty table with these bounds.
    pub fn new(limits: Limits) -> Self {
        LocalTable {
            state: Mutex::new(Entries::new(limits)),
        }
    }
}

impl<A: Send + 'static> LocalTable<A> {
    /// Delivers `answer` to the request waiting under `id` here, or hands it back when none
    /// waits here (so that a table shared between replicas can pass it on): `Ok(true)`
    /// delivered, `Ok(false)` its waiter was gone.
    ///
    /// ```
    /// use duomcp::correlation::{Limits, LocalTable, Table};
    /// use duomcp::jsonrpc::RequestId;
    /// let table: LocalTable<u8> = LocalTable::new(Limits::default());
    /// assert_eq!(table.try_complete(&RequestId::from(1), 7), Err(7)); // nobody waits here
    /// let (tx, _rx) = tokio::sync::oneshot::channel();
    /// table.insert_pending(RequestId::from(1), tx).unwrap();
    /// assert_eq!(table.try_complete(&RequestId::from(1), 7), Ok(true));
    /// ```
    pub fn try_complete(&self, id: &RequestId, answer: A) -> Result<bool, A> {
        // Taken out of the lock before sending: the waiter may run at once.
        let waiting = lock(&self.state).take_pending(id);
        match waiting {
            Some(tx) => Ok(tx.send(answer).is_ok()),
            None => Err(answer),
        }
    }
}

impl<A: Send + 'static> Table<A> for LocalTable<A> {
    fn insert_pending(
        &self,
        id: RequestId,
        answer: oneshot::Sender<A>,
    ) -> Result<(), CorrelationRejection> {
        lock(&self.state).insert_pending(id, answer)
    }

    fn complete(&self, id: &RequestId, answer: A) -> bool {
        self.try_complete(id, answer).unwrap_or(false)
    }

    fn forget(&self, id: &RequestId) {
        let gone = lock(&self.state).take_pending(id);
        drop(gone);
    }

    fn insert_running(
        &self,
        id: RequestId,
        cancel: CancellationToken,
    ) -> Result<Ticket, CorrelationRejection> {
        lock(&self.state).insert_running(id, cancel)
    }

    fn is_running(&self, id: &RequestId) -> bool {
        lock(&self.state).is_running(id)
    }

    fn finish(&self, id: &RequestId, ticket: Ticket) {
        let ended = lock(&self.state).finish(id, ticket);
        drop(ended);
    }

    fn cancel(&self, id: &RequestId) -> bool {
        let entry = lock(&self.state).take_running(id);
        match entry {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    fn cancel_running(&self) {
        let running = lock(&self.state).take_all_running();
        for token in running {
            token.cancel();
        }
    }

    fn close(&self) {
        let closed = lock(&self.state).close();
        // Dropping the senders ends the waiters.
        drop(closed.pending);
        for token in closed.running {
            token.cancel();
        }
    }

    fn counts(&self) -> (usize, usize) {
        lock(&self.state).counts()
    }
}

struct Shared<A: Send + 'static> {
    table: Box<dyn Table<A>>,
    /// Ids this side allocates: `{prefix}{n}`.
    prefix: Cow<'static, str>,
    next: AtomicU64,
}

/// One peer's correlation engine (see the [module documentation](self)): cheap to clone, every
/// clone the same engine.
pub struct Correlation<A: Send + 'static = Outcome> {
    shared: Arc<Shared<A>>,
}

impl<A: Send + 'static> Clone for Correlation<A> {
    fn clone(&self) -> Self {
        Correlation {
            shared: self.shared.clone(),
        }
    }
}

impl<A: Send + 'static> std::fmt::Debug for Correlation<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (pending, running) = self.shared.table.counts();
        f.debug_struct("Correlation")
            .field("pending", &pending)
            .field("running", &running)
            .finish()
    }
}

impl<A: Send + 'static> Correlation<A> {
    /// An in-process engine ([`LocalTable`]) whose own ids are `{prefix}0`, `{prefix}1`, …
    pub fn new(prefix: impl Into<Cow<'static, str>>, limits: Limits) -> Self {
        Self::with_table(prefix, LocalTable::new(limits))
    }

    /// An engine over another [`Table`] (state shared between replicas, for instance). The
    /// prefix tells this engine's ids apart from those of other engines answered through the
    /// same table (each replica of a shared session has its own).
    pub fn with_table(prefix: impl Into<Cow<'static, str>>, table: impl Table<A>) -> Self {
        Correlation {
            shared: Arc::new(Shared {
                table: Box::new(table),
                prefix: prefix.into(),
                next: AtomicU64::new(0),
            }),
        }
    }

    /// Registers an outgoing request under a fresh id (see [`Waiter::id`]).
    pub fn request(&self) -> Result<Waiter<A>, CorrelationRejection> {
        let n = self.shared.next.fetch_add(1, Ordering::Relaxed);
        self.request_as(RequestId::String(format!("{}{n}", self.shared.prefix)))
    }

    /// Registers an outgoing request under an id the caller chose (unique among its requests).
    pub fn request_as(&self, id: RequestId) -> Result<Waiter<A>, CorrelationRejection> {
        let (tx, rx) = oneshot::channel();
        self.shared.table.insert_pending(id.clone(), tx)?;
        Ok(Waiter {
            id,
            rx,
            owner: self.shared.clone(),
        })
    }

    /// Delivers an answer that arrived for `id`; `false` when no request waits for it (an
    /// unknown id, or one already answered, timed out or given up).
    pub fn complete(&self, id: &RequestId, answer: A) -> bool {
        self.shared.table.complete(id, answer)
    }

    /// Registers a running incoming request; the entry lasts as long as the [`Running`]
    /// guard. CorrelationRejection while another request with the same id runs.
    pub fn admit(
        &self,
        id: RequestId,
        cancel: CancellationToken,
    ) -> Result<Running<A>, CorrelationRejection> {
        let ticket = self.shared.table.insert_running(id.clone(), cancel)?;
        Ok(Running {
            id,
            ticket,
            owner: self.shared.clone(),
        })
    }

    /// Whether an incoming request with `id` is running.
    pub fn is_running(&self, id: &RequestId) -> bool {
        self.shared.table.is_running(id)
    }

    /// Cancels the running request `id` (`notifications/cancelled`); `false` when none runs.
    pub fn cancel(&self, id: &RequestId) -> bool {
        self.shared.table.cancel(id)
    }

    /// Cancels every running request; waiters and the engine stay as they are.
    pub fn cancel_running(&self) {
        self.shared.table.cancel_running()
    }

    /// Ends the engine: every waiter sees [`WaitError::Closed`], every running request is
    /// cancelled, and nothing is registered any more.
    pub fn close(&self) {
        self.shared.table.close()
    }

    /// How many requests wait for an answer and how many run: `(pending, running)`.
    pub fn counts(&self) -> (usize, usize) {
        self.shared.table.counts()
    }
}

/// An outgoing request waiting for its answer. Dropping it forgets the request: a late answer
/// is then ignored ([`Correlation::complete`] returns `false`).
pub struct Waiter<A: Send + 'static = Outcome> {
    id: RequestId,
    rx: oneshot::Receiver<A>,
    owner: Arc<Shared<A>>,
}

impl<A: Send + 'static> std::fmt::Debug for Waiter<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter").field("id", &self.id).finish()
    }
}

impl<A: Send + 'static> Waiter<A> {
    /// The request's id, to put in the message sent.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Waits for the answer, at most `timeout`, and no longer than `cancel` allows.
    pub async fn wait(
        mut self,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<A, WaitError> {
        tokio::select! {
            answer = &mut self.rx => answer.map_err(|_| WaitError::Closed),
            _ = tokio::time::sleep(timeout) => Err(WaitError::TimedOut(timeout)),
            _ = cancel.cancelled() => Err(WaitError::Cancelled),
        }
    }

    /// Waits for the answer, however long it takes (the caller bounds the wait).
    pub async fn recv(&mut self) -> Result<A, WaitError> {
        (&mut self.rx).await.map_err(|_| WaitError::Closed)
    }
}

impl<A: Send + 'static> Drop for Waiter<A> {
    fn drop(&mut self) {
        self.owner.table.forget(&self.id);
    }
}

/// A running incoming request's entry; dropping it removes the entry.
pub struct Running<A: Send + 'static = Outcome> {
    id: RequestId,
    ticket: Ticket,
    owner: Arc<Shared<A>>,
}

impl<A: Send + 'static> std::fmt::Debug for Running<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("id", &self.id).finish()
    }
}

impl<A: Send + 'static> Running<A> {
    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }
}

impl<A: Send + 'static> Drop for Running<A> {
    fn drop(&mut self) {
        self.owner.table.finish(&self.id, self.ticket);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[tokio::test]
    async fn answers_reach_their_waiter_once_and_late_ones_are_ignored() {
        let engine: Correlation = Correlation::new("s-", Limits::default());
        let a = engine.request().unwrap();
        let b = engine.request().unwrap();
        assert_ne!(a.id(), b.id());
        let (a_id, b_id) = (a.id().clone(), b.id().clone());
        assert!(engine.complete(&b_id, Ok(raw("2"))));
        assert!(!engine.complete(&b_id, Ok(raw("3"))));
        let never = CancellationToken::new();
        let got = b.wait(Duration::from_secs(1), &never).await.unwrap();
        assert_eq!(got.unwrap().get(), "2");
        // A waiter that gave up is forgotten: its answer finds nobody.
        drop(a);
        assert!(!engine.complete(&a_id, Ok(raw("1"))));
        assert_eq!(engine.counts(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_on_timeout_or_cancellation_and_forgets_the_request() {
        let engine: Correlation = Correlation::new("s-", Limits::default());
        let w = engine.request().unwrap();
        let id = w.id().clone();
        let never = CancellationToken::new();
        let e = w.wait(Duration::from_millis(50), &never).await.unwrap_err();
        assert_eq!(e, WaitError::TimedOut(Duration::from_millis(50)));
        assert!(!engine.complete(&id, Ok(raw("1"))));
        let w = engine.request().unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let e = w.wait(Duration::from_secs(60), &cancel).await.unwrap_err();
        assert_eq!(e, WaitError::Cancelled);
        assert_eq!(engine.counts(), (0, 0));
    }

    #[tokio::test]
    async fn both_halves_are_bounded() {
        let engine: Correlation = Correlation::new("s-", Limits::default().pending(2).running(1));
        let _a = engine.request().unwrap();
        let _b = engine.request().unwrap();
        assert_eq!(engine.request().unwrap_err(), CorrelationRejection::Full(2));
        assert_eq!(
            engine.request_as(RequestId::from(1)).unwrap_err(),
            CorrelationRejection::Full(2)
        );
        let _r = engine
            .admit(RequestId::from(1), CancellationToken::new())
            .unwrap();
        assert_eq!(
            engine
                .admit(RequestId::from(2), CancellationToken::new())
                .unwrap_err(),
            CorrelationRejection::Full(1)
        );
        assert_eq!(engine.counts(), (2, 1));
    }

    #[test]
    fn a_running_id_is_refused_until_it_ends_and_a_stale_guard_leaves_a_new_entry() {
        let engine: Correlation = Correlation::new("s-", Limits::default());
        let id = RequestId::from(5);
        let first = engine.admit(id.clone(), CancellationToken::new()).unwrap();
        assert!(engine.is_running(&id));
        assert_eq!(
            engine
                .admit(id.clone(), CancellationToken::new())
                .unwrap_err(),
            CorrelationRejection::Duplicate
        );
        // Cancelled by the peer, then the id reused while the first handler winds down.
        assert!(engine.cancel(&id));
        assert!(!engine.cancel(&id));
        let second_token = CancellationToken::new();
        let _second = engine.admit(id.clone(), second_token.clone()).unwrap();
        drop(first);
        assert!(
            engine.is_running(&id),
            "the old guard removed the new entry"
        );
        assert!(engine.cancel(&id));
        assert!(second_token.is_cancelled());
    }

    #[tokio::test]
    async fn close_ends_waiters_cancels_running_requests_and_refuses_more() {
        let engine: Correlation = Correlation::new("s-", Limits::default());
        let w = engine.request().unwrap();
        let token = CancellationToken::new();
        let _r = engine.admit(RequestId::from(1), token.clone()).unwrap();
        let other = CancellationToken::new();
        let _o = engine.admit(RequestId::from(2), other.clone()).unwrap();
        engine.cancel_running();
        assert!(token.is_cancelled() && other.is_cancelled());
        let third = CancellationToken::new();
        let _t = engine.admit(RequestId::from(3), third.clone()).unwrap();
        engine.close();
        assert!(third.is_cancelled());
        let never = CancellationToken::new();
        let e = w.wait(Duration::from_secs(1), &never).await.unwrap_err();
        assert_eq!(e, WaitError::Closed);
        assert_eq!(engine.request().unwrap_err(), CorrelationRejection::Closed);
        assert_eq!(
            engine
                .admit(RequestId::from(4), CancellationToken::new())
                .unwrap_err(),
            CorrelationRejection::Closed
        );
    }
}
