//! Transcript tests of the skills extension (`io.modelcontextprotocol/skills`): advertisement,
//! `skills/list`, `skills/get`, `resources/directory/read`, skill files as resources, digests
//! computed from the served bytes, skills that change after listing, and load-time checks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use base64::Engine as _;
use duomcp::server::skills::{Skill, SkillSet};
use duomcp::server::{Server, ServerConfig};
use duomcp::skills::MAX_FILES;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use support::{modern, TempDir, Wire, LEGACY, MODERN};

const EXT: &str = "io.modelcontextprotocol/skills";

fn sha(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

async fn m(w: &mut Wire, method: &str, params: Value) -> Value {
    w.ok(method, modern(params, json!({}))).await
}

async fn m_err(w: &mut Wire, method: &str, params: Value) -> Value {
    w.err(method, modern(params, json!({}))).await
}

/// The bytes `resources/read` serves for `uri`.
async fn read_bytes(w: &mut Wire, uri: &str) -> (Vec<u8>, Value) {
    let r = m(w, "resources/read", json!({ "uri": uri })).await;
    let c = r["contents"][0].clone();
    let bytes = match (c.get("text"), c.get("blob")) {
        (Some(Value::String(t)), _) => t.clone().into_bytes(),
        (_, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
        _ => panic!("no content: {r}"),
    };
    (bytes, c)
}

/// Every entry's digests and sizes match what resources/read serves.
async fn verify(w: &mut Wire, entry: &Value) {
    for file in entry["resources"].as_array().unwrap() {
        let uri = file["uri"].as_str().unwrap();
        let (bytes, _) = read_bytes(w, uri).await;
        assert_eq!(file["digest"], sha(&bytes), "{uri}");
        assert_eq!(file["size"], bytes.len(), "{uri}");
    }
}

#[tokio::test]
async fn both_eras_advertise_skills_with_resources() {
    let mut w = Wire::reference(MODERN);
    let d = m(&mut w, "server/discover", json!({})).await;
    assert_eq!(
        d["capabilities"]["extensions"][EXT],
        json!({ "directoryRead": true })
    );
    assert!(d["capabilities"]["resources"].is_object());

    let mut l = Wire::reference(LEGACY);
    let init = l.initialize(json!({})).await;
    assert_eq!(
        init["capabilities"]["extensions"][EXT]["directoryRead"],
        true
    );
    let list = l.ok("skills/list", json!({})).await;
    assert_eq!(list["skills"].as_array().unwrap().len(), 2);
    assert!(
        list.get("ttlMs").is_none(),
        "no 2026-07-28 cache fields in 2025-11-25"
    );
}

#[tokio::test]
async fn skills_list_and_get_describe_what_is_served() {
    let mut w = Wire::reference(MODERN);
    let list = m(&mut w, "skills/list", json!({})).await;
    assert_eq!(list["resultType"], "complete");
    assert!(list["ttlMs"].is_u64() && list["cacheScope"].is_string());
    let skills = list["skills"].as_array().unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        [
            "skill://duomcp/protocol-eras/SKILL.md",
            "skill://release-notes/SKILL.md"
        ]
    );
    let notes = &skills[1];
    assert_eq!(
        notes["frontmatter"],
        json!({
            "name": "release-notes",
            "description": "Draft release notes for a duomcp release from the changes merged since the last tag.",
            "license": "MIT OR Apache-2.0",
            "metadata": { "author": "duomcp", "version": "1.0" }
        }),
        "frontmatter verbatim"
    );
    let files: Vec<&str> = notes["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "skill://release-notes/SKILL.md",
            "skill://release-notes/references/sections.md",
            "skill://release-notes/templates/entry.md"
        ]
    );
    for s in skills {
        verify(&mut w, s).await;
    }

    let got = m(
        &mut w,
        "skills/get",
        json!({ "uri": "skill://release-notes/SKILL.md" }),
    )
    .await;
    assert_eq!(&got["skill"], notes, "skills/get returns the same entry");
    assert!(got["ttlMs"].is_u64() && got.get("nextCursor").is_none());
    for bad in [
        "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md",
        "skill://release-notes/references/sections.md",
        "skill://release-notes",
    ] {
        let e = m_err(&mut w, "skills/get", json!({ "uri": bad })).await;
        assert_eq!(e["code"], -32602, "{bad}: {e}");
    }
    let e = m_err(&mut w, "skills/get", json!({})).await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn skill_files_are_resources_and_skill_md_reads_as_markdown() {
    let mut w = Wire::reference(MODERN);
    let list = m(&mut w, "resources/list", json!({})).await;
    let skill_md = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "skill://duomcp/protocol-eras/SKILL.md")
        .cloned()
        .unwrap();
    assert_eq!(
        skill_md["name"], "protocol-eras",
        "named from the frontmatter"
    );
    assert!(skill_md["description"]
        .as_str()
        .unwrap()
        .starts_with("Tell which MCP revision"));
    assert_eq!(skill_md["mimeType"], "text/markdown");
    let (bytes, contents) = read_bytes(&mut w, "skill://duomcp/protocol-eras/SKILL.md").await;
    assert_eq!(contents["mimeType"], "text/markdown");
    assert!(bytes.starts_with(b"---\nname: protocol-eras\n"));
    let (_, json_file) = read_bytes(
        &mut w,
        "skill://duomcp/protocol-eras/examples/discover.json",
    )
    .await;
    assert_eq!(json_file["mimeType"], "application/json");
    let e = m_err(
        &mut w,
        "resources/read",
        json!({ "uri": "skill://release-notes/missing.md" }),
    )
    .await;
    assert_eq!(e["code"], -32602);
    // The other resources are still there.
    assert!(list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["uri"] == "test://static-text"));
}

#[tokio::test]
async fn directories_list_their_direct_children() {
    let mut w = Wire::reference(MODERN);
    let r = m(
        &mut w,
        "resources/directory/read",
        json!({ "uri": "skill://release-notes" }),
    )
    .await;
    assert_eq!(r["resultType"], "complete");
    let children: Vec<(String, String)> = r["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["mimeType"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        children,
        [
            ("SKILL.md".to_owned(), "text/markdown".to_owned()),
            ("references".to_owned(), "inode/directory".to_owned()),
            ("templates".to_owned(), "inode/directory".to_owned()),
        ]
    );
    let sub = m(
        &mut w,
        "resources/directory/read",
        json!({ "uri": "skill://release-notes/templates" }),
    )
    .await;
    assert_eq!(
        sub["resources"][0]["uri"],
        "skill://release-notes/templates/entry.md"
    );
    let prefix = m(
        &mut w,
        "resources/directory/read",
        json!({ "uri": "skill://duomcp" }),
    )
    .await;
    assert_eq!(
        prefix["resources"][0]["uri"],
        "skill://duomcp/protocol-eras"
    );
    for bad in [
        "skill://release-notes/SKILL.md",
        "skill://nowhere",
        "skill://release-notes/",
        "test://static-text",
    ] {
        let e = m_err(&mut w, "resources/directory/read", json!({ "uri": bad })).await;
        assert_eq!(e["code"], -32602, "{bad}: {e}");
    }
}

fn paged(skills: SkillSet) -> Server {
    let mut config = ServerConfig::default();
    config.page_size = 1;
    Server::builder().config(config).skills(skills).build()
}

fn md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\n---\n# {name}\n")
}

#[tokio::test]
async fn listings_page_and_entries_are_never_split() {
    let mut set = SkillSet::new();
    for name in ["alpha", "beta", "gamma"] {
        set = set
            .skill(
                Skill::new(name)
                    .file("SKILL.md", md(name))
                    .file("a/b.txt", name),
            )
            .unwrap();
    }
    let mut w = Wire::in_process(paged(set), MODERN);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = m(&mut w, "skills/list", params).await;
        let skills = page["skills"].as_array().unwrap();
        assert_eq!(skills.len(), 1);
        assert_eq!(
            skills[0]["resources"].as_array().unwrap().len(),
            2,
            "whole entries"
        );
        seen.push(
            skills[0]["frontmatter"]["name"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ["alpha", "beta", "gamma"]);
    let e = m_err(&mut w, "skills/list", json!({ "cursor": "bogus" })).await;
    assert_eq!(e["code"], -32602);
    let page = m(
        &mut w,
        "resources/directory/read",
        json!({ "uri": "skill://beta" }),
    )
    .await;
    assert!(page["nextCursor"].is_string(), "directory reads page too");
    let next = m(
        &mut w,
        "resources/directory/read",
        json!({ "uri": "skill://beta", "cursor": page["nextCursor"] }),
    )
    .await;
    assert_eq!(next["resources"][0]["name"], "a");
}

#[tokio::test]
async fn a_skill_whose_file_changes_after_listing_is_served_with_its_new_digest() {
    let dir = TempDir::new("change");
    dir.write("team/deploy/SKILL.md", &md("deploy"));
    dir.write("team/deploy/steps/one.md", "first version");
    dir.write("team/deploy/.hidden", "not served");
    let set = SkillSet::from_dir(&dir.0).unwrap();
    let mut w = Wire::in_process(Server::builder().skills(set).build(), MODERN);
    let uri = "skill://team/deploy/SKILL.md";
    let held = m(&mut w, "skills/get", json!({ "uri": uri })).await["skill"].clone();
    assert_eq!(
        held["resources"].as_array().unwrap().len(),
        2,
        "hidden files are not served"
    );
    verify(&mut w, &held).await;

    // The file changes after the host took the entry.
    dir.write("team/deploy/steps/one.md", "second, longer version");
    dir.write("team/deploy/steps/two.md", "new file");
    let (bytes, _) = read_bytes(&mut w, "skill://team/deploy/steps/one.md").await;
    assert_eq!(bytes, b"second, longer version");
    let old = held["resources"][1].clone();
    assert_eq!(old["uri"], "skill://team/deploy/steps/one.md");
    assert_ne!(
        old["digest"],
        sha(&bytes),
        "the held entry no longer matches: the host must refresh"
    );
    let fresh = m(&mut w, "skills/get", json!({ "uri": uri })).await["skill"].clone();
    assert_eq!(
        fresh["resources"].as_array().unwrap().len(),
        3,
        "the new file is listed"
    );
    verify(&mut w, &fresh).await;
    assert_eq!(
        fresh["resources"][0], held["resources"][0],
        "SKILL.md did not change"
    );

    // A skill that becomes invalid is no longer served (and says why in the log).
    dir.write("team/deploy/SKILL.md", "no frontmatter any more");
    let e = m_err(&mut w, "skills/get", json!({ "uri": uri })).await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn a_memory_skill_replaced_at_run_time_notifies_subscribers() {
    let server = Server::builder()
        .skills(
            SkillSet::new()
                .skill(
                    Skill::new("notes")
                        .file("SKILL.md", md("notes"))
                        .file("a.md", "1"),
                )
                .unwrap(),
        )
        .build();
    let mut w = Wire::in_process(server.clone(), LEGACY);
    w.initialize(json!({})).await;
    w.ok(
        "resources/subscribe",
        json!({ "uri": "skill://notes/a.md" }),
    )
    .await;
    let before = w
        .ok("skills/get", json!({ "uri": "skill://notes/SKILL.md" }))
        .await;
    server
        .add_skill(
            Skill::new("notes")
                .file("SKILL.md", md("notes"))
                .file("a.md", "2"),
        )
        .unwrap();
    let after = w
        .ok("skills/get", json!({ "uri": "skill://notes/SKILL.md" }))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    w.ok("ping", json!({})).await;
    assert_ne!(
        before["skill"]["resources"][1]["digest"],
        after["skill"]["resources"][1]["digest"]
    );
    assert_eq!(
        before["skill"]["resources"][0],
        after["skill"]["resources"][0]
    );
    let updated: Vec<&Value> = w
        .side
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .collect();
    assert_eq!(updated.len(), 1, "only the changed file: {:?}", w.side);
    assert_eq!(updated[0]["params"]["uri"], "skill://notes/a.md");
    assert!(w
        .side
        .iter()
        .any(|m| m["method"] == "notifications/resources/list_changed"));

    assert!(server
        .add_skill(Skill::new("notes").file("SKILL.md", md("other")))
        .is_err());
    assert!(server.remove_skill("notes"));
    let e = w
        .err("skills/get", json!({ "uri": "skill://notes/SKILL.md" }))
        .await;
    assert_eq!(e["code"], -32602);
}

#[test]
fn skills_are_checked_when_loaded_with_every_problem_reported() {
    let dir = TempDir::new("invalid");
    dir.write("good/SKILL.md", &md("good"));
    dir.write(
        "Bad_Name/SKILL.md",
        "---\nname: Bad_Name\ndescription: x\n---\n",
    );
    dir.write("mismatch/SKILL.md", &md("other"));
    dir.write("nodesc/SKILL.md", "---\nname: nodesc\n---\n");
    dir.write("broken/SKILL.md", "---\nname: [broken\n---\n");
    let e = SkillSet::from_dir(&dir.0).unwrap_err();
    let text = e.to_string();
    assert_eq!(e.problems().len(), 4, "one per broken skill: {text}");
    assert!(
        text.contains("may hold only letters, digits") || text.contains("lowercase letters"),
        "{text}"
    );
    assert!(
        text.contains("must equal the skill's folder name \"mismatch\""),
        "{text}"
    );
    assert!(text.contains("non-empty string `description`"), "{text}");
    assert!(text.contains("not valid YAML"), "{text}");

    let mut many = Skill::new("many").file("SKILL.md", md("many"));
    for i in 0..MAX_FILES {
        many = many.file(format!("f/{i}.txt"), "x");
    }
    let e = SkillSet::new().skill(many).unwrap_err();
    assert!(e.to_string().contains("at most 512"), "{e}");
    assert!(SkillSet::from_dir(dir.0.join("does-not-exist")).is_err());
}

/// The problems of a single in-memory skill, as text.
fn problem(skill: Skill) -> String {
    SkillSet::new().skill(skill).unwrap_err().to_string()
}

#[test]
fn every_naming_rule_and_limit_is_checked_at_load_time_with_a_clear_error() {
    let with_name = |name: &str| {
        Skill::new(name).file(
            "SKILL.md",
            format!("---\nname: {name}\ndescription: x\n---\n"),
        )
    };
    // Names: 1 to 64 of a-z, 0-9 and single inner hyphens.
    let longest = "a".repeat(64);
    assert!(SkillSet::new().skill(with_name(&longest)).is_ok());
    let e = problem(with_name(&"a".repeat(65)));
    assert!(e.contains("must be 1 to 64 characters long"), "{e}");
    for name in ["-lead", "trail-", "dou--ble"] {
        let e = problem(with_name(name));
        assert!(
            e.contains(&format!("invalid skill {name}: name {name:?} must not start or end with a hyphen nor hold two in a row")),
            "{e}"
        );
    }
    let e = problem(with_name("Upper"));
    assert!(
        e.contains("may hold only lowercase letters, digits and hyphens"),
        "{e}"
    );
    let e = problem(Skill::new("notes").file("SKILL.md", "---\ndescription: x\n---\n"));
    assert!(e.contains("must have a string `name`"), "{e}");
    // The organizational prefix becomes part of the URI.
    let e = problem(Skill::new("my team/notes").file("SKILL.md", md("notes")));
    assert!(
        e.contains("segment \"my team\" may hold only letters, digits and `-._~`"),
        "{e}"
    );
    // Descriptions: present, at most 1024 characters.
    let long = "d".repeat(1025);
    let e = problem(Skill::new("notes").file(
        "SKILL.md",
        format!("---\nname: notes\ndescription: {long}\n---\n"),
    ));
    assert!(
        e.contains("the description is longer than 1024 characters"),
        "{e}"
    );
    let e = problem(Skill::new("notes").file("SKILL.md", "# no frontmatter\n"));
    assert!(
        e.contains("SKILL.md must begin with YAML frontmatter"),
        "{e}"
    );

    // Limits are inclusive: 512 files load, 513 do not.
    let mut full = Skill::new("full").file("SKILL.md", md("full"));
    for i in 1..MAX_FILES {
        full = full.file(format!("f/{i}.txt"), "x");
    }
    assert!(SkillSet::new().skill(full.clone()).is_ok());
    let e = problem(full.file("one-more.txt", "x"));
    assert!(
        e.contains("the skill has 513 files; at most 512 are allowed"),
        "{e}"
    );

    // From a directory: the same rules, the folder named in each problem.
    let dir = TempDir::new("limits");
    dir.write("big/SKILL.md", &md("big"));
    let big = std::fs::File::create(dir.0.join("big/blob.bin")).unwrap();
    big.set_len(16 * 1024 * 1024).unwrap();
    let e = SkillSet::from_dir(&dir.0).unwrap_err();
    assert_eq!(e.problems().len(), 1, "{e}");
    assert_eq!(
        e.problems()[0].location,
        dir.0.join("big").display().to_string()
    );
    assert!(
        e.problems()[0]
            .message
            .contains("add up to 16777267 bytes; at most 16777216 (16 MiB) are allowed"),
        "{e}"
    );

    let root = TempDir::new("root");
    root.write("SKILL.md", &md("root"));
    let e = SkillSet::from_dir(&root.0).unwrap_err();
    assert!(
        e.to_string()
            .contains("sits at the root of the skills folder"),
        "{e}"
    );

    let many = TempDir::new("many");
    many.write("many/SKILL.md", &md("many"));
    for i in 0..MAX_FILES {
        many.write(&format!("many/f/{i}.txt"), "x");
    }
    let e = SkillSet::from_dir(&many.0).unwrap_err();
    assert!(
        e.to_string()
            .contains("the skill has 513 files; at most 512"),
        "{e}"
    );
}
