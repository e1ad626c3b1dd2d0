//! Remembered approvals: `wield approvals`, the files, derived patterns and
//! concurrent writers.

use std::collections::BTreeSet;
use std::time::Instant;

use predicates::prelude::*;

use super::support::{Env, error_of};

const STRICT: &str = "[approval]\nauto_approve = []\n";

#[test]
fn add_list_remove_and_their_effect() {
    let e = Env::with_config(STRICT);
    let calc = r#"{"expression":"1+1"}"#;
    assert_eq!(e.call(&[], "calculator", calc).0, 1);
    e.wield()
        .args(["approvals", "list"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("no remembered approvals"));
    e.wield()
        .args(["approvals", "add", "calculator"])
        .assert()
        .success()
        .stdout(predicate::str::contains("remembered `calculator` (project)"));
    e.wield()
        .args(["approvals", "add", "calculator"])
        .assert()
        .success()
        .stdout(predicate::str::contains("already remembered"));
    assert_eq!(e.call(&[], "calculator", calc).0, 0);
    e.wield()
        .args(["approvals", "add", "debug_echo:git *", "--scope", "global"])
        .assert()
        .success();
    assert!(e.global_approvals().contains("\"debug_echo:git *\""));
    assert_eq!(e.call(&[], "debug_echo", r#"{"command":"git log"}"#).0, 0);
    e.wield()
        .args(["approvals", "list"])
        .assert()
        .success()
        .stdout("project  calculator\nglobal   debug_echo:git *\n");
    let json = e.wield().args(["approvals", "list", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["global"]["auto"], serde_json::json!(["debug_echo:git *"]));
    e.wield().args(["approvals", "remove", "calculator"]).assert().success();
    assert_eq!(e.call(&[], "calculator", calc).0, 1);
    e.wield()
        .args(["approvals", "remove", "calculator"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is not a remembered approval"));
    e.wield()
        .args(["approvals", "add", "x", "--scope", "team"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--scope must be `project` or `global`"));
    e.wield().args(["approvals", "add", " "]).assert().code(2);
    // A broken file is reported, not overwritten.
    std::fs::write(e.ws.path().join(".wield/approvals.toml"), "auto = [").unwrap();
    e.wield()
        .args(["approvals", "add", "y"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("approvals.toml is not valid TOML"));
    assert_eq!(
        std::fs::read_to_string(e.ws.path().join(".wield/approvals.toml")).unwrap(),
        "auto = ["
    );
}

#[test]
fn approving_for_the_project_or_everywhere_stores_the_derived_pattern() {
    // The temp dir is a root only when configured: a path outside the
    // workspace that the path check lets through.
    let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    let e = Env::with_config(&format!(
        "{STRICT}\n[sandbox]\nwrite = [{:?}]\n",
        tmp.display().to_string()
    ));
    let echo = |approver: Option<&str>, args: &str| {
        let mut c = e.wield();
        if let Some(a) = approver {
            c.env("WIELD_TEST_APPROVER", a);
        }
        let out = c.args(["call", "--json", "debug_echo", args]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code().unwrap(), v)
    };
    assert_eq!(echo(Some("project"), r#"{"command":"cargo test -p x"}"#).0, 0);
    assert_eq!(echo(Some("project"), r#"{"command":"ls -la"}"#).0, 0);
    assert_eq!(echo(Some("project"), r#"{"path":"src/a/b.rs"}"#).0, 0);
    let project = e.project_approvals();
    assert!(
        project.contains(
            "auto = [\n    \"debug_echo:cargo test*\",\n    \"debug_echo:ls*\",\n    \"debug_echo:src/a/*\",\n]"
        ),
        "{project}"
    );
    // Remembered patterns approve later calls in new processes, with no one to ask.
    assert_eq!(echo(None, r#"{"command":"cargo test --all"}"#).0, 0);
    assert_eq!(echo(None, r#"{"path":"src/a/deeper/c.rs"}"#).0, 0);
    assert_eq!(echo(None, r#"{"path":"src/other.rs"}"#).0, 1);
    let (code, r) = echo(None, r#"{"command":"cargo publish"}"#);
    assert_eq!(code, 1);
    assert!(
        error_of(&r).contains("wield approvals add 'debug_echo:cargo publish*'"),
        "{r}"
    );
    // Everywhere: the global file. A top-level file derives `./*`, a path
    // outside the workspace its absolute directory, no argument the bare name.
    assert_eq!(echo(Some("global"), r#"{"path":"top.txt"}"#).0, 0);
    let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    let tmp = tmp.display();
    assert_eq!(echo(Some("global"), &format!(r#"{{"path":"{tmp}/x.log"}}"#)).0, 0);
    assert_eq!(echo(Some("global"), "{}").0, 0);
    let global = e.global_approvals();
    assert!(
        global.contains(&format!(
            "auto = [\n    \"debug_echo\",\n    \"debug_echo:./*\",\n    \"debug_echo:{tmp}/*\",\n]"
        )),
        "{global}"
    );
    assert_eq!(echo(None, r#"{"path":"src/other.rs"}"#).0, 0);
}

#[test]
fn concurrent_adds_never_lose_a_rule() {
    const PROCESSES: usize = 8;
    const EACH: usize = 100;
    let e = Env::new();
    let started = Instant::now();
    std::thread::scope(|s| {
        for p in 0..PROCESSES {
            let e = &e;
            s.spawn(move || {
                for i in 0..EACH {
                    let scope = if i % 4 == 0 { "global" } else { "project" };
                    let out = e
                        .running(crate::wield_cmd::wield_bin())
                        .args(["approvals", "add", &format!("tool_{p}_{i}:arg*"), "--scope", scope])
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let mut all = BTreeSet::new();
    for text in [e.project_approvals(), e.global_approvals()] {
        let t: toml::Table = toml::from_str(&text).unwrap();
        for v in t["auto"].as_array().unwrap() {
            assert!(all.insert(v.as_str().unwrap().to_owned()), "duplicate {v}");
        }
    }
    assert_eq!(all.len(), PROCESSES * EACH);
    for p in 0..PROCESSES {
        for i in 0..EACH {
            assert!(all.contains(&format!("tool_{p}_{i}:arg*")));
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(e.ws.path().join(".wield"))
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    eprintln!("{} concurrent adds in {elapsed:?}", PROCESSES * EACH);
}
