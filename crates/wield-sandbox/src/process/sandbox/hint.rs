//! Telling the model that the sandbox, not the command, refused something,
//! so it does not retry blindly. Best effort: paths are recovered from the
//! usual shapes of error messages on stderr.

use std::path::{Path, PathBuf};

use super::{Refusal, SandboxPlan, normalize};

/// `Device or resource busy`: renaming or removing a path bubblewrap
/// mounted read-only over the workspace.
const WRITE_ERRORS: &[&str] = &[
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Device or resource busy",
];

const NETWORK_ERRORS: &[&str] = &[
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Couldn't connect to server",
    "Failed to connect",
    "Connection refused",
    "socket: Permission denied",
    "connect: Permission denied",
];

/// Hints for a failed sandboxed command, from its stderr: `write denied by
/// sandbox: PATH is outside the write roots` and the like. Empty when
/// nothing points at the sandbox.
pub fn denial_hints(stderr: &str, cwd: &Path, plan: &SandboxPlan) -> Vec<String> {
    let mut hints: Vec<String> = Vec::new();
    let mut add = |h: String| {
        if !hints.contains(&h) && hints.len() < 10 {
            hints.push(h);
        }
    };
    let mut network_hinted = false;
    for line in stderr.lines() {
        // Bubblewrap does not mount what is outside the read roots: a read
        // there fails as if the file did not exist.
        let missing = line.contains("No such file or directory");
        if missing || WRITE_ERRORS.iter().any(|e| line.contains(e)) {
            for candidate in path_candidates(line) {
                let path = normalize(&cwd.join(&candidate));
                if let Some(h) = read_refusal(&path, plan) {
                    add(h);
                    break;
                }
                if missing {
                    continue;
                }
                if let Some(refusal) = plan.write_refusal(&path)
                    && writable_unsandboxed(&path)
                {
                    add(describe(&path, &refusal, plan));
                    break;
                }
            }
        }
        if !plan.network() && !network_hinted && NETWORK_ERRORS.iter().any(|e| line.contains(e)) {
            network_hinted = true;
            add(
                "network access denied by sandbox: commands cannot reach the network, nor connect to Unix sockets (sandbox.network = false; sandbox.allow_unix_sockets opens named sockets)"
                    .into(),
            );
        }
    }
    hints
}

/// A read the sandbox refused: with read roots configured, a path outside
/// them (and outside the write roots and the system directories) that
/// wield's user could read. Such a failure says "Permission denied" just as
/// a refused write does.
fn read_refusal(path: &Path, plan: &SandboxPlan) -> Option<String> {
    let read = plan.read_roots()?;
    let system = super::bwrap::SYSTEM_READ.iter().map(Path::new);
    let inside = read
        .iter()
        .chain(plan.write_roots())
        .map(PathBuf::as_path)
        .chain(system)
        .any(|r| path.starts_with(r));
    if inside || rustix::fs::access(path, rustix::fs::Access::READ_OK).is_err() {
        return None;
    }
    let roots: Vec<String> = read.iter().map(|r| r.display().to_string()).collect();
    Some(format!(
        "read denied by sandbox: {} is outside the read roots ({}; sandbox.read)",
        path.display(),
        roots.join(", ")
    ))
}

/// Whether wield's user could write `path` (or create it and the
/// directories it needs, when it does not exist) without the sandbox: only
/// then did the sandbox make the difference. A read of a file the user may
/// not read (another user's `/proc/PID/environ`) fails with the same words,
/// and is not the sandbox's doing.
fn writable_unsandboxed(path: &Path) -> bool {
    use rustix::fs::{Access, access};
    path.ancestors()
        .find(|p| p.symlink_metadata().is_ok())
        .is_some_and(|existing| access(existing, Access::WRITE_OK).is_ok())
}

fn describe(path: &Path, refusal: &Refusal, plan: &SandboxPlan) -> String {
    let shown = path.display();
    match refusal {
        Refusal::OutsideRoots => {
            let roots: Vec<String> = plan.write_roots().iter().map(|r| r.display().to_string()).collect();
            let roots = if roots.is_empty() {
                "there are none: commands of this session may not write files".to_owned()
            } else {
                roots.join(", ")
            };
            format!("write denied by sandbox: {shown} is outside the write roots ({roots})")
        }
        Refusal::Protected(p) => format!(
            "write denied by sandbox: {shown} is inside {}, which commands may never write",
            p.display()
        ),
        Refusal::LandlockTopLevel(dir) => format!(
            "write denied by sandbox: {shown} would create or remove an entry directly in {}, which the Landlock \
             backend cannot allow without also opening its protected .wield/.git; write inside a subdirectory or \
             set sandbox.backend = \"bwrap\"",
            dir.display()
        ),
    }
}

/// Strings in an error line that may be the path it is about: quoted
/// segments first (`touch: cannot touch '/etc/x': …`), then `: `-separated
/// segments that look like paths (`bash: /etc/x: Permission denied`).
fn path_candidates(line: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (open, close) in [('\'', '\''), ('‘', '’'), ('"', '"'), ('`', '\'')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let quoted = &after[..end];
            if looks_like_path(quoted) {
                out.push(PathBuf::from(quoted));
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    let segments: Vec<&str> = line.split(": ").map(str::trim).collect();
    // The segment right before the error text is usually the path, absolute
    // or relative (`bash: line 1: .wield/config.toml: Permission denied`).
    if let Some(i) = segments
        .iter()
        .position(|s| WRITE_ERRORS.iter().any(|e| s.starts_with(e)))
        && i > 0
    {
        // A bare word is more often a syscall (`bash: socket: …`) than a
        // file name: require something path-like.
        let s = segments[i - 1];
        if looks_like_path(s) && !s.contains(char::is_whitespace) && s.contains(['/', '.']) {
            out.push(PathBuf::from(s));
        }
    }
    for s in segments {
        if s.starts_with('/') && looks_like_path(s) && !s.contains(char::is_whitespace) {
            out.push(PathBuf::from(s));
        }
    }
    out
}

fn looks_like_path(s: &str) -> bool {
    // bash's /dev/tcp and /dev/udp are sockets, not files.
    !s.is_empty()
        && s.len() < 4096
        && !s.contains('\n')
        && !s.starts_with('-')
        && !s.starts_with("/dev/tcp/")
        && !s.starts_with("/dev/udp/")
}
