//! `wield patch apply` and `wield call patch` through the real binary: the
//! same output from the command and the tool, a patch file named from the
//! current directory, and a patch applied as another user (a read-only
//! file). What the patch tool does with every operation and refusal is
//! wield-tools' suite (`crates/wield-tools/tests/patch.rs`).
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::fs;

use serde_json::{Value, json};

use crate::common::Env;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Env {
    fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.ws(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// `wield patch apply -` with the patch on stdin.
    fn apply(&self, patch: &str) -> Run {
        let out = self
            .wield()
            .args(["patch", "apply", "-"])
            .write_stdin(patch.to_owned())
            .output()
            .unwrap();
        Run {
            code: out.status.code().unwrap(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn applied(&self, patch: &str) -> String {
        let r = self.apply(patch);
        assert_eq!(r.code, 0, "patch failed: {}\n{}", r.stderr, patch);
        r.stdout
    }
}

#[test]
fn the_tool_and_the_command_give_the_same_output() {
    let env = Env::new();
    env.put("a.txt", "a\n");
    let out = env
        .wield()
        .args(["call", "--json", "patch"])
        .arg(json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** End Patch"}).to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["output"], "Success. Updated the following files:\nM a.txt\n");
    assert_eq!(v["metadata"]["files"], json!(["M a.txt"]));
    let out = env.applied("*** Begin Patch\n*** Update File: a.txt\n-b\n+c\n*** End Patch");
    assert_eq!(out, "Success. Updated the following files:\nM a.txt\n");
    // A patch file named from the current directory.
    fs::write(
        env.ws("fix.patch"),
        "*** Begin Patch\n*** Update File: a.txt\n-c\n+d\n*** End Patch\n",
    )
    .unwrap();
    env.wield().args(["patch", "apply", "fix.patch"]).assert().success();
    assert_eq!(env.get("a.txt"), "d\n");
}

#[test]
fn a_read_only_file_is_not_replaced_but_may_be_deleted() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.put("readonly.txt", "before\n");
    env.put("other.txt", "other\n");
    // The parent directory is the user's (a rename there would succeed).
    fs::set_permissions(env.ws("readonly.txt"), fs::Permissions::from_mode(0o444)).unwrap();
    for patch in [
        "*** Begin Patch\n*** Update File: other.txt\n-other\n+OTHER\n*** Update File: readonly.txt\n@@\n-before\n+after\n*** End Patch",
        "*** Begin Patch\n*** Add File: readonly.txt\n+after\n*** End Patch",
        "*** Begin Patch\n*** Update File: other.txt\n*** Move to: readonly.txt\n-other\n+OTHER\n*** End Patch",
    ] {
        let r = apply_as_nobody(&env, patch);
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("readonly.txt is read-only (mode 0444"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("No files were modified"), "{}", r.stderr);
        assert_eq!(env.get("readonly.txt"), "before\n");
        assert_eq!(env.get("other.txt"), "other\n");
    }
    // The write and edit tools replace files the same way, and refuse too.
    for (tool, args) in [
        ("write", json!({ "path": "readonly.txt", "content": "after" })),
        (
            "edit",
            json!({ "path": "readonly.txt", "old_text": "before", "new_text": "after" }),
        ),
    ] {
        let r = as_nobody(&env, &["call", tool, &args.to_string(), "--json"]);
        assert!(
            r.stdout.contains("readonly.txt is read-only"),
            "{tool}: {}{}",
            r.stdout,
            r.stderr
        );
        assert_eq!(env.get("readonly.txt"), "before\n");
    }
    let mode = fs::metadata(env.ws("readonly.txt")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o444);
    // Deleting stays allowed, as rm allows it.
    let r = apply_as_nobody(&env, "*** Begin Patch\n*** Delete File: readonly.txt\n*** End Patch");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!env.ws("readonly.txt").exists());
}

/// `wield ARGS` as the unprivileged user `nobody`, who is given the whole
/// temp tree first (root may write any file, so a permission test needs
/// another user).
fn as_nobody(env: &Env, args: &[&str]) -> Run {
    assert!(
        rustix::process::geteuid().is_root(),
        "this test runs wield as another user, which needs root"
    );
    for (what, args) in [("chown", ["-R", "65534:65534"]), ("chmod", ["-R", "go+rX"])] {
        let st = std::process::Command::new(what)
            .args(args)
            .arg(&env.base)
            .status()
            .unwrap();
        assert!(st.success(), "{what} {args:?} failed");
    }
    let out = env.wield_env().command_as_nobody().args(args).output().unwrap();
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `wield patch apply` as `nobody`.
fn apply_as_nobody(env: &Env, patch: &str) -> Run {
    let patch_file = env.base.join("p.patch");
    fs::write(&patch_file, patch).unwrap();
    as_nobody(env, &["patch", "apply", patch_file.to_str().unwrap()])
}
