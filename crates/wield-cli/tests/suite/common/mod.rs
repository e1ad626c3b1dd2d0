//! The temp-dir layout the file-tool and patch tests attack and defend
//! ([`wield_test_support::layout`]), with `wield` run in it.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use wield_test_support::layout::Layout;
pub use wield_test_support::layout::SECRET;

use crate::wield_cmd::WieldEnv;

/// The layout, `wield` running in its workspace with `base/home` and
/// `base/tmp` (its TMPDIR, so the writable temp root holds neither
/// `outside` nor `ws-evil`).
pub struct Env(Layout);

impl std::ops::Deref for Env {
    type Target = Layout;

    fn deref(&self) -> &Layout {
        &self.0
    }
}

impl Env {
    pub fn new() -> Self {
        Self(Layout::new())
    }

    /// Where `wield` runs: the workspace, base/home and base/tmp.
    pub fn wield_env(&self) -> WieldEnv {
        crate::wield_cmd::wield_env(&self.ws(""), &self.base.join("home")).with_tmp(&self.base.join("tmp"))
    }

    /// `wield` in the workspace, with no user configuration or tool
    /// selection leaking in from the environment.
    pub fn wield(&self) -> Command {
        Command::from_std(self.wield_env().command())
    }

    /// `wield ARGS` run to its end: the exit status (-1 for a signal),
    /// stdout and stderr.
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.wield().args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// What `wield ARGS` printed on stdout; it must succeed.
    pub fn stdout(&self, args: &[&str]) -> String {
        let out = self.wield().args(args).assert().success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    }
}
