//! Policy and approval through the real binary: the visibility pipeline and
//! its explanations, approval rules and presets, remembered approvals (also
//! under concurrency), user hooks, and the approvers (scripted and through a
//! pseudo-terminal).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approval;
mod approver;
mod hooks;
mod remembered;
mod support;
mod visibility;
