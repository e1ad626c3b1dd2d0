//! The tool registry: named tools with cached validators, provider-safe API
//! names, and async sources that may register tools later (MCP servers).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use crate::names::api_name;
use crate::schema::{InputValidator, check_strict};
use crate::tool::ToolRef;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RegistryError {
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    #[error("tool `{name}` maps to API name `{api}`, which tool `{other}` already uses; rename one of them")]
    ApiCollision { name: String, other: String, api: String },
    #[error("tool `{name}` has an invalid input schema: {message}")]
    InvalidSchema { name: String, message: String },
    #[error("tool `{name}` is marked strict but its schema breaks strict mode: {message}")]
    Strict { name: String, message: String },
    #[error("tool names must not be empty")]
    EmptyName,
}

/// A registered tool with what the executor needs precomputed.
pub struct Registered {
    pub tool: ToolRef,
    pub api_name: String,
    pub validator: InputValidator,
    /// Where the tool came from: `builtin`, or an async source's name.
    pub source: String,
}

/// What a source says about the tools it registers, for the tool policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMeta {
    /// A short name the model selects the source's tools by (an MCP
    /// server's name, for `load_tools`'s `server`).
    pub label: Option<String>,
    /// When the source's tools are deferred: the setting that says so
    /// (e.g. the config key), shown as the rule that deferred them.
    pub deferred_by: Option<String>,
}

/// A warning from an async source that failed or timed out: its tools are absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceWarning {
    pub source: String,
    pub message: String,
}

/// Handed to an async source to register its tools.
#[derive(Clone)]
pub struct SourceRegister {
    tx: mpsc::UnboundedSender<ToolRef>,
}

impl SourceRegister {
    pub fn register(&self, tool: ToolRef) {
        // The receiver only disappears after the source timed out; late tools
        // are dropped on purpose.
        let _ = self.tx.send(tool);
    }
}

type DoneSender = oneshot::Sender<Result<(), String>>;

/// Handed to an async source to say it is finished. Idempotent: only the
/// first call counts.
#[derive(Clone)]
pub struct SourceDone {
    tx: Arc<Mutex<Option<DoneSender>>>,
}

impl SourceDone {
    pub fn done(&self, result: Result<(), String>) {
        let sender = self.tx.lock().ok().and_then(|mut g| g.take());
        if let Some(tx) = sender {
            let _ = tx.send(result);
        }
    }
}

/// An async source: called once with `(register, done)`.
pub type SourceFn = Box<dyn FnOnce(SourceRegister, SourceDone) + Send>;

struct PendingSource {
    name: String,
    timeout: Duration,
    start: SourceFn,
}

/// Default time an async source gets before it is reported and skipped.
pub const DEFAULT_SOURCE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<Registered>>,
    by_api: HashMap<String, String>,
    // Behind a mutex only so the registry is Sync: sources are `Send` closures.
    pending: Mutex<Vec<PendingSource>>,
    warnings: Vec<SourceWarning>,
    sources: BTreeMap<String, SourceMeta>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: ToolRef) -> Result<(), RegistryError> {
        self.register_from(tool, "builtin")
    }

    pub fn register_from(&mut self, tool: ToolRef, source: &str) -> Result<(), RegistryError> {
        let spec = tool.spec();
        let name = spec.name.clone();
        if name.is_empty() {
            return Err(RegistryError::EmptyName);
        }
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let api = api_name(&name);
        if let Some(other) = self.by_api.get(&api) {
            return Err(RegistryError::ApiCollision {
                name,
                other: other.clone(),
                api,
            });
        }
        if spec.strict {
            check_strict(&spec.input_schema).map_err(|message| RegistryError::Strict {
                name: name.clone(),
                message,
            })?;
        }
        let validator = InputValidator::new(&spec.input_schema).map_err(|message| RegistryError::InvalidSchema {
            name: name.clone(),
            message,
        })?;
        self.by_api.insert(api.clone(), name.clone());
        self.tools.insert(
            name,
            Arc::new(Registered {
                tool,
                api_name: api,
                validator,
                source: source.to_owned(),
            }),
        );
        Ok(())
    }

    /// Register several; stops at the first error (earlier ones stay).
    pub fn register_many(&mut self, tools: impl IntoIterator<Item = ToolRef>) -> Result<(), RegistryError> {
        for t in tools {
            self.register(t)?;
        }
        Ok(())
    }

    pub fn unregister(&mut self, name: &str) -> Option<ToolRef> {
        let entry = self.tools.remove(name)?;
        self.by_api.remove(&entry.api_name);
        Some(Arc::clone(&entry.tool))
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.tools.get(name)
    }

    pub fn get_by_api_name(&self, api: &str) -> Option<&Arc<Registered>> {
        self.by_api.get(api).and_then(|n| self.tools.get(n))
    }

    /// By name, else by API name.
    pub fn lookup(&self, name: &str) -> Option<&Arc<Registered>> {
        self.get(name).or_else(|| self.get_by_api_name(name))
    }

    pub fn has(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// All tools, sorted by name.
    pub fn list(&self) -> impl Iterator<Item = &Arc<Registered>> {
        self.tools.values()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Describe source `source` (a tool's [`Registered::source`]).
    pub fn describe_source(&mut self, source: impl Into<String>, meta: SourceMeta) {
        self.sources.insert(source.into(), meta);
    }

    /// What source `source` said about its tools, if it said anything.
    pub fn source_meta(&self, source: &str) -> Option<&SourceMeta> {
        self.sources.get(source)
    }

    /// Queue an async source; it starts in [`Registry::load_sources`].
    pub fn add_source(&mut self, name: impl Into<String>, timeout: Duration, start: SourceFn) {
        let source = PendingSource {
            name: name.into(),
            timeout,
            start,
        };
        self.pending
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(source);
    }

    /// Start every queued source at once and wait for each up to its own
    /// timeout. A source that errors, times out or never calls `done` becomes
    /// a warning and none of its tools are registered.
    pub async fn load_sources(&mut self) -> Vec<SourceWarning> {
        let pending = std::mem::take(
            self.pending
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let mut waits = Vec::with_capacity(pending.len());
        for src in pending {
            let (tool_tx, tool_rx) = mpsc::unbounded_channel();
            let (done_tx, done_rx) = oneshot::channel();
            let register = SourceRegister { tx: tool_tx };
            let done = SourceDone {
                tx: Arc::new(Mutex::new(Some(done_tx))),
            };
            (src.start)(register, done);
            let name = src.name;
            let timeout = src.timeout;
            waits.push(async move {
                let outcome = match tokio::time::timeout(timeout, done_rx).await {
                    Ok(Ok(Ok(()))) => Ok(()),
                    Ok(Ok(Err(e))) => Err(e),
                    Ok(Err(_)) => Err("the source ended without reporting done".to_owned()),
                    Err(_) => Err(format!("timed out after {}s", timeout.as_secs_f64())),
                };
                (name, outcome, tool_rx)
            });
        }
        let mut warnings = Vec::new();
        for (name, outcome, mut rx) in futures::future::join_all(waits).await {
            match outcome {
                Ok(()) => {
                    while let Ok(tool) = rx.try_recv() {
                        if let Err(e) = self.register_from(tool, &name) {
                            warnings.push(SourceWarning {
                                source: name.clone(),
                                message: e.to_string(),
                            });
                        }
                    }
                }
                Err(message) => warnings.push(SourceWarning { source: name, message }),
            }
        }
        self.warnings.extend(warnings.iter().cloned());
        warnings
    }

    /// Warnings from every source loaded so far.
    pub fn warnings(&self) -> &[SourceWarning] {
        &self.warnings
    }

    /// Record that source `source` is missing its tools, and why (a
    /// registry rebuilt from sources loaded elsewhere).
    pub fn warn(&mut self, source: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(SourceWarning {
            source: source.into(),
            message: message.into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::StaticTool;
    use serde_json::json;

    fn tool(name: &str) -> ToolRef {
        Arc::new(StaticTool::new(name, json!({"type":"object"})))
    }

    #[test]
    fn duplicates_and_collisions_are_errors() {
        let mut r = Registry::new();
        r.register(tool("file.read")).unwrap();
        assert_eq!(
            r.register(tool("file.read")),
            Err(RegistryError::Duplicate("file.read".into()))
        );
        assert!(matches!(
            r.register(tool("file_read")),
            Err(RegistryError::ApiCollision { .. })
        ));
        assert_eq!(r.get_by_api_name("file_read").unwrap().tool.spec().name, "file.read");
        r.register(tool("srv:t")).unwrap();
        assert!(r.get_by_api_name("srv__t").is_some());
        assert!(r.unregister("file.read").is_some());
        assert!(!r.has("file.read"));
        r.register(tool("file_read")).unwrap();
    }

    #[test]
    fn strict_tools_are_checked() {
        let mut r = Registry::new();
        let t = StaticTool::new("s", json!({"type":"object","properties":{"a":{"type":"string"}}})).strict();
        let err = r.register(Arc::new(t)).unwrap_err();
        assert!(matches!(err, RegistryError::Strict { .. }), "{err}");
    }

    #[tokio::test]
    async fn sources_time_out_or_fail_without_blocking() {
        let mut r = Registry::new();
        r.add_source(
            "good",
            Duration::from_secs(5),
            Box::new(|reg, done| {
                tokio::spawn(async move {
                    reg.register(tool("from_good"));
                    done.done(Ok(()));
                    done.done(Err("ignored second call".into()));
                });
            }),
        );
        r.add_source(
            "slow",
            Duration::from_millis(50),
            Box::new(|_reg, done| {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    done.done(Ok(()));
                });
            }),
        );
        r.add_source(
            "broken",
            Duration::from_secs(5),
            Box::new(|reg, done| {
                reg.register(tool("from_broken"));
                done.done(Err("cannot start".into()));
            }),
        );
        let start = std::time::Instant::now();
        let warnings = r.load_sources().await;
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(r.has("from_good"));
        assert!(!r.has("from_broken"));
        let names: Vec<&str> = warnings.iter().map(|w| w.source.as_str()).collect();
        assert_eq!(names, ["slow", "broken"]);
        assert!(warnings[0].message.contains("timed out"));
    }
}
