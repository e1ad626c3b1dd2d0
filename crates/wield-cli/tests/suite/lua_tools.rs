//! Lua tools as the command line reaches them: listed by `wield tools
//! list`, called by `wield call` with its exit codes, served over MCP, the
//! warnings of files that fail printed on stderr, and a bad setting a usage
//! error (exit 2). What the Lua files do (the sandbox, limits, `ctx.fs`,
//! async sources, resolvers, the `auto_approve` function file, a nested
//! workspace's files left out) is wield-lua's suite
//! (`crates/wield-lua/tests/`); the agent calling one is wield-agent's.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use crate::common::Env;
use crate::shell::support::{Mcp, Ws};

/// The example, as written there.
const WORD_COUNT: &str = include_str!("../../../wield-lua/examples/word_count.lua");

/// A calculator in Flemma's shape: a recursive-descent evaluator of
/// `+ - * / % ^` and parentheses over numbers, nothing else.
const CALC: &str = include_str!("../../../wield-lua/examples/calc.lua");

/// `wield [pre] call --json TOOL ARGS` → (exit code, result, stderr).
fn call(env: &Env, pre: &[&str], tool: &str, args: &Value) -> (i32, Value, String) {
    let out = env
        .wield()
        .args(pre)
        .args(["call", "--json", tool, &args.to_string()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tools_list(env: &Env) -> (String, String) {
    let out = env.wield().args(["tools", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_lua_tool_is_listed_and_wield_call_exits_as_its_approval_decides() {
    let env = Env::new();
    env.put(".wield/tools/word_count.lua", WORD_COUNT);
    env.put(".wield/tools/calc.lua", CALC);
    env.put("notes.txt", "one two  three\nfour\n");
    let (list, _) = tools_list(&env);
    assert!(
        list.lines()
            .any(|l| l.starts_with("word_count ") && l.contains("Count words in a workspace file")),
        "{list}"
    );
    assert!(list.lines().any(|l| l.starts_with("calc ")), "{list}");
    let (code, v, _) = call(&env, &[], "word_count", &json!({"path": "notes.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");
    let (code, v, _) = call(&env, &["--yes"], "word_count", &json!({"path": "notes.txt"}));
    assert_eq!((code, v["output"].as_str()), (0, Some("4")), "{v}");
    let (code, v, _) = call(&env, &[], "calc", &json!({"expression": "2 +"}));
    assert_eq!(code, 1, "{v}");
}

#[test]
fn a_lua_tool_is_served_over_mcp() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.ws.join(".wield/tools")).unwrap();
    std::fs::write(ws.ws.join(".wield/tools/word_count.lua"), WORD_COUNT).unwrap();
    std::fs::write(ws.ws.join(".wield/tools/calc.lua"), CALC).unwrap();
    std::fs::write(
        ws.ws.join(".wield/config.toml"),
        "[approval]\nauto_approve = [\"$standard\", \"word_count\"]\n",
    )
    .unwrap();
    std::fs::write(ws.ws.join("notes.txt"), "a b c\n").unwrap();
    let mut mcp = Mcp::start(&ws, &[]);
    let listed = mcp.request("tools/list", json!({})).to_string();
    assert!(
        listed.contains("word_count") && listed.contains("Count words"),
        "{listed}"
    );
    let (err, text) = mcp.call("word_count", json!({"path": "notes.txt"}));
    assert!(!err && text == "3", "{text}");
    let (err, text) = mcp.call("calc", json!({"expression": "6 * 7"}));
    assert!(!err && text == "42", "{text}");
    assert_eq!(mcp.finish(), 0);
}

/// What loading left out is a warning on stderr naming the file (and the
/// line), and the command goes on.
#[test]
fn load_warnings_are_printed_on_stderr_naming_file_and_line() {
    let env = Env::new();
    env.put(".wield/tools/calc.lua", CALC);
    env.put(
        ".wield/tools/broken.lua",
        "return {\n  name = 'broken',\n  description = = 'x',\n}\n",
    );
    env.put(
        ".wield/tools/clash.lua",
        "return { name = 'read', description = 'R', execute = function() end }",
    );
    env.put(
        ".wield/tools/errs.lua",
        "return { resolve = function(register, done)\n  error('the catalogue is down')\nend }",
    );
    env.put(
        ".wield/tools/never.lua",
        "return { timeout = 30, resolve = function(register, done) end }",
    );
    let (list, stderr) = tools_list(&env);
    assert!(list.contains("calc"), "{list}");
    assert!(stderr.contains("broken.lua:3:"), "{stderr}");
    assert!(
        stderr.contains("Lua tool `read` left out") && stderr.contains("already registered"),
        "{stderr}"
    );
    assert!(
        stderr.contains("errs.lua:2:") && stderr.contains("the catalogue is down"),
        "{stderr}"
    );
    assert!(
        stderr.contains("never.lua") && stderr.contains("without calling done()"),
        "{stderr}"
    );
}

/// A resolver that errors is skipped (wield-lua's suite), and said on
/// stderr.
#[test]
fn a_lua_resolver_that_errors_is_reported_on_stderr() {
    let env = Env::new();
    env.put(".wield/tools/word_count.lua", WORD_COUNT);
    env.put("notes.txt", "a b\n");
    env.put(
        ".wield/resolvers/broken.lua",
        "return { name = 'broken', priority = 70, resolve = function() error('resolver bug') end }",
    );
    let (code, v, stderr) = call(&env, &["--yes"], "word_count", &json!({"path": "notes.txt"}));
    assert_eq!((code, v["output"].as_str()), (0, Some("2")), "{v}");
    assert!(
        stderr.contains("lua:broken") && stderr.contains("resolver bug"),
        "{stderr}"
    );
}

/// In a workspace inside another wield project, stderr says why its Lua
/// tools and resolvers are not loaded.
#[test]
fn a_nested_workspace_s_lua_files_are_said_on_stderr_not_to_load() {
    let env = Env::new();
    std::fs::create_dir_all(env.base.join(".wield")).unwrap();
    env.put(".wield/tools/calc.lua", CALC);
    env.put(
        ".wield/resolvers/yes.lua",
        "return { name = 'yes', resolve = function() return 'approve' end }",
    );
    let (list, stderr) = tools_list(&env);
    assert!(!list.lines().any(|l| l.starts_with("calc ")), "{list}");
    assert!(
        stderr.contains("are not loaded") && stderr.contains("tools"),
        "{stderr}"
    );
    let (code, v, stderr) = call(&env, &[], "web_fetch", &json!({"url": "http://127.0.0.1:9/"}));
    assert_eq!(code, 1, "{v}");
    assert!(stderr.contains("resolvers are not loaded"), "{stderr}");
}

/// An unknown key under a Lua tool's own table is a usage error.
#[test]
fn an_unknown_key_of_a_lua_tool_exits_2_naming_it() {
    let env = Env::new();
    env.put(
        ".wield/tools/greet.lua",
        "return { name = 'greet', description = 'Greet', read_only = true, execute = function() return { success = true, output = 'hi' } end }",
    );
    env.put(".wield/config.toml", "[greet]\ntimeuot = 7\n");
    let (code, _, stderr) = call(&env, &[], "greet", &json!({}));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("greet.timeuot"), "{stderr}");
}
