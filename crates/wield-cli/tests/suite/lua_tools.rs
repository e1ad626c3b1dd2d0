//! Lua tools through the real `wield` binary: listed, called, served over
//! MCP and used by the agent; the sandbox (forbidden globals, memory and
//! instruction limits, the file tools' escape corpus through `ctx.fs`);
//! async sources; Lua approval resolvers and the `auto_approve` function
//! file.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Env, SECRET};
use crate::scripted_provider::{Scripted, Turn};
use crate::shell::support::{Mcp, Ws};
use wield_test_support::layout::{DOTDOT_ESCAPES, LINK_ESCAPES, NUL_ESCAPE};

/// The issue's example, as written there.
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
fn word_count_and_the_calculator_are_listed_and_called() {
    let env = Env::new();
    env.put(".wield/tools/word_count.lua", WORD_COUNT);
    env.put(".wield/tools/calc.lua", CALC);
    env.put("notes.txt", "one two  three\nfour\n");
    let (list, _) = tools_list(&env);
    assert!(
        list.contains("word_count") && list.contains("Count words in a workspace file"),
        "{list}"
    );
    assert!(list.contains("calc"), "{list}");

    // Not read-only: it needs approval like any other such tool.
    let (code, v, _) = call(&env, &[], "word_count", &json!({"path": "notes.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");
    let (code, v, _) = call(&env, &["--yes"], "word_count", &json!({"path": "notes.txt"}));
    assert_eq!((code, v["output"].as_str()), (0, Some("4")), "{v}");
    // The schema is validated before the tool runs.
    let (code, v, _) = call(&env, &["--yes"], "word_count", &json!({"file": "notes.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("path"), "{v}");

    // Read-only: approved by `$standard`.
    for (expr, want) in [("(2 + 3) * 4", "20"), ("2 ^ 10 - 24", "1000"), ("7 / 2", "3.5")] {
        let (code, v, _) = call(&env, &[], "calc", &json!({"expression": expr}));
        assert_eq!((code, v["output"].as_str()), (0, Some(want)), "{expr}: {v}");
    }
    for expr in ["os.exit(1)", "1 / 0", "2 +"] {
        let (code, v, _) = call(&env, &[], "calc", &json!({"expression": expr}));
        assert_eq!(code, 1, "{expr}: {v}");
    }
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

#[test]
fn the_agent_calls_a_lua_tool() {
    let provider = Scripted::start(vec![
        Turn::Call("word_count", json!({ "path": "notes.txt" })),
        Turn::Text("notes.txt has 4 words."),
    ]);
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        &format!(
            "{}\n[approval]\nauto_approve = [\"$standard\", \"word_count\"]\n",
            provider.config()
        ),
    );
    env.put(".wield/tools/word_count.lua", WORD_COUNT);
    env.put("notes.txt", "one two three four\n");
    let out = env
        .wield()
        .args(["run", "--headless", "-p", "How many words?"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "notes.txt has 4 words.\n");
    let requests = provider.requests();
    let offered = requests[0]["tools"].to_string();
    assert!(offered.contains("word_count"), "{offered}");
    let messages = requests[1]["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["content"], "4", "{result}");
}

/// Reports the type of every forbidden global and what the ways around
/// them answer.
const PROBE: &str = r#"
return {
  name = "probe", description = "What the sandbox has", read_only = true,
  execute = function(input, ctx)
    local out = {}
    for _, n in ipairs({ "os", "io", "debug", "package", "dofile", "loadfile", "collectgarbage", "coroutine" }) do
      out[n] = type(_G[n])
    end
    out.dump = type(string.dump)
    out.require_outside = tostring(select(2, pcall(require, "../../outside/secret")))
    out.require_abs = tostring(select(2, pcall(require, "/etc/passwd")))
    out.bytecode = tostring(select(2, load("\27Lua\84\0")))
    out.binary_mode = tostring(select(2, load("return 1", "x", "b")))
    return { success = true, output = out }
  end,
}
"#;

#[test]
fn every_forbidden_global_is_absent() {
    let env = Env::new();
    env.put(".wield/tools/probe.lua", PROBE);
    env.put("outside.lua", "return 'escaped'");
    let (code, v, _) = call(&env, &[], "probe", &json!({}));
    assert_eq!(code, 0, "{v}");
    let got: Value = serde_json::from_str(v["output"].as_str().unwrap()).unwrap();
    for name in [
        "os",
        "io",
        "debug",
        "package",
        "dofile",
        "loadfile",
        "collectgarbage",
        "coroutine",
        "dump",
    ] {
        assert_eq!(got[name], "nil", "{name}: {got}");
    }
    for key in ["require_outside", "require_abs"] {
        let err = got[key].as_str().unwrap();
        assert!(err.contains("inside the tools directory"), "{key}: {err}");
    }
    assert!(
        got["bytecode"]
            .as_str()
            .unwrap()
            .contains("binary chunks are not allowed"),
        "{got}"
    );
    assert!(
        got["binary_mode"].as_str().unwrap().contains("only text chunks"),
        "{got}"
    );
}

#[test]
fn the_memory_and_instruction_limits_end_a_call_with_an_error() {
    let env = Env::new();
    env.put(
        ".wield/tools/hog.lua",
        "return { name = 'hog', description = 'H', read_only = true, execute = function()\n  local t = {}\n  for i = 1, 1e9 do t[i] = ('x'):rep(1000) .. i end\nend }",
    );
    env.put(
        ".wield/tools/spin.lua",
        "return { name = 'spin', description = 'S', read_only = true, execute = function() while true do end end }",
    );
    env.put(
        ".wield/config.toml",
        "[lua]\nmemory_limit = \"16MB\"\nmax_instructions = 2000000\n",
    );
    let (code, v, stderr) = call(&env, &[], "hog", &json!({}));
    assert_eq!(code, 1, "{v} {stderr}");
    assert!(v["error"].as_str().unwrap().contains("memory"), "{v}");
    let start = Instant::now();
    let (code, v, _) = call(&env, &[], "spin", &json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("more than 2000000 instructions"),
        "{v}"
    );
    assert!(start.elapsed() < Duration::from_secs(20));

    // With a budget too large to run out, the call's timeout ends it.
    env.put(
        ".wield/config.toml",
        "[lua]\nmax_instructions = 1000000000000000\n[spin]\ntimeout = 1\n",
    );
    let start = Instant::now();
    let (code, v, _) = call(&env, &[], "spin", &json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("ran past its 1s timeout"), "{v}");
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
}

/// `ctx.fs.read`, `write` and `list` of `input.path`: what each answered.
const PEEK: &str = r#"
return {
  name = "peek", description = "Try a path", input_schema = { type = "object", properties = { path = { type = "string" } } },
  execute = function(input, ctx)
    local _, read_err = ctx.fs.read(input.path)
    local _, write_err = ctx.fs.write(input.path, "pwned")
    local _, list_err = ctx.fs.list(input.path)
    return { success = true, output = { read = read_err or "READ", write = write_err or "WROTE", list = list_err or "LISTED",
      writable = ctx.sandbox.is_path_writable(input.path) } }
  end,
}
"#;

#[test]
fn ctx_fs_refuses_the_file_tools_escape_corpus() {
    let env = Env::new();
    env.put(".wield/tools/peek.lua", PEEK);
    env.put("sub/x.txt", "x");
    env.put("a.txt", "a");
    env.outside_links();
    let mut paths: Vec<String> = DOTDOT_ESCAPES
        .iter()
        .chain(LINK_ESCAPES)
        .map(|p| (*p).to_owned())
        .collect();
    paths.extend(env.absolute_escapes());
    for p in &paths {
        let (code, v, _) = call(&env, &["--yes"], "peek", &json!({ "path": p }));
        assert_eq!(code, 0, "{p}: {v}");
        let got: Value = serde_json::from_str(v["output"].as_str().unwrap()).unwrap();
        assert!(
            got["read"].as_str().unwrap().contains("outside the read roots"),
            "{p}: {got}"
        );
        assert!(
            got["write"].as_str().unwrap().contains("outside the write roots"),
            "{p}: {got}"
        );
        assert!(
            got["list"].as_str().unwrap().contains("outside the read roots"),
            "{p}: {got}"
        );
        assert_eq!(got["writable"], false, "{p}: {got}");
        assert!(!got.to_string().contains(SECRET), "{p} leaked the secret: {got}");
    }
    let (_, v, _) = call(&env, &["--yes"], "peek", &json!({ "path": NUL_ESCAPE }));
    assert!(v["output"].as_str().unwrap().contains("NUL byte"), "{v}");
    for p in [".wield/config.toml", ".git/config", "sub/.git/hooks/pre-commit"] {
        let (_, v, _) = call(&env, &["--yes"], "peek", &json!({ "path": p }));
        let got: Value = serde_json::from_str(v["output"].as_str().unwrap()).unwrap();
        assert_ne!(got["write"], "WROTE", "{p}: {got}");
        assert_eq!(got["writable"], false, "{p}: {got}");
    }
    assert!(!env.ws(".wield/config.toml").exists() && !env.ws(".git").exists());
    for dir in ["outside", "ws-evil"] {
        assert_eq!(
            std::fs::read_to_string(env.base.join(dir).join("secret.txt")).unwrap(),
            SECRET
        );
        assert_eq!(
            std::fs::read_dir(env.base.join(dir)).unwrap().count(),
            1,
            "{dir} changed"
        );
    }
}

#[test]
fn async_sources_register_fail_and_time_out_without_blocking() {
    let env = Env::new();
    env.put(
        ".wield/tools/three.lua",
        r#"return { timeout = 5, resolve = function(register, done)
             for i = 1, 3 do
               register("gen_" .. i, { description = "Generated tool " .. i, read_only = true,
                 execute = function() return { success = true, output = "gen " .. i } end })
             end
             done()
             done("a second call is harmless")
           end }"#,
    );
    env.put(
        ".wield/tools/never.lua",
        "return { timeout = 30, resolve = function(register, done) register('late', { description = 'L', execute = function() end }) end }",
    );
    env.put(
        ".wield/tools/stuck.lua",
        "return { timeout = 1, resolve = function(register, done) while true do end end }",
    );
    env.put(
        ".wield/tools/errs.lua",
        "return { resolve = function(register, done)\n  error('the catalogue is down')\nend }",
    );
    let start = Instant::now();
    let (list, stderr) = tools_list(&env);
    assert!(start.elapsed() < Duration::from_secs(8), "{:?}", start.elapsed());
    for name in ["gen_1", "gen_2", "gen_3"] {
        assert!(list.contains(name), "{name}: {list}");
    }
    assert!(!list.lines().any(|l| l.starts_with("late ")), "{list}");
    // Returned without `done`: reported at once, not after its 30 s.
    assert!(
        stderr.contains("never.lua") && stderr.contains("without calling done()"),
        "{stderr}"
    );
    // Stopped by its timeout or its instruction budget, whichever comes first.
    let stuck = stderr.lines().find(|l| l.contains("stuck.lua")).unwrap_or_default();
    assert!(stuck.contains("time") || stuck.contains("instructions"), "{stderr}");
    assert!(
        stderr.contains("errs.lua") && stderr.contains("errs.lua:2:") && stderr.contains("the catalogue is down"),
        "{stderr}"
    );
    let (code, v, _) = call(&env, &[], "gen_2", &json!({}));
    assert_eq!((code, v["output"].as_str()), (0, Some("gen 2")), "{v}");
}

#[test]
fn a_file_that_fails_to_load_is_a_warning_naming_file_and_line() {
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
    let (list, stderr) = tools_list(&env);
    assert!(list.contains("calc"), "{list}");
    assert!(stderr.contains("broken.lua:3:"), "{stderr}");
    assert!(
        stderr.contains("Lua tool `read` left out") && stderr.contains("already registered"),
        "{stderr}"
    );
    let (code, v, _) = call(&env, &[], "calc", &json!({"expression": "1+1"}));
    assert_eq!((code, v["output"].as_str()), (0, Some("2")), "{v}");
}

#[test]
fn lua_resolvers_deny_and_one_that_errors_is_skipped() {
    let env = Env::new();
    env.put(".wield/tools/word_count.lua", WORD_COUNT);
    env.put("notes.txt", "a b\n");
    env.put("private.txt", "a b c\n");
    env.put(
        ".wield/resolvers/private.lua",
        r#"return { name = "private", priority = 60, description = "Keep private files private",
             resolve = function(tool_name, input, ctx)
               if input.path and input.path:find("private") then return "deny" end
               if tool_name == "word_count" then return "approve" end
             end }"#,
    );
    env.put(
        ".wield/resolvers/broken.lua",
        "return { name = 'broken', priority = 70, resolve = function() error('resolver bug') end }",
    );
    let (code, v, stderr) = call(&env, &[], "word_count", &json!({"path": "notes.txt"}));
    assert_eq!((code, v["output"].as_str()), (0, Some("2")), "{v}");
    assert!(
        stderr.contains("lua:broken") && stderr.contains("resolver bug"),
        "{stderr}"
    );
    // Denied even with --yes: deny is decided before anyone is asked.
    let (code, v, _) = call(&env, &["--yes"], "word_count", &json!({"path": "private.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("lua:private"), "{v}");
}

#[test]
fn an_auto_approve_function_file_decides_for_the_configuration() {
    let env = Env::new();
    env.put(".wield/tools/word_count.lua", WORD_COUNT);
    env.put("notes.txt", "a b\n");
    env.put(
        ".wield/approve.lua",
        r#"return function(tool_name, input, ctx)
             if tool_name == "word_count" then return input.path == "notes.txt" end
             if tool_name == "bash" then return "deny" end
           end"#,
    );
    env.put(
        ".wield/config.toml",
        "[approval]\nauto_approve = [\"$standard\", \".wield/approve.lua\"]\n",
    );
    let (code, v, _) = call(&env, &[], "word_count", &json!({"path": "notes.txt"}));
    assert_eq!((code, v["output"].as_str()), (0, Some("2")), "{v}");
    let (code, v, _) = call(&env, &[], "word_count", &json!({"path": "other.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");
    let (code, v, _) = call(&env, &["--yes"], "bash", &json!({"command": "true"}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("denied"), "{v}");
    // `$standard` still applies.
    let (code, _, _) = call(&env, &[], "read", &json!({"path": "notes.txt"}));
    assert_eq!(code, 0);
}

/// In a workspace inside another wield project, that project's commands
/// could have written the workspace's `.wield/` Lua files: they are not
/// loaded, as its config is not without trust.
#[test]
fn lua_files_of_a_nested_workspace_are_not_loaded() {
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
    // The resolver would approve anything: the call still needs a person.
    let (code, v, stderr) = call(&env, &[], "web_fetch", &json!({"url": "http://127.0.0.1:9/"}));
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");
    assert!(stderr.contains("resolvers are not loaded"), "{stderr}");
}

/// `ctx:get_config()` is a copy of `[tools.NAME]`; `[NAME] timeout` is the
/// tool's time limit, as for every tool.
#[test]
fn a_lua_tool_reads_its_own_settings() {
    let env = Env::new();
    env.put(
        ".wield/tools/greet.lua",
        r#"return { name = "greet", description = "Greet", read_only = true, execute = function(input, ctx)
             local cfg = ctx:get_config()
             cfg.greeting = "changed"
             return { success = true, output = ctx:get_config().greeting .. " " .. ctx.timeout }
           end }"#,
    );
    env.put(
        ".wield/config.toml",
        "[tools.greet]\ngreeting = \"hello\"\n[greet]\ntimeout = 7\n",
    );
    let (code, v, stderr) = call(&env, &[], "greet", &json!({}));
    assert_eq!((code, v["output"].as_str()), (0, Some("hello 7.0")), "{v} {stderr}");
    // An unknown key under a Lua tool's own table is still an error.
    env.put(".wield/config.toml", "[greet]\ntimeuot = 7\n");
    let (code, _, stderr) = call(&env, &[], "greet", &json!({}));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("greet.timeuot"), "{stderr}");
}
