//! The process sandbox where only the binary shows it: `wield sandbox
//! check`, a backend missing from wield's `PATH`, and the hidden helper
//! `wield __sandbox-exec`. wield-tools' `shell` suite tests what the
//! sandbox allows and refuses, in-process.

use super::support::{Ws, output, read, require_backends};

#[test]
fn check_reports_both_backends_and_what_auto_picks() {
    let ws = Ws::new();
    let v = require_backends(&ws);
    assert_eq!(v["seccomp"], true, "{v}");
    assert_eq!(v["subreaper"], true, "{v}");
    assert_eq!(v["auto"], "bwrap", "{v}");
    assert_eq!(v["configured"]["backend"], "bwrap", "{v}");
    let out = ws.wield().args(["sandbox", "check"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("landlock   available, ABI "), "{text}");
    assert!(text.contains("auto       bwrap"), "{text}");
    let out = ws
        .wield()
        .args(["--set", "sandbox.backend=\"landlock\"", "sandbox", "check"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("configured landlock"));
}

#[test]
fn an_unavailable_backend_is_a_clear_error() {
    let ws = Ws::new();
    // No bwrap on this PATH: asking for it must fail, not fall back.
    let mut cmd = ws.wield();
    cmd.env("PATH", "/nonexistent")
        .args([
            "-y",
            "--set",
            "sandbox.backend=\"bwrap\"",
            "--set",
            "bash.shell=\"/bin/bash\"",
        ])
        .args(["call", "bash", "{\"command\":\"echo ran\"}", "--json"]);
    let (code, v) = super::support::call_json(cmd);
    assert_eq!(code, 1, "{v}");
    let err = v["error"].as_str().unwrap();
    assert!(err.contains("sandbox backend `bwrap` is not available here"), "{err}");
    assert!(!output(&v).contains("ran"), "{v}");
    let out = ws
        .wield()
        .env("PATH", "/nonexistent")
        .args(["--set", "sandbox.backend=\"bwrap\"", "sandbox", "check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("configured error: sandbox backend `bwrap`"));
    let out = ws
        .wield()
        .args(["--set", "sandbox.backend=\"firejail\"", "sandbox", "check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"landlock\", \"bwrap\""));
}

#[test]
fn the_helper_refuses_bad_arguments_and_never_runs_unconfined() {
    let ws = Ws::new();
    let out = ws
        .wield()
        .args(["__sandbox-exec", "--bogus", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
    let out = ws
        .wield()
        .args(["__sandbox-exec", "--write"])
        .arg(&ws.ws)
        .args(["--", "sh", "-c", "echo inside > $0/x; echo outside > $1/x"])
        .arg(&ws.ws)
        .arg(&ws.outside)
        .output()
        .unwrap();
    assert_eq!(read(&ws.ws.join("x")), "inside\n");
    assert!(!ws.outside.join("x").exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
}
