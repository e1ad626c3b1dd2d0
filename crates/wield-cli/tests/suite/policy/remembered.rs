//! `wield approvals list|add|remove`: what each prints, its exit codes, the
//! files it writes in the project and in the global configuration
//! directory the environment names, and that `wield call` reads the same
//! files. How remembered approvals decide calls, the patterns an approval
//! derives and concurrent writers are wield-runtime's `policy` suite.

use predicates::prelude::*;

use super::support::Env;

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
