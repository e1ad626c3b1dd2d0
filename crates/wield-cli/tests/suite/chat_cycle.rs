//! `wield chat FILE`'s contract: the line it prints for each way the cycle
//! stops, its exit codes (0 done or waiting, 1 what stops the document, 2
//! a mistake to fix in the frontmatter, 3 `max_steps`, 130 Ctrl-C), its
//! flags and its `approve` and `reject` subcommands, against a scripted
//! provider. The cycle's behaviour (what is run, written and sent) is
//! tested in wield-chat (`tests/suite/cycle.rs`).

// The helpers are outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Env;
use crate::scripted_provider::{Scripted, Turn, tool_results};

fn project(turns: Vec<Turn>) -> (Env, Scripted) {
    let provider = Scripted::start(turns);
    let env = Env::new();
    env.put(".wield/config.toml", &provider.config());
    env.put("notes.txt", "the answer is 42\n");
    (env, provider)
}

fn chat(env: &Env, args: &[&str]) -> (i32, String) {
    let out = env.wield().arg("chat").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn doc(env: &Env) -> String {
    std::fs::read_to_string(env.ws("a.chat")).unwrap()
}

fn status(env: &Env) -> Value {
    let (code, out) = chat(env, &["status", "a.chat", "--json"]);
    assert_eq!(code, 0, "{out}");
    serde_json::from_str(&out).unwrap()
}

/// `wield chat` with `args` exits `code` and says `want`.
fn says(env: &Env, args: &[&str], code: i32, want: &str) {
    let (got, out) = chat(env, args);
    assert_eq!(got, code, "{args:?}: {out}");
    assert!(out.contains(want), "{args:?}: {want:?} missing from {out}");
}

/// Without autopilot each press says what it did and what the next one
/// does; `--once` names the phase it did; an answered document says where
/// to write, and a press with nothing to send says so. All exit 0.
#[test]
fn each_press_says_how_the_cycle_stopped() {
    let (env, _provider) = project(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("42."),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Still 42."),
    ]);
    env.put("a.chat", "```toml\nautopilot = false\n```\n@You:\nRead it.\n");
    for want in [
        "a.chat: the model asks for tools; run `wield chat a.chat` again to review them",
        "a.chat: results written; run `wield chat a.chat` again to send them",
        "a.chat: answered; write your next message after the last @You:",
        "a.chat: nothing to send: write your message after the last @You:",
    ] {
        says(&env, &["a.chat"], 0, want);
    }

    let text = doc(&env).replace("autopilot = false", "autopilot = true");
    env.put("a.chat", &format!("{text}Again.\n"));
    for phase in ["send", "categorize", "execute"] {
        says(
            &env,
            &["a.chat", "--once"],
            0,
            &format!("a.chat: {phase} done (--once)"),
        );
    }
}

const ASK_WRITE: &str = "```toml\nauto_approve = [\"-write\"]\n```\n@You:\nWrite out.txt\n";

#[test]
fn a_pending_call_is_listed_by_line_and_approve_lets_it_run() {
    let (env, provider) = project(vec![
        Turn::Call("write", json!({ "path": "out.txt", "content": "hi" })),
        Turn::Text("Written."),
    ]);
    env.put("a.chat", ASK_WRITE);
    let (code, out) = chat(&env, &["a.chat"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("a.chat: waiting for you:") && out.contains("  line 18: `call_0` (write) is pending"),
        "{out}"
    );
    assert!(out.contains("`wield chat approve a.chat ID`"), "{out}");

    says(&env, &["approve", "a.chat", "call_0"], 0, "approved call_0");
    let (code, out) = chat(&env, &["a.chat"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(env.ws("out.txt")).unwrap(), "hi");
    assert_eq!(provider.requests().len(), 2);
}

#[test]
fn reject_writes_the_persons_message_as_the_result() {
    let (env, provider) = project(vec![
        Turn::Call("write", json!({ "path": "out.txt", "content": "hi" })),
        Turn::Text("Understood."),
    ]);
    env.put("a.chat", ASK_WRITE);
    chat(&env, &["a.chat"]);
    let (code, out) = chat(
        &env,
        &[
            "reject",
            "a.chat",
            "call_0",
            "--message",
            "Write it to notes2.txt instead.",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("rejected call_0"), "{out}");
    assert_eq!(status(&env)["tool_uses"][0]["status"], "rejected");
    let (code, out) = chat(&env, &["a.chat"]);
    assert_eq!(code, 0, "{out}");
    assert!(!env.ws("out.txt").exists());
    let results = tool_results(&provider.requests()[1]);
    assert!(results[0].1.contains("Write it to notes2.txt instead."), "{results:?}");
}

#[test]
fn done_is_reported_with_its_summary() {
    let (env, _provider) = project(vec![Turn::Call(
        "done",
        json!({ "summary": "All set.", "status": "success" }),
    )]);
    env.put("a.chat", "@You:\nPlan it.\n");
    says(&env, &["a.chat"], 0, "a.chat: the model reports it is done: All set.");
}

#[test]
fn max_steps_exits_3_saying_how_to_go_on() {
    let (env, _provider) = project(vec![Turn::Call("read", json!({ "path": "notes.txt" }))]);
    env.put("a.chat", "```toml\nmax_steps = 1\n```\n@You:\nRead notes.txt\n");
    says(
        &env,
        &["a.chat"],
        3,
        "a.chat: stopped after 1 replies with tool calls (max_steps); run `wield chat a.chat` to go on",
    );
}

/// `wield chat a.chat` in the background.
fn spawn_chat(env: &Env) -> std::process::Child {
    let mut cmd = env.wield_env().command();
    cmd.args(["chat", "a.chat"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

fn wait_for(env: &Env, what: &str) {
    let started = Instant::now();
    while !doc(env).contains(what) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never saw {what:?}: {}",
            doc(env)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(child: std::process::Child) -> (i32, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Ctrl-C is the process's signal: the cycle stops (exit 130, saying the
/// document is valid); while it runs, a second `wield chat` names its
/// process (exit 1).
#[test]
fn ctrl_c_exits_130_and_a_second_cycle_names_the_first() {
    let (env, _provider) = project(vec![Turn::Hang("Partial answer")]);
    env.put("a.chat", "@You:\nTell me a long story.\n");
    let child = spawn_chat(&env);
    wait_for(&env, "Partial answer");
    let (code, out) = chat(&env, &["a.chat"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("another `wield chat` (process {})", child.id())),
        "{out}"
    );
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let (code, out) = finish(child);
    assert_eq!(code, 130, "{out}");
    assert!(
        out.contains("a.chat: interrupted; the document is valid and every started call has its result"),
        "{out}"
    );
    assert!(doc(&env).contains("<!-- wield:aborted: Response interrupted by the user. -->"));
}

#[test]
fn a_diverted_reply_exits_1_naming_where_it_is() {
    let words = "one two three four five six seven eight nine ten";
    let (env, _provider) = project(vec![Turn::Slow(words, Duration::from_millis(80))]);
    env.put("a.chat", "@You:\nCount.\n");
    let child = spawn_chat(&env);
    wait_for(&env, "one");
    let mine = format!("{}\nI am typing here.\n", doc(&env));
    env.put("a.chat", &mine);
    let (code, out) = finish(child);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("the reply was not finished in it; the whole reply is in") && out.contains("a.chat.reply"),
        "{out}"
    );
}

/// What stops a document (an approved block the person edited, a missing
/// attachment, a duplicate id, the provider's failure) exits 1 with the
/// line to look at.
#[test]
fn what_stops_a_document_exits_1_saying_why() {
    let (env, _provider) = project(vec![Turn::Error(
        400,
        json!({ "error": { "message": "bad request body", "type": "invalid_request_error" } }),
    )]);
    env.put(
        "edited.chat",
        "@You:\nWrite\n\n@Assistant:\n**Tool Use:** `write` (`t1`)\n\n```json\n{\"path\": \"out.txt\", \"content\": \"x\"}\n```\n\n@You:\n**Tool Result:** `t1` (approved)\n\n```\nmy own notes\n```\n",
    );
    env.put("attach.chat", "@You:\nAnd @./nope.txt?\n");
    env.put(
        "dup.chat",
        "@You:\nGo\n\n@Assistant:\n**Tool Use:** `read` (`z`)\n\n```json\n{\"path\": \"notes.txt\"}\n```\n**Tool Use:** `write` (`z`)\n\n```json\n{\"path\": \"pwned\", \"content\": \"x\"}\n```\n",
    );
    env.put("fails.chat", "@You:\nHi\n");
    for (file, want) in [
        (
            "edited.chat",
            "edited.chat: line 12: `t1` is (approved) but its block holds text you wrote",
        ),
        ("attach.chat", "line 2: @./nope.txt cannot be attached"),
        ("dup.chat", "line 10: error: the tool use id `z` is already used"),
        ("fails.chat", "bad request body"),
    ] {
        says(&env, &[file], 1, want);
    }
}

/// A frontmatter the person must fix (a misspelled tool, Lua the sandbox
/// refuses, turning the sandbox off) is a usage error: exit 2.
#[test]
fn frontmatter_mistakes_exit_2() {
    let (env, provider) = project(vec![Turn::Text("unused")]);
    env.put("a.chat", "```toml\ntools = [\"+reed\"]\n```\n@You:\nhi\n");
    env.put("b.chat", "```lua\nos.execute(\"touch pwned\")\n```\n@You:\nhi\n");
    env.put("c.chat", "```toml\nsandbox = false\n```\n@You:\nHi\n");
    for (file, want) in [
        ("a.chat", "there is no tool `reed` (did you mean `read`?)"),
        ("b.chat", "b.chat: frontmatter: the Lua frontmatter failed"),
        ("c.chat", "cannot turn the sandbox off"),
    ] {
        says(&env, &[file], 2, want);
    }
    assert!(provider.requests().is_empty());
}

#[test]
fn the_model_flag_wins_over_the_frontmatter() {
    let (env, provider) = project(vec![Turn::Text("Hi.")]);
    env.put("a.chat", "```toml\nmodel = \"other-model\"\n```\n@You:\nHi\n");
    let (code, out) = chat(&env, &["a.chat", "--model", "cli-model"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(provider.requests()[0]["model"], "cli-model");
}
