//! `batch` through the real binary: several calls in one, each through the
//! whole pipeline; refusals inside it; its limits.

// The call helper is outside #[test] fns.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use crate::common::Env;

/// `wield call --json batch {calls}`: (exit code, the result JSON).
fn batch(env: &Env, calls: &Value) -> (i32, Value) {
    let out = env
        .wield()
        .args(["call", "--json", "batch"])
        .arg(json!({ "calls": calls }).to_string())
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v)
}

fn text(result: &Value) -> String {
    format!(
        "{}{}",
        result["output"].as_str().unwrap_or(""),
        result["error"].as_str().unwrap_or("")
    )
}

#[test]
fn a_batch_runs_each_call_and_reports_a_section_per_call() {
    let env = Env::new();
    env.put("notes.txt", "the answer is 42\n");
    let (code, r) = batch(
        &env,
        &json!([
            { "name": "read", "arguments": { "path": "notes.txt" } },
            { "name": "calculator", "arguments": { "expression": "6*7" } },
            { "name": "read", "arguments": { "path": "missing.txt" } },
            { "name": "grep", "arguments": { "pattern": "answer" } },
        ]),
    );
    assert_eq!(code, 0, "{r}");
    let doc = text(&r);
    assert!(doc.starts_with("3 of 4 calls succeeded."), "{doc}");
    for part in [
        "## 1. `read` — ok",
        "the answer is 42",
        "## 2. `calculator` — ok",
        "42",
        "## 3. `read` — failed",
        "## 4. `grep` — ok",
        "notes.txt:1:",
    ] {
        assert!(doc.contains(part), "missing {part:?} in\n{doc}");
    }
}

#[test]
fn inside_a_batch_nobody_is_asked_and_the_run_steering_tools_are_refused() {
    let env = Env::new();
    env.put(".wield/config.toml", "[approval]\nauto_approve = [\"$readonly\"]\n");
    env.put("notes.txt", "x\n");
    let (code, r) = batch(
        &env,
        &json!([
            { "name": "write", "arguments": { "path": "out.txt", "content": "y" } },
            { "name": "batch", "arguments": { "calls": [] } },
            { "name": "load_tools", "arguments": {} },
            { "name": "read", "arguments": { "path": "notes.txt" } },
        ]),
    );
    assert_eq!(code, 0, "{r}");
    let doc = text(&r);
    assert!(
        doc.contains("`write` needs a person's approval, which cannot be asked inside batch: call it directly"),
        "{doc}"
    );
    assert!(doc.contains("`batch` cannot run inside batch"), "{doc}");
    assert!(doc.contains("`load_tools` cannot run inside batch"), "{doc}");
    assert!(doc.contains("## 4. `read` — ok"), "{doc}");
    assert!(!env.ws("out.txt").exists());
}

#[test]
fn a_batch_holds_one_to_twenty_five_calls_and_unknown_tools_fail_alone() {
    let env = Env::new();
    let many: Vec<Value> = (0..26)
        .map(|_| json!({ "name": "calculator", "arguments": { "expression": "1" } }))
        .collect();
    let (code, r) = batch(&env, &json!(many));
    assert_ne!(code, 0);
    assert!(text(&r).contains("calls"), "{r}");
    let (code, _) = batch(&env, &json!([]));
    assert_ne!(code, 0);
    let (code, r) = batch(
        &env,
        &json!([
            { "name": "no_such_tool", "arguments": {} },
            { "name": "calculator", "arguments": { "expression": "2+2" } },
        ]),
    );
    assert_eq!(code, 0, "{r}");
    let doc = text(&r);
    assert!(
        doc.contains("## 1. `no_such_tool` — failed") && doc.contains("unknown tool"),
        "{doc}"
    );
    assert!(doc.contains("## 2. `calculator` — ok"), "{doc}");
}
