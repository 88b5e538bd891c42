//! The client commands of the built `duomcp` binary, against `duomcp serve` (the reference
//! server) started by the command itself.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

/// Runs `duomcp ARGS -- duomcp serve` with stdin closed (no terminal: elicitation is declined).
fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .args(["--", BIN, "serve"])
        .stdin(Stdio::null())
        .env("COLUMNS", "120")
        .output()
        .expect("run duomcp")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "duomcp {args:?} failed: {}\n{}",
        stderr(&o),
        stdout(&o)
    );
    stdout(&o)
}

fn json(args: &[&str]) -> Value {
    let mut with = args.to_vec();
    with.push("--json");
    serde_json::from_str(&ok(&with))
        .unwrap_or_else(|e| panic!("duomcp {args:?} --json printed no JSON: {e}"))
}

#[test]
fn discover_detects_the_era_and_can_be_forced() {
    let out = ok(&["discover"]);
    assert!(out.contains("era:          modern (2026-07-28)"), "{out}");
    assert!(out.contains("server:       duomcp-reference"), "{out}");
    assert!(out.contains("tools (listChanged)"), "{out}");
    let v = json(&["discover", "--era", "legacy"]);
    assert_eq!(v["era"], "legacy");
    assert_eq!(v["protocolVersion"], "2025-11-25");
    assert_eq!(v["serverInfo"]["name"], "duomcp-reference");
    assert!(v["capabilities"]["tools"].is_object());
    assert_eq!(json(&["discover", "--era", "modern"])["era"], "modern");
}

#[test]
fn tools_lists_an_aligned_table_or_json() {
    let out = ok(&["tools"]);
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("NAME") && header.contains("DESCRIPTION"),
        "{header}"
    );
    let desc_col = header.find("DESCRIPTION").unwrap();
    let row = out
        .lines()
        .find(|l| l.starts_with("test_simple_text "))
        .expect("a row for test_simple_text");
    assert_eq!(
        row.find("Returns a simple text response"),
        Some(desc_col),
        "descriptions line up: {out}"
    );
    let v = json(&["tools", "--era", "legacy"]);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"test_simple_text") && names.contains(&"test_image_content"),
        "{names:?}"
    );
}

#[test]
fn call_prints_text_and_summarises_binary_content() {
    for era in ["legacy", "modern"] {
        let out = ok(&["call", "test_simple_text", "--era", era]);
        assert_eq!(out.trim(), "This is a simple text response for testing.");
        let out = ok(&["call", "test_image_content", "--era", era]);
        let line = out.trim();
        assert!(
            line.starts_with("[image image/png, ") && line.ends_with(" bytes]"),
            "{line}"
        );
        let out = ok(&["call", "test_audio_content", "--era", era]);
        assert!(out.trim().starts_with("[audio audio/wav, "), "{out}");
    }
}

#[test]
fn call_takes_key_value_pairs_and_json_args() {
    let v = json(&["call", "test_custom_header", "region=eu-west-1", "count=3"]);
    let text = v["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("eu-west-1"), "{text}");
    let v = json(&[
        "call",
        "test_custom_header",
        "--args",
        r#"{"region":"us-east-1"}"#,
    ]);
    assert!(v["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("us-east-1"));
}

#[test]
fn a_tool_error_exits_non_zero_but_prints_the_result() {
    let o = run(&["call", "test_error_handling"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("intentionally returns an error"),
        "{}",
        stdout(&o)
    );
    let o = run(&["call", "no_such_tool"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("-32602"), "{}", stderr(&o));
}

#[test]
fn elicitation_is_declined_without_a_terminal() {
    for era in ["legacy", "modern"] {
        let o = run(&["call", "test_elicitation", "message=hello", "--era", era]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("decline"), "{era}: {}", stdout(&o));
        assert!(stderr(&o).contains("declined"), "{}", stderr(&o));
    }
}

#[test]
fn resources_templates_and_read() {
    let out = ok(&["resources"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("test://static-text ") && l.contains("text/plain")),
        "{out}"
    );
    let out = ok(&["templates"]);
    assert!(out.contains("test://template/{id}/data"), "{out}");
    for era in ["legacy", "modern"] {
        let out = ok(&["read", "test://static-binary", "--era", era]);
        assert!(
            out.trim().starts_with("[blob image/png, ") && out.trim().ends_with(" bytes]"),
            "{out}"
        );
        let v = json(&["read", "test://static-text", "--era", era]);
        assert!(v["contents"][0]["text"].is_string());
    }
    let o = run(&["read", "test://missing"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn prompts_and_prompt() {
    let out = ok(&["prompts"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("test_prompt_with_arguments") && l.contains("arg1 arg2")),
        "{out}"
    );
    let out = ok(&["prompt", "test_prompt_with_arguments", "arg1=7", "arg2=y"]);
    assert!(
        out.starts_with("user: ") && out.contains("arg1='7'"),
        "prompt arguments stay text: {out}"
    );
    let o = run(&["prompt", "test_prompt_with_arguments"]);
    assert_eq!(o.status.code(), Some(1), "missing required arguments");
}

#[test]
fn complete_prints_one_value_per_line() {
    let out = ok(&[
        "complete",
        "--prompt",
        "test_prompt_with_arguments",
        "arg1",
        "pa",
    ]);
    assert_eq!(out.lines().collect::<Vec<_>>(), ["paris", "park", "party"]);
    let v = json(&[
        "complete",
        "--template",
        "test://template/{id}/data",
        "id",
        "te",
        "--era",
        "legacy",
    ]);
    assert_eq!(
        v["completion"]["values"],
        serde_json::json!(["test", "testValue1"])
    );
}

#[test]
fn listen_reports_the_acknowledged_subscription() {
    let out = ok(&["listen", "--tools", "--duration", "0.3"]);
    assert_eq!(out.trim(), "listening for: tools");
    let v = json(&[
        "listen",
        "--resource",
        "test://watched-resource",
        "--duration",
        "0.3",
        "--era",
        "legacy",
    ]);
    assert_eq!(
        v["subscribed"]["resourceSubscriptions"],
        serde_json::json!(["test://watched-resource"])
    );
}

#[test]
fn log_messages_go_to_stderr_before_the_result() {
    let o = run(&["call", "test_tool_with_logging", "--log-level", "info"]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert_eq!(
        err.matches("[info] test_tool_with_logging:").count(),
        3,
        "{err}"
    );
    assert!(!stdout(&o).contains("[info]"));
}

#[test]
fn failures_exit_non_zero_with_a_message() {
    let o = Command::new(BIN)
        .args(["tools", "--", "sh", "-c", "exit 3"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("exit status: 3"), "{}", stderr(&o));
    let o = Command::new(BIN).args(["tools"]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "a missing server is a usage error"
    );
    let o = Command::new(BIN)
        .args(["tools", "--era", "sideways", "--", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    // `duomcp tools --json -- duomcp serve | head -0`: stdout closed before anything is
    // written; the write fails with EPIPE when the listing comes.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args([
            "tools",
            "--json",
            "--",
            env!("CARGO_BIN_EXE_duomcp"),
            "serve",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}
