//! The file tools through the runtime's pipeline, as a person-driven
//! `wield call` runs them: happy paths, every escape against every tool
//! that takes a path, edit errors, atomic writes under a concurrent reader,
//! and grep equal to `rg -n` on a fixture tree.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use wield_core::approval::HeadlessApprover;
use wield_test_support::command::peer_command;
use wield_test_support::layout::{DOTDOT_ESCAPES, LINK_ESCAPES, NUL_ESCAPE, SECRET};

use support::Env;

impl Env {
    /// One call as `wield call --json TOOL ARGS` makes it: a person-driven
    /// session, headless (a call that needs approval is refused) → (exit
    /// code, the result as JSON).
    fn call(&self, tool: &str, args: Value) -> (i32, Value) {
        self.call_with(&[], tool, args)
    }

    /// [`Env::call`] with `KEY=VALUE` settings (`--set`).
    fn call_with(&self, sets: &[&str], tool: &str, args: Value) -> (i32, Value) {
        support::call(&self.ws(""), sets, Arc::new(HeadlessApprover), tool, args)
    }

    fn ok(&self, tool: &str, args: Value) -> String {
        let (code, v) = self.call(tool, args.clone());
        assert_eq!(code, 0, "{tool} {args} failed: {v}");
        assert_eq!(v["success"], true);
        v["output"].as_str().unwrap().to_owned()
    }

    fn fails(&self, tool: &str, args: Value) -> String {
        let (code, v) = self.call(tool, args.clone());
        assert_eq!(code, 1, "{tool} {args} should fail: {v}");
        assert_eq!(v["success"], false);
        v["error"].as_str().unwrap().to_owned()
    }
}

#[test]
fn every_tool_works_on_the_workspace() {
    let e = Env::new();
    e.put("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    e.put("Cargo.toml", "[package]\nname = \"x\"\n");

    let out = e.ok("read", json!({"path": "src/main.rs"}));
    assert_eq!(out, "     1\tfn main() {\n     2\t    println!(\"hi\");\n     3\t}\n");

    let out = e.ok("write", json!({"path": "docs/new.md", "content": "# New\n"}));
    assert_eq!(out, "Wrote 6 bytes to docs/new.md (created)");
    assert_eq!(fs::read_to_string(e.ws("docs/new.md")).unwrap(), "# New\n");
    let out = e.ok("write", json!({"path": "docs/new.md", "content": "# Newer\n"}));
    assert_eq!(out, "Wrote 8 bytes to docs/new.md (replaced)");

    let out = e.ok(
        "edit",
        json!({"path": "src/main.rs", "old_text": "\"hi\"", "new_text": "\"hello\""}),
    );
    assert!(out.starts_with("Edited src/main.rs: 1 replacement\n"), "{out}");
    assert!(
        out.contains("-    println!(\"hi\");\n+    println!(\"hello\");"),
        "{out}"
    );
    assert!(fs::read_to_string(e.ws("src/main.rs")).unwrap().contains("\"hello\""));

    let out = e.ok("ls", json!({}));
    assert_eq!(out, "[file] Cargo.toml (21B)\n[dir]  docs/\n[dir]  src/\n");
    let out = e.ok("ls", json!({"depth": 2}));
    assert!(out.contains("[file] src/main.rs (37B)"), "{out}");

    assert_eq!(e.ok("mkdir", json!({"path": "a/b/c"})), "Created directory a/b/c");
    assert!(e.ws("a/b/c").is_dir());
    assert_eq!(e.ok("mkdir", json!({"path": "a/b"})), "Directory a/b already exists");

    let out = e.ok("glob", json!({"pattern": "**/*.{rs,toml}"}));
    let mut got: Vec<&str> = out.lines().collect();
    got.sort();
    assert_eq!(got, vec!["Cargo.toml", "src/main.rs"]);

    let out = e.ok("grep", json!({"pattern": "println"}));
    assert_eq!(out, "src/main.rs:2:    println!(\"hello\");\n");
}

#[test]
fn a_person_driven_call_may_write_without_reading_first() {
    // `wield call` is driven by a person: read-before-write (which keeps a
    // model honest) does not apply; the model-driven case is covered by the
    // tools' own tests through the executor.
    let e = Env::new();
    e.put("a.txt", "old\n");
    assert_eq!(
        e.ok("write", json!({"path": "a.txt", "content": "new\n"})),
        "Wrote 4 bytes to a.txt (replaced)"
    );
    e.ok("edit", json!({"path": "a.txt", "old_text": "new", "new_text": "newer"}));
    assert_eq!(fs::read_to_string(e.ws("a.txt")).unwrap(), "newer\n");
}

/// Every path-taking tool with `path` set to `p`, and the access it needs.
fn calls_with_path(p: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("read", json!({"path": p})),
        ("write", json!({"path": p, "content": "pwned"})),
        ("edit", json!({"path": p, "old_text": SECRET, "new_text": "pwned"})),
        ("ls", json!({"path": p})),
        ("mkdir", json!({"path": p})),
        ("glob", json!({"pattern": "**/*", "path": p})),
        ("grep", json!({"pattern": "SECRET", "path": p})),
    ]
}

fn assert_every_tool_refuses(e: &Env, path: &str, expect: &str) {
    for (tool, args) in calls_with_path(path) {
        let (code, v) = e.call(tool, args.clone());
        assert_eq!(code, 1, "{tool} {args} was not refused: {v}");
        let error = v["error"].as_str().unwrap();
        let wanted = if expect == "outside" {
            let access = if matches!(tool, "write" | "edit" | "mkdir") {
                "write"
            } else {
                "read"
            };
            format!("outside the {access} roots")
        } else {
            expect.to_owned()
        };
        assert!(error.contains(&wanted), "{tool} {args}: {error}");
        assert!(
            !v.to_string().contains(SECRET.trim_start_matches("TOP-")),
            "{tool} leaked the secret: {v}"
        );
    }
    e.assert_outside_untouched();
}

#[test]
fn dotdot_climbing_out_is_refused_by_every_tool() {
    let e = Env::new();
    e.put("sub/x.txt", "x");
    for p in DOTDOT_ESCAPES {
        assert_every_tool_refuses(&e, p, "outside");
    }
}

#[test]
fn absolute_paths_outside_every_root_are_refused_by_every_tool() {
    let e = Env::new();
    for p in &e.absolute_escapes()[..2] {
        assert_every_tool_refuses(&e, p, "outside");
    }
    let err = e.fails("read", json!({"path": "/etc/passwd"}));
    assert!(err.starts_with("path /etc/passwd is outside the read roots ("), "{err}");
    assert!(err.ends_with("): use a path inside them"), "{err}");
}

/// The reference MCP filesystem server's prefix-match CVE: `/x/ws-evil`
/// shares a string prefix with the workspace `/x/ws`.
#[test]
fn cve_prefix_sibling_of_the_workspace_is_refused_by_every_tool() {
    let e = Env::new();
    for p in &e.absolute_escapes()[2..] {
        assert_every_tool_refuses(&e, p, "outside");
    }
}

#[test]
fn symlinks_leading_outside_are_refused_by_every_tool() {
    let e = Env::new();
    e.outside_links();
    for p in LINK_ESCAPES {
        assert_every_tool_refuses(&e, p, "outside");
    }
}

/// The reference MCP filesystem server's symlink CVE: creating a new file
/// through a symlinked parent (or a dangling link) that points outside.
#[test]
fn cve_creating_through_a_symlinked_parent_or_dangling_link_is_refused() {
    let e = Env::new();
    symlink(e.base.join("outside"), e.ws("parent")).unwrap();
    symlink(e.base.join("outside/created.txt"), e.ws("dangling")).unwrap();
    for p in ["parent/created.txt", "parent/new/dir/f.txt", "dangling"] {
        let err = e.fails("write", json!({"path": p, "content": "pwned"}));
        assert!(
            err.contains("outside the write roots") && err.contains("symbolic link"),
            "{err}"
        );
        let err = e.fails("mkdir", json!({"path": p}));
        assert!(err.contains("outside the write roots"), "{err}");
    }
    e.assert_outside_untouched();
}

#[test]
fn nul_bytes_are_refused_by_every_tool() {
    let e = Env::new();
    e.put("a.txt", "a");
    assert_every_tool_refuses(&e, NUL_ESCAPE, "NUL byte");
}

#[test]
fn walks_never_follow_links_outside() {
    let e = Env::new();
    e.put("inside.txt", "SECRET is mentioned inside\n");
    symlink(e.base.join("outside"), e.ws("dir-link")).unwrap();
    symlink(e.base.join("outside/secret.txt"), e.ws("file-link")).unwrap();
    let out = e.ok("grep", json!({"pattern": "SECRET"}));
    assert_eq!(out, "inside.txt:1:SECRET is mentioned inside\n");
    let out = e.ok("glob", json!({"pattern": "**/*"}));
    assert_eq!(out, "inside.txt\n");
    let out = e.ok("ls", json!({"depth": 3}));
    // Links are listed, not entered.
    assert!(
        out.contains("[link] dir-link -> ") && !out.contains("dir-link/"),
        "{out}"
    );
}

#[test]
fn symlinks_inside_the_workspace_work() {
    let e = Env::new();
    e.put("real/data.txt", "inside data\n");
    symlink("real", e.ws("alias")).unwrap();
    symlink(e.ws("real/data.txt"), e.ws("abs-link.txt")).unwrap();
    assert_eq!(e.ok("read", json!({"path": "alias/data.txt"})), "     1\tinside data\n");
    assert_eq!(e.ok("read", json!({"path": "abs-link.txt"})), "     1\tinside data\n");
    e.ok("write", json!({"path": "abs-link.txt", "content": "changed\n"}));
    assert_eq!(fs::read_to_string(e.ws("real/data.txt")).unwrap(), "changed\n");
    assert!(
        fs::symlink_metadata(e.ws("abs-link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        e.ok("grep", json!({"pattern": "changed", "path": "alias"})),
        "real/data.txt:1:changed\n"
    );
}

#[test]
fn wield_state_is_never_writable() {
    let e = Env::new();
    fs::create_dir_all(e.ws(".wield")).unwrap();
    fs::write(e.ws(".wield/approvals.toml"), "").unwrap();
    symlink(".wield", e.ws("state")).unwrap();
    for p in [".wield/config.toml", ".wield/approvals.toml", "state/config.toml"] {
        let err = e.fails("write", json!({"path": p, "content": "[approval]\nrequire = false\n"}));
        assert!(err.contains("is protected"), "{err}");
    }
    assert!(e.fails("mkdir", json!({"path": ".wield/x"})).contains("is protected"));
    assert!(!e.ws(".wield/config.toml").exists());
    assert_eq!(fs::read_to_string(e.ws(".wield/approvals.toml")).unwrap(), "");
}

#[test]
fn extra_roots_from_the_config() {
    let e = Env::new();
    fs::create_dir_all(e.base.join("docs")).unwrap();
    fs::write(e.base.join("docs/guide.md"), "guide\n").unwrap();
    fs::create_dir_all(e.ws(".wield")).unwrap();
    fs::write(
        e.ws(".wield/config.toml"),
        format!("[sandbox]\nread = [\"{}\"]\n", e.base.join("docs").display()),
    )
    .unwrap();
    let guide = e.base.join("docs/guide.md");
    assert_eq!(e.ok("read", json!({"path": guide})), "     1\tguide\n");
    let err = e.fails("write", json!({"path": guide, "content": "x"}));
    assert!(err.contains("outside the write roots"), "{err}");
    assert_eq!(fs::read_to_string(&guide).unwrap(), "guide\n");
}

#[test]
fn edit_reports_zero_and_multiple_matches() {
    let e = Env::new();
    e.put("f.py", "def a():\n    return 1\n\ndef b():\n    return 1\n");
    let err = e.fails(
        "edit",
        json!({"path": "f.py", "old_text": "return 1", "new_text": "return 2"}),
    );
    assert!(err.contains("matches 2 times") && err.contains("lines 2, 5"), "{err}");
    let err = e.fails(
        "edit",
        json!({"path": "f.py", "old_text": "def  b():\n  return 1", "new_text": "x"}),
    );
    assert!(err.contains("different whitespace is at lines 4-5"), "{err}");
    assert!(err.contains("     4\tdef b():"), "{err}");
    let err = e.fails(
        "edit",
        json!({"path": "f.py", "old_text": "def c():\n    return 3", "new_text": "x"}),
    );
    assert!(err.contains("closest lines are"), "{err}");
    assert_eq!(
        fs::read_to_string(e.ws("f.py")).unwrap(),
        "def a():\n    return 1\n\ndef b():\n    return 1\n"
    );
    let out = e.ok(
        "edit",
        json!({"path": "f.py", "old_text": "return 1", "new_text": "return 2", "replace_all": true}),
    );
    assert!(out.contains("2 replacements"));
}

#[test]
fn errors_for_missing_files_and_wrong_kinds() {
    let e = Env::new();
    e.put("dir/f.txt", "x");
    assert!(e.fails("read", json!({"path": "dir"})).contains("is a directory"));
    assert!(e.fails("read", json!({"path": "nope.txt"})).contains("no such file"));
    assert!(
        e.fails("write", json!({"path": "dir", "content": "x"}))
            .contains("is a directory")
    );
    assert!(
        e.fails("mkdir", json!({"path": "dir/f.txt"}))
            .contains("not a directory")
    );
    assert!(e.fails("ls", json!({"path": "nope"})).contains("no such file"));
    fs::write(e.ws("blob.bin"), b"\0\x01\x02binary").unwrap();
    assert!(e.fails("read", json!({"path": "blob.bin"})).contains("binary file"));
}

#[test]
fn small_files_are_read_whole_unless_the_threshold_is_lowered() {
    let e = Env::new();
    let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    e.put("small.txt", &text);
    // About 200 tokens: under the default threshold of 2000, the whole file
    // comes back whatever range was asked for.
    let out = e.ok("read", json!({"path": "small.txt", "offset": 50, "limit": 2}));
    assert!(
        out.contains("     1\tline 1\n") && out.contains("   100\tline 100\n"),
        "{out}"
    );
    // With `read.small_file_tokens` lowered, the range is honoured.
    let (_, v) = e.call_with(
        &["read.small_file_tokens=10"],
        "read",
        json!({"path": "small.txt", "offset": 50, "limit": 2}),
    );
    let out = v["output"].as_str().unwrap().to_owned();
    assert!(out.starts_with("    50\tline 50\n    51\tline 51\n"), "{out}");
    assert!(!out.contains("line 49\n") && out.contains("offset=52"), "{out}");
}

#[test]
fn a_concurrent_reader_never_sees_a_half_written_file() {
    let e = Arc::new(Env::new());
    let size = 2 * 1024 * 1024;
    e.put("big.txt", &"a".repeat(size));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (e, stop) = (Arc::clone(&e), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let data = fs::read(e.ws("big.txt")).unwrap();
                assert_eq!(data.len(), size, "the reader saw a partial file");
                assert!(data.iter().all(|b| *b == data[0]), "the reader saw mixed contents");
                reads += 1;
            }
            reads
        })
    };
    for i in 0..8 {
        let c = if i % 2 == 0 { "b" } else { "a" };
        let args = json!({"path": "big.txt", "content": c.repeat(size)});
        e.ok("write", args);
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}

/// A small tree with what ripgrep's filters care about: nested dirs,
/// .gitignore, hidden files, a binary file, non-ASCII text.
fn fixture(e: &Env) {
    e.put(
        "src/main.rs",
        "fn main() {\n    let total = compute(3);\n    println!(\"{total}\");\n}\n",
    );
    e.put(
        "src/lib/compute.rs",
        "/// Compute things.\npub fn compute(n: u32) -> u32 {\n    n * 2 // TODO: overflow\n}\n\n#[test]\nfn compute_works() {}\n",
    );
    e.put("src/lib/mod.rs", "pub mod compute;\n// todo later\n");
    e.put(
        "README.md",
        "# Fixture\n\nRun `compute` to compute.\nÜnïcödé compute line\n",
    );
    e.put(
        "docs/notes.txt",
        "TODO: write docs\nnothing else\ncompute compute compute\n",
    );
    e.put(".gitignore", "target/\n*.log\n");
    e.put("target/debug/out.rs", "fn compute() {}\n");
    e.put("run.log", "compute log line\n");
    e.put(".hidden/secret.rs", "fn compute() {}\n");
    fs::write(e.ws("data.bin"), b"\0\x01compute\x02\n").unwrap();
}

fn rg(e: &Env, args: &[&str]) -> String {
    let out = peer_command("rg")
        .args(args)
        .current_dir(e.ws(""))
        .output()
        .expect("ripgrep (`rg`) must be installed for this test: apt-get install ripgrep");
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "rg failed: {out:?}"
    );
    String::from_utf8(out.stdout).unwrap()
}

fn sorted(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_owned).collect();
    v.sort();
    v
}

#[test]
fn grep_output_equals_ripgrep_on_a_fixture_tree() {
    let e = Env::new();
    fixture(&e);
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"pattern": "compute"}), vec!["-n", "compute"]),
        (json!({"pattern": "TODO|todo"}), vec!["-n", "TODO|todo"]),
        (
            json!({"pattern": "todo", "case_insensitive": true}),
            vec!["-n", "-i", "todo"],
        ),
        (json!({"pattern": "fn \\w+\\("}), vec!["-n", "fn \\w+\\("]),
        (
            json!({"pattern": "compute", "glob": "*.rs"}),
            vec!["-n", "-g", "*.rs", "compute"],
        ),
        (
            json!({"pattern": "compute", "glob": "!*.rs"}),
            vec!["-n", "-g", "!*.rs", "compute"],
        ),
        (
            json!({"pattern": "compute", "path": "src"}),
            vec!["-n", "compute", "src"],
        ),
        (
            json!({"pattern": "compute", "output_mode": "files"}),
            vec!["-l", "compute"],
        ),
        (
            json!({"pattern": "compute", "output_mode": "count"}),
            vec!["-c", "compute"],
        ),
        (json!({"pattern": "Ünïcödé"}), vec!["-n", "Ünïcödé"]),
    ];
    for (mut args, rg_args) in cases {
        args["limit"] = json!(10_000);
        let mut full = vec!["--no-require-git"];
        full.extend(rg_args.iter());
        let want = rg(&e, &full);
        assert!(!want.is_empty(), "rg {rg_args:?} found nothing: the fixture is wrong");
        let got = e.ok("grep", args.clone());
        assert_eq!(sorted(&got), sorted(&want), "grep {args} differs from rg {rg_args:?}");
    }
    // With context, compare to ripgrep's path-sorted output exactly.
    let want = rg(&e, &["--no-require-git", "--sort", "path", "-n", "-C", "1", "compute"]);
    let got = e.ok("grep", json!({"pattern": "compute", "context": 1, "limit": 10_000}));
    assert_eq!(got, want);
}
