//! The agent-side built-in tools through the runtime's pipeline, as a
//! person-driven `wield call` runs them: the todo list's one-in-progress
//! rule and promotion within one session, memory (keys that try to leave
//! the store, ranked search, a file edited by hand then searched), skills
//! (disclosed by name and description, loaded on demand, absent without
//! skills) and system_info. The global stores under the user's config
//! directory, several processes writing memory at once, and these tools
//! over MCP are the CLI's suite, which runs `wield` with a HOME of its own;
//! here reads keep to the workspace's store so that the user's is never
//! touched.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use serde_json::{Value, json};
use wield_core::Session;
use wield_core::approval::HeadlessApprover;
use wield_test_support::layout::SECRET;
use wield_test_support::pipeline::Loaded;

use support::Env;

impl Env {
    /// One call as `wield call --json TOOL ARGS` makes it, headless.
    fn call(&self, tool: &str, args: Value) -> (i32, Value) {
        support::call(&self.ws(""), &[], Arc::new(HeadlessApprover), tool, args)
    }

    fn ok(&self, tool: &str, args: Value) -> String {
        let (code, v) = self.call(tool, args.clone());
        assert_eq!(code, 0, "{tool} {args} failed: {v}");
        v["output"].as_str().unwrap().to_owned()
    }

    fn fails(&self, tool: &str, args: Value) -> String {
        let (code, v) = self.call(tool, args.clone());
        assert_eq!(code, 1, "{tool} {args} should fail: {v}");
        v["error"].as_str().unwrap().to_owned()
    }
}

/// Calls in one session of one runtime: (success, output or error).
struct OneSession {
    loaded: Loaded,
    session: Arc<Session>,
}

impl OneSession {
    fn new(e: &Env) -> Self {
        let loaded = Loaded::load(&e.ws(""), &[]).unwrap();
        let session = loaded.session();
        Self { loaded, session }
    }

    fn call(&self, tool: &str, args: Value) -> (bool, String) {
        let (code, v) = self
            .loaded
            .call_in(&self.session, Arc::new(HeadlessApprover), tool, args);
        let text = if code == 0 { &v["output"] } else { &v["error"] };
        (code == 0, text.as_str().unwrap_or_default().to_owned())
    }
}

#[test]
fn a_second_item_in_progress_is_refused_and_nothing_changes() {
    let e = Env::new();
    let s = OneSession::new(&e);
    let (ok, out) = s.call(
        "todo_write",
        json!({"items": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "pending"}]}),
    );
    assert!(
        ok && out.starts_with("2 items: 0 done, 1 in progress, 1 pending"),
        "{out}"
    );
    let (ok, err) = s.call(
        "todo_write",
        json!({"items": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]}),
    );
    assert!(
        !ok && err.contains("at most one item may be in_progress") && err.contains("nothing was changed"),
        "{err}"
    );
    let (ok, list) = s.call("todo_list", json!({}));
    assert!(ok && list.contains("1. [~] a") && list.contains("2. [ ] b"), "{list}");
}

/// The list lives across a session's calls, a refused change leaves it as
/// it was, and finishing an item promotes the next pending one.
#[test]
fn todo_progress_promotes_the_next_pending_item() {
    let e = Env::new();
    let s = OneSession::new(&e);
    let (ok, _) = s.call(
        "todo_write",
        json!({"items": [
            {"content": "one", "status": "in_progress"},
            {"content": "two", "status": "pending"},
            {"content": "three", "status": "pending"}
        ]}),
    );
    assert!(ok);
    let (ok, text) = s.call(
        "todo_progress",
        json!({"updates": [{"index": 3, "status": "in_progress"}]}),
    );
    assert!(!ok && text.contains("at most one item may be in_progress"), "{text}");
    let (ok, text) = s.call("todo_list", json!({}));
    assert!(
        ok && text.contains("1. [~] one") && text.contains("3. [ ] three"),
        "{text}"
    );
    let (ok, text) = s.call("todo_progress", json!({"updates": [{"index": 1, "status": "done"}]}));
    assert!(ok, "{text}");
    assert!(
        text.starts_with("3 items: 1 done, 1 in progress, 1 pending") && text.contains("2. [~] two"),
        "{text}"
    );
    let (ok, text) = s.call("todo_progress", json!({"updates": [{"index": 9, "status": "done"}]}));
    assert!(!ok && text.contains("no item 9"), "{text}");
    // Another session has a list of its own.
    let other = Loaded::load(&e.ws(""), &[]).unwrap();
    let (code, v) = other.call(Arc::new(HeadlessApprover), "todo_list", json!({}));
    assert!(!v.to_string().contains("two"), "{code} {v}");
}

#[test]
fn memory_keys_that_could_leave_the_store_are_refused() {
    let e = Env::new();
    for key in [
        "../escape",
        "../../outside/secret",
        "a/b",
        "/etc/passwd",
        "..",
        ".hidden",
        "back\\slash",
        "nul\u{0}byte",
        "",
    ] {
        let err = e.fails("memory_write", json!({"key": key, "content": "x"}));
        assert!(err.contains("a key is a plain file name"), "{key:?}: {err}");
        let err = e.fails("memory_read", json!({"key": key, "scope": "local"}));
        assert!(err.contains("a key is a plain file name"), "{key:?}: {err}");
    }
    let long = "k".repeat(101);
    assert!(
        e.fails("memory_write", json!({"key": long, "content": "x"}))
            .contains("longer than 100")
    );
    // Nothing was written anywhere: not in the store, not beside it.
    assert!(!e.ws(".wield/memory").exists() || fs::read_dir(e.ws(".wield/memory")).unwrap().count() == 0);
    assert!(!e.ws(".wield/escape.md").exists());
    e.assert_outside_untouched();
    // A link planted in the store does not lead out of it.
    fs::create_dir_all(e.ws(".wield/memory")).unwrap();
    std::os::unix::fs::symlink(e.base.join("outside/secret.txt"), e.ws(".wield/memory/leak.md")).unwrap();
    let err = e.fails("memory_read", json!({"key": "leak", "scope": "local"}));
    assert!(!err.contains(SECRET), "{err}");
    e.fails("memory_write", json!({"key": "leak", "content": "overwritten"}));
    e.assert_outside_untouched();
}

#[test]
fn memory_is_written_listed_read_and_searched_with_ranked_snippets() {
    let e = Env::new();
    let local = |args: Value| {
        let mut args = args;
        args["scope"] = json!("local");
        args
    };
    let out = e.ok(
        "memory_write",
        json!({"key": "deploy", "content": "How to deploy\nPress the blue button, then wait for the green light."}),
    );
    assert!(out.contains("saved local memory"), "{out}");
    e.ok(
        "memory_write",
        json!({"key": "style", "content": "Code style\nTabs, never spaces; the button component is legacy."}),
    );
    assert_eq!(
        fs::read_to_string(e.ws(".wield/memory/deploy.md")).unwrap(),
        "How to deploy\nPress the blue button, then wait for the green light."
    );
    let listed = e.ok("memory_read", local(json!({})));
    assert_eq!(listed, "- deploy (local): How to deploy\n- style (local): Code style\n");
    assert_eq!(
        e.ok("memory_read", local(json!({"key": "style"}))),
        "Code style\nTabs, never spaces; the button component is legacy."
    );
    let err = e.fails("memory_read", local(json!({"key": "nope"})));
    assert!(
        err.contains("there is no memory \"nope\"") && err.contains("deploy, style"),
        "{err}"
    );
    // Ranked: the entry where the words matter more comes first.
    let found = e.ok("memory_read", local(json!({"query": "blue button"})));
    let lines: Vec<&str> = found.lines().collect();
    assert_eq!(lines.len(), 2, "{found}");
    assert!(
        lines[0].starts_with("1. deploy (local): ") && lines[0].contains("**blue**"),
        "{found}"
    );
    assert!(lines[1].starts_with("2. style (local): "), "{found}");
    assert!(
        e.ok("memory_read", local(json!({"query": "legacy"})))
            .starts_with("1. style (local)")
    );
    // Query syntax is taken as words.
    e.ok("memory_read", local(json!({"query": "NEAR(\"blue\" OR *"})));
    // The index is private.
    let mode = fs::metadata(e.ws(".wield/index")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

/// A memory file edited by hand (or removed) is searched as it is now.
#[test]
fn a_memory_file_edited_by_hand_is_found_by_search() {
    let e = Env::new();
    let search = |q: &str| e.ok("memory_read", json!({"query": q, "scope": "local"}));
    e.ok(
        "memory_write",
        json!({"key": "db", "content": "The database is postgres"}),
    );
    assert!(search("postgres").starts_with("1. db"));
    fs::write(e.ws(".wield/memory/db.md"), "The database moved to sqlite").unwrap();
    fs::write(e.ws(".wield/memory/added.md"), "Written by hand: the cache is redis").unwrap();
    assert!(search("postgres").starts_with("No memory entry"));
    assert!(search("sqlite").starts_with("1. db"));
    assert!(search("redis").starts_with("1. added"));
    fs::remove_file(e.ws(".wield/memory/added.md")).unwrap();
    assert!(search("redis").starts_with("No memory entry"));
}

fn skill(e: &Env, dir: &str, name: &str, description: &str, body: &str) {
    e.put(
        &format!("{dir}/{name}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
    );
}

#[test]
fn skills_are_disclosed_by_name_and_loaded_on_demand() {
    let e = Env::new();
    // No skill, no tool.
    let err = e.fails("skill", json!({"name": "x"}));
    assert!(err.contains("skill"), "{err}");
    skill(
        &e,
        ".wield/skills",
        "release",
        "Cut a release of the project",
        "Run the SECRET-STEPS.\n",
    );
    e.put(".wield/skills/release/scripts/tag.sh", "git tag\n");
    skill(&e, ".claude/skills", "review", "Review a change", "Read the diff.\n");
    skill(&e, ".agents/skills", "triage", "Sort new issues", "Label them.\n");
    let listed = Loaded::load(&e.ws(""), &[]).unwrap().listed();
    let (_, shown) = listed.split_once("\nskill  ").unwrap();
    for line in [
        "- release: Cut a release of the project",
        "- review: Review a change",
        "- triage: Sort new issues",
    ] {
        assert!(shown.contains(line), "{line} missing: {shown}");
    }
    assert!(
        !shown.contains("SECRET-STEPS"),
        "a body leaked into the description: {shown}"
    );
    let out = e.ok("skill", json!({"name": "release"}));
    assert!(out.contains("Run the SECRET-STEPS."), "{out}");
    assert!(out.contains("- scripts/tag.sh"), "{out}");
    assert!(!out.contains("- SKILL.md"), "{out}");
    assert!(e.ok("skill", json!({"name": "triage"})).contains("Label them."));
    // Named in the order of their directories (the user's global ones,
    // the CLI's suite's, would come second).
    let err = e.fails("skill", json!({"name": "deploy"}));
    assert!(err.contains("there is no skill \"deploy\""), "{err}");
    let at = |name: &str| err.find(name).unwrap_or_else(|| panic!("{name}: {err}"));
    assert!(at("release") < at("review") && at("review") < at("triage"), "{err}");
}

#[test]
fn system_info_names_the_system_the_workspace_and_the_version() {
    let e = Env::new();
    let (code, v) = e.call("system_info", json!({}));
    assert_eq!(code, 0, "{v}");
    let meta = &v["metadata"];
    assert_eq!(meta["arch"], std::env::consts::ARCH);
    assert!(meta["os"].as_str().unwrap().starts_with(std::env::consts::OS));
    assert!(meta["kernel"].as_str().unwrap().starts_with("Linux "), "{v}");
    assert_eq!(meta["workspace"], e.ws("").to_string_lossy().trim_end_matches('/'));
    assert_eq!(meta["wield"], env!("CARGO_PKG_VERSION"));
    assert_eq!(meta["shell"], "bash -c");
    let out = v["output"].as_str().unwrap();
    assert!(out.contains("sandbox: "), "{out}");
    let (_, off) = support::call(
        &e.ws(""),
        &["sandbox.enabled=false"],
        Arc::new(HeadlessApprover),
        "system_info",
        json!({}),
    );
    assert!(
        off["metadata"]["sandbox"].as_str().unwrap().starts_with("none"),
        "{off}"
    );
}
