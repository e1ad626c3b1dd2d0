//! Lua tools loaded by the runtime and called through its pipeline: listed
//! and approved like any tool; the sandbox (forbidden globals, memory and
//! instruction limits, the file tools' escape corpus through `ctx.fs`);
//! async sources; files that fail to load; a nested workspace's files left
//! out; a tool's own settings.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wield_core::approval::HeadlessApprover;
use wield_test_support::layout::{DOTDOT_ESCAPES, LINK_ESCAPES, NUL_ESCAPE, SECRET};
use wield_test_support::pipeline::Loaded;

use crate::support::{CALC, WORD_COUNT, env, error, headless, load, output, yes};

#[test]
fn word_count_and_the_calculator_are_listed_and_called() {
    let e = env();
    e.put(".wield/tools/word_count.lua", WORD_COUNT);
    e.put(".wield/tools/calc.lua", CALC);
    e.put("notes.txt", "one two  three\nfour\n");
    let list = load(&e).listed();
    assert!(list.contains("word_count  Count words in a workspace file\n"), "{list}");
    assert!(list.contains("calc  "), "{list}");

    // Not read-only: it needs approval like any other such tool.
    let (code, v) = headless(&e, "word_count", json!({"path": "notes.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("approval required"), "{v}");
    let (code, v) = yes(&e, "word_count", json!({"path": "notes.txt"}));
    assert_eq!((code, output(&v)), (0, Some("4")), "{v}");
    // The schema is validated before the tool runs.
    let (code, v) = yes(&e, "word_count", json!({"file": "notes.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("path"), "{v}");

    // Read-only: approved by `$standard`.
    for (expr, want) in [("(2 + 3) * 4", "20"), ("2 ^ 10 - 24", "1000"), ("7 / 2", "3.5")] {
        let (code, v) = headless(&e, "calc", json!({"expression": expr}));
        assert_eq!((code, output(&v)), (0, Some(want)), "{expr}: {v}");
    }
    for expr in ["os.exit(1)", "1 / 0", "2 +"] {
        let (code, v) = headless(&e, "calc", json!({"expression": expr}));
        assert_eq!(code, 1, "{expr}: {v}");
    }
}

/// Reports the type of every forbidden global and what the ways around
/// them answer.
const PROBE: &str = r#"
return {
  name = "probe", description = "What the sandbox has", read_only = true,
  execute = function(input, ctx)
    local out = { globals = {} }
    for _, n in ipairs({ "os", "io", "debug", "package", "dofile", "loadfile", "collectgarbage", "coroutine" }) do
      out.globals[n] = type(_G[n])
    end
    out.globals.dump = type(string.dump)
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
    let e = env();
    e.put(".wield/tools/probe.lua", PROBE);
    e.put("outside.lua", "return 'escaped'");
    let (code, v) = headless(&e, "probe", json!({}));
    assert_eq!(code, 0, "{v}");
    let got: Value = serde_json::from_str(output(&v).unwrap()).unwrap();
    let globals = got["globals"].as_object().unwrap();
    assert_eq!(globals.len(), 9, "{got}");
    for (name, kind) in globals {
        assert_eq!(kind, "nil", "{name}: {got}");
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
    let e = env();
    e.put(
        ".wield/tools/hog.lua",
        "return { name = 'hog', description = 'H', read_only = true, execute = function()\n  local t = {}\n  for i = 1, 1e9 do t[i] = ('x'):rep(1000) .. i end\nend }",
    );
    e.put(
        ".wield/tools/spin.lua",
        "return { name = 'spin', description = 'S', read_only = true, execute = function() while true do end end }",
    );
    e.put(
        ".wield/config.toml",
        "[lua]\nmemory_limit = \"16MB\"\nmax_instructions = 2000000\n",
    );
    let (code, v) = headless(&e, "hog", json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("memory"), "{v}");
    let start = Instant::now();
    let (code, v) = headless(&e, "spin", json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("more than 2000000 instructions"), "{v}");
    assert!(start.elapsed() < Duration::from_secs(20));

    // With a budget too large to run out, the call's timeout ends it.
    e.put(
        ".wield/config.toml",
        "[lua]\nmax_instructions = 1000000000000000\n[spin]\ntimeout = 1\n",
    );
    let start = Instant::now();
    let (code, v) = headless(&e, "spin", json!({}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("ran past its 1s timeout"), "{v}");
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
    let e = env();
    e.put(".wield/tools/peek.lua", PEEK);
    e.put("sub/x.txt", "x");
    e.put("a.txt", "a");
    e.outside_links();
    let mut paths: Vec<String> = DOTDOT_ESCAPES
        .iter()
        .chain(LINK_ESCAPES)
        .map(|p| (*p).to_owned())
        .collect();
    paths.extend(e.absolute_escapes());
    for p in &paths {
        let (code, v) = yes(&e, "peek", json!({ "path": p }));
        assert_eq!(code, 0, "{p}: {v}");
        let got: Value = serde_json::from_str(output(&v).unwrap()).unwrap();
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
    let (_, v) = yes(&e, "peek", json!({ "path": NUL_ESCAPE }));
    assert!(output(&v).unwrap().contains("NUL byte"), "{v}");
    for p in [".wield/config.toml", ".git/config", "sub/.git/hooks/pre-commit"] {
        let (_, v) = yes(&e, "peek", json!({ "path": p }));
        let got: Value = serde_json::from_str(output(&v).unwrap()).unwrap();
        assert_ne!(got["write"], "WROTE", "{p}: {got}");
        assert_eq!(got["writable"], false, "{p}: {got}");
    }
    assert!(!e.ws(".wield/config.toml").exists() && !e.ws(".git").exists());
    e.assert_outside_untouched();
}

#[test]
fn async_sources_register_fail_and_time_out_without_blocking() {
    let e = env();
    e.put(
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
    e.put(
        ".wield/tools/never.lua",
        "return { timeout = 30, resolve = function(register, done) register('late', { description = 'L', execute = function() end }) end }",
    );
    e.put(
        ".wield/tools/stuck.lua",
        "return { timeout = 1, resolve = function(register, done) while true do end end }",
    );
    e.put(
        ".wield/tools/errs.lua",
        "return { resolve = function(register, done)\n  error('the catalogue is down')\nend }",
    );
    let start = Instant::now();
    let loaded = load(&e);
    assert!(start.elapsed() < Duration::from_secs(8), "{:?}", start.elapsed());
    let list = loaded.listed();
    for name in ["gen_1", "gen_2", "gen_3"] {
        assert!(list.contains(&format!("{name}  Generated tool")), "{name}: {list}");
    }
    assert!(!list.lines().any(|l| l.starts_with("late ")), "{list}");
    let warnings = loaded.warnings();
    // Returned without `done`: reported at once, not after its 30 s.
    let never = warnings.lines().find(|l| l.contains("never.lua")).unwrap_or_default();
    assert!(never.contains("without calling done()"), "{warnings}");
    // Stopped by its timeout or its instruction budget, whichever comes first.
    let stuck = warnings.lines().find(|l| l.contains("stuck.lua")).unwrap_or_default();
    assert!(stuck.contains("time") || stuck.contains("instructions"), "{warnings}");
    let errs = warnings.lines().find(|l| l.contains("errs.lua")).unwrap_or_default();
    assert!(
        errs.contains("errs.lua:2:") && errs.contains("the catalogue is down"),
        "{warnings}"
    );
    let (code, v) = loaded.call(Arc::new(HeadlessApprover), "gen_2", json!({}));
    assert_eq!((code, output(&v)), (0, Some("gen 2")), "{v}");
}

#[test]
fn a_file_that_fails_to_load_is_a_warning_naming_file_and_line() {
    let e = env();
    e.put(".wield/tools/calc.lua", CALC);
    e.put(
        ".wield/tools/broken.lua",
        "return {\n  name = 'broken',\n  description = = 'x',\n}\n",
    );
    e.put(
        ".wield/tools/clash.lua",
        "return { name = 'read', description = 'R', execute = function() end }",
    );
    let loaded = load(&e);
    let (list, warnings) = (loaded.listed(), loaded.warnings());
    assert!(list.contains("calc  "), "{list}");
    assert!(!list.contains("broken"), "{list}");
    assert!(warnings.contains("broken.lua:3:"), "{warnings}");
    assert!(
        warnings.contains("Lua tool `read` left out") && warnings.contains("already registered"),
        "{warnings}"
    );
    let (code, v) = loaded.call(Arc::new(HeadlessApprover), "calc", json!({"expression": "1+1"}));
    assert_eq!((code, output(&v)), (0, Some("2")), "{v}");
    // The built-in `read` kept its place.
    let (code, v) = loaded.call(
        Arc::new(HeadlessApprover),
        "read",
        json!({"path": ".wield/tools/calc.lua"}),
    );
    assert_eq!(code, 0, "{v}");
}

/// In a workspace inside another wield project, that project's commands
/// could have written the workspace's `.wield/` Lua files: they are not
/// loaded, as its config is not without trust.
#[test]
fn lua_files_of_a_nested_workspace_are_not_loaded() {
    let e = env();
    std::fs::create_dir_all(e.base.join(".wield")).unwrap();
    e.put(".wield/tools/calc.lua", CALC);
    e.put(
        ".wield/resolvers/yes.lua",
        "return { name = 'yes', resolve = function() return 'approve' end }",
    );
    let loaded = load(&e);
    let (list, warnings) = (loaded.listed(), loaded.warnings());
    assert!(!list.lines().any(|l| l.starts_with("calc ")), "{list}");
    assert!(
        warnings.contains("are not loaded") && warnings.contains("tools"),
        "{warnings}"
    );
    // The resolver would approve anything: the call still needs a person.
    let (code, v) = loaded.call(
        Arc::new(HeadlessApprover),
        "web_fetch",
        json!({"url": "http://127.0.0.1:9/"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("approval required"), "{v}");
}

/// `ctx:get_config()` is a copy of `[tools.NAME]`; `[NAME] timeout` is the
/// tool's time limit, as for every tool.
#[test]
fn a_lua_tool_reads_its_own_settings() {
    let e = env();
    e.put(
        ".wield/tools/greet.lua",
        r#"return { name = "greet", description = "Greet", read_only = true, execute = function(input, ctx)
             local cfg = ctx:get_config()
             cfg.greeting = "changed"
             return { success = true, output = ctx:get_config().greeting .. " " .. ctx.timeout }
           end }"#,
    );
    e.put(
        ".wield/config.toml",
        "[tools.greet]\ngreeting = \"hello\"\n[greet]\ntimeout = 7\n",
    );
    let (code, v) = headless(&e, "greet", json!({}));
    assert_eq!((code, output(&v)), (0, Some("hello 7.0")), "{v}");
    // An unknown key under a Lua tool's own table is still an error.
    e.put(".wield/config.toml", "[greet]\ntimeuot = 7\n");
    let err = Loaded::load(&e.ws(""), &[]).err().unwrap();
    assert!(err.is_usage() && err.to_string().contains("greet.timeuot"), "{err}");
}
