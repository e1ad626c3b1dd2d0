//! The keeper: a per-command subreaper, so that no process of a command
//! outlives it.
//!
//! wield finds a command's processes by ancestry, process group and an
//! inherited marker variable; a process that clears its environment, leaves
//! the group (`setsid`) and lets its parent die before a walk sees it would
//! be handed to wield unrecognised, and a process that keeps doing so
//! ("PID hopping") outlived its command. The sandbox helper therefore forks:
//! the child confines itself and execs the command, the parent stays as the
//! command's keeper, a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every
//! orphan of the command is handed to it rather than to wield and stays in
//! its tree. When the command exits, the keeper ends whatever it left
//! (SIGTERM, the grace period, then SIGKILL until nothing is left), says so
//! on stderr, and exits as the command did. It ignores SIGTERM, SIGINT and
//! SIGHUP (they are for the command); wield SIGKILLs it only after the rest
//! of its tree ([`ProcessTree::leader_reaps`](crate::process::ProcessTree::leader_reaps)).
//!
//! With the sandbox off, the wield binary runs commands under a keeper too
//! ([`keep_unconfined`](super::keep_unconfined)).
//!
//! The keeper stays outside the command's confinement, so under Landlock
//! the command cannot signal it (signals are scoped to the command's own
//! domain where the kernel has ABI 6). Under bubblewrap it runs inside the
//! sandbox, in the PID namespace whose init takes everything with it.

use std::time::Duration;

/// The report printed on stderr when the command left processes running.
pub fn leftover_note(count: usize) -> String {
    format!(
        "[{count} background process(es) still running when the command exited were killed; use process_start for long-running processes]"
    )
}

/// Fork; run `child` (which confines itself and execs, returning only on
/// failure with an exit status) in the child; keep in the parent. Returns
/// the status to exit with, or never returns when the command was killed
/// by a signal (the keeper dies by the same one).
pub(crate) fn keep(grace: Duration, child: impl FnOnce() -> i32) -> i32 {
    if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        eprintln!("wield sandbox: cannot become the command's subreaper: {e}");
        return 126;
    }
    let keeper = rustix::process::getpid();
    // SAFETY: the helper is single-threaded (it runs before any runtime or
    // thread is started), so the child may do anything the parent could.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!("wield sandbox: cannot fork: {}", std::io::Error::last_os_error());
        return 126;
    }
    if pid == 0 {
        // The command dies with its keeper, should wield kill the keeper.
        // SAFETY: PR_SET_PDEATHSIG takes a signal number, no pointer.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        if rustix::process::getppid() != Some(keeper) {
            return 126;
        }
        return child();
    }
    let _ = super::privileges::make_non_dumpable();
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: SIG_IGN is a valid disposition; no handler runs.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let status = loop {
        let mut status = 0;
        // SAFETY: `status` is a valid place for the kernel to write to.
        let r = unsafe { libc::waitpid(-1, &raw mut status, 0) };
        if r == pid {
            break status;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break 126 << 8;
        }
    };
    let left = crate::process::tree::end_descendants(grace);
    if left > 0 {
        eprintln!("{}", leftover_note(left));
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restoring the default disposition and raising a signal at
        // ourselves; nothing else runs.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return 128 + sig;
    }
    libc::WEXITSTATUS(status)
}
