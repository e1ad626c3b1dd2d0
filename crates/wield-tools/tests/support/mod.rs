//! What wield-tools' behaviour tests share: a call through the pipeline of
//! a runtime loaded on a workspace, as a front-end makes it.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used, dead_code)]

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wield_core::{Approver, Call, Driver};
use wield_runtime::{Runtime, RuntimeOptions};
use wield_test_support::layout::Layout;

/// One call of `tool` in a person-driven session of a runtime loaded on
/// `workspace` with `sets` (`--set`), `approver` deciding what needs a
/// person, as `wield call --json` makes it → (its exit code: 0 when the
/// call succeeded, else 1; the result as JSON).
pub fn call(workspace: &Path, sets: &[&str], approver: Arc<dyn Approver>, tool: &str, args: Value) -> (i32, Value) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let options = RuntimeOptions::builder().set(sets.iter().copied()).build();
        let runtime = Runtime::load(workspace, options).await.unwrap();
        let executor = runtime.executor(approver).unwrap();
        let session = runtime.session("call", Driver::Person);
        let result = executor
            .run_one(Call::new("call-1", tool, args), &session, &CancellationToken::new())
            .await;
        (i32::from(!result.success), serde_json::to_value(&result).unwrap())
    })
}

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
