//! Policy and approval as the `wield` binary adds to them: what `wield
//! tools debug` and `wield approvals` print and exit with, the flags and
//! environment variables that select the policy, hooks' stderr warnings
//! and usage errors, and the approvers (scripted and through a
//! pseudo-terminal). The policy's behaviour (approval rules and presets,
//! the visibility stages, hooks, remembered approvals) is tested in
//! process by wield-runtime's `policy` suite.

mod approver;
mod hooks;
mod remembered;
mod support;
mod visibility;
