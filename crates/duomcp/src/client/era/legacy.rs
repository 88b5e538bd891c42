//! The 2025-11-25 adapter: the `initialize` handshake's parameters and the meaning of its
//! answer, the server's requests for input, `logging/setLevel`,
//! `notifications/roots/list_changed`, `resources/subscribe` and the session's notifications.

use super::{Adapter, Listen, Local, Negotiated, Outbound, RequestMeta, Speak};
use crate::client::error::ClientError;
use crate::client::handlers::{Handlers, RootsSource};
use crate::client::options::RequestOptions;
use crate::era::Era;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{
    version, ClientCapabilities, Implementation, InitializeRequestParams, InitializeResult,
    LoggingLevel,
};
use serde_json::{Map, Value};

/// 2025-11-25.
pub(crate) struct Legacy;

impl Adapter for Legacy {
    fn capabilities(&self, handlers: &Handlers) -> ClientCapabilities {
        let mut caps = handlers.capabilities();
        // Only a static list can change under the client's control, and only 2025-11-25
        // has the notification that announces it.
        if let (Some(roots), Some(RootsSource::Static(_))) = (&mut caps.roots, &handlers.roots) {
            roots.list_changed = Some(true);
        }
        caps.tasks = crate::client::tasks::hosted::hosted_capability(handlers);
        caps
    }

    fn request_meta<'a>(
        &self,
        _local: &Local<'a>,
        _method: &str,
        _version: &'a str,
        _opts: &RequestOptions,
        _caller: &dyn Fn(&str) -> bool,
    ) -> RequestMeta<'a> {
        // The session holds what 2026-07-28 repeats on every request.
        RequestMeta::default()
    }

    fn mirrors_headers(&self) -> bool {
        false
    }

    fn serves_server_requests(&self) -> bool {
        true
    }

    fn ping_method(&self) -> &'static str {
        <methods::Ping as RequestMethod>::NAME
    }

    fn set_log_level(&self, level: LoggingLevel) -> Result<Option<Outbound>, ClientError> {
        let mut params = Map::new();
        params.insert(
            "level".into(),
            serde_json::to_value(level)
                .map_err(|e| ClientError::InvalidArguments(e.to_string()))?,
        );
        Ok(Some(Outbound {
            method: <methods::SetLevel as RequestMethod>::NAME,
            params,
        }))
    }

    fn roots_changed(&self) -> Option<&'static str> {
        Some(<methods::RootsListChanged as NotificationMethod>::NAME)
    }

    fn listen(&self) -> Listen {
        Listen::InSession
    }

    fn handshake_after_restart(&self) -> bool {
        true
    }
}

/// The parameters of `initialize`: the latest 2025-11-25 version, the capabilities the
/// handlers make, the client's info.
pub(crate) fn initialize_params(
    handlers: &Handlers,
    info: &Implementation,
) -> Result<Map<String, Value>, ClientError> {
    let params = InitializeRequestParams::new(
        version::LATEST_LEGACY,
        Legacy.capabilities(handlers),
        info.clone(),
    );
    match serde_json::to_value(params) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ClientError::Protocol(
            "cannot encode the initialize params".into(),
        )),
    }
}

/// What the answer to `initialize` establishes, and whether the server logs (then a level
/// the client set is sent to it next); an error when it is not an `InitializeResult` of a
/// 2025-11-25 version.
pub(crate) fn accept_initialize(value: Value) -> Result<(Negotiated, bool), ClientError> {
    let result: InitializeResult = serde_json::from_value(value).map_err(|e| {
        ClientError::Protocol(format!(
            "the answer to initialize is not an InitializeResult: {e}"
        ))
    })?;
    if !version::is_legacy(&result.protocol_version) {
        return Err(ClientError::UnsupportedVersion {
            requested: version::LATEST_LEGACY.to_owned(),
            supported: vec![result.protocol_version],
        });
    }
    let has_logging = result.capabilities.logging.is_some();
    let negotiated = Negotiated {
        era: Era::Legacy,
        protocol_version: result.protocol_version,
        capabilities: result.capabilities,
        server_info: Some(result.server_info),
        instructions: result.instructions,
    };
    Ok((negotiated, has_logging))
}

/// `initialize` must not be cancelled: a server must see it answered or the connection end.
pub(crate) fn initialize_options() -> RequestOptions {
    RequestOptions {
        no_cancel: true,
        ..RequestOptions::default()
    }
}

/// What `initialize` is sent in: 2025-11-25, its latest version.
pub(crate) fn speak() -> Speak {
    Speak {
        era: Era::Legacy,
        version: version::LATEST_LEGACY.to_owned(),
    }
}
