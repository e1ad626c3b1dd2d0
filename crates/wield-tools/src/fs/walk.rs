//! The directory walk shared by ls, glob and grep: ripgrep's `ignore`
//! walker with ripgrep's defaults (hidden files skipped, `.gitignore`,
//! `.ignore` and `.rgignore` honoured), links not followed.
//!
//! One deliberate difference from ripgrep: `.gitignore` files apply even
//! outside a git repository (ripgrep's `--no-require-git`), because a
//! workspace is often a plain directory and its ignore files still say what
//! is noise.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use wield_sandbox::fs::{Access, Confinement};

use super::fail;
use wield_core::ToolResult;

/// How a walk filters what it yields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Filters {
    /// Include hidden (dot) files and directories.
    pub(crate) hidden: bool,
    /// Honour ignore files.
    pub(crate) ignore: bool,
}

impl Filters {
    pub(crate) const STANDARD: Self = Self {
        hidden: false,
        ignore: true,
    };
}

pub(crate) fn builder(root: &Path, filters: Filters) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(!filters.hidden)
        .ignore(filters.ignore)
        .git_ignore(filters.ignore)
        .git_global(filters.ignore)
        .git_exclude(filters.ignore)
        .parents(filters.ignore)
        .require_git(false)
        .follow_links(false);
    if filters.ignore {
        b.add_custom_ignore_filename(".rgignore");
    }
    b
}

/// Where a walk starts: the real path of `path` (default the workspace),
/// and whether it is a single file rather than a directory.
pub(crate) fn start(conf: &Confinement, path: Option<&str>) -> Result<(PathBuf, bool), ToolResult> {
    let path = path.filter(|p| !p.is_empty()).unwrap_or(".");
    let resolved = conf.resolve(path, Access::Read).map_err(|e| fail(&e))?;
    match resolved.kind() {
        None => Err(ToolResult::error(format!("{path}: no such file or directory"))),
        Some(wield_sandbox::fs::Kind::Dir) => Ok((resolved.real_path().to_path_buf(), false)),
        Some(_) => Ok((resolved.real_path().to_path_buf(), true)),
    }
}
