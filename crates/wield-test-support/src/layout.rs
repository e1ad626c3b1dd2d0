//! The temp-dir layout the file-tool and patch tests attack and defend:
//! `base/ws` (the workspace), `base/outside` (`secret.txt`), `base/ws-evil`
//! (a sibling sharing the workspace's name as a string prefix, with its own
//! `secret.txt`), `base/home` and `base/tmp`; and the paths that try to
//! leave the workspace.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// What the files outside the workspace hold.
pub const SECRET: &str = "TOP-SECRET-CONTENT";

/// Paths that climb out of the workspace with `..` (`sub/` exists).
pub const DOTDOT_ESCAPES: &[&str] = &["../outside/secret.txt", "sub/../../outside", "../outside/new.txt"];

/// Paths through the links [`Layout::outside_links`] makes, all leading
/// outside.
pub const LINK_ESCAPES: &[&str] = &[
    "file-link",
    "dir-link",
    "dir-link/secret.txt",
    "rel-dir-link/secret.txt",
    "dangling",
];

/// A path with a NUL byte that would lead outside if cut there.
pub const NUL_ESCAPE: &str = "a.txt\u{0}../../outside/secret.txt";

/// The layout, in a temporary directory that goes with it.
pub struct Layout {
    _dir: tempfile::TempDir,
    /// The directory holding it all (canonical).
    pub base: PathBuf,
}

impl Layout {
    /// The layout in the system's temp directory.
    pub fn new() -> Self {
        Self::made(tempfile::TempDir::new().unwrap())
    }

    /// The layout in a directory under `parent`: one that is not beneath
    /// the temp root of the process the tools run in (an in-process
    /// runtime's own temp root would otherwise hold `outside`).
    pub fn new_in(parent: &Path) -> Self {
        fs::create_dir_all(parent).unwrap();
        Self::made(tempfile::TempDir::new_in(parent).unwrap())
    }

    fn made(dir: tempfile::TempDir) -> Self {
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

    /// `base/tmp` as the temp dir of the commands an in-process runtime
    /// runs, as `TMPDIR=base/tmp wield` makes it theirs: the `--set`
    /// settings making it a write root of the sandbox (`sandbox.write`)
    /// and the commands' `TMPDIR` (`bash.env.set.TMPDIR`). The runtime's
    /// own temp dir stays the process's, which tests share.
    pub fn tmp_sets(&self) -> [String; 2] {
        let tmp = self.base.join("tmp");
        let tmp = tmp.display();
        [
            format!("sandbox.write=[\"{tmp}\"]"),
            format!("bash.env.set.TMPDIR=\"{tmp}\""),
        ]
    }

    /// Write a file inside the workspace, creating its directories.
    pub fn put(&self, rel: &str, text: &str) {
        let p = self.ws(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// Absolute paths outside every root, the prefix sibling among them.
    pub fn absolute_escapes(&self) -> Vec<String> {
        let evil = self.base.join("ws-evil");
        [
            self.base.join("outside/secret.txt"),
            self.base.join("outside"),
            evil.join("secret.txt"),
            evil.clone(),
            evil.join("new.txt"),
        ]
        .iter()
        .map(|p| p.display().to_string())
        .chain(["../ws-evil/secret.txt".to_owned()])
        .collect()
    }

    /// The links of [`LINK_ESCAPES`] in the workspace.
    pub fn outside_links(&self) {
        symlink(self.base.join("outside/secret.txt"), self.ws("file-link")).unwrap();
        symlink(self.base.join("outside"), self.ws("dir-link")).unwrap();
        symlink("../outside", self.ws("rel-dir-link")).unwrap();
        symlink(self.base.join("outside/not-yet.txt"), self.ws("dangling")).unwrap();
    }

    /// Nothing outside the roots was changed, and the secret is intact.
    pub fn assert_outside_untouched(&self) {
        for dir in ["outside", "ws-evil"] {
            let names: Vec<String> = fs::read_dir(self.base.join(dir))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, vec!["secret.txt"], "{dir} was changed");
            assert_eq!(
                fs::read_to_string(self.base.join(dir).join("secret.txt")).unwrap(),
                SECRET
            );
        }
    }
}

impl Default for Layout {
    fn default() -> Self {
        Self::new()
    }
}
