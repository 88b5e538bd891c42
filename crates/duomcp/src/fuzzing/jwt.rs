//! The OAuth front door: [`AuthLayer`](crate::auth::AuthLayer) with a [`JwtValidator`] over a
//! fixed Ed25519 key, in front of a service that records who got through.
//!
//! Two modes. Raw: a fuzzed `Authorization` header (and query string) — nothing may get
//! through, since nothing fuzzed can carry a valid signature. Signed: a token built from
//! fuzzed header and claims, signed with the key (and sometimes altered after signing) —
//! what gets through must have verified: untouched, `EdDSA`, the right issuer and audience,
//! a numeric unexpired `exp`, an `nbf` that has passed, and the required scope.

use super::runtime::block_on;
use crate::auth::{JwtValidator, Principal, ResourceServer};
use crate::clock::ManualClock;
use arbitrary::{Arbitrary, Unstructured};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Map, Value};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

const ISSUER: &str = "https://auth.example.com";
const AUDIENCE: &str = "https://mcp.example.com/mcp";
const SCOPE: &str = "files:read";
const LEEWAY: i64 = 60;
/// The validator's clock (seconds since the epoch): fixed, so that a token built from an
/// input is the same in every run, and `exp` / `nbf` offsets are exact.
const NOW: i64 = 1_800_000_000;

type Seen = Arc<Mutex<Option<Arc<Principal>>>>;

/// The protected service: records the principal the layer hands it.
#[derive(Clone)]
struct Reach(Seen);

impl Service<Request> for Reach {
    type Response = Response;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: Request) -> Self::Future {
        *self.0.lock().unwrap() = req.extensions().get::<Arc<Principal>>().cloned();
        std::future::ready(Ok(Response::new(Body::empty())))
    }
}

struct Door {
    key: ring::signature::Ed25519KeyPair,
    rs: ResourceServer,
}

fn door() -> &'static Door {
    static DOOR: OnceLock<Door> = OnceLock::new();
    DOOR.get_or_init(|| {
        let key = ring::signature::Ed25519KeyPair::from_seed_unchecked(&[7; 32]).unwrap();
        use ring::signature::KeyPair as _;
        let jwk = json!({ "keys": [{
            "kty": "OKP", "crv": "Ed25519", "kid": "k1", "alg": "EdDSA", "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(key.public_key().as_ref()),
        }]});
        let validator = JwtValidator::builder(ISSUER, AUDIENCE)
            .jwks(&jwk)
            .clock(ManualClock::new(NOW as u64 * 1000))
            .build()
            .unwrap();
        let rs = ResourceServer::builder(AUDIENCE)
            .authorization_server(ISSUER)
            .required_scopes([SCOPE])
            .validator(validator)
            .build()
            .unwrap();
        Door { key, rs }
    })
}

#[derive(Arbitrary, Debug)]
enum Text {
    Good,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Alg {
    EdDsa,
    Rs256,
    Hs256,
    None,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Aud {
    Absent,
    One(Text),
    Many(Vec<Text>),
    Number(i64),
}

#[derive(Arbitrary, Debug)]
enum Time {
    Absent,
    Offset(i32),
    Text(String),
    Float(f64),
    Raw(i64),
}

#[derive(Arbitrary, Debug)]
enum Scope {
    Absent,
    Text(String),
    WithRequired(String),
    Scp(Vec<String>),
}

#[derive(Arbitrary, Debug)]
struct Signed {
    alg: Alg,
    kid: Option<Text>,
    typ: Option<String>,
    iss: Option<Text>,
    aud: Aud,
    exp: Time,
    nbf: Time,
    sub: Option<String>,
    scope: Scope,
    extra: Vec<(String, String)>,
    /// Change one byte of the finished token.
    tamper: Option<(u16, u8)>,
    lowercase_scheme: bool,
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw {
        authorization: Vec<u8>,
        query: String,
    },
    Signed(Box<Signed>),
}

fn text(t: &Text, good: &str) -> Value {
    match t {
        Text::Good => json!(good),
        Text::Other(s) => json!(s),
    }
}

fn time(t: &Time, now: i64) -> Option<Value> {
    Some(match t {
        Time::Absent => return None,
        Time::Offset(d) => json!(now + i64::from(*d)),
        Time::Text(s) => json!(s),
        Time::Float(f) => json!(f),
        Time::Raw(i) => json!(i),
    })
}

/// Sends one request through the layer: the principal that reached the service, if any.
fn knock(authorization: &[u8], query: &str) -> Option<Arc<Principal>> {
    let seen: Seen = Arc::default();
    let mut svc = door().rs.layer().layer(Reach(seen.clone()));
    let uri = if query.is_empty() {
        "/mcp".to_owned()
    } else {
        format!("/mcp?{query}")
    };
    let mut req = Request::builder().method("POST").uri(uri.as_str());
    if let Ok(v) = http::HeaderValue::from_bytes(authorization) {
        req = req.header(http::header::AUTHORIZATION, v);
    }
    let Ok(req) = req.body(Body::empty()) else {
        return None;
    };
    let res = block_on(svc.call(req)).unwrap();
    let got = seen.lock().unwrap().clone();
    assert_eq!(
        got.is_some(),
        res.status() == 200,
        "status {} for {got:?}",
        res.status()
    );
    got
}

fn signed(s: Signed) {
    let now = NOW;
    let alg = match &s.alg {
        Alg::EdDsa => "EdDSA".to_owned(),
        Alg::Rs256 => "RS256".to_owned(),
        Alg::Hs256 => "HS256".to_owned(),
        Alg::None => "none".to_owned(),
        Alg::Other(o) => o.clone(),
    };
    let mut header = Map::new();
    header.insert("alg".into(), json!(alg));
    if let Some(k) = &s.kid {
        header.insert("kid".into(), text(k, "k1"));
    }
    if let Some(t) = &s.typ {
        header.insert("typ".into(), json!(t));
    }
    let mut claims = Map::new();
    for (k, v) in &s.extra {
        claims.insert(k.clone(), json!(v));
    }
    if let Some(i) = &s.iss {
        claims.insert("iss".into(), text(i, ISSUER));
    }
    match &s.aud {
        Aud::Absent => {}
        Aud::One(t) => {
            claims.insert("aud".into(), text(t, AUDIENCE));
        }
        Aud::Many(ts) => {
            claims.insert("aud".into(), ts.iter().map(|t| text(t, AUDIENCE)).collect());
        }
        Aud::Number(n) => {
            claims.insert("aud".into(), json!(n));
        }
    }
    if let Some(v) = time(&s.exp, now) {
        claims.insert("exp".into(), v);
    }
    if let Some(v) = time(&s.nbf, now) {
        claims.insert("nbf".into(), v);
    }
    if let Some(sub) = &s.sub {
        claims.insert("sub".into(), json!(sub));
    }
    match &s.scope {
        Scope::Absent => {}
        Scope::Text(t) => {
            claims.insert("scope".into(), json!(t));
        }
        Scope::WithRequired(t) => {
            claims.insert("scope".into(), json!(format!("{t} {SCOPE}")));
        }
        Scope::Scp(list) => {
            claims.insert("scp".into(), json!(list));
        }
    }
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).unwrap()),
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap())
    );
    let sig = door().key.sign(signing_input.as_bytes());
    let token = format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()));
    let mut bytes = token.clone().into_bytes();
    if let Some((at, b)) = s.tamper {
        let at = usize::from(at) % bytes.len();
        bytes[at] = b;
    }
    let tampered = bytes != token.as_bytes();
    let scheme = if s.lowercase_scheme {
        "bearer "
    } else {
        "Bearer "
    };
    let mut authorization = scheme.as_bytes().to_vec();
    authorization.extend_from_slice(&bytes);
    let Some(p) = knock(&authorization, "") else {
        return;
    };

    // Through the door: everything must have checked out.
    let why = format!("accepted header {header:?} claims {claims:?} tampered {tampered}");
    assert!(!tampered, "{why}");
    assert_eq!(alg, "EdDSA", "{why}");
    assert_eq!(claims.get("iss"), Some(&json!(ISSUER)), "{why}");
    let aud_ok = match claims.get("aud") {
        Some(Value::String(a)) => a == AUDIENCE,
        Some(Value::Array(a)) => a.contains(&json!(AUDIENCE)),
        _ => false,
    };
    assert!(aud_ok, "{why}");
    let exp = claims
        .get("exp")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{why}"));
    assert!(exp as i64 >= now - LEEWAY, "{why}");
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf.as_f64().unwrap_or_else(|| panic!("{why}"));
        assert!(nbf <= (now + LEEWAY) as f64, "{why}");
    }
    assert!(p.has_scope(SCOPE), "{why}");
}

/// Input: [`arbitrary`] bytes (a raw header, or the parts of a signed token).
pub fn jwt_front_door(data: &[u8]) {
    match Input::arbitrary_take_rest(Unstructured::new(data)) {
        Ok(Input::Raw {
            authorization,
            query,
        }) => {
            if let Some(p) = knock(&authorization, &query) {
                panic!("a fuzzed header got through as {p:?}");
            }
        }
        Ok(Input::Signed(s)) => signed(*s),
        Err(_) => {}
    }
}
