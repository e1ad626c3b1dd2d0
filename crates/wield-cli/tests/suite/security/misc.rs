//! Smaller items: rewrite templates, environment scrubbing, the background process cap, listings, denial messages.

use serde_json::json;

use super::support::{Mcp, Ws, call_json, output, require_backends};

/// `bash.rewrite` used to insert `{{ workdir }}` as it is: a directory a
/// model named `a;touch PWNED;b` ran `touch PWNED`. Every variable but
/// `command` is now one shell word.
#[test]
fn rewrite_quotes_the_workdir_and_workspace() {
    let ws = Ws::new();
    let evil = "a;touch PWNED;b $(touch PWNED2)";
    std::fs::create_dir_all(ws.ws.join(evil)).unwrap();
    let (code, v) = ws.call(
        &[
            "--set",
            "sandbox.enabled=false",
            "-y",
            "--set",
            "bash.rewrite=\"cd {{ workdir }} && echo in-$(basename \\\"$PWD\\\") && cd {{ workspace }} && {{ command }}\"",
        ],
        "bash",
        &json!({"command": "echo done", "workdir": evil}),
    );
    assert_eq!(code, 0, "{v}");
    let out = output(&v);
    assert!(out.contains(&format!("in-{evil}")), "the cd went wrong: {out}");
    assert!(out.contains("done"), "{out}");
    for name in ["PWNED", "PWNED2"] {
        assert!(!ws.ws.join(evil).join(name).exists(), "{name} was created: {v}");
        assert!(!ws.ws.join(name).exists(), "{name} was created: {v}");
    }
}

/// With `bash.env.inherit = "all"`, credentials that do not say KEY,
/// SECRET, TOKEN or PASSWORD in their names used to reach commands.
#[test]
fn inherit_all_drops_credentials_by_name_and_by_value() {
    let ws = Ws::new();
    let secrets = [
        ("DATABASE_URL", "postgres://app:hunter2-db@db.internal:5432/app"),
        ("MYSQL_PWD", "hunter2-mysql"),
        (
            "SENTRY_DSN",
            "https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/42",
        ),
        (
            "SLACK_WEBHOOK_URL",
            "https://hooks.slack.com/services/T000/B000/hunter2slack",
        ),
        ("https_proxy", "http://proxyuser:hunter2-proxy@proxy:3128"),
        ("CI_JOB_JWT", "hunter2-jwt-name"),
        ("GH_PAT", "hunter2-gh-pat"),
        ("NPM_CONFIG__AUTH", "hunter2-npm"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-hunter2/agent.1"),
        ("APP_SESSION", "hunter2-session"),
        ("SESSION_COOKIE", "hunter2-cookie"),
        ("BUILD_NOTE", "ghp_hunter2hunter2hunter2hunter2hunt"),
        ("DEPLOY_ARGS", "--key github_pat_11AAAAhunter2hunter2hunter2"),
        ("CHAT", "xoxb-1111-2222-hunter2slackbot"),
        ("LLM", "sk-proj-hunter2hunter2hunter2"),
        ("AWS_ID", "AKIAHUNTER2EXAMPLE00"),
        (
            "ID_FOR_CI",
            "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJodW50ZXIyIn0.aHVudGVyMnNpZ25hdHVyZQ",
        ),
    ];
    let mut cmd = ws.wield();
    for (k, v) in secrets {
        cmd.env(k, v);
    }
    cmd.env("PLAIN_SETTING", "visible-value").env("GIT_AUTHOR_NAME", "Ada");
    cmd.args([
        "--set",
        "sandbox.enabled=false",
        "-y",
        "--set",
        "bash.env.inherit=\"all\"",
        "call",
        "bash",
        &json!({"command": "env"}).to_string(),
        "--json",
    ]);
    let (code, v) = call_json(cmd);
    assert_eq!(code, 0, "{v}");
    let out = output(&v);
    assert!(out.contains("PLAIN_SETTING=visible-value"), "{out}");
    assert!(out.contains("GIT_AUTHOR_NAME=Ada"), "{out}");
    for (k, val) in secrets {
        assert!(!out.contains(val), "{k} reached the command: {out}");
    }
    assert!(!out.contains("hunter2"), "{out}");
}

/// `process_start` had no cap (1,000 processes started in one session).
/// Now at most `process.max_background` (16) run at once; the refusal says
/// how to free a place, and freeing one lets the next start.
#[test]
fn background_processes_are_capped() {
    let ws = Ws::new();
    let mut mcp = Mcp::start(&ws, &["-y", "--set", "sandbox.enabled=false"]);
    let start = |mcp: &mut Mcp| {
        mcp.call(
            "process_start",
            json!({"command": "sleep 60", "workdir": null, "label": null}),
        )
    };
    for i in 0..16 {
        let (err, text) = start(&mut mcp);
        assert!(!err, "start {i}: {text}");
    }
    let (err, text) = start(&mut mcp);
    assert!(err, "the 17th process must be refused: {text}");
    assert!(
        text.contains("process.max_background = 16") && text.contains("process_kill"),
        "{text}"
    );
    let (err, text) = mcp.call("process_kill", json!({"id": "p3"}));
    assert!(!err, "{text}");
    let (err, text) = start(&mut mcp);
    assert!(!err, "a freed place must be usable: {text}");
    assert_eq!(mcp.finish(), 0);
}

/// A file name holding a newline printed as two lines of `ls` or `glob`,
/// the second passing for a file that does not exist (or hiding one).
#[test]
fn names_with_newlines_cannot_spoof_listings() {
    let ws = Ws::new();
    let evil = "a.txt\n[file] secret-plan.txt (1B)\nz";
    std::fs::write(ws.ws.join(evil), "x").unwrap();
    std::fs::write(ws.ws.join("tab\there\x1b[31m"), "x").unwrap();
    for (tool, args) in [
        ("ls", json!({"path": "."})),
        ("glob", json!({"pattern": "*"})),
        ("grep", json!({"pattern": "x", "output_mode": "files"})),
    ] {
        let (code, v) = ws.call(&[], tool, &args);
        assert_eq!(code, 0, "{tool}: {v}");
        let out = output(&v);
        assert!(
            !out.lines().any(|l| l.starts_with("[file] secret-plan.txt")
                || l == "z"
                || l.contains("secret-plan.txt (1B)") && !l.contains("\\n")),
            "{tool}: a name printed as lines of its own: {out}"
        );
        assert!(
            out.contains("\\n[file] secret-plan.txt (1B)\\nz"),
            "{tool}: the name is not shown escaped: {out}"
        );
        assert!(
            !out.contains('\x1b') && !out.contains('\t'),
            "{tool}: control characters printed raw: {out:?}"
        );
    }
}

/// A read the sandbox refused (a file outside `sandbox.read`) used to be
/// reported as "write denied by sandbox".
#[test]
fn a_refused_read_is_reported_as_a_read() {
    let ws = Ws::new();
    require_backends(&ws);
    std::fs::write(ws.outside.join("notes.txt"), "private\n").unwrap();
    let target = ws.outside.join("notes.txt");
    for backend in ["landlock", "bwrap"] {
        let (_, v) = ws.call(
            &[
                "--set",
                "sandbox.enabled=true",
                "--set",
                &format!("sandbox.backend=\"{backend}\""),
                "--set",
                "sandbox.read=[]",
            ],
            "bash",
            &json!({"command": format!("cat {}", target.display())}),
        );
        let out = output(&v);
        assert!(!out.contains("private"), "{backend}: the read was not refused: {out}");
        assert!(
            !out.contains("write denied"),
            "{backend}: a refused read reported as a write: {out}"
        );
        let want = format!("read denied by sandbox: {} is outside the read roots", target.display());
        assert!(out.contains(&want), "{backend}: {out}");
    }
}
