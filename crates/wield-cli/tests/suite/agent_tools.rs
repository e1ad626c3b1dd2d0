//! The agent-side built-in tools through the real `wield` binary: the todo
//! list's one-in-progress rule and promotion (over MCP, where a connection
//! is one session), memory (keys that try to leave the store, concurrent
//! writers in several processes, a file edited by hand then searched, the
//! global store), skills (disclosed by name and description, loaded on
//! demand, absent without skills) and system_info.
#![allow(clippy::unwrap_used)]

use std::fs;

use serde_json::{Value, json};

use crate::common::Env;
use crate::shell::support::{Mcp, Ws};

fn call(env: &Env, tool: &str, args: &Value) -> (i32, Value) {
    let out = env
        .wield()
        .args(["call", "--json", tool, &args.to_string()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{tool}: stdout is not JSON: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

fn ok(env: &Env, tool: &str, args: Value) -> String {
    let (code, v) = call(env, tool, &args);
    assert_eq!(code, 0, "{tool} {args} failed: {v}");
    v["output"].as_str().unwrap().to_owned()
}

fn fails(env: &Env, tool: &str, args: Value) -> String {
    let (code, v) = call(env, tool, &args);
    assert_eq!(code, 1, "{tool} {args} should fail: {v}");
    v["error"].as_str().unwrap().to_owned()
}

#[test]
fn a_second_item_in_progress_is_refused_and_nothing_changes() {
    let env = Env::new();
    let out = ok(
        &env,
        "todo_write",
        json!({"items": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "pending"}]}),
    );
    assert!(out.starts_with("2 items: 0 done, 1 in progress, 1 pending"), "{out}");
    let err = fails(
        &env,
        "todo_write",
        json!({"items": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]}),
    );
    assert!(
        err.contains("at most one item may be in_progress") && err.contains("nothing was changed"),
        "{err}"
    );
}

/// One MCP connection is one session: the list lives across its calls, a
/// refused change leaves it as it was, and finishing an item promotes the
/// next pending one.
#[test]
fn todo_progress_promotes_the_next_pending_item_over_mcp() {
    let ws = Ws::new();
    let mut mcp = Mcp::start(&ws, &[]);
    let (err, _) = mcp.call(
        "todo_write",
        json!({"items": [
            {"content": "one", "status": "in_progress"},
            {"content": "two", "status": "pending"},
            {"content": "three", "status": "pending"}
        ]}),
    );
    assert!(!err);
    let (err, text) = mcp.call(
        "todo_progress",
        json!({"updates": [{"index": 3, "status": "in_progress"}]}),
    );
    assert!(err && text.contains("at most one item may be in_progress"), "{text}");
    let (err, text) = mcp.call("todo_list", json!({}));
    assert!(
        !err && text.contains("1. [~] one") && text.contains("3. [ ] three"),
        "{text}"
    );
    let (err, text) = mcp.call("todo_progress", json!({"updates": [{"index": 1, "status": "done"}]}));
    assert!(!err, "{text}");
    assert!(
        text.starts_with("3 items: 1 done, 1 in progress, 1 pending") && text.contains("2. [~] two"),
        "{text}"
    );
    let (err, text) = mcp.call("todo_progress", json!({"updates": [{"index": 9, "status": "done"}]}));
    assert!(err && text.contains("no item 9"), "{text}");
    assert_eq!(mcp.finish(), 0);
}

/// Memory, skills and system_info answer over MCP as through `wield call`.
#[test]
fn memory_skills_and_system_info_work_over_mcp() {
    let ws = Ws::new();
    let dir = ws.ws.join(".wield/skills/lint");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        "---\nname: lint\ndescription: Lint the code\n---\nRun the linter.\n",
    )
    .unwrap();
    let mut mcp = Mcp::start(&ws, &[]);
    let listed = mcp.request("tools/list", json!({})).to_string();
    assert!(
        listed.contains("- lint: Lint the code") && !listed.contains("Run the linter"),
        "{listed}"
    );
    let (err, text) = mcp.call("memory_write", json!({"key": "ci", "content": "CI runs on every push"}));
    assert!(!err, "{text}");
    let (err, text) = mcp.call("memory_read", json!({"query": "push"}));
    assert!(!err && text.starts_with("1. ci (local): "), "{text}");
    let (err, text) = mcp.call("memory_write", json!({"key": "../ci", "content": "x"}));
    assert!(err && text.contains("plain file name"), "{text}");
    let (err, text) = mcp.call("skill", json!({"name": "lint"}));
    assert!(!err && text.contains("Run the linter."), "{text}");
    let (err, text) = mcp.call("system_info", json!({}));
    assert!(!err && text.contains("arch: "), "{text}");
    assert_eq!(mcp.finish(), 0);
}

#[test]
fn memory_keys_that_could_leave_the_store_are_refused() {
    let env = Env::new();
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
        let err = fails(&env, "memory_write", json!({"key": key, "content": "x"}));
        assert!(err.contains("a key is a plain file name"), "{key:?}: {err}");
        let err = fails(&env, "memory_read", json!({"key": key}));
        assert!(err.contains("a key is a plain file name"), "{key:?}: {err}");
    }
    let long = "k".repeat(101);
    assert!(fails(&env, "memory_write", json!({"key": long, "content": "x"})).contains("longer than 100"));
    // Nothing was written anywhere: not in the store, not beside it.
    assert!(!env.ws(".wield/memory").exists() || fs::read_dir(env.ws(".wield/memory")).unwrap().count() == 0);
    assert!(!env.ws(".wield/escape.md").exists());
    assert_eq!(fs::read_dir(env.base.join("outside")).unwrap().count(), 1);
    // A link planted in the store does not lead out of it.
    fs::create_dir_all(env.ws(".wield/memory")).unwrap();
    std::os::unix::fs::symlink(env.base.join("outside/secret.txt"), env.ws(".wield/memory/leak.md")).unwrap();
    let err = fails(&env, "memory_read", json!({"key": "leak"}));
    assert!(!err.contains(crate::common::SECRET), "{err}");
    fails(&env, "memory_write", json!({"key": "leak", "content": "overwritten"}));
    assert_eq!(
        fs::read_to_string(env.base.join("outside/secret.txt")).unwrap(),
        crate::common::SECRET
    );
}

#[test]
fn memory_is_written_listed_read_and_searched_with_ranked_snippets() {
    let env = Env::new();
    ok(
        &env,
        "memory_write",
        json!({"key": "deploy", "content": "How to deploy\nPress the blue button, then wait for the green light."}),
    );
    ok(
        &env,
        "memory_write",
        json!({"key": "style", "content": "Code style\nTabs, never spaces; the button component is legacy."}),
    );
    let out = ok(
        &env,
        "memory_write",
        json!({"key": "me", "content": "Prefers short answers", "scope": "global"}),
    );
    assert!(out.contains("saved global memory"), "{out}");
    assert!(env.base.join("home/.config/wield/memory/me.md").is_file());
    assert_eq!(
        fs::read_to_string(env.ws(".wield/memory/deploy.md")).unwrap(),
        "How to deploy\nPress the blue button, then wait for the green light."
    );
    let listed = ok(&env, "memory_read", json!({}));
    assert_eq!(
        listed,
        "- deploy (local): How to deploy\n- style (local): Code style\n- me (global): Prefers short answers\n"
    );
    assert_eq!(
        ok(&env, "memory_read", json!({"key": "style"})),
        "Code style\nTabs, never spaces; the button component is legacy."
    );
    let err = fails(&env, "memory_read", json!({"key": "nope"}));
    assert!(
        err.contains("there is no memory \"nope\"") && err.contains("deploy, style, me"),
        "{err}"
    );
    // Ranked: the entry where the words matter more comes first.
    let found = ok(&env, "memory_read", json!({"query": "blue button"}));
    let lines: Vec<&str> = found.lines().collect();
    assert_eq!(lines.len(), 2, "{found}");
    assert!(
        lines[0].starts_with("1. deploy (local): ") && lines[0].contains("**blue**"),
        "{found}"
    );
    assert!(lines[1].starts_with("2. style (local): "), "{found}");
    assert!(ok(&env, "memory_read", json!({"query": "short", "scope": "global"})).starts_with("1. me (global)"));
    assert!(ok(&env, "memory_read", json!({"query": "short", "scope": "local"})).starts_with("No memory entry"));
    // Query syntax is taken as words.
    ok(&env, "memory_read", json!({"query": "NEAR(\"blue\" OR *"}));
    // The index is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(env.ws(".wield/index")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

/// A memory file edited by hand (or removed) is searched as it is now.
#[test]
fn a_memory_file_edited_by_hand_is_found_by_search() {
    let env = Env::new();
    ok(
        &env,
        "memory_write",
        json!({"key": "db", "content": "The database is postgres"}),
    );
    assert!(ok(&env, "memory_read", json!({"query": "postgres"})).starts_with("1. db"));
    fs::write(env.ws(".wield/memory/db.md"), "The database moved to sqlite").unwrap();
    fs::write(env.ws(".wield/memory/added.md"), "Written by hand: the cache is redis").unwrap();
    assert!(ok(&env, "memory_read", json!({"query": "postgres"})).starts_with("No memory entry"));
    assert!(ok(&env, "memory_read", json!({"query": "sqlite"})).starts_with("1. db"));
    assert!(ok(&env, "memory_read", json!({"query": "redis"})).starts_with("1. added"));
    fs::remove_file(env.ws(".wield/memory/added.md")).unwrap();
    assert!(ok(&env, "memory_read", json!({"query": "redis"})).starts_with("No memory entry"));
}

/// Several processes write at once, to different keys and to the same
/// one, and search at once: every entry is whole and found.
#[test]
fn concurrent_memory_writes_from_several_processes_are_all_whole() {
    let env = Env::new();
    let children: Vec<std::process::Child> = (0..8)
        .flat_map(|i| {
            let own = json!({"key": format!("note{i}"), "content": format!("entry number{i} alpha")});
            let shared = json!({"key": "shared", "content": format!("writer{i} ").repeat(2000)});
            let search = json!({"query": "alpha"});
            [("memory_write", own), ("memory_write", shared), ("memory_read", search)]
        })
        .map(|(tool, args)| {
            env.wield_env()
                .command()
                .args(["call", "--json", tool, &args.to_string()])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["success"], true, "{v}");
    }
    let shared = fs::read_to_string(env.ws(".wield/memory/shared.md")).unwrap();
    let writer = shared.split(' ').next().unwrap().to_owned();
    assert_eq!(shared, format!("{writer} ").repeat(2000), "a torn or mixed entry");
    let found = ok(&env, "memory_read", json!({"query": "alpha"}));
    for i in 0..8 {
        assert!(found.contains(&format!("note{i} (local)")), "{found}");
    }
    let names: Vec<String> = fs::read_dir(env.ws(".wield/memory"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 9, "temp files left: {names:?}");
}

fn skill(env: &Env, dir: &str, name: &str, description: &str, body: &str) {
    env.put(
        &format!("{dir}/{name}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
    );
}

#[test]
fn skills_are_disclosed_by_name_and_loaded_on_demand() {
    let env = Env::new();
    // No skill, no tool.
    let err = fails(&env, "skill", json!({"name": "x"}));
    assert!(err.contains("skill"), "{err}");
    skill(
        &env,
        ".wield/skills",
        "release",
        "Cut a release of the project",
        "Run the SECRET-STEPS.\n",
    );
    env.put(".wield/skills/release/scripts/tag.sh", "git tag\n");
    skill(&env, ".claude/skills", "review", "Review a change", "Read the diff.\n");
    skill(&env, ".agents/skills", "triage", "Sort new issues", "Label them.\n");
    let home_skill = env.base.join("home/.config/wield/skills/notes");
    fs::create_dir_all(&home_skill).unwrap();
    fs::write(
        home_skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Keep meeting notes\n---\nUse markdown.\n",
    )
    .unwrap();
    let shown = env.wield().args(["tools", "show", "skill"]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    for line in [
        "- release: Cut a release of the project",
        "- review: Review a change",
        "- triage: Sort new issues",
        "- notes: Keep meeting notes",
    ] {
        assert!(shown.contains(line), "{line} missing: {shown}");
    }
    assert!(
        !shown.contains("SECRET-STEPS"),
        "a body leaked into the description: {shown}"
    );
    let out = ok(&env, "skill", json!({"name": "release"}));
    assert!(out.contains("Run the SECRET-STEPS."), "{out}");
    assert!(out.contains("- scripts/tag.sh"), "{out}");
    assert!(!out.contains("- SKILL.md"), "{out}");
    assert!(ok(&env, "skill", json!({"name": "notes"})).contains("Use markdown."));
    let err = fails(&env, "skill", json!({"name": "deploy"}));
    assert!(
        err.contains("there is no skill \"deploy\"") && err.contains("release, notes, review, triage"),
        "{err}"
    );
}

#[test]
fn system_info_names_the_system_the_workspace_and_the_version() {
    let env = Env::new();
    let (code, v) = call(&env, "system_info", &json!({}));
    assert_eq!(code, 0, "{v}");
    let meta = &v["metadata"];
    assert_eq!(meta["arch"], std::env::consts::ARCH);
    assert!(meta["os"].as_str().unwrap().starts_with(std::env::consts::OS));
    assert!(meta["kernel"].as_str().unwrap().starts_with("Linux "), "{v}");
    assert_eq!(meta["workspace"], env.ws("").to_string_lossy().trim_end_matches('/'));
    assert_eq!(meta["wield"], env!("CARGO_PKG_VERSION"));
    assert_eq!(meta["shell"], "bash -c");
    let out = v["output"].as_str().unwrap();
    assert!(out.contains("sandbox: "), "{out}");
    let out = env
        .wield()
        .args(["--set", "sandbox.enabled=false", "call", "--json", "system_info", "{}"])
        .output()
        .unwrap();
    let off: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        off["metadata"]["sandbox"].as_str().unwrap().starts_with("none"),
        "{off}"
    );
}
