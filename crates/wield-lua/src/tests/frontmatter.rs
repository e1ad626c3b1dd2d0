use serde_json::json;
use wield_core::approval::Decision;

use crate::frontmatter::{Op, OptionOp, evaluate};

fn known() -> Vec<String> {
    ["bash", "read", "write", "grep", "edit"].map(String::from).to_vec()
}

/// The ops as (key, kind, values) for comparison.
fn shown(ops: &[OptionOp]) -> Vec<(String, String)> {
    ops.iter()
        .map(|o| {
            let v = match &o.op {
                Op::Set(v) => format!("set {v}"),
                Op::Append(v) => format!("append {v:?}"),
                Op::Remove(v) => format!("remove {v:?}"),
                Op::Prepend(v) => format!("prepend {v:?}"),
                Op::SetFunction(r) => format!("function {}", r.name()),
            };
            (o.key.clone(), v)
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

#[test]
fn list_methods_and_scalars_are_recorded_in_order() {
    let out = evaluate(
        r#"
        wield.opt.provider = "openai"
        wield.opt.max_tokens = 2048
        wield.opt.tools = {"bash", "read"}
        wield.opt.tools:append("grep")
        wield.opt.tools:remove("write")
        wield.opt.tools:prepend({"edit"})
        wield.opt.tools:set({"read"})
        wield.opt.tools.autopilot = false
        wield.opt.sandbox = { enabled = true, network = false }
        flemma.opt.tools.auto_approve = { "$standard" }
        "#,
        &known(),
    )
    .unwrap();
    assert_eq!(
        shown(&out.ops),
        pairs(&[
            ("provider", "set \"openai\""),
            ("max_tokens", "set 2048"),
            ("tools", "set [\"bash\",\"read\"]"),
            ("tools", "append [\"grep\"]"),
            ("tools", "remove [\"write\"]"),
            ("tools", "prepend [\"edit\"]"),
            ("tools", "set [\"read\"]"),
            ("tools.autopilot", "set false"),
            ("sandbox", "set {\"enabled\":true,\"network\":false}"),
            ("tools.auto_approve", "set [\"$standard\"]"),
        ])
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[test]
fn operators_append_remove_and_prepend_left_to_right() {
    let out = evaluate(
        r#"
        wield.opt.tools = wield.opt.tools + "grep" - "write" ^ "bash"
        wield.opt.tools.auto_approve = wield.opt.tools.auto_approve + {"read", "grep"} - "bash"
        wield.opt.deny = wield.opt.deny ^ "write"
        "#,
        &known(),
    )
    .unwrap();
    assert_eq!(
        shown(&out.ops),
        pairs(&[
            ("tools", "append [\"grep\"]"),
            ("tools", "remove [\"write\"]"),
            ("tools", "prepend [\"bash\"]"),
            ("tools.auto_approve", "append [\"read\", \"grep\"]"),
            ("tools.auto_approve", "remove [\"bash\"]"),
            ("deny", "prepend [\"write\"]"),
        ])
    );
}

#[test]
fn misspelled_tool_names_get_did_you_mean_but_presets_groups_and_globs_do_not() {
    let out = evaluate(
        r#"
        wield.opt.tools:append("raed")
        wield.opt.tools = {"$standard", "-edit", "+read", "group:fs", "mcp__*", "bash:git *", "bsh:ls", "zzzzzz"}
        wield.opt.tools.auto_approve = wield.opt.tools.auto_approve - "wirte"
        "#,
        &known(),
    )
    .unwrap();
    assert_eq!(out.warnings.len(), 4, "{:?}", out.warnings);
    assert!(
        out.warnings[0].contains("`raed`; did you mean `read`?"),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings[1].contains("`bsh`; did you mean `bash`?"),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings[2].contains("`zzzzzz`") && !out.warnings[2].contains("did you mean"),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings[3].contains("`wirte`; did you mean `write`?"),
        "{:?}",
        out.warnings
    );
}

#[test]
fn other_globals_are_variables() {
    let out = evaluate("name = 'Ada'\ncount = 3\nlocal hidden = 1\nfunction f() end", &[]).unwrap();
    assert_eq!(out.variables.get("name"), Some(&json!("Ada")));
    assert_eq!(out.variables.get("count"), Some(&json!(3)));
    assert!(!out.variables.contains_key("hidden") && !out.variables.contains_key("f"));
    assert!(!out.variables.contains_key("wield"));
}

#[test]
fn the_function_form_of_auto_approve_is_a_frontmatter_resolver() {
    let out = evaluate(
        r#"
        wield.opt.tools.auto_approve = function(tool_name, input, ctx)
          if tool_name == "read" then return true end
          if tool_name == "bash" and input.command:find("rm") then return "deny" end
          if tool_name == "write" then return false end
          return nil
        end
        "#,
        &known(),
    )
    .unwrap();
    assert_eq!(out.ops.len(), 1);
    assert_eq!(out.ops[0].key, "tools.auto_approve");
    let Op::SetFunction(r) = &out.ops[0].op else {
        panic!("{:?}", out.ops)
    };
    assert_eq!((r.name(), r.priority()), ("frontmatter", 90));
    let decide = |tool: &str, input: serde_json::Value| super::ask(&**r, tool, input).unwrap();
    assert_eq!(decide("read", json!({"path": "a"})), Decision::Approve);
    assert!(matches!(
        decide("bash", json!({"command": "rm -rf x"})),
        Decision::Deny(_)
    ));
    assert_eq!(decide("write", json!({})), Decision::RequireApproval);
    assert_eq!(decide("grep", json!({})), Decision::Pass);
}

#[test]
fn frontmatter_runs_in_the_sandbox_with_its_limits() {
    for code in [
        "os.exit(1)",
        "io.open('/etc/passwd')",
        "require('x')",
        "dofile('/etc/passwd')",
    ] {
        assert!(evaluate(code, &[]).is_err(), "{code} ran");
    }
    let err = evaluate("while true do end", &[]).unwrap_err().to_string();
    assert!(err.contains("instructions") || err.contains("time limit"), "{err}");
    let err = evaluate(
        "local s, t = ('x'):rep(1e6), {} for i = 1, 1e9 do t[i] = s .. i end",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("memory"), "{err}");
    let err = evaluate("wield.opt.tools = wield.opt.tools + 3", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected a name or a list of names"), "{err}");
    let err = evaluate("wield.opt.model = function() end", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("only auto_approve takes a function"), "{err}");
}
