//! The one way wield's tests start `wield` and its peers: `env_clear()`, then only the
//! variables named here, so nothing from the shell that runs the tests (a
//! `WIELD_*` setting, `RUST_LOG`, a proxy, the developer's own config)
//! changes what a test sees. A test adds what it tests with `.env(..)`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Taken from the test run's own environment when set: where programs are
/// (the bash tool, git, bwrap and the MCP peers need them).
const INHERITED: &[&str] = &["PATH"];

/// `program` with none of the test run's environment but [`INHERITED`] and
/// a fixed locale (`wield`'s and its peers', see `peer_cmd.rs`).
pub fn cleared(program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env_clear();
    for var in INHERITED {
        if let Some(value) = std::env::var_os(var) {
            c.env(var, value);
        }
    }
    c.env("LANG", "C.UTF-8");
    c
}

/// Where a test's `wield` runs: its working directory, its `HOME` (the user
/// config under `HOME/.config`) and, when the test has one, its `TMPDIR`.
#[derive(Clone, Debug)]
pub struct WieldEnv {
    bin: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
    tmp: Option<PathBuf>,
}

impl WieldEnv {
    /// `bin` (the `wield` binary cargo built for the tests:
    /// `env!("CARGO_BIN_EXE_wield")` in wield-cli's) run in `cwd` with
    /// `home`.
    pub fn new(bin: impl Into<PathBuf>, cwd: &Path, home: &Path) -> Self {
        Self {
            bin: bin.into(),
            cwd: cwd.to_owned(),
            home: home.to_owned(),
            tmp: None,
        }
    }

    /// The `wield` binary.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    pub fn with_tmp(mut self, tmp: &Path) -> Self {
        self.tmp = Some(tmp.to_owned());
        self
    }

    /// `wield`.
    pub fn command(&self) -> Command {
        self.running(&self.bin)
    }

    /// `program` in the environment `wield` gets, for a program that starts
    /// `wield` itself (a terminal driver, a memory meter), given
    /// [`WieldEnv::bin`] among its arguments.
    pub fn running(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = cleared(program);
        c.current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("RUST_BACKTRACE", "0");
        if let Some(tmp) = &self.tmp {
            c.env("TMPDIR", tmp);
        }
        c
    }

    /// `wield` as the unprivileged user `nobody` (uid and gid 65534), with
    /// the same environment; the caller hands it the files it needs first
    /// (the test's temp tree, which holds `home`). The binary is a copy in
    /// that tree (see [`nobody_binary`]).
    pub fn command_as_nobody(&self) -> Command {
        let mut c = self.running("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(nobody_binary(&self.bin, &self.home));
        c
    }
}

/// The `wield` binary where `nobody` can run it. The build directory may lie
/// in a private home (mode 0700, as root's is on Debian) that `nobody`
/// cannot enter, and then neither `setpriv` nor the sandbox's helper could
/// execute it: so the binary is copied (not linked, or a later `chown -R`
/// of the tree would change the build's own file) into `wield-bin/` beside
/// `home`, in the test's temp tree, which goes when the test ends.
pub fn nobody_binary(wield: &Path, home: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = home.parent().unwrap_or(home).join("wield-bin");
    let bin = dir.join("wield");
    if !bin.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::copy(wield, &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// A peer the tests drive `wield` with or against (the venv's Python, Node,
/// `curl` through `setpriv`) or set up and compare with (`git`, `rg`), in
/// the cleared environment: it finds its programs on `PATH`, and is given
/// everything else it needs with `.env(..)` (a peer that starts `wield`
/// passes that environment on), so no `GIT_DIR` or ripgrep config of the
/// test run's changes what it does.
pub fn peer_command(program: impl AsRef<OsStr>) -> Command {
    cleared(program)
}

/// Where `scripts/test-deps.sh` installed the peers the tests need
/// (`$WIELD_TEST_DEPS`, else `target/test-deps` of the workspace).
pub fn test_deps() -> PathBuf {
    std::env::var_os("WIELD_TEST_DEPS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps"),
        PathBuf::from,
    )
}

/// A peer under [`test_deps`] (`venv/bin/python`, say), or a failure that
/// says how to install it: a missing peer fails the test, it never skips.
pub fn peer(rel: &str) -> PathBuf {
    let path = test_deps().join(rel);
    assert!(
        path.exists(),
        "the test peer {} is missing: run `bash scripts/test-deps.sh`",
        path.display()
    );
    path
}
