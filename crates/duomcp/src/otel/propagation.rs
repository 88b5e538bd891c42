//! W3C trace context in and out of `params._meta` and HTTP headers.
//!
//! The keys are unprefixed (`traceparent`, `tracestate`, `baggage`), as SEP-414 and the
//! conventions say, in both revisions.

use opentelemetry::propagation::{
    Extractor, Injector, TextMapCompositePropagator, TextMapPropagator,
};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::OnceLock;

const KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// W3C trace context and baggage.
fn propagator() -> &'static TextMapCompositePropagator {
    static P: OnceLock<TextMapCompositePropagator> = OnceLock::new();
    P.get_or_init(|| {
        TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ])
    })
}

/// The propagation members of a `_meta` object (and the protocol version, read in passing).
#[derive(Deserialize, Default)]
pub(crate) struct MetaFields<'a> {
    #[serde(borrow, default)]
    traceparent: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tracestate: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    baggage: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
    pub version: Option<Cow<'a, str>>,
}

impl<'a> MetaFields<'a> {
    /// Reads `_meta` (a JSON object); anything malformed is no context.
    pub(crate) fn read(meta: &'a str) -> Self {
        serde_json::from_str(meta).unwrap_or_default()
    }

    pub(crate) fn has_trace(&self) -> bool {
        self.traceparent.is_some()
    }

    /// The remote context these members carry (an empty context when none).
    pub(crate) fn context(&self) -> Context {
        propagator().extract(self)
    }
}

impl Extractor for MetaFields<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent.as_deref(),
            "tracestate" => self.tracestate.as_deref(),
            "baggage" => self.baggage.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        KEYS.iter()
            .copied()
            .filter(|k| self.get(k).is_some())
            .collect()
    }
}

/// The trace context headers of an HTTP request (and its `Mcp-Session-Id`), for the server
/// span of the MCP request it carries.
#[derive(Debug, Default, Clone)]
pub(crate) struct HeaderContext {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub session_id: Option<String>,
}

impl HeaderContext {
    pub(crate) fn context(&self) -> Option<Context> {
        self.traceparent.as_ref()?;
        Some(propagator().extract(self))
    }
}

impl Extractor for HeaderContext {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent.as_deref(),
            "tracestate" => self.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

struct MapInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MapInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

#[cfg(feature = "client")]
struct PairInjector<'a>(&'a mut Vec<(String, String)>);

#[cfg(feature = "client")]
impl Injector for PairInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if key != "baggage" {
            self.0.push((key.to_owned(), value));
        }
    }
}

/// Writes `cx` into `params._meta` (created when missing; a `_meta` that is not an object is
/// left alone).
pub(crate) fn inject_params(cx: &Context, params: &mut Map<String, Value>) {
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        propagator().inject_context(cx, &mut MapInjector(meta));
    }
}

/// `cx` as HTTP header pairs (`traceparent`, `tracestate`).
#[cfg(feature = "client")]
pub(crate) fn header_pairs(cx: &Context) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    propagator().inject_context(cx, &mut PairInjector(&mut pairs));
    pairs
}
