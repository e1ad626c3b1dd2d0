//! `wield chat new | status | approve | reject` on real files.

// The helper is outside #[test] fns.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

use crate::common::Env;

const DOC: &str = "@System:\nBe brief.\n\n@You:\nWhat is 2+2?\n\n@Assistant:\nLet me check.\n\n**Tool Use:** `calculator` (`toolu_1`)\n\n```json\n{\"expression\":\"2+2\"}\n```\n\n**Tool Use:** `bash` (`toolu_2`)\n\n```json\n{\"command\":\"rm -rf /tmp/x\"}\n```\n\n@You:\n\n**Tool Result:** `toolu_1` (pending)\n\n```\n```\n\n**Tool Result:** `toolu_2` (pending)\n\n```\n```\n";

fn chat(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = env.wield().arg("chat").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn new_starts_a_document_and_status_reads_it() {
    let env = Env::new();
    let (code, _, err) = chat(&env, &["new", "a.chat", "--system", "You are terse."]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(env.ws("a.chat")).unwrap(),
        "@System:\nYou are terse.\n\n@You:\n\n"
    );
    let (code, _, err) = chat(&env, &["new", "a.chat"]);
    assert_eq!(code, 2);
    assert!(err.contains("exists already"), "{err}");

    env.put("b.chat", DOC);
    let (code, out, err) = chat(&env, &["status", "b.chat", "--json"]);
    assert_eq!(code, 0, "{err}");
    let state: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(state["pending"], serde_json::json!(["toolu_1", "toolu_2"]));
    assert_eq!(state["tool_uses"][1]["name"], "bash");
    assert_eq!(state["tool_uses"][1]["line"], 16);
    assert_eq!(state["blocked"], false);
    // A problem is reported with its line, and blocks sending.
    env.put(
        "c.chat",
        "@You:\nHi\n\n@Assistant:\n**Tool Use:** `read` (`t1`)\n\n```json\n{not json}\n```\n",
    );
    let (code, out, _) = chat(&env, &["status", "c.chat"]);
    assert_eq!(code, 1, "a document with an error is reported as failing: {out}");
    assert!(
        out.contains("line 8: error: the input of the tool use `t1` is not valid JSON"),
        "{out}"
    );
    assert!(out.contains("blocked"), "{out}");
}

#[test]
fn approve_and_reject_rewrite_only_the_headers_and_the_rejection() {
    let env = Env::new();
    env.put("d.chat", DOC);
    let (code, out, err) = chat(&env, &["approve", "d.chat", "toolu_1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("approved toolu_1"), "{out}");
    let text = std::fs::read_to_string(env.ws("d.chat")).unwrap();
    assert_eq!(text, DOC.replace("`toolu_1` (pending)", "`toolu_1` (approved)"));

    let (code, _, err) = chat(
        &env,
        &["reject", "d.chat", "toolu_2", "--message", "Never delete files."],
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(env.ws("d.chat")).unwrap();
    assert!(
        text.contains("**Tool Result:** `toolu_2` (rejected)\n\n```\nNever delete files.\n```\n"),
        "{text}"
    );
    assert!(
        text.starts_with(&DOC[..DOC.find("**Tool Result:** `toolu_2`").unwrap()].replace("(pending)", "(approved)"))
    );

    let (code, _, err) = chat(&env, &["approve", "d.chat", "toolu_9"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no tool use `toolu_9`; the document's: toolu_1, toolu_2"),
        "{err}"
    );
    env.put("e.chat", DOC);
    let (code, out, _) = chat(&env, &["approve", "e.chat", "--all"]);
    assert_eq!(code, 0);
    assert!(out.contains("toolu_1, toolu_2"), "{out}");
    assert!(!std::fs::read_to_string(env.ws("e.chat")).unwrap().contains("(pending)"));
}

/// Each command says what happened and what the person does next, in
/// plain words (the text people read, as a snapshot).
#[test]
fn each_command_says_what_to_do_next() {
    let env = Env::new();
    let mut transcript = String::new();
    let mut run = |args: &[&str]| {
        let (code, out, err) = chat(&env, args);
        transcript.push_str(&format!("$ wield chat {}\n{out}{err}[exit {code}]\n\n", args.join(" ")));
    };
    run(&["new", "a.chat"]);
    run(&["status", "a.chat"]);
    env.put("b.chat", DOC);
    run(&["status", "b.chat"]);
    run(&["approve", "b.chat", "toolu_1"]);
    run(&["reject", "b.chat", "toolu_2"]);
    run(&["status", "b.chat"]);
    run(&["status", "nonexistent.chat"]);
    env.put("m.chat", &DOC.replacen("`toolu_1` (pending)", "`toolu_1` (aproved)", 1));
    run(&["status", "m.chat"]);
    insta::assert_snapshot!(transcript);
}
