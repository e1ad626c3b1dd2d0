//! A test binary that runs sandboxed commands in its own process as the
//! `wield` binary does: it is the sandbox's helper. The Landlock backend
//! re-executes the current executable as `EXE __sandbox-exec ... -- COMMAND`
//! to confine itself and exec the command, and with a declared helper
//! bubblewrap and unsandboxed commands run under its keeper (what a command
//! leaves running is killed and reported when it exits). The `wield` binary
//! dispatches `__sandbox-exec` first thing in `main`; a test binary's `main`
//! is libtest's, so [`sandbox_helper!`](crate::sandbox_helper!) does it in
//! a constructor that runs before it.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use wield_sandbox::process::sandbox::{SANDBOX_EXEC_SUBCOMMAND, declare_helper, sandbox_exec_main};

/// Make the test binary that calls it the sandbox's helper: put
/// `wield_test_support::sandbox_helper!();` at the top level of the test
/// crate (its root file). Started as `__sandbox-exec`, the binary confines
/// itself and execs the command before libtest runs; started to run tests,
/// it declares itself the helper.
#[macro_export]
macro_rules! sandbox_helper {
    () => {
        // Linux runs the functions of `.init_array` before `main`.
        #[used]
        #[unsafe(link_section = ".init_array")]
        static WIELD_SANDBOX_HELPER: extern "C" fn() = {
            extern "C" fn start() {
                $crate::sandbox_helper::start();
            }
            start
        };
    };
}

/// What the constructor of [`sandbox_helper!`](crate::sandbox_helper!)
/// runs: `__sandbox-exec ARGS` never returns (the command replaces the
/// process, or the helper exits with its failure); anything else declares
/// this executable the helper.
pub fn start() {
    // Read from the kernel: before `main`, nothing promises that std has
    // taken the arguments yet.
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let mut args = cmdline
        .split(|b| *b == 0)
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect::<Vec<_>>();
    // The list ends with a NUL: the last item is empty.
    if args.last().is_some_and(|a| a.is_empty()) {
        args.pop();
    }
    if args.get(1).is_some_and(|a| a == SANDBOX_EXEC_SUBCOMMAND) {
        std::process::exit(sandbox_exec_main(args.into_iter().skip(2)));
    }
    declare_helper();
}
