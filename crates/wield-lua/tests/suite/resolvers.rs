//! Lua approval resolvers (`.wield/resolvers/*.lua`) and the
//! `auto_approve` function file, in the approval chain of the runtime's
//! executors.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::json;

use crate::support::{WORD_COUNT, env, error, headless, output, yes};

#[test]
fn lua_resolvers_deny_and_one_that_errors_is_skipped() {
    let e = env();
    e.put(".wield/tools/word_count.lua", WORD_COUNT);
    e.put("notes.txt", "a b\n");
    e.put("private.txt", "a b c\n");
    e.put(
        ".wield/resolvers/private.lua",
        r#"return { name = "private", priority = 60, description = "Keep private files private",
             resolve = function(tool_name, input, ctx)
               if input.path and input.path:find("private") then return "deny" end
               if tool_name == "word_count" then return "approve" end
             end }"#,
    );
    e.put(
        ".wield/resolvers/broken.lua",
        "return { name = 'broken', priority = 70, resolve = function() error('resolver bug') end }",
    );
    let (code, v) = headless(&e, "word_count", json!({"path": "notes.txt"}));
    assert_eq!((code, output(&v)), (0, Some("2")), "{v}");
    // Denied even when a person would approve: deny is decided before
    // anyone is asked.
    let (code, v) = yes(&e, "word_count", json!({"path": "private.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("lua:private"), "{v}");
}

#[test]
fn an_auto_approve_function_file_decides_for_the_configuration() {
    let e = env();
    e.put(".wield/tools/word_count.lua", WORD_COUNT);
    e.put("notes.txt", "a b\n");
    e.put(
        ".wield/approve.lua",
        r#"return function(tool_name, input, ctx)
             if tool_name == "word_count" then return input.path == "notes.txt" end
             if tool_name == "bash" then return "deny" end
           end"#,
    );
    e.put(
        ".wield/config.toml",
        "[approval]\nauto_approve = [\"$standard\", \".wield/approve.lua\"]\n",
    );
    let (code, v) = headless(&e, "word_count", json!({"path": "notes.txt"}));
    assert_eq!((code, output(&v)), (0, Some("2")), "{v}");
    let (code, v) = headless(&e, "word_count", json!({"path": "other.txt"}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("approval required"), "{v}");
    let (code, v) = yes(&e, "bash", json!({"command": "true"}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("denied"), "{v}");
    // `$standard` still applies.
    let (code, _) = headless(&e, "read", json!({"path": "notes.txt"}));
    assert_eq!(code, 0);
}
