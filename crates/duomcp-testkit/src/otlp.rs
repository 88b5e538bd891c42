//! OTLP trace exports as tests read them (feature `otlp`): every span of a batch of
//! `ResourceSpans` flattened to [`Exported`], with the `service.name` of its resource.
//!
//! ```
//! use duomcp_testkit::otlp::spans;
//! use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
//! let empty = ExportTraceServiceRequest::default();
//! assert!(spans([&empty]).is_empty());
//! ```

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;

/// One exported span, flattened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The `service.name` attribute of the span's resource (empty when it has none).
    pub service: String,
    /// The span's name.
    pub name: String,
    /// Its `SpanKind`, as the protobuf number.
    pub kind: i32,
    /// Trace id (16 bytes).
    pub trace_id: Vec<u8>,
    /// Span id (8 bytes).
    pub span_id: Vec<u8>,
    /// The parent's span id (empty for a root span).
    pub parent_span_id: Vec<u8>,
}

/// Every span of these export requests, in the order they hold them.
pub fn spans<'a>(
    requests: impl IntoIterator<Item = &'a ExportTraceServiceRequest>,
) -> Vec<Exported> {
    let mut out = Vec::new();
    for req in requests {
        for rs in &req.resource_spans {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref())
                .and_then(|v| match &v.value {
                    Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            for s in rs.scope_spans.iter().flat_map(|ss| &ss.spans) {
                out.push(Exported {
                    service: service.clone(),
                    name: s.name.clone(),
                    kind: s.kind,
                    trace_id: s.trace_id.clone(),
                    span_id: s.span_id.clone(),
                    parent_span_id: s.parent_span_id.clone(),
                });
            }
        }
    }
    out
}

/// `(service, name, kind)` of each span: what a failed wait prints.
pub fn summary(spans: &[Exported]) -> Vec<(String, String, i32)> {
    spans
        .iter()
        .map(|s| (s.service.clone(), s.name.clone(), s.kind))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    #[test]
    fn each_span_carries_its_resource_service_name() {
        let span = |name: &str| Span {
            name: name.into(),
            kind: 3,
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            ..Span::default()
        };
        let req = ExportTraceServiceRequest {
            resource_spans: vec![
                ResourceSpans {
                    resource: Some(Resource {
                        attributes: vec![KeyValue {
                            key: "service.name".into(),
                            value: Some(AnyValue {
                                value: Some(any_value::Value::StringValue("svc".into())),
                            }),
                            ..KeyValue::default()
                        }],
                        ..Resource::default()
                    }),
                    scope_spans: vec![ScopeSpans {
                        spans: vec![span("a"), span("b")],
                        ..ScopeSpans::default()
                    }],
                    ..ResourceSpans::default()
                },
                ResourceSpans {
                    scope_spans: vec![ScopeSpans {
                        spans: vec![span("c")],
                        ..ScopeSpans::default()
                    }],
                    ..ResourceSpans::default()
                },
            ],
        };
        let got = spans([&req]);
        assert_eq!(
            summary(&got),
            [
                ("svc".to_owned(), "a".to_owned(), 3),
                ("svc".to_owned(), "b".to_owned(), 3),
                (String::new(), "c".to_owned(), 3)
            ]
        );
        assert!(got[0].parent_span_id.is_empty());
    }
}
