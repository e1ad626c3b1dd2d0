//! `sandbox.protected` globs for commands. The process sandboxes protect a
//! list of paths (read-only binds, Landlock grants that leave them out), so
//! each glob is expanded, when the settings are built, to the paths that
//! match it then. A path a command creates later that matches a glob is not
//! protected from that command (the file tools still refuse it).

use std::path::{Component, Path, PathBuf};

use ignore::WalkBuilder;
use wield_sandbox::fs::ProtectedGlobs;

use crate::SetupError;

/// Walking more entries than this to expand the globs is an error (fail
/// closed: a glob left unexpanded would protect nothing).
const MAX_ENTRIES: usize = 1_000_000;

/// The existing paths matching `globs` (relative ones anchored at
/// `workspace`), topmost matches only: a matched directory covers what is
/// below it. `.git` directories are not entered.
pub(crate) fn expand(globs: &[String], workspace: &Path) -> Result<Vec<PathBuf>, SetupError> {
    if globs.is_empty() {
        return Ok(Vec::new());
    }
    let set = ProtectedGlobs::new(globs).map_err(|e| SetupError::Invalid(format!("sandbox.protected: {e}")))?;
    let mut bases: Vec<PathBuf> = Vec::new();
    for g in globs {
        let base = if g.starts_with('/') {
            literal_prefix(Path::new(g))
        } else {
            workspace.to_path_buf()
        };
        if !bases.iter().any(|b| base.starts_with(b)) {
            bases.retain(|b| !b.starts_with(&base));
            bases.push(base);
        }
    }
    let mut found = Vec::new();
    let mut seen = 0usize;
    for base in bases {
        if !base.exists() {
            continue;
        }
        let walk = WalkBuilder::new(&base)
            .standard_filters(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walk {
            let Ok(entry) = entry else { continue };
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(SetupError::Invalid(format!(
                    "sandbox.protected: expanding the globs {} walked more than {MAX_ENTRIES} entries under {}; \
                     use narrower globs or plain paths",
                    globs.join(", "),
                    base.display()
                )));
            }
            let path = entry.path();
            let covered = path.parent().is_some_and(|p| set.matching(p, workspace).is_some());
            if !covered && set.matching(path, workspace).is_some() {
                found.push(path.to_path_buf());
            }
        }
    }
    Ok(found)
}

/// The components of an absolute glob before the first one with a glob
/// character: where its matches can be.
fn literal_prefix(glob: &Path) -> PathBuf {
    glob.components()
        .take_while(|c| match c {
            Component::Normal(n) => !n.to_str().is_some_and(wield_sandbox::fs::is_glob),
            _ => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_to_existing_topmost_matches() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for f in [
            "secrets/a",
            "x/secrets/b",
            "x/secrets/d/e",
            "config/prod.toml",
            "other/c",
        ] {
            std::fs::create_dir_all(ws.join(f).parent().unwrap()).unwrap();
            std::fs::write(ws.join(f), "").unwrap();
        }
        let mut got = expand(&["**/secrets/*".into(), "config/*.toml".into()], ws).unwrap();
        got.sort();
        let want: Vec<PathBuf> = ["config/prod.toml", "secrets/a", "x/secrets/b", "x/secrets/d"]
            .iter()
            .map(|p| ws.join(p))
            .collect();
        assert_eq!(got, want);
        assert_eq!(literal_prefix(Path::new("/etc/a*/b")), PathBuf::from("/etc"));
    }
}
