//! The typed API's calls: served from the cache when fresh, else sent, and where the method
//! allows it run through the MRTR loop (answer `inputRequests` with the handlers, retry).

use super::*;

/// The methods that may answer with an `InputRequiredResult` (2026-07-28).
const MRTR_METHODS: &[&str] = &[
    <methods::CallTool as RequestMethod>::NAME,
    <methods::GetPrompt as RequestMethod>::NAME,
    <methods::ReadResource as RequestMethod>::NAME,
];

/// The kind of a result, from `resultType` (absent: a legacy server, so complete).
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Complete,
    InputRequired,
    Task,
}

fn kind_of(method: &str, v: &Value) -> Result<Kind, ClientError> {
    let Some(obj) = v.as_object() else {
        return Err(ClientError::Protocol(format!(
            "the result of {method} is not a JSON object"
        )));
    };
    match obj.get("resultType") {
        None => Ok(Kind::Complete),
        Some(Value::String(s)) if s == "complete" => Ok(Kind::Complete),
        Some(Value::String(s)) if s == "input_required" => Ok(Kind::InputRequired),
        Some(Value::String(s)) if s == "task" => Ok(Kind::Task),
        Some(other) => Err(ClientError::Protocol(format!(
            "the result of {method} has an unknown resultType {other}"
        ))),
    }
}

impl Inner {
    /// A request as the typed API makes it: served from the cache when fresh, run through the
    /// MRTR loop where the method allows it, stored in the cache when its `ttlMs` says so.
    pub(crate) async fn call(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        opts: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let key = CACHEABLE
            .contains(&method)
            .then(|| Cache::key(method, &params));
        if let Some(hit) = key.as_deref().and_then(|k| self.cache.get(k)) {
            tracing::trace!(method, "served from the cache");
            return Ok(hit);
        }
        let generation = self.cache.generation();
        // Kept only when the result may be cached under them.
        let cached_params = key.is_some().then(|| params.clone());
        let (value, retried) = if MRTR_METHODS.contains(&method) {
            self.request_mrtr(method, params, opts).await?
        } else {
            let v = self.request(method, params, opts).await?;
            match kind_of(method, &v)? {
                Kind::Complete => (v, false),
                Kind::InputRequired => {
                    return Err(ClientError::Protocol(format!(
                        "the server asked for input on {method}, which does not allow it"
                    )));
                }
                Kind::Task => {
                    return Err(ClientError::Unsupported(format!(
                    "the server answered {method} with a task, which the client did not ask for"
                )))
                }
            }
        };
        // Results of retried requests depend on inputs outside the key: never cached.
        if let (Some(key), Some(params), false) = (key, cached_params, retried) {
            self.cache.put(key, method, &params, &value, generation);
        }
        Ok(value)
    }

    /// The MRTR loop: answer `inputRequests` with the handlers and retry with a new id, the
    /// original params, `inputResponses` and the `requestState` exactly as received.
    async fn request_mrtr(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        opts: &RequestOptions,
    ) -> Result<(Value, bool), ClientError> {
        let speak = self.speak()?;
        let mut retry: Option<(Map<String, Value>, Option<Value>)> = None;
        let mut rounds = 0;
        let mut traced = super::super::telemetry::Rounds::default();
        // A relaying caller gets the first input_required back, never a retry: its params
        // are sent as they are, not copied for a retry that cannot come.
        let (mut once, params) = if opts.relay_input_required {
            (Some(params), Map::new())
        } else {
            (None, params)
        };
        loop {
            let retried = retry.is_some();
            let mut attempt = once.take().unwrap_or_else(|| params.clone());
            if let Some((responses, state)) = retry.take() {
                attempt.insert("inputResponses".into(), Value::Object(responses));
                if let Some(state) = state {
                    attempt.insert("requestState".into(), state);
                }
            }
            let value = self
                .request_traced(method, attempt, opts, &speak, &mut traced)
                .await?;
            match kind_of(method, &value)? {
                Kind::Complete => return Ok((value, retried)),
                // The tasks extension (declared on tools/call): `Client::call_tool` polls it.
                Kind::Task if super::super::tasks::names::declares_extension(method) => {
                    return Ok((value, true))
                }
                Kind::Task => {
                    return Err(ClientError::Unsupported(format!(
                    "the server answered {method} with a task, which the client did not ask for"
                )))
                }
                Kind::InputRequired if opts.relay_input_required => return Ok((value, true)),
                Kind::InputRequired => {}
            }
            if !super::super::era::of(speak.era).input_in_rounds() {
                return Err(ClientError::Protocol(format!(
                    "an input_required result to {method} in the 2025-11-25 era"
                )));
            }
            if rounds >= self.config.max_input_rounds {
                return Err(ClientError::TooManyInputRounds {
                    method: method.to_owned(),
                    rounds,
                });
            }
            rounds += 1;
            let state = match value.get("requestState") {
                None => None,
                Some(s @ Value::String(_)) => Some(s.clone()),
                Some(other) => {
                    return Err(ClientError::Protocol(format!(
                        "requestState must be a string, not {other}"
                    )))
                }
            };
            let requests = match value.get("inputRequests") {
                None => None,
                Some(Value::Object(m)) => Some(m),
                Some(other) => {
                    return Err(ClientError::Protocol(format!(
                        "inputRequests must be an object, not {other}"
                    )))
                }
            };
            if requests.is_none() && state.is_none() {
                return Err(ClientError::Protocol(
                    "an InputRequiredResult without inputRequests or requestState".into(),
                ));
            }
            let responses = match requests {
                Some(r) => self.answer_inputs(r, opts.on_input.as_ref()).await?,
                None => Map::new(),
            };
            tracing::debug!(
                method,
                round = rounds,
                inputs = responses.len(),
                "retrying with input responses"
            );
            retry = Some((responses, state));
        }
    }

    /// Answers the input requests with the application's handlers, all at once (a server
    /// that asks for several inputs in one round may wait on all of them together, e.g. a
    /// gateway relaying them to its own client as one round); the answers keep the keys.
    pub(crate) async fn answer_inputs(
        &self,
        requests: &Map<String, Value>,
        own: Option<&Arc<InputFn>>,
    ) -> Result<Map<String, Value>, ClientError> {
        let mut parsed = Vec::with_capacity(requests.len());
        for (key, raw) in requests {
            let request: InputRequest = serde_json::from_value(raw.clone())
                .map_err(|e| ClientError::Protocol(format!("input request `{key}`: {e}")))?;
            parsed.push((key, request));
        }
        let answers = futures_util::future::try_join_all(parsed.into_iter().map(
            |(key, request)| async move {
                Ok::<_, ClientError>((key, self.answer_input(request, own).await?))
            },
        ))
        .await?;
        let mut responses = Map::new();
        for (key, value) in answers {
            responses.insert(key.clone(), value);
        }
        Ok(responses)
    }

    /// Answers one input request with the request's own answerer (`own`), else the
    /// application's handler.
    pub(crate) async fn answer_input(
        &self,
        request: InputRequest,
        own: Option<&Arc<InputFn>>,
    ) -> Result<Value, ClientError> {
        let method = request.method();
        if let Some(own) = own {
            return own(request).await.map_err(|e| ClientError::Handler {
                method: method.to_owned(),
                message: e.message,
            });
        }
        let answer = match request {
            InputRequest::Elicit(p) => self
                .handlers
                .elicit(p)
                .await
                .map(|r| r.map(|v| to_value(&v))),
            InputRequest::CreateMessage(p) => self
                .handlers
                .sample(p)
                .await
                .map(|r| r.map(|v| to_value(&v))),
            InputRequest::ListRoots(_) => {
                self.handlers.roots().await.map(|r| r.map(|v| to_value(&v)))
            }
        };
        match answer {
            None => Err(ClientError::NoHandler {
                method: method.to_owned(),
            }),
            Some(Err(e)) => Err(ClientError::Handler {
                method: method.to_owned(),
                message: e.message,
            }),
            Some(Ok(v)) => v,
        }
    }
}
