//! Files wield reads for itself (attachments, skills, memory, Lua modules):
//! opened once, then checked to be a regular file on an ordinary file
//! system, and read from that same descriptor.
//!
//! A path can be checked and then swapped before it is opened (a link to
//! `/proc/self/environ` put in place of a file a model may change), so the
//! check is made on what was opened, never on the path: `fstat` says it is
//! a regular file and `fstatfs` that it is not on one of the kernel's
//! pseudo file systems, whose "files" are the process's environment, its
//! memory maps or the machine's state rather than anyone's documents.

use std::fs::{File, Metadata};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use super::resolve::{Final, Kind, Missing, kind_of};
use super::{Access, ConfineError, Confinement};

/// The magic numbers (`statfs.f_type`) of the kernel's pseudo file systems
/// and their names, for the message. Their files describe the running
/// system (a process's environment, keys, devices), never a document.
const KERNEL_FILE_SYSTEMS: &[(u32, &str)] = &[
    (0x0000_9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0x0027_e0eb, "cgroupfs"),
    (0x6367_7270, "cgroup2fs"),
    (0x6265_6570, "configfs"),
    (0xcafe_4a11, "bpffs"),
    (0x6165_676c, "pstorefs"),
    (0xde5e_81e4, "efivarfs"),
    (0x4249_4e4d, "binfmt_misc"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x6573_5543, "fusectl"),
];

/// devtmpfs reports the magic number of tmpfs, so it is told apart by
/// being the file system `/dev` is on.
const TMPFS_MAGIC: u32 = 0x0102_1994;

/// Check that `file` (opened as `shown`) is a regular file on an ordinary
/// file system, and return its status. Refused: anything but a regular
/// file, and files of procfs, sysfs, devtmpfs and the kernel's other pseudo
/// file systems.
pub fn check_ordinary(file: &File, shown: &str) -> Result<Metadata, ConfineError> {
    let stat = rustix::fs::fstat(file.as_fd()).map_err(|e| ConfineError::from_errno(shown, e))?;
    match kind_of(&stat) {
        Kind::File => {}
        Kind::Dir => return Err(ConfineError::IsADirectory { path: shown.to_owned() }),
        Kind::Symlink => return Err(ConfineError::Changed { path: shown.to_owned() }),
        Kind::Other(kind) => {
            return Err(ConfineError::NotRegular {
                path: shown.to_owned(),
                kind,
            });
        }
    }
    let meta = file.metadata().map_err(|e| ConfineError::from_io(shown, e))?;
    check_file_system(file, &meta, shown)?;
    Ok(meta)
}

/// Refuse a file of one of the kernel's pseudo file systems.
fn check_file_system(file: &File, meta: &Metadata, shown: &str) -> Result<(), ConfineError> {
    let fs = rustix::fs::fstatfs(file.as_fd()).map_err(|e| ConfineError::from_errno(shown, e))?;
    // The magic numbers are 32-bit values, whatever width the field has on
    // this platform.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let magic = fs.f_type as u32;
    if let Some((_, name)) = KERNEL_FILE_SYSTEMS.iter().find(|(m, _)| *m == magic) {
        return Err(ConfineError::SystemFile {
            path: shown.to_owned(),
            fs: name,
        });
    }
    if magic == TMPFS_MAGIC && std::fs::metadata("/dev").is_ok_and(|dev| dev.dev() == meta.dev()) {
        return Err(ConfineError::SystemFile {
            path: shown.to_owned(),
            fs: "devtmpfs",
        });
    }
    Ok(())
}

impl Confinement {
    /// Open an existing file for wield's own reading: resolved beneath the
    /// roots (links followed only while they stay inside), opened by name
    /// in the directory handle the resolution holds without following a
    /// link, and checked with [`check_ordinary`] on the descriptor that was
    /// opened. Read from the returned file; never open the path again.
    pub fn open_ordinary(&self, path: impl AsRef<Path>) -> Result<(File, Metadata), ConfineError> {
        let r = self.walk(path.as_ref(), Access::Read, Final::Follow, Missing::Error)?;
        // The opened file is already known to be the regular file that was
        // resolved; only its file system is left to check.
        let (file, meta) = self.open_resolved_with_metadata(&r)?;
        check_file_system(&file, &meta, &r.shown)?;
        Ok((file, meta))
    }
}

/// Open a file a person named in wield's configuration (a Lua tool file, a
/// policy script) once, following links as such paths may, and check what
/// was opened with [`check_ordinary`]. Without blocking: a named pipe put in
/// its place is refused, not waited on.
pub fn open_ordinary_path(path: &Path) -> Result<(File, Metadata), ConfineError> {
    let shown = path.display().to_string();
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| ConfineError::from_errno(&shown, e))?;
    let file = File::from(fd);
    let meta = check_ordinary(&file, &shown)?;
    Ok((file, meta))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Regression: an attachment that had become a link to
    /// `/proc/self/environ` was opened and sent. The opened descriptor is
    /// what is checked, so a procfs file is refused however it was reached.
    #[test]
    fn a_file_on_proc_is_refused() {
        let file = File::open("/proc/self/environ").unwrap();
        let err = check_ordinary(&file, "/proc/self/environ").unwrap_err();
        assert!(matches!(err, ConfineError::SystemFile { fs: "procfs", .. }), "{err}");
        assert!(err.to_string().contains("procfs"), "{err}");
        let err = open_ordinary_path(Path::new("/proc/self/status")).unwrap_err();
        assert!(matches!(err, ConfineError::SystemFile { .. }), "{err}");
    }

    #[test]
    fn sysfs_and_devices_are_refused_and_ordinary_files_pass() {
        if let Ok(file) = File::open("/sys/kernel/mm/transparent_hugepage/enabled") {
            let err = check_ordinary(&file, "sysfs file").unwrap_err();
            assert!(matches!(err, ConfineError::SystemFile { fs: "sysfs", .. }), "{err}");
        }
        let err = open_ordinary_path(Path::new("/dev/null")).unwrap_err();
        assert!(matches!(err, ConfineError::NotRegular { .. }), "{err}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hi").unwrap();
        let (_, meta) = open_ordinary_path(&dir.path().join("a.txt")).unwrap();
        assert_eq!(meta.len(), 2);
    }

    /// A link inside the root to a procfs file is refused by the
    /// resolution (it leads outside), and one to a file inside is read.
    #[test]
    fn open_ordinary_refuses_a_link_out_to_proc() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("sub/notes.txt")).unwrap();
        std::fs::write(dir.path().join("real.txt"), "text").unwrap();
        std::os::unix::fs::symlink("../real.txt", dir.path().join("sub/inside.txt")).unwrap();
        let conf = Confinement::builder(dir.path()).build().unwrap();
        let err = conf.open_ordinary("sub/notes.txt").unwrap_err();
        assert!(matches!(err, ConfineError::Outside { .. }), "{err}");
        let (_, meta) = conf.open_ordinary("sub/inside.txt").unwrap();
        assert_eq!(meta.len(), 4);
        // With /proc itself a root, the file system check still refuses.
        let conf = Confinement::builder(dir.path())
            .read_root("/proc/self")
            .build()
            .unwrap();
        let err = conf.open_ordinary("/proc/self/environ").unwrap_err();
        assert!(matches!(err, ConfineError::SystemFile { .. }), "{err}");
    }

    /// tmpfs files are ordinary unless they are on the file system `/dev`
    /// is on (devtmpfs reports tmpfs's magic number).
    #[test]
    fn a_tmpfs_file_off_dev_is_ordinary() {
        let (Ok(shm), Ok(dev)) = (std::fs::metadata("/dev/shm"), std::fs::metadata("/dev")) else {
            return;
        };
        if shm.dev() == dev.dev() {
            return;
        }
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            return;
        };
        std::fs::write(dir.path().join("a.txt"), "hi").unwrap();
        let (_, meta) = open_ordinary_path(&dir.path().join("a.txt")).unwrap();
        assert_eq!(meta.len(), 2);
    }

    /// devtmpfs says it is tmpfs: a regular file on the file system `/dev`
    /// is on is still refused (made only where this process may write
    /// there).
    #[test]
    fn a_regular_file_on_the_devices_file_system_is_refused() {
        let Ok(dir) = tempfile::tempdir_in("/dev") else {
            return;
        };
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hi").unwrap();
        let on_dev_fs = rustix::fs::statfs(&path).unwrap().f_type as u32 == TMPFS_MAGIC;
        if !on_dev_fs {
            return;
        }
        let err = open_ordinary_path(&path).unwrap_err();
        assert!(matches!(err, ConfineError::SystemFile { fs: "devtmpfs", .. }), "{err}");
    }
}
