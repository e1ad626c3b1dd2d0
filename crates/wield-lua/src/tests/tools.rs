use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wield_core::{Context, Registry, ToolRef};

use crate::loader::load_tools;
use crate::sandbox::Limits;

pub(crate) const WORD_COUNT: &str = include_str!("../../examples/word_count.lua");

/// Flemma's calculator (see the file).
pub(crate) const CALC: &str = include_str!("../../examples/calc.lua");

pub(crate) fn load(dir: &std::path::Path, files: &[(&str, &str)]) -> crate::Loaded {
    super::files(dir, files);
    load_tools(&[dir.to_path_buf()], Limits::default())
}

fn tool<'a>(loaded: &'a crate::Loaded, name: &str) -> &'a ToolRef {
    loaded
        .tools
        .iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no {name}: {:?}", loaded.warnings))
}

#[tokio::test]
async fn word_count_counts_through_the_confinement() {
    let ws = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws.path()).unwrap();
    std::fs::write(ws.join("a.txt"), "one two  three\nfour").unwrap();
    let loaded = load(&ws.join(".wield/tools"), &[("word_count.lua", WORD_COUNT)]);
    let wc = tool(&loaded, "word_count");
    assert_eq!(wc.preview(&json!({"path": "a.txt"}), 80), "a.txt");
    let ctx = Context::detached(&ws);
    let r = wc.execute(json!({"path": "a.txt"}), &ctx).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.output, "4");
    let r = wc.execute(json!({"path": "/etc/passwd"}), &ctx).await;
    assert!(!r.success && r.error.unwrap().contains("outside the read roots"));
}

#[tokio::test]
async fn the_calculator_evaluates_and_refuses_what_is_not_arithmetic() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(dir.path(), &[("calc.lua", CALC)]);
    let calc = tool(&loaded, "calc");
    assert!(calc.spec().strict && calc.traits().read_only);
    let ctx = Context::detached(dir.path());
    for (expr, want) in [
        ("(2 + 3) * 4", "20"),
        ("2 ^ 10", "1024"),
        ("7 / 2", "3.5"),
        ("-3 + 10 % 4", "-1"),
    ] {
        let r = calc.execute(json!({"expression": expr}), &ctx).await;
        assert_eq!(r.output, want, "{expr}: {r:?}");
    }
    for expr in ["os.exit()", "1 / 0", "2 +", "(1"] {
        let r = calc.execute(json!({"expression": expr}), &ctx).await;
        assert!(!r.success, "{expr}: {r:?}");
    }
}

#[tokio::test]
async fn a_list_of_definitions_table_output_and_bad_files_are_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        dir.path(),
        &[
            (
                "many.lua",
                r#"return {
                  { name = "a", title = "The A tool", description = "A", execute = function() return { success = true, output = { n = 1, list = {1, 2} } } end },
                  { name = "b", description = "B", execute = function() return "plain" end },
                }"#,
            ),
            ("syntax.lua", "return {\n name = 'x',\n description = \n"),
            ("runtime.lua", "local x = nil\nreturn x.y"),
            ("shape.lua", "return 42"),
            ("noexec.lua", "return { name = 'n', description = 'N' }"),
            (
                "strict.lua",
                "return { name = 's', description = 'S', strict = true, input_schema = { type = 'object', properties = { a = { type = 'string' } } }, execute = function() end }",
            ),
        ],
    );
    let names: Vec<&str> = loaded.tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "{:?}", loaded.warnings);
    let w = loaded.warnings.join("\n");
    assert!(w.contains("syntax.lua:4:"), "{w}");
    assert!(w.contains("runtime.lua:2:"), "{w}");
    assert!(w.contains("shape.lua") && w.contains("returned a integer"), "{w}");
    assert!(w.contains("`execute` must be a function"), "{w}");
    assert!(w.contains("strict = true") && w.contains("tool `s`"), "{w}");
    let ctx = Context::detached(dir.path());
    assert_eq!(tool(&loaded, "a").spec().title.as_deref(), Some("The A tool"));
    let r = tool(&loaded, "a").execute(json!({}), &ctx).await;
    assert_eq!(
        serde_json::from_str::<Value>(&r.output).unwrap(),
        json!({"n": 1, "list": [1, 2]})
    );
    assert_eq!(tool(&loaded, "b").execute(json!({}), &ctx).await.output, "plain");
}

#[tokio::test]
async fn a_runaway_tool_ends_with_an_error_at_its_timeout_and_on_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        dir.path(),
        &[(
            "spin.lua",
            "return { name = 'spin', description = 'S', execute = function() while true do end end }",
        )],
    );
    let spin = tool(&loaded, "spin");
    let mut ctx = Context::detached(dir.path());
    ctx.timeout = Duration::from_millis(300);
    let start = Instant::now();
    let r = spin.execute(json!({}), &ctx).await;
    assert!(
        !r.success && r.error.as_deref().unwrap().contains("ran past its 300ms timeout"),
        "{r:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    ctx.timeout = Duration::from_secs(60);
    let cancel = ctx.cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        cancel.cancel();
    });
    let r = spin.execute(json!({}), &ctx).await;
    assert!(!r.success && r.error.as_deref().unwrap().contains("cancelled"), "{r:?}");
}

#[tokio::test]
async fn a_tool_waiting_on_a_command_ends_at_its_timeout_and_on_cancel() {
    let ws = tempfile::tempdir().unwrap();
    let loaded = load(
        &ws.path().join("tools"),
        &[(
            "wait.lua",
            "return { name = 'wait', description = 'W', execute = function(input, ctx)\n  local r = ctx.run({ 'sleep', '30' })\n  return { success = r.success, output = r.output, error = r.error }\nend }",
        )],
    );
    let wait = tool(&loaded, "wait");
    let mut ctx = Context::detached(ws.path());
    ctx.timeout = Duration::from_millis(500);
    let start = Instant::now();
    let r = wait.execute(json!({}), &ctx).await;
    assert!(!r.success && r.error.as_deref().unwrap().contains("timed out"), "{r:?}");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    ctx.timeout = Duration::from_secs(60);
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let start = Instant::now();
    let r = wait.execute(json!({}), &ctx).await;
    assert!(!r.success && r.error.as_deref().unwrap().contains("cancelled"), "{r:?}");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
}

#[tokio::test]
async fn a_read_only_tool_cannot_write_or_run_commands() {
    let ws = tempfile::tempdir().unwrap();
    let loaded = load(
        &ws.path().join("tools"),
        &[(
            "sneaky.lua",
            r#"return { name = "sneaky", description = "S", read_only = true, execute = function(input, ctx)
                local ok, write_err = ctx.fs.write("x.txt", "x")
                local run_ok, run_err = pcall(ctx.run, { "touch", "y.txt" })
                return { success = true, output = { write = write_err, run = tostring(run_err),
                  writable = ctx.sandbox.is_path_writable("x.txt") } }
            end }"#,
        )],
    );
    let mut ctx = Context::detached(ws.path());
    ctx.tool = "sneaky".into();
    let r = tool(&loaded, "sneaky").execute(json!({}), &ctx).await;
    let v: Value = serde_json::from_str(&r.output).unwrap();
    assert!(v["write"].as_str().unwrap().contains("declared read_only"), "{v}");
    assert!(v["run"].as_str().unwrap().contains("declared read_only"), "{v}");
    assert_eq!(v["writable"], false);
    assert!(!ws.path().join("x.txt").exists() && !ws.path().join("y.txt").exists());
}

#[tokio::test]
async fn ctx_gives_files_commands_truncation_config_and_nothing_else() {
    let ws = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws.path()).unwrap();
    let loaded = load(
        &ws.join(".wield/tools"),
        &[(
            "probe.lua",
            r#"return { name = "probe", description = "P", execute = function(input, ctx)
                local out = {}
                out.wrote = ctx.fs.write("sub/new.txt", "hello world")
                out.read = ctx.fs.read("sub/new.txt")
                out.binlen = #ctx.fs.read("bin.dat")
                local names = {}
                for _, e in ipairs(ctx.fs.list("sub")) do names[#names + 1] = e.name .. ":" .. e.type end
                out.list = names
                out.resolved = ctx.path.resolve("sub/new.txt")
                out.writable = ctx.sandbox.is_path_writable("sub/x.txt")
                out.state_writable = ctx.sandbox.is_path_writable(".wield/config.toml")
                local ok, err = ctx.fs.write(".wield/config.toml", "x")
                out.state_err = err
                out.run = ctx.run({ "echo", "a b; echo pwned" })
                out.head = ctx.truncate.head("1\n2\n3\n", 2)
                out.tail = ctx.truncate.tail("1\n2\n3\n", 2)
                out.middle = ctx.truncate.middle("1\n2\n3\n4\n5\n", 1, 1)
                out.size = ctx.truncate.format_size(2048)
                out.cfg = ctx:get_config()
                out.cwd = ctx.cwd
                out.timeout = ctx.timeout
                ctx.log("probing")
                return { success = true, output = out }
            end }"#,
        )],
    );
    std::fs::write(ws.join("bin.dat"), [0xff, 0xfe, b'a']).unwrap();
    let probe = tool(&loaded, "probe");
    let mut ctx = Context::detached(&ws);
    ctx.config = Arc::new(toml::from_str("level = 3").unwrap());
    // What the truncation cuts is saved where the call's runtime keeps its
    // outputs (the `SavedOutputs` in its services), as a Rust tool's
    // context does, not in a directory the process shares.
    let outputs = ws.join("outputs");
    let mut services = wield_core::Services::new();
    services.insert(Arc::new(wield_core::truncate::SavedOutputs::in_dir(&outputs)));
    ctx.services = Arc::new(services);
    let r = probe.execute(json!({}), &ctx).await;
    assert!(r.success, "{r:?}");
    let v: Value = serde_json::from_str(&r.output).unwrap();
    assert_eq!(v["wrote"], true);
    assert_eq!(v["read"], "hello world");
    assert_eq!(v["binlen"], 3, "bytes that are not UTF-8 read too");
    assert_eq!(v["list"], json!(["new.txt:file"]));
    assert_eq!(v["resolved"], ws.join("sub/new.txt").display().to_string());
    assert_eq!(
        (v["writable"].clone(), v["state_writable"].clone()),
        (json!(true), json!(false))
    );
    assert!(v["state_err"].as_str().unwrap().contains("protected"), "{v}");
    assert_eq!(v["run"]["success"], true, "{v}");
    assert!(
        v["run"]["output"].as_str().unwrap().starts_with("a b; echo pwned\n"),
        "{v}"
    );
    assert!(
        v["head"].as_str().unwrap().starts_with("1\n2\n[Showing lines 1-2 of 3"),
        "{v}"
    );
    for (how, full) in [
        ("head", "1\n2\n3\n"),
        ("tail", "1\n2\n3\n"),
        ("middle", "1\n2\n3\n4\n5\n"),
    ] {
        let text = v[how].as_str().unwrap();
        let saved = text
            .split("Full output: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap_or_else(|| panic!("{how}: {text}"));
        assert!(std::path::Path::new(saved).starts_with(&outputs), "{how}: {saved}");
        assert_eq!(std::fs::read_to_string(saved).unwrap(), full, "{how}");
    }
    assert_eq!(v["size"], "2.0KB");
    assert_eq!(v["cfg"], json!({"level": 3}));
    assert_eq!(v["cwd"], ws.display().to_string());
    assert_eq!(v["timeout"], 120.0);
}

#[tokio::test]
async fn async_sources_register_fail_or_time_out_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        dir.path(),
        &[
            (
                "three.lua",
                r#"return { timeout = 5, resolve = function(register, done)
                    for i = 1, 3 do
                      register("gen_" .. i, { description = "Generated " .. i,
                        execute = function() return { success = true, output = "I am " .. i } end })
                    end
                    done()
                    done("a second call is harmless")
                end }"#,
            ),
            (
                "silent.lua",
                "return { timeout = 0.3, resolve = function(register, done) register('never', { description = 'N', execute = function() end }) end }",
            ),
            (
                "broken.lua",
                "return { resolve = function(register, done) error('no server here') end }",
            ),
            (
                "stuck.lua",
                "return { timeout = 0.3, resolve = function(register, done) while true do end end }",
            ),
            (
                "says.lua",
                "return { resolve = function(register, done) done('cannot list') end }",
            ),
        ],
    );
    assert!(
        loaded.tools.is_empty() && loaded.warnings.is_empty(),
        "{:?}",
        loaded.warnings
    );
    let mut registry = Registry::new();
    for s in loaded.sources {
        s.add_to(&mut registry);
    }
    let start = Instant::now();
    let warnings = registry.load_sources().await;
    assert!(start.elapsed() < Duration::from_secs(3));
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["gen_1", "gen_2", "gen_3"]);
    let ctx = Context::detached(dir.path());
    let r = registry.get("gen_2").unwrap().tool.execute(json!({}), &ctx).await;
    assert_eq!(r.output, "I am 2");
    let w: Vec<String> = warnings.iter().map(|w| format!("{} {}", w.source, w.message)).collect();
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(
        w.iter()
            .any(|w| w.contains("stuck.lua") && (w.contains("time") || w.contains("instructions"))),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.contains("broken.lua") && w.contains("no server here")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.contains("silent.lua") && w.contains("without calling done()")),
        "{w:?}"
    );
    assert!(
        w.iter().any(|w| w.contains("says.lua") && w.contains("cannot list")),
        "{w:?}"
    );
}

/// A `ctx` kept by one call is dead in every later call, and a read-only
/// tool gets no more from a sibling's `ctx` than from its own.
#[tokio::test]
async fn a_kept_ctx_is_dead_once_its_call_ends() {
    let ws = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws.path()).unwrap();
    let loaded = load(
        &ws.join(".wield/tools"),
        &[(
            "pair.lua",
            r#"local kept
            return {
              { name = "keep", description = "K", execute = function(input, ctx)
                  kept = ctx
                  assert(ctx.fs.write("mine.txt", "ok"))
                  return "kept"
                end },
              { name = "use", description = "U", read_only = true, execute = function(input, ctx)
                  local out = {}
                  for _, f in ipairs({
                    function() return kept.fs.write("stolen.txt", "x") end,
                    function() return kept.fs.read("mine.txt") end,
                    function() return kept.path.resolve("mine.txt") end,
                    function() return kept.fs.list(".") end,
                    function() return kept.sandbox.is_path_writable("x") end,
                    function() return kept.run({ "touch", "ran" }) end,
                  }) do
                    local ok, err = pcall(f)
                    out[#out + 1] = tostring(ok) .. " " .. tostring(err)
                  end
                  return table.concat(out, "\n")
                end },
            }"#,
        )],
    );
    let ctx = Context::detached(&ws);
    let r = tool(&loaded, "keep").execute(json!({}), &ctx).await;
    assert_eq!(r.output, "kept", "{r:?}");
    assert!(ws.join("mine.txt").exists());
    let r = tool(&loaded, "use").execute(json!({}), &ctx).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.output.matches("has ended").count(), 6, "{}", r.output);
    assert!(!r.output.lines().any(|l| l.starts_with("true")), "{}", r.output);
    assert!(!ws.join("stolen.txt").exists() && !ws.join("ran").exists());
}

/// A source that keeps `register` for one of its tools to call later
/// cannot add tools once the registry took the source's.
#[tokio::test]
async fn a_sources_register_is_dead_once_resolve_returned() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        dir.path(),
        &[(
            "keeper.lua",
            r#"return { resolve = function(register, done)
                kept_register, kept_done = register, done
                register("keeper", { description = "K", execute = function()
                  local ok, err = pcall(kept_register, "late", { description = "L", execute = function() end })
                  local ok2 = pcall(kept_done)
                  return { success = true, output = tostring(ok) .. " " .. tostring(ok2) .. " " .. tostring(err) }
                end })
                done()
            end }"#,
        )],
    );
    let mut registry = Registry::new();
    for s in loaded.sources {
        s.add_to(&mut registry);
    }
    assert!(registry.load_sources().await.is_empty());
    let ctx = Context::detached(dir.path());
    let r = registry.get("keeper").unwrap().tool.execute(json!({}), &ctx).await;
    assert!(r.output.starts_with("false false"), "{}", r.output);
    assert!(r.output.contains("the source has ended"), "{}", r.output);
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["keeper"]);
}
