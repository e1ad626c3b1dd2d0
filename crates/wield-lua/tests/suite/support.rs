//! The workspace the tests put Lua files in, and calls in it.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use wield_core::approval::{HeadlessApprover, YesApprover};
use wield_test_support::layout::Layout;
use wield_test_support::pipeline::{self, Loaded};

/// The example, as written there.
pub const WORD_COUNT: &str = include_str!("../../examples/word_count.lua");

/// A calculator in Flemma's shape: a recursive-descent evaluator of
/// `+ - * / % ^` and parentheses over numbers, nothing else.
pub const CALC: &str = include_str!("../../examples/calc.lua");

/// The attack layout ([`Layout`]), outside the temp root of this process
/// (which the in-process runtime's commands may write).
pub fn env() -> Layout {
    Layout::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")))
}

/// The runtime of the workspace, loaded.
pub fn load(e: &Layout) -> Loaded {
    Loaded::load(&e.ws(""), &[]).unwrap()
}

/// A call with no one to approve it, as a headless `wield call --json`.
pub fn headless(e: &Layout, tool: &str, args: Value) -> (i32, Value) {
    pipeline::call(&e.ws(""), &[], Arc::new(HeadlessApprover), tool, args)
}

/// A call approved as `wield -y call --json` approves.
pub fn yes(e: &Layout, tool: &str, args: Value) -> (i32, Value) {
    pipeline::call(&e.ws(""), &[], Arc::new(YesApprover), tool, args)
}

/// The result's `output`.
pub fn output(v: &Value) -> Option<&str> {
    v["output"].as_str()
}

/// The result's `error`.
pub fn error(v: &Value) -> &str {
    v["error"].as_str().unwrap_or_default()
}
