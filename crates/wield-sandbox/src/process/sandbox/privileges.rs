//! Keeping wield's own memory and environment from the commands it runs.
//!
//! A command may not read `/proc/<wield>/environ` or `/proc/<wield>/mem`
//! (the scrubbed variables, the tokens in memory). Two things together
//! make sure of it, as root or not:
//!
//! - wield is not dumpable ([`make_non_dumpable`], called first thing in
//!   `main`): the kernel then lets only a process with `CAP_SYS_PTRACE`
//!   read those files, and its `/proc` entries belong to root;
//! - no sandboxed command has any capability: bubblewrap runs it with
//!   `--cap-drop ALL`, the Landlock helper empties its bounding, ambient,
//!   effective, permitted and inheritable sets and sets `no_new_privs`
//!   ([`drop_all`]) before it execs the command, so a command run as root
//!   gets no capability back from exec or from a set-user-ID program.

use rustix::process::DumpableBehavior;
use rustix::thread::{CapabilitySet, CapabilitySets};

/// Make this process non-dumpable. Inherited by forks, reset by `exec`, so
/// the commands wield runs are unaffected. Returns whether it took.
pub fn make_non_dumpable() -> bool {
    rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable).is_ok() && !is_dumpable()
}

/// Whether this process is dumpable (what `wield sandbox check` reports).
pub fn is_dumpable() -> bool {
    !matches!(rustix::process::dumpable_behavior(), Ok(DumpableBehavior::NotDumpable))
}

/// Set `no_new_privs` and drop every capability of this thread for good:
/// the bounding set (when this thread may), the ambient set, then the
/// effective, permitted and inheritable ones. Checked afterwards: an error
/// when any capability is left.
pub(crate) fn drop_all() -> Result<(), String> {
    rustix::thread::set_no_new_privs(true).map_err(|e| format!("cannot set no_new_privs: {e}"))?;
    let current = rustix::thread::capabilities(None).map_err(|e| format!("cannot read capabilities: {e}"))?;
    if current.effective.contains(CapabilitySet::SETPCAP) {
        for bit in 0..64 {
            let cap = CapabilitySet::from_bits_retain(1 << bit);
            // Capabilities this kernel does not know are refused with EINVAL.
            if rustix::thread::capability_is_in_bounding_set(cap).unwrap_or(false) {
                rustix::thread::remove_capability_from_bounding_set(cap)
                    .map_err(|e| format!("cannot drop capability {bit} from the bounding set: {e}"))?;
            }
        }
    }
    // Fails only on kernels without ambient capabilities, which have none.
    let _ = rustix::thread::clear_ambient_capability_set();
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none).map_err(|e| format!("cannot drop capabilities: {e}"))?;
    let left = rustix::thread::capabilities(None).map_err(|e| format!("cannot read capabilities: {e}"))?;
    if left != none {
        return Err(format!("capabilities remain after dropping them all: {left:?}"));
    }
    Ok(())
}
