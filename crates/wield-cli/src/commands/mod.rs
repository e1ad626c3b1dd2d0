//! One module per command; `main` dispatches and maps errors to exit codes.

mod approvals;
mod call;
mod chat;
mod chat_cycle;
mod complete;
mod completions;
mod config;
mod init;
mod man;
mod mcp;
mod patch;
mod providers;
mod providers_add;
mod providers_check;
mod run_agent;
mod run_interactive;
mod sandbox;
mod sessions;
mod tools;
mod tools_debug;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use tokio_util::sync::CancellationToken;

use crate::app::UsageError;
use crate::cli::{Cli, Command};

pub fn main() -> ExitCode {
    // The Landlock helper: handled before anything else (no argument
    // parser, no async runtime, no threads) because it restricts this
    // thread and then replaces the process with the command.
    if let Some(code) = sandbox::exec_helper() {
        return code;
    }
    wield_sandbox::process::sandbox::declare_helper();
    // Before anything holds a secret: commands wield runs must not read its
    // environment or memory through /proc.
    if !wield_sandbox::process::sandbox::make_non_dumpable() {
        eprintln!("warning: cannot make wield non-dumpable; commands running as its user may read its memory");
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout with status 0, errors with 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    // Before any thread starts (it sets TMPDIR); removed when main returns,
    // after the runtime and what it ran have stopped.
    let _session_temp = crate::session_temp::SessionTemp::enter();
    init_tracing();
    // `wield mcp serve` over stdio is one session: one thread runs it (with
    // the blocking pool for file work), so nothing hops between workers.
    let single = matches!(
        &cli.command,
        Command::Mcp(crate::cli::McpCommand::Serve { http: None, .. })
    );
    let mut builder = if single {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let loaded = Loaded::default();
    let mut exits = Vec::new();
    let outcome = runtime.block_on(async {
        let stop = stop_token();
        let run = LOADED.scope(loaded.clone(), run(cli));
        tokio::pin!(run);
        let outcome = tokio::select! {
            biased;
            outcome = &mut run => outcome,
            // `call` and `mcp serve` answer the signal themselves and return
            // at once; anything else (starting bridged servers, say) stops
            // here.
            () = stop.cancelled() => {
                loaded.hurry();
                match tokio::time::timeout(std::time::Duration::from_secs(2), &mut run).await {
                    Ok(outcome) => outcome,
                    Err(_) => Ok(ExitCode::from(130)),
                }
            }
        };
        // What the command's runtimes started ends with them: sessions
        // with `url` servers with an HTTP `DELETE`, local servers stopped.
        let ending = if stop.is_cancelled() {
            wield_runtime::Ending::Hurried
        } else {
            wield_runtime::Ending::Graceful
        };
        let runtimes = loaded.take();
        exits = runtimes.iter().filter_map(|rt| rt.mcp()).map(|m| m.exit()).collect();
        for rt in &runtimes {
            rt.shutdown(ending).await;
        }
        drop(runtimes);
        outcome
    });
    // A read of stdin that cannot be cancelled (a blocking one, when stdin
    // is not a pipe) must not keep wield alive after its command returned:
    // what the command started was stopped on its way out.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    // Bridged servers whose stop the runtime's end cut short.
    for exit in exits {
        exit.stop_stragglers(std::time::Duration::from_millis(500));
    }
    match outcome {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<crate::app::Interrupted>().is_some() => ExitCode::from(130),
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// SIGINT (Ctrl-C), SIGTERM or SIGHUP (its terminal closed): a command
/// stops what it does and returns, so everything it started (bridged MCP
/// servers with their process groups, commands) is stopped on the way out.
/// Resolves at once once one has come; never resolves if no handler can be
/// installed.
pub async fn stop_signal() {
    stop_token().cancelled().await;
}

/// Cancelled at the first stop signal. The handlers are installed by the
/// first call, which [`main`] makes before the command starts anything, so
/// a signal that comes while, say, bridged servers start is never taken by
/// its default action (which would end wield and leave them running).
fn stop_token() -> CancellationToken {
    use tokio::signal::unix::{SignalKind, signal};
    static STOP: std::sync::OnceLock<CancellationToken> = std::sync::OnceLock::new();
    STOP.get_or_init(|| {
        let token = CancellationToken::new();
        if let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            let stop = token.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = int.recv() => if SIGINT_KEPT.load(Ordering::SeqCst) { continue },
                        _ = term.recv() => {}
                        _ = hup.recv() => {}
                    }
                    break;
                }
                stop.cancel();
            });
        }
        token
    })
    .clone()
}

/// Set while a command answers Ctrl-C itself (the interactive agent: one
/// cancels the step, and the conversation goes on however long the person
/// then waits): SIGINT is no stop signal. SIGTERM and SIGHUP still are.
static SIGINT_KEPT: AtomicBool = AtomicBool::new(false);

/// The command answers Ctrl-C itself from now on (see [`SIGINT_KEPT`]).
pub fn keep_sigint() {
    SIGINT_KEPT.store(true, Ordering::SeqCst);
}

/// Stop now, as a stop signal would: what a command that keeps SIGINT does
/// when the person asks to quit while a step will not end.
pub fn stop_now() {
    stop_token().cancel();
}

tokio::task_local! {
    /// The runtimes the running command loaded, shut down by [`main`] once
    /// it returned: scoped to the command, not to the process.
    static LOADED: Loaded;
}

/// The runtimes a command loaded.
#[derive(Clone, Default)]
struct Loaded(std::sync::Arc<std::sync::Mutex<Vec<wield_runtime::Runtime>>>);

impl Loaded {
    fn take(&self) -> Vec<wield_runtime::Runtime> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A stop signal came: the bridged servers get no grace from now on.
    fn hurry(&self) {
        for rt in self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter() {
            if let Some(mcp) = rt.mcp() {
                mcp.exit().hurry();
            }
        }
    }
}

/// Has `rt` shut down ([`wield_runtime::Runtime::shutdown`]) once the
/// command returned, in a hurry if a stop signal has come by then.
pub fn shut_down_after(rt: &wield_runtime::Runtime) {
    let _ = LOADED.try_with(|l| {
        l.0.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(rt.clone());
    });
}

/// A session's error as a command reports it: what the person fixes in the
/// arguments or the configuration is a usage error (exit 2); a provider
/// that cannot be used (none configured, its key not set) is a failure
/// (exit 1).
pub fn session_error(e: wield_agent::SessionError) -> anyhow::Error {
    match e {
        wield_agent::SessionError::Invalid(message) => crate::app::usage(message),
        wield_agent::SessionError::Runtime(e) => crate::app::exit_error(e),
        e @ (wield_agent::SessionError::Provider(_) | wield_agent::SessionError::Save(_)) => e.into(),
    }
}

fn init_tracing() {
    // Warnings (a failed resolver, an unreachable source) go to stderr; set
    // WIELD_LOG=debug for more.
    let level = match std::env::var("WIELD_LOG").ok().as_deref() {
        Some("debug") => tracing::Level::DEBUG,
        Some("info") => tracing::Level::INFO,
        Some("error") => tracing::Level::ERROR,
        _ => tracing::Level::WARN,
    };
    let _ = tracing::subscriber::set_global_default(StderrSubscriber { level });
}

/// A minimal subscriber: one line per event on stderr, no extra crates.
struct StderrSubscriber {
    level: tracing::Level,
}

impl tracing::Subscriber for StderrSubscriber {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        // The MCP SDK logs its transport failures itself; wield reports them
        // once, in its own words, so the SDK's lines only show at debug level.
        if self.level < tracing::Level::DEBUG && metadata.target().starts_with("rmcp") {
            return false;
        }
        *metadata.level() <= self.level
    }
    fn new_span(&self, _span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _span: &tracing::span::Id, _values: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _span: &tracing::span::Id, _follows: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Msg(String);
        impl tracing::field::Visit for Msg {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut m = Msg(String::new());
        event.record(&mut m);
        eprintln!("wield: {}: {}", event.metadata().level().as_str().to_lowercase(), m.0);
    }
    fn enter(&self, _span: &tracing::span::Id) {}
    fn exit(&self, _span: &tracing::span::Id) {}
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Call(args) => call::run(&cli.global, args).await,
        Command::Tools(cmd) => tools::run(&cli.global, cmd).await,
        Command::Approvals(cmd) => approvals::run(&cli.global, cmd),
        Command::Mcp(cmd) => mcp::run(&cli.global, cmd).await,
        Command::Patch(cmd) => patch::run(&cli.global, cmd).await,
        Command::Sandbox(cmd) => sandbox::run(&cli.global, cmd).await,
        Command::Config(cmd) => config::run(&cli.global, cmd),
        Command::Complete(args) => complete::run(&cli.global, args).await,
        Command::Providers(cmd) => providers::run(&cli.global, cmd).await,
        Command::Run(args) => run_agent::run(&cli.global, args).await,
        Command::Sessions(cmd) => sessions::run(&cli.global, cmd),
        Command::Init(args) => init::run(&cli.global, &args),
        Command::Completions { shell } => completions::run(shell),
        Command::Man { out } => man::run(&out),
        Command::Chat(mut args) => match (args.command.take(), args.file.clone()) {
            (Some(cmd), _) => chat::run(cmd),
            (None, Some(file)) => chat_cycle::run(&cli.global, args, &file).await,
            (None, None) => Err(crate::app::usage(
                "name a document: `wield chat FILE` (or `wield chat new FILE` to start one)",
            )),
        },
    }
}
