//! Approval rules an attacker's command or path must not fool: shell syntax, wrappers, symlinked paths.
//!
//! Every command here runs with the sandbox off, so nothing but the
//! approval rules stands between the model and the machine.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{Ws, output};

/// `wield --set sandbox.enabled=false --set approval.KEY=LIST [extra] call TOOL ARGS`.
fn call_with(ws: &Ws, rules: &[(&str, &[&str])], extra: &[&str], tool: &str, args: &Value) -> (i32, Value) {
    let mut pre: Vec<String> = vec!["--set".into(), "sandbox.enabled=false".into()];
    for (key, list) in rules {
        pre.push("--set".into());
        pre.push(format!("approval.{key}={}", json!(list)));
    }
    pre.extend(extra.iter().map(|s| (*s).to_owned()));
    let pre: Vec<&str> = pre.iter().map(String::as_str).collect();
    ws.call(&pre, tool, args)
}

fn error_of(v: &Value) -> String {
    v["error"].as_str().unwrap_or_default().to_owned()
}

const LS_AND_STATUS: &[&str] = &["bash:ls *", "bash:git status*"];

/// Commands an `ls *` / `git status*` rule matched as text although bash
/// runs a second command (`touch PWNED`) inside or after them.
#[test]
fn approve_patterns_do_not_approve_commands_hidden_in_shell_syntax() {
    let ws = Ws::new();
    let attacks = [
        "ls ${x:- #} ; touch PWNED",
        r#"ls "${x#'"'}" ; touch PWNED"#,
        "git status ${x:='$(touch PWNED)'}${x@P}",
        "ls ${x:='a[$(touch PWNED)]'} $[x]",
        "ls $(touch PWNED)",
        "ls `touch PWNED`",
        "ls <(touch PWNED)",
        "ls $((x[$(touch PWNED)]))",
        "ls \"$(touch PWNED)\"",
        "ls ; touch PWNED",
        "ls && touch PWNED",
        "ls | touch PWNED",
        "ls\ntouch PWNED",
        r"ls \ #; touch PWNED",
        "ls #'\ntouch PWNED",
        "ls $'\\'' ; touch PWNED",
        "ls > PWNED",
        "PAGER='touch PWNED' git status",
        "ls -la; f() { :; }; touch PWNED",
        "ls <<EOF\n$(touch PWNED)\nEOF",
        "ls >(touch PWNED)",
    ];
    let mut ran = Vec::new();
    for attack in attacks {
        let pwned = ws.ws.join("PWNED");
        let (code, v) = call_with(
            &ws,
            &[("auto_approve", LS_AND_STATUS)],
            &[],
            "bash",
            &json!({"command": attack}),
        );
        let refused = code == 1 && error_of(&v).contains("approval required");
        if !refused || pwned.exists() {
            ran.push(format!("{attack:?}: exit {code}, ran CMD: {}, {v}", pwned.exists()));
        }
        let _ = std::fs::remove_file(&pwned);
    }
    assert!(ran.is_empty(), "approved without asking:\n{}", ran.join("\n"));
}

/// What the rules are for still works: plain `ls` and `git status` calls,
/// quoted words and an fd redirection included, are approved.
#[test]
fn approve_patterns_still_approve_plain_commands() {
    let ws = Ws::new();
    std::fs::write(ws.ws.join("a b"), "").unwrap();
    for cmd in [
        "ls -la src",
        "ls 'a b'",
        "ls \"a b\" 2>&1",
        "ls src >/dev/null",
        "git status --short",
    ] {
        let (code, v) = call_with(
            &ws,
            &[("auto_approve", LS_AND_STATUS)],
            &[],
            "bash",
            &json!({"command": cmd}),
        );
        assert!(
            !error_of(&v).contains("approval required"),
            "{cmd:?} needed approval: exit {code}, {v}"
        );
    }
}

/// Ways of running `rm` that a `deny = ["bash:rm *"]` rule must catch: a
/// path, quotes, escapes, wrappers, nested shells, substitutions in the
/// command name, `find -exec`.
#[test]
fn deny_rule_on_rm_catches_its_rewrites() {
    let ws = Ws::new();
    let rewrites = [
        "rm victim",
        "/bin/rm victim",
        "/usr/bin/rm victim",
        "/usr/bin/../bin/rm victim",
        "\"rm\" victim",
        "'rm' victim",
        r"r\m victim",
        r"\rm victim",
        "r\"\"m victim",
        "\"/bin/rm\" victim",
        "env rm victim",
        "env -i PATH=/usr/bin:/bin rm victim",
        "env -- FOO=1 rm victim",
        "command rm victim",
        "command -p rm victim",
        "exec rm victim",
        "nice -n 5 rm victim",
        "nohup rm victim",
        "timeout -s KILL 5 rm victim",
        "stdbuf -o0 rm victim",
        "setsid -w rm victim",
        "time rm victim",
        "echo victim | xargs rm",
        "echo victim | xargs -I{} rm {}",
        "bash -c 'rm victim'",
        "sh -c \"rm victim\"",
        "bash -ec 'cd . && rm victim'",
        "eval rm victim",
        "eval 'rm victim'",
        "x=rm; $x victim",
        "r=r; ${r}m victim",
        "$(echo rm) victim",
        "`echo rm` victim",
        "$'\\x72\\x6d' victim",
        "/usr/bin/r[m] victim",
        "find . -name victim -exec rm {} \\;",
        "find . -name victim -execdir /bin/rm {} +",
        "true && rm victim",
        "(rm victim)",
        "{ rm victim; }",
        "if true; then rm victim; fi",
        "f() { rm victim; }; f",
        "echo 'rm victim' | bash",
        "bash <<< 'rm victim'",
        "cat <(rm victim)",
        "echo \"$(rm victim)\"",
    ];
    let mut passed = Vec::new();
    for cmd in rewrites {
        let victim = ws.ws.join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        let (code, v) = call_with(
            &ws,
            &[("deny", &["bash:rm *"])],
            &["-y"],
            "bash",
            &json!({"command": cmd}),
        );
        let denied = code == 1 && error_of(&v).contains("denied by policy");
        if !denied || !victim.exists() {
            passed.push(format!(
                "{cmd:?}: exit {code}, victim removed: {}, {}",
                !victim.exists(),
                error_of(&v)
            ));
        }
    }
    assert!(
        passed.is_empty(),
        "{} of {} rewrites of rm got past the deny rule:\n{}",
        passed.len(),
        rewrites.len(),
        passed.join("\n")
    );
}

/// A command the parser cannot account for (a syntax error) counts as
/// matching every deny rule of its tool; one that matches none still runs.
#[test]
fn deny_rules_refuse_what_cannot_be_analysed_and_nothing_else() {
    let ws = Ws::new();
    let deny: &[&str] = &["bash:rm *"];
    let (code, v) = call_with(
        &ws,
        &[("deny", deny)],
        &["-y"],
        "bash",
        &json!({"command": "echo 'unclosed"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(error_of(&v).contains("denied by policy"), "{v}");
    let (code, v) = call_with(
        &ws,
        &[("deny", deny)],
        &["-y"],
        "bash",
        &json!({"command": "echo \"$HOME\" | tr a-z A-Z && ls -la"}),
    );
    assert_eq!(code, 0, "{v}");
}

#[allow(clippy::unwrap_used)]
fn link(target: &str, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// `write:src/*` approved `src/up/README.md` where `src/up -> ..`: the
/// file written is the workspace's own README, outside `src`.
#[test]
fn path_approve_rule_does_not_follow_a_symlink_out_of_its_directory() {
    let ws = Ws::new();
    link("..", &ws.ws.join("src/up"));
    let rules: &[(&str, &[&str])] = &[("auto_approve", &["write:src/*"])];
    let (code, v) = call_with(
        &ws,
        rules,
        &[],
        "write",
        &json!({"path": "src/up/README.md", "content": "planted\n"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(error_of(&v).contains("approval required"), "{v}");
    assert!(!ws.ws.join("README.md").exists(), "the write ran");
    // Inside `src`, the rule still approves.
    let (code, v) = call_with(
        &ws,
        rules,
        &[],
        "write",
        &json!({"path": "src/a.txt", "content": "ok\n"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(std::fs::read_to_string(ws.ws.join("src/a.txt")).unwrap(), "ok\n");
}

/// `deny = ["write:.github/*"]` was bypassed through `docs/gh -> ../.github`.
#[test]
fn path_deny_rule_matches_the_symlink_target() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.ws.join(".github")).unwrap();
    link("../.github", &ws.ws.join("docs/gh"));
    let rules: &[(&str, &[&str])] = &[("deny", &["write:.github/*"])];
    let (code, v) = call_with(
        &ws,
        rules,
        &["-y"],
        "write",
        &json!({"path": "docs/gh/settings.yml", "content": "planted\n"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(error_of(&v).contains("denied by policy"), "{v}");
    assert!(
        !ws.ws.join(".github/settings.yml").exists(),
        "the write ran: {}",
        output(&v)
    );
    // The lexical path is still matched too.
    let (code, v) = call_with(
        &ws,
        rules,
        &["-y"],
        "write",
        &json!({"path": ".github/settings.yml", "content": "planted\n"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(!ws.ws.join(".github/settings.yml").exists());
    // The same for the other file tools, and a link as the last component.
    std::fs::write(ws.ws.join(".github/ci.yml"), "on: push\n").unwrap();
    link("../.github/ci.yml", &ws.ws.join("docs/ci.yml"));
    let deny: &[&str] = &["edit:.github/*", "mkdir:.github/*"];
    let (code, v) = call_with(
        &ws,
        &[("deny", deny)],
        &["-y"],
        "edit",
        &json!({"path": "docs/ci.yml", "old_text": "push", "new_text": "pull_request"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(error_of(&v).contains("denied by policy"), "{v}");
    assert_eq!(
        std::fs::read_to_string(ws.ws.join(".github/ci.yml")).unwrap(),
        "on: push\n"
    );
    let (code, v) = call_with(
        &ws,
        &[("deny", deny)],
        &["-y"],
        "mkdir",
        &json!({"path": "docs/gh/workflows"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(!ws.ws.join(".github/workflows").exists());
}

/// "Allow for this project" on a line no pattern can approve remembers
/// nothing (a derived `bash:ls*` would approve far more than the person
/// saw); on a plain command it remembers the usual pattern.
#[test]
fn remembering_a_command_with_expansions_stores_no_pattern() {
    let ws = Ws::new();
    let approvals = ws.ws.join(".wield/approvals.toml");
    let project = |cmd: &str| {
        let out = ws
            .wield()
            .env("WIELD_TEST_APPROVER", "project")
            .args(["--set", "sandbox.enabled=false", "--set", "approval.auto_approve=[]"])
            .args(["call", "--json", "bash", &json!({ "command": cmd }).to_string()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = project("ls $(echo src)");
    assert!(stderr.contains("asks every time"), "{stderr}");
    let stored = std::fs::read_to_string(&approvals).unwrap_or_default();
    assert!(!stored.contains("bash:"), "remembered: {stored}");
    // The next call with the same first word still asks.
    let (code, v) = call_with(&ws, &[], &[], "bash", &json!({"command": "ls -la"}));
    assert_eq!(code, 1, "{v}");
    assert!(error_of(&v).contains("approval required"), "{v}");
    project("ls -la src");
    let stored = std::fs::read_to_string(&approvals).unwrap_or_default();
    assert!(stored.contains("bash:ls*"), "remembered: {stored}");
}
