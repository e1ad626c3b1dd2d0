//! `wield init` through the real binary: the commented configuration it
//! writes loads, every setting in it is a real key, it leaves an existing
//! file alone unless told, and wield's state stays out of `git status`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use crate::common::Env;
use crate::peer_cmd::git;

fn config(e: &Env) -> PathBuf {
    e.ws(".wield/config.toml")
}

/// The settings of the file `wield init` wrote, uncommented: each line
/// with a `#` right before a key or a `[table]` loses it.
fn uncommented(text: &str) -> (String, usize) {
    let mut count = 0;
    let lines: Vec<&str> = text
        .lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '[') => {
                count += 1;
                rest
            }
            _ => line,
        })
        .collect();
    (lines.join("\n"), count)
}

#[test]
fn init_writes_a_commented_config_that_loads_and_says_what_to_do_next() {
    let e = Env::new();
    let out = e.stdout(&["init"]);
    let file = config(&e);
    assert!(out.contains(&format!("wrote {}", file.display())), "{out}");
    assert!(
        out.contains("wield providers check") && out.contains("wield run"),
        "{out}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("#[providers.local]"), "{text}");
    // Nothing is set until the user says so: the providers are examples.
    e.stdout(&["tools", "list"]);
    let providers = e.stdout(&["providers", "list"]);
    assert!(providers.contains("No model provider is configured"), "{providers}");
    // Elsewhere, with -C: the next steps name the workspace.
    let other = e.base.join("other");
    std::fs::create_dir(&other).unwrap();
    let out = e.stdout(&["-C", other.to_str().unwrap(), "init"]);
    assert!(other.join(".wield/config.toml").is_file());
    assert!(out.contains("wield -C ") && out.contains(" providers check"), "{out}");
}

/// Every key in the file, even commented out, is one wield knows: with
/// every setting uncommented, the configuration loads without an unknown
/// key and holds both example providers.
#[test]
fn every_setting_init_writes_is_a_real_key() {
    let e = Env::new();
    e.stdout(&["init"]);
    let (text, count) = uncommented(&std::fs::read_to_string(config(&e)).unwrap());
    assert!(count >= 15, "only {count} settings uncommented:\n{text}");
    for setting in [
        "[providers.local]",
        "kind = \"openai-compatible\"",
        "base_url = \"http://127.0.0.1:8080/v1\"",
        "api_key_env = ",
        "[approval]",
        "[bash]",
        "timeout = ",
        "[sandbox]",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(setting)),
            "no `{setting}` in:\n{text}"
        );
    }
    std::fs::write(config(&e), &text).unwrap();
    e.stdout(&["tools", "list"]);
    let providers = e.stdout(&["providers", "list"]);
    assert!(providers.contains("local (default)  openai-compatible"), "{providers}");
    assert!(providers.contains("claude  anthropic"), "{providers}");
    let sandbox = e.stdout(&["sandbox", "check", "--json"]);
    assert!(sandbox.contains("auto"), "{sandbox}");
}

#[test]
fn init_leaves_an_existing_config_alone_unless_forced() {
    let e = Env::new();
    std::fs::create_dir(e.ws(".wield")).unwrap();
    std::fs::write(config(&e), "# mine\n").unwrap();
    let out = e.wield().arg("init").assert().code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(
        stderr.contains("already exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(config(&e)).unwrap(), "# mine\n");
    e.stdout(&["init", "--force"]);
    assert!(
        std::fs::read_to_string(config(&e))
            .unwrap()
            .contains("#[providers.local]")
    );
    // Replaced by a rename: nothing but the file and the ignore list is
    // left in `.wield/`.
    let mut names: Vec<String> = std::fs::read_dir(e.ws(".wield"))
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".gitignore", "config.toml"]);
}

/// After `wield init` in a repository, what wield keeps directly in
/// `.wield/` for itself (the prompt history) never shows in `git status`;
/// the configuration does, to be committed.
#[test]
fn init_keeps_wields_state_out_of_git_status() {
    let e = Env::new();
    git(&e.ws(""), &["init", "-q"]);
    e.stdout(&["init"]);
    std::fs::write(e.ws(".wield/history"), "a task\n").unwrap();
    let status = git(&e.ws(""), &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status, "?? .wield/config.toml\n");
}
