//! `wield chat FILE`: one press of the key — the document's three-phase
//! cycle (see [`wield_chat::cycle`]), with its frontmatter's settings.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use tokio_util::sync::CancellationToken;
use wield_chat::cycle::{CycleError, Progress, Stop};
use wield_chat::{ChatDocument, CycleFlags, DocumentError};

use super::providers::{connect, providers};
use crate::app::{Runtime, Servers, exit_error, usage};
use crate::cli::{ChatArgs, GlobalArgs};

pub async fn run(global: &GlobalArgs, args: ChatArgs, file: &Path) -> anyhow::Result<ExitCode> {
    let doc = ChatDocument::open(file).map_err(document_error)?;
    let rt = Runtime::load_adjusted(global, None, Servers::All, wield_agent::tools::agent_tools(), |o| {
        doc.adjust(o).map_err(document_error)
    })
    .await?;
    let agent = wield_agent::AgentSettings::from_config(rt.config(), global.agent.as_deref())
        .map_err(|e| usage(e.to_string()))?;
    let settings = doc
        .provider(
            &providers(&rt)?,
            args.provider.as_deref(),
            args.model.as_deref(),
            &agent,
        )
        .map_err(document_error)?;
    let provider = connect(&settings)?;
    let flags = CycleFlags {
        no_autopilot: args.no_autopilot,
        once: args.once,
        session_id: super::run_interactive::new_session_id(),
        ledger: None,
    };
    let cycle = doc
        .cycle(&rt.inner, provider, &settings, &agent, flags)
        .map_err(document_error)?;
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        super::stop_signal().await;
        on_signal.cancel();
    });
    let outcome = cycle.run(&cancel, report).await;
    let name = file.display();
    let mut err = std::io::stderr().lock();
    let code = match outcome {
        Ok(stop) => match stop {
            Stop::Answered => {
                writeln!(err, "{name}: answered; write your next message after the last @You:")?;
                0
            }
            Stop::Waiting(calls) => {
                writeln!(err, "{name}: waiting for you:")?;
                for c in &calls {
                    let line = c.result_lines.map_or(c.line, |l| l.start);
                    writeln!(err, "  line {line}: `{}` ({}) is pending", c.id, c.name)?;
                }
                writeln!(
                    err,
                    "approve (`wield chat approve {name} ID` or write (approved)), reject (`wield chat reject {name} ID`), \
                     or type the result in its block; then run `wield chat {name}` again"
                )?;
                0
            }
            Stop::Edited(calls) => {
                for c in &calls {
                    let line = c.result_lines.map_or(c.line, |l| l.start);
                    writeln!(
                        err,
                        "{name}: line {line}: `{}` is (approved) but its block holds text you wrote: it was not run, to \
                         keep your text. Remove `(approved)` from its header to send your text as the result, or empty \
                         the block to run the call",
                        c.id
                    )?;
                }
                1
            }
            Stop::Resolved => {
                writeln!(
                    err,
                    "{name}: results written; run `wield chat {name}` again to send them"
                )?;
                0
            }
            Stop::Review => {
                writeln!(
                    err,
                    "{name}: the model asks for tools; run `wield chat {name}` again to review them"
                )?;
                0
            }
            Stop::NothingToSend => {
                writeln!(err, "{name}: nothing to send: write your message after the last @You:")?;
                0
            }
            Stop::MaxSteps(n) => {
                writeln!(
                    err,
                    "{name}: stopped after {n} replies with tool calls (max_steps); run `wield chat {name}` to go on"
                )?;
                3
            }
            Stop::Once(phase) => {
                writeln!(err, "{name}: {phase} done (--once)")?;
                0
            }
            Stop::Done(summary) => {
                writeln!(err, "{name}: the model reports it is done: {summary}")?;
                0
            }
            Stop::Diverted(aside) => {
                writeln!(
                    err,
                    "{name}: the document changed where the reply was being written, so the reply was not finished in \
                     it; the whole reply is in {}",
                    aside.display()
                )?;
                1
            }
            Stop::Cancelled => {
                writeln!(
                    err,
                    "{name}: interrupted; the document is valid and every started call has its result"
                )?;
                130
            }
            Stop::Unconfirmed(why) => {
                for line in &why {
                    writeln!(err, "{name}: {line}")?;
                }
                writeln!(
                    err,
                    "nothing more was run or sent: a change that appears while tools are running is not taken as \
                     yours; check the document, then run `wield chat {name}` again"
                )?;
                1
            }
        },
        Err(CycleError::Document(e)) => {
            writeln!(err, "{name}: {e}")?;
            1
        }
        Err(e) => {
            writeln!(err, "error: {name}: {e}")?;
            1
        }
    };
    Ok(ExitCode::from(code))
}

/// What the cycle does, on stderr.
fn report(p: Progress<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = match p {
        Progress::Categorized { placed, pending } => {
            writeln!(err, "[{placed} tool call(s) categorized, {pending} pending]")
        }
        Progress::Running { id, name } => writeln!(err, "→ {name} ({id})"),
        Progress::Ran { name, success, .. } if !success => writeln!(err, "  ✗ {name} failed"),
        Progress::Resolved { results } => writeln!(err, "[{results} result(s) written]"),
        Progress::Sending { step } => writeln!(err, "[sending, reply {step}]"),
        Progress::NotTaken(why) => writeln!(err, "[not taken: {why}]"),
        _ => Ok(()),
    };
}

/// A document's error as the command reports it: what the person fixes is
/// a usage error (exit 2).
fn document_error(e: DocumentError) -> anyhow::Error {
    match e {
        DocumentError::Invalid(message) => usage(message),
        DocumentError::Runtime(e) => exit_error(e),
        e @ (DocumentError::Lock(_) | DocumentError::Provider(_)) => e.into(),
    }
}
