//! Command tools (`[[tools.command]]`, `.wield/tools/*.toml`) through the
//! runtime's pipeline, as a person-driven `wield call` runs them: each
//! `${field}` one whole argument whatever it holds (an injection attempt in
//! every field, checked with a script printing its argv), definitions
//! checked at load, the first failure stopping the list, bash's sandbox
//! and a timeout applied, `requires_approval`, and the tool listed with its
//! source. Commands run under bubblewrap here: the Landlock backend needs
//! the `wield` binary as its helper, so the CLI's suite runs that one.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use wield_core::Approver;
use wield_core::approval::{HeadlessApprover, YesApprover};
use wield_core::policy::PolicyOptions;
use wield_runtime::RuntimeOptions;
use wield_test_support::command_tools;
use wield_test_support::pipeline::Loaded;

use support::Env;

/// Commands run sandboxed, by the backend that needs no helper binary.
const BWRAP: &str = "sandbox.backend=\"bwrap\"";

/// A workspace whose `.wield/config.toml` is `config`, with `argv`: a
/// script printing how many arguments it got, then each as `<arg>`.
fn workspace(config: &str) -> Env {
    let e = Env::new();
    e.put(".wield/config.toml", config);
    e.put(
        "argv",
        "#!/bin/sh\necho \"$#\"\nfor a in \"$@\"; do printf '<%s>\\n' \"$a\"; done\n",
    );
    std::fs::set_permissions(e.ws("argv"), std::fs::Permissions::from_mode(0o755)).unwrap();
    e
}

impl Env {
    /// A call under bubblewrap with `sets`, `approver` deciding.
    fn call_as(&self, approver: Arc<dyn Approver>, sets: &[&str], tool: &str, args: Value) -> (i32, Value) {
        let sets: Vec<&str> = std::iter::once(BWRAP).chain(sets.iter().copied()).collect();
        support::call(&self.ws(""), &sets, approver, tool, args)
    }

    /// A call approved as `wield -y call` approves.
    fn yes(&self, tool: &str, args: Value) -> (i32, Value) {
        self.call_as(Arc::new(YesApprover), &[], tool, args)
    }

    /// A call with no one to approve it, as a headless `wield call`.
    fn headless(&self, sets: &[&str], tool: &str, args: Value) -> (i32, Value) {
        self.call_as(Arc::new(HeadlessApprover), sets, tool, args)
    }

    /// Loading the workspace's runtime fails with a usage error (which
    /// `wield` exits 2 on) saying each of `words`.
    fn load_fails_saying(&self, words: &[&str]) {
        let err = wield_test_support::pipeline::usage_error(&self.ws(""), &[]);
        for w in words {
            assert!(err.contains(w), "{w}: {err}");
        }
    }
}

fn output(v: &Value) -> &str {
    v["output"].as_str().unwrap_or_default()
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
    let e = workspace(ECHO_ARGS);
    let args = json!({ "value": "a b  c", "n": 7, "flag": false, "items": ["x y", "z"] });
    let (code, v) = e.yes("echo_args", args);
    assert_eq!(code, 0, "{v}");
    let expected = "$ ./argv 'a b  c' --n=7 false 'x y' z '${value}' 'cost: $5'\n\
                    7\n<a b  c>\n<--n=7>\n<false>\n<x y>\n<z>\n<${value}>\n<cost: $5>\nexit code: 0";
    assert_eq!(output(&v), expected, "{v}");
    assert_eq!(v["metadata"]["commands_run"], 1, "{v}");

    // A placeholder inside a longer argument needs its field.
    let (code, v) = e.yes("echo_args", json!({ "value": "v" }));
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
    let e = workspace(config);
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
    let home = e.base.join("home");
    std::fs::write(home.join("keep"), "home stays").unwrap();
    let (code, v) = e.yes("echo_all", args);
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
    for dir in ["ws", "home", "tmp", "outside"] {
        let names: Vec<String> = std::fs::read_dir(e.base.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("pwned")), "{dir}: {names:?}");
    }
    assert_eq!(std::fs::read_to_string(home.join("keep")).unwrap(), "home stays");
    e.assert_outside_untouched();
}

#[test]
fn a_placeholder_naming_no_field_is_a_config_error_at_load() {
    let e = workspace(&ECHO_ARGS.replace("\"--n=${n}\"", "\"--n=${count}\""));
    e.load_fails_saying(&[
        "command tool `echo_args`",
        "`${count}`, which names no property of `input_schema`",
        ".wield/config.toml",
    ]);

    // The same in a tool file, where each file is one tool.
    let e = workspace("");
    e.put(
        ".wield/tools/lint.toml",
        "name = \"lint\"\ndescription = \"Lint\"\ncmds = [[\"echo\", \"${path}\"]]\n",
    );
    e.load_fails_saying(&["command tool `lint` in", "lint.toml", "`${path}`"]);
}

#[test]
fn name_clashes_name_both_places() {
    let e = workspace(&ECHO_ARGS.replace("\"echo_args\"", "\"read\""));
    e.load_fails_saying(&["has the name of the built-in tool `read`"]);

    let e = workspace(ECHO_ARGS);
    e.put(
        ".wield/tools/echo.toml",
        "name = \"Echo_Args\"\ndescription = \"Again\"\ncmds = [[\"echo\"]]\n",
    );
    e.load_fails_saying(&["is defined twice", "config.toml", "echo.toml"]);
}

#[test]
fn the_first_failure_stops_the_list_and_says_which_command() {
    let config = r#"
[[tools.command]]
name = "three_steps"
description = "Three steps"
cmds = [["touch", "one"], ["sh", "-c", "echo out; echo boom >&2; exit 3"], ["touch", "three"]]
"#;
    let e = workspace(config);
    let (code, v) = e.yes("three_steps", json!({}));
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
    assert!(e.ws("one").exists());
    assert!(!e.ws("three").exists(), "the third command ran");
}

/// Under bubblewrap (the CLI's suite runs Landlock, whose helper is the
/// `wield` binary).
#[test]
fn commands_run_in_bash_s_sandbox_and_within_their_timeout() {
    let e = workspace("");
    let target = e.base.join("outside/escaped.txt");
    e.put("src/.keep", "");
    e.put(".wield/config.toml", &command_tools::config(&target));
    let sets = ["sandbox.enabled=true"];
    let escape = e.call_as(Arc::new(YesApprover), &sets, "escape", json!({}));
    command_tools::assert_escape_refused(escape, "bwrap", &e.ws(""), &target);
    let started = Instant::now();
    let slow = e.call_as(Arc::new(YesApprover), &sets, "slow", json!({}));
    command_tools::assert_timed_out(slow, started.elapsed());
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
    let e = workspace(config);
    let (code, v) = e.headless(&[], "gated", json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("needs approval"), "{v}");
    assert!(!e.ws("gated-ran").exists());
    // Under the sandbox too.
    let (code, v) = e.headless(&["sandbox.enabled=true"], "gated", json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(!e.ws("gated-ran").exists());

    let (code, v) = e.headless(&[], "open", json!({}));
    assert_eq!(code, 0, "{v}");
    assert!(e.ws("open-ran").exists());

    let (code, v) = e.yes("gated", json!({}));
    assert_eq!(code, 0, "{v}");
    assert!(e.ws("gated-ran").exists());

    let (code, v) = e.call_as(
        Arc::new(YesApprover),
        &["approval.deny=[\"gated\"]"],
        "gated",
        json!({}),
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["metadata"]["refused"], "denied", "{v}");
}

/// `greet`, from a tool file, approved by the configuration.
fn greet() -> Env {
    let e = workspace("[approval]\nauto_approve = [\"$standard\", \"greet\"]\n");
    e.put(".wield/tools/greet.toml", command_tools::GREET);
    e
}

#[test]
fn a_command_tool_is_listed_with_its_source_and_runs() {
    let e = greet();
    let loaded = Loaded::load(&e.ws(""), &[]).unwrap();
    let listed = loaded.listed();
    assert!(listed.contains("greet  Greet someone by name\n"), "{listed}");
    let source = loaded
        .runtime
        .tools()
        .current()
        .registry
        .get("greet")
        .unwrap()
        .source
        .clone();
    assert_eq!(source, "command");
    drop(loaded);
    // Command tools run commands: the coding profile has them, as it has bash.
    let policy = PolicyOptions {
        profile: Some("coding".into()),
        ..PolicyOptions::default()
    };
    let coding = Loaded::with_options(&e.ws(""), RuntimeOptions::builder().policy(policy).build()).unwrap();
    assert!(coding.listed().contains("greet  Greet someone by name\n"));
    drop(coding);
    let (code, v) = e.headless(&[], "greet", json!({ "who": "Ada; id" }));
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), "$ echo hello 'Ada; id'\nhello Ada; id\nexit code: 0");
    // The schema is the pipeline's: a missing field never reaches a command.
    let (code, v) = e.headless(&[], "greet", json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("who"), "{v}");
}
