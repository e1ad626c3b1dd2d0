//! What `wield tools debug` prints (its table and its JSON) and the flags
//! and environment variables that select the tool policy: the tool lists
//! of `--include-tools`/`--exclude-tools` and `WIELD_INCLUDE_TOOLS`/
//! `WIELD_EXCLUDE_TOOLS`, each named in the rule it gave, `--profile` and
//! `WIELD_PROFILE`, `--agent`/`--mode`/`--task`, the lists and schemas a
//! hidden tool is left out of, and the usage errors that exit 2. The
//! stages' decisions themselves are wield-runtime's `policy` suite.

use predicates::prelude::*;

use super::support::{Env, decision};

fn t(status: &str, stage: &str, rule: &str) -> (String, String, String) {
    (status.into(), stage.into(), rule.into())
}

#[test]
fn tools_debug_prints_each_decision_as_a_table_or_json() {
    let e = Env::new();
    let v = e.debug(&[]);
    assert_eq!(v["profile"], "full");
    assert_eq!(
        decision(&v, "calculator"),
        t("in", "registry", "registered; no layer restricts it")
    );
    assert_eq!(v["deferred_prompt"], serde_json::Value::Null);
    let text = e.wield().args(["tools", "debug"]).assert().success();
    let out = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(out.contains("TOOL"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("calculator") && l.contains("in") && l.contains("registry")),
        "{out}"
    );
    assert!(out.contains(" in, 0 deferred, "), "{out}");
    // The deferred tools' prompt block, and `tools list --json` with the loader but not them.
    let e = Env::with_config("[tools]\ndeferred = [\"debug_sleep\"]\n");
    let block = e.debug(&[])["deferred_prompt"].as_str().unwrap().to_owned();
    assert!(block.starts_with("<available-deferred-tools>\n"), "{block}");
    assert!(block.contains("\ndebug_sleep\n"), "{block}");
    let list = e.wield().args(["tools", "list", "--json"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains("\"load_tools\"") && !list.contains("debug_sleep"),
        "{list}"
    );
}

#[test]
fn tool_list_flags_and_environment_variables_are_named_in_their_rules() {
    let e = Env::with_config("[tools]\nenabled = [\"calc*\", \"debug_*\"]\ndisabled = [\"debug_panic\"]\n");
    // --include-tools takes a comma-separated list.
    let v = e.debug(&["--include-tools", "DEBUG_SLEEP,debug_panic"]);
    assert_eq!(
        decision(&v, "calculator"),
        t(
            "out",
            "global",
            "--include-tools: no entry matches (DEBUG_SLEEP, debug_panic)"
        )
    );
    assert_eq!(
        decision(&v, "debug_sleep"),
        t("in", "global", "--include-tools: \"DEBUG_SLEEP\"")
    );
    assert_eq!(
        decision(&e.debug(&["--exclude-tools", "calculator"]), "calculator"),
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
    // Lists and schemas leave a hidden tool out.
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
    let v = e.debug(&["--profile", "coding"]);
    assert_eq!(v["profile"], "coding");
    assert_eq!(decision(&v, "calculator").1, "profile");
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
"#;

#[test]
fn agent_mode_and_task_flags_and_usage_errors() {
    let e = Env::with_config(LAYERS);
    let v = e.debug(&["--agent", "calc", "--mode", "quiet", "--task", "one"]);
    assert_eq!(
        (v["agent"].as_str(), v["mode"].as_str(), v["task"].as_str()),
        (Some("calc"), Some("quiet"), Some("one"))
    );
    assert_eq!(decision(&v, "load_tools").1, "agent");
    assert_eq!(decision(&v, "debug_sleep").1, "mode");
    assert_eq!(
        decision(&v, "calculator"),
        t("in", "task", "[tasks.one.tools] enabled: \"calculator\"")
    );
    let v = e.debug(&[]);
    assert_eq!(
        (v["agent"].as_str(), v["mode"].as_str(), v["task"].as_str()),
        (None, None, None)
    );
    e.wield()
        .args(["--mode", "loud", "tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown mode `loud`"))
        .stderr(predicate::str::contains("the defined modes are: quiet"));
    e.wield()
        .args(["--task", "x", "call", "calculator", "{}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown task `x`"));
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
