use std::path::Path;
use std::time::Duration;

use serde_json::json;
use wield_core::{Config, Tool};
use wield_sandbox::process::{BackendChoice, Enabled, Inherit};

use super::*;

fn config(text: &str) -> Config {
    Config::from_table(toml::from_str(text).unwrap()).unwrap()
}

#[test]
fn bash_settings_parse_with_defaults() {
    let s = ShellSettings::from_config(&config("")).unwrap();
    assert_eq!(s, ShellSettings::default());
    assert_eq!(s.timeout, Duration::from_secs(30));
    let s = ShellSettings::from_config(&config(
        "[bash]\nshell = \"zsh\"\ntimeout = \"2m\"\nmax_output_bytes = 4096\n\
         [bash.env]\ninherit = \"all\"\nkeep = [\"GH_TOKEN\"]\nset = { A = \"1\", N = 2 }\n",
    ))
    .unwrap();
    assert_eq!(s.shell, ["zsh", "-c"]);
    assert_eq!(s.timeout, Duration::from_secs(120));
    assert_eq!(s.max_output_bytes, 4096);
    assert_eq!(s.env.inherit, Inherit::All);
    assert_eq!(s.env.keep, ["GH_TOKEN"]);
    assert_eq!(s.env.set.get("N").map(String::as_str), Some("2"));
}

#[test]
fn bad_bash_settings_say_what_is_expected() {
    for (text, wanted) in [
        ("[bash]\ntimeout = \"soon\"", "bash.timeout must be a duration"),
        ("[bash.env]\ninherit = \"most\"", "\"core\", \"all\" or \"none\""),
        ("[bash]\nshell = 3", "bash.shell must be a program"),
        ("[bash]\nrewrite = \"{{ command\"", "bash.rewrite: invalid template"),
    ] {
        let err = ShellSettings::from_config(&config(text)).unwrap_err().to_string();
        assert!(err.contains(wanted), "{text}: {err}");
    }
}

#[test]
fn timeouts_default_and_cap() {
    let s = ShellSettings::default();
    assert_eq!(s.timeout_for(None), Duration::from_secs(30));
    assert_eq!(s.timeout_for(Some(2.5)), Duration::from_millis(2500));
    assert_eq!(s.timeout_for(Some(1e9)), s.max_timeout);
    assert_eq!(s.timeout_for(Some(1e300)), s.max_timeout);
    assert_eq!(s.timeout_for(Some(f64::MAX)), s.max_timeout);
    assert_eq!(s.timeout_for(Some(-1.0)), Duration::from_secs(30));
}

#[test]
fn sandbox_settings_from_config() {
    let ws = Path::new("/srv/ws");
    let s = sandbox_settings(
        &config(
            "[sandbox]\nenabled = true\nbackend = \"landlock\"\nnetwork = true\nwrite = [\"build\"]\n\
             read = [\"/opt/data\"]\nprotected = [\"secrets\"]",
        ),
        ws,
    )
    .unwrap();
    assert_eq!(s.enabled, Enabled::Yes);
    assert_eq!(s.backend, BackendChoice::Landlock);
    assert!(s.network);
    assert!(s.write.contains(&ws.join("build")) && s.write.contains(&ws.to_path_buf()));
    assert_eq!(s.read, Some(vec![ws.to_path_buf(), "/opt/data".into()]));
    for p in [".wield", ".git", "secrets"] {
        assert!(
            s.protected.contains(&ws.join(p)),
            "{p} not protected: {:?}",
            s.protected
        );
    }
    let err = sandbox_settings(&config("[sandbox]\nenabled = \"maybe\""), ws).unwrap_err();
    assert!(err.to_string().contains("true, false or \"auto\""), "{err}");
}

#[test]
fn previews_show_the_command_and_label() {
    let bash = BashTool::new();
    let input = json!({"command": "make test", "label": "running tests", "workdir": null});
    assert_eq!(bash.preview(&input, 80), "bash: $ make test # running tests");
    let input = json!({"command": "ls", "workdir": "src"});
    assert_eq!(bash.preview(&input, 80), "bash: (src) $ ls");
    assert_eq!(
        bash.preview(&json!({"command": "x".repeat(100)}), 20).chars().count(),
        20
    );
}

#[test]
fn rewrite_renders_the_command() {
    let out = settings::rewrite(
        "source .venv/bin/activate && {{ command }}",
        "pytest -q",
        Path::new("/w"),
        Path::new("/w"),
    )
    .unwrap();
    assert_eq!(out, "source .venv/bin/activate && pytest -q");
}

#[tokio::test]
async fn an_empty_command_is_refused() {
    let ctx = wield_core::Context::detached(std::env::temp_dir());
    let r = BashTool::new().execute(json!({"command": "  "}), &ctx).await;
    assert!(!r.success);
    assert!(r.error.unwrap().contains("`command` is empty"));
}

/// The grandchildren are found by name (`exec -a`): under bubblewrap a
/// command has its own PID namespace, so pids it prints are not the host's.
#[tokio::test]
async fn stop_all_kills_every_background_tree_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = wield_core::Context::detached(dir.path());
    let names: Vec<String> = (1..=2)
        .map(|n| format!("stop-all-{}-{n}", std::process::id()))
        .collect();
    for name in &names {
        let command = format!("(exec -a {name} sleep 300) & wait");
        let r = ProcessStartTool::new()
            .execute(json!({ "command": command }), &ctx)
            .await;
        assert!(r.success, "{r:?}");
    }
    // Live (not zombie) processes whose command line starts with `name`.
    let running = |name: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.starts_with(name.as_bytes()))
                && std::fs::read_to_string(e.path().join("stat"))
                    .is_ok_and(|s| s.split(") ").nth(1).is_some_and(|rest| !rest.starts_with('Z')))
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !names.iter().all(|n| running(n)) {
        assert!(std::time::Instant::now() < deadline, "the commands never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The session still holds its processes (it is not dropped): stop_all
    // alone must end them.
    let processes = ctx.session.get_extension::<Processes>().unwrap();
    processes.stop_all().await;
    for name in &names {
        assert!(!running(name), "the grandchild {name} outlived stop_all");
    }
    let listed = ProcessListTool::new().execute(json!({}), &ctx).await;
    assert!(
        !listed.output.contains("p1") && !listed.output.contains("p2"),
        "{}",
        listed.output
    );
}

#[tokio::test]
async fn git_settings_a_command_makes_are_notices_in_the_event_stream() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    let ctx = wield_core::Context::detached(dir.path());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    ctx.events.subscribe(Arc::new(move |e: &wield_core::Event| {
        if let wield_core::Event::Notice { kind, message, .. } = e {
            sink.lock().unwrap().push(format!("{kind}: {message}"));
        }
    }));
    let command = "mkdir -p src/r/.git && printf '[core]\\n\\tfsmonitor = x\\n' > src/r/.git/config";
    let r = BashTool::new().execute(json!({ "command": command }), &ctx).await;
    assert!(r.success, "{r:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["git_config: src/r/.git: core.fsmonitor = \"x\" (git runs this)"]);
    assert_eq!(r.metadata["git_changes"][0], seen[0].trim_start_matches("git_config: "));
}

#[tokio::test]
async fn parallel_starts_cannot_pass_the_background_cap_together() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = Arc::new(wield_core::Context::detached(dir.path()));
    let starts = (0..24).map(|_| {
        let ctx = Arc::clone(&ctx);
        tokio::spawn(async move {
            ProcessStartTool::new()
                .execute(json!({ "command": "sleep 60" }), &ctx)
                .await
        })
    });
    let mut started = 0;
    for s in starts {
        let r = s.await.unwrap();
        if r.success {
            started += 1;
        } else {
            assert!(r.error.unwrap().contains("process.max_background = 16"));
        }
    }
    assert_eq!(started, settings::DEFAULT_MAX_BACKGROUND);
    ctx.session.get_extension::<Processes>().unwrap().stop_all().await;
}
