//! The approvers: each choice through the scripted approver, the terminal
//! dialog through a real pseudo-terminal, and the headless refusal.

use std::path::Path;

use serde_json::Value;

use super::support::{Env, error_of};

const STRICT: &str = "[approval]\nauto_approve = []\n";
const WRITE: &str = r#"{"path":"src/a.rs","content":"new line"}"#;

#[allow(clippy::unwrap_used)]
fn scripted(e: &Env, answers: &str) -> (i32, Value, String) {
    let out = e
        .wield()
        .env("WIELD_TEST_APPROVER", answers)
        .args(["call", "--json", "debug_echo", WRITE])
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn each_scripted_choice() {
    let e = Env::with_config(STRICT);
    let (code, r, stderr) = scripted(&e, "once");
    assert_eq!(code, 0, "{r}");
    assert!(
        stderr.contains(
            "approver asked: debug_echo | debug_echo: path=\"src/a.rs\" content=\"new line\" | debug_echo:src/*"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-old\n+new line\n"),
        "{stderr}"
    );
    assert_eq!(scripted(&e, "session").0, 0);
    assert_eq!(e.project_approvals(), "", "once and session remember nothing on disk");
    assert_eq!(scripted(&e, "project").0, 0);
    assert!(e.project_approvals().contains("\"debug_echo:src/*\""));
    let e = Env::with_config(STRICT);
    assert_eq!(scripted(&e, "global").0, 0);
    assert!(e.global_approvals().contains("\"debug_echo:src/*\""));

    let e = Env::with_config(STRICT);
    let (code, r, _) = scripted(&e, "deny");
    assert_eq!(
        (code, error_of(&r)),
        (1, "denied: the user refused the call to `debug_echo`".into())
    );
    let (code, r, _) = scripted(&e, "deny:use the patch tool instead");
    assert_eq!((code, error_of(&r)), (1, "use the patch tool instead".into()));
    let (code, r, _) = scripted(&e, "cancel");
    assert_eq!(code, 1);
    assert_eq!(
        error_of(&r),
        "cancelled: the person approving cancelled this batch of calls"
    );
    e.wield()
        .env("WIELD_TEST_APPROVER", "perhaps")
        .args(["call", "debug_echo", "{}"])
        .assert()
        .code(2);
}

#[test]
fn without_a_terminal_the_call_is_refused_unless_yes() {
    let e = Env::with_config(STRICT);
    let (code, r, _) = e.call(&[], "debug_echo", WRITE);
    assert_eq!(code, 1);
    assert!(
        error_of(&r).starts_with("approval required: the call to `debug_echo` needs approval"),
        "{r}"
    );
    assert!(error_of(&r).contains("wield approvals add 'debug_echo:src/*'"), "{r}");
    assert_eq!(e.call(&["--yes"], "debug_echo", WRITE).0, 0);
}

/// Runs the binary on a pseudo-terminal, waiting for each text and then
/// typing the keys that follow it; prints everything the terminal showed.
const PTY_DRIVER: &str = r#"
import fcntl, json, os, pty, select, struct, sys, termios, time
plan = json.loads(os.environ["PTY_PLAN"])
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    os.execv(sys.argv[1], sys.argv[1:])
buf = b""
deadline = time.time() + 30
def pump(wait):
    global buf
    ready, _, _ = select.select([fd], [], [], wait)
    if not ready:
        return True
    try:
        data = os.read(fd, 65536)
    except OSError:
        return False
    buf += data
    return bool(data)
alive = True
for wait_for, keys in plan:
    while alive and wait_for.encode() not in buf:
        if time.time() > deadline:
            sys.stdout.buffer.write(buf)
            sys.stderr.write("timed out waiting for %r\n" % wait_for)
            os.kill(pid, 9)
            sys.exit(99)
        alive = pump(0.1)
    time.sleep(0.2)
    os.write(fd, keys.encode())
while alive and time.time() < deadline:
    alive = pump(0.1)
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(buf)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

const DOWN: &str = "\x1b[B";

/// (exit code, the JSON result line, everything the terminal showed).
#[allow(clippy::unwrap_used, clippy::expect_used)]
fn on_pty(e: &Env, plan: &[(&str, String)]) -> (i32, Value, String) {
    let driver = e.home.path().join("pty_driver.py");
    std::fs::write(&driver, PTY_DRIVER).unwrap();
    let plan: Vec<(&str, &str)> = plan.iter().map(|(w, k)| (*w, k.as_str())).collect();
    let bin = crate::wield_cmd::wield_bin();
    let out = e
        .running("python3")
        .env("PTY_PLAN", serde_json::to_string(&plan).unwrap())
        .env("TERM", "xterm-256color")
        .arg(&driver)
        .arg(&bin)
        .args(["call", "--json", "debug_echo", WRITE])
        .output()
        .expect("python3 must be installed to drive the terminal dialog");
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_ne!(
        out.status.code(),
        Some(99),
        "{screen}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = screen
        .lines()
        .rev()
        .find_map(|l| l.find("{\"success\"").map(|i| &l[i..]))
        .and_then(|l| serde_json::from_str(l.trim()).ok())
        .unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), result, screen)
}

fn choose(e: &Env, downs: usize) -> (i32, Value, String) {
    on_pty(e, &[("Allow this call?", format!("{}\r", DOWN.repeat(downs)))])
}

fn assert_path_exists(p: &Path) {
    assert!(p.exists(), "{} missing", p.display());
}

#[test]
fn terminal_dialog_allows_once_for_the_session_project_or_everywhere() {
    let e = Env::with_config(STRICT);
    let (code, r, screen) = choose(&e, 0);
    assert_eq!(code, 0, "{screen}");
    assert_eq!(r["success"], true, "{screen}");
    for shown in [
        "approval needed: `debug_echo`",
        "debug_echo: path=\"src/a.rs\" content=\"new line\"",
        "+++ b/src/a.rs",
        "+new line",
        "Allow for this session  (debug_echo:src/*)",
        "Deny",
    ] {
        assert!(screen.contains(shown), "missing {shown:?} in\n{screen}");
    }
    assert_eq!(choose(&e, 1).1["success"], true);
    assert_eq!(e.project_approvals(), "");
    assert_eq!(choose(&e, 2).1["success"], true);
    assert!(e.project_approvals().contains("\"debug_echo:src/*\""));
    let e = Env::with_config(STRICT);
    assert_eq!(choose(&e, 3).1["success"], true);
    assert_path_exists(&e.config_home().join("wield/approvals.toml"));
    assert!(e.global_approvals().contains("\"debug_echo:src/*\""));
}

/// `wield call` is one call a person typed: no model to send a message
/// to and no batch to cancel, so neither is offered; Esc and Ctrl-C deny.
/// (The interactive agent offers both: see `interactive::`.)
#[test]
fn terminal_dialog_under_call_denies_and_offers_nothing_for_a_model() {
    let e = Env::with_config(STRICT);
    let (code, r, screen) = choose(&e, 4);
    assert_eq!(code, 1, "{screen}");
    assert_eq!(
        error_of(&r),
        "denied: the user refused the call to `debug_echo`",
        "{screen}"
    );
    for absent in ["Deny with a message to the model", "Cancel the whole batch"] {
        assert!(
            !screen.contains(absent),
            "{absent:?} offered under wield call:\n{screen}"
        );
    }
    // Past the last choice, the list wraps to the first: allow once.
    assert_eq!(choose(&e, 5).1["success"], true);
    for key in ["\x1b", "\x03"] {
        let (_, r, screen) = on_pty(&e, &[("Allow this call?", key.into())]);
        assert_eq!(
            error_of(&r),
            "denied: the user refused the call to `debug_echo`",
            "{screen}"
        );
    }
    assert_eq!(e.project_approvals(), "");
}

#[test]
fn the_approver_sees_what_a_cut_preview_hides() {
    let e = Env::with_config("[approval]\nconfirm = [\"bash\"]\n");
    let command = format!("echo hello{}; echo HIDDEN\u{1b}[2J > hidden.txt", " ".repeat(120));
    let input = serde_json::json!({ "command": command }).to_string();
    let out = e
        .wield()
        .env("WIELD_TEST_APPROVER", "deny")
        .args(["call", "--json", "bash", &input])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Arguments in full:\ncommand: echo hello"), "{stderr}");
    assert!(stderr.contains("; echo HIDDEN\\u{1b}[2J > hidden.txt"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "a terminal escape reached the screen: {stderr}"
    );
}

/// A call a `confirm` rule asks for every time: remembering its pattern
/// would not spare the next ask, so only "allow once" is offered (and a
/// script's "project" allows once, remembering nothing).
#[test]
fn a_call_asked_every_time_is_allowed_once_only() {
    let e = Env::with_config("[approval]\nauto_approve = []\nconfirm = [\"debug_echo\"]\n");
    let (code, r, screen) = choose(&e, 0);
    assert_eq!((code, &r["success"]), (0, &Value::Bool(true)), "{screen}");
    assert!(
        screen.contains("allowed once only: the rule `debug_echo` in approval.confirm asks for it every time"),
        "{screen}"
    );
    assert!(!screen.contains("Allow for this session"), "{screen}");
    let (code, r, screen) = choose(&e, 1);
    assert_eq!(code, 1, "{screen}");
    assert_eq!(
        error_of(&r),
        "denied: the user refused the call to `debug_echo`",
        "{screen}"
    );
    let (code, _, stderr) = scripted(&e, "project");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("| debug_echo:src/* | asks every time: the rule `debug_echo` in approval.confirm"),
        "{stderr}"
    );
    assert_eq!(e.project_approvals(), "");
    let (code, r, _) = e.call(&[], "debug_echo", WRITE);
    assert_eq!(code, 1);
    assert!(
        error_of(&r).contains("approval.confirm") && !error_of(&r).contains("approvals add"),
        "{r}"
    );
}

/// A refusal names the one rule that asks every time, with the key that
/// changes it, and not every rule that could have.
#[test]
fn a_refusal_names_the_one_rule_that_asks_every_time() {
    let e = Env::with_config("[approval]\nconfirm = [\"bash:git push*\"]\n");
    let (code, r, _) = e.call(&[], "write", r#"{"path":".envrc","content":"export A=1"}"#);
    assert_eq!(code, 1, "{r}");
    let why = error_of(&r);
    assert!(
        why.contains("it writes `.envrc`, which matches") && why.contains("in approval.ask_paths"),
        "{why}"
    );
    assert!(
        !why.contains("approval.confirm") && !why.contains("plain command"),
        "{why}"
    );

    let (code, r, _) = e.call(&[], "bash", r#"{"command":"git push origin main"}"#);
    assert_eq!(code, 1, "{r}");
    let why = error_of(&r);
    assert!(
        why.contains("the rule `bash:git push*` in approval.confirm asks for it every time"),
        "{why}"
    );
    assert!(!why.contains("ask_paths"), "{why}");

    let (code, r, _) = e.call(
        &["--set", "approval.auto_approve=[]", "--set", "sandbox.enabled=false"],
        "bash",
        r#"{"command":"ls $(echo src)"}"#,
    );
    assert_eq!(code, 1, "{r}");
    let why = error_of(&r);
    assert!(why.contains("it is not one plain command"), "{why}");
    assert!(!why.contains("approval.confirm") && !why.contains("ask_paths"), "{why}");
}
