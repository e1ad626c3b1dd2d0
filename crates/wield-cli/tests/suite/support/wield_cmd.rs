//! The one way these tests start `wield` (see
//! [`wield_test_support::command`]): the binary cargo built for them.

use std::path::{Path, PathBuf};

pub use wield_test_support::command::WieldEnv;

/// The `wield` binary cargo built for these tests.
pub fn wield_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wield"))
}

/// `wield` run in `cwd` with `home` (see [`WieldEnv`]).
pub fn wield_env(cwd: &Path, home: &Path) -> WieldEnv {
    WieldEnv::new(wield_bin(), cwd, home)
}
