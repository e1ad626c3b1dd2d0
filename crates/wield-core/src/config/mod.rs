//! The configuration model: TOML layers merged in order (built-in defaults <
//! `~/.config/wield/config.toml` < `.wield/config.toml` < `--config FILE` <
//! `WIELD_SECTION__KEY` environment < command-line overrides), with unknown
//! keys refused by path and with a did-you-mean.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use thiserror::Error;

use crate::names::closest;

pub mod trust;

/// A known configuration key, relative to some table. Dotted; a `*` segment
/// matches any single key (a user-chosen name); a trailing `**` accepts any
/// content below (free-form tables such as environment maps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigKey(pub String);

impl ConfigKey {
    pub fn new(path: impl Into<String>) -> Self {
        Self(path.into())
    }
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("invalid TOML in {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("unknown config key `{path}` in {origin}{}", suggestion_text(.suggestion))]
    UnknownKey {
        path: String,
        origin: String,
        suggestion: Option<String>,
    },
    #[error("invalid value for `{path}`: {message}")]
    Invalid { path: String, message: String },
    #[error("`{path}` in {origin} is a table of settings ({examples}), not a value: set one of its keys")]
    NotATable {
        path: String,
        origin: String,
        /// Some of its keys, quoted.
        examples: String,
    },
    #[error(
        "refusing to load {path}: it lies in the workspace of the wield project {enclosing} (which has .wield/), where that project's sandboxed commands may write, so a command could have put it there or changed it. If you wrote it, read it, then run `wield -C {dir} config trust` to load it until it changes (or pass it with --config {path} each time)", dir = path.parent().and_then(Path::parent).unwrap_or(path).display()
    )]
    Plantable { path: PathBuf, enclosing: PathBuf },
}

fn suggestion_text(s: &Option<String>) -> String {
    match s {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

/// The tree of known keys.
#[derive(Clone, Debug, Default)]
pub struct KeyTree {
    children: BTreeMap<String, KeyTree>,
    wildcard: Option<Box<KeyTree>>,
    any: bool,
    /// Registered as a key itself, not only as the table of others: it may
    /// hold a value.
    key: bool,
}

impl KeyTree {
    /// The keys wield-core itself reads. Every other crate registers its
    /// own with [`register`](Self::register) (the composition root calls
    /// each crate's registration), so core holds no key of theirs.
    pub fn core() -> Self {
        let mut t = Self::default();
        t.register(CORE_KEYS);
        t
    }

    /// Register a crate's keys: dotted paths, where a `*` segment matches
    /// any single key (a user-chosen name) and a trailing `**` accepts any
    /// content below (free-form tables such as environment maps).
    pub fn register(&mut self, keys: &[&str]) {
        for k in keys {
            self.insert(k);
        }
    }

    pub fn insert(&mut self, path: &str) {
        let mut node = self;
        for part in path.split('.') {
            node = match part {
                "**" => {
                    node.any = true;
                    return;
                }
                "*" => node.wildcard.get_or_insert_with(Box::default),
                name => node.children.entry(name.to_owned()).or_default(),
            };
        }
        node.key = true;
    }

    /// Add a tool's own keys under `[tool_name]`.
    pub fn insert_under(&mut self, prefix: &str, keys: &[ConfigKey]) {
        for k in keys {
            self.insert(&format!("{prefix}.{}", k.0));
        }
    }

    fn child(&self, key: &str) -> Option<&KeyTree> {
        self.children.get(key).or(self.wildcard.as_deref())
    }

    fn is_leaf(&self) -> bool {
        self.children.is_empty() && self.wildcard.is_none()
    }

    /// Only a table of other keys (`bash`, `providers.NAME`): a value of
    /// its own would be ignored.
    fn is_section(&self) -> bool {
        !self.key && !self.any && !self.is_leaf()
    }

    /// The known key closest to `key`, a dotted path, part by part
    /// (`bsh.timout` → `bash.timeout`); `None` when `key` is known or some
    /// part of it is like no known one.
    pub fn closest_key(&self, key: &str) -> Option<String> {
        let mut candidate = key.to_owned();
        // Each round corrects one part, further down than the one before.
        for _ in 0..=key.split('.').count() {
            let mut table = toml::Table::new();
            set_path(&mut table, &candidate, toml::Value::Boolean(true)).ok()?;
            match self.check(&table, "") {
                Err(ConfigError::UnknownKey { path, suggestion, .. }) => {
                    let rest = candidate.strip_prefix(path.as_str())?.to_owned();
                    candidate = format!("{}{rest}", suggestion?);
                }
                _ => return (candidate != key).then_some(candidate),
            }
        }
        None
    }

    /// Check that every key of `table` is known.
    pub fn check(&self, table: &toml::Table, origin: &str) -> Result<(), ConfigError> {
        self.check_at(table, "", origin)
    }

    fn check_at(&self, table: &toml::Table, prefix: &str, origin: &str) -> Result<(), ConfigError> {
        if self.any {
            return Ok(());
        }
        for (key, value) in table {
            let path = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            let Some(node) = self.child(key) else {
                let suggestion = closest(key, self.children.keys().map(String::as_str)).map(|s| {
                    if prefix.is_empty() {
                        s.to_owned()
                    } else {
                        format!("{prefix}.{s}")
                    }
                });
                return Err(ConfigError::UnknownKey {
                    path,
                    origin: origin.to_owned(),
                    suggestion,
                });
            };
            match value {
                toml::Value::Table(sub) if !node.is_leaf() || node.any => node.check_at(sub, &path, origin)?,
                toml::Value::Table(_) => {}
                _ if node.is_section() => {
                    let mut examples: Vec<String> =
                        node.children.keys().take(3).map(|k| format!("`{path}.{k}`")).collect();
                    if node.children.len() > 3 || node.wildcard.is_some() {
                        examples.push("…".to_owned());
                    }
                    return Err(ConfigError::NotATable {
                        path,
                        origin: origin.to_owned(),
                        examples: examples.join(", "),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Every key the core and the built-in front-ends understand. Tools add
/// their own under `[tool_name]` through `Tool::config_keys`; other crates
/// register theirs through [`KeyTree::register`].
const CORE_KEYS: &[&str] = &[
    "profile",
    "agent",
    "mode",
    "task",
    "approval.auto_approve",
    "approval.confirm",
    "approval.ask_paths",
    "approval.deny",
    "approval.require",
    "approval.auto_approve_sandboxed",
    "approval.presets.*.approve",
    "approval.presets.*.deny",
    "tools.enabled",
    "tools.disabled",
    "tools.opt_in",
    "tools.deferred",
    "agents.*.tools.enabled",
    "agents.*.tools.disabled",
    "agents.*.description",
    "modes.*.tools.enabled",
    "modes.*.tools.disabled",
    "modes.*.description",
    "tasks.*.tools.enabled",
    "tasks.*.tools.disabled",
    "tasks.*.description",
    "hooks.*.event",
    "hooks.*.matcher",
    "hooks.*.files",
    "hooks.*.command",
    "hooks.*.timeout",
    "executor.max_parallel",
    "executor.timeout",
    "truncation.max_lines",
    "truncation.max_bytes",
    "audit.file",
];

/// The longest duration a number of seconds becomes: longer ones (a model
/// may send `1e300`) are cut to it rather than overflow.
pub const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A positive, finite number of seconds as a duration, at most [`LONGEST`];
/// `None` for zero, negative or non-finite numbers.
pub fn seconds(secs: f64) -> Option<Duration> {
    if !secs.is_finite() || secs <= 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).map_or(LONGEST, |d| d.min(LONGEST)))
}

/// Accepts `30`, `"30s"`, `"500ms"`, `"2m"`, `"1h"`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (num, unit) = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((t, "s"), |i| (&t[..i], t[i..].trim()));
    let n: f64 = num.parse().ok()?;
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "sec" | "secs" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    // Past what a Duration holds is not a duration (and must not panic).
    Duration::try_from_secs_f64(secs).ok()
}

/// Serde helper: a duration as seconds or a string with a unit.
pub fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Int(u64),
        Float(f64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Int(n) => Ok(Duration::from_secs(n)),
        Raw::Float(f) => {
            Duration::try_from_secs_f64(f).map_err(|_| serde::de::Error::custom(format!("invalid duration {f}")))
        }
        Raw::Text(s) => parse_duration(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid duration {s:?}: use e.g. 30, \"30s\", \"2m\""))),
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct PresetConfig {
    pub approve: Vec<String>,
    pub deny: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ApprovalConfig {
    pub auto_approve: Vec<String>,
    pub confirm: Vec<String>,
    pub deny: Vec<String>,
    /// When false, a catch-all resolver approves whatever nothing else decided.
    pub require: bool,
    pub auto_approve_sandboxed: bool,
    pub presets: BTreeMap<String, PresetConfig>,
}

impl ApprovalConfig {
    /// The Lua function file an `auto_approve` entry names, relative to the
    /// workspace: `FILE.lua` or `lua:FILE.lua` (not a `tool:pattern` rule
    /// whose pattern ends in `.lua`). Builds with Lua run it as a resolver;
    /// builds without refuse a configuration that names one.
    pub fn lua_file(entry: &str) -> Option<&str> {
        let path = entry.strip_prefix("lua:").unwrap_or(entry);
        (path.ends_with(".lua") && !path.contains(':')).then_some(path)
    }
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            auto_approve: vec!["$standard".into()],
            confirm: Vec::new(),
            deny: Vec::new(),
            require: true,
            auto_approve_sandboxed: true,
            presets: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct ToolsConfig {
    pub enabled: Vec<String>,
    pub disabled: Vec<String>,
    pub opt_in: Vec<String>,
    pub deferred: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ExecutorConfig {
    pub max_parallel: usize,
    #[serde(deserialize_with = "de_duration")]
    pub timeout: Duration,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            max_parallel: 8,
            timeout: Duration::from_secs(120),
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct TruncationConfig {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for TruncationConfig {
    fn default() -> Self {
        Self {
            max_lines: crate::truncate::DEFAULT_MAX_LINES,
            max_bytes: crate::truncate::DEFAULT_MAX_BYTES,
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct AuditConfig {
    pub file: Option<PathBuf>,
}

/// The merged configuration: typed core sections plus the raw table for
/// everything else (tool tables, sandbox, hooks, MCP servers).
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub table: toml::Table,
    pub approval: ApprovalConfig,
    pub tools: ToolsConfig,
    pub executor: ExecutorConfig,
    pub truncation: TruncationConfig,
    pub audit: AuditConfig,
    /// Where each layer came from, lowest first.
    pub origins: Vec<String>,
    /// Each loaded layer's own table with where it came from, lowest first:
    /// for settings that add up across layers (lists of definitions, which
    /// the merge would otherwise replace) and whose errors name their file.
    pub layers: Vec<(String, toml::Table)>,
    /// wield's global configuration directory for this configuration (see
    /// [`GlobalDir`]): where its global file, tools, skills, memory and
    /// approvals are. `None` when there is none.
    pub global_dir: Option<PathBuf>,
}

impl Config {
    /// Build the typed view of a merged table.
    pub fn from_table(table: toml::Table) -> Result<Self, ConfigError> {
        Ok(Self {
            approval: section(&table, "approval")?,
            tools: section(&table, "tools")?,
            executor: section(&table, "executor")?,
            truncation: section(&table, "truncation")?,
            audit: section(&table, "audit")?,
            table,
            origins: Vec::new(),
            layers: Vec::new(),
            global_dir: None,
        })
    }

    /// A table by dotted path (a tool's own `[name]` table), empty if absent.
    pub fn table_at(&self, path: &str) -> toml::Table {
        let mut node = &self.table;
        for part in path.split('.') {
            match node.get(part) {
                Some(toml::Value::Table(t)) => node = t,
                _ => return toml::Table::new(),
            }
        }
        node.clone()
    }

    /// A typed section by dotted path, its defaults when absent.
    pub fn get<T: for<'de> Deserialize<'de> + Default>(&self, path: &str) -> Result<T, ConfigError> {
        let t = self.table_at(path);
        if t.is_empty() {
            return Ok(T::default());
        }
        toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid {
                path: path.to_owned(),
                message: e.message().to_owned(),
            })
    }

    /// The value at a dotted path in each layer that sets it, with the
    /// layer's origin, lowest first (see [`layers`](Self::layers)).
    pub fn layered_values(&self, path: &str) -> Vec<(&str, &toml::Value)> {
        self.layers
            .iter()
            .filter_map(|(origin, table)| value_in(table, path).map(|v| (origin.as_str(), v)))
            .collect()
    }

    /// A single value by dotted path.
    pub fn value(&self, path: &str) -> Option<&toml::Value> {
        value_in(&self.table, path)
    }
}

fn value_in<'a>(table: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let mut parts = path.split('.').peekable();
    let mut node = table;
    while let Some(part) = parts.next() {
        let v = node.get(part)?;
        if parts.peek().is_none() {
            return Some(v);
        }
        node = v.as_table()?;
    }
    None
}

fn section<T: for<'de> Deserialize<'de> + Default>(table: &toml::Table, name: &str) -> Result<T, ConfigError> {
    match table.get(name) {
        None => Ok(T::default()),
        Some(v) => v.clone().try_into().map_err(|e: toml::de::Error| ConfigError::Invalid {
            path: name.to_owned(),
            message: e.message().to_owned(),
        }),
    }
}

/// Deep-merge `over` into `base`: tables merge, everything else replaces.
pub fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Collects the layers and merges them.
#[derive(Clone, Debug, Default)]
pub struct ConfigLoader {
    /// Files with whether they must exist.
    files: Vec<(PathBuf, bool)>,
    /// The enclosing wield project of the workspace, if any (see
    /// [`enclosing_project`]): the project file is refused then.
    nested_in: Option<PathBuf>,
    env: Vec<(String, String)>,
    overrides: Vec<(String, toml::Table)>,
    /// The global configuration directory, for the trust list and the
    /// loaded [`Config`].
    global_dir: Option<PathBuf>,
}

impl ConfigLoader {
    pub fn new() -> Self {
        Self::default()
    }

    /// The standard files for a workspace: `config.toml` in the global
    /// configuration directory `global` (when there is one; see
    /// [`GlobalDir`]) then the project's `.wield/config.toml`.
    pub fn standard_files(mut self, workspace: &Path, global: Option<&Path>) -> Self {
        if let Some(dir) = global {
            self.files.push((dir.join("config.toml"), false));
            self.global_dir = Some(dir.to_path_buf());
        }
        self.files.push((workspace.join(".wield").join("config.toml"), false));
        self.nested_in = enclosing_project(workspace);
        self
    }

    /// An explicit file (`--config FILE`): it must exist.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.files.push((path.into(), true));
        self
    }

    /// `WIELD_SECTION__KEY=value` variables (two underscores between levels).
    pub fn env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = vars.into_iter().collect();
        self
    }

    /// A layer of command-line overrides.
    pub fn overrides(mut self, origin: &str, table: toml::Table) -> Self {
        self.overrides.push((origin.to_owned(), table));
        self
    }

    pub fn load(&self, known: &KeyTree) -> Result<Config, ConfigError> {
        let mut merged = toml::Table::new();
        let mut origins = vec!["defaults".to_owned()];
        let mut layers = Vec::new();
        for (path, required) in &self.files {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => continue,
                Err(source) => {
                    return Err(ConfigError::Io {
                        path: path.clone(),
                        source,
                    });
                }
            };
            // The text checked is the text parsed.
            let explicit = || self.files.iter().any(|(p, req)| *req && p == path);
            if let Some(enclosing) = &self.nested_in
                && !required
                && path.ends_with(Path::new(".wield").join("config.toml"))
                && !explicit()
                && !trust::is_trusted(self.global_dir.as_deref(), path, text.as_bytes())
            {
                return Err(ConfigError::Plantable {
                    path: path.clone(),
                    enclosing: enclosing.clone(),
                });
            }
            let origin = path.display().to_string();
            let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
                origin: origin.clone(),
                message: e.to_string(),
            })?;
            known.check(&table, &origin)?;
            layers.push((origin.clone(), table.clone()));
            merge(&mut merged, table);
            origins.push(origin);
        }
        let env_table = env_layer(&self.env)?;
        if !env_table.is_empty() {
            known.check(&env_table, "the environment")?;
            layers.push(("the environment".to_owned(), env_table.clone()));
            merge(&mut merged, env_table);
            origins.push("environment".into());
        }
        for (origin, table) in &self.overrides {
            known.check(table, origin)?;
            layers.push((origin.clone(), table.clone()));
            merge(&mut merged, table.clone());
            origins.push(origin.clone());
        }
        let mut config = Config::from_table(merged)?;
        config.origins = origins;
        config.layers = layers;
        config.global_dir = self.global_dir.clone();
        Ok(config)
    }
}

/// The nearest directory above `workspace` that is a wield project (holds
/// a `.wield` directory). Its sandboxed commands may write anywhere in its
/// workspace but its own `.wield/` and `.git/` (and wield's global config
/// directory): a `.wield/config.toml` of a project nested in it could be
/// theirs, so wield does not load one on its own (an explicit `--config`
/// does). The global config is loaded: every sandbox keeps its directory
/// read-only, renames of its ancestors included.
pub fn enclosing_project(workspace: &Path) -> Option<PathBuf> {
    workspace
        .ancestors()
        .skip(1)
        .find(|a| a.join(".wield").symlink_metadata().is_ok_and(|m| m.is_dir()))
        .map(Path::to_path_buf)
}

/// Where one runtime's global configuration directory is. Each runtime
/// carries its own, so that two loaded in one process (a test's, an
/// embedder's) need not share the process's `HOME`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GlobalDir {
    /// `wield` in `$XDG_CONFIG_HOME`, else `~/.config/wield`, as the
    /// process's environment says when the runtime loads.
    #[default]
    FromEnvironment,
    /// This directory.
    At(PathBuf),
    /// None: no global file, tools, skills, memory or approvals.
    Nowhere,
}

impl GlobalDir {
    /// The directory, if there is one.
    pub fn resolve(&self) -> Option<PathBuf> {
        match self {
            Self::FromEnvironment => global_config_dir(),
            Self::At(dir) => Some(dir.clone()),
            Self::Nowhere => None,
        }
    }
}

/// wield's global configuration directory as the process's environment
/// says: `wield` in `$XDG_CONFIG_HOME`, else `~/.config/wield`. A library
/// takes the directory from its runtime (see [`GlobalDir`]); this is for
/// the binary.
pub fn global_config_dir() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(x).join("wield"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".config").join("wield"))
}

/// Parse a scalar the way TOML would (`10`, `true`, `["a"]`), else a string.
pub fn parse_scalar(text: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_owned()))
}

/// Set a dotted key in a table, creating intermediate tables.
pub fn set_path(table: &mut toml::Table, path: &str, value: toml::Value) -> Result<(), ConfigError> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut node = table;
    for part in &parts[..parts.len().saturating_sub(1)] {
        let entry = node
            .entry((*part).to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = match entry {
            toml::Value::Table(t) => t,
            _ => {
                return Err(ConfigError::Invalid {
                    path: path.to_owned(),
                    message: format!("`{part}` is not a table"),
                });
            }
        };
    }
    if let Some(last) = parts.last() {
        node.insert((*last).to_owned(), value);
    }
    Ok(())
}

fn env_layer(vars: &[(String, String)]) -> Result<toml::Table, ConfigError> {
    let mut table = toml::Table::new();
    for (name, value) in vars {
        let Some(rest) = name.strip_prefix("WIELD_") else {
            continue;
        };
        if !rest.contains("__") {
            continue;
        }
        let path = rest
            .split("__")
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>()
            .join(".");
        set_path(&mut table, &path, parse_scalar(value))?;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_files_in_auto_approve_are_told_from_rules() {
        assert_eq!(ApprovalConfig::lua_file("approve.lua"), Some("approve.lua"));
        assert_eq!(ApprovalConfig::lua_file("lua:policy/a.lua"), Some("policy/a.lua"));
        assert_eq!(ApprovalConfig::lua_file("read"), None);
        assert_eq!(ApprovalConfig::lua_file("bash:cat *.lua"), None);
        assert_eq!(ApprovalConfig::lua_file("lua:x.py"), None);
    }

    #[test]
    fn unknown_key_names_path_and_suggests() {
        let t: toml::Table = toml::from_str("[approval]\nauto_aprove = []").unwrap();
        let err = KeyTree::core().check(&t, "x.toml").unwrap_err().to_string();
        assert!(err.contains("`approval.auto_aprove`"), "{err}");
        assert!(err.contains("did you mean `approval.auto_approve`"), "{err}");
    }

    #[test]
    fn wildcards_and_free_form_tables() {
        let mut known = KeyTree::core();
        known.register(&["servers.*.command", "servers.*.env.**"]);
        let t: toml::Table = toml::from_str(
            "[servers.x]\ncommand='a'\n[servers.x.env]\nANY='1'\n[approval.presets.'$mine']\napprove=['a']",
        )
        .unwrap();
        known.check(&t, "x").unwrap();
        let bad: toml::Table = toml::from_str("[servers.x]\ncomand='a'").unwrap();
        let err = known.check(&bad, "x").unwrap_err().to_string();
        assert!(err.contains("`servers.x.comand`"), "{err}");
        assert!(err.contains("did you mean `servers.x.command`"), "{err}");
    }

    #[test]
    fn the_closest_key_is_corrected_part_by_part() {
        let mut known = KeyTree::core();
        known.register(&["bash.timeout", "bash.max_timeout", "servers.*.command"]);
        assert_eq!(known.closest_key("bsh.timout").as_deref(), Some("bash.timeout"));
        assert_eq!(
            known.closest_key("servers.x.comand").as_deref(),
            Some("servers.x.command")
        );
        assert_eq!(known.closest_key("bash.timeout"), None);
        assert_eq!(known.closest_key("zzzzz.qqqq"), None);
    }

    /// Regression: `bash = 1` (a value where a table of settings belongs)
    /// was taken and ignored.
    #[test]
    fn a_value_in_place_of_a_table_of_settings_is_refused() {
        let mut known = KeyTree::core();
        known.register(&["bash.timeout", "servers.*.command", "free.**", "both", "both.more"]);
        for bad in ["bash = 1", "servers.x = 'a'", "approval = []"] {
            let t: toml::Table = toml::from_str(bad).unwrap();
            let err = known.check(&t, "x.toml").unwrap_err().to_string();
            assert!(err.contains("is a table of settings"), "{bad}: {err}");
        }
        let err = known.check(&toml::from_str("bash = 1").unwrap(), "x.toml").unwrap_err();
        assert!(err.to_string().contains("(`bash.timeout`)"), "{err}");
        for good in ["free = 1", "both = 1", "bash.timeout = 1"] {
            known.check(&toml::from_str(good).unwrap(), "x.toml").unwrap();
        }
    }

    #[test]
    fn core_knows_only_its_own_keys_until_a_crate_registers_more() {
        let t: toml::Table = toml::from_str("[other]\nsetting = 1").unwrap();
        assert!(KeyTree::core().check(&t, "x").is_err());
        let mut known = KeyTree::core();
        known.register(&["other.setting"]);
        known.check(&t, "x").unwrap();
    }

    #[test]
    fn each_layer_keeps_its_own_lists_with_its_origin() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
        std::fs::write(&a, "[[tools.command]]\nname = \"one\"\n").unwrap();
        std::fs::write(&b, "[[tools.command]]\nname = \"two\"\n").unwrap();
        let mut known = KeyTree::core();
        known.register(&["tools.command"]);
        let config = ConfigLoader::new().file(&a).file(&b).load(&known).unwrap();
        // The merge keeps the higher list only; the layers keep both.
        let merged = config.value("tools.command").and_then(toml::Value::as_array).unwrap();
        assert_eq!(merged.len(), 1);
        let layered = config.layered_values("tools.command");
        let origins: Vec<&str> = layered.iter().map(|(o, _)| *o).collect();
        assert_eq!(origins, [a.display().to_string(), b.display().to_string()]);
    }

    #[test]
    fn env_layer_maps_double_underscores() {
        let t = env_layer(&[("WIELD_EXECUTOR__MAX_PARALLEL".into(), "3".into())]).unwrap();
        let c = Config::from_table(t).unwrap();
        assert_eq!(c.executor.max_parallel, 3);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(seconds(1.5), Some(Duration::from_millis(1500)));
        assert_eq!(seconds(1e300), Some(LONGEST));
        assert_eq!(seconds(f64::INFINITY), None);
        assert_eq!(seconds(-1.0), None);
        assert_eq!(seconds(0.0), None);
        // Too long for a Duration, or not a number: refused, never a panic.
        assert_eq!(parse_duration("99999999999999999999999999h"), None);
        assert_eq!(parse_duration("-1s"), None);
        #[derive(Debug, Deserialize)]
        struct T {
            #[serde(deserialize_with = "de_duration")]
            d: Duration,
        }
        assert!(toml::from_str::<T>("d = 1e300").is_err());
        assert!(toml::from_str::<T>("d = -2.5").is_err());
        assert!(toml::from_str::<T>("d = nan").is_err());
        assert_eq!(toml::from_str::<T>("d = 1.5").unwrap().d, Duration::from_millis(1500));
    }
}
