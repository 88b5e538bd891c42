//! Which era a message speaks ([`duomcp_proto::era::detect`]).

use duomcp_proto::era::Era;
use duomcp_proto::era::{detect, Signals, Undecided};

fn era(method: &str, header: Option<&str>, meta: bool, session: bool) -> Result<Era, Undecided> {
    detect(Signals {
        method: Some(method),
        version_header: header.map(Ok),
        meta_names_version: || meta,
        names_session: session,
    })
}

#[test]
fn the_header_and_meta_decide_then_the_method() {
    assert_eq!(
        era("tools/list", Some("2026-07-28"), false, false),
        Ok(Era::Modern)
    );
    assert_eq!(era("tools/list", None, true, true), Ok(Era::Modern));
    assert_eq!(
        era("tools/list", Some("2025-06-18"), true, false),
        Ok(Era::Modern)
    );
    assert_eq!(
        era("tools/list", Some("2025-06-18"), false, false),
        Ok(Era::Legacy)
    );
    assert_eq!(era("server/discover", None, false, false), Ok(Era::Modern));
    assert_eq!(era("server/discover", None, false, true), Ok(Era::Legacy));
    assert_eq!(era("initialize", None, false, false), Ok(Era::Legacy));
    assert_eq!(
        era("tools/list", Some("1999-01-01"), false, false),
        Err(Undecided::UnsupportedVersion("1999-01-01".into()))
    );
    assert_eq!(
        era("tools/list", Some("1999-01-01"), true, false),
        Ok(Era::Modern)
    );
    let malformed = detect(Signals {
        method: None,
        version_header: Some(Err(())),
        meta_names_version: || false,
        names_session: false,
    });
    assert_eq!(malformed, Err(Undecided::MalformedHeader));
}

#[test]
fn a_modern_header_decides_without_reading_the_body() {
    let decided = detect(Signals {
        method: Some("tools/list"),
        version_header: Some(Ok("2026-07-28")),
        meta_names_version: || panic!("the body was read"),
        names_session: false,
    });
    assert_eq!(decided, Ok(Era::Modern));
}

#[test]
fn each_era_has_its_revision() {
    for era in Era::ALL {
        let r = era.revision();
        assert_eq!(Era::of_version(r.protocol_version), Some(era));
        assert!(r.versions.iter().all(|v| Era::of_version(v) == Some(era)));
        assert_eq!(
            era.to_string(),
            format!("{} ({})", r.tag, r.protocol_version)
        );
        assert_eq!(r.has_sessions, !r.carries_meta);
    }
    assert_eq!(Era::Legacy.to_string(), "legacy (2025-11-25)");
    assert_eq!(Era::Modern.to_string(), "modern (2026-07-28)");
    assert_eq!(Era::Modern.sole_version(), Some("2026-07-28"));
    assert_eq!(Era::Legacy.sole_version(), None);
}
