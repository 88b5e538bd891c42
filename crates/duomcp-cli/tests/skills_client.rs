//! The client's skills API (`duomcp::client::skills`) against real servers: the reference
//! server over stdio (the `duomcp serve` binary) and over Streamable HTTP (in-process), in both
//! eras; skills served from a temporary directory that changes after listing; entries and
//! servers that do not match; and laziness, observed on a tapped in-memory connection.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::TempDir;

use duomcp::client::skills::{Integrity, SkillEntry, SkillError, SkillResources};
use duomcp::client::{Client, ClientError, EraChoice};
use duomcp::era::Era;
use duomcp::schema::{CacheScope, Resource};
use duomcp::server::skills::{Skill, SkillSet};
use duomcp::server::{CachePolicy, Server, ServerConfig};
use duomcp::skills::EXTENSION_ID;
use duomcp::transport::http::StreamableHttp;
use duomcp::transport::memory::{self, Side, Tap};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const NOTES: &str = "skill://release-notes/SKILL.md";
const ERAS: &str = "skill://duomcp/protocol-eras/SKILL.md";

fn sha(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\n---\n# {name}\n")
}

// ---------------------------------------------------------------------------------------------
// A recording connection: every message the client sends crosses an in-memory connection's
// tap, so tests can tell which requests were sent.

/// The URIs of the `method` requests sent so far.
fn sent_uris(log: &Tap, method: &str) -> Vec<String> {
    log.from(Side::Client)
        .iter()
        .filter(|m| m["method"] == method)
        .map(|m| m["params"]["uri"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Connects a client to `server` in-process, over an in-memory connection with a tap.
async fn recorded(server: Server, era: EraChoice, skills: bool) -> (Client, Tap) {
    let mut builder = Client::builder().era(era);
    if skills {
        builder = builder.skills();
    }
    memory::connect_with(builder, server).await.unwrap()
}

// ---------------------------------------------------------------------------------------------
// The reference server, both eras, both transports.

/// Everything the API offers, against the reference server's demo skills.
async fn exercise(client: &Client, era: Era) {
    assert_eq!(client.era(), era);
    assert!(client.offers_skills() && client.offers_directory_read());

    let page = client.list_skills(None).await.unwrap();
    let uris: Vec<&str> = page.skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, [ERAS, NOTES]);
    assert_eq!(page.next_cursor, None);
    let all = client.list_all_skills().await.unwrap();
    assert_eq!(all, page.skills);
    let entry = client.get_skill(NOTES).await.unwrap();
    assert_eq!(
        entry, all[1],
        "skills/get and skills/list describe it alike"
    );
    assert_eq!(entry.name(), Some("release-notes"));
    assert_eq!(entry.frontmatter["license"], "MIT OR Apache-2.0");
    assert_eq!(entry.files().unwrap().len(), 3);

    let skill = client.load_skill(entry.clone()).unwrap();
    assert!(skill.fetched().is_empty());
    assert_eq!(skill.root_uri(), "skill://release-notes");
    let md = skill.skill_md().await.unwrap();
    assert_eq!(md.integrity(), Integrity::Verified);
    assert_eq!(md.mime_type(), Some("text/markdown"));
    let text = md.text().unwrap();
    assert!(
        text.starts_with("---\nname: release-notes\n") && text.contains("# Release notes"),
        "{text}"
    );
    assert_eq!(
        md.bytes().len() as u64,
        entry.files().unwrap()[0].size,
        "SKILL.md is listed first and its size is what was read"
    );

    let sections = skill.read("references/sections.md").await.unwrap();
    assert!(sections.text().unwrap().starts_with("# Sections"));
    let template = skill
        .read("skill://release-notes/templates/entry.md")
        .await
        .unwrap();
    assert_eq!(template.text(), Some("- {summary} ({issue})\n"));
    assert_eq!(
        skill.fetched(),
        [
            NOTES,
            "skill://release-notes/references/sections.md",
            "skill://release-notes/templates/entry.md"
        ]
    );
    let outside = skill
        .read("../duomcp/protocol-eras/SKILL.md")
        .await
        .unwrap_err();
    assert!(matches!(outside, SkillError::Unlisted { .. }), "{outside}");

    let templates = skill.read_directory("templates").await.unwrap();
    let names: Vec<&str> = templates.listed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["entry.md"]);
    assert!(templates.unlisted.is_empty());
    let root = skill.read_directory("").await.unwrap();
    let names: Vec<&str> = root.listed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["SKILL.md", "references", "templates"]);

    let eras = client.load_skill(all[0].clone()).unwrap();
    let example = eras.read("examples/discover.json").await.unwrap();
    assert_eq!(example.mime_type(), Some("application/json"));
    let parsed: Value = serde_json::from_slice(example.bytes()).unwrap();
    assert_eq!(parsed["method"], "server/discover");

    let unknown = client
        .get_skill("skill://no-such-skill/SKILL.md")
        .await
        .unwrap_err();
    assert_eq!(
        unknown.rpc_error().map(|e| e.code),
        Some(-32602),
        "{unknown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_works_against_the_reference_server_over_stdio_in_both_eras() {
    for (choice, era) in [
        (EraChoice::Legacy, Era::Legacy),
        (EraChoice::Modern, Era::Modern),
    ] {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.arg("serve");
        let client = Client::builder()
            .era(choice)
            .skills()
            .connect_stdio(cmd)
            .await
            .unwrap();
        exercise(&client, era).await;
        client.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_works_against_the_reference_server_over_http_in_both_eras() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(StreamableHttp::new(duomcp_cli::reference::server()).serve(listener));
    for (choice, era) in [
        (EraChoice::Legacy, Era::Legacy),
        (EraChoice::Modern, Era::Modern),
    ] {
        let client = Client::builder()
            .era(choice)
            .skills()
            .connect_http(&url)
            .await
            .unwrap();
        exercise(&client, era).await;
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn long_listings_are_followed_page_by_page() {
    let mut set = SkillSet::new();
    for name in ["alpha", "beta", "gamma"] {
        set = set
            .skill(Skill::new(name).file("SKILL.md", md(name)))
            .unwrap();
    }
    let mut config = ServerConfig::default();
    config.page_size = 1;
    let server = Server::builder().config(config).skills(set).build();
    let (client, log) = recorded(server, EraChoice::Modern, true).await;
    let first = client.list_skills(None).await.unwrap();
    assert_eq!(first.skills.len(), 1);
    let cursor = first.next_cursor.clone().expect("a next page");
    let second = client.list_skills(Some(cursor)).await.unwrap();
    assert_eq!(second.skills[0].name(), Some("beta"));
    let all = client.list_all_skills().await.unwrap();
    let names: Vec<_> = all.iter().map(|s| s.name().unwrap()).collect();
    assert_eq!(names, ["alpha", "beta", "gamma"]);
    let lists = log
        .from(Side::Client)
        .iter()
        .filter(|m| m["method"] == "skills/list")
        .count();
    assert_eq!(
        lists,
        2 + 3,
        "two single pages, then three for the whole listing"
    );
}

// ---------------------------------------------------------------------------------------------
// Negotiation and laziness.

#[tokio::test]
async fn the_extension_is_declared_in_both_eras_and_nothing_is_read_before_it_is_asked_for() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (client, log) = recorded(duomcp_cli::reference::server(), era, true).await;
        let entries = client.list_all_skills().await.unwrap();
        let entry = client.get_skill(NOTES).await.unwrap();
        let skill = client.load_skill(entry).unwrap();
        let _other = client.load_skill(entries[0].clone()).unwrap();

        let messages = log.from(Side::Client);
        match era {
            EraChoice::Legacy => {
                let init = messages
                    .iter()
                    .find(|m| m["method"] == "initialize")
                    .expect("initialize");
                assert_eq!(
                    init["params"]["capabilities"]["extensions"][EXTENSION_ID],
                    json!({}),
                    "{init}"
                );
            }
            _ => {
                let lists: Vec<&Value> = messages
                    .iter()
                    .filter(|m| m["method"] == "skills/list" || m["method"] == "skills/get")
                    .collect();
                assert_eq!(lists.len(), 2);
                for m in lists {
                    assert_eq!(
                        m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
                            ["extensions"][EXTENSION_ID],
                        json!({}),
                        "{m}"
                    );
                }
            }
        }
        assert!(
            sent_uris(&log, "resources/read").is_empty(),
            "listing, getting and loading read nothing: {messages:?}"
        );
        assert!(sent_uris(&log, "resources/directory/read").is_empty());

        skill.skill_md().await.unwrap();
        assert_eq!(sent_uris(&log, "resources/read"), [NOTES]);
        skill.skill_md().await.unwrap();
        skill.clone().skill_md().await.unwrap();
        assert_eq!(
            sent_uris(&log, "resources/read"),
            [NOTES],
            "verified content is kept, by clones too"
        );
        skill.read("templates/entry.md").await.unwrap();
        skill.read("templates/entry.md").await.unwrap();
        assert_eq!(
            sent_uris(&log, "resources/read"),
            [NOTES, "skill://release-notes/templates/entry.md"]
        );
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn without_the_servers_declaration_nothing_is_sent() {
    let server = Server::builder().tool("hi", || async { "hello" }).build();
    let (client, log) = recorded(server, EraChoice::Modern, false).await;
    let e = client.list_skills(None).await.unwrap_err();
    assert!(matches!(e, ClientError::Unsupported(_)), "{e}");
    assert!(e.to_string().contains(EXTENSION_ID), "{e}");
    assert!(client.get_skill(NOTES).await.is_err());
    assert!(client.read_directory("skill://x", None).await.is_err());
    let messages = log.from(Side::Client);
    assert!(
        !messages.iter().any(|m| {
            let method = m["method"].as_str().unwrap_or_default();
            method.starts_with("skills/") || method == "resources/directory/read"
        }),
        "{messages:?}"
    );
    assert!(
        messages.iter().all(
            |m| m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
                .get("extensions")
                .is_none()
        ),
        "a client built without .skills() declares no extension"
    );
}

// ---------------------------------------------------------------------------------------------
// Verification.

#[tokio::test]
async fn a_skill_whose_files_change_after_listing_is_refused_until_refreshed() {
    let dir = TempDir::new("change");
    dir.write("team/deploy/SKILL.md", &md("deploy"));
    dir.write("team/deploy/steps/one.md", "first version");
    let set = SkillSet::from_dir(&dir.0).unwrap();
    // Reads may be cached by the client for a minute: a stale copy must not get through.
    let mut config = ServerConfig::default();
    config.read_cache = CachePolicy {
        ttl_ms: 60_000,
        scope: CacheScope::Public,
    };
    let server = Server::builder().config(config).skills(set).build();
    let (client, log) = recorded(server, EraChoice::Modern, true).await;
    let uri = "skill://team/deploy/SKILL.md";
    let one = "skill://team/deploy/steps/one.md";
    let listed = client.list_all_skills().await.unwrap();
    assert_eq!(listed.len(), 1);
    let held = listed[0].clone();
    let skill = client.load_skill(held.clone()).unwrap();

    // Same length, other bytes: the digest gives it away.
    dir.write("team/deploy/steps/one.md", "FIRST version");
    let e = skill.read("steps/one.md").await.unwrap_err();
    match &e {
        SkillError::DigestMismatch {
            uri,
            listed,
            served,
        } => {
            assert_eq!(uri, one);
            assert_eq!(listed, &sha(b"first version"));
            assert_eq!(served, &sha(b"FIRST version"));
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
    assert!(e.is_verification_failure());
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("refusing {one}:")) && text.contains("skills/get"),
        "{text}"
    );

    // Another length: refused on the size alone.
    dir.write("team/deploy/steps/one.md", "a longer second version");
    let e = skill.read("steps/one.md").await.unwrap_err();
    assert!(
        matches!(
            e,
            SkillError::SizeMismatch {
                listed: 13,
                served: 23,
                ..
            }
        ),
        "{e}"
    );
    assert!(skill.fetched().is_empty(), "refused content is not kept");

    // A file added after listing is not part of the held entry: refused without a request.
    dir.write("team/deploy/steps/two.md", "new");
    let reads_before = sent_uris(&log, "resources/read").len();
    let e = skill.read("steps/two.md").await.unwrap_err();
    assert!(matches!(e, SkillError::Unlisted { .. }), "{e}");
    assert_eq!(sent_uris(&log, "resources/read").len(), reads_before);
    let steps = skill.read_directory("steps").await.unwrap();
    let listed_uris: Vec<&str> = steps.listed.iter().map(|r| r.uri.as_str()).collect();
    let unlisted_uris: Vec<&str> = steps.unlisted.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(listed_uris, [one]);
    assert_eq!(unlisted_uris, ["skill://team/deploy/steps/two.md"]);

    // SKILL.md changed too: refused.
    dir.write(
        "team/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Another description\n---\n# deploy\n",
    );
    let e = skill.skill_md().await.unwrap_err();
    assert!(e.is_verification_failure(), "{e}");

    // Refreshing the entry makes the current files readable.
    let fresh = client.get_skill(uri).await.unwrap();
    assert_ne!(fresh, held);
    let skill = client.load_skill(fresh).unwrap();
    assert_eq!(
        skill.skill_md().await.unwrap().text().unwrap(),
        "---\nname: deploy\ndescription: Another description\n---\n# deploy\n"
    );
    assert_eq!(
        skill.read("steps/one.md").await.unwrap().text(),
        Some("a longer second version")
    );
    assert_eq!(
        skill.read("steps/two.md").await.unwrap().text(),
        Some("new")
    );

    // The client cached that read (ttlMs 60 s): another handle on the same entry is served
    // from the cache.
    let reads = sent_uris(&log, "resources/read").len();
    let again = client.load_skill(skill.entry().clone()).unwrap();
    assert_eq!(
        again.read("steps/one.md").await.unwrap().text(),
        Some("a longer second version")
    );
    assert_eq!(
        sent_uris(&log, "resources/read").len(),
        reads,
        "a cache hit"
    );
    // The file changes again; under a refreshed entry the cached copy fails, is dropped, and
    // the file is fetched once more.
    dir.write("team/deploy/steps/one.md", "third");
    let reads_of_one = |log: &Tap| {
        sent_uris(log, "resources/read")
            .iter()
            .filter(|u| *u == one)
            .count()
    };
    let before = reads_of_one(&log);
    let skill = client
        .load_skill(client.get_skill(uri).await.unwrap())
        .unwrap();
    let file = skill.read("steps/one.md").await.unwrap();
    assert_eq!(file.text(), Some("third"));
    assert_eq!(file.integrity(), Integrity::Verified);
    assert_eq!(
        reads_of_one(&log),
        before + 1,
        "the stale copy came from the cache"
    );
}

/// The reference server's entry for release-notes, changed by `tamper`.
async fn tampered(client: &Client, tamper: impl FnOnce(&mut SkillEntry)) -> SkillEntry {
    let mut entry = client.get_skill(NOTES).await.unwrap();
    tamper(&mut entry);
    entry
}

fn files(entry: &mut SkillEntry) -> &mut Vec<duomcp::skills::SkillResource> {
    match &mut entry.resources {
        SkillResources::Files(f) => f,
        other => panic!("not a manifest: {other:?}"),
    }
}

#[tokio::test]
async fn reads_that_do_not_match_the_held_entry_are_refused() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (client, log) = recorded(duomcp_cli::reference::server(), era, true).await;

        // The frontmatter in the entry differs from the file's: refused after the digest
        // matched.
        let entry = tampered(&client, |e| {
            e.frontmatter
                .insert("description".into(), json!("Something else"));
        })
        .await;
        let skill = client.load_skill(entry).unwrap();
        match skill.skill_md().await.unwrap_err() {
            SkillError::FrontmatterMismatch {
                uri,
                field,
                listed,
                served,
            } => {
                assert_eq!(uri, NOTES);
                assert_eq!(field, "description");
                assert_eq!(listed, Some(json!("Something else")));
                assert!(served
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .starts_with("Draft release notes"));
            }
            other => panic!("expected a frontmatter mismatch, got {other}"),
        }
        let entry = tampered(&client, |e| {
            e.frontmatter.remove("license");
        })
        .await;
        let e = client
            .load_skill(entry)
            .unwrap()
            .skill_md()
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("frontmatter field `license` is \"MIT OR Apache-2.0\" in SKILL.md but absent in the skill entry"),
            "{e}"
        );

        // Wrong size (the digest would match).
        let entry = tampered(&client, |e| files(e)[1].size += 1).await;
        let e = client
            .load_skill(entry)
            .unwrap()
            .read("references/sections.md")
            .await
            .unwrap_err();
        assert!(matches!(e, SkillError::SizeMismatch { .. }), "{e}");

        // Wrong digest.
        let entry = tampered(&client, |e| files(e)[2].digest = sha(b"something else")).await;
        let skill = client.load_skill(entry).unwrap();
        let e = skill.read("templates/entry.md").await.unwrap_err();
        assert!(matches!(e, SkillError::DigestMismatch { .. }), "{e}");
        assert!(skill.fetched().is_empty());

        // Every one of them went to the server, and none was used.
        assert_eq!(sent_uris(&log, "resources/read").len(), 4);

        // Entries that break the rules are not loaded at all.
        let entry = tampered(&client, |e| {
            files(e).remove(0);
        })
        .await;
        let e = client.load_skill(entry).unwrap_err();
        assert!(e.to_string().contains("do not list its SKILL.md"), "{e}");
        let entry = tampered(&client, |e| {
            e.resources = SkillResources::Invalid(json!(null))
        })
        .await;
        assert!(matches!(
            client.load_skill(entry),
            Err(SkillError::InvalidEntry { .. })
        ));
        let entry = tampered(&client, |e| {
            e.frontmatter.insert("name".into(), json!("other-name"));
        })
        .await;
        assert!(client.load_skill(entry).is_err());
        let entry = tampered(&client, |e| {
            let SkillResources::Files(f) = &mut e.resources else {
                unreachable!()
            };
            let template = f[2].clone();
            for i in 0..600 {
                let mut extra = template.clone();
                extra.uri = format!("skill://release-notes/extra/{i}.md");
                f.push(extra);
            }
        })
        .await;
        assert!(matches!(
            client.load_skill(entry),
            Err(SkillError::TooLarge { .. })
        ));
        assert_eq!(sent_uris(&log, "resources/read").len(), 4);
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_server_serving_other_bytes_than_its_entry_lists_is_refused() {
    // A registered resource takes precedence over the skill file at the same URI, so this
    // server's SKILL.md is not the one its entry describes.
    let server = Server::builder()
        .skills(
            SkillSet::new()
                .skill(Skill::new("notes").file("SKILL.md", md("notes")))
                .unwrap(),
        )
        .resource(Resource::new("skill://notes/SKILL.md", "notes"), || async {
            "---\nname: notes\ndescription: Do something else entirely\n---\n".to_string()
        })
        .build();
    let (client, _log) = recorded(server, EraChoice::Modern, true).await;
    let entry = client.get_skill("skill://notes/SKILL.md").await.unwrap();
    let e = client
        .load_skill(entry)
        .unwrap()
        .skill_md()
        .await
        .unwrap_err();
    assert!(e.is_verification_failure(), "{e}");
}

#[tokio::test]
async fn dynamic_skills_are_read_unverified_but_their_frontmatter_is_checked() {
    let (client, log) = recorded(duomcp_cli::reference::server(), EraChoice::Modern, true).await;
    let entry = tampered(&client, |e| e.resources = SkillResources::Dynamic).await;
    let skill = client.load_skill(entry).unwrap();
    assert!(skill.is_dynamic());
    let md = skill.skill_md().await.unwrap();
    assert_eq!(md.integrity(), Integrity::Unverifiable);
    let file = skill.read("templates/entry.md").await.unwrap();
    assert_eq!(file.integrity(), Integrity::Unverifiable);
    let e = skill
        .read("skill://duomcp/protocol-eras/SKILL.md")
        .await
        .unwrap_err();
    assert!(
        matches!(e, SkillError::Unlisted { .. }),
        "outside its root: {e}"
    );
    assert_eq!(sent_uris(&log, "resources/read").len(), 2);

    let entry = tampered(&client, |e| {
        e.resources = SkillResources::Dynamic;
        e.frontmatter.insert("license".into(), json!("GPL"));
    })
    .await;
    let e = client
        .load_skill(entry)
        .unwrap()
        .skill_md()
        .await
        .unwrap_err();
    assert!(matches!(e, SkillError::FrontmatterMismatch { .. }), "{e}");
}
