//! Sending HTTP requests: the auth provider's headers and its `401`/`403` retry, the headers of
//! a POST, the `GET` for a stream, the `DELETE` of a session, reading a body.

use super::wire::{
    encode_header_value, ACCEPT_BOTH, ACCEPT_SSE, LAST_EVENT_ID, MCP_METHOD, MCP_NAME,
    PROTOCOL_VERSION, SESSION_ID,
};
use super::{request_failed, Shared, MAX_AUTH_RETRIES};
use crate::client::auth::Challenge;
use crate::client::transport::{Outgoing, TransportError};
use bytes::Bytes;
use duomcp_schema::methods::{self, RequestMethod};
use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

fn header_value(name: &str, value: &str) -> Option<HeaderValue> {
    match HeaderValue::from_str(value) {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::warn!(
                "not sending the {name} header: its value is not a valid header value: {value:?}"
            );
            None
        }
    }
}

impl Shared {
    /// Sends the request `build` makes, with the `Authorization` header of the auth provider;
    /// on `401`/`403` the provider is told and, if it says so, the request is sent again.
    /// `msg` is the message a POST carries, for [`HttpOptions::on_exchange`](super::HttpOptions::on_exchange).
    pub(super) async fn send_http(
        &self,
        msg: Option<&Outgoing>,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, TransportError> {
        let mut retries = 0;
        loop {
            let mut request = build();
            if let Some(auth) = &self.options.auth {
                // The provider may bind its headers to the method (DPoP proofs, RFC 9449).
                let (client, built) = request.build_split();
                let built = built.map_err(|e| request_failed(&self.url, &e))?;
                let method = built.method().as_str().to_owned();
                let headers = auth
                    .request_headers(&method, self.url.as_str())
                    .await
                    .map_err(TransportError::Auth)?;
                request = reqwest::RequestBuilder::from_parts(client, built);
                for (name, value) in headers {
                    let Ok(name) = http::HeaderName::try_from(name.as_str()) else {
                        continue;
                    };
                    if let Some(value) = header_value(name.as_str(), &value) {
                        request = request.header(name, value);
                    }
                }
            }
            // Only when observed: the built request's headers are copied.
            let observed = match &self.options.on_exchange {
                Some(_) => {
                    let (client, built) = request.build_split();
                    let built = built.map_err(|e| request_failed(&self.url, &e))?;
                    let seen = (
                        built.method().clone(),
                        built.url().to_string(),
                        built.headers().clone(),
                    );
                    request = reqwest::RequestBuilder::from_parts(client, built);
                    Some(seen)
                }
                None => None,
            };
            let response = tokio::select! {
                r = request.send() => r.map_err(|e| request_failed(&self.url, &e))?,
                _ = self.closing.cancelled() => {
                    return Err(TransportError::Closed("the client closed the connection".into()))
                }
            };
            let status = response.status();
            if let (Some(observe), Some((method, url, request_headers))) =
                (&self.options.on_exchange, observed)
            {
                observe(&super::HttpExchange {
                    method,
                    url,
                    request_headers,
                    status,
                    response_headers: response.headers().clone(),
                    message_id: msg.and_then(|m| m.id.clone()),
                    message_method: msg.and_then(|m| m.method.clone()),
                });
            }
            if let (Some(auth), true) = (
                &self.options.auth,
                status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN,
            ) {
                if retries < MAX_AUTH_RETRIES {
                    let values: Vec<String> = response
                        .headers()
                        .get_all(WWW_AUTHENTICATE)
                        .iter()
                        .filter_map(|v| v.to_str().ok())
                        .map(str::to_owned)
                        .collect();
                    let dpop_nonce = response
                        .headers()
                        .get("dpop-nonce")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let challenge = Challenge {
                        resource_url: self.url.as_str(),
                        status: status.as_u16(),
                        www_authenticate: values.iter().map(String::as_str).collect(),
                        dpop_nonce: dpop_nonce.as_deref(),
                    };
                    if auth
                        .on_challenge(challenge)
                        .await
                        .map_err(TransportError::Auth)?
                    {
                        retries += 1;
                        continue;
                    }
                }
            }
            return Ok(response);
        }
    }

    /// The headers of a POST carrying `msg`.
    fn post_headers(&self, msg: &Outgoing, session: Option<&str>) -> HeaderMap {
        let mut h = self.options.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let initialize =
            msg.method.as_deref() == Some(<methods::Initialize as RequestMethod>::NAME);
        // `initialize` is sent before any version is agreed on.
        if let (Some(v), false) = (&msg.protocol_version, initialize) {
            if let Some(v) = header_value("MCP-Protocol-Version", v) {
                h.insert(PROTOCOL_VERSION, v);
            }
        }
        if let Some(m) = msg
            .method
            .as_deref()
            .and_then(|m| header_value("Mcp-Method", m))
        {
            h.insert(MCP_METHOD, m);
        }
        if let Some(n) = &msg.name {
            if let Some(v) = header_value("Mcp-Name", &encode_header_value(n)) {
                h.insert(MCP_NAME, v);
            }
        }
        for (name, value) in &msg.trace_context {
            if let (Ok(name), Ok(value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::from_str(value),
            ) {
                h.insert(name, value);
            }
        }
        for (name, value) in &msg.header_params {
            let Ok(header) = HeaderName::try_from(format!("mcp-param-{name}")) else {
                tracing::warn!("not sending Mcp-Param-{name}: not a valid header name");
                continue;
            };
            if let Some(v) = header_value(header.as_str(), &encode_header_value(value)) {
                h.insert(header, v);
            }
        }
        if let Some(v) = session.and_then(|s| header_value("Mcp-Session-Id", s)) {
            h.insert(SESSION_ID, v);
        }
        h
    }

    pub(super) async fn post(
        &self,
        msg: &Outgoing,
        session: Option<&str>,
    ) -> Result<reqwest::Response, TransportError> {
        self.post_conditional(msg, session, None).await
    }

    /// [`post`](Self::post), with `If-None-Match: if_none_match` when given.
    pub(super) async fn post_conditional(
        &self,
        msg: &Outgoing,
        session: Option<&str>,
        if_none_match: Option<&HeaderValue>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut headers = self.post_headers(msg, session);
        if let Some(tag) = if_none_match {
            headers.insert(http::header::IF_NONE_MATCH, tag.clone());
        }
        let body = Bytes::from(msg.body.clone());
        self.send_http(Some(msg), || {
            self.client
                .post(self.url.clone())
                .headers(headers.clone())
                .body(body.clone())
        })
        .await
    }

    /// A `GET` for an SSE stream: the standalone stream, or with `last_event_id` the
    /// resumption of a stream.
    pub(super) async fn get_stream(
        &self,
        last_event_id: Option<&str>,
        session: Option<&str>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut h = self.options.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static(ACCEPT_SSE));
        if let Some(v) = self
            .negotiated_version()
            .and_then(|v| header_value("MCP-Protocol-Version", &v))
        {
            h.insert(PROTOCOL_VERSION, v);
        }
        if let Some(v) = session.and_then(|s| header_value("Mcp-Session-Id", s)) {
            h.insert(SESSION_ID, v);
        }
        if let Some(v) = last_event_id.and_then(|id| header_value("Last-Event-ID", id)) {
            h.insert(LAST_EVENT_ID, v);
        }
        self.send_http(None, || {
            self.client.get(self.url.clone()).headers(h.clone())
        })
        .await
    }

    /// `DELETE` of a session (its answer, `405` included, does not matter).
    pub(super) async fn delete_session(&self, session: &str) {
        let mut h = self.options.headers.clone();
        if let Some(v) = self
            .negotiated_version()
            .and_then(|v| header_value("MCP-Protocol-Version", &v))
        {
            h.insert(PROTOCOL_VERSION, v);
        }
        if let Some(v) = header_value("Mcp-Session-Id", session) {
            h.insert(SESSION_ID, v);
        }
        match self
            .send_http(None, || {
                self.client.delete(self.url.clone()).headers(h.clone())
            })
            .await
        {
            Ok(r) => tracing::debug!(status = %r.status(), "ended the session"),
            Err(e) => tracing::debug!("could not end the session: {e}"),
        }
    }

    /// Reads a whole body, up to `limit` bytes.
    pub(super) async fn read_body(
        &self,
        response: &mut reqwest::Response,
        limit: usize,
    ) -> Result<Vec<u8>, TransportError> {
        let mut out = Vec::new();
        loop {
            let chunk = tokio::select! {
                c = response.chunk() => c.map_err(|e| request_failed(&self.url, &e))?,
                _ = self.closing.cancelled() => {
                    return Err(TransportError::Closed("the client closed the connection".into()))
                }
            };
            let Some(chunk) = chunk else { return Ok(out) };
            if out.len() + chunk.len() > limit {
                return Err(TransportError::Other(format!(
                    "the server's answer is larger than {limit} bytes"
                )));
            }
            out.extend_from_slice(&chunk);
        }
    }
}
