//! `scripts/test.sh` (the README's test command) checks the Debian packages of its steps before
//! it compiles anything, from the one list `.ci/run` installs from
//! (`scripts/debian-packages.txt`). Run on a copy of the script, with `cargo`, `id` and
//! `apt-get` replaced on `PATH` by stand-ins that record their calls.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use support::TempDir;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn stand_in(bin: &Path, name: &str, script: &str) {
    let path = bin.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A copy of the repository's script and list, plus `extra` lines of the list; runs
/// `scripts/test.sh ARGS` as user `uid` and returns (exit code, stdout + stderr, calls made).
fn run(extra: &str, uid: u32, args: &[&str]) -> (Option<i32>, String, String) {
    let dir = TempDir::new("preflight");
    let repo = dir.0.join("repo");
    let bin = dir.0.join("bin");
    for d in ["scripts", "interop"] {
        std::fs::create_dir_all(repo.join(d)).unwrap();
    }
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(
        format!("{ROOT}/scripts/test.sh"),
        repo.join("scripts/test.sh"),
    )
    .unwrap();
    std::fs::copy(
        format!("{ROOT}/interop/package-lock.json"),
        repo.join("interop/package-lock.json"),
    )
    .unwrap();
    let list = std::fs::read_to_string(format!("{ROOT}/scripts/debian-packages.txt")).unwrap();
    std::fs::write(
        repo.join("scripts/debian-packages.txt"),
        format!("{list}{extra}"),
    )
    .unwrap();
    let calls = dir.0.join("calls");
    let log = calls.display();
    stand_in(&bin, "cargo", &format!("echo \"cargo $*\" >> {log}"));
    stand_in(&bin, "apt-get", &format!("echo \"apt-get $*\" >> {log}"));
    stand_in(
        &bin,
        "id",
        &format!("if [ \"$1\" = -u ]; then echo {uid}; else exec /usr/bin/id \"$@\"; fi"),
    );
    // Interop is a script of its own: not copied, so a full run ends there.
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = Command::new("bash")
        .arg(repo.join("scripts/test.sh"))
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(&calls).unwrap_or_default();
    (out.status.code(), text, calls)
}

#[test]
fn ci_installs_from_the_list_the_test_command_checks() {
    let ci = std::fs::read_to_string(format!("{ROOT}/.ci/run")).unwrap();
    assert!(
        ci.contains("scripts/debian-packages.txt"),
        ".ci/run reads the list"
    );
    assert!(
        !ci.contains("PACKAGES=("),
        ".ci/run keeps no list of its own"
    );
}

#[test]
fn a_missing_package_stops_the_run_before_anything_is_compiled() {
    let (code, text, calls) = run(
        "duomcp-nosuch-pkg  /nonexistent/duomcp-nosuch  test  # a test's part\n",
        1000,
        &["--quick"],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("missing Debian packages: duomcp-nosuch-pkg;"),
        "{text}"
    );
    // What is there is not named missing; what it needs is said up front.
    assert!(text.contains("Needs: the Debian packages"), "{text}");
    assert!(
        !text.contains("missing Debian packages: redis-server"),
        "{text}"
    );
    assert_eq!(calls, "", "nothing ran: {calls}");

    // An interop-only part counts only without --quick.
    let extra = "duomcp-nosuch-ui  /nonexistent/duomcp-nosuch  interop  # interop\n";
    let (code, text, _) = run(extra, 1000, &["--quick"]);
    assert!(
        !text.contains("duomcp-nosuch-ui"),
        "--quick: {code:?} {text}"
    );
    let (code, text, calls) = run(extra, 1000, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("missing Debian packages: duomcp-nosuch-ui;"),
        "{text}"
    );
    assert_eq!(calls, "", "nothing ran: {calls}");
}

#[test]
fn as_root_with_apt_the_missing_packages_are_installed_first() {
    let (_, text, calls) = run(
        "duomcp-nosuch-pkg  /nonexistent/duomcp-nosuch  test  # a test's part\n",
        0,
        &["--quick"],
    );
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"apt-get update -qq"),
        "{text}\n{calls}"
    );
    assert_eq!(
        lines.get(1),
        Some(&"apt-get install -y -qq --no-install-recommends duomcp-nosuch-pkg"),
        "only the missing one: {calls}"
    );
    assert!(
        lines.get(2).is_some_and(|l| l.starts_with("cargo test")),
        "then the tests: {calls}"
    );
}
