//! Attacks found reviewing the fixes of the other modules: what still got
//! through them, each through the real binary.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::support::{Ws, output};
use crate::peer_cmd::peer_command;

/// A linked worktree made by hand, as a repository may ship it or a
/// sandboxed command may make it: `sub/.git` names `store`, whose
/// `commondir` names `common`. Git takes its config and hooks from
/// `common`, which holds no `HEAD`.
#[allow(clippy::unwrap_used)]
fn linked_worktree(ws: &Path) {
    for d in ["sub", "common/objects", "common/refs", "store"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("sub/.git"), "gitdir: ../store\n").unwrap();
    std::fs::write(ws.join("store/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(ws.join("store/commondir"), "../common\n").unwrap();
}

/// A file tool wrote the common directory's config (auto-approved by
/// default), and `git status` in `sub` ran its `core.fsmonitor` unconfined.
#[test]
fn file_tools_cannot_write_a_linked_worktrees_common_directory() {
    let ws = Ws::new();
    linked_worktree(&ws.ws);
    let pwned = ws.outside.join("pwned");
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch {}; false\"\n",
        pwned.display()
    );
    for (tool, args) in [
        ("write", json!({"path": "common/config", "content": config})),
        ("write", json!({"path": "store/config.worktree", "content": config})),
        ("mkdir", json!({"path": "common/hooks"})),
        (
            "patch",
            json!({"patch": "*** Begin Patch\n*** Add File: common/hooks/post-checkout\n+#!/bin/sh\n*** End Patch"}),
        ),
    ] {
        let (code, v) = ws.call(&[], tool, &args);
        assert_eq!(code, 1, "{tool} {args} must be refused: {v}");
        let err = v["error"].as_str().unwrap_or_default();
        assert!(err.contains("project state"), "{tool} {args}: {err}");
    }
    assert!(!ws.ws.join("common/config").exists());
    // Git agrees that this is a repository (so the refusal is not moot).
    let out = peer_command("git")
        .current_dir(ws.ws.join("sub"))
        .args(["rev-parse", "--git-common-dir"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", &ws.home)
        .output()
        .expect("git is needed for these tests (apt-get install git)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!pwned.exists());
}

/// A command that sets a program or a hook in a linked worktree's common
/// directory is reported like one that sets it in a `.git` directory.
#[test]
fn commands_setting_git_programs_in_a_common_directory_are_reported() {
    for (backend, ws) in super::each_backend() {
        // Under Landlock the workspace's top directory is not writable.
        let ws_dir = ws.ws.join("src");
        linked_worktree(&ws_dir);
        let (code, v) = ws.bash(
            backend,
            "cd src && printf '[core]\\n\\tfsmonitor = id\\n' > common/config && mkdir -p common/hooks && \
             printf '#!/bin/sh\\nid\\n' > common/hooks/post-checkout && chmod +x common/hooks/post-checkout && \
             printf '[alias]\\n\\tst = !id\\n' > store/config.worktree && echo done",
        );
        assert_eq!(code, 0, "{backend}: {v}");
        let out = output(&v);
        for what in ["core.fsmonitor = \"id\"", "hook post-checkout", "alias.st = \"!id\""] {
            assert!(out.contains(what), "{backend}: {what} not reported: {out}");
        }
        let changes: &Value = &v["metadata"]["git_changes"];
        assert_eq!(changes.as_array().map(Vec::len), Some(3), "{backend}: {v}");
    }
}

/// Lines that ran `rm` past `deny = ["bash:rm *"]` (with `--yes`, the
/// sandbox off): a line continuation inside the name, an option of `env`
/// holding the command, a startup script fed from input, and programs git
/// runs (from a setting, a pager variable, `rebase --exec`, `difftool
/// --extcmd`, `bisect run`), and wrappers the list missed (`setpriv`,
/// `prlimit`, `bwrap`, `setarch`, `capsh`, `perf`, `gdb`).
#[test]
fn deny_rules_see_rm_behind_continuations_env_options_and_git_programs() {
    let ws = Ws::new();
    let attacks = [
        "r\\\nm VICTIM",
        "env -S'rm VICTIM'",
        "env -vS'rm VICTIM'",
        "env --split-string='rm VICTIM'",
        "BASH_ENV=<(echo rm VICTIM) bash -c :",
        "env BASH_ENV=/dev/stdin bash -c : <<< 'rm VICTIM'",
        "git -c alias.x='!rm VICTIM' x",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm VICTIM' git x",
        "git init -q . && git commit -q --allow-empty -m x && GIT_PAGER='rm VICTIM' git -p log",
        "git init -q . && git commit -q --allow-empty -m x && git rebase -q --exec 'rm VICTIM' --root",
        "git init -q . && git commit -q --allow-empty -m x && git difftool -y --extcmd='rm VICTIM' HEAD",
        "git init -q . && git bisect start HEAD HEAD && git bisect run rm VICTIM",
        "setpriv rm VICTIM",
        "prlimit --nofile=100 rm VICTIM",
        "bwrap --bind / / rm VICTIM",
        "setarch x86_64 rm VICTIM",
        "capsh -- -c 'rm VICTIM'",
        "perf stat rm VICTIM",
        "gdb -batch -ex run --args rm VICTIM",
    ];
    let victim = ws.ws.join("VICTIM");
    let mut ran = Vec::new();
    for attack in attacks {
        std::fs::write(&victim, "x").unwrap();
        let (_, v) = ws.call(
            &[
                "--set",
                "sandbox.enabled=false",
                "--set",
                "approval.deny=[\"bash:rm *\"]",
                "-y",
            ],
            "bash",
            &json!({ "command": format!("export HOME=$PWD GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b; {attack}") }),
        );
        if !victim.exists() {
            ran.push(format!("{attack:?}: {v}"));
        }
    }
    assert!(ran.is_empty(), "deny rule bypassed by:\n{}", ran.join("\n"));
}

/// `wield mcp serve --http … --token-file FILE`, run to its end (killed
/// after 10 s): (exit status, stderr, whether it had to be killed).
#[allow(clippy::unwrap_used)]
fn serve_with_token_file(ws: &Ws, file: &Path) -> (Option<i32>, String, bool) {
    let mut child = ws
        .wield()
        .args(["mcp", "serve", "--http", "127.0.0.1:0", "--token-file"])
        .arg(file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(10) {
            child.kill().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        killed,
    )
}

/// A FIFO as the token file hung the server before it served (and SIGTERM
/// could not stop it); a file another user owns (and so may change) was
/// taken as the token.
#[test]
fn a_token_file_is_a_regular_file_of_the_servers_user() {
    let ws = Ws::new();
    let fifo = ws.home.join("fifo");
    let made = Command::new("mkfifo").args(["-m", "600"]).arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    let (code, err, killed) = serve_with_token_file(&ws, &fifo);
    assert!(!killed, "the server hung on a FIFO token file: {err}");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");

    assert!(
        rustix::process::geteuid().is_root(),
        "this test gives a file to another user, which needs root"
    );
    let theirs = ws.home.join("theirs.token");
    std::fs::write(&theirs, "their-token\n").unwrap();
    std::fs::set_permissions(&theirs, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let (code, err, killed) = serve_with_token_file(&ws, &theirs);
    assert!(!killed, "a token file of another user was taken: {err}");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("belongs to another user"), "{err}");
}

/// Credentials under unremarkable names that `bash.env.inherit = "all"`
/// let through: connection strings with a password setting, a signed URL,
/// a private key, a token shape the filter did not know.
#[test]
fn credentials_in_connection_strings_and_keys_are_scrubbed() {
    let ws = Ws::new();
    let secrets = [
        ("PG_CONN", "host=db user=app password=hunter2 dbname=x"),
        ("JDBC", "jdbc:postgresql://db/x?user=app&password=hunter2"),
        ("MSSQL", "Server=tcp:x;Database=y;User Id=u;Pwd=hunter2;"),
        ("AZ_STORE", "AccountName=a;AccountKey=hunter2;EndpointSuffix=x"),
        ("BLOB", "https://x.blob.core.windows.net/c?sv=2020&sig=hunter2"),
        (
            "DEPLOY_CERT",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nhunter2\n-----END OPENSSH PRIVATE KEY-----",
        ),
        ("HF", "hf_hunter2hunter2hunter2hunter2"),
    ];
    let mut cmd = ws.wield();
    for (name, value) in secrets {
        cmd.env(name, value);
    }
    cmd.env("PG_OPTS", "host=db sslmode=require");
    cmd.args([
        "--set",
        "bash.env.inherit=\"all\"",
        "--set",
        "sandbox.enabled=false",
        "-y",
        "call",
        "bash",
        &json!({"command": "env"}).to_string(),
        "--json",
    ]);
    let (code, v) = super::support::call_json(cmd);
    assert_eq!(code, 0, "{v}");
    let out = output(&v);
    assert!(!out.contains("hunter2"), "a credential reached the command:\n{out}");
    assert!(out.contains("PG_OPTS=host=db sslmode=require"), "{out}");
}

/// A name holding a Unicode line separator printed as two entries to many
/// readers, a direction override showed a name reordered, and a name
/// spelled like a quoted one could not be told from it: each is shown
/// quoted and escaped by ls and glob.
#[test]
fn listings_escape_unicode_separators_overrides_and_quotes() {
    let ws = Ws::new();
    for name in ["a\u{2028}secret.env", "b\u{202e}txt.exe", "\"c\\nd\""] {
        std::fs::write(ws.ws.join("src").join(name), "").unwrap();
    }
    for (tool, args) in [("ls", json!({"path": "src"})), ("glob", json!({"pattern": "src/*"}))] {
        let (code, v) = ws.call(&[], tool, &args);
        assert_eq!(code, 0, "{v}");
        let out = output(&v);
        for raw in ['\u{2028}', '\u{202e}'] {
            assert!(!out.contains(raw), "{tool}: {raw:?} shown raw: {out:?}");
        }
        for shown in [r#"a\u{2028}secret.env""#, r#"b\u{202e}txt.exe""#, r#"\"c\\nd\"""#] {
            assert!(out.contains(shown), "{tool}: {shown} not in {out:?}");
        }
    }
}

/// In a workspace with no `.git`, file tools (auto-approved by default)
/// wrote `config` naming a program, `HEAD`, `refs/` and `objects/` at its
/// top: the workspace became a git directory, which git finds from every
/// directory below, and the person's next `git status` ran the program.
#[test]
fn file_tools_cannot_make_a_directory_a_git_directory() {
    let ws = Ws::new();
    let pwned = ws.outside.join("pwned");
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch {}; false\"\n",
        pwned.display()
    );
    for dir in ["", "src/"] {
        let steps = [
            ("write", json!({"path": format!("{dir}config"), "content": config})),
            (
                "write",
                json!({"path": format!("{dir}HEAD"), "content": "ref: refs/heads/main\n"}),
            ),
            ("mkdir", json!({"path": format!("{dir}refs/heads")})),
            ("mkdir", json!({"path": format!("{dir}objects")})),
        ];
        let mut refused = None;
        for (tool, args) in steps {
            let (code, v) = ws.call(&[], tool, &args);
            if code != 0 {
                refused = Some(v);
                break;
            }
        }
        let v = refused.unwrap_or_else(|| panic!("{dir:?}: every step was allowed"));
        let err = v["error"].as_str().unwrap_or_default();
        assert!(err.contains("would become a git directory"), "{dir:?}: {err}");
    }
    let out = peer_command("git")
        .current_dir(ws.ws.join("src"))
        .args(["status"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", &ws.home)
        .output()
        .expect("git is needed for these tests (apt-get install git)");
    assert!(!out.status.success(), "git found a repository");
    assert!(!pwned.exists());
}

/// A command that makes a directory a git directory of another name (here
/// the workspace itself, under bubblewrap, where its top is writable) with
/// a program in its config is reported like one that sets it in `.git`.
#[test]
fn commands_making_a_bare_git_directory_are_reported() {
    let ws = Ws::new();
    super::support::require_backends(&ws);
    for (backend, dir) in [("bwrap", "."), ("landlock", "src"), ("off", "src/pkg")] {
        let (code, v) = ws.bash(
            backend,
            &format!(
                "mkdir -p {dir} && cd {dir} && mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD && \
                 printf '[core]\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = id-{backend}\\n' > config && echo done"
            ),
        );
        assert_eq!(code, 0, "{backend}: {v}");
        let out = output(&v);
        assert!(
            out.contains(&format!("core.fsmonitor = \"id-{backend}\"")),
            "{backend}: not reported: {out}"
        );
    }
}

/// The workspace's repository runs its hooks from `.githooks`
/// (`core.hooksPath`): `patch` (auto-approved by default) rewrote an
/// executable hook there, which kept its mode and ran at the next commit.
#[test]
fn the_workspaces_hooks_path_always_asks() {
    let ws = Ws::new();
    let git = |args: &[&str]| {
        let out = peer_command("git")
            .current_dir(&ws.ws)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &ws.home)
            .output()
            .expect("git is needed for these tests (apt-get install git)");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["config", "core.hooksPath", ".githooks"]);
    let hook = ws.ws.join(".githooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let patch = "*** Begin Patch\n*** Update File: .githooks/pre-commit\n@@\n-exit 0\n+touch PWNED\n*** End Patch";
    for (tool, args) in [
        ("patch", json!({ "patch": patch })),
        (
            "write",
            json!({"path": ".githooks/post-commit", "content": "#!/bin/sh\n"}),
        ),
    ] {
        let (code, v) = ws.call(&[], tool, &args);
        assert_eq!(code, 1, "{tool}: {v}");
        let err = v["error"].as_str().unwrap_or_default();
        assert!(err.contains("approval required"), "{tool}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), "#!/bin/sh\nexit 0\n");
    // Other files still need no approval.
    let (code, v) = ws.call(&[], "write", &json!({"path": "src/a.rs", "content": "x"}));
    assert_eq!(code, 0, "{v}");
}

/// A sandboxed command (auto-approved) wrote `src/pkg/.wield/config.toml`
/// without a word: wield takes its hooks and settings (the sandbox off)
/// when the person later uses it in `src/pkg`. It is reported now, like a
/// git hook.
#[test]
fn commands_writing_a_nested_wield_config_are_reported() {
    for (backend, ws) in super::each_backend() {
        let (code, v) = ws.bash(
            backend,
            "mkdir -p src/pkg/.wield && printf '[sandbox]\\nenabled = false\\n' > src/pkg/.wield/config.toml && echo done",
        );
        assert_eq!(code, 0, "{backend}: {v}");
        let out = output(&v);
        assert!(
            out.contains("[git] src/pkg/.wield/config.toml: a wield config was created or changed"),
            "{backend}: not reported: {out}"
        );
        // Nothing new: nothing reported.
        let (_, v) = ws.bash(backend, "echo x > src/x.txt");
        assert!(!output(&v).contains("[git]"), "{backend}: {v}");
        // A `.wield` that is a link to a directory holding a config.
        let (code, v) = ws.bash(
            backend,
            "mkdir -p src/elsewhere && echo '[sandbox]' > src/elsewhere/config.toml && \
             mkdir -p src/q && ln -s ../elsewhere src/q/.wield && echo done",
        );
        assert_eq!(code, 0, "{backend}: {v}");
        assert!(
            output(&v).contains("[git] src/q/.wield/config.toml: a wield config"),
            "{backend}: not reported: {v}"
        );
    }
}

/// `.git` as a link to a repository outside the workspace (in the temp
/// dir, which commands may write): git follows it, and what a command set
/// there went unreported.
#[test]
fn a_git_link_to_a_repository_elsewhere_is_watched() {
    for (backend, ws) in super::each_backend() {
        let (code, v) = ws.bash(
            backend,
            "export HOME=$PWD; git init -q \"$TMPDIR/store\" && mkdir -p src/sub && \
             ln -s \"$TMPDIR/store/.git\" src/sub/.git && git -C src/sub config core.fsmonitor id && echo done",
        );
        assert_eq!(code, 0, "{backend}: {v}");
        assert!(
            output(&v).contains("[git] src/sub/.git: core.fsmonitor = \"id\""),
            "{backend}: not reported: {v}"
        );
    }
}
