//! User hooks from the configuration: blocking, rewriting (validated
//! again), feedback, order, file globs, timeouts, and the keys a hook
//! table must get right. Hooks run `sh`, and one test times one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use wield_core::Approver;
use wield_core::approval::{HeadlessApprover, YesApprover};
use wield_test_support::pipeline::{Loaded, error_of};

use super::support::{Env, args};

const CALC: &str = r#"{"expression":"1+1"}"#;

fn hook(name: &str, event: &str, extra: &str, command: &str) -> String {
    format!("[hooks.{name}]\nevent = \"{event}\"\n{extra}\ncommand = '''{command}'''\n")
}

fn call(l: &Loaded, tool: &str, a: &str) -> (i32, Value) {
    l.call(Arc::new(HeadlessApprover), tool, args(a))
}

fn call_yes(l: &Loaded, tool: &str, a: &str) -> (i32, Value) {
    let yes: Arc<dyn Approver> = Arc::new(YesApprover);
    l.call(yes, tool, args(a))
}

#[allow(clippy::unwrap_used)]
fn read_json(path: std::path::PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn pre_hooks_block_with_exit_2_or_deny() {
    let e = Env::with_config(&hook(
        "guard",
        "pre",
        "matcher = \"calc.*\"",
        "echo 'no maths today' >&2; exit 2",
    ));
    let l = e.plain();
    let (code, r) = call(&l, "calculator", CALC);
    assert_eq!(code, 1);
    assert_eq!(error_of(&r), "blocked by hook `guard`: no maths today");
    // The matcher is a regex on the whole name, in any case.
    assert_eq!(call_yes(&l, "debug_echo", "{}").0, 0);
    let e = Env::with_config(&hook(
        "policy",
        "pre",
        "matcher = \"CALCULATOR|debug_echo\"",
        r#"echo '{"deny": true, "reason": "not on Fridays"}'"#,
    ));
    let l = e.plain();
    let (code, r) = call_yes(&l, "debug_echo", "{}");
    assert_eq!(code, 1);
    assert_eq!(error_of(&r), "blocked by hook `policy`: not on Fridays");
}

#[test]
fn pre_hooks_rewrite_in_name_order_and_rewrites_are_validated() {
    let config = [
        hook(
            "a_first",
            "pre",
            "",
            r#"cat > seen_a.json; echo '{"input": {"expression": "6*7"}, "message": "rewrote"}'"#,
        ),
        hook("b_second", "pre", "", "cat > seen_b.json"),
    ]
    .concat();
    let e = Env::with_config(&config);
    let (code, r) = call(&e.plain(), "calculator", CALC);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["output"], "42\n[hook feedback] a_first: rewrote");
    let a = read_json(e.ws().join("seen_a.json"));
    assert_eq!(a["hook_event"], "pre");
    assert_eq!(a["tool"]["name"], "calculator");
    assert_eq!(a["tool"]["input"]["expression"], "1+1");
    assert_eq!(a["cwd"], e.ws().canonicalize().unwrap().to_str().unwrap());
    assert_eq!(a["file_paths"], serde_json::json!([]));
    // The second hook sees the first one's rewrite.
    let b = read_json(e.ws().join("seen_b.json"));
    assert_eq!(b["tool"]["input"]["expression"], "6*7");
    let bad = Env::with_config(&hook("breaks", "pre", "", r#"echo '{"input": {"expression": 5}}'"#));
    let (code, r) = call(&bad.plain(), "calculator", CALC);
    assert_eq!(code, 1);
    let err = error_of(&r);
    assert!(
        err.starts_with("hook `breaks` rewrote the input into an invalid one"),
        "{err}"
    );
    assert!(err.contains("expression"), "{err}");
}

#[test]
fn post_hooks_and_failures_give_feedback() {
    let config = [
        hook("fmt", "post", "", r#"cat > post.json; echo '{"message": "formatted"}'"#),
        hook("lint", "pre", "", "echo 'style warning' >&2; exit 1"),
        hook("plain", "post", "matcher = \"calculator\"", "echo just text"),
    ]
    .concat();
    let e = Env::with_config(&config);
    let (code, r) = call(&e.plain(), "calculator", CALC);
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        r["output"],
        "2\n[hook fmt] formatted\n[hook plain] just text\n[hook feedback] lint: hook `lint` exited with status 1: style warning"
    );
    let post = read_json(e.ws().join("post.json"));
    assert_eq!(post["hook_event"], "post");
    assert_eq!(post["tool"]["output"], "2");
    assert_eq!(post["tool"]["success"], true);
}

#[test]
fn files_globs_select_calls_by_their_paths() {
    let e = Env::with_config(
        &[
            hook("rs", "pre", "files = \"*.rs\"", "echo rust-file >&2; exit 2"),
            hook("docs", "pre", "files = \"docs/**/*.md\"", "echo docs >&2; exit 2"),
        ]
        .concat(),
    );
    let l = e.plain();
    let path = |path: &str| error_of(&call_yes(&l, "debug_echo", &format!(r#"{{"path":"{path}"}}"#)).1);
    assert_eq!(path("src/deep/lib.rs"), "blocked by hook `rs`: rust-file");
    assert_eq!(path("docs/a/b/c.md"), "blocked by hook `docs`: docs");
    assert_eq!(path("notes/c.md"), "");
    assert_eq!(path("src/lib.txt"), "");
    // No paths, no match.
    assert_eq!(call(&l, "calculator", CALC).0, 0);
}

#[test]
fn a_hook_that_times_out_is_killed_with_its_children_and_reported() {
    let e = Env::with_config(&hook(
        "slow",
        "pre",
        "timeout = \"300ms\"",
        "(sleep 1; touch child-survived) & sleep 10",
    ));
    let l = e.plain();
    let started = Instant::now();
    let (code, r) = call(&l, "calculator", CALC);
    let took = started.elapsed();
    assert_eq!(code, 0, "{r}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(
        r["output"],
        "2\n[hook feedback] slow: hook `slow` timed out after 300ms and was stopped; the call was not affected"
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!e.ws().join("child-survived").exists());
}

#[test]
fn invalid_hook_config_names_the_key() {
    for (config, message) in [
        (
            "[hooks.x]\nevent = \"during\"\ncommand = \"true\"\n",
            "`hooks.x.event` must be \"pre\" or \"post\"",
        ),
        (
            "[hooks.x]\nevent = \"pre\"\nmatcher = \"(\"\ncommand = \"true\"\n",
            "`hooks.x.matcher` is not a valid regex",
        ),
        (
            "[hooks.x]\nevent = \"pre\"\ncommand = \"true\"\ntimeout = \"soon\"\n",
            "`hooks.x.timeout` must be a duration",
        ),
    ] {
        // The runtime loads; the executor a call needs is refused.
        let e = Env::with_config(config);
        let l = e.plain();
        let err = l.runtime.executor(Arc::new(HeadlessApprover)).err().unwrap();
        assert!(err.is_usage(), "{err}");
        assert!(err.to_string().contains(message), "{err}");
    }
}
