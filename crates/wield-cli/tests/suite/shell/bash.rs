//! The bash tool through `wield call` where only the binary shows it: the
//! plain output mode, the environment wield itself was started with, the
//! exit status and stderr of a configuration error. wield-tools' `shell`
//! suite tests the tool's behaviour in-process.

use serde_json::json;

use super::support::{Ws, output};

#[test]
fn plain_output_mode_prints_the_output_and_exits_1_on_failure() {
    let ws = Ws::new();
    let out = ws
        .wield()
        .args(["-y", "--set", "sandbox.enabled=false", "call", "bash"])
        .arg(json!({"command": "echo hello; exit 2"}).to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\nexit code: 2\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: exit code: 2"));
}

/// The variables of wield's own environment, secrets among them: a test
/// cannot give its own process these.
#[test]
fn environment_is_scrubbed() {
    let ws = Ws::new();
    let run = |extra: &[&str]| {
        let mut cmd = ws.wield();
        cmd.env("FOO_TOKEN", "hunter2")
            .env("MY_API_KEY", "k")
            .env("PLAIN_VAR", "visible-if-all")
            .args(["-y", "--set", "sandbox.enabled=false"])
            .args(extra)
            .args(["call", "bash", &json!({"command": "env"}).to_string(), "--json"]);
        let (_, v) = super::support::call_json(cmd);
        output(&v).to_owned()
    };
    let core = run(&[]);
    assert!(core.contains("PATH="), "{core}");
    assert!(core.contains(&format!("HOME={}", ws.home.display())), "{core}");
    for hidden in ["FOO_TOKEN", "MY_API_KEY", "PLAIN_VAR", "hunter2"] {
        assert!(!core.contains(hidden), "{hidden} leaked: {core}");
    }
    let all = run(&["--set", "bash.env.inherit=\"all\""]);
    assert!(all.contains("PLAIN_VAR=visible-if-all"), "{all}");
    assert!(!all.contains("hunter2"), "{all}");
    let kept = run(&[
        "--set",
        "bash.env.keep=[\"FOO_TOKEN\"]",
        "--set",
        "bash.env.set.EXTRA=\"x1\"",
    ]);
    assert!(kept.contains("FOO_TOKEN=hunter2"), "{kept}");
    assert!(kept.contains("EXTRA=x1"), "{kept}");
}

/// A broken template is a configuration error: exit 2, naming the key.
#[test]
fn a_broken_rewrite_template_exits_2_naming_the_key() {
    let ws = Ws::new();
    let out = ws
        .wield()
        .args([
            "--set",
            "bash.rewrite=\"{{ command\"",
            "call",
            "bash",
            "{\"command\":\"true\"}",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash.rewrite"));
}
