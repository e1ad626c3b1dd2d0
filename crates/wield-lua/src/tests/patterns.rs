//! The counted pattern functions: the same answers as Lua's own, and an
//! end at the budget for the patterns that ran without one.

use std::time::{Duration, Instant};

use mlua::{Lua, Value};
use tokio_util::sync::CancellationToken;

use crate::sandbox::{Limits, Sandbox};

/// What `code` gives, as text (each value, then the error if it failed).
fn show(lua: &Lua, code: &str) -> String {
    if let Some(sb) = lua.app_data_ref::<Budgeted>() {
        sb.0.start(crate::DEFAULT_INSTRUCTIONS, None, None);
    }
    match lua.load(code).eval::<mlua::MultiValue>() {
        Ok(vs) => vs
            .iter()
            .map(|v| match v {
                Value::String(s) => format!("{:?}", s.to_string_lossy()),
                other => crate::sandbox::display(other),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(e) => {
            let m = crate::error::message(&e);
            // Where the error came from differs (a C function or ours);
            // what it says must not.
            let m = m.rsplit("to '").next().unwrap_or(&m).to_owned();
            format!("error: {}", m.rsplit(": ").next().unwrap_or(&m))
        }
    }
}

/// The budget of a sandbox, for [`show`] to start afresh.
struct Budgeted(std::sync::Arc<crate::sandbox::Budget>);

fn sandbox() -> Sandbox {
    let sb = Sandbox::new(Limits::default(), None).unwrap();
    sb.lua().set_app_data(Budgeted(std::sync::Arc::clone(&sb.budget)));
    sb
}

/// `call` gives the same in the sandbox as in Lua's own state.
fn agree(reference: &Lua, sb: &Sandbox, call: &str) {
    assert_eq!(show(sb.lua(), call), show(reference, call), "{call}");
}

#[test]
fn the_pattern_functions_answer_as_luas_own() {
    let reference = Lua::new();
    let sb = sandbox();
    let subjects = [
        "",
        "hello world",
        "  trim me  ",
        "key = value; other=2",
        "THE (quick) [brown] {fox}",
        "aaa",
        "x=1, y=22, z=333",
        "f(a(b)c)d",
        "one\ntwo\r\nthree\t4",
        "caf\u{e9} \u{2603}",
        "THE (quick) fox",
    ];
    let patterns = [
        "",
        "o",
        "l+",
        "l*",
        "l-",
        "l?o",
        "^h",
        "d$",
        "^$",
        "%a+",
        "%A+",
        "%d+",
        "%D",
        "%s*(.-)%s*$",
        "^%s*(.-)%s*$",
        "(%w+)%s*=%s*(%w+)",
        "()ll()",
        "%b()",
        "%b[]",
        "%f[%a]%a+",
        "%f[%A]",
        "[%a_][%w_]*",
        "[^%s]+",
        "[a-c]+",
        "[]]",
        "[^]]",
        "[%]]",
        "(a)%1",
        "((a)(a))",
        "(h)(e)(l)(l)(o)",
        ".-",
        ".-$",
        "%.",
        "%%",
        "[%-]",
        "[a-]",
        "%x+",
        "%p+",
        "%c",
        "%g+",
        "%l+",
        "%u+",
        "%w-",
        "(%d)(%d?)",
        "x*$",
        "\u{e9}",
        "[\u{e9}]",
        ".",
        "%",
        "(",
        ")",
        "[a",
        "%b",
        "%f",
        "%fx",
        "(()",
        "%1",
        "(a)%2",
        "%0",
    ];
    let mut checked = 0;
    for s in subjects {
        for p in patterns {
            for init in ["nil", "1", "3", "-2", "100", "0"] {
                for call in [
                    format!("return string.find({s:?}, {p:?}, {init})"),
                    format!("return string.find({s:?}, {p:?}, {init}, true)"),
                    format!("return string.match({s:?}, {p:?}, {init})"),
                    format!(
                        "local out = {{}} for a, b in string.gmatch({s:?}, {p:?}, {init}) do out[#out + 1] = tostring(a) .. '|' .. tostring(b) end return table.concat(out, ',')"
                    ),
                ] {
                    agree(&reference, &sb, &call);
                    checked += 1;
                }
            }
            for repl in [
                "'<%0>'",
                "'%1-%1'",
                "'%%'",
                "'%2'",
                "'%'",
                "'x'",
                "7",
                "{ hello = 'HI', o = false, l = 3 }",
                "function(a, b) if a == 'o' then return nil end return '[' .. a .. tostring(b) .. ']' end",
                "function() return {} end",
            ] {
                for n in ["nil", "1", "0", "-1"] {
                    agree(
                        &reference,
                        &sb,
                        &format!("return string.gsub({s:?}, {p:?}, {repl}, {n})"),
                    );
                    checked += 1;
                }
            }
        }
    }
    // Methods, numbers as subjects and what is not a string.
    for call in [
        "return ('abc'):find('b')",
        "return (12345):match('3(%d)')",
        "return string.find(12.5, '.', 1, true)",
        "return string.gsub('abc', '%w', '%0%0')",
        "return string.find(nil, 'x')",
        "return string.gsub('abc', 'b', true)",
        "return string.match('abc', 'b', 'x')",
        "return string.gsub('hello', '', '-')",
        "return string.gsub('abc', '^', '>')",
        "return string.find('a+b', '+', 1, true)",
        "return string.match(string.rep('a', 300), string.rep('(a)', 33))",
        "return string.match(string.rep('a', 300), string.rep('a?', 250) .. 'b')",
    ] {
        agree(&reference, &sb, call);
        checked += 1;
    }
    assert!(checked > 10_000, "{checked}");
}

/// A sandbox with these limits.
fn limited(memory: usize, instructions: u64) -> Sandbox {
    Sandbox::new(Limits { memory, instructions }, None).unwrap()
}

/// Run `code` in `sb` with a budget ending in `time`; how long it took and
/// what it gave.
fn timed(sb: &Sandbox, code: &str, time: Duration) -> (Duration, Result<String, String>) {
    let started = Instant::now();
    sb.start(Some(started + time), None);
    let out = sb
        .lua()
        .load(code)
        .eval::<Value>()
        .map(|v| crate::sandbox::display(&v))
        .map_err(|e| crate::error::message(&e));
    (started.elapsed(), out)
}

#[test]
fn a_catastrophic_pattern_ends_at_the_deadline() {
    let sb = Sandbox::new(Limits::default(), None).unwrap();
    for code in [
        // Backtracking: about 30^8 steps.
        "return string.find(string.rep('a', 30), 'a*a*a*a*a*a*a*a*b')",
        // The trim idiom on a long run of spaces: quadratic.
        "return ('x' .. string.rep(' ', 100000) .. 'y'):match('^%s*(.-)%s*$') and 'x'",
        "local n = 0 for _ in string.gmatch(string.rep('a', 5000), 'a-a-a-a-b') do n = n + 1 end return n",
        "return (string.gsub(string.rep('a', 40), 'a*a*a*a*a*a*a*a*b', ''))",
        // pcall does not catch the stop.
        "local ok = pcall(string.find, string.rep('a', 30), 'a*a*a*a*a*a*a*a*b') return 'caught'",
    ] {
        let (took, out) = timed(&sb, code, Duration::from_millis(300));
        assert!(took < Duration::from_secs(2), "{code}: {took:?}");
        let err = out.unwrap_err();
        assert!(err.contains("time limit"), "{code}: {err}");
    }
    // The same state goes on working.
    let (_, out) = timed(&sb, "return ('  x  '):match('^%s*(.-)%s*$')", Duration::from_secs(1));
    assert_eq!(out.unwrap(), "x");
}

#[test]
fn pattern_steps_count_as_instructions_and_cancellation_stops_them() {
    let sb = limited(crate::DEFAULT_MEMORY, 2_000_000);
    let (took, out) = timed(
        &sb,
        "return string.find(string.rep('a', 30), 'a*a*a*a*a*a*a*a*b')",
        Duration::from_secs(60),
    );
    assert!(out.unwrap_err().contains("more than 2000000 instructions"));
    assert!(took < Duration::from_secs(2), "{took:?}");
    // Many small matches add up like one long one.
    let (_, out) = timed(
        &sb,
        "local s = string.rep('a', 12) for i = 1, 1e9 do s:find('a*a*a*b') end",
        Duration::from_secs(60),
    );
    assert!(out.unwrap_err().contains("instructions"));

    let cancel = CancellationToken::new();
    let sb = Sandbox::new(Limits::default(), None).unwrap();
    sb.start(None, Some(cancel.clone()));
    let stop = cancel.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stop.cancel();
    });
    let started = Instant::now();
    let err = sb
        .lua()
        .load("return string.find(string.rep('a', 40), 'a*a*a*a*a*a*a*a*a*b')")
        .eval::<Value>()
        .unwrap_err();
    t.join().unwrap();
    assert!(crate::error::message(&err).contains("cancelled"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn gsub_cannot_build_past_the_memory_limit() {
    let sb = limited(8 * 1024 * 1024, crate::DEFAULT_INSTRUCTIONS);
    let (_, out) = timed(
        &sb,
        "local r = string.rep('x', 100000) return #string.gsub(string.rep('a', 1000), 'a', r)",
        Duration::from_secs(5),
    );
    assert!(out.unwrap_err().contains("memory"));
}

#[test]
fn the_loops_of_the_table_and_string_libraries_end_at_the_budget() {
    let sb = sandbox();
    let lying = "local t = setmetatable({}, { __len = function() return 1 << 40 end, __index = rawlen })";
    for code in [
        "table.move({}, 1, 1 << 40, 1) return 'moved'".to_owned(),
        format!("{lying} table.remove(t, 1) return 'removed'"),
        format!("{lying} table.insert(t, 1, 'x') return 'inserted'"),
    ] {
        let (took, out) = timed(&sb, &code, Duration::from_millis(300));
        assert!(took < Duration::from_secs(2), "{code}: {took:?}");
        // Storing what it moves, insert may reach the memory limit first.
        let err = out.unwrap_err();
        assert!(err.contains("time limit") || err.contains("memory"), "{code}: {err}");
    }
    let (took, out) = timed(
        &sb,
        "return #string.rep('', 1 << 62) + #string.rep('', 1 << 62, '')",
        Duration::from_secs(1),
    );
    assert_eq!(out.unwrap(), "0");
    assert!(took < Duration::from_millis(500), "{took:?}");

    // And they still do what Lua's do.
    let reference = Lua::new();
    for call in [
        "local t = {1, 2, 3} table.insert(t, 'x') table.insert(t, 1, 'y') return table.concat(t, ',')",
        "local t = {1, 2, 3} return table.remove(t), table.remove(t, 1), table.concat(t, ',')",
        "local t = {} return table.remove(t), #t",
        "local t = {5, 2, 8, 1} table.sort(t) return table.concat(t, ',')",
        "local t = {5, 2, 8, 1} table.sort(t, function(a, b) return a > b end) return table.concat(t, ',')",
        "return table.concat(table.move({1, 2, 3, 4, 5}, 2, 4, 1), ',')",
        "return table.concat(table.move({1, 2, 3, 4, 5}, 1, 3, 3), ',')",
        "return table.concat(table.move({1, 2, 3}, 1, 3, 2, {9}), ',')",
        "return table.move({1}, 1, 0, 5)[5]",
        "return string.rep('ab', 3, ','), string.rep('x', 0), string.rep('', 5), string.rep('', 3, '-')",
        "local t = {1, 2, 3} table.insert(t, 9, 'x') return 'no'",
        "local t = {1, 2, 3} local ok, e = pcall(table.insert, t, 1, 2, 3) return ok, (e:gsub('^.-:%d+: ', ''))",
        "return pcall(table.move, {}, 1, math.maxinteger, 2)",
    ] {
        let lua_side = |lua: &Lua| show(lua, call);
        let (want, got) = (lua_side(&reference), lua_side(sb.lua()));
        let want_head = want.split(" to ").next().unwrap_or(&want).to_owned();
        assert!(got.starts_with(&want_head), "{call}: {got} / {want}");
    }
    // A table with a length of its own is sorted, inserted into and
    // removed from as Lua would.
    let (_, out) = timed(
        &sb,
        "local store = {5, 3, 9, 1, 7}
         local t = setmetatable({}, { __len = function() return #store end,
           __index = store, __newindex = store })
         table.sort(t) table.insert(t, 2, 4) table.remove(t, 1)
         return table.concat(store, ',')",
        Duration::from_secs(1),
    );
    assert_eq!(out.unwrap(), "4,3,5,7,9");
}

#[test]
fn frontmatter_and_resolvers_stuck_in_a_pattern_end_at_their_time() {
    let started = Instant::now();
    let err = crate::frontmatter::evaluate(
        "local hit = string.find(string.rep('a', 40), 'a*a*a*a*a*a*a*a*a*b')",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("time limit") || err.contains("instructions"), "{err}");
    assert!(
        started.elapsed() < crate::LOAD_TIME + Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    let dir = tempfile::tempdir().unwrap();
    super::files(
        dir.path(),
        &[(
            "stuck.lua",
            "return { name = 'stuck', resolve = function(tool_name, input)\n  \
             if input.text:find(input.pattern) then return 'approve' end\nend }",
        )],
    );
    let (resolvers, warnings) = crate::load_resolvers(dir.path(), Limits::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    let started = Instant::now();
    let err = super::ask(
        &*resolvers[0],
        "bash",
        serde_json::json!({"text": "a".repeat(40), "pattern": "a*a*a*a*a*a*a*a*a*b"}),
    )
    .unwrap_err();
    assert!(err.contains("time limit") || err.contains("instructions"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
}
