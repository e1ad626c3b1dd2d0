//! What a command may not reach with the network off: the seccomp filter
//! the helper installs under both backends (under bubblewrap, the keeper
//! installs it in the sandbox before it execs the command; a program that
//! embeds the library without the helper gets bubblewrap's namespaces and
//! its hidden `/run` and `/tmp` only).
//!
//! - `socket(AF_INET | AF_INET6 | AF_PACKET)` and `io_uring_setup` (whose
//!   operations could open sockets behind the filter) fail with EACCES;
//! - Unix sockets: a pathname socket outside the workspace (a tmux server
//!   in `/tmp`, DBus, ssh-agent, X11, docker, `systemd --user` in `/run`,
//!   `$XDG_RUNTIME_DIR` or `$HOME`) would let a command act outside the
//!   sandbox. seccomp cannot read the address a `connect` names, and
//!   Landlock confines connecting to pathname sockets only from ABI 9 on
//!   (abstract ones from ABI 6), so the filter is sound and stricter than
//!   the goal: `connect` fails with EACCES whatever the address (sockets
//!   inside the workspace included), and Unix datagram sockets cannot be
//!   created (`sendto` names an address on them without a `connect`).
//!   Socket pairs and listening sockets work. Naming sockets in
//!   `sandbox.allow_unix_sockets` lifts the `connect` rule: then what a
//!   command can connect to is what it can see (bubblewrap hides the host's
//!   `/run` and `/tmp`; Landlock hides nothing).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

/// The socket type's low bits (without `SOCK_CLOEXEC`, `SOCK_NONBLOCK`).
const SOCK_TYPE_MASK: u64 = 0xf;

fn arg_is(index: u8, value: i32, mask: Option<u64>) -> Result<SeccompCondition, String> {
    let value = u64::try_from(value).map_err(|e| e.to_string())?;
    let op = mask.map_or(SeccompCmpOp::Eq, SeccompCmpOp::MaskedEq);
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// The filter's rules: `deny_unix` adds the Unix socket rules.
fn rules(deny_unix: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut socket = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6, libc::AF_PACKET] {
        socket.push(rule(vec![arg_is(0, family, None)?])?);
    }
    if deny_unix {
        let unix_datagram = || -> Result<SeccompRule, String> {
            rule(vec![
                arg_is(0, libc::AF_UNIX, None)?,
                arg_is(1, libc::SOCK_DGRAM, Some(SOCK_TYPE_MASK))?,
            ])
        };
        socket.push(unix_datagram()?);
        rules.insert(libc::SYS_socketpair, vec![unix_datagram()?]);
        // An empty list of rules matches every call.
        rules.insert(libc::SYS_connect, Vec::new());
    }
    rules.insert(libc::SYS_socket, socket);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    Ok(rules)
}

/// Install the filter on this thread (inherited by everything it execs).
pub(crate) fn apply_filter(deny_unix: bool) -> Result<(), String> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let errno = u32::try_from(libc::EACCES).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules(deny_unix)?,
        SeccompAction::Allow,
        SeccompAction::Errno(errno),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}
