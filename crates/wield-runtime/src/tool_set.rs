//! The tool set of a front-end: the registry and the policy decided over
//! it. A long-running front-end (`wield mcp serve`) replaces it whole when a
//! bridged MCP server changes its tools; what was built from the old one
//! (a running call's executor) goes on with it.

use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use wield_core::policy::{Layer, PolicyBuilder, PolicyError, PolicyOptions, RuleList, Stage, Status, ToolPolicy};
use wield_core::{Config, Registered, Registry, ToolRef};
#[cfg(feature = "mcp")]
use wield_mcp::{McpClients, ServerState};

/// A registry and its policy.
pub struct ToolSet {
    pub registry: Arc<Registry>,
    pub policy: Arc<ToolPolicy>,
}

impl ToolSet {
    /// The tools a model sees with their schemas (the policy's `in` tools;
    /// deferred ones are listed by name only), in name order.
    pub fn visible(&self) -> Vec<Arc<Registered>> {
        self.registry
            .list()
            .filter(|r| {
                self.policy
                    .get(&r.tool.spec().name)
                    .is_some_and(|d| d.status == Status::In)
            })
            .cloned()
            .collect()
    }
}

/// The built-in tools and the front-end's own.
fn local_tools(extra: &[ToolRef]) -> Vec<ToolRef> {
    let mut tools = wield_tools::builtin_tools();
    tools.extend(extra.iter().cloned());
    tools
}

/// The current [`ToolSet`], shared by everything that builds executors and
/// lists tools.
#[derive(Clone)]
pub struct SharedTools(Arc<Shared>);

/// A [`SharedTools`] that does not keep it alive: for the callback the
/// bridged servers hold, since the tool set holds their tools, which hold
/// them.
pub struct WeakSharedTools(Weak<Shared>);

// `rebuilding` and `derived` serve `rebuild` (the `mcp` feature).
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
struct Shared {
    current: RwLock<Arc<ToolSet>>,
    config: Arc<Config>,
    options: PolicyOptions,
    /// The front-end's own tools, registered with the built-in ones.
    extra: Vec<ToolRef>,
    /// The user's command tools (source `command`).
    commands: Vec<ToolRef>,
    /// One rebuild at a time, so the last one stored saw every change.
    rebuilding: Mutex<()>,
    /// Set for a tool set derived from another (a subagent's, a batch's):
    /// its policy was narrowed from a parent's at one moment, so rebuilding
    /// it from the configuration alone would widen it again.
    derived: bool,
}

impl WeakSharedTools {
    pub fn upgrade(&self) -> Option<SharedTools> {
        self.0.upgrade().map(SharedTools)
    }
}

impl SharedTools {
    pub(crate) fn new(
        first: ToolSet,
        config: Arc<Config>,
        options: PolicyOptions,
        extra: Vec<ToolRef>,
        commands: Vec<ToolRef>,
    ) -> Self {
        Self(Arc::new(Shared {
            current: RwLock::new(Arc::new(first)),
            config,
            options,
            extra,
            commands,
            rebuilding: Mutex::new(()),
            derived: false,
        }))
    }

    /// This tool set with `policy` deciding over the same registry: for the
    /// executor of a call that must be checked as its caller's calls are (a
    /// batch started by a subagent).
    pub(crate) fn with_policy(&self, policy: Arc<ToolPolicy>) -> Self {
        let registry = Arc::clone(&self.current().registry);
        self.derive(ToolSet { registry, policy }, self.0.options.clone())
    }

    /// The tool set of a subagent started from a run on this one: the
    /// policy `--agent AGENT` would decide (the general one's, for `None`),
    /// where also every tool this set does not let its run call is out, and
    /// the `withheld` ones. A subagent can never call a tool its parent
    /// cannot: the parent's layers, its agent's and the configuration's all
    /// apply, and an agent's list naming an opt-in tool the parent hides
    /// does not bring it back.
    pub(crate) fn narrowed(&self, agent: Option<&str>, withheld: &[&str]) -> Result<Self, PolicyError> {
        let current = self.current();
        let mut options = self.0.options.clone();
        if let Some(agent) = agent {
            options.agent = Some(agent.to_owned());
        }
        let parent_out: Vec<&str> = current
            .policy
            .decisions()
            .iter()
            .filter(|d| d.status == Status::Out)
            .map(|d| d.name.as_str())
            .collect();
        let layer = Layer::new(Stage::Agent)
            .named("subagent")
            .disabled(RuleList::parse("the parent run's policy", &parent_out)?)
            .disabled(RuleList::parse("not for subagents", withheld)?);
        let policy = PolicyBuilder::from_config(&self.0.config, &options)?
            .layer(layer)
            .build(&current.registry);
        let set = ToolSet {
            registry: Arc::clone(&current.registry),
            policy: Arc::new(policy),
        };
        Ok(self.derive(set, options))
    }

    fn derive(&self, set: ToolSet, options: PolicyOptions) -> Self {
        Self(Arc::new(Shared {
            current: RwLock::new(Arc::new(set)),
            config: Arc::clone(&self.0.config),
            options,
            extra: self.0.extra.clone(),
            commands: self.0.commands.clone(),
            rebuilding: Mutex::new(()),
            derived: true,
        }))
    }

    pub fn downgrade(&self) -> WeakSharedTools {
        WeakSharedTools(Arc::downgrade(&self.0))
    }

    pub fn current(&self) -> Arc<ToolSet> {
        Arc::clone(&self.0.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// A new tool set from the local tools and the bridged servers' tools
    /// as they are now (a server that is down is a warning, as at start).
    /// A derived tool set (a subagent's) refuses: only its parent's is
    /// rebuilt.
    #[cfg(feature = "mcp")]
    pub fn rebuild(&self, mcp: &McpClients) -> Result<(), String> {
        if self.0.derived {
            return Err("a subagent's or a batch's tool set is not rebuilt: rebuild the runtime's own".into());
        }
        let _one = self.0.rebuilding.lock().unwrap_or_else(PoisonError::into_inner);
        let mut registry = Registry::new();
        mcp.describe_sources(&mut registry);
        registry
            .register_many(local_tools(&self.0.extra))
            .map_err(|e| format!("registering the built-in tools: {e}"))?;
        register_commands(&mut registry, &self.0.commands)
            .map_err(|e| format!("registering the command tools: {e}"))?;
        for (source, tool) in mcp.tools() {
            if let Err(e) = registry.register_from(tool, &source) {
                registry.warn(source, e.to_string());
            }
        }
        for s in mcp.status() {
            if let (ServerState::Failed | ServerState::Exited, Some(why)) = (s.state, &s.error) {
                registry.warn(format!("mcp:{}", s.name), why.clone());
            }
        }
        warn_left_out(&mut registry, mcp);
        let policy = PolicyBuilder::from_config(&self.0.config, &self.0.options)
            .map_err(|e| e.to_string())?
            .build(&registry);
        let set = ToolSet {
            registry: Arc::new(registry),
            policy: Arc::new(policy),
        };
        *self.0.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(set);
        Ok(())
    }
}

/// A registry of the local tools, before any source is loaded.
pub(crate) fn first_registry(extra: &[ToolRef]) -> Result<Registry, wield_core::RegistryError> {
    let mut registry = Registry::new();
    registry.register_many(local_tools(extra))?;
    Ok(registry)
}

/// Register the user's command tools, under the source `command`.
pub(crate) fn register_commands(registry: &mut Registry, tools: &[ToolRef]) -> Result<(), wield_core::RegistryError> {
    for tool in tools {
        registry.register_from(Arc::clone(tool), wield_tools::command::SOURCE)?;
    }
    Ok(())
}

/// Record, with the sources' other warnings, why tools of a bridged
/// server's listing were left out (`wield tools debug`, unknown-tool
/// errors).
#[cfg(feature = "mcp")]
pub(crate) fn warn_left_out(registry: &mut Registry, mcp: &McpClients) {
    for s in mcp.status() {
        for w in s.warnings {
            registry.warn(format!("mcp:{}", s.name), w);
        }
    }
}
