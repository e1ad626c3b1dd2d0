//! Policy and approval through the real binary: the visibility pipeline and
//! its explanations, approval rules and presets, remembered approvals (also
//! under concurrency), user hooks, and the approvers (scripted and through a
//! pseudo-terminal).

mod approval;
mod approver;
mod hooks;
mod remembered;
mod support;
mod visibility;
