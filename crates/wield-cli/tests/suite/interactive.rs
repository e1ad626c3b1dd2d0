//! The interactive agent (`wield run` in a terminal) driven in tmux, the
//! way a person uses it: a prompt, the streamed answer, an approval through
//! the dialog with its diff, Ctrl-C during a stream, `/tools`, and resuming
//! a saved session. The model is a scripted local provider.
// The terminal driver is a helper outside #[test] fns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Env;
use crate::scripted_provider::{Scripted, Turn};
use crate::wield_cmd;

/// `wield run ARGS` in a detached tmux session of its own (a private
/// server socket), 160×50, in the test's environment.
struct Tmux<'a> {
    env: &'a Env,
    socket: PathBuf,
}

impl<'a> Tmux<'a> {
    fn start(env: &'a Env, args: &[&str]) -> Self {
        let socket = env.base.join("tmux.sock");
        let status = env
            .wield_env()
            .running("tmux")
            .env("TERM", "xterm-256color")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50"])
            // tmux 3.3 does not always learn a dead pane's exit status: a
            // shell records it (ignoring Ctrl-C itself, as a login shell would).
            .args(["sh", "-c", "trap '' INT; \"$@\"; echo $? > \"$0.status\""])
            .arg(&socket)
            .arg(wield_cmd::wield_bin())
            .arg("run")
            .args(args)
            .status()
            .expect("tmux must be installed (scripts/test-deps.sh installs it)");
        assert!(status.success(), "tmux did not start");
        Self { env, socket }
    }

    fn tmux(&self) -> Command {
        let mut c = self.env.wield_env().running("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    /// Everything the pane shows, scrollback included.
    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-1000"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `text` (20 s at most).
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {text:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the line editor waits for input: its prompt is the
    /// screen's last line (a key pressed earlier reaches the terminal
    /// before the editor reads it).
    fn wait_for_prompt(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self
            .screen()
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::trim_end)
            != Some("›")
        {
            assert!(
                Instant::now() < deadline,
                "no prompt; the terminal shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The prompt is drawn just before the editor reads.
        std::thread::sleep(Duration::from_millis(100));
    }

    /// Types `text` and Enter once the line editor waits for input.
    fn type_line(&self, text: &str) {
        self.wait_for_prompt();
        assert!(self.tmux().args(["send-keys", "-l", text]).status().unwrap().success());
        self.keys(&["Enter"]);
    }

    fn keys(&self, keys: &[&str]) {
        assert!(self.tmux().arg("send-keys").args(keys).status().unwrap().success());
    }

    /// The exit status once `wield` has ended (20 s at most).
    fn exit_status(&self) -> i32 {
        let file = self.socket.with_extension("sock.status");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(code) = std::fs::read_to_string(&file).ok().and_then(|t| t.trim().parse().ok()) {
                return code;
            }
            assert!(
                Instant::now() < deadline,
                "wield did not exit; the terminal shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux<'_> {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

fn saved_sessions(env: &Env) -> Vec<Value> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(env.ws(".wield/sessions")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        all.push(serde_json::from_str(&text).unwrap());
    }
    all
}

#[test]
fn a_person_prompts_approves_a_write_with_its_diff_cancels_a_stream_and_exits() {
    let model = Scripted::start(vec![
        Turn::Call(
            "write",
            json!({ "path": "hello.txt", "content": "hello from the model\n" }),
        ),
        Turn::Late("I wrote hello.txt.", Duration::from_millis(2500)),
        Turn::Slow(
            "counting one two three four five six seven eight nine ten eleven twelve",
            Duration::from_millis(400),
        ),
        Turn::Think("The person asks again; say so.", "Still here."),
        Turn::Text("Summary: hello.txt was written; counting was cancelled."),
    ]);
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        &format!("[approval]\nauto_approve = [\"$readonly\"]\n\n{}", model.config()),
    );
    let t = Tmux::start(&env, &[]);
    t.wait_for("/help lists the commands");

    t.type_line("/tools");
    let screen = t.wait_for("write ");
    assert!(screen.contains("read "), "{screen}");

    // A prompt; the model's write needs approval: the dialog shows its diff.
    t.type_line("Create hello.txt please");
    let screen = t.wait_for("Allow this call?");
    for shown in ["approval needed: `write`", "+++ b/hello.txt", "+hello from the model"] {
        assert!(screen.contains(shown), "missing {shown:?} in\n{screen}");
    }
    t.keys(&["Enter"]);
    // While the model has not started its answer, the screen says so.
    t.wait_for("waiting for the model…");
    let screen = t.wait_for("I wrote hello.txt.");
    assert!(screen.contains("● "), "the call's preview line is missing:\n{screen}");
    assert!(screen.contains("✓ write"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(env.ws("hello.txt")).unwrap(),
        "hello from the model\n"
    );

    // A streamed answer, cancelled with Ctrl-C half-way.
    t.type_line("Count slowly");
    t.wait_for("counting one two");
    t.keys(&["C-c"]);
    let screen = t.wait_for("cancelled; every call answered");
    assert!(!screen.contains("twelve"), "the stream went on after Ctrl-C:\n{screen}");

    // The conversation goes on, however long the person waits (longer than
    // the grace a stop signal gives commands); thinking is collapsed by
    // default.
    std::thread::sleep(Duration::from_secs(4));
    t.type_line("Are you there?");
    let screen = t.wait_for("Still here.");
    assert!(screen.contains("/thinking shows it"), "{screen}");
    t.type_line("/usage");
    t.wait_for("tool calls");
    // `/compact`: a summary request without tools; the history is replaced.
    t.type_line("/compact");
    t.wait_for("the conversation was compacted");
    t.type_line("/exit");
    assert_eq!(t.exit_status(), 0, "{}", t.screen());

    // Every request paired each call with one result; the session is saved.
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[3].to_string().contains("Are you there?"));
    assert!(requests[4].get("tools").is_none(), "{}", requests[4]);
    let sessions = saved_sessions(&env);
    assert_eq!(sessions.len(), 1);
    let saved = sessions[0].to_string();
    for said in ["Are you there?", "Summary: hello.txt was written"] {
        assert!(saved.contains(said), "the saved session lacks {said:?}: {saved}");
    }
}

#[test]
fn resume_goes_on_with_the_newest_session_and_ctrl_c_twice_quits() {
    let model = Scripted::start(vec![Turn::Text("The first answer."), Turn::Text("The second answer.")]);
    let env = Env::new();
    env.put(".wield/config.toml", &model.config());
    let out = env.wield().args(["run", "-p", "First question"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let t = Tmux::start(&env, &["--resume"]);
    let screen = t.wait_for("resumed session");
    assert!(screen.contains("The first answer."), "{screen}");
    t.type_line("Second question");
    t.wait_for("The second answer.");
    // Ctrl-C at the prompt warns; a second one quits.
    t.wait_for_prompt();
    t.keys(&["C-c"]);
    t.wait_for("Ctrl-C again");
    t.wait_for_prompt();
    t.keys(&["C-c"]);
    assert_eq!(t.exit_status(), 130, "{}", t.screen());
    // The prompt history is saved on this way out too.
    let history = std::fs::read_to_string(env.ws(".wield/history")).unwrap();
    assert!(history.contains("Second question"), "{history}");
    // Which git ignores, as it does wield's other state.
    let ignore = std::fs::read_to_string(env.ws(".wield/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "/history"), "{ignore}");

    let requests = model.requests();
    let second = requests[1].to_string();
    assert!(
        second.contains("First question") && second.contains("The first answer."),
        "{second}"
    );
    let sessions = saved_sessions(&env);
    assert_eq!(sessions.len(), 1, "the resumed session is saved under its own id");
    assert!(sessions[0].to_string().contains("The second answer."));
}

#[test]
fn the_model_asks_and_the_person_chooses_an_option() {
    let model = Scripted::start(vec![
        Turn::Call(
            "ask",
            json!({ "question": "Which colour?", "options": [
                { "label": "red", "description": "warm" }, { "label": "blue" } ] }),
        ),
        Turn::Text("Blue it is."),
    ]);
    let env = Env::new();
    env.put(".wield/config.toml", &model.config());
    let t = Tmux::start(&env, &[]);
    t.type_line("Paint it");
    // The options, not the call's preview line (which names the question too).
    let screen = t.wait_for("red — warm");
    assert!(screen.contains("Which colour?"), "{screen}");
    t.keys(&["Down", "Enter"]);
    t.wait_for("Blue it is.");
    t.type_line("/exit");
    assert_eq!(t.exit_status(), 0, "{}", t.screen());
    let requests = model.requests();
    let answered = requests[1].to_string();
    assert!(answered.contains("The person answered: blue"), "{answered}");
}

/// `/clear` starts a new session without the old one's todo list; each is
/// saved with its own.
#[test]
fn clear_starts_a_session_without_the_old_todo_list() {
    let model = Scripted::start(vec![
        Turn::Call(
            "todo_write",
            json!({"items": [{"content": "plan the work", "status": "in_progress"}]}),
        ),
        Turn::Text("Planned."),
        Turn::Call("todo_list", json!({})),
        Turn::Text("Nothing planned."),
    ]);
    let env = Env::new();
    env.put(".wield/config.toml", &model.config());
    let t = Tmux::start(&env, &[]);
    t.type_line("Make a plan");
    t.wait_for("Planned.");
    t.type_line("/clear");
    t.wait_for("a new conversation");
    t.type_line("What is planned?");
    t.wait_for("Nothing planned.");
    // Each exchange is saved before the next prompt.
    t.wait_for_prompt();

    let listed = model.requests()[3].to_string();
    assert!(listed.contains("The todo list is empty."), "{listed}");
    let mut todos: Vec<Value> = saved_sessions(&env).iter().map(|s| s["todo"].clone()).collect();
    todos.sort_by_key(|t| t.is_null());
    assert_eq!(
        todos,
        [
            json!([{"content": "plan the work", "status": "in_progress"}]),
            Value::Null
        ]
    );
}

/// The calls a model asks for offer what `wield call` does not: a denial
/// with a message the model reads, and cancelling the rest of its batch.
#[test]
fn a_model_s_calls_can_be_denied_with_a_message_or_their_batch_cancelled() {
    let model = Scripted::start(vec![
        Turn::Call("write", json!({ "path": "a.txt", "content": "a\n" })),
        Turn::Calls(vec![
            ("write", json!({ "path": "b.txt", "content": "b\n" })),
            ("write", json!({ "path": "c.txt", "content": "c\n" })),
        ]),
        Turn::Text("Understood."),
    ]);
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        &format!("[approval]\nauto_approve = [\"$readonly\"]\n\n{}", model.config()),
    );
    let t = Tmux::start(&env, &[]);
    t.type_line("Write the files");
    let screen = t.wait_for("Allow this call?");
    for offered in ["Deny with a message to the model", "Cancel the whole batch"] {
        assert!(screen.contains(offered), "{offered:?} not offered:\n{screen}");
    }
    t.keys(&["Down", "Down", "Down", "Down", "Down", "Enter"]);
    t.wait_for("Message for the model:");
    t.keys(&["-l", "write tests first"]);
    t.keys(&["Enter"]);
    // The next turn's batch of two: Ctrl-C in the dialog cancels both.
    t.wait_for("+++ b/b.txt");
    t.keys(&["C-c"]);
    t.wait_for("Understood.");
    t.type_line("/exit");
    assert_eq!(t.exit_status(), 0, "{}", t.screen());
    let requests = model.requests();
    assert!(requests[1].to_string().contains("write tests first"), "{}", requests[1]);
    let cancelled = requests[2].to_string();
    assert_eq!(
        cancelled
            .matches("cancelled: the person approving cancelled this batch")
            .count(),
        2,
        "{cancelled}"
    );
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert!(!env.ws(file).exists(), "{file} was written");
    }
}

/// Headless in a terminal: while the model has not answered, stderr says
/// so, with the time it has waited; the answer goes to stdout.
#[test]
fn a_headless_run_in_a_terminal_shows_it_is_waiting_for_the_model() {
    let model = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Late("It says hello.", Duration::from_millis(2500)),
    ]);
    let env = Env::new();
    env.put(".wield/config.toml", &model.config());
    env.put("notes.txt", "hello\n");
    let t = Tmux::start(&env, &["-p", "What does notes.txt say?"]);
    let screen = t.wait_for("step 2: waiting for the model…");
    assert!(screen.contains("→ read"), "{screen}");
    // The pane closes with the run: its status says it answered.
    assert_eq!(t.exit_status(), 0, "{}", t.screen());
    assert_eq!(model.requests().len(), 2);
}
