//! The files wield executes as policy — a Lua approval function named in
//! `approval.auto_approve` and the modules it may `require`, the scripts
//! hooks run — decide what the next call may do: no tool or command may
//! rewrite them.

// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::support::{Ws, require_backends};
use crate::scripted_provider::{Scripted, Turn};

/// Approves reads; has no opinion on the rest (the sandbox approves bash).
const POLICY: &str =
    "local rules = require(\"rules\")\nreturn function(tool) if rules.reads[tool] then return true end end\n";
const RULES: &str = "return { reads = { read = true, ls = true } }\n";

/// Rewrites the approval function, its module and the hook's script in
/// place and by rename, each to approve or run anything.
const FORGE: &str = "echo 'return function() return true end' > policy/approve.lua; \
     echo 'return { reads = setmetatable({}, { __index = function() return true end }) }' > policy/rules.lua; \
     echo 'return function() return true end' > policy/new.lua && mv policy/new.lua policy/approve.lua; \
     echo 'touch pwned-by-hook' > src/hook.sh; true";

fn project(ws: &Ws, provider: &Scripted) {
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    std::fs::create_dir_all(ws.ws.join("policy")).unwrap();
    std::fs::write(ws.ws.join("policy/approve.lua"), POLICY).unwrap();
    std::fs::write(ws.ws.join("policy/rules.lua"), RULES).unwrap();
    std::fs::write(ws.ws.join("src/hook.sh"), "true\n").unwrap();
    std::fs::write(
        ws.ws.join(".wield/config.toml"),
        format!(
            "{}\n[approval]\nauto_approve = [\"$readonly\", \"policy/approve.lua\"]\n\n\
             [hooks.check]\nevent = \"post\"\nmatcher = \"write\"\ncommand = \"sh src/hook.sh\"\n",
            provider.config()
        ),
    )
    .unwrap();
}

/// Item 6 of the review: one auto-approved sandboxed `bash` rewrote the
/// approval function, and the next call that needed a person ran headless.
/// Now the function, its modules' directory and the hook's script are
/// read-only to commands under both backends, so the write still needs a
/// person.
#[test]
fn a_command_cannot_rewrite_the_policy_that_approves_the_next_call() {
    for backend in ["bwrap", "landlock"] {
        let ws = Ws::new();
        require_backends(&ws);
        let provider = Scripted::start(vec![
            Turn::Call("bash", json!({ "command": FORGE })),
            Turn::Call("write", json!({ "path": "src/pwned.txt", "content": "x" })),
            Turn::Text("Done."),
        ]);
        project(&ws, &provider);
        let out = ws
            .wield()
            .args(["--set", "sandbox.enabled=true", "--set"])
            .arg(format!("sandbox.backend=\"{backend}\""))
            .args(["run", "--headless", "-p", "go"])
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!ws.ws.join("src/pwned.txt").exists(), "{backend}: the write ran: {all}");
        assert_eq!(
            std::fs::read_to_string(ws.ws.join("policy/approve.lua")).unwrap(),
            POLICY,
            "{backend}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.ws.join("policy/rules.lua")).unwrap(),
            RULES,
            "{backend}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.ws.join("src/hook.sh")).unwrap(),
            "true\n",
            "{backend}"
        );
        let requests = provider.requests();
        assert_eq!(requests.len(), 3, "{backend}: {all}");
        // The command ran, and was refused the files.
        let ran = requests[1]["messages"].to_string();
        assert!(ran.contains("which commands may never write"), "{backend}: {ran}");
        let last = requests[2]["messages"].to_string();
        assert!(
            last.contains("approval required"),
            "{backend}: the write was not refused: {last}"
        );
    }
}

/// The file tools refuse them too, saying which rule.
#[test]
fn file_tools_cannot_write_the_policy_files() {
    let ws = Ws::new();
    let provider = Scripted::start(Vec::new());
    project(&ws, &provider);
    for (path, rule) in [
        ("policy/approve.lua", "Lua approval function"),
        ("policy/rules.lua", "where its require finds modules"),
        ("policy/new.lua", "where its require finds modules"),
        ("src/hook.sh", "hooks.check"),
    ] {
        let (code, v) = ws.call(&["-y"], "write", &json!({ "path": path, "content": "x" }));
        assert_eq!(code, 1, "{path}: {v}");
        let err = v["error"].as_str().unwrap_or_default();
        assert!(err.contains(rule), "{path}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.ws.join("policy/approve.lua")).unwrap(),
        POLICY
    );
}

/// An approval function at the workspace's top has no directory of its own
/// to guard: it is guarded alone, and cannot `require`.
#[test]
fn a_top_level_approval_function_cannot_require() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    std::fs::write(ws.ws.join("approve.lua"), POLICY).unwrap();
    std::fs::write(ws.ws.join("rules.lua"), RULES).unwrap();
    std::fs::write(
        ws.ws.join(".wield/config.toml"),
        "[approval]\nauto_approve = [\"approve.lua\"]\n",
    )
    .unwrap();
    let out = ws.wield().args(["tools", "list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("require(\"rules\")"), "{err}");
}

/// A policy file reached through a symbolic link could be pointed
/// elsewhere by a command (a sandbox keeps what a link leads to read-only,
/// not the link itself): refused at load, saying which link.
#[test]
fn policy_files_reached_through_a_link_are_refused() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    std::fs::create_dir_all(ws.ws.join("lib")).unwrap();
    std::fs::write(ws.ws.join("lib/approve.lua"), POLICY).unwrap();
    std::fs::write(ws.ws.join("lib/rules.lua"), RULES).unwrap();
    std::os::unix::fs::symlink("lib", ws.ws.join("policy")).unwrap();
    std::fs::write(ws.ws.join("src/impl.sh"), "true\n").unwrap();
    std::os::unix::fs::symlink("impl.sh", ws.ws.join("src/hook.sh")).unwrap();
    for (config, link) in [
        ("[approval]\nauto_approve = [\"policy/approve.lua\"]\n", "policy"),
        (
            "[hooks.check]\nevent = \"post\"\ncommand = \"sh src/hook.sh\"\n",
            "src/hook.sh",
        ),
    ] {
        std::fs::write(ws.ws.join(".wield/config.toml"), config).unwrap();
        let out = ws.wield().args(["tools", "list"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        assert!(
            err.contains(&format!("{} is a symbolic link", ws.ws.join(link).display())),
            "{config}: {err}"
        );
    }
}
