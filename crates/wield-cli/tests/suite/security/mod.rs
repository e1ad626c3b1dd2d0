//! Attacks on wield's boundaries, each through the real binary and the real
//! sandboxes: what a prompt-injected model choosing every argument, or
//! another local user, tried, and must fail to do.

mod approval;
mod chat_doc;
mod files;
mod files_open;
mod http;
mod lua;
mod misc;
mod policy_files;
mod review;
mod sandbox;
mod subagents;
use crate::shell::support;

/// A fresh workspace for each sandbox backend and for none (`off`); the
/// backends are checked to be usable here first, so a missing one fails the
/// test instead of skipping it.
fn each_backend() -> impl Iterator<Item = (&'static str, support::Ws)> {
    ["bwrap", "landlock", "off"].into_iter().map(|backend| {
        let ws = support::Ws::new();
        if backend != "off" {
            support::require_backends(&ws);
        }
        (backend, ws)
    })
}
