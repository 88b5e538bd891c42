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

#[tokio::test]
async fn a_stream_resumed_after_another_copys_cursor_numbers_its_events_after_it() {
    use super::super::MemoryEventStore;
    let store = MemoryEventStore::default();
    // This copy of the standalone stream has handed out nothing; the client read up to 0-14
    // from another replica's copy, which stopped.
    let stream = LogicalStream::new(STANDALONE);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let attached = stream.attach(tx, Some(14), &store, "s").await.unwrap();
    assert!(attached.replay.is_empty());
    stream.publish(&store, "s", Bytes::from_static(b"{}")).await;
    match rx.recv().await {
        Some(Out::Event { seq, .. }) => assert_eq!(seq, 15, "0-1 again would repeat an id"),
        other => panic!("{other:?}"),
    }
    // Stored under that id: resuming after 0-14 again replays it.
    let replay = store.replay_after("s", STANDALONE, 14).await.unwrap();
    assert_eq!(replay.iter().map(|e| e.seq).collect::<Vec<_>>(), [15]);
}
