//! Command tools (`[[tools.command]]`, `.wield/tools/*.toml`) as the
//! command line reaches them: a bad definition is a usage error (exit 2),
//! the tool is listed, shown and called by `wield call` with its exit
//! codes, served over MCP, and Landlock's sandbox applied, whose helper is
//! this binary. What the tools do (placeholders, injection attempts,
//! definitions checked at load, the first failure, bubblewrap's sandbox and
//! timeout, `requires_approval`) is wield-tools' suite
//! (`crates/wield-tools/tests/command.rs`); the agent calling one is
//! wield-agent's (`crates/wield-agent/tests/suite/agent_tools.rs`).
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use serde_json::{Value, json};

use wield_test_support::command_tools;

use crate::shell::support::{Mcp, Ws, call_json, output, require_backends};

/// A workspace whose `.wield/config.toml` is `config`.
fn workspace(config: &str) -> Ws {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    std::fs::write(ws.ws.join(".wield/config.toml"), config).unwrap();
    ws
}

/// `wield [pre..] call TOOL ARGS --json`.
fn call(ws: &Ws, pre: &[&str], tool: &str, args: &Value) -> (i32, Value) {
    let mut cmd = ws.wield();
    cmd.args(pre).args(["call", tool, &args.to_string(), "--json"]);
    call_json(cmd)
}

/// `wield ARGS`: (exit code, stdout, stderr).
fn wield(ws: &Ws, args: &[&str]) -> (i32, String, String) {
    let out = ws.wield().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A tool whose placeholder names no field.
const BAD_PLACEHOLDER: &str = r#"
[[tools.command]]
name = "echo_args"
description = "Print an argument"
cmds = [["echo", "--n=${count}"]]
"#;

/// A definition that cannot load is a usage error naming the tool and
/// where it is defined.
#[test]
fn a_bad_command_tool_definition_makes_wield_exit_2_naming_its_file() {
    let ws = workspace(BAD_PLACEHOLDER);
    let (code, _, stderr) = wield(&ws, &["tools", "list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("command tool `echo_args`") && stderr.contains(".wield/config.toml"),
        "{stderr}"
    );

    let ws = workspace("[[tools.command]]\nname = \"echo_args\"\ndescription = \"Echo\"\ncmds = [[\"echo\"]]\n");
    std::fs::create_dir_all(ws.ws.join(".wield/tools")).unwrap();
    std::fs::write(
        ws.ws.join(".wield/tools/echo.toml"),
        "name = \"Echo_Args\"\ndescription = \"Again\"\ncmds = [[\"echo\"]]\n",
    )
    .unwrap();
    let (code, _, stderr) = wield(&ws, &["call", "echo_args", "{}"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("is defined twice") && stderr.contains("echo.toml"),
        "{stderr}"
    );
}

/// Under Landlock, whose helper is the `wield` binary (`wield
/// __sandbox-exec`), which a library test cannot run in its own process:
/// bubblewrap's run is wield-tools' suite.
#[test]
fn commands_run_in_landlock_s_sandbox_and_within_their_timeout() {
    let ws = workspace("");
    require_backends(&ws);
    let target = ws.outside.join("escaped.txt");
    std::fs::write(ws.ws.join(".wield/config.toml"), command_tools::config(&target)).unwrap();
    let pre = [
        "-y",
        "--set",
        "sandbox.enabled=true",
        "--set",
        "sandbox.backend=\"landlock\"",
    ];
    let escape = call(&ws, &pre, "escape", &json!({}));
    command_tools::assert_escape_refused(escape, "landlock", &ws.ws, &target);
    let started = Instant::now();
    let slow = call(&ws, &pre, "slow", &json!({}));
    command_tools::assert_timed_out(slow, started.elapsed());
}

const APPROVE_GREET: &str = r#"
[approval]
auto_approve = ["$standard", "greet"]
"#;

fn greet_ws() -> Ws {
    let ws = workspace(APPROVE_GREET);
    std::fs::create_dir_all(ws.ws.join(".wield/tools")).unwrap();
    std::fs::write(ws.ws.join(".wield/tools/greet.toml"), command_tools::GREET).unwrap();
    ws
}

#[test]
fn a_command_tool_is_listed_and_runs_through_wield_call() {
    let ws = greet_ws();
    let (code, list, stderr) = wield(&ws, &["tools", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        list.lines()
            .any(|l| l.starts_with("greet ") && l.contains("Greet someone by name")),
        "{list}"
    );
    // Command tools run commands: the coding profile has them, as it has bash.
    let (code, list, stderr) = wield(&ws, &["--profile", "coding", "tools", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(list.lines().any(|l| l.starts_with("greet ")), "{list}");
    let (code, show, _) = wield(&ws, &["tools", "show", "greet"]);
    assert_eq!(code, 0);
    assert!(show.contains("source: command"), "{show}");
    let (code, v) = call(&ws, &[], "greet", &json!({ "who": "Ada; id" }));
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), "$ echo hello 'Ada; id'\nhello Ada; id\nexit code: 0");
    // A refused input exits 1 with the error in the JSON.
    let (code, v) = call(&ws, &[], "greet", &json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("who"), "{v}");
}

#[test]
fn a_command_tool_is_served_over_mcp() {
    let ws = greet_ws();
    let mut mcp = Mcp::start(&ws, &[]);
    let listed = mcp.request("tools/list", json!({}));
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "greet")
        .cloned()
        .unwrap_or_else(|| panic!("greet is not listed: {listed}"));
    assert_eq!(tool["inputSchema"]["required"], json!(["who"]), "{tool}");
    let (is_error, text) = mcp.call("greet", json!({ "who": "$(id)" }));
    assert!(!is_error, "{text}");
    assert!(text.contains("hello $(id)\n"), "{text}");
    assert_eq!(mcp.finish(), 0);
}
