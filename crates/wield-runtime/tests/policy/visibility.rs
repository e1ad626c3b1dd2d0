//! Every stage of the filter pipeline (global, profile, agent, mode, task,
//! opt-in, deferred) and the decision and rule it gives each tool, as
//! `wield tools debug` reports them; what a hidden or deferred tool's call
//! answers, and what the model is offered.

use std::sync::Arc;

use serde_json::Value;
use wield_core::approval::HeadlessApprover;
use wield_core::policy::{PolicyOptions, Stage};
use wield_test_support::pipeline::{Loaded, error_of};

use super::support::{Env, args, rules};

fn t(status: &str, stage: &str, rule: &str) -> (String, String, String) {
    (status.into(), stage.into(), rule.into())
}

fn call(l: &Loaded, tool: &str, a: &str) -> (i32, Value) {
    l.call(Arc::new(HeadlessApprover), tool, args(a))
}

/// `--include-tools` (`wield` names the rule list after the flag).
fn include(entries: &[&str]) -> PolicyOptions {
    PolicyOptions {
        include: Some(rules("--include-tools", entries)),
        ..PolicyOptions::default()
    }
}

fn exclude(entries: &[&str]) -> PolicyOptions {
    PolicyOptions {
        exclude: Some(rules("--exclude-tools", entries)),
        ..PolicyOptions::default()
    }
}

fn profile(p: &str) -> PolicyOptions {
    PolicyOptions {
        profile: Some(p.into()),
        ..PolicyOptions::default()
    }
}

fn layers(agent: Option<&str>, mode: Option<&str>, task: Option<&str>) -> PolicyOptions {
    PolicyOptions {
        agent: agent.map(Into::into),
        mode: mode.map(Into::into),
        task: task.map(Into::into),
        ..PolicyOptions::default()
    }
}

/// The layer the policy applied at `stage` (`tools debug`'s `agent`,
/// `mode` and `task`).
fn layer(l: &Loaded, stage: Stage) -> Option<String> {
    let tools = l.runtime.tools().current();
    tools
        .policy
        .layers()
        .iter()
        .find(|(s, _)| *s == stage)
        .map(|(_, n)| n.clone())
}

fn profile_of(l: &Loaded) -> String {
    l.runtime.tools().current().policy.profile().to_string()
}

#[test]
fn nothing_configured_shows_every_tool_but_the_loader() {
    let l = Env::new().plain();
    assert_eq!(profile_of(&l), "full");
    assert_eq!(
        l.decision("calculator"),
        t("in", "registry", "registered; no layer restricts it")
    );
    assert_eq!(
        l.decision("load_tools"),
        t("out", "deferred", "no tool is deferred, so there is nothing to load")
    );
    let tools = l.runtime.tools().current();
    assert_eq!(tools.policy.deferred(), Vec::<&str>::new());
}

#[test]
fn global_stage_from_config_and_options() {
    let e = Env::with_config("[tools]\nenabled = [\"calc*\", \"debug_*\"]\ndisabled = [\"debug_panic\"]\n");
    let l = e.plain();
    assert_eq!(
        l.decision("calculator"),
        t("in", "global", "[tools] enabled: \"calc*\"")
    );
    assert_eq!(
        l.decision("debug_panic"),
        t("out", "global", "[tools] disabled: \"debug_panic\"")
    );
    assert_eq!(
        l.decision("load_tools"),
        t("out", "global", "[tools] enabled: no entry matches (calc*, debug_*)")
    );
    // An include list replaces [tools] enabled; disabled still wins.
    let l = e.load(include(&["DEBUG_SLEEP", "debug_panic"]));
    assert_eq!(
        l.decision("calculator"),
        t(
            "out",
            "global",
            "--include-tools: no entry matches (DEBUG_SLEEP, debug_panic)"
        )
    );
    assert_eq!(
        l.decision("debug_sleep"),
        t("in", "global", "--include-tools: \"DEBUG_SLEEP\"")
    );
    assert_eq!(
        e.load(include(&["debug_panic"])).decision("debug_panic"),
        t("out", "global", "[tools] disabled: \"debug_panic\"")
    );
    // An exclude list adds to the disabled list.
    let hidden = e.load(exclude(&["calculator"]));
    assert_eq!(
        hidden.decision("calculator"),
        t("out", "global", "--exclude-tools: \"calculator\"")
    );
    // The rule is named after the list's source (the environment variables, as `wield` names them).
    let l = e.load(PolicyOptions {
        include: Some(rules("WIELD_INCLUDE_TOOLS", &["group:math"])),
        exclude: Some(rules("WIELD_EXCLUDE_TOOLS", &["debug_sleep"])),
        ..PolicyOptions::default()
    });
    assert_eq!(
        l.decision("calculator"),
        t("in", "global", "WIELD_INCLUDE_TOOLS: \"group:math\"")
    );
    assert_eq!(
        l.decision("debug_sleep"),
        t("out", "global", "WIELD_EXCLUDE_TOOLS: \"debug_sleep\"")
    );
    // A hidden tool cannot be called, and what the model sees leaves it out.
    let (code, r) = call(&hidden, "calculator", r#"{"expression":"1"}"#);
    assert_eq!(code, 1);
    assert!(
        error_of(&r)
            .contains("not available: hidden by the global stage of the tool policy (--exclude-tools: \"calculator\")"),
        "{r}"
    );
    assert!(!hidden.listed().contains("calculator"), "{}", hidden.listed());
    assert!(hidden.listed().contains("debug_echo"), "{}", hidden.listed());
}

#[test]
fn profiles_from_options_and_config() {
    let e = Env::new();
    for p in ["minimal", "messaging", "coding"] {
        let l = e.load(profile(p));
        let (status, stage, rule) = l.decision("calculator");
        assert_eq!((status.as_str(), stage.as_str()), ("out", "profile"), "{p}");
        assert!(
            rule.starts_with(&format!(
                "profile {p}: not included (it has read-only tools of group:fs, \"web_fetch\""
            )),
            "{rule}"
        );
        assert_eq!(profile_of(&l), p);
    }
    // Whatever file tools exist, `minimal` keeps the read-only ones and drops the writers.
    let l = e.load(profile("minimal"));
    let tools = l.runtime.tools().current();
    for d in tools.policy.decisions() {
        if ["read", "ls", "glob", "grep"].contains(&d.name.as_str()) {
            assert_eq!(d.status.as_str(), "in", "{d:?}");
        }
        if ["write", "edit", "patch", "bash"].contains(&d.name.as_str()) {
            assert_eq!(d.status.as_str(), "out", "{d:?}");
        }
    }
    assert_eq!(e.load(profile("full")).decision("calculator").0, "in");
    // The config's `profile`, which the options override.
    let c = Env::with_config("profile = \"messaging\"\n");
    assert_eq!(profile_of(&c.plain()), "messaging");
    assert_eq!(profile_of(&c.load(profile("full"))), "full");
    let err = c.try_load(profile("codng")).err().unwrap();
    assert!(err.is_usage(), "{err}");
    assert!(
        err.to_string()
            .contains("unknown profile `codng` (did you mean `coding`?)"),
        "{err}"
    );
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
    let l = e.load(layers(Some("calc"), Some("quiet"), Some("one")));
    assert_eq!(
        (layer(&l, Stage::Agent), layer(&l, Stage::Mode), layer(&l, Stage::Task)),
        (Some("calc".into()), Some("quiet".into()), Some("one".into()))
    );
    assert_eq!(
        l.decision("load_tools"),
        t(
            "out",
            "agent",
            "[agents.calc.tools] enabled: no entry matches (calculator, debug_*)"
        )
    );
    assert_eq!(
        l.decision("debug_sleep"),
        t("out", "mode", "[modes.quiet.tools] disabled: \"debug_sleep\"")
    );
    assert_eq!(
        l.decision("debug_panic"),
        t(
            "out",
            "task",
            "[tasks.one.tools] enabled: no entry matches (calculator)"
        )
    );
    assert_eq!(
        l.decision("calculator"),
        t("in", "task", "[tasks.one.tools] enabled: \"calculator\"")
    );
    // A later layer cannot bring back what an earlier one removed; disabled wins within a layer.
    let l = e.load(layers(Some("calc"), None, Some("wide")));
    assert_eq!(l.decision("load_tools").1, "agent");
    assert_eq!(
        l.decision("debug_echo"),
        t("out", "task", "[tasks.wide.tools] disabled: \"debug_echo\"")
    );
    assert_eq!(
        l.decision("debug_sleep"),
        t("in", "task", "[tasks.wide.tools] enabled: \"*\"")
    );
    // The config can select them too; unknown names are usage errors.
    let c = Env::with_config(&format!("agent = \"calc\"\nmode = \"quiet\"\n{LAYERS}"));
    assert_eq!(c.plain().decision("debug_sleep").1, "mode");
    let err = c.try_load(layers(None, Some("loud"), None)).err().unwrap();
    assert!(err.is_usage(), "{err}");
    assert!(err.to_string().contains("unknown mode `loud`"), "{err}");
    assert!(err.to_string().contains("the defined modes are: quiet"), "{err}");
    let err = c.try_load(layers(None, None, Some("x"))).err().unwrap();
    assert!(err.is_usage(), "{err}");
    assert!(err.to_string().contains("unknown task `x`"), "{err}");
}

#[test]
fn opt_in_needs_an_explicit_name_and_star_does_not_count() {
    let e = Env::with_config(
        "[tools]\nopt_in = [\"debug_*\"]\n[agents.all.tools]\nenabled = [\"*\"]\n[tasks.t.tools]\nenabled = [\"debug_sleep\", \"calc*\"]\n",
    );
    let hidden = "opt-in ([tools] opt_in: \"debug_*\"): hidden until an enabled list names it (\"*\" does not count)";
    assert_eq!(e.plain().decision("debug_panic"), t("out", "opt_in", hidden));
    assert_eq!(
        e.load(layers(Some("all"), None, None)).decision("debug_panic"),
        t("out", "opt_in", hidden)
    );
    assert_eq!(e.load(include(&["*"])).decision("debug_sleep").0, "out");
    let named = e.load(layers(Some("all"), None, Some("t")));
    assert_eq!(
        named.decision("debug_sleep"),
        t(
            "in",
            "opt_in",
            "opt-in ([tools] opt_in: \"debug_*\"); named by [tasks.t.tools] enabled: \"debug_sleep\""
        )
    );
    assert_eq!(
        named.decision("debug_panic").2,
        "[tasks.t.tools] enabled: no entry matches (debug_sleep, calc*)"
    );
    assert_eq!(e.load(include(&["group:debug"])).decision("debug_panic").0, "in");
    assert_eq!(e.load(include(&["debug_p*"])).decision("debug_panic").0, "in");
    let (code, r) = call(&e.plain(), "debug_echo", "{}");
    assert_eq!(code, 1);
    assert!(error_of(&r).contains("hidden by the opt_in stage"), "{r}");
}

#[test]
fn deferred_tools_are_named_in_the_prompt_block_and_loaded_by_load_tools() {
    let e = Env::with_config("[tools]\ndeferred = [\"debug_sleep\", \"debug_e*\"]\nopt_in = [\"debug_echo\"]\n");
    let l = e.plain();
    assert_eq!(
        l.decision("debug_sleep"),
        t("deferred", "deferred", "[tools] deferred: \"debug_sleep\"")
    );
    // Opt-in runs first: a deferred tool that is not opted in is dropped entirely.
    assert_eq!(l.decision("debug_echo").0, "out");
    assert_eq!(
        l.decision("load_tools"),
        t("in", "deferred", "offered because 1 tool(s) are deferred")
    );
    let block = l.deferred_prompt().unwrap();
    assert!(block.starts_with("<available-deferred-tools>\n"), "{block}");
    assert!(block.contains("\ndebug_sleep\n"), "{block}");
    assert!(!block.contains("debug_echo"), "{block}");
    assert!(block.ends_with("</available-deferred-tools>"), "{block}");
    // What the model sees carries the loader but not the deferred tool.
    let list = l.listed();
    assert!(
        list.lines().any(|t| t.starts_with("load_tools  ")) && !list.contains("debug_sleep"),
        "{list}"
    );
    // load_tools answers with the schema; a person may call a deferred tool directly.
    let (code, r) = call(&l, "load_tools", r#"{"tools":["DEBUG_*"]}"#);
    assert_eq!(code, 0, "{r}");
    assert!(
        r["output"]
            .as_str()
            .unwrap()
            .starts_with("Loaded 1 tool(s): debug_sleep."),
        "{r}"
    );
    assert!(r["output"].as_str().unwrap().contains("\"input_schema\""), "{r}");
    let (code, r) = call(&l, "load_tools", r#"{"tools":["calculator"]}"#);
    assert_eq!(code, 1);
    assert!(
        error_of(&r).contains("`calculator` is already available without loading"),
        "{r}"
    );
    let (code, r) = call(&l, "debug_sleep", r#"{"seconds":0}"#);
    assert_eq!(code, 0, "{r}");
    // Without deferred tools the loader itself is hidden.
    let (code, r) = call(&Env::new().plain(), "load_tools", r#"{"tools":["x"]}"#);
    assert_eq!(code, 1);
    assert!(error_of(&r).contains("nothing to load"), "{r}");
    assert!(Env::new().plain().deferred_prompt().is_none());
}

#[test]
fn bad_entries_and_values_are_usage_errors() {
    let err = Env::with_config("[tools]\ndisabled = [\"group:\"]\n")
        .try_load(PolicyOptions::default())
        .err()
        .unwrap();
    assert!(err.is_usage(), "{err}");
    assert!(
        err.to_string().contains("invalid entry `group:` in [tools] disabled"),
        "{err}"
    );
    let err = Env::with_config("[agents.a.tools]\nenabled = [1]\n")
        .try_load(layers(Some("a"), None, None))
        .err()
        .unwrap();
    assert!(err.is_usage(), "{err}");
    assert!(err.to_string().contains("agents.a.tools.enabled"), "{err}");
}
