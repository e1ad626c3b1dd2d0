//! The filter pipeline: a [`PolicyBuilder`] collects the layers (from the
//! configuration and the command line, or by hand), and `build` decides every
//! registered tool once, producing a [`ToolPolicy`].

use std::collections::HashMap;

use serde::Serialize;

use crate::config::Config;
use crate::context::Session;
use crate::names::{closest, glob_match};
use crate::registry::{Registry, SourceMeta};
use crate::tool::{ToolRef, ToolSpec, ToolTraits};

use super::rules::{Layer, LayerOutcome, RuleList};
use super::{LOADS_DEFERRED, NotCallable, PolicyError, Profile, Stage, Status, Visibility};

/// What the command line (or another front-end) selects on top of the
/// configuration. `None` falls back to the config's `profile`, `agent`,
/// `mode` and `task` keys.
#[derive(Clone, Debug, Default)]
pub struct PolicyOptions {
    pub profile: Option<String>,
    pub agent: Option<String>,
    pub mode: Option<String>,
    pub task: Option<String>,
    /// `--include-tools` / `WIELD_INCLUDE_TOOLS`: replaces `[tools] enabled`.
    pub include: Option<RuleList>,
    /// `--exclude-tools` / `WIELD_EXCLUDE_TOOLS`: added to `[tools] disabled`
    /// (exclusions only ever narrow; disabled always wins).
    pub exclude: Option<RuleList>,
    /// Entries added to the enabled list, whichever it is (a `.chat`
    /// document's `+name` tool edits).
    pub add: Option<RuleList>,
}

/// Collects the layers of the pipeline.
#[derive(Clone, Debug)]
pub struct PolicyBuilder {
    global: Layer,
    profile: Profile,
    layers: Vec<Layer>,
    opt_in: Vec<RuleList>,
    deferred: Vec<RuleList>,
}

impl Default for PolicyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PolicyBuilder {
    /// No restriction: profile `full`, no lists.
    pub fn new() -> Self {
        Self {
            global: Layer::new(Stage::Global),
            profile: Profile::Full,
            layers: Vec::new(),
            opt_in: Vec::new(),
            deferred: Vec::new(),
        }
    }

    /// The pipeline a configuration and the command-line selections describe.
    pub fn from_config(config: &Config, options: &PolicyOptions) -> Result<Self, PolicyError> {
        let tools = &config.tools;
        let mut b = Self::new();
        let mut enabled = match &options.include {
            Some(list) if !list.is_empty() => list.clone(),
            _ => RuleList::parse("[tools] enabled", &tools.enabled)?,
        };
        if let Some(add) = &options.add {
            enabled.entries.extend(add.entries.iter().cloned());
        }
        b = b.enabled(enabled);
        b = b.disabled(RuleList::parse("[tools] disabled", &tools.disabled)?);
        if let Some(list) = &options.exclude {
            b = b.disabled(list.clone());
        }
        let profile = match &options.profile {
            Some(p) => Some(p.clone()),
            None => config_string(config, "profile")?,
        };
        if let Some(p) = profile {
            b = b.profile(p.parse()?);
        }
        for (kind, table, stage, chosen) in [
            ("agent", "agents", Stage::Agent, &options.agent),
            ("mode", "modes", Stage::Mode, &options.mode),
            ("task", "tasks", Stage::Task, &options.task),
        ] {
            let name = match chosen {
                Some(n) => Some(n.clone()),
                None => config_string(config, kind)?,
            };
            if let Some(name) = name {
                b = b.layer(layer_from_config(config, kind, table, stage, &name)?);
            }
        }
        b = b.opt_in(RuleList::parse("[tools] opt_in", &tools.opt_in)?);
        b = b.deferred(RuleList::parse("[tools] deferred", &tools.deferred)?);
        Ok(b)
    }

    /// The global `enabled` list (replaces any earlier one).
    #[must_use]
    pub fn enabled(mut self, list: RuleList) -> Self {
        self.global.enabled = Some(list);
        self
    }

    /// Add a global `disabled` list.
    #[must_use]
    pub fn disabled(mut self, list: RuleList) -> Self {
        self.global.disabled.push(list);
        self
    }

    #[must_use]
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Add an agent, mode or task layer; layers apply in stage order.
    #[must_use]
    pub fn layer(mut self, layer: Layer) -> Self {
        self.layers.push(layer);
        self.layers.sort_by_key(|l| l.stage);
        self
    }

    #[must_use]
    pub fn opt_in(mut self, list: RuleList) -> Self {
        self.opt_in.push(list);
        self
    }

    #[must_use]
    pub fn deferred(mut self, list: RuleList) -> Self {
        self.deferred.push(list);
        self
    }

    /// Decide every tool of a registry, with what each tool's source says
    /// of it ([`SourceMeta`]: deferred, and the label it is loaded by).
    pub fn build(&self, registry: &Registry) -> ToolPolicy {
        self.build_sourced(
            registry
                .list()
                .map(|r| (r.tool.clone(), registry.source_meta(&r.source).cloned())),
        )
    }

    /// Decide every tool of a list, in its order.
    pub fn build_from(&self, tools: impl IntoIterator<Item = ToolRef>) -> ToolPolicy {
        self.build_sourced(tools.into_iter().map(|t| (t, None)))
    }

    fn build_sourced(&self, tools: impl IntoIterator<Item = (ToolRef, Option<SourceMeta>)>) -> ToolPolicy {
        let mut decisions = Vec::new();
        let mut specs = HashMap::new();
        let mut labels = HashMap::new();
        let mut loaders = Vec::new();
        for (tool, meta) in tools {
            let spec = tool.spec();
            let traits = tool.traits();
            let meta = meta.unwrap_or_default();
            if let Some(label) = &meta.label {
                labels.insert(spec.name.clone(), label.clone());
            }
            let (status, stage, rule) = self.decide(&spec.name, traits, &meta);
            if status == Status::Deferred {
                specs.insert(spec.name.clone(), spec.clone());
            }
            if status == Status::In && traits.has_capability(LOADS_DEFERRED) {
                loaders.push(decisions.len());
            }
            decisions.push(ToolDecision {
                name: spec.name.clone(),
                status,
                stage,
                rule,
            });
        }
        // The loader is offered only when there is something to load.
        let deferred = decisions.iter().filter(|d| d.status == Status::Deferred).count();
        for i in loaders {
            let d = &mut decisions[i];
            if deferred == 0 {
                d.status = Status::Out;
                d.stage = Stage::Deferred;
                d.rule = "no tool is deferred, so there is nothing to load".into();
            } else if d.stage == Stage::Registry {
                d.stage = Stage::Deferred;
                d.rule = format!("offered because {deferred} tool(s) are deferred");
            }
        }
        let index = decisions.iter().enumerate().map(|(i, d)| (d.name.clone(), i)).collect();
        ToolPolicy {
            decisions,
            index,
            specs,
            labels,
            profile: self.profile,
            layers: self
                .layers
                .iter()
                .map(|l| (l.stage, l.name.clone().unwrap_or_default()))
                .collect(),
        }
    }

    fn decide(&self, name: &str, traits: &ToolTraits, meta: &SourceMeta) -> (Status, Stage, String) {
        let mut admitted: Option<(Stage, String)> = None;
        match self.global.apply(name, traits) {
            LayerOutcome::Out(rule) => return (Status::Out, Stage::Global, rule),
            LayerOutcome::Admitted(rule) => admitted = Some((Stage::Global, rule)),
            LayerOutcome::Untouched => {}
        }
        match self.profile.decide(name, traits) {
            Some(Err(rule)) => return (Status::Out, Stage::Profile, rule),
            Some(Ok(rule)) => admitted = Some((Stage::Profile, rule)),
            None => {}
        }
        for layer in &self.layers {
            match layer.apply(name, traits) {
                LayerOutcome::Out(rule) => return (Status::Out, layer.stage, rule),
                LayerOutcome::Admitted(rule) => admitted = Some((layer.stage, rule)),
                LayerOutcome::Untouched => {}
            }
        }
        if let Some(why) = self.opt_in_rule(name, traits) {
            match self.explicitly_named(name, traits) {
                Some(by) => admitted = Some((Stage::OptIn, format!("{why}; named by {by}"))),
                None => {
                    return (
                        Status::Out,
                        Stage::OptIn,
                        format!("{why}: hidden until an enabled list names it (\"*\" does not count)"),
                    );
                }
            }
        }
        if !traits.has_capability(LOADS_DEFERRED)
            && let Some(rule) = self.deferred_rule(name, traits, meta)
        {
            return (Status::Deferred, Stage::Deferred, rule);
        }
        match admitted {
            Some((stage, rule)) => (Status::In, stage, rule),
            None => (Status::In, Stage::Registry, "registered; no layer restricts it".into()),
        }
    }

    fn opt_in_rule(&self, name: &str, traits: &ToolTraits) -> Option<String> {
        if traits.opt_in {
            return Some("opt-in (tool traits)".into());
        }
        self.opt_in
            .iter()
            .find_map(|l| l.first_match(name, traits).map(|e| format!("opt-in ({})", l.rule(e))))
    }

    /// The first enabled entry, at any stage, that names the tool on purpose.
    fn explicitly_named(&self, name: &str, traits: &ToolTraits) -> Option<String> {
        std::iter::once(&self.global)
            .chain(&self.layers)
            .filter_map(Layer::enabled_list)
            .find_map(|l| l.first_explicit_match(name, traits).map(|e| l.rule(e)))
            .or_else(|| self.profile.explicit_match(name, traits))
    }

    fn deferred_rule(&self, name: &str, traits: &ToolTraits, meta: &SourceMeta) -> Option<String> {
        if traits.deferred {
            return Some("deferred (tool traits)".into());
        }
        self.deferred
            .iter()
            .find_map(|l| l.first_match(name, traits).map(|e| l.rule(e)))
            .or_else(|| meta.deferred_by.clone())
    }
}

fn config_string(config: &Config, key: &str) -> Result<Option<String>, PolicyError> {
    match config.value(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        // `[agent]` may be a table of settings; it names the agent with `name`.
        Some(toml::Value::Table(t)) => match t.get("name") {
            None => Ok(None),
            Some(_) => config_string(config, &format!("{key}.name")),
        },
        Some(other) => Err(PolicyError::Invalid {
            path: key.to_owned(),
            message: format!("expected a name (a string), got {}", other.type_str()),
        }),
    }
}

fn string_list(config: &Config, path: &str) -> Result<Vec<String>, PolicyError> {
    let invalid = |message: String| PolicyError::Invalid {
        path: path.to_owned(),
        message,
    };
    match config.value(path) {
        None => Ok(Vec::new()),
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(format!("expected a list of strings, found {}", v.type_str())))
            })
            .collect(),
        Some(other) => Err(invalid(format!("expected a list of strings, got {}", other.type_str()))),
    }
}

fn layer_from_config(
    config: &Config,
    kind: &'static str,
    table: &str,
    stage: Stage,
    name: &str,
) -> Result<Layer, PolicyError> {
    let all = config.table_at(table);
    if !all.contains_key(name) {
        let known: Vec<String> = all.keys().cloned().collect();
        return Err(PolicyError::UnknownLayer {
            kind,
            name: name.to_owned(),
            suggestion: closest(name, known.iter().map(String::as_str)).map(str::to_owned),
            known,
        });
    }
    let base = format!("{table}.{name}.tools");
    let source = format!("[{base}]");
    let enabled = string_list(config, &format!("{base}.enabled"))?;
    let disabled = string_list(config, &format!("{base}.disabled"))?;
    Ok(Layer::new(stage)
        .named(name)
        .enabled(RuleList::parse(format!("{source} enabled"), &enabled)?)
        .disabled(RuleList::parse(format!("{source} disabled"), &disabled)?))
}

/// How one tool was decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolDecision {
    pub name: String,
    pub status: Status,
    /// The stage that decided: the one that removed it, the last one that
    /// admitted it by name, or `registry` when nothing restricts it.
    pub stage: Stage,
    /// The exact rule, e.g. `[tools] disabled: "mcp__*"`.
    pub rule: String,
}

/// Every tool's decision, and the [`Visibility`] that enforces it.
#[derive(Clone, Debug)]
pub struct ToolPolicy {
    decisions: Vec<ToolDecision>,
    index: HashMap<String, usize>,
    specs: HashMap<String, ToolSpec>,
    /// The label of each tool whose source gave one.
    labels: HashMap<String, String>,
    profile: Profile,
    layers: Vec<(Stage, String)>,
}

impl ToolPolicy {
    /// Every registered tool, in registry order.
    pub fn decisions(&self) -> &[ToolDecision] {
        &self.decisions
    }

    pub fn get(&self, name: &str) -> Option<&ToolDecision> {
        self.index.get(name).map(|&i| &self.decisions[i])
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The agent, mode and task layers that applied, with their names.
    pub fn layers(&self) -> &[(Stage, String)] {
        &self.layers
    }

    fn names_with(&self, status: Status) -> Vec<&str> {
        self.decisions
            .iter()
            .filter(|d| d.status == status)
            .map(|d| d.name.as_str())
            .collect()
    }

    /// Tools sent with their schemas from the start.
    pub fn eager(&self) -> Vec<&str> {
        self.names_with(Status::In)
    }

    pub fn deferred(&self) -> Vec<&str> {
        self.names_with(Status::Deferred)
    }

    /// What a model should be sent in this session: the eager tools and the
    /// deferred ones it has loaded, in registry order.
    pub fn tools_for(&self, session: &Session) -> Vec<&str> {
        self.decisions
            .iter()
            .filter(|d| d.status == Status::In || (d.status == Status::Deferred && session.is_loaded(&d.name)))
            .map(|d| d.name.as_str())
            .collect()
    }

    /// The schema of a deferred tool, for the loader's answer.
    pub fn deferred_spec(&self, name: &str) -> Option<&ToolSpec> {
        self.specs.get(name)
    }

    /// The deferred tools matching `patterns` (`*` globs, case-insensitive)
    /// or coming from the source labelled `server` (an MCP server's name);
    /// `Err` says what can be loaded.
    pub fn select_deferred(&self, patterns: &[String], server: Option<&str>) -> Result<Vec<&str>, String> {
        let deferred = self.deferred();
        if patterns.is_empty() && server.is_none() {
            return Err(format!(
                "name the tools to load with `tools` (globs allowed) or an MCP `server`; deferred tools: {}",
                list_or_none(&deferred)
            ));
        }
        let from_server = |n: &str| {
            server.is_some_and(|s| {
                self.labels
                    .get(n)
                    .is_some_and(|label| label.eq_ignore_ascii_case(s.trim()))
            })
        };
        let picked: Vec<&str> = deferred
            .iter()
            .copied()
            .filter(|n| patterns.iter().any(|p| glob_match(p.trim(), n, true)) || from_server(n))
            .collect();
        if picked.is_empty() {
            let mut msg = String::from("no deferred tool matches");
            for p in patterns {
                if let Some(d) = self.get(p.trim()) {
                    msg.push_str(&match d.status {
                        Status::In => format!("; `{}` is already available without loading", d.name),
                        Status::Out => format!("; `{}` is hidden by policy and cannot be loaded", d.name),
                        Status::Deferred => String::new(),
                    });
                }
            }
            msg.push_str(&format!("; deferred tools: {}", list_or_none(&deferred)));
            return Err(msg);
        }
        Ok(picked)
    }

    /// The system-prompt block listing the deferred tools not loaded yet in
    /// this session, by name only; `None` when there are none.
    pub fn deferred_prompt(&self, session: &Session) -> Option<String> {
        let pending: Vec<&str> = self.deferred().into_iter().filter(|n| !session.is_loaded(n)).collect();
        if pending.is_empty() {
            return None;
        }
        let loader = self
            .decisions
            .iter()
            .find(|d| d.status == Status::In && d.stage == Stage::Deferred)
            .map_or("load_tools", |d| d.name.as_str());
        let mut block = String::from("<available-deferred-tools>\n");
        block.push_str(&format!(
            "These tools exist but their schemas are not loaded. To use one, first call `{loader}` with \
             {{\"tools\": [\"NAME\"]}} (`*` globs work) or {{\"server\": \"NAME\"}} for every \
             deferred tool of a server; they then stay loaded for the rest of the session.\n"
        ));
        for n in pending {
            block.push_str(n);
            block.push('\n');
        }
        block.push_str("</available-deferred-tools>");
        Some(block)
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

impl Visibility for ToolPolicy {
    fn check_callable(&self, tool: &str, session: &Session) -> Result<(), NotCallable> {
        let Some(d) = self.get(tool) else {
            return Err(NotCallable(
                "it was registered after the tool policy was computed".into(),
            ));
        };
        match d.status {
            Status::In => Ok(()),
            Status::Out => Err(NotCallable(format!(
                "hidden by the {} stage of the tool policy ({})",
                d.stage, d.rule
            ))),
            Status::Deferred if !session.model_driven() || session.is_loaded(tool) => Ok(()),
            Status::Deferred => Err(NotCallable(format!(
                "it is deferred ({}); load it first with load_tools {{\"tools\": [\"{tool}\"]}}",
                d.rule
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::testing::StaticTool;

    fn tool(name: &str, traits: ToolTraits) -> ToolRef {
        Arc::new(StaticTool::new(name, json!({"type": "object"})).traits(traits))
    }

    fn fs(read_only: bool) -> ToolTraits {
        ToolTraits {
            read_only,
            groups: vec!["fs".into()],
            ..ToolTraits::default()
        }
    }

    fn tools() -> Vec<ToolRef> {
        vec![
            tool("read", fs(true)),
            tool("write", fs(false)),
            tool(
                "bash",
                ToolTraits {
                    groups: vec!["runtime".into()],
                    ..ToolTraits::default()
                },
            ),
            tool(
                "web_fetch",
                ToolTraits {
                    groups: vec!["web".into()],
                    opt_in: true,
                    ..ToolTraits::default()
                },
            ),
            tool("mcp__ctx__docs", ToolTraits::default()),
            tool(
                "load_tools",
                ToolTraits {
                    capabilities: vec![LOADS_DEFERRED.into()],
                    ..ToolTraits::default()
                },
            ),
        ]
    }

    fn list(source: &str, entries: &[&str]) -> RuleList {
        RuleList::parse(source, entries).unwrap()
    }

    #[test]
    fn nothing_configured_means_everything_but_opt_in() {
        let p = PolicyBuilder::new().build_from(tools());
        assert_eq!(p.eager(), vec!["read", "write", "bash", "mcp__ctx__docs"]);
        let web = p.get("web_fetch").unwrap();
        assert_eq!((web.status, web.stage), (Status::Out, Stage::OptIn));
        let loader = p.get("load_tools").unwrap();
        assert_eq!((loader.status, loader.stage), (Status::Out, Stage::Deferred));
    }

    #[test]
    fn stages_decide_in_order_and_disabled_wins() {
        let p = PolicyBuilder::new()
            .enabled(list("--include-tools", &["*"]))
            .disabled(list("[tools] disabled", &["bash"]))
            .profile(Profile::Coding)
            .layer(
                Layer::new(Stage::Mode)
                    .named("review")
                    .disabled(list("[modes.review.tools] disabled", &["write"])),
            )
            .layer(
                Layer::new(Stage::Agent)
                    .named("a")
                    .enabled(list("[agents.a.tools] enabled", &["bash", "read", "write"])),
            )
            .build_from(tools());
        let d = |n| p.get(n).unwrap().clone();
        assert_eq!(d("bash").stage, Stage::Global);
        assert_eq!(d("bash").rule, "[tools] disabled: \"bash\"");
        assert_eq!(d("write").stage, Stage::Mode);
        assert_eq!(d("mcp__ctx__docs").stage, Stage::Profile);
        assert_eq!(d("read").status, Status::In);
        assert_eq!(d("read").stage, Stage::Agent);
        assert_eq!(d("read").rule, "[agents.a.tools] enabled: \"read\"");
    }

    #[test]
    fn opt_in_needs_an_explicit_name() {
        let star = PolicyBuilder::new()
            .layer(Layer::new(Stage::Agent).enabled(list("[agents.a.tools] enabled", &["*"])))
            .build_from(tools());
        assert_eq!(star.get("web_fetch").unwrap().status, Status::Out);
        let named = PolicyBuilder::new()
            .layer(Layer::new(Stage::Task).enabled(list("[tasks.t.tools] enabled", &["group:web", "read"])))
            .build_from(tools());
        let d = named.get("web_fetch").unwrap();
        assert_eq!((d.status, d.stage), (Status::In, Stage::OptIn));
        assert!(d.rule.contains("[tasks.t.tools] enabled: \"group:web\""), "{}", d.rule);
        let by_profile = PolicyBuilder::new().profile(Profile::Minimal).build_from(tools());
        assert_eq!(by_profile.get("web_fetch").unwrap().status, Status::In);
        let listed = PolicyBuilder::new()
            .opt_in(list("[tools] opt_in", &["bash"]))
            .build_from(tools());
        assert!(listed.get("bash").unwrap().rule.contains("[tools] opt_in: \"bash\""));
    }

    #[test]
    fn deferred_tools_are_callable_once_loaded_or_without_a_model() {
        let p = PolicyBuilder::new()
            .deferred(list("[tools] deferred", &["mcp__*"]))
            .build_from(tools());
        assert_eq!(p.deferred(), vec!["mcp__ctx__docs"]);
        assert_eq!(p.get("load_tools").unwrap().status, Status::In);
        let model = Session::new("m", true);
        assert!(p.check_callable("mcp__ctx__docs", &model).is_err());
        assert!(p.deferred_prompt(&model).unwrap().contains("\nmcp__ctx__docs\n"));
        let picked = p.select_deferred(&["MCP__ctx__*".into()], None).unwrap();
        assert_eq!(picked, vec!["mcp__ctx__docs"]);
        model.mark_loaded("mcp__ctx__docs");
        assert!(p.check_callable("mcp__ctx__docs", &model).is_ok());
        assert!(p.deferred_prompt(&model).is_none());
        assert!(p.tools_for(&model).contains(&"mcp__ctx__docs"));
        assert!(p.check_callable("mcp__ctx__docs", &Session::new("p", false)).is_ok());
        let err = p.select_deferred(&["read".into()], None).unwrap_err();
        assert!(err.contains("already available"), "{err}");
        assert!(
            p.check_callable("web_fetch", &model)
                .unwrap_err()
                .to_string()
                .contains("opt_in")
        );
    }

    #[test]
    fn every_profile_can_load_what_it_defers() {
        for profile in [Profile::Minimal, Profile::Messaging, Profile::Coding] {
            let p = PolicyBuilder::new()
                .profile(profile)
                .deferred(list("[tools] deferred", &["read"]))
                .build_from(tools());
            assert_eq!(p.deferred(), vec!["read"], "{profile:?}");
            assert_eq!(p.get("load_tools").unwrap().status, Status::In, "{profile:?}");
            // Nothing deferred: nothing to load.
            let p = PolicyBuilder::new().profile(profile).build_from(tools());
            assert_eq!(p.get("load_tools").unwrap().status, Status::Out, "{profile:?}");
        }
        // An explicit rule still removes it.
        let p = PolicyBuilder::new()
            .profile(Profile::Coding)
            .deferred(list("[tools] deferred", &["read"]))
            .disabled(list("[tools] disabled", &["load_tools"]))
            .build_from(tools());
        assert_eq!(p.get("load_tools").unwrap().status, Status::Out);
    }

    #[test]
    fn config_layers_and_unknown_names() {
        let table: toml::Table = toml::from_str(
            r#"
            profile = "coding"
            [tools]
            disabled = ["bash"]
            [agents.rev.tools]
            enabled = ["read"]
            "#,
        )
        .unwrap();
        let config = Config::from_table(table).unwrap();
        let opts = PolicyOptions {
            agent: Some("rev".into()),
            ..PolicyOptions::default()
        };
        let p = PolicyBuilder::from_config(&config, &opts).unwrap().build_from(tools());
        assert_eq!(p.eager(), vec!["read"]);
        assert_eq!(
            p.get("write").unwrap().rule,
            "[agents.rev.tools] enabled: no entry matches (read)"
        );
        let bad = PolicyOptions {
            agent: Some("revv".into()),
            ..PolicyOptions::default()
        };
        let err = PolicyBuilder::from_config(&config, &bad).unwrap_err().to_string();
        assert!(err.contains("unknown agent `revv` (did you mean `rev`?)"), "{err}");
    }

    #[test]
    fn an_agent_table_of_settings_names_the_agent_with_name() {
        let parse = |text: &str| Config::from_table(toml::from_str(text).unwrap()).unwrap();
        let config = parse("[agent]\nsystem_prompt = \"x\"\n");
        let p = PolicyBuilder::from_config(&config, &PolicyOptions::default()).unwrap();
        assert!(p.build_from(tools()).get("write").is_some());
        let config = parse("[agent]\nname = \"rev\"\n[agents.rev.tools]\nenabled = [\"read\"]\n");
        let p = PolicyBuilder::from_config(&config, &PolicyOptions::default()).unwrap();
        assert_eq!(p.build_from(tools()).eager(), vec!["read"]);
    }

    #[test]
    fn a_source_defers_its_tools_and_its_label_loads_them() {
        let mut registry = Registry::new();
        registry.register(tool("read", fs(true))).unwrap();
        registry
            .register_from(tool("ctx_docs", ToolTraits::default()), "remote:ctx")
            .unwrap();
        registry
            .register_from(tool("other_docs", ToolTraits::default()), "remote:other")
            .unwrap();
        registry.describe_source(
            "remote:ctx",
            SourceMeta {
                label: Some("ctx".into()),
                deferred_by: Some("servers.ctx.deferred = true".into()),
            },
        );
        let p = PolicyBuilder::new().build(&registry);
        let d = p.get("ctx_docs").unwrap();
        assert_eq!(
            (d.status, d.rule.as_str()),
            (Status::Deferred, "servers.ctx.deferred = true")
        );
        assert_eq!(p.get("other_docs").unwrap().status, Status::In);
        assert_eq!(p.select_deferred(&[], Some("CTX")).unwrap(), vec!["ctx_docs"]);
        assert!(p.select_deferred(&[], Some("other")).is_err());
        // Listing the tools the plain way, the source's word is not known.
        let p = PolicyBuilder::new().build_from(registry.list().map(|r| r.tool.clone()));
        assert_eq!(p.get("ctx_docs").unwrap().status, Status::In);
    }
}
