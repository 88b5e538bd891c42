//! The client's side of a multi-round-trip request (MRTR, 2026-07-28): what a result is, by
//! its `resultType`, and the state of a request that the server answers with
//! `input_required` until it has what it needs.
//!
//! [`ResultKind::of`] reads a result's kind (`complete`, `input_required`, `task`; no
//! `resultType` is a 2025-11-25 server's complete result). [`Rounds`] is the retry loop's
//! state: it hands out each attempt's params (the original ones, then with `inputResponses`
//! and the `requestState` exactly as received), reads each result, says whether the request
//! is done or which input requests to answer, and keeps the bound on rounds. The driver sends
//! the attempts and answers the input requests (with the application's handlers); nothing
//! here waits.
//!
//! ```
//! use duomcp_proto::era::Era;
//! use duomcp_proto::era::modern::mrtr::{Rounds, RoundsConfig, Step};
//! use serde_json::{json, Map, Value};
//!
//! let params = json!({ "name": "book", "arguments": {} });
//! let Value::Object(params) = params else { unreachable!() };
//! let mut rounds = Rounds::new("tools/call", params, RoundsConfig::new(Era::Modern));
//!
//! // The first attempt is the request as the caller made it.
//! assert_eq!(rounds.attempt()["name"], "book");
//! let asked = json!({
//!     "resultType": "input_required",
//!     "requestState": "sealed-1",
//!     "inputRequests": { "date": { "method": "elicitation/create", "params": {} } },
//! });
//! let Step::Answer(requests) = rounds.read(&asked)? else { panic!("input asked") };
//! assert!(requests.contains_key("date"));
//!
//! // The retry carries the answers under the same keys and the state as received.
//! let mut answers = Map::new();
//! answers.insert("date".into(), json!({ "action": "accept", "content": {} }));
//! rounds.answered(answers);
//! let retry = rounds.attempt();
//! assert_eq!(retry["requestState"], "sealed-1");
//! assert_eq!(retry["inputResponses"]["date"]["action"], "accept");
//!
//! assert_eq!(rounds.read(&json!({ "resultType": "complete", "content": [] }))?, Step::Done);
//! assert!(rounds.retried());
//! # Ok::<(), duomcp_proto::era::modern::mrtr::RoundsError>(())
//! ```

use crate::era::Era;
use duomcp_schema::methods::{self, RequestMethod};
use serde_json::{Map, Value};

/// What a result is, by its `resultType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultKind {
    /// The answer (`"complete"`, or no `resultType`: a 2025-11-25 server).
    Complete,
    /// The server needs input first (`"input_required"`, 2026-07-28).
    InputRequired,
    /// The server made a task of the request (`"task"`, the tasks extension).
    Task,
}

impl ResultKind {
    /// The kind of `result`; an error when it is not an object or names an unknown kind.
    ///
    /// ```
    /// use duomcp_proto::era::modern::mrtr::ResultKind;
    /// use serde_json::json;
    /// assert_eq!(ResultKind::of(&json!({ "content": [] })), Ok(ResultKind::Complete));
    /// assert_eq!(ResultKind::of(&json!({ "resultType": "task" })), Ok(ResultKind::Task));
    /// assert!(ResultKind::of(&json!({ "resultType": "later" })).is_err());
    /// ```
    pub fn of(result: &Value) -> Result<ResultKind, RoundsError> {
        let Some(obj) = result.as_object() else {
            return Err(RoundsError::NotAnObject);
        };
        match obj.get("resultType") {
            None => Ok(ResultKind::Complete),
            Some(Value::String(s)) if s == "complete" => Ok(ResultKind::Complete),
            Some(Value::String(s)) if s == "input_required" => Ok(ResultKind::InputRequired),
            Some(Value::String(s)) if s == "task" => Ok(ResultKind::Task),
            Some(other) => Err(RoundsError::UnknownResultType(other.clone())),
        }
    }
}

/// Why a result ends a request with an error (the method is the driver's to add).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RoundsError {
    /// The result is not a JSON object.
    NotAnObject,
    /// `resultType` names no kind this revision knows.
    UnknownResultType(Value),
    /// `input_required` on a method that does not allow it (only `tools/call`,
    /// `prompts/get` and `resources/read` may ask for input).
    InputNotAllowed,
    /// `input_required` from a 2025-11-25 server, which asks with requests of its own.
    InputInLegacy,
    /// A task the client did not ask for (no tasks extension on this method).
    TaskNotAsked,
    /// More rounds of input than the client allows.
    TooManyRounds(usize),
    /// `requestState` is not a string.
    StateNotAString(Value),
    /// `inputRequests` is not an object.
    RequestsNotAnObject(Value),
    /// An `InputRequiredResult` with neither `inputRequests` nor `requestState`.
    NothingAsked,
}

impl std::fmt::Display for RoundsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoundsError::NotAnObject => f.write_str("the result is not a JSON object"),
            RoundsError::UnknownResultType(t) => {
                write!(f, "the result has an unknown resultType {t}")
            }
            RoundsError::InputNotAllowed => {
                f.write_str("the server asked for input on a method which does not allow it")
            }
            RoundsError::InputInLegacy => {
                f.write_str("an input_required result in the 2025-11-25 era")
            }
            RoundsError::TaskNotAsked => {
                f.write_str("the server answered with a task, which the client did not ask for")
            }
            RoundsError::TooManyRounds(n) => write!(f, "more than {n} rounds of input"),
            RoundsError::StateNotAString(v) => write!(f, "requestState must be a string, not {v}"),
            RoundsError::RequestsNotAnObject(v) => {
                write!(f, "inputRequests must be an object, not {v}")
            }
            RoundsError::NothingAsked => {
                f.write_str("an InputRequiredResult without inputRequests or requestState")
            }
        }
    }
}

impl std::error::Error for RoundsError {}

/// The methods that may answer with an `InputRequiredResult` (2026-07-28).
pub const INPUT_METHODS: &[&str] = &[
    <methods::CallTool as RequestMethod>::NAME,
    <methods::GetPrompt as RequestMethod>::NAME,
    <methods::ReadResource as RequestMethod>::NAME,
];

/// How a [`Rounds`] treats what comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoundsConfig {
    /// The revision the connection speaks: only 2026-07-28 asks for input in rounds.
    pub era: Era,
    /// Rounds of input answered at most before giving up (default 8).
    pub max_rounds: usize,
    /// A task is an answer (the request declared the tasks extension), not an error.
    pub task_is_answer: bool,
    /// The caller wants the first `input_required` result back, as it is (a relay, such as a
    /// gateway, passing the round on to its own client): no retry.
    pub relay: bool,
}

impl RoundsConfig {
    /// The defaults for a connection speaking `era`: 8 rounds, no tasks, no relay.
    pub fn new(era: Era) -> Self {
        RoundsConfig {
            era,
            max_rounds: 8,
            task_is_answer: false,
            relay: false,
        }
    }

    /// At most `max` rounds of input.
    pub fn max_rounds(mut self, max: usize) -> Self {
        self.max_rounds = max;
        self
    }

    /// Whether a task is an answer (see [`RoundsConfig::task_is_answer`]).
    pub fn task_is_answer(mut self, yes: bool) -> Self {
        self.task_is_answer = yes;
        self
    }

    /// Whether the first `input_required` result is the answer (see [`RoundsConfig::relay`]).
    pub fn relay(mut self, yes: bool) -> Self {
        self.relay = yes;
        self
    }
}

/// What to do after a result was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The result is the answer to the request.
    Done,
    /// Answer these input requests (keyed as the server keyed them), give the answers to
    /// [`Rounds::answered`], then send the next [`Rounds::attempt`].
    Answer(Map<String, Value>),
}

/// One request's rounds of input (see the [module documentation](self)).
#[derive(Debug)]
pub struct Rounds<'m> {
    method: &'m str,
    params: Map<String, Value>,
    config: RoundsConfig,
    rounds: usize,
    /// The state received with the last `input_required`, sent back as it is.
    state: Option<Value>,
    /// The answers to the last round's input requests.
    responses: Option<Map<String, Value>>,
    attempts: usize,
    /// The answer is not the end of the request (a relayed round, a task).
    open: bool,
}

impl<'m> Rounds<'m> {
    /// A request of `method` with `params`, before its first attempt.
    pub fn new(method: &'m str, params: Map<String, Value>, config: RoundsConfig) -> Self {
        Rounds {
            method,
            params,
            config,
            rounds: 0,
            state: None,
            responses: None,
            attempts: 0,
            open: false,
        }
    }

    /// The params of the next attempt: the original ones, with the last round's
    /// `inputResponses` and `requestState` after a round of input. A relayed request has one
    /// attempt, whose params are moved out rather than copied.
    pub fn attempt(&mut self) -> Map<String, Value> {
        self.attempts += 1;
        let mut params = if self.config.relay {
            std::mem::take(&mut self.params)
        } else {
            self.params.clone()
        };
        if let Some(responses) = self.responses.take() {
            params.insert("inputResponses".into(), Value::Object(responses));
            if let Some(state) = self.state.take() {
                params.insert("requestState".into(), state);
            }
        }
        params
    }

    /// Reads the result of the last attempt.
    pub fn read(&mut self, result: &Value) -> Result<Step, RoundsError> {
        match ResultKind::of(result)? {
            ResultKind::Complete => return Ok(Step::Done),
            ResultKind::Task if self.config.task_is_answer => {
                self.open = true;
                return Ok(Step::Done);
            }
            ResultKind::Task => return Err(RoundsError::TaskNotAsked),
            ResultKind::InputRequired if !INPUT_METHODS.contains(&self.method) => {
                return Err(RoundsError::InputNotAllowed)
            }
            ResultKind::InputRequired if self.config.relay => {
                self.open = true;
                return Ok(Step::Done);
            }
            ResultKind::InputRequired => {}
        }
        if !self.config.era.input_in_rounds() {
            return Err(RoundsError::InputInLegacy);
        }
        if self.rounds >= self.config.max_rounds {
            return Err(RoundsError::TooManyRounds(self.rounds));
        }
        let state = match result.get("requestState") {
            None => None,
            Some(s @ Value::String(_)) => Some(s.clone()),
            Some(other) => return Err(RoundsError::StateNotAString(other.clone())),
        };
        let requests = match result.get("inputRequests") {
            None => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(other) => return Err(RoundsError::RequestsNotAnObject(other.clone())),
        };
        if requests.is_none() && state.is_none() {
            return Err(RoundsError::NothingAsked);
        }
        self.rounds += 1;
        self.state = state;
        Ok(Step::Answer(requests.unwrap_or_default()))
    }

    /// The answers to the input requests of the last [`Step::Answer`], under their keys.
    pub fn answered(&mut self, responses: Map<String, Value>) {
        self.responses = Some(responses);
    }

    /// Rounds of input answered so far.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// Whether the answer came from more than one attempt, or may need another (a relayed
    /// `input_required`, a task): such a result depends on more than the request's params
    /// and is never cached.
    pub fn retried(&self) -> bool {
        self.attempts > 1 || self.rounds > 0 || self.open
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("an object"),
        }
    }

    fn input(state: &str) -> Value {
        json!({
            "resultType": "input_required",
            "requestState": state,
            "inputRequests": { "k": { "method": "roots/list" } },
        })
    }

    #[test]
    fn a_round_trip_sends_the_state_back_as_received_and_each_round_fresh_answers() {
        let mut r = Rounds::new(
            "prompts/get",
            obj(json!({ "name": "p" })),
            RoundsConfig::new(Era::Modern),
        );
        let first = r.attempt();
        assert!(!first.contains_key("inputResponses") && !first.contains_key("requestState"));
        assert!(!r.retried());
        for n in 1..=3 {
            let state = format!("state-{n}");
            assert!(
                matches!(r.read(&input(&state)).unwrap(), Step::Answer(m) if m.contains_key("k"))
            );
            r.answered(obj(json!({ "k": { "roots": [], "round": n } })));
            let next = r.attempt();
            assert_eq!(next["name"], "p");
            assert_eq!(next["requestState"], state.as_str());
            assert_eq!(next["inputResponses"]["k"]["round"], n);
        }
        assert_eq!(r.rounds(), 3);
        assert_eq!(r.read(&json!({ "messages": [] })).unwrap(), Step::Done);
        assert!(r.retried());
    }

    #[test]
    fn state_alone_or_requests_alone_is_a_round_and_neither_is_an_error() {
        let mut r = Rounds::new("tools/call", Map::new(), RoundsConfig::new(Era::Modern));
        r.attempt();
        let only_state = json!({ "resultType": "input_required", "requestState": "s" });
        assert_eq!(r.read(&only_state).unwrap(), Step::Answer(Map::new()));
        r.answered(Map::new());
        let retry = r.attempt();
        assert_eq!(retry["requestState"], "s");
        assert_eq!(retry["inputResponses"], json!({}));
        let only_requests = json!({ "resultType": "input_required", "inputRequests": {} });
        assert_eq!(r.read(&only_requests).unwrap(), Step::Answer(Map::new()));
        r.answered(Map::new());
        assert!(
            !r.attempt().contains_key("requestState"),
            "no state was sent this time"
        );
        let neither = json!({ "resultType": "input_required" });
        assert_eq!(r.read(&neither), Err(RoundsError::NothingAsked));
    }

    #[test]
    fn malformed_rounds_are_errors() {
        let cases = [
            (
                json!({ "resultType": "input_required", "requestState": 7 }),
                RoundsError::StateNotAString(json!(7)),
            ),
            (
                json!({ "resultType": "input_required", "inputRequests": [] }),
                RoundsError::RequestsNotAnObject(json!([])),
            ),
            (
                json!({ "resultType": 1 }),
                RoundsError::UnknownResultType(json!(1)),
            ),
            (json!([]), RoundsError::NotAnObject),
            (json!({ "resultType": "task" }), RoundsError::TaskNotAsked),
        ];
        for (result, want) in cases {
            let mut r = Rounds::new("tools/call", Map::new(), RoundsConfig::new(Era::Modern));
            r.attempt();
            assert_eq!(r.read(&result), Err(want), "{result}");
        }
    }

    #[test]
    fn the_bound_the_era_the_method_the_relay_and_tasks() {
        let mut r = Rounds::new(
            "tools/call",
            Map::new(),
            RoundsConfig::new(Era::Modern).max_rounds(2),
        );
        for _ in 0..2 {
            r.attempt();
            assert!(matches!(r.read(&input("s")), Ok(Step::Answer(_))));
            r.answered(Map::new());
        }
        r.attempt();
        assert_eq!(r.read(&input("s")), Err(RoundsError::TooManyRounds(2)));

        let mut legacy = Rounds::new("tools/call", Map::new(), RoundsConfig::new(Era::Legacy));
        legacy.attempt();
        assert_eq!(legacy.read(&input("s")), Err(RoundsError::InputInLegacy));
        assert_eq!(legacy.read(&json!({ "content": [] })), Ok(Step::Done));

        let mut list = Rounds::new("tools/list", Map::new(), RoundsConfig::new(Era::Modern));
        list.attempt();
        assert_eq!(list.read(&input("s")), Err(RoundsError::InputNotAllowed));

        let params = obj(json!({ "name": "relayed" }));
        let mut relay = Rounds::new(
            "tools/call",
            params,
            RoundsConfig::new(Era::Modern).relay(true),
        );
        assert_eq!(relay.attempt()["name"], "relayed");
        assert_eq!(relay.read(&input("s")), Ok(Step::Done));
        assert!(relay.retried(), "a relayed round is not the request's end");

        let config = RoundsConfig::new(Era::Modern).task_is_answer(true);
        let mut task = Rounds::new("tools/call", Map::new(), config);
        task.attempt();
        assert_eq!(
            task.read(&json!({ "resultType": "task", "taskId": "t" })),
            Ok(Step::Done)
        );
    }
}

#[cfg(test)]
mod props {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    //! No result makes a round panic, and every round that asks for input ends, within the
    //! bound, in an answer or an error.
    use super::*;
    use crate::strategies::any_json;
    use proptest::prelude::*;

    /// Any JSON, and often a result shaped like a round (with members of any type).
    fn result() -> impl Strategy<Value = Value> {
        let kind = prop_oneof![
            Just(None),
            Just(Some(Value::from("input_required"))),
            Just(Some(Value::from("complete"))),
            Just(Some(Value::from("task"))),
            any_json().prop_map(Some),
        ];
        let shaped = (
            kind,
            proptest::option::of(any_json()),
            proptest::option::of(any_json()),
        )
            .prop_map(|(kind, state, requests)| {
                let mut m = Map::new();
                if let Some(k) = kind {
                    m.insert("resultType".into(), k);
                }
                if let Some(s) = state {
                    m.insert("requestState".into(), s);
                }
                if let Some(r) = requests {
                    m.insert("inputRequests".into(), r);
                }
                Value::Object(m)
            });
        prop_oneof![1 => any_json(), 3 => shaped]
    }

    proptest! {
        #[test]
        fn any_result_is_read_without_panic(results in proptest::collection::vec(result(), 1..12)) {
            let mut r = Rounds::new("tools/call", Map::new(), RoundsConfig::new(Era::Modern).max_rounds(4));
            for result in results {
                r.attempt();
                match r.read(&result) {
                    Ok(Step::Answer(_)) => r.answered(Map::new()),
                    Ok(Step::Done) | Err(_) => break,
                }
                prop_assert!(r.rounds() <= 4);
            }
        }

        #[test]
        fn the_state_goes_back_exactly_as_received(state in ".{0,64}", keys in proptest::collection::btree_set("[a-z]{1,6}", 0..5)) {
            let mut r = Rounds::new("resources/read", Map::new(), RoundsConfig::new(Era::Modern));
            r.attempt();
            let requests: Map<String, Value> = keys.iter().map(|k| (k.clone(), serde_json::json!({ "method": "roots/list" }))).collect();
            let result = serde_json::json!({ "resultType": "input_required", "requestState": state, "inputRequests": requests });
            let Step::Answer(asked) = r.read(&result).unwrap() else { panic!("a round") };
            prop_assert_eq!(asked.keys().collect::<Vec<_>>(), keys.iter().collect::<Vec<_>>());
            r.answered(asked.clone());
            let retry = r.attempt();
            prop_assert_eq!(&retry["requestState"], &Value::String(state));
            prop_assert_eq!(&retry["inputResponses"], &Value::Object(asked));
        }
    }
}
