//! [`LuaTool`]: a tool defined by a Lua table in Flemma's shape (`name`,
//! `description`, `input_schema`, `format_preview(input, width)`,
//! `execute(input, ctx)` returning `{ success, output | error }`).

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mlua::{Function, Table, Value};
use serde_json::json;
use wield_core::{Context, HANDLES_TIMEOUT, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits, one_line};

use crate::convert::{to_json, to_lua};
use crate::error::{LuaError, message};
use crate::sandbox::{Limits, Sandbox, Stop};

/// One Lua state (a file's), the lock that lets one call run in it at a
/// time (so each call has its own instruction budget and deadline), and the
/// thread its calls run on.
///
/// Calls run on a thread of their own, never on an async worker: a call
/// computing (or stuck in a C function that does not stop at the budget)
/// holds that thread alone, and the async side answers at the call's
/// timeout or cancellation whatever the thread does, so wield can still
/// answer, and end on SIGTERM.
pub struct Script {
    pub(crate) sandbox: Sandbox,
    gate: std::sync::Mutex<()>,
    /// Where the script came from, for messages.
    pub(crate) origin: String,
    /// The way to the state's thread, started by the first call.
    worker: std::sync::Mutex<Option<std::sync::mpsc::Sender<Job>>>,
}

/// Work for a state's thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

impl Script {
    pub fn new(sandbox: Sandbox, origin: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            sandbox,
            gate: std::sync::Mutex::new(()),
            origin: origin.into(),
            worker: std::sync::Mutex::new(None),
        })
    }

    /// Run `job` on the state's thread, after the jobs before it, holding
    /// the state's lock. The thread ends when the script is dropped.
    pub(crate) fn on_thread(self: &Arc<Self>, job: Job) -> Result<(), String> {
        let mut worker = self.worker.lock().unwrap_or_else(PoisonError::into_inner);
        if worker.is_none() {
            let (tx, rx) = std::sync::mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("wield-lua".into())
                .spawn(move || {
                    for job in rx {
                        job();
                    }
                })
                .map_err(|e| format!("{}: cannot start the thread Lua runs on: {e}", self.origin))?;
            *worker = Some(tx);
        }
        let script = Arc::clone(self);
        let job: Job = Box::new(move || {
            let _one = script.gate.lock().unwrap_or_else(PoisonError::into_inner);
            job();
        });
        worker
            .as_ref()
            .map(|tx| tx.send(job))
            .transpose()
            .map_err(|_| format!("{}: the thread Lua runs on has ended", self.origin))?;
        Ok(())
    }
}

/// The limits and `[tools.NAME]` tables a Lua tool reads at call time
/// (installed as a service by the runtime; the defaults without it).
#[derive(Clone, Debug, Default)]
pub struct LuaService {
    pub limits: Limits,
    /// The configuration (for `ctx:get_config()`, `[tools.NAME]`).
    pub config: Option<Arc<wield_core::Config>>,
}

/// A tool written in Lua.
pub struct LuaTool {
    base: ToolBase,
    script: Arc<Script>,
    execute: Function,
    preview: Option<Function>,
}

/// The group every Lua tool is in (`group:lua` in tool lists).
pub const GROUP: &str = "lua";

impl LuaTool {
    /// A tool from definition `def` (a table), evaluated in `script`.
    /// `where_` names the file for messages.
    pub fn from_table(script: &Arc<Script>, def: &Table, where_: &str) -> Result<Self, LuaError> {
        let lua = &script.sandbox.lua;
        let name: String = match def.get::<Value>("name")? {
            Value::String(s) if !s.to_str()?.trim().is_empty() => s.to_str()?.trim().to_owned(),
            _ => {
                return Err(LuaError::shape(
                    where_,
                    "a tool definition needs `name`, a non-empty string",
                ));
            }
        };
        let at = format!("{where_}: tool `{name}`");
        let description = match def.get::<Value>("description")? {
            Value::String(s) => s.to_str()?.to_owned(),
            Value::Nil => return Err(LuaError::shape(&at, "`description` is missing; say what the tool does")),
            other => {
                return Err(LuaError::shape(
                    &at,
                    format!("`description` must be a string, not a {}", other.type_name()),
                ));
            }
        };
        let input_schema = match def.get::<Value>("input_schema")? {
            Value::Nil => json!({"type": "object", "properties": {}}),
            v @ Value::Table(_) => {
                let mut schema =
                    to_json(lua, v).map_err(|e| LuaError::shape(&at, format!("`input_schema`: {}", message(&e))))?;
                normalize_schema(&mut schema);
                schema
            }
            other => {
                return Err(LuaError::shape(
                    &at,
                    format!("`input_schema` must be a table, not a {}", other.type_name()),
                ));
            }
        };
        let execute = match def.get::<Value>("execute")? {
            Value::Function(f) => f,
            _ => {
                return Err(LuaError::shape(
                    &at,
                    "`execute` must be a function(input, ctx) returning { success = ..., output = ... }",
                ));
            }
        };
        let preview = match def.get::<Value>("format_preview")? {
            Value::Function(f) => Some(f),
            Value::Nil => None,
            _ => {
                return Err(LuaError::shape(
                    &at,
                    "`format_preview` must be a function(input, width)",
                ));
            }
        };
        let strict = def.get::<Option<bool>>("strict")?.unwrap_or(false);
        if strict {
            wield_core::schema::check_strict(&input_schema)
                .map_err(|m| LuaError::shape(&at, format!("strict = true, but the schema breaks strict mode: {m}")))?;
        }
        wield_core::schema::InputValidator::new(&input_schema)
            .map_err(|m| LuaError::shape(&at, format!("`input_schema` is not a valid JSON schema: {m}")))?;
        let read_only = def.get::<Option<bool>>("read_only")?.unwrap_or(false);
        let mut spec = ToolSpec::new(name, description, input_schema).strict(strict);
        if let Some(title) = def.get::<Option<String>>("title")? {
            spec = spec.title(title);
        }
        let traits = ToolTraits {
            read_only,
            groups: vec![GROUP.into()],
            capabilities: vec![HANDLES_TIMEOUT.into()],
            ..ToolTraits::default()
        };
        Ok(Self {
            base: ToolBase::new(spec, traits),
            script: Arc::clone(script),
            execute,
            preview,
        })
    }

    fn service(ctx: &Context) -> LuaService {
        ctx.service::<LuaService>().map(|s| (*s).clone()).unwrap_or_default()
    }
}

/// Lua has one kind of table: an empty `properties = {}` or `required =
/// {}` comes out as whatever JSON form the converter picked. Put them in
/// the form JSON Schema wants.
fn normalize_schema(schema: &mut serde_json::Value) {
    let serde_json::Value::Object(map) = schema else { return };
    for (key, v) in map.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                if v.as_array().is_some_and(Vec::is_empty) {
                    *v = json!({});
                }
                if let serde_json::Value::Object(props) = v {
                    props.values_mut().for_each(normalize_schema);
                }
            }
            "required" | "enum" if v.as_object().is_some_and(serde_json::Map::is_empty) => *v = json!([]),
            "items" | "additionalProperties" | "not" => normalize_schema(v),
            "anyOf" | "oneOf" | "allOf" => {
                if let serde_json::Value::Array(items) = v {
                    items.iter_mut().for_each(normalize_schema);
                }
            }
            _ => {}
        }
    }
}

#[async_trait]
impl Tool for LuaTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    /// `[NAME] timeout`, the call's time limit, as for every tool.
    fn config_keys(&self) -> Vec<wield_core::ConfigKey> {
        vec![wield_core::ConfigKey::new("timeout")]
    }

    fn preview(&self, input: &Json, width: usize) -> String {
        let fallback = || wield_core::default_preview(&self.base.spec.name, input, width);
        let Some(f) = &self.preview else { return fallback() };
        // Not while a call runs in this state: its budget is the call's.
        let Ok(_one) = self.script.gate.try_lock() else {
            return fallback();
        };
        let sandbox = &self.script.sandbox;
        sandbox.start(Some(Instant::now() + Duration::from_secs(1)), None);
        let shown = to_lua(&sandbox.lua, input).and_then(|i| f.call::<Option<String>>((i, width)));
        match shown {
            Ok(Some(text)) => one_line(&text, width),
            Ok(None) => fallback(),
            Err(e) => {
                tracing::warn!(
                    "{}: format_preview of `{}` failed: {}",
                    self.script.origin,
                    self.base.spec.name,
                    message(&e)
                );
                fallback()
            }
        }
    }

    async fn execute(&self, input: Json, ctx: &Context) -> ToolResult {
        let name = self.base.spec.name.clone();
        let deadline = Instant::now() + ctx.timeout;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return ToolResult::error(format!("{name}: a Lua tool runs inside wield's async runtime"));
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let call = Call {
            name: name.clone(),
            script: Arc::clone(&self.script),
            execute: self.execute.clone(),
            read_only: self.base.traits.read_only,
            svc: Self::service(ctx),
            deadline,
        };
        let ctx_owned = ctx.clone();
        let job: Job = Box::new(move || {
            let result = runtime.block_on(call.run(input, &ctx_owned));
            let _ = tx.send(result);
        });
        if let Err(e) = self.script.on_thread(job) {
            return ToolResult::error(format!("{name}: {e}"));
        }
        // The budget ends the call at its deadline or cancellation, and the
        // thread answers then; past a grace period the answer is given here
        // whatever the thread does.
        let grace = Duration::from_millis(500);
        tokio::select! {
            r = rx => r.unwrap_or_else(|_| ToolResult::error(format!("{name}: the Lua call ended without an answer"))),
            () = async {
                ctx.cancel.cancelled().await;
                tokio::time::sleep(grace).await;
            } => ToolResult::error(format!("{name}: cancelled")),
            () = tokio::time::sleep_until((deadline + grace).into()) => timed_out(&name, ctx.timeout),
        }
    }
}

fn timed_out(name: &str, timeout: Duration) -> ToolResult {
    ToolResult::error(format!(
        "{name}: timed out: the Lua tool ran past its {} timeout and was stopped",
        wield_core::human_duration(timeout)
    ))
}

/// One call of a Lua tool, as it runs on its state's thread.
struct Call {
    name: String,
    script: Arc<Script>,
    execute: Function,
    read_only: bool,
    svc: LuaService,
    deadline: Instant,
}

impl Call {
    async fn run(self, input: Json, ctx: &Context) -> ToolResult {
        let name = &self.name;
        let sandbox = &self.script.sandbox;
        if let Err(e) = sandbox.set_memory_limit(self.svc.limits.memory) {
            return ToolResult::error(format!("{name}: cannot set the Lua memory limit: {e}"));
        }
        let deadline = self.deadline;
        sandbox
            .budget
            .start(self.svc.limits.instructions, Some(deadline), Some(ctx.cancel.clone()));
        let config = self
            .svc
            .config
            .as_ref()
            .map(|c| c.table_at(&format!("tools.{name}")))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| (*ctx.config).clone());
        // This call's `ctx` works until `running` is dropped, however the
        // call ends.
        let running = crate::ctx::Running::begin(&sandbox.current, ctx, self.read_only);
        let args = crate::ctx::build(
            &sandbox.lua,
            ctx,
            &config,
            &sandbox.make_run,
            &sandbox.current,
            running.id,
            self.read_only,
        )
        .and_then(|c| Ok((to_lua(&sandbox.lua, &input)?, c)));
        let (input, ctx_table) = match args {
            Ok(a) => a,
            Err(e) => return ToolResult::error(format!("{name}: cannot prepare the call: {}", message(&e))),
        };
        let call = self.execute.call_async::<Value>((input, ctx_table));
        let outcome = tokio::select! {
            r = call => r,
            () = ctx.cancel.cancelled() => return ToolResult::error(format!("{name}: cancelled")),
            () = tokio::time::sleep_until(deadline.into()) => return timed_out(name, ctx.timeout),
        };
        drop(running);
        let result = match outcome {
            Ok(v) => v,
            Err(e) => {
                // The budget's stop says what happened better than the
                // error it raised, which a script may have wrapped.
                return match sandbox.budget.stop() {
                    Some(Stop::Deadline) => timed_out(name, ctx.timeout),
                    Some(Stop::Cancelled) => ToolResult::error(format!("{name}: cancelled")),
                    _ => ToolResult::error(format!("{name}: the Lua tool failed: {}", message(&e))),
                };
            }
        };
        into_result(&sandbox.lua, name, result)
    }
}

type Json = serde_json::Value;

/// What `execute` returned as a result: `{ success, output | error }`
/// (`output` may be a table: it becomes JSON), or a plain string.
fn into_result(lua: &mlua::Lua, name: &str, v: Value) -> ToolResult {
    let t = match v {
        Value::Table(t) => t,
        Value::String(s) => return ToolResult::ok(s.to_string_lossy()),
        other => {
            return ToolResult::error(format!(
                "{name}: execute returned a {}; it must return {{ success = true, output = ... }} or \
                 {{ success = false, error = \"...\" }}",
                other.type_name()
            ));
        }
    };
    let text = |key: &str| -> Option<String> {
        match t.get::<Value>(key).ok()? {
            Value::Nil => None,
            Value::String(s) => Some(s.to_string_lossy()),
            Value::Table(inner) => Some(
                to_json(lua, Value::Table(inner))
                    .map(|j| j.to_string())
                    .unwrap_or_else(|e| format!("<{key} cannot be shown as JSON: {}>", message(&e))),
            ),
            other => Some(crate::sandbox::display(&other)),
        }
    };
    let success = !matches!(t.get::<Value>("success"), Ok(Value::Boolean(false) | Value::Nil))
        || (t.get::<Value>("success").is_ok_and(|v| v.is_nil()) && text("error").is_none());
    let output = text("output").unwrap_or_default();
    if success {
        ToolResult::ok(output)
    } else {
        let err = text("error").unwrap_or_else(|| format!("{name} failed without saying why"));
        if output.is_empty() {
            ToolResult::error(err)
        } else {
            ToolResult::failed_with_output(output, err)
        }
    }
}
