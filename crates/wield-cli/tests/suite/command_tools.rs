//! Command tools (`[[tools.command]]`, `.wield/tools/*.toml`) through the
//! real binary: each `${field}` one whole argument whatever it holds (an
//! injection attempt in every field, checked with a script printing its
//! argv), definitions checked at load, the first failure stopping the list,
//! bash's sandbox and a timeout applied, `requires_approval`, and the tool
//! listed, called, served over MCP and used by the agent.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::scripted_provider::{Scripted, Turn};
use crate::shell::support::{Mcp, Ws, call_json, output, require_backends};

/// A workspace whose `.wield/config.toml` is `config`, with `argv`: a
/// script printing how many arguments it got, then each as `<arg>`.
fn workspace(config: &str) -> Ws {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    std::fs::write(ws.ws.join(".wield/config.toml"), config).unwrap();
    let script = ws.ws.join("argv");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"$#\"\nfor a in \"$@\"; do printf '<%s>\\n' \"$a\"; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
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

const ECHO_ARGS: &str = r#"
[[tools.command]]
name = "echo_args"
description = "Print the arguments a command gets"
input_schema = { type = "object", properties = { value = { type = "string" }, n = { type = "integer" }, flag = { type = "boolean" }, items = { type = "array", items = { type = "string" } }, opt = { type = "string" } }, required = ["value"] }
cmds = [["./argv", "${value}", "--n=${n}", "${flag}", "${items}", "${opt}", "$${value}", "cost: $5"]]
"#;

#[test]
fn each_placeholder_becomes_one_argument_and_absent_whole_ones_are_dropped() {
    let ws = workspace(ECHO_ARGS);
    let args = json!({ "value": "a b  c", "n": 7, "flag": false, "items": ["x y", "z"] });
    let (code, v) = call(&ws, &["-y"], "echo_args", &args);
    assert_eq!(code, 0, "{v}");
    let expected = "$ ./argv 'a b  c' --n=7 false 'x y' z '${value}' 'cost: $5'\n\
                    7\n<a b  c>\n<--n=7>\n<false>\n<x y>\n<z>\n<${value}>\n<cost: $5>\nexit code: 0";
    assert_eq!(output(&v), expected, "{v}");
    assert_eq!(v["metadata"]["commands_run"], 1, "{v}");

    // A placeholder inside a longer argument needs its field.
    let (code, v) = call(&ws, &["-y"], "echo_args", &json!({ "value": "v" }));
    assert_eq!(code, 1, "{v}");
    let err = v["error"].as_str().unwrap();
    assert!(
        err.contains("needs `n` inside an argument") && err.contains("give `n`"),
        "{err}"
    );
}

#[test]
fn injection_attempts_in_every_field_stay_one_harmless_argument() {
    let config = r#"
[[tools.command]]
name = "echo_all"
description = "Print the arguments"
input_schema = { type = "object", properties = { a = { type = "string" }, b = { type = "string" }, c = { type = "string" }, d = { type = "string" }, e = { type = "string" }, f = { type = "string" } }, required = ["a", "b", "c", "d", "e", "f"] }
cmds = [["./argv", "${a}", "--b=${b}", "${c}", "${d}", "${e}", "${f}"], ["./argv", "${f}"]]
"#;
    let ws = workspace(config);
    let attempts = [
        "; rm -rf ~; touch pwned-a",
        "$(touch pwned-b)",
        "`touch pwned-c`",
        "x\ntouch pwned-d\n",
        "--output=pwned-e",
        "${a}' && touch pwned-f '",
    ];
    let args = json!({
        "a": attempts[0], "b": attempts[1], "c": attempts[2],
        "d": attempts[3], "e": attempts[4], "f": attempts[5],
    });
    std::fs::write(ws.home.join("keep"), "home stays").unwrap();
    let (code, v) = call(&ws, &["-y"], "echo_all", &args);
    assert_eq!(code, 0, "{v}");
    let text = output(&v);
    let first: String = std::iter::once("6".to_owned())
        .chain([
            format!("<{}>", attempts[0]),
            format!("<--b={}>", attempts[1]),
            format!("<{}>", attempts[2]),
            format!("<{}>", attempts[3]),
            format!("<{}>", attempts[4]),
            format!("<{}>", attempts[5]),
        ])
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains(&format!("{first}\nexit code: 0")), "{text}");
    assert!(text.contains(&format!("1\n<{}>\nexit code: 0", attempts[5])), "{text}");
    for dir in [&ws.ws, &ws.home, &ws.tmp, &ws.outside] {
        let names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.contains("pwned")),
            "{}: {names:?}",
            dir.display()
        );
    }
    assert_eq!(std::fs::read_to_string(ws.home.join("keep")).unwrap(), "home stays");
}

#[test]
fn a_placeholder_naming_no_field_is_a_config_error_at_load() {
    let ws = workspace(&ECHO_ARGS.replace("\"--n=${n}\"", "\"--n=${count}\""));
    let (code, _, stderr) = wield(&ws, &["tools", "list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("command tool `echo_args`")
            && stderr.contains("`${count}`, which names no property of `input_schema`"),
        "{stderr}"
    );
    assert!(stderr.contains(".wield/config.toml"), "{stderr}");

    // The same in a tool file, where each file is one tool.
    let ws = workspace("");
    std::fs::create_dir_all(ws.ws.join(".wield/tools")).unwrap();
    std::fs::write(
        ws.ws.join(".wield/tools/lint.toml"),
        "name = \"lint\"\ndescription = \"Lint\"\ncmds = [[\"echo\", \"${path}\"]]\n",
    )
    .unwrap();
    let (code, _, stderr) = wield(&ws, &["tools", "list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("command tool `lint` in") && stderr.contains("lint.toml") && stderr.contains("`${path}`"),
        "{stderr}"
    );
}

#[test]
fn name_clashes_name_both_places() {
    let ws = workspace(&ECHO_ARGS.replace("\"echo_args\"", "\"read\""));
    let (code, _, stderr) = wield(&ws, &["tools", "list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("has the name of the built-in tool `read`"), "{stderr}");

    let ws = workspace(ECHO_ARGS);
    std::fs::create_dir_all(ws.ws.join(".wield/tools")).unwrap();
    std::fs::write(
        ws.ws.join(".wield/tools/echo.toml"),
        "name = \"Echo_Args\"\ndescription = \"Again\"\ncmds = [[\"echo\"]]\n",
    )
    .unwrap();
    let (code, _, stderr) = wield(&ws, &["tools", "list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("is defined twice") && stderr.contains("config.toml") && stderr.contains("echo.toml"),
        "{stderr}"
    );
}

#[test]
fn the_first_failure_stops_the_list_and_says_which_command() {
    let config = r#"
[[tools.command]]
name = "three_steps"
description = "Three steps"
cmds = [["touch", "one"], ["sh", "-c", "echo out; echo boom >&2; exit 3"], ["touch", "three"]]
"#;
    let ws = workspace(config);
    let (code, v) = call(&ws, &["-y"], "three_steps", &json!({}));
    assert_eq!(code, 1, "{v}");
    let err = v["error"].as_str().unwrap();
    assert_eq!(
        err,
        "command 2 of 3 failed (exit code: 3): $ sh -c 'echo out; echo boom >&2; exit 3'"
    );
    let text = output(&v);
    assert!(text.contains("$ touch one\nexit code: 0"), "{text}");
    assert!(text.contains("out\n[stderr]\nboom\nexit code: 3"), "{text}");
    assert!(!text.contains("three"), "{text}");
    assert_eq!(v["metadata"]["failed_command"], 2, "{v}");
    assert_eq!(v["metadata"]["exit_code"], 3, "{v}");
    assert_eq!(
        v["metadata"]["failed_argv"],
        json!(["sh", "-c", "echo out; echo boom >&2; exit 3"])
    );
    assert!(ws.ws.join("one").exists());
    assert!(!ws.ws.join("three").exists(), "the third command ran");
}

#[test]
fn commands_run_in_bash_s_sandbox_and_within_their_timeout() {
    let ws = workspace("");
    require_backends(&ws);
    let target = ws.outside.join("escaped.txt");
    std::fs::write(
        ws.ws.join(".wield/config.toml"),
        format!(
            r#"
[[tools.command]]
name = "escape"
description = "Write outside the workspace"
cmds = [["touch", "src/inside.txt"], ["touch", {target:?}]]

[[tools.command]]
name = "slow"
description = "Sleep"
cmds = [["sleep", "30"]]
timeout = "1s"
"#,
            target = target.display().to_string()
        ),
    )
    .unwrap();
    for backend in ["landlock", "bwrap"] {
        let set = format!("sandbox.backend=\"{backend}\"");
        let pre = ["-y", "--set", "sandbox.enabled=true", "--set", set.as_str()];
        let (code, v) = call(&ws, &pre, "escape", &json!({}));
        assert_eq!(code, 1, "{backend}: {v}");
        assert!(!target.exists(), "{backend} wrote outside the roots");
        assert!(ws.ws.join("src/inside.txt").exists(), "{backend}: {v}");
        assert_eq!(v["metadata"]["failed_command"], 2, "{backend}: {v}");
        assert_eq!(v["metadata"]["sandbox"], backend, "{v}");
        assert!(
            output(&v).contains("is outside the write roots"),
            "{backend}: {}",
            output(&v)
        );

        let started = Instant::now();
        let (code, v) = call(&ws, &pre, "slow", &json!({}));
        assert_eq!(code, 1, "{backend}: {v}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{backend}: {:?}",
            started.elapsed()
        );
        assert_eq!(v["metadata"]["timed_out"], true, "{backend}: {v}");
        assert!(v["error"].as_str().unwrap().contains("timed out after 1s"), "{v}");
    }
}

#[test]
fn requires_approval_asks_even_when_a_rule_approves_and_a_deny_still_denies() {
    let config = r#"
[approval]
auto_approve = ["$standard", "gated", "open"]

[[tools.command]]
name = "gated"
description = "Always asks"
cmds = [["touch", "gated-ran"]]
requires_approval = true

[[tools.command]]
name = "open"
description = "Approved by the rules"
cmds = [["touch", "open-ran"]]
"#;
    let ws = workspace(config);
    let (code, v) = call(&ws, &[], "gated", &json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("needs approval"), "{v}");
    assert!(!ws.ws.join("gated-ran").exists());
    // Under the sandbox too.
    let (code, v) = call(&ws, &["--set", "sandbox.enabled=true"], "gated", &json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(!ws.ws.join("gated-ran").exists());

    let (code, v) = call(&ws, &[], "open", &json!({}));
    assert_eq!(code, 0, "{v}");
    assert!(ws.ws.join("open-ran").exists());

    let (code, v) = call(&ws, &["-y"], "gated", &json!({}));
    assert_eq!(code, 0, "{v}");
    assert!(ws.ws.join("gated-ran").exists());

    let (code, v) = call(&ws, &["-y", "--set", "approval.deny=[\"gated\"]"], "gated", &json!({}));
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["metadata"]["refused"], "denied", "{v}");
}

const GREET: &str = r#"
[approval]
auto_approve = ["$standard", "greet"]
"#;

fn greet_ws() -> Ws {
    let ws = workspace(GREET);
    std::fs::create_dir_all(ws.ws.join(".wield/tools")).unwrap();
    std::fs::write(
        ws.ws.join(".wield/tools/greet.toml"),
        r#"name = "greet"
description = "Greet someone by name"
input_schema = { type = "object", properties = { who = { type = "string" } }, required = ["who"] }
cmds = [["echo", "hello", "${who}"]]
preview = "greet ${who}"
"#,
    )
    .unwrap();
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
    // The schema is the pipeline's: a missing field never reaches a command.
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

#[test]
fn the_agent_calls_a_command_tool() {
    let provider = Scripted::start(vec![
        Turn::Call("greet", json!({ "who": "`whoami`" })),
        Turn::Text("Greeted."),
    ]);
    let ws = greet_ws();
    std::fs::write(
        ws.ws.join(".wield/config.toml"),
        format!("{GREET}\n{}", provider.config()),
    )
    .unwrap();
    let (code, stdout, stderr) = wield(&ws, &["run", "--headless", "-p", "Greet `whoami`"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "Greeted.\n");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let tools = requests[0]["tools"].to_string();
    assert!(tools.contains("Greet someone by name"), "{tools}");
    let messages = requests[1]["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        result["content"].as_str().unwrap().contains("hello `whoami`\n"),
        "{result}"
    );
}
