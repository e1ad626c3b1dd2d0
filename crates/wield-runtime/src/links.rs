//! Symbolic links on the way to a file wield runs as policy (a Lua
//! approval function, a hook script): a sandbox can keep what a link leads
//! to read-only, not the link itself, which a command could point
//! elsewhere. Such files are refused rather than guarded.

use std::path::{Path, PathBuf};

/// The first symbolic link on `path`, from its file name up to `top` (the
/// canonical workspace; `top` itself, and what lies above it, are the
/// person's choice and not looked at), or up to the file's own directory
/// when `path` is not beneath `top`: `None` when no such component is a
/// link.
pub(crate) fn linked(path: &Path, top: &Path) -> Option<PathBuf> {
    let beneath = path.starts_with(top);
    let mut at = Some(path);
    let mut seen = 0;
    while let Some(p) = at {
        if (beneath && p == top) || (!beneath && seen == 2) {
            break;
        }
        if p.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
            return Some(p.to_path_buf());
        }
        at = p.parent();
        seen += 1;
    }
    None
}
