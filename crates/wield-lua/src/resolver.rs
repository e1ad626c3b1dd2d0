//! Lua approval resolvers: `.wield/resolvers/*.lua` returning `{ name,
//! priority = 50, description, resolve = function(tool_name, input, ctx)
//! ... end }`, and the function file `approval.auto_approve` may name.
//! A resolver that errors is logged and skipped by the chain.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mlua::{Function, Value};
use wield_core::approval::{ApprovalCall, Decision, PRIORITY_CONFIG, ResolveError, Resolver};

use crate::convert::to_lua;
use crate::error::{LuaError, message};
use crate::loader::lua_files;
use crate::sandbox::{Limits, Sandbox};

/// How long one resolver may take to answer.
const RESOLVE_TIME: Duration = Duration::from_secs(2);

/// How a resolver's function answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answers {
    /// `"approve" | "require_approval" | "deny" | nil`.
    Words,
    /// `true | false | "deny" | nil` (the function form of `auto_approve`).
    Boolean,
}

/// A resolver written in Lua.
pub struct LuaResolver {
    name: String,
    priority: i32,
    description: String,
    answers: Answers,
    func: Function,
    sandbox: Arc<Mutex<Sandbox>>,
}

impl LuaResolver {
    /// A resolver calling `func` (a function of `sandbox`).
    pub fn new(name: impl Into<String>, priority: i32, answers: Answers, func: Function, sandbox: Sandbox) -> Self {
        Self::shared(name, priority, answers, func, Arc::new(Mutex::new(sandbox)))
    }

    /// A resolver calling `func` of a state other resolvers may share.
    pub(crate) fn shared(
        name: impl Into<String>,
        priority: i32,
        answers: Answers,
        func: Function,
        sandbox: Arc<Mutex<Sandbox>>,
    ) -> Self {
        Self {
            name: name.into(),
            priority,
            description: String::new(),
            answers,
            func,
            sandbox,
        }
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    /// The resolver a file in `.wield/resolvers/` defines.
    pub fn from_file(file: &Path, limits: Limits) -> Result<Self, LuaError> {
        let sandbox = Sandbox::new(limits, file.parent())?;
        let where_ = file.display().to_string();
        let Value::Table(t) = sandbox.run_file(file)? else {
            return Err(LuaError::shape(
                &where_,
                "a resolver file must return { name = ..., resolve = function(tool_name, input, ctx) ... end }",
            ));
        };
        let name = match t.get::<Value>("name")? {
            Value::String(s) => s.to_str()?.to_owned(),
            _ => return Err(LuaError::shape(&where_, "the resolver needs `name`, a string")),
        };
        let Value::Function(func) = t.get::<Value>("resolve")? else {
            return Err(LuaError::shape(
                &where_,
                "the resolver needs `resolve`, a function(tool_name, input, ctx)",
            ));
        };
        let priority = match t.get::<Value>("priority")? {
            Value::Nil => wield_core::approval::PRIORITY_DEFAULT,
            Value::Integer(p) => {
                i32::try_from(p).map_err(|_| LuaError::shape(&where_, "`priority` is out of range"))?
            }
            _ => return Err(LuaError::shape(&where_, "`priority` must be a whole number")),
        };
        let description = t.get::<Option<String>>("description")?.unwrap_or_default();
        let mut r = Self::new(format!("lua:{name}"), priority, Answers::Words, func, sandbox);
        r.description = description;
        Ok(r)
    }

    /// The function file of `approval.auto_approve`: it returns a
    /// `function(tool_name, input, ctx)` answering `true` (approve), `false`
    /// (ask), `"deny"` or `nil` (no opinion), asked at the configuration's
    /// priority.
    /// `modules` is where its `require` finds modules (none when `None`):
    /// the caller guards that directory from tools, since what it holds
    /// decides approvals too.
    pub fn auto_approve_file(file: &Path, modules: Option<&Path>, limits: Limits) -> Result<Self, LuaError> {
        let sandbox = Sandbox::new(limits, modules)?;
        let Value::Function(func) = sandbox.run_file(file)? else {
            return Err(LuaError::shape(
                file.display().to_string(),
                "an approval.auto_approve Lua file must return a function(tool_name, input, ctx)",
            ));
        };
        Ok(Self::new(
            format!("auto_approve:{}", file.display()),
            PRIORITY_CONFIG,
            Answers::Boolean,
            func,
            sandbox,
        ))
    }

    fn call(&self, call: &ApprovalCall<'_>) -> Result<Value, mlua::Error> {
        let sandbox = self.sandbox.lock().unwrap_or_else(PoisonError::into_inner);
        let lua = &sandbox.lua;
        sandbox.start(Some(Instant::now() + RESOLVE_TIME), None);
        let ctx = lua.create_table()?;
        ctx.set("cwd", call.workspace.display().to_string())?;
        ctx.set("sandboxed", call.sandboxed)?;
        ctx.set("session", call.session.id())?;
        ctx.set("model_driven", call.session.model_driven())?;
        ctx.set("read_only", call.traits.read_only)?;
        ctx.set("writes_files", call.traits.writes_files)?;
        ctx.set("groups", call.traits.groups.clone())?;
        let input = to_lua(lua, call.input)?;
        self.func.call::<Value>((call.tool, input, ctx))
    }
}

/// `"approve"`, `true`, ... as a decision.
fn decide(answers: Answers, name: &str, v: &Value) -> Result<Decision, String> {
    let word = match v {
        Value::Nil => return Ok(Decision::Pass),
        Value::Boolean(true) if answers == Answers::Boolean => return Ok(Decision::Approve),
        Value::Boolean(false) if answers == Answers::Boolean => return Ok(Decision::RequireApproval),
        Value::String(s) => s.to_string_lossy(),
        other => return Err(format!("returned a {}", other.type_name())),
    };
    match (word.as_str(), answers) {
        ("deny", _) => Ok(Decision::Deny(format!("denied by the Lua approval resolver `{name}`"))),
        ("approve", Answers::Words) => Ok(Decision::Approve),
        ("require_approval", Answers::Words) => Ok(Decision::RequireApproval),
        _ => Err(format!(
            "returned {word:?}; it must return {}",
            match answers {
                Answers::Words => "\"approve\", \"require_approval\", \"deny\" or nil",
                Answers::Boolean => "true, false, \"deny\" or nil",
            }
        )),
    }
}

impl Resolver for LuaResolver {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        let v = crate::off_worker(|| self.call(call)).map_err(|e| ResolveError::Undecided(message(&e)))?;
        decide(self.answers, &self.name, &v).map_err(ResolveError::Undecided)
    }
}

/// The resolvers of `.wield/resolvers/*.lua`; files that fail are warnings.
pub fn load_resolvers(dir: &Path, limits: Limits) -> (Vec<Arc<dyn Resolver>>, Vec<String>) {
    let mut resolvers: Vec<Arc<dyn Resolver>> = Vec::new();
    let mut warnings = Vec::new();
    for file in lua_files(dir) {
        match LuaResolver::from_file(&file, limits) {
            Ok(r) => resolvers.push(Arc::new(r)),
            Err(e) => warnings.push(format!("Lua resolver file {}: {e}", file.display())),
        }
    }
    (resolvers, warnings)
}

/// Whether an `approval.auto_approve` entry names a Lua function file
/// (it ends in `.lua`), and the file it names (relative to `workspace`).
pub fn auto_approve_file(entry: &str, workspace: &Path) -> Option<PathBuf> {
    wield_core::config::ApprovalConfig::lua_file(entry).map(|path| workspace.join(path))
}
