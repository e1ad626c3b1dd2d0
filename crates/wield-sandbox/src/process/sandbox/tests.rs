use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::landlock_exec::write_grants;
use super::*;

fn bwrap_ok() -> Result<PathBuf, String> {
    Ok("/usr/bin/bwrap".into())
}

fn bwrap_missing() -> Result<PathBuf, String> {
    Err("not installed".into())
}

fn settings(enabled: Enabled, backend: BackendChoice) -> SandboxSettings {
    SandboxSettings {
        enabled,
        backend,
        ..SandboxSettings::for_workspace(Path::new("/nonexistent/ws"))
    }
}

fn backend_of(r: Result<Option<SandboxPlan>, SandboxError>) -> Result<Option<Backend>, String> {
    r.map(|p| p.map(|p| p.backend())).map_err(|e| e.to_string())
}

#[test]
fn auto_prefers_bwrap_then_landlock() {
    let s = settings(Enabled::Auto, BackendChoice::Auto);
    assert_eq!(
        backend_of(s.resolve_with(Some(7), true, &bwrap_ok)),
        Ok(Some(Backend::Bwrap))
    );
    assert_eq!(
        backend_of(s.resolve_with(Some(7), true, &bwrap_missing)),
        Ok(Some(Backend::Landlock))
    );
    assert_eq!(
        backend_of(s.resolve_with(Some(2), true, &bwrap_missing)),
        Ok(Some(Backend::Landlock))
    );
    // Landlock without seccomp cannot cut the network: not picked.
    assert_eq!(backend_of(s.resolve_with(Some(7), false, &bwrap_missing)), Ok(None));
    assert_eq!(backend_of(s.resolve_with(None, true, &bwrap_missing)), Ok(None));
}

#[test]
fn landlock_without_seccomp_needs_network_allowed() {
    let mut s = settings(Enabled::Yes, BackendChoice::Landlock);
    let err = backend_of(s.resolve_with(Some(7), false, &bwrap_ok)).unwrap_err();
    assert!(err.contains("seccomp"), "{err}");
    s.network = true;
    assert_eq!(
        backend_of(s.resolve_with(Some(7), false, &bwrap_ok)),
        Ok(Some(Backend::Landlock))
    );
}

#[test]
fn an_unavailable_backend_is_an_error_never_a_downgrade() {
    let s = settings(Enabled::Auto, BackendChoice::Bwrap);
    let err = backend_of(s.resolve_with(Some(7), true, &bwrap_missing)).unwrap_err();
    assert!(err.contains("`bwrap` is not available here: not installed"), "{err}");
    assert!(err.contains("wield sandbox check"), "{err}");
    let s = settings(Enabled::Yes, BackendChoice::Landlock);
    let err = backend_of(s.resolve_with(None, true, &bwrap_ok)).unwrap_err();
    assert!(err.contains("no Landlock support"), "{err}");
}

#[test]
fn enabled_true_without_any_backend_is_an_error() {
    let s = settings(Enabled::Yes, BackendChoice::Auto);
    let err = backend_of(s.resolve_with(None, true, &bwrap_missing)).unwrap_err();
    assert!(err.contains("no sandbox backend works here"), "{err}");
}

#[test]
fn off_and_none() {
    assert_eq!(
        backend_of(settings(Enabled::No, BackendChoice::Landlock).resolve_with(None, false, &bwrap_missing)),
        Ok(None)
    );
    assert_eq!(
        backend_of(settings(Enabled::Auto, BackendChoice::None).resolve_with(Some(7), true, &bwrap_ok)),
        Ok(None)
    );
    let err =
        backend_of(settings(Enabled::Yes, BackendChoice::None).resolve_with(Some(7), true, &bwrap_ok)).unwrap_err();
    assert!(err.contains("contradicts"), "{err}");
}

fn plan_for(ws: &Path, backend: BackendChoice) -> SandboxPlan {
    let s = SandboxSettings {
        enabled: Enabled::Yes,
        backend,
        write: vec![ws.to_path_buf()],
        ..SandboxSettings::for_workspace(ws)
    };
    s.resolve_with(Some(7), true, &bwrap_ok).unwrap().unwrap()
}

fn strings(v: &[OsString]) -> Vec<String> {
    v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
}

#[test]
fn bwrap_argv_binds_roots_and_protects_existing_paths() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(ws.join(".git")).unwrap();
    let plan = plan_for(&ws, BackendChoice::Bwrap).with_helper("/usr/bin/wield");
    let argv = strings(&plan.wrap(&["make".into(), "test".into()]).unwrap());
    let text = argv.join(" ");
    let w = ws.display();
    // A private /tmp, where only the directory holding the workspace shows.
    let top = if ws.starts_with("/tmp") {
        let top = ws.iter().take(3).collect::<std::path::PathBuf>();
        format!("--ro-bind-try {0} {0} ", top.display())
    } else {
        String::new()
    };
    assert!(
        text.starts_with("/usr/bin/bwrap --die-with-parent --new-session --cap-drop ALL --unshare-pid --unshare-net"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "--ro-bind / / --tmpfs /tmp {top}--dev /dev --proc /proc --tmpfs /run --bind"
        )),
        "{text}"
    );
    assert!(text.contains(&format!("--bind {w} {w}")), "{text}");
    assert!(text.contains(&format!("--ro-bind {w}/.git {w}/.git")), "{text}");
    // `.wield` does not exist yet: `prepare` creates it so it can be bound.
    assert!(!text.contains(".wield"), "{text}");
    // The command runs under its keeper, wield's helper, inside.
    assert!(
        text.ends_with("__sandbox-exec --keep 1000 --keep-only -- make test"),
        "{text}"
    );
    let _guard = plan.prepare().unwrap();
    let text = strings(&plan.wrap(&["true".into()]).unwrap()).join(" ");
    assert!(text.contains(&format!("--ro-bind {w}/.wield {w}/.wield")), "{text}");
}

#[test]
fn a_missing_git_directory_has_a_stand_in_while_runs_hold_it() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let git = ws.join(".git");
    let plan = plan_for(&ws, BackendChoice::Bwrap);
    let first = plan.prepare().unwrap();
    assert_eq!(first.stand_ins(), [git.as_path()]);
    assert!(git.is_dir());
    let text = strings(&plan.wrap(&["true".into()]).unwrap()).join(" ");
    let w = ws.display();
    assert!(text.contains(&format!("--ro-bind {w}/.git {w}/.git")), "{text}");
    // A second run (of this process or another: each holds its own lock)
    // holds the same one; it goes with the last.
    let second = plan.prepare().unwrap();
    assert_eq!(second.stand_ins(), [git.as_path()]);
    drop(first);
    assert!(git.is_dir(), "removed while a run still holds it");
    drop(second);
    assert!(!git.exists(), "the stand-in outlived its runs");
    // Removed behind a run's back and made again for another: the first
    // run's end does not take the second's.
    let old = plan.prepare().unwrap();
    std::fs::remove_dir_all(&git).unwrap();
    let new = plan.prepare().unwrap();
    drop(old);
    assert!(git.is_dir(), "a run's end removed another run's stand-in");
    drop(new);
    assert!(!git.exists());
    // Something put in it meanwhile stays.
    let guard = plan.prepare().unwrap();
    assert!(
        std::fs::read_dir(&ws).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".wield-stand-in")),
        "staging left behind"
    );
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    drop(guard);
    assert!(git.join("HEAD").exists());
    // An existing `.git` is not a stand-in.
    assert!(plan.prepare().unwrap().stand_ins().is_empty());
    std::fs::remove_dir_all(&git).unwrap();
    // Any other missing protected path gets one too while runs hold it (a
    // command could create it otherwise); it goes with them.
    let mut settings = SandboxSettings {
        enabled: Enabled::Yes,
        backend: BackendChoice::Bwrap,
        write: vec![ws.clone()],
        ..SandboxSettings::for_workspace(&ws)
    };
    settings.protected.push(ws.join(".env"));
    let plan = settings.resolve_with(Some(7), true, &bwrap_ok).unwrap().unwrap();
    let guard = plan.prepare().unwrap();
    assert_eq!(guard.stand_ins(), [git.as_path(), ws.join(".env").as_path()]);
    assert!(ws.join(".env").is_dir());
    drop(guard);
    assert!(!ws.join(".env").exists());
    // Nothing of the stand-ins' is left behind.
    let left: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".wield-stand-in"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A `.git` file (a linked worktree) is left alone, and runs go on.
    std::fs::write(&git, "gitdir: /elsewhere/.git/worktrees/x\n").unwrap();
    assert_eq!(plan.prepare().unwrap().stand_ins(), [ws.join(".env").as_path()]);
    assert_eq!(
        std::fs::read_to_string(&git).unwrap(),
        "gitdir: /elsewhere/.git/worktrees/x\n"
    );
    std::fs::remove_file(&git).unwrap();
    // A protected link to nothing refuses the run.
    std::os::unix::fs::symlink(ws.join("nowhere"), &git).unwrap();
    let e = plan.prepare().unwrap_err().to_string();
    assert!(e.contains("symbolic link to nothing"), "{e}");
}

#[test]
fn landlock_argv_reexecs_the_helper_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let plan = plan_for(&ws, BackendChoice::Landlock).with_helper("/opt/wield");
    let argv = plan.wrap(&["echo".into(), "--".into(), "hi".into()]).unwrap();
    assert_eq!(argv[0], "/opt/wield");
    assert_eq!(argv[1], SANDBOX_EXEC_SUBCOMMAND);
    let parsed = SandboxExecArgs::parse(argv[2..].iter().cloned()).unwrap();
    assert_eq!(parsed.write, vec![ws.clone()]);
    assert_eq!(parsed.protect, vec![ws.join(".wield"), ws.join(".git")]);
    assert!(!parsed.network);
    assert_eq!(parsed.read, None);
    assert_eq!(strings(&parsed.argv), ["echo", "--", "hi"]);
    // The command runs under its keeper, with the plan's grace period.
    assert_eq!(parsed.keep, Some(std::time::Duration::from_secs(1)));
    assert!(!parsed.keep_only && parsed.allow_unix.is_empty());
    assert!(plan.leader_reaps());
    let full = SandboxExecArgs {
        allow_unix: vec!["/run/a.sock".into()],
        hide: vec!["/run/user/1000/wield/tokens".into()],
        keep: Some(std::time::Duration::from_millis(250)),
        keep_only: true,
        argv: vec!["true".into()],
        ..SandboxExecArgs::default()
    };
    assert_eq!(SandboxExecArgs::parse(full.to_args()).unwrap(), full);
}

#[test]
fn helper_args_errors_say_what_to_do() {
    let err = SandboxExecArgs::parse(["--write".into()]).unwrap_err();
    assert!(err.contains("--write needs a path"), "{err}");
    let err = SandboxExecArgs::parse(["--bogus".into()]).unwrap_err();
    assert!(err.contains("usage"), "{err}");
    let err = SandboxExecArgs::parse(["--".into()]).unwrap_err();
    assert!(err.contains("no command"), "{err}");
    let err = SandboxExecArgs::parse(["--keep".into(), "soon".into()]).unwrap_err();
    assert!(err.contains("grace period in milliseconds"), "{err}");
}

#[test]
fn landlock_grants_skip_protected_paths_and_their_parents() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    for d in ["src", ".git", "nested/.git", "nested/lib"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("Makefile"), "").unwrap();
    std::os::unix::fs::symlink("/etc", ws.join("etc-link")).unwrap();
    let protect = vec![ws.join(".wield"), ws.join(".git"), ws.join("nested/.git")];
    let mut grants = write_grants(std::slice::from_ref(&ws), &protect);
    grants.sort();
    assert_eq!(grants, vec![ws.join("Makefile"), ws.join("nested/lib"), ws.join("src")]);
    // Without a protected path inside, the root itself is granted.
    let other = tempfile::tempdir().unwrap();
    let other = std::fs::canonicalize(other.path()).unwrap();
    assert_eq!(write_grants(std::slice::from_ref(&other), &protect), vec![other]);
}

#[test]
fn hints_name_the_refused_path() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    let plan = plan_for(&ws, BackendChoice::Bwrap);
    let outside = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside.path()).unwrap().join("x");
    let line = format!("touch: cannot touch '{}': Read-only file system\n", outside.display());
    let hints = denial_hints(&line, &ws, &plan);
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(
        hints[0].starts_with(&format!(
            "write denied by sandbox: {} is outside the write roots",
            outside.display()
        )),
        "{hints:?}"
    );
    // Regression: a path wield's user could not write anyway (a read of
    // another user's file fails with the same words) was blamed on the
    // sandbox as a denied write.
    let line = "cat: '/proc/self/no-such-entry/x': Permission denied";
    assert!(denial_hints(line, &ws, &plan).is_empty());
    let hints = denial_hints("bash: line 1: .wield/config.toml: Permission denied", &ws, &plan);
    assert!(hints[0].contains(".wield/config.toml is inside"), "{hints:?}");
    // A real permission problem inside the roots is not blamed on the sandbox.
    assert!(denial_hints("cat: 'src/x': Permission denied", &ws, &plan).is_empty());
    assert!(denial_hints("bash: src/x: Permission denied", &ws, &plan).is_empty());
    let hints = denial_hints("bash: connect: Network is unreachable", &ws, &plan);
    assert!(hints[0].starts_with("network access denied by sandbox"), "{hints:?}");
    let hints = denial_hints(
        "bash: socket: Permission denied\nbash: line 1: /dev/tcp/127.0.0.1/80: Permission denied\n",
        &ws,
        &plan,
    );
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(hints[0].starts_with("network access denied by sandbox"), "{hints:?}");
}

#[test]
fn landlock_hint_explains_top_level_creation() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let plan = plan_for(&ws, BackendChoice::Landlock);
    let hints = denial_hints("touch: cannot touch 'new.txt': Permission denied", &ws, &plan);
    assert!(hints[0].contains("directly in"), "{hints:?}");
    assert!(hints[0].contains("sandbox.backend = \"bwrap\""), "{hints:?}");
    std::fs::create_dir(ws.join("src")).unwrap();
    assert!(denial_hints("touch: cannot touch 'src/new.txt': Permission denied", &ws, &plan).is_empty());
}

/// The MCP server's token directories are hidden from commands by default,
/// and Landlock's read rules leave out a hidden directory while granting
/// what is beside it.
#[test]
fn token_directories_are_hidden_and_read_rules_go_around_them() {
    let s = SandboxSettings::for_workspace(Path::new("/nonexistent/ws"));
    assert_eq!(s.hidden, super::token_dirs());
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let tokens = base.join("state/wield/tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    std::fs::write(base.join("state/other.txt"), "x").unwrap();
    std::fs::write(base.join("beside.txt"), "x").unwrap();
    let hidden = super::existing_hidden(std::slice::from_ref(&tokens));
    let grants = super::landlock_exec::write_grants(std::slice::from_ref(&base), &hidden);
    assert!(!grants.iter().any(|g| tokens.starts_with(g)), "{grants:?}");
    assert!(grants.contains(&base.join("beside.txt")), "{grants:?}");
    assert!(grants.contains(&base.join("state/other.txt")), "{grants:?}");
}

#[test]
fn missing_hidden_directories_are_made_private_before_commands_run() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = tempfile::tempdir().unwrap();
    let tokens = home.path().join("state/wield/tokens");
    let s = SandboxSettings {
        hidden: vec![tokens.clone()],
        ..settings(Enabled::Yes, BackendChoice::Landlock)
    };
    let plan = s.resolve_with(Some(7), true, &bwrap_missing).unwrap().unwrap();
    assert!(tokens.is_dir());
    assert_eq!(std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777, 0o700);
    // So it is hidden from the first command on.
    assert_eq!(
        existing_hidden(plan.hidden()),
        vec![std::fs::canonicalize(&tokens).unwrap()]
    );
}
