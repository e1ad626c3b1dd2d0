//! A `.chat` document opened for its cycle: what a front-end (`wield chat`,
//! an editor's plugin) drives.
//!
//! [`ChatDocument::open`] checks the file (a regular file with one name),
//! takes its lock against a second cycle and reads its frontmatter.
//! [`ChatDocument::adjust`] puts into the runtime's options what the
//! frontmatter decides there: its sandbox settings, its tool list, its
//! approval rules — approvals at priority 90, denials and "ask" at 101,
//! above the configuration, so a document can always tighten and only
//! loosen below it — and the guard over the document and the files beside
//! it. Once the runtime is loaded, [`ChatDocument::provider`] applies the
//! frontmatter's provider and parameters to the front-end's choice, and
//! [`ChatDocument::cycle`] makes the [`Cycle`] with the frontmatter's limits
//! (its `max_steps` only lowers the configured one). The front-end parses
//! its arguments, connects the provider, runs the cycle and says how it
//! stopped; nothing of the document's policy is its own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use wield_core::approval::{self, ApprovalCall, ConfigResolver, Decision, ResolveError, Resolver};
use wield_core::config::ApprovalConfig;
use wield_core::policy::{PolicyOptions, RuleList};
use wield_llm::settings::{ProviderSettings, Providers};
use wield_llm::{Provider, ThinkingLevel};
use wield_runtime::{Runtime, RuntimeOptions};
use wield_sandbox::fs::Guarded;
use wield_sandbox::fs::chat::Ledger;

use crate::ChatOptions;
use crate::cycle::{Cycle, DocLock, LockError, cycle_files};

/// The configuration keys a document's cycle reads.
pub const CONFIG_KEYS: &[&str] = &["chat.autopilot", "chat.max_steps"];

/// Why a document cannot be worked on.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The person fixes this in the document, its name or the command line.
    #[error("{0}")]
    Invalid(String),
    /// No provider can be used: none is configured, or the one named is
    /// not.
    #[error("{0}")]
    Provider(String),
    /// Another cycle holds the document, or its lock cannot be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The runtime cannot make the cycle's executor.
    #[error(transparent)]
    Runtime(#[from] wield_runtime::Error),
}

/// A document opened for its cycle, locked until the cycle made from it
/// ends.
pub struct ChatDocument {
    /// The document's real path: one reached through a link is written
    /// where it is (an atomic write to the link's path would replace the
    /// link).
    file: PathBuf,
    lock: DocLock,
    options: ChatOptions,
    allow: Arc<Late>,
    tighten: Arc<Late>,
}

/// What the front-end decides of a cycle beside the document.
#[derive(Clone, Debug, Default)]
pub struct CycleFlags {
    /// `--no-autopilot`: stop after each phase that needs the person to
    /// look, whatever the document and the configuration say.
    pub no_autopilot: bool,
    /// `--once`: one phase only.
    pub once: bool,
    /// The session's id (a fresh one when empty).
    pub session_id: String,
    /// Where the documents every runtime guards between presses are
    /// listed ([`Ledger`]); `None` for the user's, in the global
    /// configuration directory.
    pub ledger: Option<Ledger>,
}

impl ChatDocument {
    /// Opens `file`: a regular file with one name (another name of it
    /// would be out of the reach of the guard the cycle puts on it),
    /// locked, its frontmatter read.
    pub fn open(file: &Path) -> Result<Self, DocumentError> {
        let invalid = DocumentError::Invalid;
        if !file.exists() {
            return Err(invalid(format!(
                "{} does not exist; `wield chat new {}` starts a document there",
                file.display(),
                file.display()
            )));
        }
        if !file.is_file() {
            return Err(invalid(format!(
                "{} is not a file: a .chat document is a plain text file; `wield chat new FILE.chat` starts one",
                file.display()
            )));
        }
        let real = std::fs::canonicalize(file).map_err(|e| invalid(format!("cannot read {}: {e}", file.display())))?;
        let links = std::fs::metadata(&real)
            .map(|m| std::os::unix::fs::MetadataExt::nlink(&m))
            .unwrap_or(1);
        if links > 1 {
            return Err(invalid(format!(
                "{} has {links} hard links: a tool could change it through another of its names while the cycle \
                 runs; copy it to a file of its own (cp {} NEW.chat) and use that",
                file.display(),
                file.display()
            )));
        }
        let lock = DocLock::acquire(&real)?;
        let text =
            std::fs::read_to_string(&real).map_err(|e| invalid(format!("cannot read {}: {e}", file.display())))?;
        let options = ChatOptions::of(&crate::parse(&text))
            .map_err(|e| invalid(format!("{}: frontmatter: {e}", file.display())))?;
        // Lua's `auto_approve = function … end` answers instead of the
        // list: its approvals at 90, its denials and "ask" above the
        // configuration.
        let function = options.approve_fn.as_ref().map(|f| Arc::clone(&f.0));
        Ok(Self {
            file: real,
            lock,
            allow: Arc::new(Late::new("frontmatter", 90, function.clone(), false)),
            tighten: Arc::new(Late::new("frontmatter-deny", 101, function, true)),
            options,
        })
    }

    /// The document's real path.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// What the frontmatter sets.
    pub fn options(&self) -> &ChatOptions {
        &self.options
    }

    /// Puts the frontmatter's settings, tool list and approval rules into
    /// `o`, and guards the document and the files beside it from every
    /// tool of the runtime.
    pub fn adjust(&self, o: &mut RuntimeOptions) -> Result<(), DocumentError> {
        o.set.extend(self.options.sandbox_settings());
        o.config_keys.extend_from_slice(CONFIG_KEYS);
        tool_edits(&self.options, &mut o.policy)?;
        o.resolvers.push(Arc::clone(&self.allow) as Arc<dyn Resolver>);
        o.resolvers.push(Arc::clone(&self.tighten) as Arc<dyn Resolver>);
        o.guarded.extend(
            cycle_files(&self.file)
                .into_iter()
                .map(|(path, why)| Guarded::new(path, why)),
        );
        Ok(())
    }

    /// The provider the document talks to: `name` and `model` (the
    /// front-end's choice), else the frontmatter's, else the agent's and
    /// the configuration's; with the frontmatter's parameters.
    pub fn provider(
        &self,
        all: &Providers,
        name: Option<&str>,
        model: Option<&str>,
        agent: &wield_agent::AgentSettings,
    ) -> Result<ProviderSettings, DocumentError> {
        let options = &self.options;
        let name = name.or(options.provider.as_deref()).or(agent.provider.as_deref());
        let mut settings = all
            .pick(name)
            .map_err(|e| DocumentError::Provider(e.to_string()))?
            .clone();
        if let Some(model) = model.or(options.model.as_deref()).or(agent.model.as_deref()) {
            settings.model = model.to_owned();
        }
        if let Some(thinking) = &options.thinking {
            (settings.thinking, settings.thinking_budget) = thinking_of(thinking)?;
        }
        settings.max_tokens = options.max_tokens.or(settings.max_tokens);
        settings.temperature = options.temperature.or(settings.temperature);
        Ok(settings)
    }

    /// The cycle of this document on `rt` (loaded with [`Self::adjust`]),
    /// talking to `provider` with `settings`; it holds the document's lock
    /// for as long as it lives.
    pub fn cycle(
        self,
        rt: &Runtime,
        provider: Provider,
        settings: &ProviderSettings,
        agent: &wield_agent::AgentSettings,
        flags: CycleFlags,
    ) -> Result<Cycle, DocumentError> {
        check_names(rt, &self.options)?;
        self.set_rules(rt);
        let setting = |key: &str| rt.config().value(&format!("chat.{key}")).cloned();
        let autopilot = !flags.no_autopilot
            && self
                .options
                .autopilot
                .or_else(|| setting("autopilot").and_then(|v| v.as_bool()))
                .unwrap_or(true);
        let configured_steps = setting("max_steps")
            .and_then(|v| v.as_integer())
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(agent.limits.max_steps);
        // The document is text in the workspace, so its `max_steps` may
        // only tighten the configured limit, never raise it.
        let max_steps = self
            .options
            .max_steps
            .map_or(configured_steps, |n| n.min(configured_steps));
        // In a document the person approves by writing `(approved)`;
        // rules that deny still deny.
        let executor = rt.executor(Arc::new(approval::YesApprover))?;
        let id = if flags.session_id.is_empty() {
            session_id()
        } else {
            flags.session_id.clone()
        };
        Ok(Cycle {
            file: self.file,
            executor,
            session: rt.session(id, wield_core::Driver::Model),
            provider,
            tools: rt.visible(),
            model: settings.model.clone(),
            tool_choice: settings.tool_choice.clone(),
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            foreign_thinking: settings.foreign_thinking,
            autopilot,
            max_steps,
            once: flags.once,
            ledger: flags
                .ledger
                .or_else(|| Ledger::in_config_dir(rt.config().global_dir.clone())),
            lock: Some(self.lock),
        })
    }

    /// The frontmatter's rules, now that the configuration (and the
    /// presets its patterns may name) is known.
    fn set_rules(&self, rt: &Runtime) {
        let presets = rt.config().approval.presets.clone();
        let rules = |auto_approve: Vec<String>, confirm: Vec<String>, deny: Vec<String>| ApprovalConfig {
            auto_approve,
            confirm,
            deny,
            require: true,
            auto_approve_sandboxed: false,
            presets: presets.clone(),
        };
        let (removed, approved): (Vec<String>, Vec<String>) = self
            .options
            .auto_approve
            .iter()
            .cloned()
            .partition(|e| e.starts_with('-'));
        self.allow.set(ConfigResolver::named(
            "frontmatter",
            90,
            "frontmatter",
            rules(approved, Vec::new(), Vec::new()),
        ));
        let confirm = removed.iter().map(|e| e.trim_start_matches('-').to_string()).collect();
        self.tighten.set(ConfigResolver::named(
            "frontmatter-deny",
            101,
            "frontmatter",
            rules(Vec::new(), confirm, self.options.deny.clone()),
        ));
    }
}

/// A fresh session id.
fn session_id() -> String {
    format!(
        "chat-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    )
}

/// The frontmatter's `thinking` as a level and a budget.
fn thinking_of(thinking: &str) -> Result<(ThinkingLevel, Option<u32>), DocumentError> {
    Ok(match thinking {
        "off" | "false" | "none" => (ThinkingLevel::Off, None),
        "minimal" | "low" => (ThinkingLevel::Low, None),
        "medium" => (ThinkingLevel::Medium, None),
        "high" | "max" => (ThinkingLevel::High, None),
        "adaptive" => (ThinkingLevel::Adaptive, None),
        n => match n.parse::<u32>() {
            Ok(budget) => (ThinkingLevel::High, Some(budget)),
            Err(_) => {
                return Err(DocumentError::Invalid(format!(
                    "frontmatter: thinking = \"{n}\": use off, minimal, low, medium, high, max, adaptive or a token \
                     budget"
                )));
            }
        },
    })
}

/// The frontmatter's tool edits as policy selections: plain entries name
/// the tools offered, `+name` adds one, `-name` removes one.
fn tool_edits(options: &ChatOptions, policy: &mut PolicyOptions) -> Result<(), DocumentError> {
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
        RuleList::parse("the document's `tools`", entries)
            .map_err(|e| DocumentError::Invalid(format!("frontmatter: {e}")))
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
fn check_names(rt: &Runtime, options: &ChatOptions) -> Result<(), DocumentError> {
    let tools = rt.tools().current();
    let names: Vec<String> = tools.registry.list().map(|r| r.tool.spec().name.clone()).collect();
    for name in options.named_tools() {
        if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            continue;
        }
        let hint = wield_core::names::closest(name, names.iter().map(String::as_str))
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(DocumentError::Invalid(format!(
            "frontmatter: there is no tool `{name}`{hint}"
        )));
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
