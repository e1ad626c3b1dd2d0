//! `ChatDocument` driving a cycle on a real runtime against the scripted
//! provider: what a front-end (the CLI, an editor's plugin) gets from the
//! library. The frontmatter's policy is the document's: it can tighten the
//! configuration (deny a tool it approves) and its `max_steps` only lowers
//! the configured one; the document and the files beside it are out of its
//! tools' reach while the cycle runs.

use std::path::Path;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use wield_chat::cycle::Stop;
use wield_chat::{ChatDocument, CycleFlags};
use wield_runtime::{Runtime, RuntimeOptions};
use wield_sandbox::fs::chat::Ledger;
use wield_test_support::scripted::{Scripted, Turn};

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

/// One press on `chats/a.chat`: the document opened, the runtime loaded
/// with what it decides, the cycle run to its stop.
async fn press(dir: &Path) -> Stop {
    let doc = ChatDocument::open(&dir.join("chats/a.chat")).unwrap();
    let mut options = RuntimeOptions {
        tools: wield_agent::tools::agent_tools(),
        config_keys: [wield_llm::settings::CONFIG_KEYS, wield_agent::CONFIG_KEYS].concat(),
        ..RuntimeOptions::default()
    };
    doc.adjust(&mut options).unwrap();
    let rt = Runtime::load(dir, options).await.unwrap();
    let agent = wield_agent::AgentSettings::from_config(rt.config(), None).unwrap();
    let all = wield_llm::settings::Providers::from_config(
        Some(&serde_json::to_value(rt.config().value("providers").unwrap()).unwrap()),
        None,
        |_| None,
    )
    .unwrap();
    let settings = doc.provider(&all, None, None, &agent).unwrap();
    let endpoint = settings.endpoint(|_| None).unwrap();
    let provider = wield_llm::Provider::new(endpoint).unwrap();
    let flags = CycleFlags {
        ledger: Some(Ledger::at(dir.join("ledger"))),
        ..CycleFlags::default()
    };
    let cycle = doc.cycle(&rt, provider, &settings, &agent, flags).unwrap();
    cycle.run(&CancellationToken::new(), |_| {}).await.unwrap()
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
