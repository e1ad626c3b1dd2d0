//! Saved sessions as `wield run` saves and resumes them, on an
//! `AgentSession`: a run is saved in a private directory and a resumed one
//! goes on with its conversation in the same file; the todo list is saved
//! and resumed with it (a session saved before todo lists were kept still
//! resumes); a failed run is saved with its error and resuming the newest
//! passes over it. (Not saving with `--ephemeral`, the `--resume` flag
//! and its note are the CLI's, tested there.)
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};
use wield_agent::StopReason;
use wield_agent::session::{list, load, sessions_dir};
use wield_test_support::agent::{Build, Flags, project, run_once, session_files, tool_contents};
use wield_test_support::scripted::{Scripted, Turn};

/// `--resume` without an id: the newest session that ended.
const RESUME: Build<'static> = Build {
    agent: None,
    yes: false,
    max_steps: None,
    token_budget: None,
    resume: Some(""),
};

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_saved_and_resumed_into_the_same_file() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("It says 42."),
        Turn::Text("You asked what notes.txt says."),
    ]);
    let dir = project(&provider, "");
    let ws = dir.path();
    let ran = run_once(ws, Flags::default(), Build::default(), "Read notes.txt").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let sessions = session_files(ws);
    let [file] = sessions.as_slice() else {
        panic!("{sessions:?}")
    };
    let mode = std::fs::metadata(sessions_dir(ws)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let saved = read_json(file);
    assert_eq!(saved["stop"], "done");
    assert_eq!(saved["messages"].as_array().unwrap().len(), 4, "{saved}");

    // Resumed: the earlier conversation goes with the next task.
    let ran = run_once(ws, Flags::default(), RESUME, "What did I ask?").await;
    assert_eq!(ran.ok().answer.trim_end(), "You asked what notes.txt says.");
    let text = provider.requests().last().unwrap().to_string();
    assert!(
        text.contains("Read notes.txt") && text.contains("What did I ask?"),
        "{text}"
    );
    assert_eq!(session_files(ws).len(), 1, "resumed into the same file");

    // Nothing saved: nothing to resume.
    let empty = project(&provider, "");
    let err = load(empty.path(), "").unwrap_err().to_string();
    assert!(err.contains("no saved session to resume"), "{err}");
}

/// The todo list is saved with the session and a resumed run has it again;
/// marking the item in progress done promotes the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_todo_list_is_saved_with_the_session_and_resumed() {
    let provider = Scripted::start(vec![
        Turn::Call(
            "todo_write",
            json!({"items": [
                {"content": "read notes", "status": "in_progress"},
                {"content": "answer", "status": "pending"}
            ]}),
        ),
        Turn::Text("Noted."),
        Turn::Call("todo_progress", json!({"updates": [{"index": 1, "status": "done"}]})),
        Turn::Text("Next: answer."),
    ]);
    let dir = project(&provider, "");
    let ws = dir.path();
    let ran = run_once(ws, Flags::default(), Build::default(), "Plan it").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let file = session_files(ws).remove(0);
    let saved = read_json(&file);
    assert_eq!(
        saved["todo"],
        json!([
            {"content": "read notes", "status": "in_progress"},
            {"content": "answer", "status": "pending"}
        ]),
        "{saved}"
    );
    let ran = run_once(ws, Flags::default(), RESUME, "Go on").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let progressed = tool_contents(&provider.requests()[3]).pop().unwrap();
    assert!(
        progressed.contains("1. [x] read notes") && progressed.contains("2. [~] answer"),
        "{progressed}"
    );
    let saved = read_json(&file);
    assert_eq!(saved["todo"][1]["status"], "in_progress", "{saved}");

    // A session saved before todo lists were kept still resumes.
    let mut old = saved.clone();
    old.as_object_mut().unwrap().remove("todo");
    let provider = Scripted::start(vec![Turn::Text("ok")]);
    let other = project(&provider, "");
    let dir = sessions_dir(other.path());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dir.join(file.file_name().unwrap()), old.to_string()).unwrap();
    let ran = run_once(other.path(), Flags::default(), RESUME, "Go on").await;
    let outcome = ran.ok();
    assert_eq!((outcome.stop, outcome.answer.trim_end()), (StopReason::Done, "ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_is_saved_with_its_error_and_resume_takes_the_newest_that_ended() {
    let provider = Scripted::start(vec![Turn::Text("First answer."), Turn::Text("Second answer.")]);
    let dir = project(&provider, "");
    let ws = dir.path();
    let ran = run_once(ws, Flags::default(), Build::default(), "Remember the word kiwi").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    // The provider unreachable: the run fails, and is saved saying so.
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    let base = format!("providers.fake.base_url={refused}");
    let flags = Flags {
        set: &[&base, "providers.fake.max_retries=0"],
        ..Flags::default()
    };
    let ran = run_once(ws, flags, Build::default(), "This one fails").await;
    assert!(ran.outcome.is_err(), "{:?}", ran.events);

    let sessions = list(ws);
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let (failed, good) = (&sessions[0].session, &sessions[1].session);
    assert_eq!(failed.task(), "This one fails", "newest first: {sessions:?}");
    assert!(!failed.resumable());
    assert!(failed.error.as_deref().unwrap().contains("cannot reach"), "{failed:?}");
    assert_eq!(failed.outcome(), format!("error: {}", failed.error.as_deref().unwrap()));
    assert_eq!((good.stop.as_deref(), good.steps), (Some("done"), 1));
    assert!(sessions[1].bytes > 0);

    // Resuming the newest passes over the failed run.
    let resumed = load(ws, "").unwrap();
    assert_eq!(resumed.id, good.id);
    assert_eq!((resumed.outcome().as_str(), resumed.messages.len()), ("done", 2));
    let ran = run_once(ws, Flags::default(), RESUME, "Which word?").await;
    assert_eq!(ran.ok().answer.trim_end(), "Second answer.");
    let last = provider.requests().last().unwrap().to_string();
    assert!(last.contains("kiwi") && !last.contains("This one fails"), "{last}");
}
