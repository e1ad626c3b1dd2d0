//! The patch tool on real temp dirs: rollback when a write fails halfway
//! (with a file layer that fails on purpose), read-before-write for adds
//! over existing files, and what a success records in the session.

use std::cell::Cell;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tempfile::TempDir;
use wield_core::{Context, Services, Session, Tool};
use wield_sandbox::fs::{ConfineError, Confinement};

use super::engine::{self, Files};
use super::*;
use crate::fs::FsSettings;

struct Ws {
    _dir: TempDir,
    root: PathBuf,
    conf: Arc<Confinement>,
    ctx: Context,
}

impl Ws {
    fn new(model_driven: bool) -> Self {
        let dir = TempDir::new().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap().join("ws");
        fs::create_dir_all(&root).unwrap();
        let conf = Arc::new(Confinement::builder(&root).temp_dir(None).build().unwrap());
        let mut services = Services::new();
        services.insert(Arc::clone(&conf));
        services.insert(Arc::new(FsSettings {
            read_before_write: true,
        }));
        let mut ctx = Context::detached(&root);
        ctx.services = Arc::new(services);
        ctx.session = Arc::new(Session::new("test", model_driven));
        Self {
            _dir: dir,
            root,
            conf,
            ctx,
        }
    }

    fn put(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn get(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.root.join(rel)).ok()
    }
}

/// The real confinement, except that the `fail_at`-th write or removal
/// (1-based) fails as a full disk would.
struct FailingFiles<'a> {
    inner: &'a Confinement,
    calls: Cell<usize>,
    fail_at: usize,
}

impl FailingFiles<'_> {
    fn tick(&self, real: &Path) -> Result<(), ConfineError> {
        self.calls.set(self.calls.get() + 1);
        if self.calls.get() == self.fail_at {
            return Err(ConfineError::Io {
                path: real.display().to_string(),
                source: std::io::Error::other("No space left on device"),
            });
        }
        Ok(())
    }
}

impl Files for FailingFiles<'_> {
    fn write(&self, real: &Path, data: &[u8]) -> Result<(), ConfineError> {
        self.tick(real)?;
        Files::write(self.inner, real, data)
    }
    fn remove(&self, real: &Path) -> Result<(), ConfineError> {
        self.tick(real)?;
        Files::remove(self.inner, real)
    }
    fn remove_empty_dir(&self, real: &Path) -> Result<(), ConfineError> {
        Files::remove_empty_dir(self.inner, real)
    }
}

const FOUR_OPS: &str = "*** Begin Patch
*** Update File: a.txt
-a1
+A1
*** Add File: new/deep/n.txt
+new
*** Update File: m.txt
*** Move to: moved/m2.txt
-m1
+M1
*** Delete File: d.txt
*** End Patch";

fn four_op_workspace() -> Ws {
    let ws = Ws::new(false);
    ws.put("a.txt", "a1\n");
    ws.put("m.txt", "m1\n");
    ws.put("d.txt", "d1\n");
    ws
}

fn assert_untouched(ws: &Ws) {
    assert_eq!(ws.get("a.txt").as_deref(), Some("a1\n"));
    assert_eq!(ws.get("m.txt").as_deref(), Some("m1\n"));
    assert_eq!(ws.get("d.txt").as_deref(), Some("d1\n"));
    assert!(!ws.root.join("new").exists(), "created directories are removed again");
    assert!(!ws.root.join("moved").exists(), "created directories are removed again");
    let mut names: Vec<String> = fs::read_dir(&ws.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "d.txt", "m.txt"], "no temp files or stray files left");
}

#[test]
fn a_failure_at_every_write_restores_every_file() {
    // Writes/removals in order: a.txt, new/deep/n.txt, moved/m2.txt,
    // remove m.txt, remove d.txt.
    for fail_at in 1..=5 {
        let ws = four_op_workspace();
        let patch = wield_patch::parse(FOUR_OPS).unwrap();
        let plan = engine::plan(&ws.conf, &patch, &|_| true).unwrap();
        let files = FailingFiles {
            inner: &ws.conf,
            calls: Cell::new(0),
            fail_at,
        };
        let msg = match engine::commit(&files, &plan) {
            Ok(_) => panic!("write {fail_at} was made to fail"),
            Err(m) => m,
        };
        assert!(msg.contains("No space left on device"), "{msg}");
        assert!(msg.contains("Every file was restored"), "{msg}");
        assert_untouched(&ws);
    }
}

#[test]
fn the_same_patch_without_failures_applies_everything() {
    let ws = four_op_workspace();
    let patch = wield_patch::parse(FOUR_OPS).unwrap();
    let plan = engine::plan(&ws.conf, &patch, &|_| true).unwrap();
    let done = engine::commit(&*ws.conf, &plan).unwrap();
    assert_eq!(
        done.lines,
        ["M a.txt", "A new/deep/n.txt", "M m.txt -> moved/m2.txt", "D d.txt"]
    );
    assert_eq!(ws.get("a.txt").as_deref(), Some("A1\n"));
    assert_eq!(ws.get("new/deep/n.txt").as_deref(), Some("new\n"));
    assert_eq!(ws.get("moved/m2.txt").as_deref(), Some("M1\n"));
    assert_eq!(ws.get("m.txt"), None);
    assert_eq!(ws.get("d.txt"), None);
}

#[test]
fn a_replaced_file_keeps_its_mode_after_a_rollback() {
    use std::os::unix::fs::PermissionsExt;
    let ws = four_op_workspace();
    fs::set_permissions(ws.root.join("a.txt"), fs::Permissions::from_mode(0o750)).unwrap();
    let patch = wield_patch::parse(FOUR_OPS).unwrap();
    let plan = engine::plan(&ws.conf, &patch, &|_| true).unwrap();
    let files = FailingFiles {
        inner: &ws.conf,
        calls: Cell::new(0),
        fail_at: 2,
    };
    assert!(engine::commit(&files, &plan).is_err());
    let mode = fs::metadata(ws.root.join("a.txt")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
}

#[tokio::test]
async fn adding_over_an_unread_file_is_refused_for_a_model() {
    let ws = Ws::new(true);
    ws.put("x.txt", "mine\n");
    let tool = PatchTool::new();
    let patch = "*** Begin Patch\n*** Add File: x.txt\n+theirs\n*** End Patch";
    let r = tool.execute(json!({ "patch": patch }), &ws.ctx).await;
    assert!(!r.success);
    let e = r.error.unwrap();
    assert!(e.contains("has not been read in this session"), "{e}");
    assert!(e.contains("*** Update File: x.txt"), "{e}");
    assert_eq!(ws.get("x.txt").as_deref(), Some("mine\n"));

    // Once the session has read it, the add replaces it.
    crate::fs::mark_read(&ws.ctx.session, &ws.root.join("x.txt"));
    let r = tool.execute(json!({ "patch": patch }), &ws.ctx).await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!(ws.get("x.txt").as_deref(), Some("theirs\n"));
}

#[tokio::test]
async fn a_person_may_add_over_an_existing_file() {
    let ws = Ws::new(false);
    ws.put("x.txt", "mine\n");
    let patch = "*** Begin Patch\n*** Add File: x.txt\n+theirs\n*** End Patch";
    let r = PatchTool::new().execute(json!({ "patch": patch }), &ws.ctx).await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!(ws.get("x.txt").as_deref(), Some("theirs\n"));
}

#[tokio::test]
async fn touched_files_count_as_read_after_success() {
    let ws = Ws::new(true);
    ws.put("a.txt", "one\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** Add File: b.txt\n+b\n*** End Patch";
    let r = PatchTool::new().execute(json!({ "patch": patch }), &ws.ctx).await;
    assert!(r.success, "{:?}", r.error);
    assert!(crate::fs::was_read(&ws.ctx.session, &ws.root.join("a.txt")));
    assert!(crate::fs::was_read(&ws.ctx.session, &ws.root.join("b.txt")));
    // A write after the patch needs no new read.
    assert!(crate::fs::check_read_before_write(&ws.ctx, "a.txt").is_ok());
}

#[tokio::test]
async fn the_same_file_under_two_names_is_refused() {
    let ws = Ws::new(false);
    ws.put("a.txt", "one\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** Delete File: ./a.txt\n*** End Patch";
    let r = PatchTool::new().execute(json!({ "patch": patch }), &ws.ctx).await;
    let e = r.error.unwrap();
    assert!(e.contains("are the same file"), "{e}");
    assert_eq!(ws.get("a.txt").as_deref(), Some("one\n"));
}

#[tokio::test]
async fn approval_shows_a_diff_of_every_file() {
    let ws = Ws::new(false);
    ws.put("a.txt", "one\n");
    ws.put("d.txt", "gone\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** Add File: b.txt\n+bee\n\
                 *** Delete File: d.txt\n*** End Patch";
    let tool = PatchTool::new();
    let input = json!({ "patch": patch });
    let d = tool.approval_detail(&input, &ws.ctx).await.unwrap();
    for needle in [
        "+++ b/a.txt",
        "-one",
        "+two",
        "+++ b/b.txt",
        "+bee",
        "deleted file d.txt",
        "-gone",
    ] {
        assert!(d.contains(needle), "missing {needle:?} in:\n{d}");
    }
    assert_eq!(tool.preview(&input, 200), "patch: 3 files (M a.txt, A b.txt, D d.txt)");
    // Computing the preview wrote nothing.
    assert_eq!(ws.get("a.txt").as_deref(), Some("one\n"));
    assert_eq!(ws.get("b.txt"), None);
}

const MOVE_ONTO: &str = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n-a\n+A\n*** End Patch";

#[tokio::test]
async fn a_move_onto_an_existing_file_follows_the_add_rule() {
    // A model that has not read the destination is refused, and told how.
    let ws = Ws::new(true);
    ws.put("a.txt", "a\n");
    ws.put("b.txt", "b\n");
    let tool = PatchTool::new();
    let r = tool.execute(json!({ "patch": MOVE_ONTO }), &ws.ctx).await;
    let e = r.error.unwrap();
    assert!(
        e.starts_with("cannot move onto b.txt: the file already exists and has not been read"),
        "{e}"
    );
    assert!(e.contains("*** Delete File: b.txt"), "{e}");
    assert_eq!(
        (ws.get("a.txt").as_deref(), ws.get("b.txt").as_deref()),
        (Some("a\n"), Some("b\n"))
    );
    // Once read, the move replaces it.
    crate::fs::mark_read(&ws.ctx.session, &ws.root.join("b.txt"));
    let r = tool.execute(json!({ "patch": MOVE_ONTO }), &ws.ctx).await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!((ws.get("a.txt"), ws.get("b.txt").as_deref()), (None, Some("A\n")));

    // A person may replace it outright.
    let ws = Ws::new(false);
    ws.put("a.txt", "a\n");
    ws.put("b.txt", "b\n");
    let input = json!({ "patch": MOVE_ONTO });
    let d = tool.approval_detail(&input, &ws.ctx).await.unwrap();
    assert!(d.starts_with("rename a.txt -> b.txt (replacing b.txt)"), "{d}");
    let r = tool.execute(input, &ws.ctx).await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!((ws.get("a.txt"), ws.get("b.txt").as_deref()), (None, Some("A\n")));
}

#[test]
fn a_failed_move_onto_an_existing_file_restores_the_destination() {
    // Writes in order: b.txt (the destination), remove a.txt.
    for fail_at in 1..=2 {
        let ws = Ws::new(false);
        ws.put("a.txt", "a\n");
        ws.put("b.txt", "b\n");
        let plan = engine::plan(&ws.conf, &wield_patch::parse(MOVE_ONTO).unwrap(), &|_| true).unwrap();
        let files = FailingFiles {
            inner: &ws.conf,
            calls: Cell::new(0),
            fail_at,
        };
        assert!(engine::commit(&files, &plan).is_err());
        assert_eq!(
            (ws.get("a.txt").as_deref(), ws.get("b.txt").as_deref()),
            (Some("a\n"), Some("b\n"))
        );
    }
}

#[tokio::test]
async fn a_deleted_file_may_be_recreated_by_a_move_or_an_add_in_the_same_patch() {
    // Even a model that never read b.txt: deleting it is explicit.
    let ws = Ws::new(true);
    ws.put("a.txt", "a\n");
    ws.put("b.txt", "b\n");
    ws.put("c.txt", "c\n");
    let patch = "*** Begin Patch\n*** Delete File: b.txt\n*** Update File: a.txt\n*** Move to: b.txt\n-a\n+A\n\
                 *** Delete File: c.txt\n*** Add File: c.txt\n+C\n*** End Patch";
    let r = PatchTool::new().execute(json!({ "patch": patch }), &ws.ctx).await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!(ws.get("a.txt"), None);
    assert_eq!(
        (ws.get("b.txt").as_deref(), ws.get("c.txt").as_deref()),
        (Some("A\n"), Some("C\n"))
    );
    assert_eq!(
        r.metadata["files"],
        json!(["D b.txt", "M a.txt -> b.txt", "D c.txt", "A c.txt"])
    );

    // Rolled back at any write, every file is as it was.
    let plan_text = patch;
    for fail_at in 1..=5 {
        let ws = Ws::new(false);
        ws.put("a.txt", "a\n");
        ws.put("b.txt", "b\n");
        ws.put("c.txt", "c\n");
        let plan = engine::plan(&ws.conf, &wield_patch::parse(plan_text).unwrap(), &|_| true).unwrap();
        let files = FailingFiles {
            inner: &ws.conf,
            calls: Cell::new(0),
            fail_at,
        };
        assert!(engine::commit(&files, &plan).is_err(), "write {fail_at}");
        let now = (ws.get("a.txt"), ws.get("b.txt"), ws.get("c.txt"));
        assert_eq!(
            now,
            (Some("a\n".into()), Some("b\n".into()), Some("c\n".into())),
            "write {fail_at}"
        );
    }

    // Deleting after using a path, or recreating twice, stays refused.
    let ws = Ws::new(false);
    ws.put("b.txt", "b\n");
    for patch in [
        "*** Begin Patch\n*** Add File: b.txt\n+x\n*** Delete File: b.txt\n*** End Patch",
        "*** Begin Patch\n*** Delete File: b.txt\n*** Add File: b.txt\n+x\n*** Add File: ./b.txt\n+y\n*** End Patch",
    ] {
        let r = PatchTool::new().execute(json!({ "patch": patch }), &ws.ctx).await;
        let e = r.error.unwrap();
        assert!(
            e.contains("are the same file") || e.contains("already appears in this patch"),
            "{e}"
        );
        assert_eq!(ws.get("b.txt").as_deref(), Some("b\n"));
    }
}

#[tokio::test]
async fn a_fuzzy_match_is_named_in_the_result() {
    let ws = Ws::new(false);
    ws.put("f.py", "def f():\n    if x:\n        return 1\n");
    let patch = "*** Begin Patch\n*** Update File: f.py\n@@\n if x:\n-    return 1\n+    return 2\n*** End Patch";
    let r = PatchTool::new().execute(json!({ "patch": patch }), &ws.ctx).await;
    assert!(r.success, "{:?}", r.error);
    assert_eq!(
        ws.get("f.py").as_deref(),
        Some("def f():\n    if x:\n        return 2\n")
    );
    let out = r.output.clone();
    assert!(out.contains("did not match the file exactly"), "{out}");
    assert!(
        out.contains("f.py: chunk 1 matched lines 2-3 only when leading and trailing whitespace is ignored"),
        "{out}"
    );
    assert_eq!(r.metadata["fuzzy"].as_array().map(Vec::len), Some(1));
    // An exact patch says nothing of the kind.
    let patch = "*** Begin Patch\n*** Update File: f.py\n-        return 2\n+        return 3\n*** End Patch";
    let r = PatchTool::new().execute(json!({ "patch": patch }), &ws.ctx).await;
    assert!(r.success && !r.output.contains("exactly"), "{}", r.output);
    assert!(r.metadata.get("fuzzy").is_none());
}
