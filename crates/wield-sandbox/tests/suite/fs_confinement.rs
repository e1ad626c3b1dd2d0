//! Path confinement against real files: every escape, for reading and for
//! writing, must be refused and leave the outside untouched and unread;
//! links that stay inside must work.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::io::Read;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tempfile::TempDir;
use wield_sandbox::fs::{Access, ConfineError, Confinement, Kind, WriteOutcome};

const SECRET: &str = "SECRET-OUTSIDE";

/// base/ws (workspace), base/outside (secret.txt), base/tmp (temp root),
/// base/ro (read root), base/rw (write root).
struct Fixture {
    _dir: TempDir,
    base: PathBuf,
    conf: Confinement,
}

impl Fixture {
    fn new() -> Self {
        let dir = TempDir::new().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        for d in ["ws/sub", "outside", "tmp", "ro", "rw"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        fs::write(base.join("outside/secret.txt"), SECRET).unwrap();
        fs::write(base.join("ws/sub/file.txt"), "inside\n").unwrap();
        fs::write(base.join("ro/doc.txt"), "read only\n").unwrap();
        let conf = Confinement::builder(base.join("ws"))
            .read_root(base.join("ro"))
            .write_root(base.join("rw"))
            .temp_dir(Some(base.join("tmp")))
            .build()
            .unwrap();
        Self { _dir: dir, base, conf }
    }

    fn ws(&self, rel: &str) -> PathBuf {
        self.base.join("ws").join(rel)
    }

    fn outside(&self, rel: &str) -> PathBuf {
        self.base.join("outside").join(rel)
    }

    /// The outside directory holds exactly the secret, unchanged.
    fn assert_outside_untouched(&self) {
        let names: Vec<_> = fs::read_dir(self.outside(""))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("secret.txt")],
            "outside dir changed"
        );
        assert_eq!(fs::read_to_string(self.outside("secret.txt")).unwrap(), SECRET);
    }
}

fn read_all(conf: &Confinement, path: impl AsRef<Path>) -> Result<String, ConfineError> {
    let mut s = String::new();
    conf.open_read(path)?.read_to_string(&mut s).unwrap();
    Ok(s)
}

fn assert_outside(err: ConfineError, access: Access) {
    let msg = err.to_string();
    assert!(
        matches!(err, ConfineError::Outside { access: a, .. } if a == access),
        "expected Outside({access:?}), got: {msg}"
    );
    assert!(msg.contains(&format!("outside the {} roots", access.as_str())), "{msg}");
    assert!(msg.contains("use a path inside them"), "{msg}");
}

/// Try every operation on `path`; all must be refused as outside.
fn assert_all_refused(f: &Fixture, path: &Path) {
    let c = &f.conf;
    assert_outside(read_all(c, path).unwrap_err(), Access::Read);
    assert_outside(c.metadata(path).unwrap_err(), Access::Read);
    assert_outside(c.read_dir(path).unwrap_err(), Access::Read);
    assert_outside(c.real_dir(path, Access::Read).unwrap_err(), Access::Read);
    assert_outside(c.write_atomic(path, b"pwned").unwrap_err(), Access::Write);
    assert_outside(c.create_dir_all(path).unwrap_err(), Access::Write);
    assert_outside(c.resolve(path, Access::Write).unwrap_err(), Access::Write);
    f.assert_outside_untouched();
}

#[test]
fn inside_paths_work_relative_and_absolute() {
    let f = Fixture::new();
    assert_eq!(read_all(&f.conf, "sub/file.txt").unwrap(), "inside\n");
    assert_eq!(read_all(&f.conf, f.ws("sub/file.txt")).unwrap(), "inside\n");
    assert_eq!(read_all(&f.conf, "./sub/../sub/file.txt").unwrap(), "inside\n");
    assert_eq!(
        f.conf.real_path("sub/file.txt", Access::Read).unwrap(),
        f.ws("sub/file.txt")
    );
    assert_eq!(f.conf.display_path(&f.ws("sub/file.txt")), "sub/file.txt");
    assert_eq!(f.conf.display_path(&f.ws("")), ".");
    assert_eq!(
        f.conf.display_path(&f.outside("x")),
        f.outside("x").display().to_string()
    );
}

#[test]
fn dotdot_climbing_out_is_refused() {
    let f = Fixture::new();
    assert_all_refused(&f, Path::new("../outside/secret.txt"));
    assert_all_refused(&f, Path::new("sub/../../outside/new.txt"));
    assert_all_refused(&f, &f.ws("sub/../../outside/secret.txt"));
    assert_all_refused(&f, Path::new("../../../../../../../../etc/passwd"));
    // A refused path creates nothing on its way out.
    assert_all_refused(&f, Path::new("new/dir/../../../outside/x.txt"));
    assert!(!f.ws("new").exists());
}

#[test]
fn absolute_paths_outside_every_root_are_refused() {
    let f = Fixture::new();
    assert_all_refused(&f, &f.outside("secret.txt"));
    assert_all_refused(&f, &f.outside("new.txt"));
    assert_all_refused(&f, Path::new("/etc/passwd"));
    let err = f.conf.open_read("/etc/passwd").unwrap_err().to_string();
    let ws = f.ws("");
    assert!(err.starts_with("path /etc/passwd is outside the read roots ("), "{err}");
    assert!(
        err.contains(&ws.display().to_string().trim_end_matches('/').to_string()),
        "{err}"
    );
}

/// The reference MCP filesystem server's first 2025 CVE: a string-prefix
/// check let `/tmp/x/app-evil` pass for an allowed `/tmp/x/app`.
#[test]
fn cve_prefix_match_sibling_directory_is_refused() {
    let dir = TempDir::new().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(base.join("app")).unwrap();
    fs::create_dir_all(base.join("app-evil")).unwrap();
    fs::create_dir_all(base.join("tmp")).unwrap();
    fs::write(base.join("app-evil/secret.txt"), SECRET).unwrap();
    let conf = Confinement::builder(base.join("app"))
        .read_root(base.join("app"))
        .temp_dir(Some(base.join("tmp")))
        .build()
        .unwrap();
    let evil = base.join("app-evil/secret.txt");
    assert_outside(read_all(&conf, &evil).unwrap_err(), Access::Read);
    assert_outside(conf.write_atomic(&evil, b"pwned").unwrap_err(), Access::Write);
    assert_outside(
        conf.write_atomic(base.join("app-evil/new.txt"), b"x").unwrap_err(),
        Access::Write,
    );
    assert_outside(conf.create_dir_all(base.join("app-evil/d")).unwrap_err(), Access::Write);
    assert!(!conf.contains(&evil, Access::Read));
    assert!(conf.contains(&base.join("app/x"), Access::Read));
    assert_eq!(fs::read_to_string(&evil).unwrap(), SECRET);
    assert!(!base.join("app-evil/new.txt").exists());
    assert!(!base.join("app-evil/d").exists());
}

#[test]
fn symlinked_file_pointing_outside_is_refused() {
    let f = Fixture::new();
    symlink(f.outside("secret.txt"), f.ws("abs-link")).unwrap();
    symlink("../outside/secret.txt", f.ws("rel-link")).unwrap();
    symlink("../../outside/secret.txt", f.ws("sub/deep-link")).unwrap();
    for p in ["abs-link", "rel-link", "sub/deep-link"] {
        let err = read_all(&f.conf, p).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_all_refused(&f, Path::new(p));
    }
    // The links themselves were not replaced either.
    assert!(fs::symlink_metadata(f.ws("abs-link")).unwrap().file_type().is_symlink());
}

#[test]
fn symlinked_directory_pointing_outside_is_refused() {
    let f = Fixture::new();
    symlink(f.outside(""), f.ws("linkdir")).unwrap();
    symlink("../outside", f.ws("rel-linkdir")).unwrap();
    for p in ["linkdir", "rel-linkdir"] {
        assert_all_refused(&f, Path::new(p));
        assert_all_refused(&f, &Path::new(p).join("secret.txt"));
        assert_all_refused(&f, &Path::new(p).join("new.txt"));
        assert_all_refused(&f, &Path::new(p).join("newdir/new.txt"));
    }
}

/// The reference MCP filesystem server's second 2025 CVE: resolving a new
/// file failed (it did not exist yet), the error was caught and the parent
/// was checked as a string, so creating a file through a symlinked parent or
/// a dangling link wrote outside.
#[test]
fn cve_symlink_escape_through_a_caught_error_is_refused() {
    let f = Fixture::new();
    symlink(f.outside(""), f.ws("parent-link")).unwrap();
    symlink(f.outside("created-by-tool.txt"), f.ws("dangling")).unwrap();
    symlink("../outside/created-rel.txt", f.ws("dangling-rel")).unwrap();
    for p in ["parent-link/created.txt", "dangling", "dangling-rel"] {
        assert_outside(f.conf.write_atomic(p, b"pwned").unwrap_err(), Access::Write);
        assert_outside(f.conf.create_dir_all(p).unwrap_err(), Access::Write);
        assert_outside(f.conf.resolve(p, Access::Write).unwrap_err(), Access::Write);
        assert_outside(read_all(&f.conf, p).unwrap_err(), Access::Read);
    }
    f.assert_outside_untouched();
}

#[test]
fn nul_bytes_are_refused() {
    let f = Fixture::new();
    for p in ["sub/file.txt\0", "a\0/../../outside/secret.txt"] {
        assert!(matches!(read_all(&f.conf, p).unwrap_err(), ConfineError::Nul { .. }));
        assert!(matches!(
            f.conf.write_atomic(p, b"x").unwrap_err(),
            ConfineError::Nul { .. }
        ));
        assert!(!f.conf.contains(&f.ws(p), Access::Read));
    }
    f.assert_outside_untouched();
}

#[test]
fn symlinks_inside_the_roots_work() {
    let f = Fixture::new();
    symlink("sub/file.txt", f.ws("rel")).unwrap();
    symlink(f.ws("sub/file.txt"), f.ws("abs")).unwrap();
    symlink("sub", f.ws("dirlink")).unwrap();
    symlink(f.ws("sub"), f.ws("absdir")).unwrap();
    symlink("rel", f.ws("chain")).unwrap();
    symlink("../sub/./file.txt", f.ws("sub/up")).unwrap();
    for p in ["rel", "abs", "dirlink/file.txt", "absdir/file.txt", "chain", "sub/up"] {
        assert_eq!(read_all(&f.conf, p).unwrap(), "inside\n", "{p}");
        assert_eq!(f.conf.real_path(p, Access::Read).unwrap(), f.ws("sub/file.txt"));
    }
    assert_eq!(f.conf.real_dir("absdir", Access::Read).unwrap(), f.ws("sub"));
    // `..` after a directory link is physical: it leaves the link's target.
    assert_eq!(read_all(&f.conf, "absdir/../sub/file.txt").unwrap(), "inside\n");
    // Writing through a link replaces the target and keeps the link.
    assert_eq!(f.conf.write_atomic("abs", b"new\n").unwrap(), WriteOutcome::Replaced);
    assert_eq!(fs::read_to_string(f.ws("sub/file.txt")).unwrap(), "new\n");
    assert!(fs::symlink_metadata(f.ws("abs")).unwrap().file_type().is_symlink());
    // A dangling link inside creates its target.
    symlink("sub/made.txt", f.ws("dangling-inside")).unwrap();
    assert_eq!(
        f.conf.write_atomic("dangling-inside", b"m").unwrap(),
        WriteOutcome::Created
    );
    assert_eq!(fs::read_to_string(f.ws("sub/made.txt")).unwrap(), "m");
    assert_eq!(
        f.conf.write_atomic("dirlink/n/o.txt", b"o").unwrap(),
        WriteOutcome::Created
    );
    assert_eq!(fs::read_to_string(f.ws("sub/n/o.txt")).unwrap(), "o");
}

#[test]
fn links_into_a_read_root_read_but_do_not_write() {
    let f = Fixture::new();
    symlink(f.base.join("ro"), f.ws("docs")).unwrap();
    assert_eq!(read_all(&f.conf, "docs/doc.txt").unwrap(), "read only\n");
    assert_eq!(read_all(&f.conf, "../ro/doc.txt").unwrap(), "read only\n");
    assert_outside(f.conf.write_atomic("docs/doc.txt", b"x").unwrap_err(), Access::Write);
    assert_outside(f.conf.write_atomic("../ro/new.txt", b"x").unwrap_err(), Access::Write);
    assert_outside(f.conf.create_dir_all(f.base.join("ro/d")).unwrap_err(), Access::Write);
    assert_eq!(fs::read_to_string(f.base.join("ro/doc.txt")).unwrap(), "read only\n");
    assert!(!f.base.join("ro/d").exists());
    // Write roots and the temp dir are writable.
    f.conf.write_atomic(f.base.join("rw/a.txt"), b"a").unwrap();
    f.conf.write_atomic(f.base.join("tmp/b.txt"), b"b").unwrap();
    f.conf.write_atomic("../rw/c.txt", b"c").unwrap();
    assert_eq!(fs::read_to_string(f.base.join("rw/c.txt")).unwrap(), "c");
}

#[test]
fn protected_names_are_never_writable() {
    let f = Fixture::new();
    fs::create_dir_all(f.ws(".wield")).unwrap();
    fs::write(f.ws(".wield/config.toml"), "x = 1\n").unwrap();
    symlink(".wield", f.ws("sneaky")).unwrap();
    symlink(f.ws(".wield/config.toml"), f.ws("sneaky-file")).unwrap();
    // `.wield` is both on the protected list and project state.
    let protected = |e: ConfineError| {
        assert!(
            matches!(e, ConfineError::Protected { .. } | ConfineError::ProjectState { .. }),
            "{e}"
        );
    };
    for p in [
        ".wield/config.toml",
        ".wield/approvals.toml",
        "sneaky/config.toml",
        "sneaky-file",
        "sub/../.wield/x",
    ] {
        protected(f.conf.write_atomic(p, b"pwned").unwrap_err());
    }
    protected(f.conf.create_dir_all(".wield/d").unwrap_err());
    protected(f.conf.create_dir_all("sneaky/d").unwrap_err());
    protected(f.conf.remove_file(".wield/config.toml").unwrap_err());
    protected(f.conf.rename(".wield/config.toml", "stolen.toml").unwrap_err());
    protected(f.conf.rename("sub/file.txt", ".wield/config.toml").unwrap_err());
    protected(f.conf.rename(".wield", "moved").unwrap_err());
    assert!(!f.conf.contains(&f.ws(".wield/config.toml"), Access::Write));
    assert!(f.conf.contains(&f.ws(".wield/config.toml"), Access::Read));
    // Reading is fine; nothing changed.
    assert_eq!(read_all(&f.conf, ".wield/config.toml").unwrap(), "x = 1\n");
    assert_eq!(fs::read_to_string(f.ws(".wield/config.toml")).unwrap(), "x = 1\n");
    assert!(!f.ws(".wield/d").exists() && !f.ws(".wield/approvals.toml").exists());
    // Creating the protected directory itself is refused too.
    let g = Fixture::new();
    protected(g.conf.create_dir_all(".wield").unwrap_err());
    protected(g.conf.write_atomic(".wield/config.toml", b"x").unwrap_err());
    assert!(!g.ws(".wield").exists());
}

#[test]
fn the_protected_list_is_configurable() {
    let f = Fixture::new();
    let conf = Confinement::builder(f.ws(""))
        .temp_dir(None)
        .protected([".secrets", "sub/locked", "**/keys/*.pem"])
        .build()
        .unwrap();
    assert!(matches!(
        conf.write_atomic(".secrets/k", b"x").unwrap_err(),
        ConfineError::Protected { .. }
    ));
    assert!(matches!(
        conf.write_atomic("sub/locked", b"x").unwrap_err(),
        ConfineError::Protected { .. }
    ));
    // A glob protects what it matches, anywhere below the workspace.
    for p in ["keys/a.pem", "deep/er/keys/b.pem"] {
        let e = conf.write_atomic(p, b"x").unwrap_err();
        assert!(e.to_string().contains("the glob **/keys/*.pem"), "{e}");
    }
    conf.write_atomic("keys/a.txt", b"x").unwrap();
    // Project state stays refused whatever the list says.
    assert!(matches!(
        conf.write_atomic(".wield/ok.toml", b"x").unwrap_err(),
        ConfineError::ProjectState { .. }
    ));
}

#[test]
fn symlink_loops_end_with_an_error() {
    let f = Fixture::new();
    symlink("b", f.ws("a")).unwrap();
    symlink("a", f.ws("b")).unwrap();
    symlink(".", f.ws("self")).unwrap();
    assert!(matches!(
        read_all(&f.conf, "a").unwrap_err(),
        ConfineError::SymlinkLoop { .. }
    ));
    assert!(matches!(
        f.conf.write_atomic("b", b"x").unwrap_err(),
        ConfineError::SymlinkLoop { .. }
    ));
    // A link to `.` is fine a few times over.
    assert_eq!(read_all(&f.conf, "self/self/self/sub/file.txt").unwrap(), "inside\n");
}

#[test]
fn atomic_write_keeps_the_mode_and_reports_created_or_replaced() {
    let f = Fixture::new();
    let p = f.ws("script.sh");
    fs::write(&p, "old").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o750)).unwrap();
    assert_eq!(
        f.conf.write_atomic("script.sh", b"#!/bin/sh\n").unwrap(),
        WriteOutcome::Replaced
    );
    assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o7777, 0o750);
    assert_eq!(fs::read_to_string(&p).unwrap(), "#!/bin/sh\n");
    assert_eq!(
        f.conf.write_atomic("new/dir/x.txt", b"x").unwrap(),
        WriteOutcome::Created
    );
    assert_eq!(fs::read_to_string(f.ws("new/dir/x.txt")).unwrap(), "x");
    // No temp files are left behind.
    let leftovers: Vec<_> = fs::read_dir(f.ws(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".wield-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(matches!(
        f.conf.write_atomic("sub", b"x").unwrap_err(),
        ConfineError::IsADirectory { .. }
    ));
}

#[test]
fn a_concurrent_reader_never_sees_a_half_written_file() {
    let f = Arc::new(Fixture::new());
    let size = 512 * 1024;
    f.conf.write_atomic("big.txt", &vec![b'a'; size]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (f, stop) = (Arc::clone(&f), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let data = fs::read(f.ws("big.txt")).unwrap();
                assert_eq!(data.len(), size, "a reader saw a partial file");
                assert!(data.iter().all(|b| *b == data[0]), "a reader saw mixed contents");
                reads += 1;
            }
            reads
        })
    };
    for i in 0..60 {
        let byte = if i % 2 == 0 { b'b' } else { b'a' };
        f.conf.write_atomic("big.txt", &vec![byte; size]).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}

/// Swap a directory for a link to the outside, and back, as fast as possible
/// while reading, listing and writing through it: nothing outside may ever be
/// read or written.
#[test]
fn swapping_a_directory_for_a_link_between_check_and_use_never_escapes() {
    let f = Arc::new(Fixture::new());
    fs::write(f.outside("f"), SECRET).unwrap();
    fs::create_dir(f.ws("swap")).unwrap();
    fs::write(f.ws("swap/f"), "inside").unwrap();
    // Keep a real directory and a link ready, and rename them in turn.
    fs::create_dir(f.ws("real")).unwrap();
    fs::write(f.ws("real/f"), "inside").unwrap();
    symlink(f.outside(""), f.ws("evil")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (f, stop) = (Arc::clone(&f), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // swap (dir) -> real2 ; evil (link) -> swap ; then back.
                let _ = fs::rename(f.ws("swap"), f.ws("parked"));
                let _ = fs::rename(f.ws("evil"), f.ws("swap"));
                let _ = fs::rename(f.ws("swap"), f.ws("evil"));
                let _ = fs::rename(f.ws("parked"), f.ws("swap"));
                swaps += 1;
            }
            swaps
        })
    };
    let swap_f = f.ws("swap/f");
    for i in 0..3000 {
        if let Ok(text) = read_all(&f.conf, "swap/f") {
            assert_eq!(text, "inside", "read through a swapped link");
        }
        if let Ok(mut file) = f.conf.open_walked(&swap_f) {
            let mut text = String::new();
            file.read_to_string(&mut text).unwrap();
            assert_eq!(text, "inside", "walked open through a swapped link");
        }
        if let Ok(entries) = f.conf.read_dir("swap") {
            assert!(entries.iter().all(|e| e.name != "secret.txt"), "listed the outside");
        }
        let _ = f.conf.write_atomic(format!("swap/w{}", i % 4), b"tool");
        let _ = f.conf.create_dir_all(format!("swap/d{}", i % 4));
    }
    stop.store(true, Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 0);
    let mut names: Vec<_> = fs::read_dir(f.outside(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["f", "secret.txt"], "something was written outside");
    assert_eq!(fs::read_to_string(f.outside("f")).unwrap(), SECRET);
}

#[test]
fn create_dir_all_is_mkdir_p() {
    let f = Fixture::new();
    assert!(f.conf.create_dir_all("a/b/c").unwrap());
    assert!(f.ws("a/b/c").is_dir());
    assert!(!f.conf.create_dir_all("a/b/c").unwrap());
    assert!(!f.conf.create_dir_all(".").unwrap());
    assert!(matches!(
        f.conf.create_dir_all("sub/file.txt").unwrap_err(),
        ConfineError::ExistsNotDirectory { .. }
    ));
    assert!(matches!(
        f.conf.create_dir_all("sub/file.txt/x").unwrap_err(),
        ConfineError::NotADirectory { .. }
    ));
}

#[test]
fn listing_metadata_rename_and_remove() {
    let f = Fixture::new();
    symlink(f.outside("secret.txt"), f.ws("sub/out-link")).unwrap();
    let entries = f.conf.read_dir("sub").unwrap();
    let kinds: Vec<_> = entries
        .iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![("file.txt".into(), Kind::File), ("out-link".into(), Kind::Symlink)]
    );
    assert_eq!(entries[0].len, 7);
    assert_eq!(f.conf.read_link("sub/out-link").unwrap(), f.outside("secret.txt"));
    assert!(
        f.conf
            .symlink_metadata("sub/out-link")
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(f.conf.metadata("sub/file.txt").unwrap().len(), 7);
    assert!(f.conf.metadata("sub").unwrap().is_dir());
    // Removing a link to the outside removes the link, never the target.
    f.conf.remove_file("sub/out-link").unwrap();
    assert!(!f.ws("sub/out-link").exists());
    f.assert_outside_untouched();
    // Moves inside work and create parents; moves out are refused.
    f.conf.rename("sub/file.txt", "moved/here.txt").unwrap();
    assert_eq!(fs::read_to_string(f.ws("moved/here.txt")).unwrap(), "inside\n");
    assert_outside(
        f.conf.rename("moved/here.txt", f.outside("stolen.txt")).unwrap_err(),
        Access::Write,
    );
    assert_outside(
        f.conf.rename(f.outside("secret.txt"), "got.txt").unwrap_err(),
        Access::Write,
    );
    assert!(f.ws("moved/here.txt").exists());
    f.assert_outside_untouched();
    assert!(matches!(
        f.conf.remove_file("sub").unwrap_err(),
        ConfineError::IsADirectory { .. }
    ));
    assert!(f.conf.remove_file("nope").unwrap_err().is_not_found());
}

#[test]
fn special_files_are_refused_without_hanging() {
    let f = Fixture::new();
    rustix::fs::mkfifoat(rustix::fs::CWD, f.ws("fifo"), rustix::fs::Mode::from_raw_mode(0o644)).unwrap();
    assert!(matches!(
        f.conf.open_read("fifo").unwrap_err(),
        ConfineError::NotRegular { .. }
    ));
    assert!(matches!(
        f.conf.open_walked(&f.ws("fifo")).unwrap_err(),
        ConfineError::NotRegular { .. }
    ));
    assert!(matches!(
        f.conf.write_atomic("fifo", b"x").unwrap_err(),
        ConfineError::NotRegular { .. }
    ));
}

#[test]
fn walker_checks_are_component_wise() {
    let f = Fixture::new();
    let c = &f.conf;
    assert!(c.contains(&f.ws("sub/file.txt"), Access::Write));
    assert!(c.contains(&f.base.join("ro/doc.txt"), Access::Read));
    assert!(!c.contains(&f.base.join("ro/doc.txt"), Access::Write));
    assert!(!c.contains(&f.base.join("ws-evil/x"), Access::Read));
    assert!(!c.contains(&f.ws("../outside/secret.txt"), Access::Read));
    assert!(!c.contains(Path::new("sub/file.txt"), Access::Read));
    // open_walked refuses links anywhere on the path, even inside.
    symlink("sub", f.ws("dirlink")).unwrap();
    assert!(c.open_walked(&f.ws("dirlink/file.txt")).is_err());
    assert!(c.open_walked(&f.ws("sub/file.txt")).is_ok());
    assert_outside(c.open_walked(&f.outside("secret.txt")).unwrap_err(), Access::Read);
    assert_eq!(c.real_dir("sub", Access::Read).unwrap(), f.ws("sub"));
    assert!(matches!(
        c.real_dir("sub/file.txt", Access::Read).unwrap_err(),
        ConfineError::NotADirectory { .. }
    ));
}

#[test]
fn a_workspace_reached_through_a_link_matches_both_spellings() {
    let f = Fixture::new();
    symlink(f.ws(""), f.base.join("ws-alias")).unwrap();
    let conf = Confinement::builder(f.base.join("ws-alias"))
        .temp_dir(None)
        .build()
        .unwrap();
    assert_eq!(conf.workspace(), f.ws("").as_path().components().collect::<PathBuf>());
    assert_eq!(
        read_all(&conf, f.base.join("ws-alias/sub/file.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(read_all(&conf, f.ws("sub/file.txt")).unwrap(), "inside\n");
    assert_eq!(conf.display_path(&f.base.join("ws-alias/sub")), "sub");
}
