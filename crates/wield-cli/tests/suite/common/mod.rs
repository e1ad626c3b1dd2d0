//! The temp-dir layout the file-tool and patch tests attack and defend.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::PathBuf;

use assert_cmd::Command;
use tempfile::TempDir;

use crate::wield_cmd::WieldEnv;

pub const SECRET: &str = "TOP-SECRET-CONTENT";

/// base/ws (the workspace), base/outside (secret.txt), base/ws-evil (a
/// sibling sharing the workspace's name as a string prefix), base/home and
/// base/tmp (TMPDIR, so the writable temp root holds neither).
pub struct Env {
    _dir: TempDir,
    pub base: PathBuf,
}

impl Env {
    pub fn new() -> Self {
        let dir = TempDir::new().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        for d in ["ws", "outside", "ws-evil", "home", "tmp"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        fs::write(base.join("outside/secret.txt"), SECRET).unwrap();
        fs::write(base.join("ws-evil/secret.txt"), SECRET).unwrap();
        Self { _dir: dir, base }
    }

    /// A path inside the workspace.
    pub fn ws(&self, rel: &str) -> PathBuf {
        self.base.join("ws").join(rel)
    }

    /// Write a file inside the workspace, creating its directories.
    pub fn put(&self, rel: &str, text: &str) {
        let p = self.ws(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
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
}
