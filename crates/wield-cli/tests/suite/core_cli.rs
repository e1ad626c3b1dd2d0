//! The Foundation contract through the real binary: `wield call`, exit codes,
//! bad input, config errors, policy denials, tools list/show/schema, audit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use tempfile::TempDir;

struct Env {
    home: TempDir,
    ws: TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            home: TempDir::new().unwrap(),
            ws: TempDir::new().unwrap(),
        }
    }

    fn wield(&self) -> Command {
        Command::from_std(crate::wield_cmd::wield_env(self.ws.path(), self.home.path()).command())
    }

    fn project_config(&self, text: &str) {
        let dir = self.ws.path().join(".wield");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }
}

fn json_out(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("stdout is one JSON object")
}

/// The test helper every `wield` of these tests is started through passes
/// nothing from the test run's environment (cargo's and nextest's
/// variables, a developer's `WIELD_*` settings) but its allow-list.
#[test]
fn wield_starts_with_only_the_allowed_variables() {
    let e = Env::new();
    let env = crate::wield_cmd::wield_env(e.ws.path(), e.home.path()).with_tmp(e.home.path());
    let out = env.running("env").output().unwrap();
    assert!(out.status.success());
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.to_owned()))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["HOME", "LANG", "PATH", "RUST_BACKTRACE", "TMPDIR", "XDG_CONFIG_HOME"],
        "{names:?}"
    );
}

#[test]
fn calculator_prints_the_value() {
    let e = Env::new();
    e.wield()
        .args(["call", "calculator", r#"{"expression":"(1+2)*3"}"#])
        .assert()
        .success()
        .stdout("9\n");
}

#[test]
fn json_output_has_the_contract_shape() {
    let e = Env::new();
    let out = e
        .wield()
        .args(["call", "--json", "calculator", r#"{"expression":"2^10"}"#])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json_out(&out);
    assert_eq!(v["success"], true);
    assert_eq!(v["output"], "1024");
    assert_eq!(v["error"], Value::Null);
    assert!(v["metadata"].is_object());
}

#[test]
fn arguments_from_stdin() {
    let e = Env::new();
    e.wield()
        .args(["call", "calculator", "-"])
        .write_stdin(r#"{"expression":"sqrt(81)"}"#)
        .assert()
        .success()
        .stdout("9\n");
}

#[test]
fn calculator_errors_name_the_position() {
    let e = Env::new();
    let out = e
        .wield()
        .args(["call", "--json", "calculator", r#"{"expression":"1 + (2 / 0)"}"#])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v = json_out(&out);
    assert_eq!(v["success"], false);
    assert_eq!(v["error"], "division by zero at position 8");
}

#[test]
fn invalid_json_is_a_usage_error_with_the_position() {
    let e = Env::new();
    e.wield()
        .args(["call", "calculator", r#"{"expression": }"#])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid JSON arguments at line 1 column 16"));
    // The way out names the tool at hand, not another's arguments.
    e.wield()
        .args(["call", "read", "{path: x}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`wield tools schema read` shows what read takes",
        ))
        .stderr(predicate::str::contains("expression").not());
}

#[test]
fn schema_violation_names_the_path_and_expectation() {
    let e = Env::new();
    e.wield()
        .args(["call", "calculator", r#"{"expression": 5}"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("at /expression: 5 is not of type \"string\""));
    e.wield()
        .args(["call", "calculator", r#"{"expr": "1"}"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("\"expression\" is a required property"))
        .stderr(predicate::str::contains("Additional properties are not allowed"));
    e.wield()
        .args(["call", "calculator", "[1]"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("must be a JSON object"));
}

#[test]
fn unknown_tool_suggests_the_closest() {
    let e = Env::new();
    e.wield()
        .args(["call", "calculater", "{}"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("unknown tool `calculater`"))
        .stderr(predicate::str::contains("Did you mean `calculator`"));
}

#[test]
fn a_panicking_tool_becomes_an_error_result() {
    let e = Env::new();
    let out = e
        .wield()
        .env("WIELD_DEBUG_TOOLS", "1")
        .args(["call", "--json", "debug_panic"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v = json_out(&out);
    assert_eq!(v["success"], false);
    assert!(v["error"].as_str().unwrap().contains("panic"), "{v}");
    assert_eq!(v["metadata"]["panicked"], true);
}

#[test]
fn a_call_timeout_stops_the_tool() {
    let e = Env::new();
    let start = std::time::Instant::now();
    e.wield()
        .env("WIELD_DEBUG_TOOLS", "1")
        .args(["call", "debug_sleep", r#"{"seconds": 30, "timeout": 0.3}"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("timed out after 300ms"));
    assert!(start.elapsed().as_secs() < 10);
}

/// Ctrl-C (SIGINT) during a call stops it, and `wield call` exits 130 as
/// every command does when interrupted.
#[test]
fn an_interrupted_call_exits_130() {
    let e = Env::new();
    let mut cmd = crate::wield_cmd::wield_env(e.ws.path(), e.home.path()).command();
    let mut child = cmd
        .env("WIELD_DEBUG_TOOLS", "1")
        .args(["call", "debug_sleep", r#"{"seconds": 30}"#])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let start = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(start.elapsed().as_secs() < 10);
}

#[test]
fn unknown_config_key_is_a_usage_error_with_a_suggestion() {
    let e = Env::new();
    e.project_config("[approval]\nauto_aprove = [\"calculator\"]\n");
    e.wield()
        .args(["call", "calculator", r#"{"expression":"1"}"#])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown config key `approval.auto_aprove`"))
        .stderr(predicate::str::contains("did you mean `approval.auto_approve`"));
}

/// The keys other crates register (the file tools', the sandbox's, MCP's)
/// are checked as core's are.
#[test]
fn unknown_keys_of_the_crates_that_register_them_have_suggestions_too() {
    for (text, unknown, meant) in [
        ("[sandbox]\nenabeld = false\n", "sandbox.enabeld", "sandbox.enabled"),
        (
            "[read_before]\nwrtie = false\n",
            "read_before.wrtie",
            "read_before.write",
        ),
        (
            "[mcp.servers.x]\ncomand = \"a\"\n",
            "mcp.servers.x.comand",
            "mcp.servers.x.command",
        ),
    ] {
        let e = Env::new();
        e.project_config(text);
        e.wield()
            .args(["call", "calculator", r#"{"expression":"1"}"#])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("unknown config key `{unknown}`")))
            .stderr(predicate::str::contains(format!("did you mean `{meant}`")));
    }
}

#[test]
fn invalid_toml_is_a_usage_error() {
    let e = Env::new();
    e.project_config("[approval\n");
    e.wield()
        .args(["call", "calculator", r#"{"expression":"1"}"#])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid TOML"));
}

#[test]
fn denied_tool_names_the_rule() {
    let e = Env::new();
    e.project_config("[approval]\ndeny = [\"calc*\"]\n");
    e.wield()
        .args(["-y", "call", "calculator", r#"{"expression":"1"}"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("denied by policy"))
        .stderr(predicate::str::contains("calc*"));
}

#[test]
fn a_tool_outside_auto_approve_needs_approval_unless_yes() {
    let e = Env::new();
    e.project_config("[approval]\nauto_approve = []\n");
    e.wield()
        .args(["call", "calculator", r#"{"expression":"1"}"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("approval required"))
        .stderr(predicate::str::contains("wield approvals add 'calculator'"));
    e.wield()
        .args(["--yes", "call", "calculator", r#"{"expression":"1"}"#])
        .assert()
        .success()
        .stdout("1\n");
}

#[test]
fn environment_and_set_layers_override_files() {
    let e = Env::new();
    e.project_config("[approval]\ndeny = [\"calculator\"]\n");
    e.wield()
        .env("WIELD_APPROVAL__DENY", "[]")
        .args(["call", "calculator", r#"{"expression":"2"}"#])
        .assert()
        .success();
    e.wield()
        .env("WIELD_APPROVAL__DENY", "[]")
        .args([
            "--set",
            "approval.deny=[\"calculator\"]",
            "call",
            "calculator",
            r#"{"expression":"2"}"#,
        ])
        .assert()
        .code(1);
    e.wield()
        .args(["--set", "approval.nope=1", "tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("approval.nope"));
}

#[test]
fn global_config_applies_below_the_project_file() {
    let e = Env::new();
    let global = e.home.path().join(".config/wield");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(global.join("config.toml"), "[approval]\ndeny = [\"calculator\"]\n").unwrap();
    e.wield()
        .args(["call", "calculator", r#"{"expression":"2"}"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("denied by policy"));
    e.project_config("[approval]\ndeny = []\n");
    e.wield()
        .args(["call", "calculator", r#"{"expression":"2"}"#])
        .assert()
        .success();
}

#[test]
fn workspace_flag_must_exist() {
    let e = Env::new();
    e.wield()
        .args(["-C", "/definitely/not/here", "tools", "list"])
        .assert()
        .code(2);
}

#[test]
fn tools_list_show_and_schema() {
    let e = Env::new();
    e.wield()
        .args(["tools", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("calculator"));
    e.wield()
        .args(["tools", "show", "calculator"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"read_only\": true"))
        .stdout(predicate::str::contains("\"expression\""));
    e.wield().args(["tools", "show", "calculater"]).assert().code(2);
    for (format, pointer, expected) in [
        ("anthropic", "/input_schema/type", "object"),
        ("openai", "/function/parameters/type", "object"),
        ("responses", "/parameters/type", "object"),
        ("mcp", "/inputSchema/type", "object"),
    ] {
        let out = e
            .wield()
            .args(["tools", "schema", "--format", format])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let v = json_out(&out);
        let calc = v
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t.to_string().contains("calculator"))
            .expect("calculator exported");
        assert_eq!(
            calc.pointer(pointer).and_then(Value::as_str),
            Some(expected),
            "{format}: {calc}"
        );
    }
    let out = e
        .wield()
        .args(["tools", "schema", "--format", "gemini"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json_out(&out);
    assert!(v[0]["functionDeclarations"].as_array().is_some());
    e.wield().args(["tools", "schema", "--format", "xml"]).assert().code(2);
}

#[test]
fn audit_log_records_each_finished_call() {
    let e = Env::new();
    let log = e.ws.path().join("audit.jsonl");
    e.wield()
        .args([
            "--audit",
            log.to_str().unwrap(),
            "call",
            "calculator",
            r#"{"expression":"1+1"}"#,
        ])
        .assert()
        .success();
    e.wield()
        .args([
            "--audit",
            log.to_str().unwrap(),
            "call",
            "calculator",
            r#"{"expression":"1/0"}"#,
        ])
        .assert()
        .code(1);
    let text = std::fs::read_to_string(Path::new(&log)).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["tool"], "calculator");
    assert_eq!(lines[0]["input"]["expression"], "1+1");
    assert_eq!(lines[0]["decision"], "approved");
    assert_eq!(lines[0]["success"], true);
    assert_eq!(lines[1]["success"], false);
    assert!(lines[0]["time"].as_str().unwrap().contains('T'));
    assert!(lines[0]["duration_ms"].is_u64());
}

#[test]
fn help_is_available_everywhere() {
    let e = Env::new();
    for args in [
        vec!["--help"],
        vec!["call", "--help"],
        vec!["tools", "--help"],
        vec!["tools", "schema", "--help"],
    ] {
        e.wield()
            .args(&args)
            .assert()
            .success()
            .stdout(predicate::str::contains("Usage"));
    }
    e.wield()
        .args(["call", "--help"])
        .assert()
        .stdout(predicate::str::contains("read-before-write"));
}

/// The help texts people read first, as snapshots: a command, option or
/// word that changes shows in review.
#[test]
fn the_first_help_texts_people_read() {
    let e = Env::new();
    for (name, args) in [
        ("top", vec!["--help"]),
        ("run", vec!["run", "--help"]),
        ("chat", vec!["chat", "--help"]),
    ] {
        let out = e.wield().args(&args).output().unwrap();
        assert!(out.status.success());
        insta::assert_snapshot!(format!("help_{name}"), String::from_utf8_lossy(&out.stdout));
    }
}
