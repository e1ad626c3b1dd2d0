//! The patch tool through the runtime's pipeline, as `wield patch apply`
//! runs it, on real files: every operation, every accepted variation of
//! the format, every refusal — and after every refusal, the whole
//! workspace exactly as it was. (The command itself, and a patch applied
//! as another user, are the CLI's suite.)
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use wield_core::approval::HeadlessApprover;
use wield_test_support::layout::SECRET;

use support::Env;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Env {
    fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.ws(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// The patch applied as `wield patch apply -` applies it: what it
    /// prints on stdout and stderr, and its exit code.
    fn apply(&self, patch: &str) -> Run {
        let (code, v) = support::call(
            &self.ws(""),
            &[],
            Arc::new(HeadlessApprover),
            "patch",
            json!({ "patch": patch }),
        );
        let mut stdout = v["output"].as_str().unwrap_or_default().to_owned();
        if !stdout.is_empty() && !stdout.ends_with('\n') {
            stdout.push('\n');
        }
        let stderr = v["error"].as_str().map(|e| format!("error: {e}\n")).unwrap_or_default();
        Run { code, stdout, stderr }
    }

    fn applied(&self, patch: &str) -> String {
        let r = self.apply(patch);
        assert_eq!(r.code, 0, "patch failed: {}\n{}", r.stderr, patch);
        r.stdout
    }

    /// Apply a patch that must be refused, check that nothing in the
    /// workspace (or next to it) changed, and return the error message.
    fn refused(&self, patch: &str) -> String {
        let before = self.snapshot();
        let r = self.apply(patch);
        assert_eq!(r.code, 1, "expected a refusal, got: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
        assert_eq!(self.snapshot(), before, "a refused patch changed files:\n{patch}");
        r.stderr
    }

    /// Every file and directory under base (except home and the temp dir) with its
    /// content or link target.
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(base).unwrap().to_path_buf();
                // wield's own caches (home) and temp files are not the workspace.
                if rel.starts_with("tmp") || rel.starts_with("home") {
                    continue;
                }
                let meta = fs::symlink_metadata(&p).unwrap();
                if meta.file_type().is_symlink() {
                    out.insert(rel, format!("-> {}", fs::read_link(&p).unwrap().display()));
                } else if meta.is_dir() {
                    out.insert(rel, "<dir>".into());
                    walk(&p, base, out);
                } else {
                    out.insert(rel, String::from_utf8_lossy(&fs::read(&p).unwrap()).into_owned());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.base, &self.base, &mut out);
        out
    }
}

#[test]
fn add_creates_missing_parent_directories() {
    let env = Env::new();
    let out = env.applied("*** Begin Patch\n*** Add File: a/b/c/new.rs\n+fn main() {}\n+\n*** End Patch\n");
    assert_eq!(out, "Success. Updated the following files:\nA a/b/c/new.rs\n");
    assert_eq!(env.get("a/b/c/new.rs"), "fn main() {}\n\n");
}

#[test]
fn add_update_and_delete_in_one_patch() {
    let env = Env::new();
    env.put("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n");
    env.put("old.txt", "bye\n");
    let out = env.applied(
        "*** Begin Patch
*** Add File: src/two.rs
+pub fn two() -> u32 {
+    2
+}
*** Update File: src/lib.rs
@@ pub fn one() -> u32 {
-    1
+    1 + 0
*** Delete File: old.txt
*** End Patch",
    );
    assert_eq!(
        out,
        "Success. Updated the following files:\nA src/two.rs\nM src/lib.rs\nD old.txt\n"
    );
    assert_eq!(env.get("src/two.rs"), "pub fn two() -> u32 {\n    2\n}\n");
    assert_eq!(env.get("src/lib.rs"), "pub fn one() -> u32 {\n    1 + 0\n}\n");
    assert!(!env.ws("old.txt").exists());
}

#[test]
fn several_chunks_in_one_file() {
    let env = Env::new();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    env.put("f.txt", &text);
    env.applied(
        "*** Begin Patch
*** Update File: f.txt
@@
 line 2
-line 3
+LINE THREE
 line 4
@@ line 15
-line 16
+LINE SIXTEEN
@@
 line 29
-line 30
+LINE THIRTY
*** End Patch",
    );
    let got = env.get("f.txt");
    let expected = text
        .replace("line 3\n", "LINE THREE\n")
        .replace("line 16\n", "LINE SIXTEEN\n")
        .replace("line 30\n", "LINE THIRTY\n");
    assert_eq!(got, expected);
}

#[test]
fn move_to_a_new_directory() {
    let env = Env::new();
    env.put("src/old.rs", "a\nb\nc\n");
    let out = env.applied(
        "*** Begin Patch\n*** Update File: src/old.rs\n*** Move to: lib/deep/new.rs\n@@\n a\n-b\n+B\n*** End Patch",
    );
    assert_eq!(
        out,
        "Success. Updated the following files:\nM src/old.rs -> lib/deep/new.rs\n"
    );
    assert_eq!(env.get("lib/deep/new.rs"), "a\nB\nc\n");
    assert!(!env.ws("src/old.rs").exists());
}

#[test]
fn move_onto_an_existing_file_replaces_it_like_an_add() {
    // `wield patch apply` is a person's command: the destination is replaced,
    // as an Add over an existing file is.
    let env = Env::new();
    env.put("old/name.txt", "from\n");
    env.put("renamed/dir/name.txt", "existing\n");
    let out = env.applied("*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-from\n+new\n*** End Patch");
    assert!(out.contains("M old/name.txt -> renamed/dir/name.txt"), "{out}");
    assert_eq!(env.get("renamed/dir/name.txt"), "new\n");
    assert!(!env.ws("old/name.txt").exists());
    // Deleting the destination first in the same patch works too.
    env.put("a.txt", "a\n");
    env.put("b.txt", "b\n");
    env.applied(
        "*** Begin Patch\n*** Delete File: b.txt\n*** Update File: a.txt\n*** Move to: b.txt\n-a\n+A\n*** End Patch",
    );
    assert_eq!(env.get("b.txt"), "A\n");
    assert!(!env.ws("a.txt").exists());
    // A directory is never a destination.
    env.put("c.txt", "c\n");
    env.put("d/x.txt", "x\n");
    let e = env.refused("*** Begin Patch\n*** Update File: c.txt\n*** Move to: d\n-c\n+C\n*** End Patch");
    assert!(e.contains("d is a directory"), "{e}");
}

#[test]
fn empty_patch_and_patch_without_operations() {
    let env = Env::new();
    env.put("keep.txt", "k\n");
    let e = env.refused("");
    assert!(e.contains("the patch is empty"), "{e}");
    let e = env.refused("*** Begin Patch\n*** End Patch\n");
    assert!(e.contains("no files were modified"), "{e}");
    assert!(e.contains("*** Add File: PATH"), "the valid headers are listed: {e}");
}

#[test]
fn context_not_found_leaves_the_file_untouched() {
    let env = Env::new();
    env.put("f.rs", "fn a() {}\nfn b() {}\n");
    let e =
        env.refused("*** Begin Patch\n*** Update File: f.rs\n@@\n fn a() {}\n-fn c() {}\n+fn d() {}\n*** End Patch");
    assert!(e.contains("f.rs: chunk 1 of 1"), "the file and chunk are named: {e}");
    assert!(e.contains("Closest region"), "{e}");
    assert!(e.contains("fn b() {}"), "the closest region is shown: {e}");
    let e = env.refused("*** Begin Patch\n*** Update File: f.rs\n@@ fn zzz()\n-fn b() {}\n+fn d() {}\n*** End Patch");
    assert!(e.contains("`@@` context line was not found"), "{e}");
}

#[test]
fn delete_of_a_missing_file_or_a_directory_is_refused() {
    let env = Env::new();
    env.put("dir/inside.txt", "x\n");
    env.put("a.txt", "a\n");
    let e = env.refused("*** Begin Patch\n*** Delete File: a.txt\n*** Delete File: nope.txt\n*** End Patch");
    assert!(e.contains("cannot delete nope.txt: no such file"), "{e}");
    let e = env.refused("*** Begin Patch\n*** Delete File: dir\n*** End Patch");
    assert!(e.contains("is a directory"), "{e}");
    let e = env.refused("*** Begin Patch\n*** Update File: missing.txt\n-a\n+b\n*** End Patch");
    assert!(e.contains("no such file"), "{e}");
    assert!(e.contains("*** Add File: missing.txt"), "{e}");
}

#[test]
fn unknown_header_and_update_without_chunks() {
    let env = Env::new();
    env.put("a.txt", "a\n");
    let e = env.refused("*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Rename File: a.txt\n*** End Patch");
    assert!(e.contains("line 5"), "the line is named: {e}");
    assert!(e.contains("unknown header `*** Rename File: a.txt`"), "{e}");
    assert!(e.contains("*** Delete File: PATH"), "the valid headers are listed: {e}");
    let e = env.refused("*** Begin Patch\n*** Update File: a.txt\n*** End Patch");
    assert!(e.contains("has no chunks"), "{e}");
    let e = env.refused("*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n");
    assert!(e.contains("missing `*** End Patch`"), "{e}");
}

#[test]
fn a_file_without_a_trailing_newline() {
    let env = Env::new();
    // A change away from the end keeps the missing final newline.
    env.put("a.txt", "one\ntwo\nthree");
    env.applied("*** Begin Patch\n*** Update File: a.txt\n-one\n+ONE\n two\n*** End Patch");
    assert_eq!(env.get("a.txt"), "ONE\ntwo\nthree");
    // A change at the end adds it.
    env.applied("*** Begin Patch\n*** Update File: a.txt\n two\n-three\n+THREE\n*** End Patch");
    assert_eq!(env.get("a.txt"), "ONE\ntwo\nTHREE\n");
}

#[test]
fn an_append_only_chunk_goes_at_the_end() {
    let env = Env::new();
    env.put("log.txt", "first\nsecond\n");
    env.applied("*** Begin Patch\n*** Update File: log.txt\n@@\n+third\n+fourth\n*** End Patch");
    assert_eq!(env.get("log.txt"), "first\nsecond\nthird\nfourth\n");
}

#[test]
fn whitespace_around_markers_is_accepted() {
    let env = Env::new();
    env.put("a.txt", "x\ny\n");
    env.applied("  *** Begin Patch  \n\t*** Update File:   a.txt  \n@@   \n x\n-y\n+z\n   *** End of File \n   *** End Patch \n");
    assert_eq!(env.get("a.txt"), "x\nz\n");
}

#[test]
fn unicode_punctuation_is_matched_by_ascii_patch_text() {
    let env = Env::new();
    env.put(
        "doc.md",
        "Title \u{2014} intro\nShe said \u{201c}hi\u{201d} and \u{2018}bye\u{2019}\u{00a0}now\nend\n",
    );
    env.applied("*** Begin Patch\n*** Update File: doc.md\n Title - intro\n-She said \"hi\" and 'bye' now\n+She said hello\n end\n*** End Patch");
    // The kept lines are copied from the file, not from the patch.
    assert_eq!(env.get("doc.md"), "Title \u{2014} intro\nShe said hello\nend\n");
}

#[test]
fn end_of_file_anchors_the_chunk_at_the_end() {
    let env = Env::new();
    env.put("a.txt", "x\nend\nmiddle\nx\nend\n");
    env.applied("*** Begin Patch\n*** Update File: a.txt\n x\n-end\n+END\n*** End of File\n*** End Patch");
    assert_eq!(env.get("a.txt"), "x\nend\nmiddle\nx\nEND\n");
    let e = env.refused("*** Begin Patch\n*** Update File: a.txt\n-middle\n+M\n*** End of File\n*** End Patch");
    assert!(e.contains("End of File"), "{e}");
}

#[test]
fn crlf_files_stay_crlf() {
    let env = Env::new();
    env.put("win.txt", "one\r\ntwo\r\nthree\r\n");
    env.applied("*** Begin Patch\n*** Update File: win.txt\n one\n-two\n+TWO\n+two and a half\n three\n*** End Patch");
    assert_eq!(env.get("win.txt"), "one\r\nTWO\r\ntwo and a half\r\nthree\r\n");
}

#[test]
fn repeated_identical_lines_are_matched_in_order() {
    let env = Env::new();
    env.put("r.txt", "item\nitem\nitem\n");
    env.applied("*** Begin Patch\n*** Update File: r.txt\n-item\n+first\n@@\n item\n-item\n+third\n*** End Patch");
    assert_eq!(env.get("r.txt"), "first\nitem\nthird\n");
}

#[test]
fn a_heredoc_wrapper_is_accepted() {
    let env = Env::new();
    env.put("a.txt", "old\n");
    env.applied("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n-old\n+new\n*** End Patch\nEOF\n");
    assert_eq!(env.get("a.txt"), "new\n");
}

#[test]
fn a_three_file_patch_whose_third_file_fails_leaves_the_first_two_untouched() {
    let env = Env::new();
    env.put("one.txt", "1\n");
    env.put("two.txt", "2\n");
    env.put("three.txt", "3\n");
    let e = env.refused(
        "*** Begin Patch
*** Update File: one.txt
-1
+one
*** Add File: new/four.txt
+4
*** Update File: two.txt
-2
+two
*** Update File: three.txt
-not in the file
+three
*** End Patch",
    );
    assert!(e.contains("three.txt: chunk 1 of 1"), "{e}");
    assert!(!env.ws("new").exists());
}

#[test]
fn paths_escaping_the_workspace_are_refused_in_every_position() {
    let env = Env::new();
    env.put("in.txt", "TOP-SECRET-CONTENT\n");
    symlink(env.base.join("outside/secret.txt"), env.ws("link-file")).unwrap();
    symlink(env.base.join("outside"), env.ws("link-dir")).unwrap();
    symlink(env.base.join("outside/not-there.txt"), env.ws("dangling")).unwrap();
    let outside = env.base.join("outside/secret.txt");
    let evil = env.base.join("ws-evil/secret.txt");
    let targets = [
        "../outside/secret.txt".to_owned(),
        "sub/../../outside/secret.txt".to_owned(),
        outside.display().to_string(),
        evil.display().to_string(),
        "link-file".to_owned(),
        "link-dir/secret.txt".to_owned(),
        "/etc/passwd".to_owned(),
    ];
    for t in &targets {
        let update = format!("*** Begin Patch\n*** Update File: {t}\n-TOP-SECRET-CONTENT\n+pwned\n*** End Patch");
        let e = env.refused(&update);
        assert!(e.contains("outside the write roots"), "update {t}: {e}");
        let delete = format!("*** Begin Patch\n*** Delete File: {t}\n*** End Patch");
        let e = env.refused(&delete);
        // Deleting a link removes the link itself, which is inside: that
        // is allowed for links only through other tools; the patch tool
        // refuses links.
        assert!(
            e.contains("outside the write roots") || e.contains("symbolic link"),
            "delete {t}: {e}"
        );
    }
    for t in targets
        .iter()
        .map(String::as_str)
        .chain(["dangling", "link-dir/new.txt"])
    {
        let add = format!("*** Begin Patch\n*** Add File: {t}\n+pwned\n*** End Patch");
        let e = env.refused(&add);
        assert!(e.contains("outside the write roots"), "add {t}: {e}");
        let mv = format!(
            "*** Begin Patch\n*** Update File: in.txt\n*** Move to: {t}\n-TOP-SECRET-CONTENT\n+x\n*** End Patch"
        );
        let e = env.refused(&mv);
        assert!(
            e.contains("outside the write roots") || e.contains("already exists"),
            "move to {t}: {e}"
        );
    }
    // wield's own state is never writable.
    fs::create_dir_all(env.ws(".wield")).unwrap();
    let e = env.refused("*** Begin Patch\n*** Add File: .wield/config.toml\n+[approval]\n*** End Patch");
    assert!(e.contains("protected"), "{e}");
    // A NUL byte in a path.
    let e = env.refused("*** Begin Patch\n*** Add File: a\0b.txt\n+x\n*** End Patch");
    assert!(e.contains("NUL"), "{e}");
    assert_eq!(fs::read_to_string(&outside).unwrap(), SECRET);
    assert_eq!(fs::read_to_string(&evil).unwrap(), SECRET);
}

#[test]
fn line_endings_lone_cr_and_mixed_files_keep_each_line_s_ending() {
    let env = Env::new();
    env.put("cr.txt", "one\rtwo\rthree\r");
    env.applied(
        "*** Begin Patch\n*** Update File: cr.txt\n@@\n-one\n+uno\n@@\n two\n+\n+between\n three\n*** End Patch",
    );
    assert_eq!(env.get("cr.txt"), "uno\rtwo\r\rbetween\rthree\r");
    // A mixed file: the replaced line was CRLF and stays so; the untouched
    // LF and CR lines keep theirs.
    env.put("mixed.txt", "one\r\ntwo\rthree\r\nfour\n");
    env.applied("*** Begin Patch\n*** Update File: mixed.txt\n one\n two\n-three\n+THREE\n four\n*** End Patch");
    assert_eq!(env.get("mixed.txt"), "one\r\ntwo\rTHREE\r\nfour\n");
}

#[test]
fn an_under_indented_chunk_is_re_indented_and_the_result_says_so() {
    let env = Env::new();
    env.put(
        "app.py",
        "class A:\n    def f(self, x):\n        if x:\n            return 1\n        return 0\n",
    );
    // Every line of the chunk lacks one level (4 spaces).
    let out = env.applied(
        "*** Begin Patch\n*** Update File: app.py\n@@ def f(self, x):\n     if x:\n-        return 1\n+        y = x + 1\n+        return y\n     return 0\n*** End Patch",
    );
    assert_eq!(
        env.get("app.py"),
        "class A:\n    def f(self, x):\n        if x:\n            y = x + 1\n            return y\n        return 0\n"
    );
    assert!(
        out.contains("app.py: chunk 1 matched lines 3-5 only when leading and trailing whitespace is ignored"),
        "{out}"
    );
    assert!(out.contains("indented 4 spaces deeper than the patch"), "{out}");
    // An offset that differs from line to line is refused, not guessed.
    let e = env.refused(
        "*** Begin Patch\n*** Update File: app.py\n@@\n def f(self, x):\n if x:\n-y = x + 1\n+y = x + 2\n*** End Patch",
    );
    assert!(e.contains("by different amounts on different lines"), "{e}");
}

#[test]
fn a_one_line_file_is_one_line_in_messages() {
    let env = Env::new();
    env.put("one.txt", "only\n");
    let e = env.refused("*** Begin Patch\n*** Update File: one.txt\n-other\n+x\n*** End Patch");
    assert!(e.contains("the file has 1 line;"), "{e}");
}
