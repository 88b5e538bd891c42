#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

const MD: &str = "---\nname: notes\ndescription: Take notes\n---\nBody\n";

#[test]
fn memory_skills_are_checked_when_added() {
    let ok = Skill::new("team/notes")
        .file("SKILL.md", MD)
        .file("a b/c.md", "x");
    let set = SkillSet::new().skill(ok).unwrap();
    let Source::Memory(l) = &set.sources[0] else {
        panic!()
    };
    assert_eq!(l.uri, "skill://team/notes/SKILL.md");
    assert!(l
        .files
        .iter()
        .any(|f| f.uri == "skill://team/notes/a%20b/c.md"));
    assert_eq!(l.files[0].digest.len(), 7 + 64);

    let e = SkillSet::new()
        .skill(Skill::new("other").file("SKILL.md", MD))
        .unwrap_err();
    assert!(
        e.to_string().contains("must equal the skill's folder name"),
        "{e}"
    );
    let e = SkillSet::new()
        .skill(Skill::new("Bad--Name").file("SKILL.md", "---\nname: Bad--Name\n---\n"))
        .unwrap_err();
    assert_eq!(e.problems().len(), 2, "{e}");
    let e = SkillSet::new().skill(Skill::new("notes")).unwrap_err();
    assert!(e.to_string().contains("no SKILL.md"), "{e}");
    let e = SkillSet::new()
        .skill(Skill::new("notes").file("SKILL.md", MD).file("../x", "y"))
        .unwrap_err();
    assert!(e.to_string().contains("must be relative"), "{e}");
    let big = Skill::new("notes")
        .file("SKILL.md", MD)
        .file("big.bin", vec![0u8; MAX_TOTAL_BYTES as usize]);
    assert!(SkillSet::new().skill(big).is_err());
    let twice = SkillSet::new()
        .skill(Skill::new("notes").file("SKILL.md", MD))
        .unwrap()
        .skill(Skill::new("notes").file("SKILL.md", MD));
    assert!(twice.is_err());
}

#[test]
fn digests_are_sha256_of_the_bytes() {
    assert_eq!(
        digest_of(b"abc"),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[tokio::test]
async fn directories_list_direct_children() {
    let set = SkillSet::new()
        .skill(
            Skill::new("acme/notes")
                .file("SKILL.md", MD)
                .file("refs/a.md", "a")
                .file("refs/deep/b.md", "b"),
        )
        .unwrap();
    let reg = SkillRegistry::new(Some(set));
    let snap = reg.snapshot().await.unwrap();
    let kids = snap.directory("skill://acme/notes").unwrap();
    let names: Vec<(&str, Option<&str>)> = kids
        .iter()
        .map(|r| (r.name.as_str(), r.mime_type.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("SKILL.md", Some("text/markdown")),
            ("refs", Some(DIRECTORY_MIME))
        ]
    );
    assert_eq!(snap.directory("skill://acme").unwrap().len(), 1);
    assert!(snap.directory("skill://acme/notes/SKILL.md").is_err());
    assert!(snap.directory("skill://nope").is_err());
}
