//! What people expect of a command line, through the real binary: shell
//! completions, the manual pages in `docs/man`, `--help` that keeps the
//! global options apart, and `--set` mistakes named as they were typed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use crate::common::Env;

/// The error of `wield ARGS tools list`, which must exit 2.
fn usage_error(e: &Env, args: &[&str]) -> String {
    let out = e.wield().args(args).args(["tools", "list"]).assert().code(2);
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

/// What bash offers for `words`, the last one being completed, once the
/// script is loaded.
fn bash_completes(script: &Path, words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let n = words.len() - 1;
    // bash calls the function with the command, the word being completed
    // and the word before it.
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={n}; _wield wield {} {}; echo \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        quoted[n],
        quoted[n - 1],
    );
    bash(&["--norc", "-c", &program])
}

/// `bash ARGS`, which must succeed; its stdout.
fn bash(args: &[&str]) -> String {
    let out = wield_test_support::command::cleared("bash")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completion_is_valid_bash_that_completes_commands_and_options() {
    let e = Env::new();
    let script = e.stdout(&["completions", "bash"]);
    for word in ["run", "chat", "init", "completions", "--directory"] {
        assert!(script.contains(word), "no {word} in the script");
    }
    let file = e.base.join("wield.bash");
    std::fs::write(&file, &script).unwrap();
    bash(&["-n", file.to_str().unwrap()]);
    assert_eq!(bash_completes(&file, &["wield", "ru"]).trim(), "run");
    assert!(bash_completes(&file, &["wield", "run", "--hea"]).contains("--headless"));
    let shells = bash_completes(&file, &["wield", "completions", ""]);
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.split_whitespace().any(|w| w == shell), "{shells}");
    }
}

#[test]
fn zsh_fish_elvish_and_powershell_completions_name_the_commands() {
    let e = Env::new();
    for (shell, marker) in [
        ("zsh", "#compdef wield"),
        ("fish", "complete -c wield"),
        ("elvish", "edit:completion:arg-completer[wield]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let script = e.stdout(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: no {marker}");
        // fish names long options without their dashes (`-l directory`).
        for word in ["run", "chat", "init", "providers", "directory"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    e.wield()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("possible values: bash"));
}

fn docs_man() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/man")
}

fn pages_in(dir: &Path) -> Vec<(String, String)> {
    let mut pages: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(entry.path()).unwrap())
        })
        .filter(|(name, _)| name.ends_with(".1"))
        .collect();
    pages.sort();
    pages
}

/// The pages in `docs/man` are what `wield man` makes of the commands as
/// they are now: a new command or option without its page fails here.
#[test]
fn the_manual_pages_in_docs_man_are_current() {
    let e = Env::new();
    let out = e.base.join("man");
    e.stdout(&["man", "--out", out.to_str().unwrap()]);
    let fresh = pages_in(&out);
    let top = &fresh.iter().find(|(name, _)| name == "wield.1").expect("wield.1").1;
    assert!(top.contains(".TH wield 1") && top.contains("wield\\-init(1)"), "{top}");
    for name in [
        "wield-run.1",
        "wield-init.1",
        "wield-completions.1",
        "wield-tools-list.1",
    ] {
        assert!(fresh.iter().any(|(page, _)| page == name), "no {name}");
    }
    assert!(
        !fresh.iter().any(|(page, _)| page == "wield-man.1"),
        "the hidden command has a page"
    );
    let committed = pages_in(&docs_man());
    let names = |pages: &[(String, String)]| pages.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&committed),
        names(&fresh),
        "docs/man is stale: run `cargo run -p wield-cli -- man --out docs/man` and commit the pages"
    );
    for ((name, committed), (_, fresh)) in committed.iter().zip(&fresh) {
        assert!(
            committed == fresh,
            "docs/man/{name} is stale: run `cargo run -p wield-cli -- man --out docs/man` and commit the pages"
        );
    }
}

#[test]
fn wield_man_removes_the_pages_of_commands_that_are_gone_and_nothing_else() {
    let e = Env::new();
    let out = e.base.join("man");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("wield-gone.1"), "old").unwrap();
    std::fs::write(out.join("other.1"), "not ours").unwrap();
    e.stdout(&["man", "--out", out.to_str().unwrap()]);
    assert!(!out.join("wield-gone.1").exists());
    assert!(out.join("other.1").exists());
    assert!(out.join("wield.1").exists());
}

/// `wield run --help` shows the run's own options first, then the global
/// ones under their own heading.
#[test]
fn help_lists_a_commands_own_options_apart_from_the_global_ones() {
    let e = Env::new();
    let help = e.stdout(&["run", "--help"]);
    let heading = help.find("\nGlobal options:\n").expect("a Global options heading");
    // The lines that name an option, not the text that mentions one.
    let options = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.trim_start().starts_with('-'))
            .flat_map(|l| {
                l.split([',', ' '])
                    .filter(|w| w.starts_with("--"))
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let (own, global) = help.split_at(heading);
    let (own, global) = (options(own), options(global));
    for option in ["--prompt", "--provider", "--max-steps", "--resume"] {
        assert!(
            own.iter().any(|o| o == option),
            "{option} is not among the run's options: {own:?}"
        );
    }
    for option in ["--directory", "--config", "--profile", "--yes", "--set"] {
        assert!(
            global.iter().any(|o| o == option) && !own.iter().any(|o| o == option),
            "{option} is not under Global options: {global:?}"
        );
    }
}

/// `wield --set SETTING tools list` exits 2 with an error holding `expected`.
fn assert_set_refused(e: &Env, cases: &[(&str, &str)]) {
    for (setting, expected) in cases {
        let err = usage_error(e, &["--set", setting]);
        assert!(err.contains(expected), "--set {setting}: {err}");
    }
}

#[test]
fn a_set_with_an_unknown_key_names_the_whole_key_as_typed() {
    assert_set_refused(
        &Env::new(),
        &[
            ("foo.bar=1", "unknown config key `foo.bar` in --set foo.bar=1"),
            (
                "bash.timout=10",
                "unknown config key `bash.timout` in --set bash.timout=10; did you mean `bash.timeout`?",
            ),
            // Each part is corrected, not only the first.
            (
                "bsh.timout=10",
                "`bsh.timout` in --set bsh.timout=10; did you mean `bash.timeout`?",
            ),
            ("providers.local.kidn=x", "did you mean `providers.local.kind`?"),
        ],
    );
}

#[test]
fn a_set_with_a_bad_value_names_the_whole_key_as_typed() {
    assert_set_refused(
        &Env::new(),
        &[
            (
                "executor.max_parallel=-1",
                "invalid value for `executor.max_parallel` in --set executor.max_parallel=-1",
            ),
            (
                "approval.auto_approve=3",
                "`approval.auto_approve` in --set approval.auto_approve=3",
            ),
            // A value where a table of settings belongs was taken, and ignored.
            ("bash=1", "`bash` in --set bash=1 is a table of settings (`bash."),
            ("=1", "--set expects KEY=VALUE"),
        ],
    );
}
