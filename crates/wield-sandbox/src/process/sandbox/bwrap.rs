//! The bubblewrap command line for a plan.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::SandboxPlan;

/// System directories that stay readable when read roots are configured, so
/// that the command's interpreter and libraries can load.
pub(crate) const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/run", "/sys",
];

pub(crate) fn argv(bwrap: &Path, helper: Option<&Path>, plan: &SandboxPlan, command: &[OsString]) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![bwrap.into()];
    let mut push = |items: &[&str]| a.extend(items.iter().map(OsString::from));
    // Run as root, a command would keep every capability, and could unmount
    // the read-only binds that protect `.wield` and `.git`.
    // A PID namespace: when bubblewrap dies (killed by wield's kill-tree,
    // or its command ends) its init dies, and the kernel kills every
    // process of the namespace, including one that keeps forking and
    // letting its parent exit. Pids a command prints are the namespace's.
    push(&[
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--unshare-pid",
    ]);
    if !plan.network {
        push(&["--unshare-net"]);
    }
    let mut args = a;
    let mut bind = |flag: &str, path: &Path| {
        args.push(flag.into());
        args.push(path.into());
        args.push(path.into());
    };
    // A private /tmp: the host's (other projects' files, executables kept
    // there, sockets) is hidden by an empty one, unless /tmp itself is a
    // configured root. The session's private temp dir, a write root, is
    // bound back below with the other write roots; so is the top directory
    // of /tmp holding the workspace, read-only, when there is one.
    let tmp = Path::new("/tmp");
    let configured = |roots: &[PathBuf]| roots.iter().any(|r| r == tmp);
    let hide_tmp = tmp.is_dir() && !configured(&plan.write) && !plan.read.as_deref().is_some_and(configured);
    let mut read_roots: Vec<&Path> = Vec::new();
    match &plan.read {
        None => bind("--ro-bind", Path::new("/")),
        Some(roots) => {
            for dir in SYSTEM_READ {
                bind("--ro-bind-try", Path::new(dir));
            }
            read_roots.extend(roots.iter().map(PathBuf::as_path));
        }
    }
    if hide_tmp {
        args.extend(["--tmpfs".into(), tmp.into()]);
    }
    let mut bind = |flag: &str, path: &Path| {
        args.push(flag.into());
        args.push(path.into());
        args.push(path.into());
    };
    if hide_tmp
        && plan.read.is_none()
        && let Some(top) = plan.workspace.as_deref().and_then(top_of_tmp)
    {
        bind("--ro-bind-try", &top);
    }
    for root in read_roots {
        bind("--ro-bind-try", root);
    }
    // The keeper (see the `keeper` module) is wield itself.
    if let Some(helper) = helper
        && (plan.read.is_some() || (hide_tmp && helper.starts_with(tmp)))
    {
        bind("--ro-bind-try", helper);
    }
    // A fresh /dev (null, zero, tty, a private shm) instead of the host's,
    // and the namespace's own /proc.
    args.extend(["--dev".into(), "/dev".into(), "--proc".into(), "/proc".into()]);
    // With the network off, none of the host's sockets in /run (DBus,
    // `$XDG_RUNTIME_DIR`'s ssh-agent and `systemd --user`, docker): an
    // empty /run (see the `sockets` module for the rest).
    if !plan.network && Path::new("/run").is_dir() {
        args.extend(["--tmpfs".into(), "/run".into()]);
    }
    // Parents before children, so a nested write root is mounted over (not
    // under) its parent's bind.
    let mut writes: Vec<&PathBuf> = plan.write.iter().filter(|w| w.exists()).collect();
    writes.sort_by_key(|w| w.components().count());
    for w in writes {
        args.extend(["--bind".into(), w.into(), w.into()]);
    }
    // Protected paths last: a read-only bind over the writable one (for a
    // missing one, over the stand-in `prepare` made for it). A mount point
    // cannot be renamed, but a directory holding one can, and takes the
    // mount with it: each directory from the outermost write root down to
    // a protected path is therefore bound over itself first, so no rename
    // of an ancestor can move the protection away and let a command put
    // something else in its place.
    let mut ancestors: Vec<PathBuf> = Vec::new();
    let mut mounts: Vec<PathBuf> = Vec::new();
    for p in &plan.protected {
        let Some(root) = plan.outermost_write_root(p) else {
            continue;
        };
        let Some(mount) = mount_point(p, root) else { continue };
        for a in mount.ancestors().skip(1) {
            if a == root || !a.starts_with(root) {
                break;
            }
            if !ancestors.iter().any(|x| x == a) {
                ancestors.push(a.to_path_buf());
            }
        }
        if !mounts.contains(&mount) {
            mounts.push(mount);
        }
    }
    ancestors.sort_by_key(|a| a.components().count());
    for a in ancestors {
        args.extend(["--bind".into(), a.clone().into(), a.into()]);
    }
    mounts.sort_by_key(|p| p.components().count());
    for p in mounts {
        args.extend(["--ro-bind".into(), p.clone().into(), p.into()]);
    }
    // Hidden paths last, over whatever bind showed them: an empty tmpfs in
    // place of each directory (a file gets /dev/null). One under /run,
    // which the network's absence already emptied, or outside every root
    // is not there to hide.
    let run_emptied = !plan.network && Path::new("/run").is_dir();
    for p in super::existing_hidden(&plan.hidden) {
        let visible = match &plan.read {
            None => true,
            Some(roots) => roots.iter().chain(&plan.write).any(|r| p.starts_with(r)),
        };
        if !visible || (run_emptied && p.starts_with("/run")) {
            continue;
        }
        if p.is_dir() {
            args.extend(["--tmpfs".into(), p.into()]);
        } else {
            args.extend(["--ro-bind".into(), "/dev/null".into(), p.into()]);
        }
    }
    // Sockets named in sandbox.allow_unix_sockets, wherever they were hidden.
    if !plan.network {
        for socket in &plan.allow_unix_sockets {
            args.extend(["--bind-try".into(), socket.into(), socket.into()]);
        }
    }
    args.push("--".into());
    args.extend(command.iter().cloned());
    args
}

/// `/tmp/X` for a path `/tmp/X/...` (the path itself for `/tmp/X`).
fn top_of_tmp(path: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix("/tmp").ok()?;
    let first = rest.components().next()?;
    Some(Path::new("/tmp").join(first))
}

/// Where a protected path inside `root` is mounted read-only: itself when it
/// exists, else its deepest existing ancestor below `root` (the stand-in
/// `SandboxPlan::prepare` made); `None` when nothing below `root` exists
/// on its way.
fn mount_point(path: &Path, root: &Path) -> Option<PathBuf> {
    path.ancestors()
        .take_while(|a| *a != root && a.starts_with(root))
        .find(|a| a.symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}
