//! The command runner against real processes: exit codes, capture limits,
//! timeouts and cancellation that leave no process behind, environments,
//! background processes.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wield_sandbox::process::{CaptureLimit, EnvPolicy, Exit, Inherit, MARKER_VAR, OutputStream, Runner, StopSignal};

fn bash(script: &str) -> Runner {
    Runner::new(["bash", "-c", script])
}

fn pids(text: &[u8]) -> Vec<i32> {
    String::from_utf8_lossy(text)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// A pid is gone when /proc no longer lists it: not running, and not a
/// zombie waiting to be reaped either.
fn assert_gone(pids: &[i32]) {
    assert!(!pids.is_empty(), "the test needs pids to check");
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        assert!(stat.is_err(), "process {pid} survived: {stat:?}");
    }
}

#[allow(clippy::unwrap_used)]
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn exit_code_stdout_and_stderr() {
    let out = bash("echo out; echo err >&2; exit 3").run().await.unwrap();
    assert_eq!(out.exit, Exit::Code(3));
    assert_eq!(out.stdout.head, b"out\n");
    assert_eq!(out.stderr.head, b"err\n");
    assert!(!out.timed_out && !out.cancelled);
    assert_eq!(out.leftovers_killed, 0);
}

#[tokio::test]
async fn death_by_signal_is_reported() {
    let out = bash("kill -KILL $$").run().await.unwrap();
    assert_eq!(out.exit, Exit::Signal(9));
    assert_eq!(out.exit.code(), 137);
    assert_eq!(out.exit.to_string(), "killed by signal 9 (SIGKILL)");
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let err = Runner::new(["/nonexistent/prog"]).run().await.unwrap_err();
    assert!(err.to_string().contains("cannot start `/nonexistent/prog`"), "{err}");
    let err = Runner::new(Vec::<OsString>::new()).run().await.unwrap_err();
    assert!(err.to_string().contains("empty command"), "{err}");
}

#[tokio::test]
async fn stdin_is_dev_null_and_cwd_applies() {
    let dir = tempfile::tempdir().unwrap();
    let out = bash("cat; pwd").cwd(dir.path()).run().await.unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout.head),
        format!("{}\n", real.display())
    );
}

#[tokio::test]
async fn timeout_kills_background_jobs_of_the_group() {
    let started = Instant::now();
    let out = bash("sleep 100 & echo $!; sleep 100 & echo $!; wait")
        .timeout(Some(Duration::from_millis(300)))
        .run()
        .await
        .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit, Exit::Signal(15));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    let children = pids(&out.stdout.head);
    assert_eq!(children.len(), 2, "{:?}", out.stdout);
    assert_gone(&children);
}

#[tokio::test]
async fn timeout_kills_double_forked_setsid_processes() {
    // `setsid -f` forks, leaves the group and the session; the shell in
    // between exits, so the sleeper is orphaned.
    let out = bash("setsid -f sh -c 'echo $$; exec sleep 100'; sleep 0.2; sleep 100")
        .timeout(Some(Duration::from_millis(500)))
        .run()
        .await
        .unwrap();
    assert!(out.timed_out);
    let escaped = pids(&out.stdout.head);
    assert_eq!(escaped.len(), 1, "{:?}", out.stdout);
    assert_gone(&escaped);
}

#[tokio::test]
async fn leftovers_are_killed_when_the_leader_exits() {
    // The orphan keeps the stdout pipe open: without killing it the run
    // would wait for it.
    let started = Instant::now();
    let out = bash("(setsid sh -c 'echo $$; exec sleep 100' &); sleep 0.2; echo done")
        .timeout(Some(Duration::from_secs(20)))
        .run()
        .await
        .unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert!(!out.timed_out);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(out.leftovers_killed, 1);
    let text = String::from_utf8_lossy(&out.stdout.head).into_owned();
    assert!(text.ends_with("done\n"), "{text}");
    assert_gone(&pids(&out.stdout.head));
}

#[tokio::test]
async fn a_process_ignoring_sigterm_is_killed_after_the_grace_period() {
    let started = Instant::now();
    let out = bash("trap '' TERM; echo ready; while :; do sleep 0.05; done")
        .timeout(Some(Duration::from_millis(200)))
        .grace(Duration::from_millis(300))
        .run()
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(out.timed_out);
    assert_eq!(out.exit, Exit::Signal(9));
    assert!(took >= Duration::from_millis(500), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn cancellation_kills_the_tree() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let out = bash("sleep 100 & echo $!; wait").cancel(cancel).run().await.unwrap();
    assert!(out.cancelled && !out.timed_out);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_gone(&pids(&out.stdout.head));
}

#[tokio::test]
async fn huge_output_is_counted_with_bounded_memory() {
    const TOTAL: u64 = 200_000_000;
    let before = peak_rss_kib();
    let out = bash(&format!("head -c {TOTAL} /dev/zero; echo tail-marker >&2"))
        .capture(CaptureLimit::head(1 << 20))
        .run()
        .await
        .unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(out.stdout.total, TOTAL);
    assert_eq!(out.stdout.head.len(), 1 << 20);
    assert_eq!(out.stdout.omitted(), TOTAL - (1 << 20));
    assert_eq!(out.stderr.head, b"tail-marker\n");
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(grown < 32 * 1024, "peak RSS grew by {grown} KiB");
}

#[tokio::test]
async fn huge_output_with_a_tail_and_a_listener_stays_bounded() {
    const TOTAL: u64 = 200_000_000;
    let seen = Arc::new(Mutex::new(0u64));
    let counter = Arc::clone(&seen);
    let before = peak_rss_kib();
    let out = bash(&format!("head -c {} /dev/zero; echo END", TOTAL - 4))
        .capture(CaptureLimit::head_and_tail(1 << 20, 1 << 16))
        .on_output(Arc::new(move |_, chunk: &[u8]| {
            *counter.lock().unwrap() += chunk.len() as u64
        }))
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout.total, TOTAL);
    assert_eq!(*seen.lock().unwrap(), TOTAL);
    assert_eq!(out.stdout.tail.len(), 1 << 16);
    assert!(out.stdout.tail.ends_with(b"END\n"));
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(grown < 32 * 1024, "peak RSS grew by {grown} KiB");
}

#[tokio::test]
async fn output_streams_while_the_command_runs() {
    let events: Arc<Mutex<Vec<(OutputStream, String, Instant)>>> = Arc::default();
    let sink = Arc::clone(&events);
    let started = Instant::now();
    let out = bash("echo first; sleep 0.4; echo second >&2")
        .on_output(Arc::new(move |stream, chunk: &[u8]| {
            sink.lock()
                .unwrap()
                .push((stream, String::from_utf8_lossy(chunk).into_owned(), Instant::now()));
        }))
        .run()
        .await
        .unwrap();
    let events = events.lock().unwrap();
    assert_eq!(events[0].0, OutputStream::Stdout);
    assert_eq!(events[0].1, "first\n");
    assert!(
        events[0].2 - started < Duration::from_millis(350),
        "first chunk came late"
    );
    assert_eq!(events.last().unwrap().0, OutputStream::Stderr);
    assert_eq!(out.stderr.head, b"second\n");
}

#[tokio::test]
async fn environment_is_scrubbed_and_tagged() {
    let vars: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap()),
        ("FOO_TOKEN".into(), "secret".into()),
        ("OPENAI_API_KEY".into(), "secret".into()),
        ("UNRELATED".into(), "x".into()),
        ("KEPT_PASSWORD".into(), "visible".into()),
    ];
    let env = EnvPolicy::new(Inherit::Core)
        .keep("KEPT_PASSWORD")
        .set("EXTRA", "1")
        .apply(vars);
    let out = Runner::new(["env"]).env(env).run().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout.head).into_owned();
    assert!(text.contains("PATH="), "{text}");
    assert!(text.contains("KEPT_PASSWORD=visible"), "{text}");
    assert!(text.contains("EXTRA=1"), "{text}");
    assert!(text.contains(&format!("{MARKER_VAR}=")), "{text}");
    for hidden in ["FOO_TOKEN", "OPENAI_API_KEY", "UNRELATED"] {
        assert!(!text.contains(hidden), "{hidden} leaked: {text}");
    }
}

#[tokio::test]
async fn default_environment_holds_only_core_names() {
    let out = Runner::new(["env"]).run().await.unwrap();
    for line in String::from_utf8_lossy(&out.stdout.head).lines() {
        let name = line.split('=').next().unwrap();
        assert!(
            wield_sandbox::process::CORE_VARS.contains(&name) || name == MARKER_VAR,
            "unexpected variable {name}"
        );
    }
}

#[tokio::test]
async fn background_process_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bg.log");
    let mut bg = bash("echo started; sleep 100 & echo $!; wait")
        .spawn_background(&log)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut text = String::new();
    while Instant::now() < deadline && pids(text.as_bytes()).is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    assert!(text.starts_with("started\n"), "{text}");
    assert_eq!(bg.try_exit(), None);
    let exit = bg.stop(StopSignal::Term, Duration::from_secs(1)).await.unwrap();
    assert_eq!(exit, Exit::Signal(15));
    assert_eq!(bg.try_exit(), Some(exit));
    assert_gone(&pids(text.as_bytes()));
    assert_gone(&[i32::try_from(bg.pid()).unwrap()]);
}

#[tokio::test]
async fn dropping_a_background_process_kills_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bg.log");
    let bg = bash("setsid -f sh -c 'echo $$; exec sleep 100'; sleep 100")
        .spawn_background(&log)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut text = String::new();
    while Instant::now() < deadline && pids(text.as_bytes()).is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    let leader = i32::try_from(bg.pid()).unwrap();
    drop(bg);
    // The leader is reaped by the runtime's orphan queue shortly after.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_gone(&pids(text.as_bytes()));
    let _ = leader;
}

#[tokio::test]
async fn a_background_process_that_exits_reports_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut bg = bash("echo bye; exit 4")
        .spawn_background(&dir.path().join("l"))
        .unwrap();
    assert_eq!(bg.wait().await.unwrap(), Exit::Code(4));
    assert_eq!(std::fs::read_to_string(bg.log()).unwrap(), "bye\n");
}

/// Whether `pid` is running (neither gone nor a zombie).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

/// A command whose middle process is in its own session and dies with its
/// parent (as under bubblewrap: `--new-session`, `--die-with-parent`),
/// abandoned the moment it starts being terminated (as a cancelled call's
/// run is): killing the leader kills the middle one while the tree is being
/// walked, which hands the grandchild to wield mid-walk. It must still die.
#[tokio::test]
async fn a_tree_collapsing_while_it_is_killed_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..200 {
        let file = dir.path().join(format!("{round}.pid"));
        let script = format!(
            "setsid setpriv --pdeathsig KILL bash -c 'sleep 300 & echo $! > {}; wait' & wait",
            file.display()
        );
        let cancel = CancellationToken::new();
        let mut run = Box::pin(bash(&script).cancel(cancel.clone()).run());
        let deadline = Instant::now() + Duration::from_secs(10);
        let grandchild = loop {
            tokio::select! {
                out = &mut run => panic!("the command ended by itself: {out:?}"),
                () = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
            if let Some(pid) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                break pid;
            }
            assert!(Instant::now() < deadline, "the command never started");
        };
        cancel.cancel();
        // One poll: the tree gets SIGTERM; then the run is dropped.
        let _ = tokio::time::timeout(Duration::ZERO, &mut run).await;
        drop(run);
        let deadline = Instant::now() + Duration::from_secs(2);
        while running(grandchild) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            !running(grandchild),
            "round {round}: the grandchild {grandchild} survived: {:?}",
            std::fs::read_to_string(format!("/proc/{grandchild}/stat")),
        );
    }
}
