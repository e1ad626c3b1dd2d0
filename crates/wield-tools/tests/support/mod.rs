//! What wield-tools' behaviour tests share: a call through the pipeline of
//! a runtime loaded on a workspace, as a front-end makes it.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used, dead_code)]

use std::path::Path;

use wield_test_support::layout::Layout;
pub use wield_test_support::pipeline::call;

/// The attack layout ([`Layout`]), outside the temp root of this process
/// (the in-process runtime's temp root would otherwise hold `outside` and
/// `ws-evil`).
pub struct Env(Layout);

impl std::ops::Deref for Env {
    type Target = Layout;

    fn deref(&self) -> &Layout {
        &self.0
    }
}

impl Env {
    pub fn new() -> Self {
        Self(Layout::new_in(Path::new(env!("CARGO_TARGET_TMPDIR"))))
    }
}
