//! What a running tool can see: [`Context`], the per-session [`Session`] state
//! and the typed [`Services`] map through which front-ends hand shared objects
//! (the file confinement, command settings, …) to tools.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::events::{Event, EventSink, Stream};
use crate::truncate::{self, Limits, SavedOutputs, Truncated};

/// A typed map of shared objects, keyed by type.
#[derive(Default, Clone)]
pub struct Services {
    map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Services {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert<T: Any + Send + Sync>(&mut self, value: Arc<T>) {
        self.map.insert(TypeId::of::<T>(), value);
    }

    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }
}

/// State that lives as long as one session: one agent run, one `.chat` step
/// chain, one MCP connection, or one `wield call`.
pub struct Session {
    id: String,
    /// Model-honesty checks such as read-before-write apply only when a model
    /// drives the session; `wield call` is driven by a person.
    model_driven: bool,
    loaded_tools: Mutex<HashSet<String>>,
    session_rules: Mutex<Vec<String>>,
    extensions: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another call panicked mid-update of a plain
    // set; the data is still usable, so recover it rather than propagate.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Who chooses a session's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// A model: the checks that keep a model honest (a file read before it
    /// is written, say) apply.
    Model,
    /// A person calling tools directly (`wield call`, a batch file).
    Person,
}

impl Session {
    /// A session whose calls `driver` chooses.
    pub fn driven_by(id: impl Into<String>, driver: Driver) -> Self {
        Self::new(id, driver == Driver::Model)
    }

    pub fn new(id: impl Into<String>, model_driven: bool) -> Self {
        Self {
            id: id.into(),
            model_driven,
            loaded_tools: Mutex::new(HashSet::new()),
            session_rules: Mutex::new(Vec::new()),
            extensions: Mutex::new(HashMap::new()),
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn model_driven(&self) -> bool {
        self.model_driven
    }

    pub fn mark_loaded(&self, tool: &str) {
        lock(&self.loaded_tools).insert(tool.to_owned());
    }

    pub fn is_loaded(&self, tool: &str) -> bool {
        lock(&self.loaded_tools).contains(tool)
    }

    pub fn loaded_tools(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.loaded_tools).iter().cloned().collect();
        v.sort();
        v
    }

    /// Approval patterns granted "for this session".
    pub fn add_rule(&self, pattern: impl Into<String>) {
        let pattern = pattern.into();
        let mut rules = lock(&self.session_rules);
        if !rules.contains(&pattern) {
            rules.push(pattern);
        }
    }

    pub fn rules(&self) -> Vec<String> {
        lock(&self.session_rules).clone()
    }

    /// Session-scoped state owned by a tool family, keyed by its type (the
    /// files read, a todo list, background processes): created on first use,
    /// dropped with the session. Core keeps none of it itself.
    pub fn extension<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        let mut map = lock(&self.extensions);
        if let Some(existing) = map
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
        {
            return existing;
        }
        let value = Arc::new(make());
        map.insert(TypeId::of::<T>(), Arc::clone(&value) as Arc<dyn Any + Send + Sync>);
        value
    }

    pub fn get_extension<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        lock(&self.extensions)
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("model_driven", &self.model_driven)
            .finish_non_exhaustive()
    }
}

/// Values one stage of a call leaves for a later stage of the same call
/// (the path guard's resolutions, for the tool), dropped with the call.
#[derive(Clone, Default)]
pub struct CallScratch(Arc<Mutex<Vec<Box<dyn Any + Send + Sync>>>>);

impl CallScratch {
    pub fn put<T: Any + Send + Sync>(&self, value: T) {
        self.lock().push(Box::new(value));
    }

    /// Remove and return the first `T` that `matches` accepts.
    pub fn take<T: Any + Send + Sync>(&self, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        let mut items = self.lock();
        let at = items
            .iter()
            .position(|v| v.downcast_ref::<T>().is_some_and(&mut matches))?;
        items.swap_remove(at).downcast::<T>().ok().map(|b| *b)
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Box<dyn Any + Send + Sync>>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl std::fmt::Debug for CallScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallScratch")
            .field("items", &self.lock().len())
            .finish()
    }
}

/// Everything one call can see while it runs.
#[derive(Clone)]
pub struct Context {
    pub call_id: String,
    pub tool: String,
    /// The workspace: relative paths resolve against it.
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub cancel: CancellationToken,
    pub events: EventSink,
    /// The tool's own config table (`[name]`), a read-only copy.
    pub config: Arc<toml::Table>,
    pub limits: Limits,
    pub session: Arc<Session>,
    pub services: Arc<Services>,
    /// What earlier stages of this call left for the tool.
    pub scratch: CallScratch,
}

impl Context {
    /// A context for calling a tool outside an executor (tests, embedding).
    pub fn detached(cwd: impl Into<PathBuf>) -> Self {
        Self {
            call_id: "detached".into(),
            tool: String::new(),
            cwd: cwd.into(),
            timeout: Duration::from_secs(120),
            cancel: CancellationToken::new(),
            events: EventSink::default(),
            config: Arc::new(toml::Table::new()),
            limits: Limits::default(),
            session: Arc::new(Session::new("detached", true)),
            services: Arc::new(Services::new()),
            scratch: CallScratch::default(),
        }
    }

    pub fn service<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.services.get::<T>()
    }

    /// A typed value from the tool's config table, `None` when absent or of
    /// the wrong type.
    pub fn config_value<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let mut node = toml::Value::Table((*self.config).clone());
        for part in key.split('.') {
            node = node.as_table()?.get(part)?.clone();
        }
        node.try_into().ok()
    }

    /// Stream a piece of output to listeners (terminal, MCP progress).
    pub fn emit_output(&self, stream: Stream, text: &str) {
        if self.events.has_listeners() {
            self.events.emit(&Event::OutputDelta {
                call_id: self.call_id.clone(),
                tool: self.tool.clone(),
                stream,
                text: text.to_owned(),
            });
        }
    }

    /// Tell listeners how far the call has got (MCP progress).
    pub fn emit_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if self.events.has_listeners() {
            self.events.emit(&Event::Progress {
                call_id: self.call_id.clone(),
                tool: self.tool.clone(),
                progress,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Tell listeners of something the call did that a person should know
    /// of (see [`Event::Notice`]).
    pub fn emit_notice(&self, kind: &str, message: &str) {
        if self.events.has_listeners() {
            self.events.emit(&Event::Notice {
                call_id: self.call_id.clone(),
                tool: self.tool.clone(),
                kind: kind.to_owned(),
                message: message.to_owned(),
            });
        }
    }

    /// Where this call's cut outputs are saved: the runtime's directory,
    /// from the services (a runtime puts its workspace's `.wield/outputs`
    /// there), else the temp dir.
    pub fn saved_outputs(&self) -> Arc<SavedOutputs> {
        self.services.get::<SavedOutputs>().unwrap_or_default()
    }

    /// Keep the first lines (reads), saving the full text when cut (see
    /// [`Context::saved_outputs`]).
    pub fn truncate_head(&self, text: &str) -> Truncated {
        truncate::truncate_head(
            text,
            self.limits.max_lines,
            self.limits.max_bytes,
            &self.saved_outputs(),
        )
    }

    /// Keep the last lines (streams), saving the full text when cut.
    pub fn truncate_tail(&self, text: &str) -> Truncated {
        truncate::truncate_tail(
            text,
            self.limits.max_lines,
            self.limits.max_bytes,
            &self.saved_outputs(),
        )
    }

    /// Keep head and tail lines (command output), saving the full text when cut.
    pub fn truncate_middle(&self, text: &str, head: usize, tail: usize) -> Truncated {
        truncate::truncate_middle(text, head, tail, self.limits.max_bytes, &self.saved_outputs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_values_are_taken_once_by_type_and_match() {
        let ctx = Context::detached("/");
        let copy = ctx.clone();
        ctx.scratch.put(("a".to_owned(), 1));
        ctx.scratch.put(("b".to_owned(), 2));
        ctx.scratch.put(7u8);
        // Clones of a call's context share its scratch.
        assert_eq!(
            copy.scratch.take::<(String, i32)>(|(k, _)| k == "b"),
            Some(("b".into(), 2))
        );
        assert_eq!(ctx.scratch.take::<(String, i32)>(|(k, _)| k == "b"), None);
        assert_eq!(ctx.scratch.take::<u16>(|_| true), None);
        assert_eq!(ctx.scratch.take::<u8>(|_| true), Some(7));
        assert_eq!(ctx.scratch.take::<(String, i32)>(|_| true), Some(("a".into(), 1)));
        // Another call starts empty.
        assert_eq!(Context::detached("/").scratch.take::<u8>(|_| true), None);
    }
}
