//! Directories only their user may enter: where saved outputs and server
//! tokens are kept.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// Make `dir` (and its missing parents) with mode 0700 when it is missing,
/// then check that it is a directory, not a link, of this user's, that no
/// one else may enter: else an error of kind `PermissionDenied`.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    if !dir.is_dir() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid cannot fail and touches no memory.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of this user (a directory, mode 700)",
                dir.display()
            ),
        ));
    }
    Ok(())
}
