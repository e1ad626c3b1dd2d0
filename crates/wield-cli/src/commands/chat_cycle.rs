//! `wield chat FILE`: one press of the key — the document's three-phase
//! cycle (see [`wield_chat::cycle`]), with its frontmatter's settings.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;
use wield_chat::ChatOptions;
use wield_chat::cycle::{Cycle, CycleError, DocLock, Progress, Stop};
use wield_core::approval::{self, ApprovalCall, ConfigResolver, Decision, ResolveError, Resolver};
use wield_core::config::ApprovalConfig;
use wield_core::policy::RuleList;
use wield_llm::ThinkingLevel;
use wield_llm::settings::ProviderSettings;

use super::providers::{connect, providers};
use crate::app::{Runtime, Servers, exit_error, usage};
use crate::cli::{ChatArgs, GlobalArgs};

/// The configuration keys `wield chat` reads.
pub const CONFIG_KEYS: &[&str] = &["chat.autopilot", "chat.max_steps"];

pub async fn run(global: &GlobalArgs, args: ChatArgs, file: &Path) -> anyhow::Result<ExitCode> {
    if !file.is_file() {
        return Err(usage(format!(
            "{} is no document; `wield chat new {}` starts one",
            file.display(),
            file.display()
        )));
    }
    // A document reached through a link is written where it is: an
    // atomic write to the link's path would replace the link.
    let real = std::fs::canonicalize(file).map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    // Another name of the same file would be out of the reach of the
    // protection the document gets while the cycle runs.
    let links = std::fs::metadata(&real)
        .map(|m| std::os::unix::fs::MetadataExt::nlink(&m))
        .unwrap_or(1);
    if links > 1 {
        return Err(usage(format!(
            "{} has {links} hard links: a tool could change it through another of its names while the cycle runs; \
             copy it to a file of its own (cp {} NEW.chat) and use that",
            file.display(),
            file.display()
        )));
    }
    let _lock = DocLock::acquire(&real)?;
    let text = std::fs::read_to_string(file).map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    let options = ChatOptions::of(&wield_chat::parse(&text))
        .map_err(|e| usage(format!("{}: frontmatter: {e}", file.display())))?;

    // Lua's `auto_approve = function … end` answers instead of the list: its
    // approvals at 90, its denials and "ask" above the configuration.
    let function = options.approve_fn.as_ref().map(|f| Arc::clone(&f.0));
    let allow = Arc::new(Late::new("frontmatter", 90, function.clone(), false));
    let tighten = Arc::new(Late::new("frontmatter-deny", 101, function.clone(), true));
    let rt = Runtime::load_adjusted(global, None, Servers::All, wield_agent::tools::agent_tools(), |o| {
        o.set.extend(options.sandbox_settings());
        o.config_keys.extend_from_slice(CONFIG_KEYS);
        tool_edits(&options, &mut o.policy)?;
        o.resolvers.push(Arc::clone(&allow) as Arc<dyn Resolver>);
        o.resolvers.push(Arc::clone(&tighten) as Arc<dyn Resolver>);
        // The document holds the person's decisions: no tool of this cycle
        // may write it, its lock or what wield writes beside it.
        o.guarded.extend(
            wield_chat::cycle::cycle_files(&real)
                .into_iter()
                .map(|(path, why)| wield_sandbox::fs::Guarded::new(path, why)),
        );
        Ok(())
    })
    .await?;
    check_names(&rt, &options)?;
    let presets = rt.config().approval.presets.clone();
    let rules = |auto_approve: Vec<String>, confirm: Vec<String>, deny: Vec<String>| ApprovalConfig {
        auto_approve,
        confirm,
        deny,
        require: true,
        auto_approve_sandboxed: false,
        presets: presets.clone(),
    };
    let (removed, approved): (Vec<String>, Vec<String>) =
        options.auto_approve.iter().cloned().partition(|e| e.starts_with('-'));
    allow.set(ConfigResolver::named(
        "frontmatter",
        90,
        "frontmatter",
        rules(approved, Vec::new(), Vec::new()),
    ));
    let confirm = removed.iter().map(|e| e.trim_start_matches('-').to_string()).collect();
    tighten.set(ConfigResolver::named(
        "frontmatter-deny",
        101,
        "frontmatter",
        rules(Vec::new(), confirm, options.deny.clone()),
    ));

    let agent = wield_agent::AgentSettings::from_config(rt.config(), global.agent.as_deref())
        .map_err(|e| usage(e.to_string()))?;
    let settings = provider_settings(&rt, &args, &options, &agent)?;
    let provider = connect(&settings)?;
    let chat_setting = |key: &str| rt.config().value(&format!("chat.{key}")).cloned();
    let autopilot = !args.no_autopilot
        && options
            .autopilot
            .or_else(|| chat_setting("autopilot").and_then(|v| v.as_bool()))
            .unwrap_or(true);
    let configured_steps = chat_setting("max_steps")
        .and_then(|v| v.as_integer())
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(agent.limits.max_steps);
    // The document is text in the workspace, so its `max_steps` may only
    // tighten the configured limit, never raise it.
    let max_steps = options.max_steps.map_or(configured_steps, |n| n.min(configured_steps));
    let executor = rt.inner.executor(Arc::new(approval::YesApprover)).map_err(exit_error)?;
    let cycle = Cycle {
        file: real.clone(),
        executor,
        session: rt.session(super::run_interactive::new_session_id(), true),
        provider,
        tools: rt.visible(),
        model: settings.model.clone(),
        tool_choice: settings.tool_choice.clone(),
        max_tokens: settings.max_tokens,
        temperature: settings.temperature,
        foreign_thinking: settings.foreign_thinking,
        autopilot,
        max_steps,
        once: args.once,
    };
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

/// The provider the document talks to: `--provider`/`--model`, else the
/// frontmatter's, else the agent's and the configuration's; with the
/// frontmatter's parameters.
fn provider_settings(
    rt: &Runtime,
    args: &ChatArgs,
    options: &ChatOptions,
    agent: &wield_agent::AgentSettings,
) -> anyhow::Result<ProviderSettings> {
    let all = providers(rt)?;
    let name = args
        .provider
        .as_deref()
        .or(options.provider.as_deref())
        .or(agent.provider.as_deref());
    let mut settings = all.pick(name).map_err(|e| usage(e.to_string()))?.clone();
    if let Some(model) = args
        .model
        .as_deref()
        .or(options.model.as_deref())
        .or(agent.model.as_deref())
    {
        settings.model = model.to_owned();
    }
    if let Some(thinking) = &options.thinking {
        (settings.thinking, settings.thinking_budget) = match thinking.as_str() {
            "off" | "false" | "none" => (ThinkingLevel::Off, None),
            "minimal" | "low" => (ThinkingLevel::Low, None),
            "medium" => (ThinkingLevel::Medium, None),
            "high" | "max" => (ThinkingLevel::High, None),
            "adaptive" => (ThinkingLevel::Adaptive, None),
            n => match n.parse::<u32>() {
                Ok(budget) => (ThinkingLevel::High, Some(budget)),
                Err(_) => {
                    return Err(usage(format!(
                        "frontmatter: thinking = \"{n}\": use off, minimal, low, medium, high, max, adaptive or a token budget"
                    )));
                }
            },
        };
    }
    settings.max_tokens = options.max_tokens.or(settings.max_tokens);
    settings.temperature = options.temperature.or(settings.temperature);
    Ok(settings)
}

/// The frontmatter's tool edits as policy selections: plain entries name
/// the tools offered, `+name` adds one, `-name` removes one.
fn tool_edits(options: &ChatOptions, policy: &mut wield_core::policy::PolicyOptions) -> anyhow::Result<()> {
    let mut plain = Vec::new();
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for e in &options.tools {
        match (e.strip_prefix('+'), e.strip_prefix('-')) {
            (Some(n), _) => add.push(n.to_string()),
            (_, Some(n)) => remove.push(n.to_string()),
            _ => plain.push(e.clone()),
        }
    }
    let list = |entries: &[String]| {
        RuleList::parse("the document's `tools`", entries).map_err(|e| usage(format!("frontmatter: {e}")))
    };
    if !plain.is_empty() {
        policy.include = Some(list(&plain)?);
    }
    if !add.is_empty() {
        policy.add = Some(list(&add)?);
    }
    if !remove.is_empty() {
        let mut all = policy.exclude.take().map(|l| l.entries).unwrap_or_default();
        all.extend(list(&remove)?.entries);
        policy.exclude = Some(RuleList {
            source: "the document's `tools`".into(),
            entries: all,
        });
    }
    Ok(())
}

/// Every tool the frontmatter names exists (a misspelling gets a
/// suggestion).
fn check_names(rt: &Runtime, options: &ChatOptions) -> anyhow::Result<()> {
    let tools = rt.tools().current();
    let names: Vec<String> = tools.registry.list().map(|r| r.tool.spec().name.clone()).collect();
    for name in options.named_tools() {
        if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            continue;
        }
        let hint = wield_core::names::closest(name, names.iter().map(String::as_str))
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(usage(format!("frontmatter: there is no tool `{name}`{hint}")));
    }
    Ok(())
}

/// The frontmatter's resolver at one priority: its rules, known only once
/// the configuration is loaded (the presets its patterns may name), then
/// its Lua function, whose answers it takes only in one direction: the
/// approvals at 90, the denials and "ask" above the configuration (a
/// document can always tighten).
struct Late {
    name: &'static str,
    priority: i32,
    rules: OnceLock<ConfigResolver>,
    function: Option<Arc<dyn Resolver>>,
    tighten: bool,
}

impl Late {
    fn new(name: &'static str, priority: i32, function: Option<Arc<dyn Resolver>>, tighten: bool) -> Self {
        Self {
            name,
            priority,
            rules: OnceLock::new(),
            function,
            tighten,
        }
    }

    fn set(&self, rules: ConfigResolver) {
        let _ = self.rules.set(rules);
    }
}

impl Resolver for Late {
    fn name(&self) -> &str {
        self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        if let Some(rules) = self.rules.get() {
            let decision = rules.resolve(call)?;
            if decision != Decision::Pass {
                return Ok(decision);
            }
        }
        let Some(function) = &self.function else {
            return Ok(Decision::Pass);
        };
        Ok(match function.resolve(call)? {
            d @ (Decision::Deny(_) | Decision::RequireApproval) if self.tighten => d,
            Decision::Approve if !self.tighten => Decision::Approve,
            _ => Decision::Pass,
        })
    }
}
