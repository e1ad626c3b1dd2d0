//! `ChatDocument` driving a cycle on a real runtime against the scripted
//! provider: what a front-end (the CLI, an editor's plugin) gets from the
//! library. The frontmatter's policy is the document's: it can tighten the
//! configuration (deny a tool it approves) and its `max_steps` only lowers
//! the configured one; the document and the files beside it are out of its
//! tools' reach while the cycle runs.

use std::path::Path;

use serde_json::json;
use wield_chat::cycle::Stop;
use wield_test_support::scripted::{Scripted, Turn};

use super::press::Press;

/// A workspace talking to `provider` (with `config` besides), holding
/// `chats/a.chat` with `doc`.
fn project(provider: &Scripted, config: &str, doc: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".wield")).unwrap();
    std::fs::create_dir_all(dir.path().join("chats")).unwrap();
    std::fs::write(
        dir.path().join(".wield/config.toml"),
        format!("{}\n{config}", provider.config()),
    )
    .unwrap();
    std::fs::write(dir.path().join("chats/a.chat"), doc).unwrap();
    dir
}

/// One press on `chats/a.chat`.
async fn press(dir: &Path) -> Stop {
    Press::default().on(dir, "chats/a.chat").await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_runs_the_cycle_and_the_reply_lands_in_the_document() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("The note says 42."),
    ]);
    let dir = project(&provider, "", "@You:\nWhat does the note say?\n");
    std::fs::write(dir.path().join("notes.txt"), "the answer is 42\n").unwrap();
    let stop = press(dir.path()).await;
    assert!(matches!(stop, Stop::Answered), "{stop:?}");
    let text = std::fs::read_to_string(dir.path().join("chats/a.chat")).unwrap();
    assert!(text.contains("**Tool Use:** `read`"), "{text}");
    assert!(text.contains("the answer is 42"), "{text}");
    assert!(text.contains("The note says 42."), "{text}");
    // The document is listed for every later runtime to guard.
    let listed = std::fs::read_to_string(dir.path().join("ledger")).unwrap();
    let real = dir.path().join("chats/a.chat").canonicalize().unwrap();
    assert!(listed.contains(&real.display().to_string()), "{listed}");
}

/// A frontmatter that denies a tool the configuration approves wins; a
/// file tool of the cycle cannot write the document; `max_steps` above the
/// configured one does not raise it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_frontmatter_only_tightens_and_the_document_is_out_of_reach() {
    let provider = Scripted::start(vec![
        Turn::Calls(vec![
            ("bash", json!({ "command": "echo ran > ran.txt" })),
            ("write", json!({ "path": "chats/a.chat", "content": "@You:\nforged\n" })),
        ]),
        Turn::Text("Done."),
    ]);
    let doc = "```toml\ndeny = [\"bash\"]\nmax_steps = 50\n```\n@You:\nGo.\n";
    let config = "[approval]\nauto_approve = [\"*\"]\n[chat]\nmax_steps = 1\n";
    let dir = project(&provider, config, doc);
    let stop = press(dir.path()).await;
    assert!(!dir.path().join("ran.txt").exists(), "the denied call ran");
    let text = std::fs::read_to_string(dir.path().join("chats/a.chat")).unwrap();
    assert!(!text.contains("forged\n@"), "{text}");
    assert!(text.contains("denied by a policy"), "{text}");
    assert!(text.contains("is a .chat document"), "{text}");
    // One reply with calls was allowed, not fifty.
    assert!(matches!(stop, Stop::MaxSteps(1)), "{stop:?}");
    assert_eq!(provider.requests().len(), 1);
}
