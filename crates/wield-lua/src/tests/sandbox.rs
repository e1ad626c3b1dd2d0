use crate::sandbox::{Limits, Sandbox};

fn eval(sb: &Sandbox, code: &str) -> Result<String, String> {
    sb.run_code(code, "=test")
        .map(|v| crate::sandbox::display(&v))
        .map_err(|e| e.to_string())
}

#[test]
fn forbidden_globals_are_absent() {
    let sb = Sandbox::new(Limits::default(), None).unwrap();
    for name in [
        "os",
        "io",
        "debug",
        "package",
        "dofile",
        "loadfile",
        "collectgarbage",
        "coroutine",
    ] {
        assert_eq!(eval(&sb, &format!("return type({name})")).unwrap(), "nil", "{name}");
    }
    assert_eq!(eval(&sb, "return type(string.dump)").unwrap(), "nil");
    for name in ["string", "table", "math", "utf8"] {
        assert_eq!(eval(&sb, &format!("return type({name})")).unwrap(), "table", "{name}");
    }
}

#[test]
fn load_takes_text_only() {
    let sb = Sandbox::new(Limits::default(), None).unwrap();
    assert_eq!(eval(&sb, "return load('return 1 + 1')()").unwrap(), "2");
    let err = eval(&sb, "local f, e = load('\\27Lua...') return e").unwrap();
    assert!(err.contains("binary chunks are not allowed"), "{err}");
    let err = eval(&sb, "local f, e = load('return 1', 'x', 'b') return e").unwrap();
    assert!(err.contains("only text chunks"), "{err}");
    let err = eval(&sb, "local f, e = load('return 1', 'x', 'bt') return e").unwrap();
    assert!(err.contains("only text chunks"), "{err}");
}

#[test]
fn require_finds_modules_only_inside_the_tools_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    super::files(
        &tools,
        &[("lib/util.lua", "return { twice = function(x) return 2 * x end }")],
    );
    super::files(dir.path(), &[("outside.lua", "return 'escaped'")]);
    std::os::unix::fs::symlink(dir.path().join("outside.lua"), tools.join("link.lua")).unwrap();
    let sb = Sandbox::new(Limits::default(), Some(&tools)).unwrap();
    assert_eq!(eval(&sb, "return require('lib.util').twice(21)").unwrap(), "42");
    for name in ["../outside", "/etc/passwd", "link", "missing", "lib/../../outside"] {
        let err = eval(&sb, &format!("return require('{name}')")).unwrap_err();
        assert!(err.contains("require(") && !err.contains("escaped"), "{name}: {err}");
    }
    let none = Sandbox::new(Limits::default(), None).unwrap();
    assert!(
        eval(&none, "return require('lib.util')")
            .unwrap_err()
            .contains("not available")
    );
}

#[test]
fn runaway_loops_stop_even_under_pcall() {
    let sb = Sandbox::new(
        Limits {
            instructions: 1_000_000,
            ..Limits::default()
        },
        None,
    )
    .unwrap();
    let start = std::time::Instant::now();
    let err = eval(&sb, "while true do end").unwrap_err();
    assert!(err.contains("more than 1000000 instructions"), "{err}");
    let err = eval(&sb, "while true do pcall(function() while true do end end) end").unwrap_err();
    assert!(err.contains("instructions"), "{err}");
    let err = eval(&sb, "while true do xpcall(function() while true do end end, print) end").unwrap_err();
    assert!(err.contains("instructions"), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    // A fresh run has a fresh budget.
    assert_eq!(eval(&sb, "return 1").unwrap(), "1");
}

#[test]
fn the_memory_limit_holds() {
    let sb = Sandbox::new(
        Limits {
            memory: 4 * 1024 * 1024,
            ..Limits::default()
        },
        None,
    )
    .unwrap();
    let err = eval(&sb, "local t = {} for i = 1, 1e7 do t[i] = ('x'):rep(100) .. i end").unwrap_err();
    assert!(err.contains("memory"), "{err}");
    let err = eval(&sb, "return ('x'):rep(1e8)").unwrap_err();
    assert!(err.contains("memory") || err.contains("too large"), "{err}");
}

#[test]
fn limits_come_from_the_config() {
    let config = wield_core::Config::from_table(
        toml::from_str("[lua]\nmemory_limit = \"8MB\"\nmax_instructions = 5000\n").unwrap(),
    )
    .unwrap();
    let l = Limits::from_config(&config).unwrap();
    assert_eq!((l.memory, l.instructions), (8 * 1024 * 1024, 5000));
    let bad = wield_core::Config::from_table(toml::from_str("[lua]\nmemory_limit = \"lots\"\n").unwrap()).unwrap();
    assert!(Limits::from_config(&bad).unwrap_err().contains("lua.memory_limit"));
}
