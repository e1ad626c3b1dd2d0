//! What file tools may never write, beyond the roots: project state (`.git`
//! and `.wield` at any depth) and the protected list (paths and globs).
//!
//! Project state is refused by name, component by component, on both the
//! path as given and the real path resolution reached, so neither a nested
//! `sub/.git/config` nor a link `docs -> ../.git` gets through. Names are
//! compared without regard to ASCII case: on a case-insensitive file system
//! `.GIT/config` is `.git/config`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::ConfineError;

/// Directory (or file, for `.git`) names that file tools never create or
/// change anything in, at any depth: git runs hooks and `core.fsmonitor`
/// from `.git`, and wield runs hooks named in `.wield/config.toml`.
pub const PROJECT_STATE: &[&str] = &[".git", ".wield"];

/// The first component of `rest` that names project state, if any.
pub(crate) fn state_component(rest: &Path) -> Option<&OsStr> {
    rest.components().find_map(|c| match c {
        Component::Normal(name) if is_state_name(name) => Some(name),
        _ => None,
    })
}

/// The first directory from `root` down along `rest` (the root itself and
/// `rest` included) that git would take for a git directory whatever its
/// name, or would once `rest` is created: one holding `objects/` and
/// `refs/` (a repository, or the common directory a linked worktree's
/// `commondir` names, where its config and hooks are), or `HEAD` and
/// `commondir` (a linked worktree's own). A `.git` file (`gitdir:
/// ../store`) or a bare repository makes one of any name, and so would a
/// directory given its `objects/` last, after a `config` naming a program:
/// git finds such a directory (the workspace itself, when it has no
/// `.git`) from every directory below it.
pub(crate) fn git_dir_within(root: &Path, rest: &Path) -> Option<PathBuf> {
    let target = root.join(rest);
    let is_git_dir = |dir: &Path| {
        let has = |name: &str, want_dir: bool| {
            let path = dir.join(name);
            target.starts_with(&path)
                || std::fs::metadata(&path).is_ok_and(|m| if want_dir { m.is_dir() } else { m.is_file() })
        };
        // `objects` first: the rarest of these in ordinary trees.
        (has("objects", true) && has("refs", true)) || (has("commondir", false) && has("HEAD", false))
    };
    let mut dir = root.to_path_buf();
    if is_git_dir(&dir) {
        return Some(dir);
    }
    for c in rest.components() {
        match c {
            Component::Normal(name) => dir.push(name),
            _ => return None,
        }
        if is_git_dir(&dir) {
            return Some(dir);
        }
    }
    None
}

fn is_state_name(name: &OsStr) -> bool {
    PROJECT_STATE
        .iter()
        .any(|s| name.as_bytes().eq_ignore_ascii_case(s.as_bytes()))
}

/// Whether a `sandbox.protected` entry is a glob rather than a plain path.
pub fn is_glob(entry: &str) -> bool {
    entry.contains(['*', '?', '[', '{'])
}

/// The glob entries of `sandbox.protected`. A relative glob is anchored at
/// the workspace (`config/prod.toml`, `**/secrets/*`); an absolute one is
/// matched against the whole path. A path is protected when it or one of
/// its ancestors matches, so `**/secrets` protects everything below such a
/// directory.
#[derive(Clone, Debug, Default)]
pub struct ProtectedGlobs {
    relative: Option<GlobSet>,
    absolute: Option<GlobSet>,
    /// The entries as written, for messages, in the order of the sets.
    relative_text: Vec<String>,
    absolute_text: Vec<String>,
}

impl ProtectedGlobs {
    /// Compile the glob entries (`*` does not cross `/`; `**` does).
    pub fn new<I, S>(globs: I) -> Result<Self, ConfineError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::build(globs, false)
    }

    /// [`ProtectedGlobs::new`], matching without regard to case (for names
    /// that matter on case-insensitive file systems too).
    pub fn new_case_insensitive<I, S>(globs: I) -> Result<Self, ConfineError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::build(globs, true)
    }

    fn build<I, S>(globs: I, case_insensitive: bool) -> Result<Self, ConfineError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut relative = GlobSetBuilder::new();
        let mut absolute = GlobSetBuilder::new();
        let mut out = Self::default();
        for g in globs {
            let text = g.as_ref();
            let glob = GlobBuilder::new(text.trim_start_matches("./"))
                .literal_separator(true)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|e| ConfineError::BadGlob {
                    glob: text.to_owned(),
                    reason: e.kind().to_string(),
                })?;
            if text.starts_with('/') {
                absolute.add(glob);
                out.absolute_text.push(text.to_owned());
            } else {
                relative.add(glob);
                out.relative_text.push(text.to_owned());
            }
        }
        let build = |b: GlobSetBuilder, texts: &[String]| -> Result<Option<GlobSet>, ConfineError> {
            if texts.is_empty() {
                return Ok(None);
            }
            b.build().map(Some).map_err(|e| ConfineError::BadGlob {
                glob: texts.join(", "),
                reason: e.to_string(),
            })
        };
        out.relative = build(relative, &out.relative_text)?;
        out.absolute = build(absolute, &out.absolute_text)?;
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.relative.is_none() && self.absolute.is_none()
    }

    /// The glob that protects `abs` (or one of its ancestors), if any;
    /// `workspace` anchors the relative globs.
    pub fn matching(&self, abs: &Path, workspace: &Path) -> Option<&str> {
        if let (Some(set), Ok(rel)) = (&self.relative, abs.strip_prefix(workspace))
            && let Some(i) = first_match(set, rel)
        {
            return Some(&self.relative_text[i]);
        }
        if let Some(set) = &self.absolute
            && let Some(i) = first_match(set, abs)
        {
            return Some(&self.absolute_text[i]);
        }
        None
    }
}

/// The index of a glob matching `path` or one of its (non-empty) ancestors.
fn first_match(set: &GlobSet, path: &Path) -> Option<usize> {
    path.ancestors()
        .filter(|p| !p.as_os_str().is_empty() && p != &Path::new("/"))
        .find_map(|p| set.matches(p).first().copied())
}

/// Split `sandbox.protected` entries into plain paths and globs.
pub fn split_protected<I, S>(entries: I) -> (Vec<PathBuf>, Vec<String>)
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut paths = Vec::new();
    let mut globs = Vec::new();
    for e in entries {
        let e = e.as_ref();
        if is_glob(e) {
            globs.push(e.to_owned());
        } else {
            paths.push(PathBuf::from(e));
        }
    }
    (paths, globs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_at_any_depth_and_any_case() {
        for p in [
            ".git",
            ".git/config",
            "sub/.git/config",
            "a/b/.wield/config.toml",
            ".GIT/hooks",
            "x/.Wield",
        ] {
            assert!(state_component(Path::new(p)).is_some(), "{p}");
        }
        for p in [
            "src/git",
            ".github/workflows/ci.yml",
            ".gitignore",
            ".wieldrc",
            "a/git/.gitx",
        ] {
            assert!(state_component(Path::new(p)).is_none(), "{p}");
        }
    }

    #[test]
    fn git_directories_are_known_by_their_contents() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["store/objects", "store/refs", "plain/objects"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("store/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(
            git_dir_within(root, Path::new("store/hooks/pre-commit")),
            Some(root.join("store"))
        );
        assert_eq!(git_dir_within(root, Path::new("store")), Some(root.join("store")));
        assert_eq!(git_dir_within(root, Path::new("plain/objects/x")), None);
        // A linked worktree's git directory and the common one it names.
        for d in ["common/objects", "common/refs", "wt"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("wt/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("wt/commondir"), "../common\n").unwrap();
        assert_eq!(
            git_dir_within(root, Path::new("common/config")),
            Some(root.join("common"))
        );
        assert_eq!(
            git_dir_within(root, Path::new("wt/config.worktree")),
            Some(root.join("wt"))
        );
        assert_eq!(git_dir_within(root, Path::new("new/file")), None);
        // The piece that would make a directory one, the root included.
        assert_eq!(git_dir_within(root, Path::new("plain/refs")), Some(root.join("plain")));
        assert_eq!(
            git_dir_within(root, Path::new("plain/refs/heads/x")),
            Some(root.join("plain"))
        );
        assert_eq!(
            git_dir_within(&root.join("plain"), Path::new("refs")),
            Some(root.join("plain"))
        );
        std::fs::create_dir_all(root.join("plain/refs")).unwrap();
        assert_eq!(
            git_dir_within(&root.join("plain"), Path::new("config")),
            Some(root.join("plain"))
        );
    }

    #[test]
    fn globs_anchor_at_the_workspace_and_cover_descendants() {
        let ws = Path::new("/w");
        let g = ProtectedGlobs::new(["**/secrets/*", "config/prod.toml", "/etc/**"]).unwrap();
        assert_eq!(g.matching(Path::new("/w/secrets/a"), ws), Some("**/secrets/*"));
        assert_eq!(g.matching(Path::new("/w/x/y/secrets/a/deep"), ws), Some("**/secrets/*"));
        assert_eq!(
            g.matching(Path::new("/w/config/prod.toml"), ws),
            Some("config/prod.toml")
        );
        assert_eq!(g.matching(Path::new("/w/sub/config/prod.toml"), ws), None);
        assert_eq!(g.matching(Path::new("/w/secrets"), ws), None);
        assert_eq!(g.matching(Path::new("/etc/passwd"), ws), Some("/etc/**"));
        assert!(ProtectedGlobs::new(["a/[b"]).is_err());
    }

    #[test]
    fn a_relative_glob_never_matches_outside_the_workspace() {
        let g = ProtectedGlobs::new(["**/secrets/*"]).unwrap();
        assert_eq!(g.matching(Path::new("/elsewhere/secrets/a"), Path::new("/w")), None);
        // An absolute glob matches outside it, and the relative one still
        // answers first inside it.
        let g = ProtectedGlobs::new(["/etc/*", "**/*.pem"]).unwrap();
        assert_eq!(g.matching(Path::new("/etc/hosts"), Path::new("/w")), Some("/etc/*"));
        assert_eq!(g.matching(Path::new("/w/k.pem"), Path::new("/w")), Some("**/*.pem"));
        assert_eq!(g.matching(Path::new("/w/k.txt"), Path::new("/w")), None);
    }

    #[test]
    fn each_glob_is_named_by_its_own_text() {
        let ws = Path::new("/w");
        let g = ProtectedGlobs::new(["a/*", "./b/*", "/x/*", "/y/*"]).unwrap();
        assert_eq!(g.matching(Path::new("/w/a/1"), ws), Some("a/*"));
        assert_eq!(g.matching(Path::new("/w/b/1"), ws), Some("./b/*"));
        assert_eq!(g.matching(Path::new("/x/1"), ws), Some("/x/*"));
        assert_eq!(g.matching(Path::new("/y/1"), ws), Some("/y/*"));
        assert_eq!(g.matching(Path::new("/w/c/1"), ws), None);
    }

    #[test]
    fn a_glob_matching_the_root_or_nothing_protects_nothing_by_itself() {
        // `first_match` skips the empty path and `/`: a glob that matches
        // either must not protect the whole tree.
        let g = ProtectedGlobs::new(["/"]).unwrap();
        assert_eq!(g.matching(Path::new("/w/a"), Path::new("/w")), None);
        let g = ProtectedGlobs::new(["*"]).unwrap();
        assert_eq!(g.matching(Path::new("/w"), Path::new("/w")), None);
        assert_eq!(g.matching(Path::new("/w/a/b"), Path::new("/w")), Some("*"));
    }

    #[test]
    fn globs_match_case_only_when_asked_to_ignore_it() {
        let ws = Path::new("/w");
        let exact = ProtectedGlobs::new(["**/secrets/*"]).unwrap();
        let folded = ProtectedGlobs::new_case_insensitive(["**/secrets/*"]).unwrap();
        assert_eq!(exact.matching(Path::new("/w/SECRETS/a"), ws), None);
        assert_eq!(folded.matching(Path::new("/w/SECRETS/a"), ws), Some("**/secrets/*"));
        assert_eq!(folded.matching(Path::new("/w/Secrets/a/b"), ws), Some("**/secrets/*"));
        assert_eq!(folded.matching(Path::new("/w/other/a"), ws), None);
        assert!(ProtectedGlobs::new_case_insensitive(["a/[b"]).is_err());
    }

    #[test]
    fn an_empty_glob_set_says_so() {
        assert!(ProtectedGlobs::new(Vec::<String>::new()).unwrap().is_empty());
        assert!(!ProtectedGlobs::new(["a/*"]).unwrap().is_empty());
        assert!(!ProtectedGlobs::new(["/a/*"]).unwrap().is_empty());
    }

    #[test]
    fn glob_characters_make_an_entry_a_glob() {
        for e in ["*.pem", "a/?", "[ab]", "{a,b}"] {
            assert!(is_glob(e), "{e}");
        }
        for e in [".wield", "config/prod.toml", "/etc/passwd"] {
            assert!(!is_glob(e), "{e}");
        }
    }

    #[test]
    fn protected_entries_split_into_paths_and_globs_and_none_is_dropped() {
        let (paths, globs) = split_protected([".wield", "**/secrets/*", "/etc/app", "config/*.toml"]);
        assert_eq!(paths, vec![PathBuf::from(".wield"), PathBuf::from("/etc/app")]);
        assert_eq!(globs, vec!["**/secrets/*".to_owned(), "config/*.toml".to_owned()]);
        let (paths, globs) = split_protected(Vec::<String>::new());
        assert!(paths.is_empty() && globs.is_empty());
    }

    #[test]
    fn git_dir_needs_both_of_a_pair_and_of_the_right_kind() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Only one of each pair: not a git directory.
        std::fs::create_dir_all(root.join("onlyrefs/refs")).unwrap();
        std::fs::create_dir_all(root.join("onlyhead")).unwrap();
        std::fs::write(root.join("onlyhead/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("onlycommon")).unwrap();
        std::fs::write(root.join("onlycommon/commondir"), "..\n").unwrap();
        for d in ["onlyrefs", "onlyhead", "onlycommon"] {
            assert_eq!(git_dir_within(root, &Path::new(d).join("x")), None, "{d}");
        }
        // `objects` and `refs` must be directories, `HEAD` and `commondir`
        // files.
        std::fs::create_dir_all(root.join("files")).unwrap();
        std::fs::write(root.join("files/objects"), "").unwrap();
        std::fs::write(root.join("files/refs"), "").unwrap();
        std::fs::create_dir_all(root.join("dirs/HEAD")).unwrap();
        std::fs::create_dir_all(root.join("dirs/commondir")).unwrap();
        for d in ["files", "dirs"] {
            assert_eq!(git_dir_within(root, &Path::new(d).join("x")), None, "{d}");
        }
        // Writing the missing half of a worktree's pair makes one.
        assert_eq!(
            git_dir_within(root, Path::new("onlyhead/commondir")),
            Some(root.join("onlyhead"))
        );
        assert_eq!(
            git_dir_within(root, Path::new("onlycommon/HEAD")),
            Some(root.join("onlycommon"))
        );
        assert_eq!(
            git_dir_within(root, Path::new("onlyrefs/objects/pack")),
            Some(root.join("onlyrefs"))
        );
    }

    #[test]
    fn the_root_itself_can_be_the_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("objects")).unwrap();
        std::fs::create_dir_all(root.join("refs")).unwrap();
        assert_eq!(git_dir_within(root, Path::new("a/b")), Some(root.to_path_buf()));
        assert_eq!(git_dir_within(root, Path::new("")), Some(root.to_path_buf()));
    }

    #[test]
    fn a_git_directory_is_found_below_the_first_level() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b/repo/objects")).unwrap();
        std::fs::create_dir_all(root.join("a/b/repo/refs")).unwrap();
        assert_eq!(
            git_dir_within(root, Path::new("a/b/repo/hooks/pre-commit")),
            Some(root.join("a/b/repo"))
        );
        assert_eq!(git_dir_within(root, Path::new("a/b/other")), None);
        // A path that climbs is not walked by name.
        assert_eq!(git_dir_within(root, Path::new("a/../a/b/repo/x")), None);
    }
}
