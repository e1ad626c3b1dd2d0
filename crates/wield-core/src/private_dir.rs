//! Directories only their user may enter: where saved outputs, server
//! tokens and memory are kept.

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

/// Like [`ensure_private_dir`], but an existing directory of this user's
/// that others may enter (one made before wield kept it private) is closed
/// to them first (mode 0700). The mode is changed on the directory that was
/// opened, without following a link, so a link put in its place is refused
/// rather than having its target's mode changed.
pub fn make_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if !dir.is_dir() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)?;
    let meta = opened.metadata()?;
    // SAFETY: geteuid cannot fail and touches no memory.
    let me = unsafe { libc::geteuid() };
    if meta.uid() == me && meta.mode() & 0o077 != 0 {
        opened.set_permissions(std::fs::Permissions::from_mode(0o700))?;
    }
    ensure_private_dir(dir)
}

/// A directory of wield's own state in a workspace (`.wield/sessions`,
/// `.wield/outputs`): private ([`ensure_private_dir`]), and, when it is
/// made, holding a `.gitignore` of `*`, so that what wield keeps there never
/// shows in the repository's `git status` nor is committed by accident.
pub fn ensure_state_dir(dir: &Path) -> io::Result<()> {
    let new = !dir.is_dir();
    ensure_private_dir(dir)?;
    if new {
        std::fs::write(dir.join(".gitignore"), "*\n")?;
    }
    Ok(())
}

/// Have git ignore `name`, a file of wield's own state directly in `dir`
/// (`.wield/history`): `dir/.gitignore` lists it (and itself) when it
/// does not exist yet; one the person wrote is left alone.
pub fn ignore_state_file(dir: &Path, name: &str) {
    use std::io::Write;
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(".gitignore"))
    {
        let _ = write!(
            file,
            "# wield's own state here, never committed (config.toml, tools/ and the like are yours).\n/.gitignore\n/{name}\n"
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// Regression: a directory made open to others (0755) stayed so.
    #[test]
    fn an_open_directory_of_this_user_is_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("memory");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(ensure_private_dir(&dir).is_err());
        make_private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(make_private_dir(&link).is_err());
    }
}
