//! The agent-side built-in tools as `wield` reaches them: over MCP (where a
//! connection is one session, so the todo list lives across its calls),
//! memory written by several `wield` processes at once, and the global
//! memory and skills in the config directory under `wield`'s HOME. What
//! the tools do (the todo rules, memory keys, search and hand edits,
//! skills, system_info) is wield-tools' suite
//! (`crates/wield-tools/tests/agent_tools.rs`), in one process whose HOME
//! is the user's.
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

/// One MCP connection is one session: the list one call wrote is there
/// for the next, and a refused change is an error result. (The list's
/// rules and promotion are wield-tools' suite.)
#[test]
fn the_todo_list_lives_across_the_calls_of_one_mcp_connection() {
    let ws = Ws::new();
    let mut mcp = Mcp::start(&ws, &[]);
    let items = json!([{"content": "first", "status": "in_progress"}, {"content": "second", "status": "pending"}]);
    let (err, _) = mcp.call("todo_write", json!({ "items": items }));
    assert!(!err);
    let (err, text) = mcp.call(
        "todo_progress",
        json!({"updates": [{"index": 2, "status": "in_progress"}]}),
    );
    assert!(err && text.contains("at most one item may be in_progress"), "{text}");
    let (err, text) = mcp.call("todo_progress", json!({"updates": [{"index": 1, "status": "done"}]}));
    assert!(!err && text.starts_with("2 items: 1 done, 1 in progress"), "{text}");
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

/// Several processes write at once, to different keys and to the same
/// one, and search at once: every entry is whole and found. Processes, not
/// threads: the stores' locks and atomic renames are between processes,
/// which a library test in one process cannot be.
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

/// The global store is `memory/` in the config directory under HOME, read
/// after the workspace's.
#[test]
fn global_memory_lives_under_home_and_is_read_after_the_local() {
    let env = Env::new();
    ok(
        &env,
        "memory_write",
        json!({"key": "deploy", "content": "How to deploy"}),
    );
    let out = ok(
        &env,
        "memory_write",
        json!({"key": "me", "content": "Prefers short answers", "scope": "global"}),
    );
    assert!(out.contains("saved global memory"), "{out}");
    assert_eq!(
        fs::read_to_string(env.base.join("home/.config/wield/memory/me.md")).unwrap(),
        "Prefers short answers"
    );
    assert_eq!(
        ok(&env, "memory_read", json!({})),
        "- deploy (local): How to deploy\n- me (global): Prefers short answers\n"
    );
    let err = fails(&env, "memory_read", json!({"key": "nope"}));
    assert!(err.contains("deploy, me"), "{err}");
    assert!(ok(&env, "memory_read", json!({"query": "short"})).starts_with("1. me (global)"));
    assert!(ok(&env, "memory_read", json!({"query": "short", "scope": "global"})).starts_with("1. me (global)"));
    assert!(ok(&env, "memory_read", json!({"query": "short", "scope": "local"})).starts_with("No memory entry"));
}

fn skill(env: &Env, dir: &str, name: &str, description: &str, body: &str) {
    env.put(
        &format!("{dir}/{name}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
    );
}

/// The global skills are `skills/` in the config directory under HOME,
/// disclosed by `wield tools show skill` after the workspace's own.
#[test]
fn global_skills_live_under_home_after_the_workspace_s() {
    let env = Env::new();
    skill(
        &env,
        ".wield/skills",
        "release",
        "Cut a release of the project",
        "Tag it.\n",
    );
    skill(&env, ".claude/skills", "review", "Review a change", "Read the diff.\n");
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
        "- notes: Keep meeting notes",
    ] {
        assert!(shown.contains(line), "{line} missing: {shown}");
    }
    assert!(ok(&env, "skill", json!({"name": "notes"})).contains("Use markdown."));
    let err = fails(&env, "skill", json!({"name": "deploy"}));
    assert!(err.contains("release, notes, review"), "{err}");
}
