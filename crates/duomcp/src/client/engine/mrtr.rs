//! The typed API's calls: served from the cache when fresh, else sent, and where the method
//! allows it run through the MRTR loop (answer `inputRequests` with the handlers, retry).

use super::*;
use duomcp_proto::era::modern::mrtr::{
    ResultKind, Rounds, RoundsConfig, RoundsError, Step, INPUT_METHODS,
};

/// A result's kind or round refused: the error the caller sees, naming the method.
fn refused(method: &str, e: RoundsError) -> ClientError {
    match e {
        RoundsError::TooManyRounds(rounds) => ClientError::TooManyInputRounds {
            method: method.to_owned(),
            rounds,
        },
        RoundsError::TaskNotAsked => ClientError::Unsupported(format!("{method}: {e}")),
        e => ClientError::Protocol(format!("{method}: {e}")),
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
        let (value, retried) = if INPUT_METHODS.contains(&method) {
            self.request_mrtr(method, params, opts).await?
        } else {
            let v = self.request(method, params, opts).await?;
            match ResultKind::of(&v).map_err(|e| refused(method, e))? {
                ResultKind::Complete => (v, false),
                ResultKind::InputRequired => {
                    return Err(refused(method, RoundsError::InputNotAllowed))
                }
                _ => return Err(refused(method, RoundsError::TaskNotAsked)),
            }
        };
        // Results of retried requests depend on inputs outside the key: never cached.
        if let (Some(key), Some(params), false) = (key, cached_params, retried) {
            self.cache.put(key, method, &params, &value, generation);
        }
        Ok(value)
    }

    /// The MRTR loop, driving `duomcp-proto`'s [`Rounds`] (which holds every rule of it):
    /// send an attempt, answer the `inputRequests` of an `input_required` result with the
    /// handlers, retry with the next attempt (a new id, the original params, `inputResponses`
    /// and the `requestState` exactly as received).
    async fn request_mrtr(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        opts: &RequestOptions,
    ) -> Result<(Value, bool), ClientError> {
        let speak = self.speak()?;
        let config = RoundsConfig::new(speak.era)
            .max_rounds(self.config.max_input_rounds)
            // The tasks extension (declared on tools/call): `Client::call_tool` polls it.
            .task_is_answer(super::super::tasks::names::declares_extension(method))
            // A relaying caller gets the first input_required back, never a retry.
            .relay(opts.relay_input_required);
        let mut rounds = Rounds::new(method, params, config);
        let mut traced = super::super::telemetry::Rounds::default();
        loop {
            let value = self
                .request_traced(method, rounds.attempt(), opts, &speak, &mut traced)
                .await?;
            let requests = match rounds.read(&value).map_err(|e| refused(method, e))? {
                Step::Done => return Ok((value, rounds.retried())),
                Step::Answer(requests) => requests,
            };
            let responses = self
                .answer_inputs(&requests, opts.on_input.as_ref())
                .await?;
            tracing::debug!(
                method,
                round = rounds.rounds(),
                inputs = responses.len(),
                "retrying with input responses"
            );
            rounds.answered(responses);
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
