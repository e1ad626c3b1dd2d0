//! `wield run -p TASK`: the agent, headless.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_agent::tools::DoneStatus;
use wield_agent::{Agent, AgentEvent, AgentSettings, StopReason, SystemPrompt};
use wield_core::policy::Status;
use wield_core::{Executor, Registered, Session, approval};
use wield_llm::Provider;
use wield_llm::settings::ProviderSettings;

use super::providers::choose;
use super::run_interactive;
use crate::app::{Runtime, Servers, exit_error, usage};
use crate::cli::{GlobalArgs, RunArgs};

pub async fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<ExitCode> {
    // In a terminal without a task: the interactive agent.
    let interactive = !args.headless
        && !args.json
        && args.prompt.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let task = if interactive { String::new() } else { task(&args)? };
    // The agent's own tools (`done`, `ask`, `task`) join the built-in ones.
    let task_tool = Arc::new(wield_agent::task::Task::new());
    let mut own_tools = wield_agent::tools::agent_tools();
    own_tools.push(Arc::clone(&task_tool) as wield_core::ToolRef);
    let rt = Runtime::load_with(global, None, Servers::All, own_tools).await?;
    let agent_settings =
        AgentSettings::from_config(rt.config(), global.agent.as_deref()).map_err(|e| usage(e.to_string()))?;
    let (settings, provider) = choose(
        &rt,
        args.provider.as_deref().or(agent_settings.provider.as_deref()),
        args.model.as_deref().or(agent_settings.model.as_deref()),
    )?;
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
    let executor = rt.inner.executor(Arc::clone(&approver)).map_err(exit_error)?;
    let session_id = run_interactive::new_session_id();
    let session = rt.session(session_id.clone(), wield_core::Driver::Model);
    task_tool.set(Arc::new(super::subagents::CliSubagents {
        rt: rt.clone(),
        approver,
        parent: settings.clone(),
        parent_agent: agent_settings.clone(),
        session_id: session_id.clone(),
        started: std::sync::atomic::AtomicU32::new(0),
    }));
    if interactive {
        // `ask` asks the person at the terminal; headless, nobody is asked.
        wield_core::ask::set_asker(&session, Some(run_interactive::asker(&spinner)));
    }
    let mut agent_settings = agent_settings;
    let limits = &mut agent_settings.limits;
    limits.max_steps = args.max_steps.unwrap_or(limits.max_steps);
    limits.token_budget = args.token_budget;
    limits.timeout = args.timeout;
    let resumed = match &args.resume {
        Some(name) => Some(super::sessions::load(rt.workspace(), name)?),
        None => None,
    };
    let mut agent = build_agent(
        &rt,
        session,
        rt.visible(),
        &agent_settings,
        &settings,
        provider,
        executor,
    );
    let session_id = match resumed {
        Some(saved) => {
            agent.resume(saved.messages);
            wield_tools::todo::restore(agent.session(), saved.todo);
            saved.id
        }
        None => session_id,
    };
    if interactive {
        return run_interactive::run(run_interactive::Interactive {
            rt,
            settings,
            agent,
            session_id,
            ephemeral: args.ephemeral,
            spinner,
            color: crate::terminal_approver::color(),
            show_thinking: false,
            usage: wield_llm::Usage::default(),
            steps: 0,
            calls: 0,
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
            "id": session_id,
            "provider": settings.name,
            "model": settings.model,
            "tools": tools,
        }));
    }
    let json_events = args.json;
    let outcome = agent
        .run(&task, &cancel, |event| {
            if json_events {
                if let Some(line) = json_event(&event) {
                    emit(&line);
                }
                return;
            }
            match event {
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
        })
        .await;
    // Saved whatever happened: the conversation is well-formed even after
    // a failure (every call answered).
    let save = |stop: Option<&str>, steps: u32, usage: wield_llm::Usage| -> anyhow::Result<()> {
        if args.ephemeral {
            return Ok(());
        }
        let saved = super::sessions::Saved {
            id: session_id.clone(),
            provider: settings.name.clone(),
            model: settings.model.clone(),
            messages: agent_messages(&agent),
            stop: stop.map(str::to_owned),
            steps,
            usage,
            todo: wield_tools::todo::items(agent.session()),
        };
        let path = super::sessions::save(rt.workspace(), &saved)?;
        eprintln!("[saved {}]", path.display());
        Ok(())
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {}: {e}", settings.name);
            save(None, 0, wield_llm::Usage::default())?;
            return Ok(ExitCode::from(1));
        }
    };
    save(Some(outcome.stop.as_str()), outcome.steps, outcome.usage)?;
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

/// The system prompt of an agent run and its deferred tools (listed in
/// the prompt by name, offered once loaded), for the tool set as it is now.
pub(crate) fn prompt_and_deferred(
    rt: &Runtime,
    session: &Session,
    settings: &AgentSettings,
) -> (String, Vec<Arc<Registered>>) {
    let tool_set = rt.tools().current();
    let deferred = tool_set
        .registry
        .list()
        .filter(|r| {
            tool_set
                .policy
                .get(&r.tool.spec().name)
                .is_some_and(|d| d.status == Status::Deferred)
        })
        .cloned()
        .collect();
    let system = SystemPrompt::new(rt.workspace())
        .sandboxed(rt.sandboxed())
        .deferred(tool_set.policy.deferred_prompt(session))
        .replace(settings.system_prompt.clone())
        .instructions(settings.instructions.clone())
        .build();
    (system, deferred)
}

/// An agent on `session` offering `tools`: the system prompt, deferred
/// tools and limits of `agent_settings`, and the provider `settings`
/// describe (its context window among the limits).
pub(crate) fn build_agent(
    rt: &Runtime,
    session: Arc<Session>,
    tools: Vec<Arc<Registered>>,
    agent_settings: &AgentSettings,
    settings: &ProviderSettings,
    provider: Provider,
    executor: Executor,
) -> Agent {
    let mut limits = agent_settings.limits.clone();
    limits.context_window = settings.context_window;
    let (system, deferred) = prompt_and_deferred(rt, &session, agent_settings);
    Agent::new(
        provider,
        executor,
        session,
        tools,
        Some(system),
        settings.tool_choice.clone(),
        settings.max_tokens,
        settings.temperature,
        limits,
    )
    .with_deferred(deferred)
    .with_names(settings.name.clone(), settings.model.clone())
}

/// The agent's conversation, to save.
fn agent_messages(agent: &Agent) -> Vec<wield_llm::Message> {
    agent.messages().to_vec()
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
