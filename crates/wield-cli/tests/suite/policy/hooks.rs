//! What `wield` adds to user hooks: a timed-out hook is warned about on
//! stderr, and a hook table with a wrong key is a usage error (exit 2).
//! What hooks do to calls is wield-runtime's `policy` suite.

use predicates::prelude::*;

use super::support::Env;

const CALC: &str = r#"{"expression":"1+1"}"#;

#[test]
fn a_hook_that_times_out_is_warned_about_on_stderr() {
    let e = Env::with_config("[hooks.slow]\nevent = \"pre\"\ntimeout = \"300ms\"\ncommand = \"sleep 10\"\n");
    let (code, r, stderr) = e.call(&[], "calculator", CALC);
    assert_eq!(code, 0, "{r}");
    assert!(stderr.contains("hook `slow` timed out"), "{stderr}");
}

#[test]
fn invalid_hook_config_names_the_key() {
    Env::with_config("[hooks.x]\nevent = \"during\"\ncommand = \"true\"\n")
        .wield()
        .args(["call", "calculator", CALC])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`hooks.x.event` must be \"pre\" or \"post\""));
    Env::with_config("[hooks.x]\nevent = \"pre\"\nmatcher = \"(\"\ncommand = \"true\"\n")
        .wield()
        .args(["call", "calculator", CALC])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`hooks.x.matcher` is not a valid regex"));
    Env::with_config("[hooks.x]\nevent = \"pre\"\ncommand = \"true\"\ntimeout = \"soon\"\n")
        .wield()
        .args(["call", "calculator", CALC])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`hooks.x.timeout` must be a duration"));
}
