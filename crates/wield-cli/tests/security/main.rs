//! Attacks on wield's boundaries, each through the real binary and the real
//! sandboxes: what a prompt-injected model choosing every argument, or
//! another local user, tried, and must fail to do.

mod approval;
mod files;
mod http;
mod misc;
mod review;
mod sandbox;
#[allow(dead_code)]
#[path = "../shell/support.rs"]
mod support;
#[path = "../support/wield_cmd.rs"]
mod wield_cmd;
