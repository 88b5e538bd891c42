//! The correlation tables: requests one side sent and waits to hear back about (**pending**),
//! and requests it received and is still running (**running**), both keyed by JSON-RPC id.
//!
//! Every peer of either revision keeps these two tables, whatever the role and the transport.
//! [`Entries`] is their state and every rule about it, with nothing of a runtime: each entry
//! holds a value the driver chooses (`P` for a pending request, `R` for a running one).
//! `duomcp`'s engine stores a channel to the waiting task in `P` and the handler's
//! cancellation token in `R`; a test stores plain values.
//!
//! The rules:
//! * both halves are bounded ([`Limits`]); an id already waiting (or running) is refused
//!   ([`CorrelationRejection::Duplicate`]), as is any entry after [`Entries::close`];
//! * an answer takes its pending entry out by id, in whatever order answers come
//!   ([`Entries::take_pending`]); a second answer with the same id finds nothing;
//! * a running entry carries a [`Ticket`], so that the end of a request removes its own entry
//!   and not that of a later request which reused the id after a cancellation
//!   ([`Entries::finish`]).
//!
//! ```
//! use duomcp_proto::correlation::{CorrelationRejection, Entries, Limits};
//! use duomcp_proto::jsonrpc::RequestId;
//!
//! let mut table: Entries<&str, &str> = Entries::new(Limits::default());
//! // Two requests go out; their answers come back the other way round.
//! table.insert_pending(RequestId::from(1), "first").unwrap();
//! table.insert_pending(RequestId::from(2), "second").unwrap();
//! assert_eq!(table.take_pending(&RequestId::from(2)), Some("second"));
//! assert_eq!(table.take_pending(&RequestId::from(1)), Some("first"));
//! assert_eq!(table.take_pending(&RequestId::from(1)), None); // answered already
//!
//! // A request comes in and runs; its id is taken until it ends or is cancelled.
//! let ticket = table.insert_running(RequestId::from(7), "handler").unwrap();
//! assert_eq!(
//!     table.insert_running(RequestId::from(7), "again"),
//!     Err(CorrelationRejection::Duplicate)
//! );
//! assert_eq!(table.finish(&RequestId::from(7), ticket), Some("handler"));
//! assert_eq!(table.counts(), (0, 0));
//! ```

use crate::jsonrpc::RequestId;
use std::collections::HashMap;

/// The bounds of a peer's two correlation tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Outgoing requests waiting for an answer at once (default 1,024).
    pub max_pending: usize,
    /// Incoming requests running at once (default 1,024, as the server's
    /// `ServerConfig::max_in_flight`).
    pub max_running: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pending: 1024,
            max_running: 1024,
        }
    }
}

impl Limits {
    /// Limits with `max_running` running requests (the other bound at its default).
    ///
    /// ```
    /// let limits = duomcp_proto::correlation::Limits::default().running(16);
    /// assert_eq!((limits.max_pending, limits.max_running), (1024, 16));
    /// ```
    pub fn running(mut self, max: usize) -> Self {
        self.max_running = max;
        self
    }

    /// Limits with `max` outgoing requests waiting at once.
    pub fn pending(mut self, max: usize) -> Self {
        self.max_pending = max;
        self
    }
}

/// Why the tables did not take an entry (an outgoing request to wait for, or an incoming one
/// to run).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorrelationRejection {
    /// Another request with this id is waiting or running.
    Duplicate,
    /// The half is at its bound.
    Full(usize),
    /// The tables were closed ([`Entries::close`]).
    Closed,
}

impl std::fmt::Display for CorrelationRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CorrelationRejection::Duplicate => {
                f.write_str("this id is already in use by a request in flight")
            }
            CorrelationRejection::Full(max) => {
                write!(f, "too many requests in flight (at most {max})")
            }
            CorrelationRejection::Closed => f.write_str("the connection is closed"),
        }
    }
}

impl std::error::Error for CorrelationRejection {}

/// A running request's entry, told apart from a later request that reuses its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket(u64);

/// The two tables of one peer (see the [module documentation](self)): `P` is what a pending
/// request's entry holds, `R` what a running request's entry holds.
#[derive(Debug)]
pub struct Entries<P, R> {
    limits: Limits,
    pending: HashMap<RequestId, P>,
    running: HashMap<RequestId, (Ticket, R)>,
    tickets: u64,
    closed: bool,
}

/// What [`Entries::close`] took out: the driver ends each (a waiter told the connection
/// closed, a running request cancelled).
#[derive(Debug)]
pub struct Closed<P, R> {
    /// The requests that were waiting for an answer.
    pub pending: Vec<P>,
    /// The requests that were running.
    pub running: Vec<R>,
}

impl<P, R> Entries<P, R> {
    /// Empty tables with these bounds.
    pub fn new(limits: Limits) -> Self {
        Entries {
            limits,
            pending: HashMap::new(),
            running: HashMap::new(),
            tickets: 0,
            closed: false,
        }
    }

    /// The bounds these tables keep.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Adds an outgoing request waiting under `id`.
    pub fn insert_pending(&mut self, id: RequestId, entry: P) -> Result<(), CorrelationRejection> {
        if self.closed {
            return Err(CorrelationRejection::Closed);
        }
        if self.pending.contains_key(&id) {
            return Err(CorrelationRejection::Duplicate);
        }
        if self.pending.len() >= self.limits.max_pending {
            return Err(CorrelationRejection::Full(self.limits.max_pending));
        }
        self.pending.insert(id, entry);
        Ok(())
    }

    /// Takes out the request waiting under `id` (its answer came, or its waiter gave up);
    /// `None` when none waits: an unknown id, or one answered or forgotten already.
    pub fn take_pending(&mut self, id: &RequestId) -> Option<P> {
        self.pending.remove(id)
    }

    /// Adds a running incoming request; refused while another with `id` runs.
    pub fn insert_running(
        &mut self,
        id: RequestId,
        entry: R,
    ) -> Result<Ticket, CorrelationRejection> {
        if self.closed {
            return Err(CorrelationRejection::Closed);
        }
        if self.running.contains_key(&id) {
            return Err(CorrelationRejection::Duplicate);
        }
        if self.running.len() >= self.limits.max_running {
            return Err(CorrelationRejection::Full(self.limits.max_running));
        }
        self.tickets += 1;
        let ticket = Ticket(self.tickets);
        self.running.insert(id, (ticket, entry));
        Ok(ticket)
    }

    /// Whether a request with `id` is running.
    pub fn is_running(&self, id: &RequestId) -> bool {
        !self.running.is_empty() && self.running.contains_key(id)
    }

    /// Removes a running request's entry when it ended, if the entry under `id` is still the
    /// one `ticket` names (a cancelled request's id may have been taken by a new request).
    pub fn finish(&mut self, id: &RequestId, ticket: Ticket) -> Option<R> {
        if self.running.get(id).is_some_and(|(t, _)| *t == ticket) {
            return self.running.remove(id).map(|(_, entry)| entry);
        }
        None
    }

    /// Takes out the running request `id` to cancel it (`notifications/cancelled`); its id is
    /// free again at once. `None` when none runs.
    pub fn take_running(&mut self, id: &RequestId) -> Option<R> {
        self.running.remove(id).map(|(_, entry)| entry)
    }

    /// Takes out every running request, to cancel them; the tables stay open.
    pub fn take_all_running(&mut self) -> Vec<R> {
        self.running.drain().map(|(_, (_, entry))| entry).collect()
    }

    /// Closes both tables and takes every entry out; every later entry is refused
    /// ([`CorrelationRejection::Closed`]).
    pub fn close(&mut self) -> Closed<P, R> {
        self.closed = true;
        Closed {
            pending: self.pending.drain().map(|(_, entry)| entry).collect(),
            running: self.running.drain().map(|(_, (_, entry))| entry).collect(),
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// How many requests wait and run now: `(pending, running)`.
    pub fn counts(&self) -> (usize, usize) {
        (self.pending.len(), self.running.len())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::from(n)
    }

    #[test]
    fn answers_out_of_order_each_reach_their_own_request() {
        let mut t: Entries<u32, ()> = Entries::new(Limits::default());
        for n in 0..8 {
            t.insert_pending(id(n), n as u32 * 10).unwrap();
        }
        t.insert_pending(RequestId::String("s-3".into()), 333)
            .unwrap();
        // A string id and a number id with the same digits are different requests.
        assert_eq!(t.take_pending(&RequestId::String("s-3".into())), Some(333));
        for n in [5, 0, 7, 3, 1, 6, 2, 4] {
            assert_eq!(t.take_pending(&id(n)), Some(n as u32 * 10));
        }
        assert_eq!(
            t.take_pending(&id(3)),
            None,
            "a second answer finds nothing"
        );
        assert_eq!(t.counts(), (0, 0));
    }

    #[test]
    fn both_halves_are_bounded_and_an_id_waits_once() {
        let mut t: Entries<(), ()> = Entries::new(Limits::default().pending(2).running(1));
        t.insert_pending(id(1), ()).unwrap();
        assert_eq!(
            t.insert_pending(id(1), ()),
            Err(CorrelationRejection::Duplicate)
        );
        t.insert_pending(id(2), ()).unwrap();
        assert_eq!(
            t.insert_pending(id(3), ()),
            Err(CorrelationRejection::Full(2))
        );
        // The halves are separate: id 1 may run while a request of ours waits under id 1.
        t.insert_running(id(1), ()).unwrap();
        assert_eq!(
            t.insert_running(id(2), ()),
            Err(CorrelationRejection::Full(1))
        );
        assert_eq!(t.counts(), (2, 1));
        // A freed place is taken again.
        t.take_pending(&id(2));
        t.insert_pending(id(3), ()).unwrap();
    }

    #[test]
    fn a_stale_ticket_leaves_the_request_that_reused_the_id() {
        let mut t: Entries<(), &str> = Entries::new(Limits::default());
        let first = t.insert_running(id(5), "first").unwrap();
        assert!(t.is_running(&id(5)));
        assert_eq!(t.take_running(&id(5)), Some("first")); // cancelled by the peer
        assert_eq!(t.take_running(&id(5)), None);
        let second = t.insert_running(id(5), "second").unwrap();
        assert_eq!(
            t.finish(&id(5), first),
            None,
            "the first handler winds down late"
        );
        assert!(t.is_running(&id(5)));
        assert_eq!(t.finish(&id(5), second), Some("second"));
        assert!(!t.is_running(&id(5)));
    }

    #[test]
    fn close_hands_back_every_entry_and_refuses_more() {
        let mut t: Entries<&str, &str> = Entries::new(Limits::default());
        t.insert_pending(id(1), "waiting").unwrap();
        t.insert_running(id(2), "a").unwrap();
        t.insert_running(id(3), "b").unwrap();
        let mut all = t.take_all_running();
        all.sort();
        assert_eq!(all, ["a", "b"]);
        assert!(!t.is_closed());
        t.insert_running(id(4), "c").unwrap();
        let closed = t.close();
        assert_eq!(
            (closed.pending, closed.running),
            (vec!["waiting"], vec!["c"])
        );
        assert!(t.is_closed());
        assert_eq!(
            t.insert_pending(id(9), ""),
            Err(CorrelationRejection::Closed)
        );
        assert_eq!(
            t.insert_running(id(9), ""),
            Err(CorrelationRejection::Closed)
        );
        assert_eq!(t.counts(), (0, 0));
    }
}

#[cfg(test)]
mod props {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    //! Any sequence of operations keeps the tables' promises: the bounds hold, an entry comes
    //! out once and only under its own id, and nothing is taken after close.
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap as Model;

    #[derive(Debug, Clone)]
    enum Op {
        Send(u8),
        Answer(u8),
        Admit(u8),
        Cancel(u8),
        Finish(u8, usize),
        Close,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..12).prop_map(Op::Send),
            4 => (0u8..12).prop_map(Op::Answer),
            4 => (0u8..12).prop_map(Op::Admit),
            2 => (0u8..12).prop_map(Op::Cancel),
            3 => ((0u8..12), (0usize..16)).prop_map(|(n, t)| Op::Finish(n, t)),
            1 => Just(Op::Close),
        ]
    }

    proptest! {
        #[test]
        fn the_tables_match_a_model(ops in proptest::collection::vec(op(), 0..120)) {
            let limits = Limits::default().pending(5).running(4);
            let mut t: Entries<u32, u32> = Entries::new(limits);
            let mut pending: Model<u8, u32> = Model::new();
            let mut running: Model<u8, (Ticket, u32)> = Model::new();
            let mut tickets: Vec<(u8, Ticket)> = Vec::new();
            let mut closed = false;
            for (step, op) in ops.into_iter().enumerate() {
                let step = step as u32;
                match op {
                    Op::Send(n) => {
                        let got = t.insert_pending(RequestId::from(i64::from(n)), step);
                        let want = if closed {
                            Err(CorrelationRejection::Closed)
                        } else if pending.contains_key(&n) {
                            Err(CorrelationRejection::Duplicate)
                        } else if pending.len() >= 5 {
                            Err(CorrelationRejection::Full(5))
                        } else {
                            pending.insert(n, step);
                            Ok(())
                        };
                        prop_assert_eq!(got, want);
                    }
                    Op::Answer(n) => {
                        let got = t.take_pending(&RequestId::from(i64::from(n)));
                        prop_assert_eq!(got, pending.remove(&n));
                    }
                    Op::Admit(n) => {
                        let got = t.insert_running(RequestId::from(i64::from(n)), step);
                        if closed {
                            prop_assert_eq!(got, Err(CorrelationRejection::Closed));
                        } else if running.contains_key(&n) {
                            prop_assert_eq!(got, Err(CorrelationRejection::Duplicate));
                        } else if running.len() >= 4 {
                            prop_assert_eq!(got, Err(CorrelationRejection::Full(4)));
                        } else {
                            let ticket = got.unwrap();
                            running.insert(n, (ticket, step));
                            tickets.push((n, ticket));
                        }
                    }
                    Op::Cancel(n) => {
                        let got = t.take_running(&RequestId::from(i64::from(n)));
                        prop_assert_eq!(got, running.remove(&n).map(|(_, v)| v));
                    }
                    Op::Finish(n, which) => {
                        // Any ticket ever given for any id: only the live one for `n` removes.
                        let Some(&(_, ticket)) = tickets.get(which) else { continue };
                        let got = t.finish(&RequestId::from(i64::from(n)), ticket);
                        let want = match running.get(&n) {
                            Some((live, v)) if *live == ticket => {
                                let v = *v;
                                running.remove(&n);
                                Some(v)
                            }
                            _ => None,
                        };
                        prop_assert_eq!(got, want);
                    }
                    Op::Close => {
                        let out = t.close();
                        let mut got_p = out.pending;
                        let mut want_p: Vec<u32> = pending.drain().map(|(_, v)| v).collect();
                        got_p.sort_unstable();
                        want_p.sort_unstable();
                        prop_assert_eq!(got_p, want_p);
                        let mut got_r = out.running;
                        let mut want_r: Vec<u32> = running.drain().map(|(_, (_, v))| v).collect();
                        got_r.sort_unstable();
                        want_r.sort_unstable();
                        prop_assert_eq!(got_r, want_r);
                        closed = true;
                    }
                }
                prop_assert_eq!(t.counts(), (pending.len(), running.len()));
                prop_assert!(t.counts().0 <= 5 && t.counts().1 <= 4);
            }
        }
    }
}
