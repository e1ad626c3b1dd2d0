//! The file tools through `Tool::execute` (and the executor, for
//! read-before-write) on real temp dirs, with a model-driven session.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tempfile::TempDir;
use wield_core::{Call, Config, Context, ExecutorBuilder, Registry, Services, Session, Tool, ToolResult};
use wield_sandbox::fs::Confinement;

use super::*;

struct Ws {
    _dir: TempDir,
    root: PathBuf,
    ctx: Context,
}

impl Ws {
    fn new() -> Self {
        Self::with(true, true)
    }

    fn with(model_driven: bool, read_before_write: bool) -> Self {
        let dir = TempDir::new().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join("ws")).unwrap();
        let ws = root.join("ws");
        let mut services = Services::new();
        services.insert(Arc::new(
            Confinement::builder(&ws)
                .temp_dir(Some(root.join("ws")))
                .build()
                .unwrap(),
        ));
        services.insert(Arc::new(FsSettings { read_before_write }));
        let mut ctx = Context::detached(&ws);
        ctx.services = Arc::new(services);
        ctx.session = Arc::new(Session::new("test", model_driven));
        Self {
            _dir: dir,
            root: ws,
            ctx,
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn put(&self, rel: &str, text: &str) {
        let p = self.p(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    async fn call(&self, tool: &dyn Tool, input: Value) -> ToolResult {
        let mut input = input;
        wield_core::schema::fill_nullable(&tool.spec().input_schema, &mut input);
        tool.execute(input, &self.ctx).await
    }
}

fn err(r: &ToolResult) -> &str {
    assert!(!r.success, "expected an error, got output: {}", r.output);
    r.error.as_deref().unwrap()
}

#[test]
fn every_schema_is_strict_mode_compatible() {
    for tool in tools() {
        wield_core::schema::check_strict(&tool.spec().input_schema)
            .unwrap_or_else(|e| panic!("{}: {e}", tool.spec().name));
        assert!(tool.spec().strict);
    }
}

#[test]
fn previews_are_one_line() {
    let cases: Vec<(Box<dyn Tool>, Value, &str)> = vec![
        (
            Box::new(ReadTool::new()),
            json!({"path": "src/main.rs", "offset": 100, "limit": 50}),
            "read: src/main.rs +100,50",
        ),
        (Box::new(ReadTool::new()), json!({"path": "a.rs"}), "read: a.rs"),
        (
            Box::new(WriteTool::new()),
            json!({"path": "out.txt", "content": "x".repeat(2355)}),
            "write: out.txt (2.3KB)",
        ),
        (
            Box::new(GrepTool::new()),
            json!({"pattern": "fn main", "path": "src/"}),
            "grep: \"fn main\" in src/",
        ),
        (
            Box::new(GlobTool::new()),
            json!({"pattern": "**/*.toml"}),
            "glob: \"**/*.toml\"",
        ),
        (
            Box::new(LsTool::new()),
            json!({"path": "src", "depth": 2}),
            "ls: src (depth 2)",
        ),
        (Box::new(MkdirTool::new()), json!({"path": "a/b"}), "mkdir: a/b"),
        (
            Box::new(EditTool::new()),
            json!({"path": "f", "old_text": "a\nb", "new_text": "c"}),
            "edit: f (-2 +1 lines)",
        ),
    ];
    for (tool, input, want) in cases {
        assert_eq!(tool.preview(&input, 120), want);
    }
}

#[tokio::test]
async fn write_and_edit_need_a_read_first_when_a_model_drives() {
    let ws = Ws::new();
    ws.put("a.txt", "one\ntwo\n");
    let (write, edit, read) = (WriteTool::new(), EditTool::new(), ReadTool::new());
    let r = ws.call(&write, json!({"path": "a.txt", "content": "x"})).await;
    assert!(err(&r).contains("read it first"), "{r:?}");
    let r = ws
        .call(&edit, json!({"path": "a.txt", "old_text": "one", "new_text": "1"}))
        .await;
    assert!(err(&r).contains("read it first"));
    assert_eq!(fs::read_to_string(ws.p("a.txt")).unwrap(), "one\ntwo\n");
    // New files need no read.
    assert!(
        ws.call(&write, json!({"path": "new.txt", "content": "n"}))
            .await
            .success
    );
    // After a read both work, and a tool's own write keeps the file "seen".
    assert!(ws.call(&read, json!({"path": "a.txt"})).await.success);
    assert!(
        ws.call(&edit, json!({"path": "a.txt", "old_text": "one", "new_text": "1"}))
            .await
            .success
    );
    assert!(
        ws.call(&edit, json!({"path": "a.txt", "old_text": "two", "new_text": "2"}))
            .await
            .success
    );
    assert_eq!(fs::read_to_string(ws.p("a.txt")).unwrap(), "1\n2\n");
    // A change on disk since then requires reading again.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(ws.p("a.txt"), "changed elsewhere\n").unwrap();
    let r = ws.call(&write, json!({"path": "a.txt", "content": "x"})).await;
    assert!(err(&r).contains("changed on disk"), "{r:?}");
    assert_eq!(fs::read_to_string(ws.p("a.txt")).unwrap(), "changed elsewhere\n");
}

#[tokio::test]
async fn read_before_write_is_off_for_people_and_by_config() {
    for ws in [Ws::with(false, true), Ws::with(true, false)] {
        ws.put("a.txt", "old");
        let r = ws
            .call(&WriteTool::new(), json!({"path": "a.txt", "content": "new"}))
            .await;
        assert!(r.success, "{r:?}");
        assert_eq!(fs::read_to_string(ws.p("a.txt")).unwrap(), "new");
    }
}

#[tokio::test]
async fn the_executor_refuses_an_unread_write_before_approval() {
    let ws = Ws::new();
    ws.put("a.txt", "keep");
    let mut registry = Registry::new();
    registry.register_many(tools()).unwrap();
    let mut config = Config::default();
    config.approval.auto_approve = vec!["*".into()];
    let mut services = Services::new();
    install_services(&mut services, &config, &ws.root, &[]).unwrap();
    let executor = ExecutorBuilder::new(Arc::new(registry), Arc::new(config), &ws.root)
        .services(services)
        .build();
    let session = Arc::new(Session::new("model", true));
    let cancel = tokio_util::sync::CancellationToken::new();
    let write = Call::new("1", "write", json!({"path": "a.txt", "content": "x"}));
    let r = executor.run_one(write.clone(), &session, &cancel).await;
    assert!(err(&r).contains("read it first"), "{r:?}");
    let read = Call::new("2", "read", json!({"path": "a.txt"}));
    assert!(executor.run_one(read, &session, &cancel).await.success);
    assert!(executor.run_one(write, &session, &cancel).await.success);
    assert_eq!(fs::read_to_string(ws.p("a.txt")).unwrap(), "x");
}

#[tokio::test]
async fn read_ranges_small_files_and_limits() {
    let ws = Ws::new();
    let big: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    ws.put("big.txt", &big);
    ws.put("small.txt", "a\nb\nc\n");
    let read = ReadTool::new();
    let r = ws
        .call(&read, json!({"path": "big.txt", "offset": 100, "limit": 3}))
        .await;
    assert_eq!(
        r.output,
        "   100\tline 100\n   101\tline 101\n   102\tline 102\n[Showing lines 100-102. The file continues: use offset=103 to read more.]\n"
    );
    // Small files come back whole whatever the range.
    let r = ws
        .call(&read, json!({"path": "small.txt", "offset": 2, "limit": 1}))
        .await;
    assert_eq!(r.output, "     1\ta\n     2\tb\n     3\tc\n");
    // No range on a big file: cut at 2000 lines with the saved-output notice.
    let r = ws.call(&read, json!({"path": "big.txt"})).await;
    assert!(r.output.contains("  2000\tline 2000\n"));
    assert!(!r.output.contains("line 2001\n"));
    assert!(r.output.contains("[Showing lines 1-2000 of 5000"), "{}", r.output);
    assert!(r.output.contains("Use offset=2001"));
    assert_eq!(r.metadata["truncated"], true);
    let saved = r.metadata["full_output"].as_str().unwrap();
    assert!(fs::read_to_string(saved).unwrap().contains("  5000\tline 5000"));
    // Ranged reads past the output limit say where to continue.
    let r = ws
        .call(&read, json!({"path": "big.txt", "offset": 10, "limit": 4000}))
        .await;
    assert!(
        r.output.contains("[Showing lines 10-2009"),
        "{}",
        r.output.lines().last().unwrap()
    );
    let r = ws.call(&read, json!({"path": "big.txt", "offset": 9999})).await;
    assert!(err(&r).contains("past the end"));
    let r = ws.call(&read, json!({"path": "."})).await;
    assert!(err(&r).contains("is a directory"));
    let r = ws.call(&read, json!({"path": "smal.txt"})).await;
    assert!(err(&r).contains("no such file"));
    ws.put("empty.txt", "");
    assert!(
        ws.call(&read, json!({"path": "empty.txt"}))
            .await
            .output
            .contains("is empty")
    );
}

#[tokio::test]
async fn a_huge_line_is_cut_not_loaded() {
    let ws = Ws::new();
    let mut text = "x".repeat(3 * 1024 * 1024);
    text.push_str("\nend\n");
    ws.put("one-line.txt", &text);
    let r = ws
        .call(
            &ReadTool::new(),
            json!({"path": "one-line.txt", "offset": 1, "limit": 2}),
        )
        .await;
    assert!(r.success);
    assert!(r.output.len() < 120 * 1024, "{}", r.output.len());
    assert!(r.output.contains("[line cut]"));
}

#[tokio::test]
async fn binary_files_are_refused_and_images_attached() {
    let ws = Ws::new();
    fs::write(ws.p("prog"), b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0rest").unwrap();
    let r = ws.call(&ReadTool::new(), json!({"path": "prog"})).await;
    assert!(err(&r).contains("binary file (ELF executable, 20B)"), "{r:?}");
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    fs::write(ws.p("dot.png"), png).unwrap();
    let r = ws.call(&ReadTool::new(), json!({"path": "dot.png"})).await;
    assert!(r.success, "{r:?}");
    let att = &r.metadata["attachments"][0];
    assert_eq!(att["mime"], "image/png");
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD
        .decode(att["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, png);

    // An image too large to be read whole up front is read when attached.
    let mut big = png.to_vec();
    big.resize(300 * 1024, 7);
    fs::write(ws.p("big.png"), &big).unwrap();
    let r = ws.call(&ReadTool::new(), json!({"path": "big.png"})).await;
    assert!(r.success, "{r:?}");
    let data = base64::engine::general_purpose::STANDARD
        .decode(r.metadata["attachments"][0]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, big);
}

#[tokio::test]
async fn edit_reports_zero_and_multiple_matches() {
    let ws = Ws::with(false, true);
    ws.put("f.rs", "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n");
    let edit = EditTool::new();
    let r = ws
        .call(&edit, json!({"path": "f.rs", "old_text": "x();", "new_text": "y();"}))
        .await;
    let e = err(&r);
    assert!(
        e.contains("matches 2 times") && e.contains("lines 2, 5") && e.contains("replace_all"),
        "{e}"
    );
    let r = ws
        .call(
            &edit,
            json!({"path": "f.rs", "old_text": "fn  b() {", "new_text": "fn c() {"}),
        )
        .await;
    assert!(err(&r).contains("different whitespace is at lines 4-4"), "{r:?}");
    let r = ws
        .call(
            &edit,
            json!({"path": "f.rs", "old_text": "x();", "new_text": "y();", "replace_all": true}),
        )
        .await;
    assert!(
        r.success && r.output.contains("2 replacements") && r.output.contains("+    y();"),
        "{r:?}"
    );
    assert_eq!(
        fs::read_to_string(ws.p("f.rs")).unwrap(),
        "fn a() {\n    y();\n}\nfn b() {\n    y();\n}\n"
    );
    // CRLF files accept LF-quoted text and stay CRLF.
    ws.put("w.txt", "one\r\ntwo\r\nthree\r\n");
    let r = ws
        .call(
            &edit,
            json!({"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"}),
        )
        .await;
    assert!(r.success, "{r:?}");
    assert_eq!(fs::read_to_string(ws.p("w.txt")).unwrap(), "1\r\n2\r\nthree\r\n");
    let r = ws
        .call(&edit, json!({"path": "nope.rs", "old_text": "a", "new_text": "b"}))
        .await;
    assert!(err(&r).contains("use write"));
}

#[tokio::test]
async fn grep_modes_limits_and_globs() {
    let ws = Ws::new();
    for i in 0..30 {
        ws.put(&format!("src/f{i:02}.rs"), "fn main() {}\nlet x = 1;\nfn other() {}\n");
    }
    ws.put("notes.md", "fn in markdown\n");
    ws.put(".gitignore", "ignored/\n");
    ws.put("ignored/a.rs", "fn hidden\n");
    ws.put(".hidden/a.rs", "fn hidden\n");
    let grep = GrepTool::new();
    let r = ws.call(&grep, json!({"pattern": "^fn", "limit": 5})).await;
    assert_eq!(r.metadata["matches"], 61);
    let lines: Vec<&str> = r.output.lines().collect();
    assert_eq!(lines[0], "notes.md:1:fn in markdown");
    assert_eq!(lines[1], "src/f00.rs:1:fn main() {}");
    assert_eq!(lines.len(), 6);
    assert!(
        lines[5].starts_with("[56 more matches not shown (61 matches in 31 files)"),
        "{}",
        lines[5]
    );
    assert_eq!(r.metadata["truncated"], true);
    let r = ws
        .call(
            &grep,
            json!({"pattern": "FN MAIN", "case_insensitive": true, "glob": "*.rs", "output_mode": "files"}),
        )
        .await;
    assert_eq!(r.output.lines().count(), 30);
    let r = ws
        .call(
            &grep,
            json!({"pattern": "fn", "path": "src/f03.rs", "output_mode": "count"}),
        )
        .await;
    assert_eq!(r.output, "src/f03.rs:2\n");
    let r = ws.call(&grep, json!({"pattern": "(unclosed"})).await;
    assert!(err(&r).contains("invalid regular expression"));
    let r = ws.call(&grep, json!({"pattern": "nothing-here"})).await;
    assert!(r.success && r.output.starts_with("No matches"));
}

/// Regression: a pattern too large to compile (deeply nested braces)
/// panicked in the matcher's build, which the runtime caught as a crash of
/// the call; it is an invalid pattern, said so.
#[tokio::test]
async fn a_glob_too_large_to_compile_is_an_invalid_pattern() {
    let ws = Ws::new();
    ws.put("x.rs", "");
    let pattern = format!("{}b{}", "{a,".repeat(500), "}".repeat(500));
    let r = ws.call(&GlobTool::new(), json!({ "pattern": pattern })).await;
    assert!(!r.success, "{r:?}");
    let error = r.error.unwrap_or_default();
    assert!(error.starts_with("invalid glob pattern"), "{error}");
}

#[tokio::test]
async fn glob_sorts_newest_first_and_limits() {
    let ws = Ws::new();
    ws.put("a/old.toml", "");
    ws.put("Cargo.toml", "");
    ws.put("b/c/new.toml", "");
    ws.put("x.rs", "");
    let set = |p: &str, secs: u64| {
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        fs::File::options()
            .write(true)
            .open(ws.p(p))
            .unwrap()
            .set_modified(t)
            .unwrap();
    };
    set("a/old.toml", 1_000_000);
    set("Cargo.toml", 2_000_000);
    set("b/c/new.toml", 3_000_000);
    let glob = GlobTool::new();
    let r = ws.call(&glob, json!({"pattern": "**/*.toml"})).await;
    assert_eq!(r.output, "b/c/new.toml\nCargo.toml\na/old.toml\n");
    let r = ws.call(&glob, json!({"pattern": "*.toml"})).await;
    assert_eq!(r.output, "Cargo.toml\n");
    let r = ws.call(&glob, json!({"pattern": "**/*.toml", "limit": 1})).await;
    assert!(
        r.output.starts_with("b/c/new.toml\n[2 more files not shown"),
        "{}",
        r.output
    );
    let r = ws.call(&glob, json!({"pattern": "**/*.toml", "path": "b"})).await;
    assert_eq!(r.output, "b/c/new.toml\n");
    let r = ws.call(&glob, json!({"pattern": "a[" })).await;
    assert!(err(&r).contains("invalid glob"));
    // Like `rg --files -g`: a named file is listed even when hidden or
    // ignored, but hidden and ignored directories are not entered.
    ws.put(".rustfmt.toml", "");
    ws.put(".hidden/h.toml", "");
    ws.put(".gitignore", "*.log\nbuild/\n");
    ws.put("run.log", "");
    ws.put("build/b.log", "");
    set(".rustfmt.toml", 500);
    let r = ws.call(&glob, json!({"pattern": "**/*.toml"})).await;
    assert_eq!(r.output, "b/c/new.toml\nCargo.toml\na/old.toml\n.rustfmt.toml\n");
    let r = ws.call(&glob, json!({"pattern": "**/*.log"})).await;
    assert_eq!(r.output, "run.log\n");
}

#[tokio::test]
async fn ls_depth_markers_ignores_and_limit() {
    let ws = Ws::new();
    ws.put("src/main.rs", "fn main() {}\n");
    ws.put("src/deep/x.rs", "");
    ws.put("target/out", "");
    ws.put(".gitignore", "target/\n");
    std::os::unix::fs::symlink("src/main.rs", ws.p("link")).unwrap();
    let ls = LsTool::new();
    let r = ws.call(&ls, json!({})).await;
    assert_eq!(
        r.output,
        "[file] .gitignore (8B)\n[link] link -> src/main.rs\n[dir]  src/\n"
    );
    let r = ws.call(&ls, json!({"path": "src", "depth": 2})).await;
    assert_eq!(r.output, "[dir]  deep/\n[file] deep/x.rs (0B)\n[file] main.rs (13B)\n");
    let r = ws.call(&ls, json!({"all": true})).await;
    assert!(r.output.contains("[dir]  target/"));
    let r = ws.call(&ls, json!({"depth": 3, "limit": 2})).await;
    assert!(
        r.output.contains("[4 more entries not shown (6 in all)"),
        "{}",
        r.output
    );
    let r = ws.call(&ls, json!({"path": "nope"})).await;
    assert!(err(&r).contains("no such file"));
}

#[tokio::test]
async fn mkdir_is_mkdir_p() {
    let ws = Ws::new();
    let mkdir = MkdirTool::new();
    let r = ws.call(&mkdir, json!({"path": "a/b/c"})).await;
    assert_eq!(r.output, "Created directory a/b/c");
    assert!(ws.p("a/b/c").is_dir());
    let r = ws.call(&mkdir, json!({"path": "a/b"})).await;
    assert_eq!(r.output, "Directory a/b already exists");
    ws.put("f", "");
    let r = ws.call(&mkdir, json!({"path": "f"})).await;
    assert!(err(&r).contains("not a directory"));
    let r = ws.call(&mkdir, json!({"path": ".wield/x"})).await;
    assert!(err(&r).contains("protected"));
    assert_eq!(r.metadata["refused"], true);
}

#[test]
fn the_path_guard_refuses_only_confinement_decisions() {
    let ws = Ws::new();
    let guard = ConfinementGuard(ws.ctx.service::<Confinement>().unwrap());
    assert!(
        guard
            .check("missing/file.txt", wield_core::Access::Read, &ws.ctx)
            .is_ok()
    );
    assert!(guard.check("new/file.txt", wield_core::Access::Write, &ws.ctx).is_ok());
    let e = guard
        .check("../../../etc/passwd", wield_core::Access::Read, &ws.ctx)
        .unwrap_err();
    assert!(
        matches!(&e, Refusal::ToModel(m) if m.contains("outside the read roots")),
        "{e}"
    );
    let e = guard
        .check(".wield/config.toml", wield_core::Access::Write, &ws.ctx)
        .unwrap_err();
    assert!(matches!(&e, Refusal::ToModel(m) if m.contains("protected")), "{e}");
}

#[test]
fn sandbox_config_builds_the_roots() {
    let dir = TempDir::new().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(base.join("ws")).unwrap();
    fs::create_dir_all(base.join("docs")).unwrap();
    let table: toml::Table = toml::from_str(&format!(
        "[sandbox]\nread = [\"{}\", \"/does/not/exist\"]\nprotected = [\".secret\"]\n",
        base.join("docs").display()
    ))
    .unwrap();
    let config = Config::from_table(table).unwrap();
    let conf = confinement_from_config(&config, &base.join("ws"), &[]).unwrap();
    assert!(
        conf.roots(wield_sandbox::fs::Access::Read)
            .contains(&base.join("docs").as_path())
    );
    assert!(
        !conf
            .roots(wield_sandbox::fs::Access::Write)
            .contains(&base.join("docs").as_path())
    );
    assert!(conf.write_atomic(".secret/x", b"x").is_err());
    assert!(conf.write_atomic(".wield/config.toml", b"x").is_err());
    let bad = Config::from_table(toml::from_str("[sandbox]\nread = \"/x\"\n").unwrap()).unwrap();
    assert!(confinement_from_config(&bad, &base.join("ws"), &[]).is_err());
    let _: &Path = conf.workspace();
}

#[tokio::test]
async fn read_uses_the_object_the_path_guard_checked() {
    let ws = Ws::new();
    ws.put("a.txt", "checked\n");
    ws.put("b.txt", "swapped in\n");
    let conf = ws.ctx.service::<Confinement>().unwrap();
    let guard = ConfinementGuard(Arc::clone(&conf));
    guard.check("a.txt", CoreAccess::Read, &ws.ctx).unwrap();
    // Between the check and the tool, another file takes the name: the tool
    // opens what the guard checked, sees it is gone from the name, and says so.
    fs::rename(ws.p("b.txt"), ws.p("a.txt")).unwrap();
    let r = ws.call(&read::ReadTool::new(), json!({"path": "a.txt"})).await;
    assert!(err(&r).contains("changed while it was being opened"), "{r:?}");
    // The resolution is used once; the next call resolves afresh.
    let r = ws.call(&read::ReadTool::new(), json!({"path": "a.txt"})).await;
    assert!(r.output.contains("swapped in"), "{}", r.output);

    // Another path, another access or another confinement: not taken.
    guard.check("a.txt", CoreAccess::Write, &ws.ctx).unwrap();
    let other = ConfinementGuard(Arc::new(Confinement::builder(&ws.root).build().unwrap()));
    other.check("a.txt", CoreAccess::Read, &ws.ctx).unwrap();
    ws.put("c.txt", "third\n");
    fs::rename(ws.p("c.txt"), ws.p("a.txt")).unwrap();
    let r = ws.call(&read::ReadTool::new(), json!({"path": "a.txt"})).await;
    assert!(r.output.contains("third"), "{}", r.output);

    // Refusals still come from the guard.
    let escape = guard.check("../outside", CoreAccess::Read, &ws.ctx).unwrap_err();
    assert!(
        matches!(&escape, Refusal::ToModel(m) if m.contains("outside")),
        "{escape}"
    );
}

#[tokio::test]
async fn edit_changes_the_object_the_path_guard_checked() {
    let ws = Ws::new();
    ws.put("a.txt", "one two\n");
    let r = ws.call(&read::ReadTool::new(), json!({"path": "a.txt"})).await;
    assert!(r.success, "{r:?}");
    let conf = ws.ctx.service::<Confinement>().unwrap();
    let guard = ConfinementGuard(Arc::clone(&conf));
    guard.check("a.txt", CoreAccess::Write, &ws.ctx).unwrap();
    let edit = edit::EditTool::new();
    let r = ws
        .call(&edit, json!({"path": "a.txt", "old_text": "one", "new_text": "three"}))
        .await;
    assert!(r.success, "{r:?}");
    assert_eq!(fs::read_to_string(ws.p("a.txt")).unwrap(), "three two\n");
    // The guard's resolution was taken, not left for the end of the call.
    assert!(ws.ctx.scratch.take::<Checked>(|_| true).is_none());
    // One for a read does not serve a write.
    guard.check("a.txt", CoreAccess::Read, &ws.ctx).unwrap();
    let r = ws
        .call(&edit, json!({"path": "a.txt", "old_text": "two", "new_text": "four"}))
        .await;
    assert!(r.success, "{r:?}");
    assert!(ws.ctx.scratch.take::<Checked>(|c| c.access == Access::Read).is_some());
}

/// The files a session read are the file tools' own session extension: one
/// session's reads are not another's.
#[test]
fn files_read_are_kept_per_session_by_the_file_tools() {
    let one = Session::new("one", true);
    let two = Session::new("two", true);
    let path = Path::new("/ws/a.txt");
    assert!(!was_read(&one, path));
    mark_read(&one, path);
    assert!(was_read(&one, path));
    assert!(!was_read(&two, path));
    assert!(one.get_extension::<ReadLedger>().is_some());
    assert!(two.get_extension::<ReadLedger>().is_none());
}
