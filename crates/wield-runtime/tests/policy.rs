//! The tool policy as the runtime assembles it from the configuration and
//! its options, in the test's process: approval rules and presets, the
//! visibility stages, user hooks and remembered approvals. What `wield`
//! itself adds (its flags, environment variables, exit codes and printed
//! shapes) is wield-cli's `policy` suite.

#[path = "policy/approval.rs"]
mod approval;
#[path = "policy/hooks.rs"]
mod hooks;
#[path = "policy/remembered.rs"]
mod remembered;
#[path = "policy/support.rs"]
mod support;
#[path = "policy/visibility.rs"]
mod visibility;
