//! Narrowing the write roots of a [`Confinement`] to a set of directories
//! someone else names (an MCP client's roots), without ever widening them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::roots::{Root, RootKind};
use super::{Access, Confinement, Kind};

impl Confinement {
    /// A copy whose writes are limited to `allowed`; reads are unchanged.
    ///
    /// - a write root that lies inside (or is) an allowed directory stays
    ///   writable;
    /// - an allowed directory inside a write root becomes a write root of its
    ///   own, reached by resolving it through this confinement (so `..`,
    ///   links and races cannot make it point outside);
    /// - every other write root becomes read-only, and allowed directories
    ///   outside every write root are ignored.
    ///
    /// The result can only allow less than `self`. Relative paths still start
    /// at the workspace, and protected paths stay protected. Entries of
    /// `allowed` must be absolute; relative ones are ignored.
    pub fn narrow_writes(&self, allowed: &[PathBuf]) -> Confinement {
        let allowed: Vec<&Path> = allowed
            .iter()
            .map(PathBuf::as_path)
            .filter(|p| p.is_absolute())
            .collect();
        let mut roots: Vec<Root> = self
            .roots
            .iter()
            .map(|r| Root {
                real: r.real.clone(),
                alias: r.alias.clone(),
                dir: Arc::clone(&r.dir),
                kind: r.kind,
            })
            .collect();
        let mut extra: Vec<Root> = Vec::new();
        let mut keep = vec![false; roots.len()];
        for a in &allowed {
            // Containment of a configured root in an allowed directory is a
            // comparison with our own canonical root paths; a race here can
            // only decide whether a root that was already writable stays so.
            if let Ok(canon) = std::fs::canonicalize(a) {
                for (i, r) in roots.iter().enumerate() {
                    // `starts_with` compares whole components.
                    if r.allows(Access::Write) && r.real.starts_with(&canon) {
                        keep[i] = true;
                    }
                }
            }
            // A directory inside a write root: resolved beneath the root's
            // handle, so what we keep is the handle resolution reached.
            let Ok(resolved) = self.resolve(a, Access::Write) else {
                continue;
            };
            if resolved.kind() != Some(Kind::Dir) {
                continue;
            }
            let Some(obj) = resolved.object.as_ref() else {
                continue;
            };
            let real = resolved.real.clone();
            let already = roots.iter().any(|r| r.real == real) || extra.iter().any(|r| r.real == real);
            if !already {
                extra.push(Root {
                    real,
                    alias: None,
                    dir: Arc::clone(&obj.fd),
                    kind: RootKind::Write,
                });
            }
        }
        for (r, keep) in roots.iter_mut().zip(keep) {
            if r.allows(Access::Write) && !keep {
                r.kind = RootKind::Read;
            }
        }
        roots.extend(extra);
        Confinement {
            roots,
            protected: self.protected.clone(),
            reasons: self.reasons.clone(),
            globs: self.globs.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_keeps_inside_and_never_widens() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), ws.join("link")).unwrap();
        let conf = Confinement::builder(&ws).temp_dir(None).build().unwrap();

        // A subdirectory of the workspace: only it is writable.
        let n = conf.narrow_writes(&[ws.join("sub")]);
        assert!(n.resolve("sub/a.txt", Access::Write).is_ok());
        assert!(n.resolve("a.txt", Access::Write).unwrap_err().is_refusal());
        assert!(n.resolve("a.txt", Access::Read).is_ok());
        assert!(n.resolve("sub/../a.txt", Access::Write).is_err());

        // Outside the roots, or a link leading outside: nothing is writable.
        let n = conf.narrow_writes(&[base.join("outside"), ws.join("link")]);
        assert!(n.resolve("sub/a.txt", Access::Write).unwrap_err().is_refusal());
        assert!(
            n.resolve(base.join("outside/a.txt"), Access::Write)
                .unwrap_err()
                .is_refusal()
        );

        // A parent of the workspace keeps the workspace writable, no more.
        let n = conf.narrow_writes(std::slice::from_ref(&base));
        assert!(n.resolve("a.txt", Access::Write).is_ok());
        assert!(
            n.resolve(base.join("outside/a.txt"), Access::Write)
                .unwrap_err()
                .is_refusal()
        );
    }

    #[test]
    fn each_allowed_directory_becomes_one_write_root() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(ws.join("a")).unwrap();
        std::fs::create_dir_all(ws.join("b")).unwrap();
        std::fs::write(ws.join("f"), "").unwrap();
        let conf = Confinement::builder(&ws).temp_dir(None).build().unwrap();
        let n = conf.narrow_writes(&[ws.join("a"), ws.join("b"), ws.join("a"), ws.join("f"), "rel".into()]);
        assert_eq!(n.roots(Access::Write), vec![ws.join("a"), ws.join("b")]);
        // The workspace itself allowed, twice: it stays the one root.
        let n = conf.narrow_writes(&[ws.clone(), ws.clone()]);
        assert_eq!(n.roots(Access::Write), vec![ws.clone()]);
        assert_eq!(n.describe().len(), 1);
    }
}
