//! The peers these tests drive `wield` with or against, or set up and
//! compare with, start in the environment `wield` gets (see
//! `wield_cmd.rs`), without `wield`'s home: nothing of the shell that runs
//! the tests reaches them either.

use std::path::Path;
use std::process::Command;

pub use wield_test_support::command::peer_command;

use crate::wield_cmd::wield_env;

/// `git ARGS` in `dir`, which must succeed, with `dir` as its home and no
/// system config; its stdout.
#[allow(clippy::expect_used)]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = peer_command("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git is needed for these tests (apt-get install git)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whatever the test run's environment holds (cargo's and nextest's
/// variables, a developer's `WIELD_*` or proxy settings), a peer sees only
/// `PATH` and the locale, and `wield` those and its home, config and temp
/// directories.
#[test]
fn peers_and_wield_see_only_the_allowed_environment() {
    let names = |mut c: Command| {
        let out = c.arg("-0").output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let mut names: Vec<String> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|v| !v.is_empty())
            .map(|v| {
                String::from_utf8_lossy(v)
                    .split('=')
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        names.sort();
        names
    };
    assert!(
        std::env::vars_os().any(|(k, _)| k != "PATH" && k != "LANG"),
        "the test run's environment has something to leave out"
    );
    assert!(std::env::var_os("PATH").is_some(), "the test run has a PATH");
    assert_eq!(names(peer_command("env")), ["LANG", "PATH"]);
    let dir = std::env::temp_dir();
    let wield = wield_env(&dir, &dir).with_tmp(&dir);
    assert_eq!(
        names(wield.running("env")),
        ["HOME", "LANG", "PATH", "RUST_BACKTRACE", "TMPDIR", "XDG_CONFIG_HOME"]
    );
}
