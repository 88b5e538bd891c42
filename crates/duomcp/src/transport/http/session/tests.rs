use super::sessions::new_session_id;
use super::*;

#[test]
fn event_ids_round_trip() {
    assert_eq!(parse_event_id(&event_id(3, 17)), Some((3, 17)));
    assert_eq!(parse_event_id("0-0"), Some((0, 0)));
    assert_eq!(parse_event_id("x-1"), None);
    assert_eq!(parse_event_id("12"), None);
}

#[test]
fn session_ids_are_visible_ascii_and_distinct() {
    let a = new_session_id().unwrap();
    let b = new_session_id().unwrap();
    assert_ne!(a, b);
    assert!(a.len() >= 32);
    assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
}
