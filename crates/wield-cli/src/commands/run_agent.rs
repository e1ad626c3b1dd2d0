//! `wield run -p TASK`: the agent, headless.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_agent::session::Ended;
use wield_agent::tools::DoneStatus;
use wield_agent::{AgentEvent, AgentSession, AgentTools, StopReason};
use wield_core::approval;

use super::run_interactive;
use crate::app::{Runtime, Servers, usage};
use crate::cli::{GlobalArgs, RunArgs};

pub async fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let ran = drive(global, args).await;
    if json && let Err(e) = &ran {
        // The stream ends with its final event whatever happened, an error
        // before the session could start included.
        let stop = if e.downcast_ref::<crate::app::Interrupted>().is_some() {
            "cancelled"
        } else {
            "error"
        };
        emit(&finished_with_error(stop, &format!("{e:#}")));
    }
    ran
}

/// `session.finished` for a run that ended without an outcome.
fn finished_with_error(stop: &str, error: &str) -> Value {
    json!({
        "type": "session.finished",
        "stop": stop,
        "steps": 0,
        "usage": wield_llm::Usage::default(),
        "answer": "",
        "status": null,
        "error": error,
    })
}

async fn drive(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<ExitCode> {
    // In a terminal without a task: the interactive agent.
    let interactive = !args.headless
        && !args.json
        && args.prompt.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let task = if interactive { String::new() } else { task(&args)? };
    // The agent's own tools (`done`, `ask`, `task`) join the built-in ones.
    let agent_tools = AgentTools::new();
    let rt = Runtime::load_with(global, None, Servers::All, agent_tools.tools()).await?;
    // Headless: nobody to ask; a call that needs approval is refused with
    // a result telling the model so, unless --yes or a rule approves it.
    let spinner = run_interactive::Spinner::default();
    let approver: Arc<dyn approval::Approver> = if interactive {
        run_interactive::approver(global.yes, &spinner)
    } else if global.yes {
        Arc::new(approval::YesApprover)
    } else {
        Arc::new(approval::HeadlessApprover)
    };
    let resumed = match &args.resume {
        Some(name) => {
            let saved = wield_agent::session::load(rt.workspace(), name).map_err(super::session_error)?;
            eprintln!("[{}]", resuming_note(&saved));
            Some(saved)
        }
        None => None,
    };
    let mut builder = AgentSession::builder(&rt.inner)
        .tools(&agent_tools)
        .agent(global.agent.as_deref())
        .provider(args.provider.as_deref())
        .model(args.model.as_deref())
        .approver(approver)
        .max_steps(args.max_steps)
        .token_budget(args.token_budget)
        .timeout(args.timeout)
        .id(run_interactive::new_session_id())
        .resume(resumed);
    if interactive {
        // `ask` asks the person at the terminal; headless, nobody is asked.
        builder = builder.asker(run_interactive::asker(&spinner));
    }
    let mut session = builder.build().map_err(super::session_error)?;
    if interactive {
        return run_interactive::run(run_interactive::Interactive {
            rt,
            session,
            ephemeral: args.ephemeral,
            spinner,
            color: crate::terminal_approver::color(),
            show_thinking: false,
            usage: wield_llm::Usage::default(),
            steps: 0,
            calls: 0,
            ended: None,
        })
        .await;
    }

    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        super::stop_signal().await;
        on_signal.cancel();
    });
    if args.json {
        let tools: Vec<String> = rt.visible().iter().map(|r| r.tool.spec().name.clone()).collect();
        emit(&json!({
            "type": "session.started",
            "id": session.id(),
            "provider": session.provider().name,
            "model": session.provider().model,
            "tools": tools,
        }));
    }
    let json_events = args.json;
    // Signs of life while the model works, when a person watches stderr.
    let progress = std::io::stderr().is_terminal().then_some(&spinner);
    let outcome = session
        .run(&task, &cancel, |event| {
            if json_events {
                if let Some(line) = json_event(&event) {
                    emit(&line);
                }
                return;
            }
            if let Some(spinner) = progress {
                match &event {
                    AgentEvent::StepStarted { step } => spinner.start(format!("step {step}: waiting for the model…")),
                    AgentEvent::Stream(wield_llm::StreamEvent::TextDelta { .. }) => {
                        spinner.message("the model is answering…".into());
                    }
                    AgentEvent::StepFinished { .. } => spinner.stop(),
                    // A line is printed: the spinner makes way, then goes on.
                    AgentEvent::ToolStarted { .. } => {
                        spinner.pause();
                        spinner.message("running the calls…".into());
                    }
                    AgentEvent::ToolFinished { .. }
                    | AgentEvent::Compacted { .. }
                    | AgentEvent::Stream(wield_llm::StreamEvent::Retrying { .. }) => spinner.pause(),
                    _ => {}
                }
            }
            match event {
                AgentEvent::Stream(wield_llm::StreamEvent::Retrying {
                    attempt,
                    of,
                    delay_ms,
                    reason,
                }) => eprintln!("[{}]", retry_note(*attempt, *of, *delay_ms, reason)),
                AgentEvent::ToolStarted { name, input, .. } => {
                    let shown: String = input.to_string().chars().take(160).collect();
                    eprintln!("→ {name} {shown}");
                }
                AgentEvent::Compacted {
                    before_tokens,
                    after_tokens,
                } => eprintln!("[compacted: about {before_tokens} tokens → {after_tokens}]"),
                AgentEvent::ToolFinished { result, .. } if !result.success => {
                    let why: String = result.error.clone().unwrap_or_default().chars().take(200).collect();
                    eprintln!("  ✗ {why}");
                }
                _ => {}
            }
            if let Some(spinner) = progress {
                spinner.resume();
            }
        })
        .await;
    if let Some(spinner) = progress {
        spinner.stop();
    }
    // Saved whatever happened: the conversation is well-formed even after
    // a failure (every call answered).
    let save = |end: Ended<'_>, steps: u32, usage: wield_llm::Usage| -> anyhow::Result<()> {
        if args.ephemeral {
            return Ok(());
        }
        let path = session.save(end, steps, usage).map_err(super::session_error)?;
        eprintln!("[saved {}]", path.display());
        Ok(())
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let error = format!("{}: {e}", session.provider().name);
            eprintln!("error: {error}");
            save(Ended::Failed(&error), 0, wield_llm::Usage::default())?;
            if args.json {
                // The stream always ends with its final event.
                emit(&finished_with_error("error", &error));
            }
            return Ok(ExitCode::from(1));
        }
    };
    save(Ended::Stopped(outcome.stop.as_str()), outcome.steps, outcome.usage)?;
    if args.json {
        emit(&json!({
            "type": "session.finished",
            "stop": outcome.stop.as_str(),
            "steps": outcome.steps,
            "usage": outcome.usage,
            "answer": outcome.answer.trim_end(),
            "status": outcome.done.as_ref().map(|d| d.status.as_str()),
        }));
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", outcome.answer.trim_end())?;
        out.flush()?;
    }
    if let Some(path) = &args.output {
        wield_runtime::write_atomic(path, format!("{}\n", outcome.answer.trim_end()).as_bytes())
            .map_err(|e| usage(format!("cannot write the answer: {e}")))?;
    }
    eprintln!(
        "[{}: {} step{}, {} tool call{}, {} tokens in, {} out, {:.1} s]",
        outcome.stop.as_str(),
        outcome.steps,
        if outcome.steps == 1 { "" } else { "s" },
        outcome.tool_calls.values().sum::<u32>(),
        if outcome.tool_calls.values().sum::<u32>() == 1 {
            ""
        } else {
            "s"
        },
        outcome.usage.total_input(),
        outcome.usage.output,
        outcome.wall.as_secs_f64()
    );
    // `done {status}`: success 0, failed 1, partial 3.
    let reported = outcome.done.as_ref().map(|d| d.status);
    Ok(match outcome.stop {
        StopReason::Done => match reported {
            Some(DoneStatus::Failed) => ExitCode::from(1),
            Some(DoneStatus::Partial) => ExitCode::from(3),
            Some(DoneStatus::Success) | None => ExitCode::SUCCESS,
        },
        StopReason::MaxSteps | StopReason::TokenBudget | StopReason::Timeout => ExitCode::from(3),
        StopReason::Cancelled => ExitCode::from(130),
    })
}

/// Which saved session a run goes on with, and how it had ended.
fn resuming_note(saved: &wield_agent::SavedSession) -> String {
    let mut note = format!(
        "resuming {} ({}, {} message{}",
        saved.id,
        saved.outcome(),
        saved.messages.len(),
        if saved.messages.len() == 1 { "" } else { "s" }
    );
    let task = saved.task();
    if !task.is_empty() {
        let task: String = task.chars().take(60).collect();
        note.push_str(&format!(", \"{task}\""));
    }
    note.push_str("); `wield sessions list` shows the others");
    note
}

/// What a front-end says while a request waits to be sent again.
pub(super) fn retry_note(attempt: u32, of: u32, delay_ms: u64, reason: &str) -> String {
    format!(
        "retrying in {:.1} s (attempt {attempt} of {of}): {reason}",
        delay_ms as f64 / 1000.0
    )
}

/// The task: `-p`, `-p -` or stdin.
fn task(args: &RunArgs) -> anyhow::Result<String> {
    let text = match args.prompt.as_deref() {
        Some("-") | None => {
            if args.prompt.is_none() && std::io::stdin().is_terminal() {
                return Err(usage(
                    "give the task with -p TASK (or on stdin), or run `wield run` in a terminal",
                ));
            }
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| usage(format!("cannot read the task from stdin: {e}")))?;
            s
        }
        Some(p) => p.to_owned(),
    };
    if text.trim().is_empty() {
        return Err(usage("the task is empty"));
    }
    Ok(text)
}

/// Most characters of a tool's output a `tool.finished` event carries.
const EVENT_OUTPUT: usize = 2_000;

/// One JSON Lines event on stdout.
fn emit(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// The JSON Lines event for an agent event (the README documents the schema).
fn json_event(event: &AgentEvent<'_>) -> Option<Value> {
    Some(match event {
        AgentEvent::StepStarted { step } => json!({ "type": "step.started", "step": step }),
        AgentEvent::Stream(wield_llm::StreamEvent::TextDelta { text }) => {
            json!({ "type": "text.delta", "text": text })
        }
        AgentEvent::Stream(wield_llm::StreamEvent::Retrying {
            attempt,
            of,
            delay_ms,
            reason,
        }) => {
            json!({ "type": "provider.retrying", "attempt": attempt, "of": of, "delay_ms": delay_ms, "reason": reason })
        }
        AgentEvent::Stream(_) => return None,
        AgentEvent::ToolStarted {
            id,
            name,
            input,
            preview,
        } => json!({ "type": "tool.started", "id": id, "name": name, "input": input, "preview": preview }),
        AgentEvent::ToolFinished {
            id, result, duration, ..
        } => {
            let output: String = result.output.chars().take(EVENT_OUTPUT).collect();
            json!({
                "type": "tool.finished",
                "id": id,
                "success": result.success,
                "output": output,
                "truncated": result.output.chars().count() > EVENT_OUTPUT,
                "error": result.error,
                "duration_ms": u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            })
        }
        AgentEvent::ToolOutput { id, delta } => json!({ "type": "tool.output", "id": id, "delta": delta }),
        AgentEvent::StepFinished { step, usage } => json!({ "type": "step.finished", "step": step, "usage": usage }),
        AgentEvent::Compacted {
            before_tokens,
            after_tokens,
        } => json!({ "type": "compacted", "before_tokens": before_tokens, "after_tokens": after_tokens }),
    })
}
