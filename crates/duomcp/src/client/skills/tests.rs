#![allow(clippy::unwrap_used)]
use super::handle::frontmatter_difference;
use super::*;

fn entry(v: Value) -> SkillEntry {
    serde_json::from_value(v).unwrap()
}

const D: &str = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[test]
fn entries_are_checked_before_anything_is_read() {
    let ok = json!({
        "uri": "skill://a/notes/SKILL.md",
        "frontmatter": { "name": "notes", "description": "d" },
        "resources": [{ "uri": "skill://a/notes/SKILL.md", "digest": D, "size": 3 }]
    });
    assert_eq!(check_entry(&entry(ok.clone())).unwrap(), "skill://a/notes");
    let cases = [
        (
            "uri",
            json!("skill://a/notes/README.md"),
            "does not end in /SKILL.md",
        ),
        (
            "frontmatter",
            json!({ "name": "other", "description": "d" }),
            "is not its name",
        ),
        (
            "frontmatter",
            json!({ "name": "notes" }),
            "no string `description`",
        ),
        ("resources", json!(null), "has no `resources`"),
        ("resources", json!("static"), "neither a list"),
        (
            "resources",
            json!([{ "uri": "skill://a/notes/SKILL.md", "digest": "sha256:AB", "size": 3 }]),
            "64 lowercase hex",
        ),
        (
            "resources",
            json!([{ "uri": "skill://a/notes/x.md", "digest": D, "size": 3 }]),
            "do not list its SKILL.md",
        ),
        (
            "resources",
            json!([{ "uri": "skill://a/notes/SKILL.md", "digest": D, "size": 3 }, { "uri": "skill://b/x.md", "digest": D, "size": 3 }]),
            "outside the skill's directory",
        ),
        (
            "resources",
            json!([{ "uri": "skill://a/notes/SKILL.md", "digest": D, "size": 3 }, { "uri": "skill://a/notes/SKILL.md", "digest": D, "size": 3 }]),
            "twice",
        ),
        (
            "resources",
            json!([{ "uri": "skill://a/notes/SKILL.md", "digest": D, "size": MAX_TOTAL_BYTES + 1 }]),
            "16 MiB",
        ),
    ];
    for (field, value, message) in cases {
        let mut bad = ok.clone();
        bad[field] = value;
        let e = check_entry(&entry(bad)).unwrap_err();
        assert!(e.to_string().contains(message), "{field}: {e}");
        assert!(!e.is_verification_failure());
    }
    let mut many = ok.clone();
    let files: Vec<Value> =
        std::iter::once(json!({ "uri": "skill://a/notes/SKILL.md", "digest": D, "size": 1 }))
            .chain(
                (0..MAX_FILES).map(
                    |i| json!({ "uri": format!("skill://a/notes/{i}"), "digest": D, "size": 1 }),
                ),
            )
            .collect();
    many["resources"] = Value::Array(files);
    assert!(matches!(
        check_entry(&entry(many)),
        Err(SkillError::TooLarge { .. })
    ));
    let mut dynamic = ok;
    dynamic["resources"] = json!("dynamic");
    assert!(check_entry(&entry(dynamic)).is_ok());
}

#[test]
fn frontmatter_is_compared_field_by_field_numbers_by_value() {
    let listed = json!({ "name": "n", "description": "d", "metadata": { "v": 1 } });
    let served = json!({ "name": "n", "description": "d", "metadata": { "v": 1.0 } });
    let (Value::Object(l), Value::Object(s)) = (listed, served) else {
        unreachable!()
    };
    assert_eq!(frontmatter_difference(&l, &s), None);
    let mut extra = s.clone();
    extra.insert("license".into(), json!("MIT"));
    assert_eq!(
        frontmatter_difference(&l, &extra),
        Some(("license".into(), None, Some(json!("MIT"))))
    );
    let mut changed = s;
    changed.insert("description".into(), json!("other"));
    assert_eq!(
        frontmatter_difference(&l, &changed).map(|d| d.0),
        Some("description".into())
    );
}
