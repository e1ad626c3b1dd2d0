//! The exit-code table (docs/exit-codes.md), command by command: 1 when
//! wield could not do the work — a provider that cannot be used among
//! them —, 2 when what was typed (or a configuration file) is wrong; and a
//! `--json` run's stream ends with its final event whatever happened.

// The helper is outside #[test] fns.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

use crate::common::Env;

#[test]
fn no_provider_configured_is_a_failure_exit_1_in_every_command_that_talks_to_a_model() {
    let env = Env::new();
    env.put("a.chat", "@You:\nHello\n");
    for args in [
        &["run", "-p", "hi"][..],
        &["complete", "hi"],
        &["chat", "a.chat"],
        &["providers", "check"],
    ] {
        let (code, _, stderr) = env.run(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stderr.contains("no model provider is configured"), "{args:?}: {stderr}");
    }
    // A key that is not set: the same.
    env.put(".wield/config.toml", "[providers.a]\nkind = \"anthropic\"\n");
    for args in [&["run", "-p", "hi"][..], &["complete", "hi"], &["providers", "check"]] {
        let (code, _, stderr) = env.run(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("ANTHROPIC_API_KEY, which is not set"),
            "{args:?}: {stderr}"
        );
    }
    // A provider the command line names that is not configured.
    let (code, _, stderr) = env.run(&["run", "-p", "hi", "--provider", "nope"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no provider named `nope`"), "{stderr}");
}

#[test]
fn what_was_typed_wrong_is_a_usage_error_exit_2() {
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        "[providers.a]\nkind = \"anthropic\"\nmodle = \"x\"\n",
    );
    for (args, says) in [
        (&["run", "-p", "hi"][..], "providers.a.modle"),
        (&["run", "-p", "hi", "--max-steps", "many"], "invalid value"),
        (&["call", "read", "{bad"], "invalid JSON arguments"),
        (&["chat", "status", "missing.chat"], "does not exist"),
        (&["tools", "list", "--set", "bash.timeout"], "KEY=VALUE"),
    ] {
        let (code, _, stderr) = env.run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_json_run_that_cannot_start_still_ends_with_session_finished() {
    let env = Env::new();
    for (args, code, error) in [
        (&["run", "--json", "-p", "hi"][..], 1, "no model provider is configured"),
        (&["run", "--json", "-p", " "], 2, "the task is empty"),
    ] {
        let (got, stdout, stderr) = env.run(args);
        assert_eq!(got, code, "{args:?}: {stderr}");
        let last: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
        assert_eq!(last["type"], "session.finished", "{stdout}");
        assert_eq!(last["stop"], "error", "{last}");
        assert!(last["error"].as_str().unwrap().contains(error), "{last}");
        // The person still reads the error on stderr.
        assert!(stderr.contains(error), "{stderr}");
    }
}
