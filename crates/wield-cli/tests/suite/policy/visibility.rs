//! Every stage of the filter pipeline, and what `tools debug` says about it.

use predicates::prelude::*;

use super::support::{Env, decision, error_of};

fn d(e: &Env, args: &[&str], tool: &str) -> (String, String, String) {
    decision(&e.debug(args), tool)
}

fn t(status: &str, stage: &str, rule: &str) -> (String, String, String) {
    (status.into(), stage.into(), rule.into())
}

#[test]
fn nothing_configured_shows_every_tool_but_the_loader() {
    let e = Env::new();
    let v = e.debug(&[]);
    assert_eq!(v["profile"], "full");
    assert_eq!(
        decision(&v, "calculator"),
        t("in", "registry", "registered; no layer restricts it")
    );
    assert_eq!(
        decision(&v, "load_tools"),
        t("out", "deferred", "no tool is deferred, so there is nothing to load")
    );
    let text = e.wield().args(["tools", "debug"]).assert().success();
    let out = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(out.contains("TOOL"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("calculator") && l.contains("in") && l.contains("registry")),
        "{out}"
    );
    assert!(out.contains(" in, 0 deferred, "), "{out}");
}

#[test]
fn global_stage_from_config_flags_and_environment() {
    let e = Env::with_config("[tools]\nenabled = [\"calc*\", \"debug_*\"]\ndisabled = [\"debug_panic\"]\n");
    assert_eq!(
        d(&e, &[], "calculator"),
        t("in", "global", "[tools] enabled: \"calc*\"")
    );
    assert_eq!(
        d(&e, &[], "debug_panic"),
        t("out", "global", "[tools] disabled: \"debug_panic\"")
    );
    assert_eq!(
        d(&e, &[], "load_tools"),
        t("out", "global", "[tools] enabled: no entry matches (calc*, debug_*)")
    );
    // --include-tools replaces [tools] enabled; disabled still wins.
    assert_eq!(
        d(&e, &["--include-tools", "DEBUG_SLEEP,debug_panic"], "calculator"),
        t(
            "out",
            "global",
            "--include-tools: no entry matches (DEBUG_SLEEP, debug_panic)"
        )
    );
    assert_eq!(
        d(&e, &["--include-tools", "DEBUG_SLEEP,debug_panic"], "debug_sleep"),
        t("in", "global", "--include-tools: \"DEBUG_SLEEP\"")
    );
    assert_eq!(
        d(&e, &["--include-tools", "debug_panic"], "debug_panic"),
        t("out", "global", "[tools] disabled: \"debug_panic\"")
    );
    // --exclude-tools adds to the disabled list.
    assert_eq!(
        d(&e, &["--exclude-tools", "calculator"], "calculator"),
        t("out", "global", "--exclude-tools: \"calculator\"")
    );
    // The environment variables, named as such.
    let v = e
        .wield()
        .env("WIELD_INCLUDE_TOOLS", "group:math")
        .env("WIELD_EXCLUDE_TOOLS", "debug_sleep")
        .args(["tools", "debug", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(
        decision(&v, "calculator"),
        t("in", "global", "WIELD_INCLUDE_TOOLS: \"group:math\"")
    );
    assert_eq!(
        decision(&v, "debug_sleep"),
        t("out", "global", "WIELD_EXCLUDE_TOOLS: \"debug_sleep\"")
    );
    // A hidden tool cannot be called, and lists and schemas leave it out.
    let (code, r, _) = e.call(
        &["--exclude-tools", "calculator"],
        "calculator",
        r#"{"expression":"1"}"#,
    );
    assert_eq!(code, 1);
    assert!(
        error_of(&r)
            .contains("not available: hidden by the global stage of the tool policy (--exclude-tools: \"calculator\")"),
        "{r}"
    );
    e.wield()
        .args(["--exclude-tools", "calculator", "tools", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("calculator").not());
    e.wield()
        .args(["--exclude-tools", "calculator", "tools", "schema", "--format", "openai"])
        .assert()
        .success()
        .stdout(predicate::str::contains("calculator").not());
}

#[test]
fn profiles_from_flag_environment_and_config() {
    let e = Env::new();
    for p in ["minimal", "messaging", "coding"] {
        let (status, stage, rule) = d(&e, &["--profile", p], "calculator");
        assert_eq!((status.as_str(), stage.as_str()), ("out", "profile"), "{p}");
        assert!(
            rule.starts_with(&format!(
                "profile {p}: not included (it has read-only tools of group:fs, \"web_fetch\""
            )),
            "{rule}"
        );
    }
    // Whatever file tools exist, `minimal` keeps the read-only ones and drops the writers.
    let v = e.debug(&["--profile", "minimal"]);
    for tool in v["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        if ["read", "ls", "glob", "grep"].contains(&name) {
            assert_eq!(tool["status"], "in", "{tool}");
        }
        if ["write", "edit", "patch", "bash"].contains(&name) {
            assert_eq!(tool["status"], "out", "{tool}");
        }
    }
    assert_eq!(d(&e, &["--profile", "full"], "calculator").0, "in");
    let env = e
        .wield()
        .env("WIELD_PROFILE", "coding")
        .args(["tools", "debug", "--json"])
        .output()
        .unwrap();
    let env: serde_json::Value = serde_json::from_slice(&env.stdout).unwrap();
    assert_eq!(env["profile"], "coding");
    let c = Env::with_config("profile = \"messaging\"\n");
    assert_eq!(c.debug(&[])["profile"], "messaging");
    assert_eq!(c.debug(&["--profile", "full"])["profile"], "full");
    c.wield()
        .args(["--profile", "codng", "tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown profile `codng` (did you mean `coding`?)",
        ));
}

const LAYERS: &str = r#"
[agents.calc.tools]
enabled = ["calculator", "debug_*"]
[modes.quiet.tools]
disabled = ["debug_sleep"]
[tasks.one.tools]
enabled = ["calculator"]
[tasks.wide.tools]
enabled = ["*"]
disabled = ["debug_echo"]
"#;

#[test]
fn agent_mode_and_task_stages() {
    let e = Env::with_config(LAYERS);
    let all = ["--agent", "calc", "--mode", "quiet", "--task", "one"];
    let v = e.debug(&all);
    assert_eq!(
        (v["agent"].as_str(), v["mode"].as_str(), v["task"].as_str()),
        (Some("calc"), Some("quiet"), Some("one"))
    );
    assert_eq!(
        decision(&v, "load_tools"),
        t(
            "out",
            "agent",
            "[agents.calc.tools] enabled: no entry matches (calculator, debug_*)"
        )
    );
    assert_eq!(
        decision(&v, "debug_sleep"),
        t("out", "mode", "[modes.quiet.tools] disabled: \"debug_sleep\"")
    );
    assert_eq!(
        decision(&v, "debug_panic"),
        t(
            "out",
            "task",
            "[tasks.one.tools] enabled: no entry matches (calculator)"
        )
    );
    assert_eq!(
        decision(&v, "calculator"),
        t("in", "task", "[tasks.one.tools] enabled: \"calculator\"")
    );
    // A later layer cannot bring back what an earlier one removed; disabled wins within a layer.
    let v = e.debug(&["--agent", "calc", "--task", "wide"]);
    assert_eq!(decision(&v, "load_tools").1, "agent");
    assert_eq!(
        decision(&v, "debug_echo"),
        t("out", "task", "[tasks.wide.tools] disabled: \"debug_echo\"")
    );
    assert_eq!(
        decision(&v, "debug_sleep"),
        t("in", "task", "[tasks.wide.tools] enabled: \"*\"")
    );
    // The config can select them too; unknown names are usage errors.
    let c = Env::with_config(&format!("agent = \"calc\"\nmode = \"quiet\"\n{LAYERS}"));
    assert_eq!(d(&c, &[], "debug_sleep").1, "mode");
    c.wield()
        .args(["--mode", "loud", "tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown mode `loud`"))
        .stderr(predicate::str::contains("the defined modes are: quiet"));
    c.wield()
        .args(["--task", "x", "call", "calculator", "{}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown task `x`"));
}

#[test]
fn opt_in_needs_an_explicit_name_and_star_does_not_count() {
    let e = Env::with_config(
        "[tools]\nopt_in = [\"debug_*\"]\n[agents.all.tools]\nenabled = [\"*\"]\n[tasks.t.tools]\nenabled = [\"debug_sleep\", \"calc*\"]\n",
    );
    let hidden = "opt-in ([tools] opt_in: \"debug_*\"): hidden until an enabled list names it (\"*\" does not count)";
    assert_eq!(d(&e, &[], "debug_panic"), t("out", "opt_in", hidden));
    assert_eq!(d(&e, &["--agent", "all"], "debug_panic"), t("out", "opt_in", hidden));
    assert_eq!(d(&e, &["--include-tools", "*"], "debug_sleep").0, "out");
    assert_eq!(
        d(&e, &["--agent", "all", "--task", "t"], "debug_sleep"),
        t(
            "in",
            "opt_in",
            "opt-in ([tools] opt_in: \"debug_*\"); named by [tasks.t.tools] enabled: \"debug_sleep\""
        )
    );
    assert_eq!(
        d(&e, &["--agent", "all", "--task", "t"], "debug_panic").2,
        "[tasks.t.tools] enabled: no entry matches (debug_sleep, calc*)"
    );
    assert_eq!(d(&e, &["--include-tools", "group:debug"], "debug_panic").0, "in");
    assert_eq!(d(&e, &["--include-tools", "debug_p*"], "debug_panic").0, "in");
    let (code, r, _) = e.call(&[], "debug_echo", "{}");
    assert_eq!(code, 1);
    assert!(error_of(&r).contains("hidden by the opt_in stage"), "{r}");
}

#[test]
fn deferred_tools_are_named_in_the_prompt_block_and_loaded_by_load_tools() {
    let e = Env::with_config("[tools]\ndeferred = [\"debug_sleep\", \"debug_e*\"]\nopt_in = [\"debug_echo\"]\n");
    let v = e.debug(&[]);
    assert_eq!(
        decision(&v, "debug_sleep"),
        t("deferred", "deferred", "[tools] deferred: \"debug_sleep\"")
    );
    // Opt-in runs first: a deferred tool that is not opted in is dropped entirely.
    assert_eq!(decision(&v, "debug_echo").0, "out");
    assert_eq!(
        decision(&v, "load_tools"),
        t("in", "deferred", "offered because 1 tool(s) are deferred")
    );
    let block = v["deferred_prompt"].as_str().unwrap();
    assert!(block.starts_with("<available-deferred-tools>\n"), "{block}");
    assert!(block.contains("\ndebug_sleep\n"), "{block}");
    assert!(!block.contains("debug_echo"), "{block}");
    assert!(block.ends_with("</available-deferred-tools>"), "{block}");
    // Schemas and lists carry the loader but not the deferred tool.
    let list = e.wield().args(["tools", "list", "--json"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains("\"load_tools\"") && !list.contains("debug_sleep"),
        "{list}"
    );
    // load_tools answers with the schema; a person may call a deferred tool directly.
    let (code, r, _) = e.call(&[], "load_tools", r#"{"tools":["DEBUG_*"]}"#);
    assert_eq!(code, 0, "{r}");
    assert!(
        r["output"]
            .as_str()
            .unwrap()
            .starts_with("Loaded 1 tool(s): debug_sleep."),
        "{r}"
    );
    assert!(r["output"].as_str().unwrap().contains("\"input_schema\""), "{r}");
    let (code, r, _) = e.call(&[], "load_tools", r#"{"tools":["calculator"]}"#);
    assert_eq!(code, 1);
    assert!(
        error_of(&r).contains("`calculator` is already available without loading"),
        "{r}"
    );
    let (code, r, _) = e.call(&[], "debug_sleep", r#"{"seconds":0}"#);
    assert_eq!(code, 0, "{r}");
    // Without deferred tools the loader itself is hidden.
    let plain = Env::new();
    let (code, r, _) = plain.call(&[], "load_tools", r#"{"tools":["x"]}"#);
    assert_eq!(code, 1);
    assert!(error_of(&r).contains("nothing to load"), "{r}");
}

#[test]
fn bad_entries_and_values_are_usage_errors() {
    Env::with_config("[tools]\ndisabled = [\"group:\"]\n")
        .wield()
        .args(["tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid entry `group:` in [tools] disabled"));
    Env::with_config("[agents.a.tools]\nenabled = [1]\n")
        .wield()
        .args(["--agent", "a", "tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("agents.a.tools.enabled"));
}
