//! Keeping a command's signals inside its sandbox.
//!
//! Landlock (ABI 6, Linux 6.12) can scope signals: a process in a Landlock
//! domain may signal only processes in the same domain or below it, never
//! wield or the user's other programs. The Landlock backend asks for that
//! in its own ruleset. bubblewrap has no such rule; its PID namespace hides
//! other processes from `kill(pid)`, but a domain that scopes signals and
//! nothing else, entered between `fork` and the `exec` of `bwrap`, also
//! covers what the namespace does not (a process group or session reached
//! otherwise).
//!
//! The ruleset is made before the fork; the child only sets
//! `no_new_privs` and enters it, two system calls that allocate nothing.
//! Where the kernel cannot scope signals the command runs as before.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `LANDLOCK_SCOPE_SIGNAL`.
const SCOPE_SIGNAL: u64 = 1 << 1;

/// `struct landlock_ruleset_attr` as of ABI 6.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// A Landlock ruleset that scopes signals and restricts nothing else, or
/// `None` where the kernel cannot make one.
pub(crate) fn ruleset() -> Option<OwnedFd> {
    let attr = RulesetAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: SCOPE_SIGNAL,
    };
    // SAFETY: `attr` is a valid `landlock_ruleset_attr` of the size given,
    // alive for the call; the kernel returns a new file descriptor (close on
    // exec) or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the kernel just gave this descriptor to us alone.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Enter `ruleset`'s domain: for the child between `fork` and `exec`, so
/// only system calls, no allocation. Best effort: a failure leaves the
/// command unscoped, as on a kernel without the rule.
pub(crate) fn enter(ruleset: &OwnedFd) {
    // SAFETY: plain system calls on an open descriptor; neither touches
    // memory of ours.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 {
            libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32);
        }
    }
}

/// Whether `program` is set-user-ID: `no_new_privs` would take its
/// privileges away (a set-user-ID `bwrap` needs them), so it is not scoped.
pub(crate) fn setuid(program: &std::ffi::OsStr) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::path::Path::new(program);
    let found = if path.components().count() > 1 {
        Some(path.to_path_buf())
    } else {
        std::env::var_os("PATH")
            .and_then(|dirs| std::env::split_paths(&dirs).map(|d| d.join(path)).find(|p| p.is_file()))
    };
    found
        .and_then(|p| std::fs::metadata(p).ok())
        .is_none_or(|m| m.permissions().mode() & 0o4000 != 0)
}
