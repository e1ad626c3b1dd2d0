//! The sandboxed Lua state every script runs in: the string, table, math
//! and utf8 libraries and a trimmed base library (no `dofile`, `loadfile`,
//! `collectgarbage`, bytecode `load`, `string.dump`; `require` only finds
//! modules inside the tools directory), a memory limit, and an instruction
//! budget that also ends a call at its deadline or on cancellation.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mlua::chunk::ChunkMode;
use mlua::{HookTriggers, Lua, LuaOptions, StdLib, Value, VmState};
use tokio_util::sync::CancellationToken;

use crate::error::LuaError;

/// The hook runs every this many instructions.
const HOOK_STEP: u32 = 10_000;

/// How much a script may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes the Lua state may allocate (`lua.memory_limit`).
    pub memory: usize,
    /// Instructions one call (or the loading of a file) may run
    /// (`lua.max_instructions`).
    pub instructions: u64,
}

/// 64 MiB.
pub const DEFAULT_MEMORY: usize = 64 * 1024 * 1024;
/// About a second or two of pure Lua.
pub const DEFAULT_INSTRUCTIONS: u64 = 200_000_000;

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory: DEFAULT_MEMORY,
            instructions: DEFAULT_INSTRUCTIONS,
        }
    }
}

impl Limits {
    /// The limits from `[lua]` (`memory_limit` in bytes or with a `KB`/`MB`
    /// suffix, `max_instructions`), or an error naming the bad key.
    pub fn from_config(config: &wield_core::Config) -> Result<Self, String> {
        let mut limits = Self::default();
        match config.value("lua.memory_limit") {
            None => {}
            Some(toml::Value::Integer(n)) if *n > 0 => limits.memory = usize::try_from(*n).unwrap_or(usize::MAX),
            Some(toml::Value::String(s)) => {
                limits.memory = parse_size(s).ok_or_else(|| {
                    format!("lua.memory_limit must be a size such as \"64MB\" or a number of bytes, not {s:?}")
                })?;
            }
            Some(other) => return Err(format!("lua.memory_limit must be a positive size, not {other}")),
        }
        match config.value("lua.max_instructions") {
            None => {}
            Some(toml::Value::Integer(n)) if *n > 0 => limits.instructions = n.unsigned_abs(),
            Some(other) => {
                return Err(format!(
                    "lua.max_instructions must be a positive number of instructions, not {other}"
                ));
            }
        }
        Ok(limits)
    }
}

/// The configuration keys of `[lua]`.
pub const CONFIG_KEYS: &[&str] = &["lua.memory_limit", "lua.max_instructions"];

fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim().to_ascii_uppercase();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t.as_str(), ""),
    };
    let n: usize = num.parse().ok()?;
    let unit = match unit.trim() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1024,
        "M" | "MB" | "MIB" => 1024 * 1024,
        "G" | "GB" | "GIB" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(unit).filter(|n| *n > 0)
}

/// What the instruction hook checks: the instructions left, the deadline
/// and the cancellation of the call running now.
#[derive(Default)]
pub(crate) struct Budget {
    /// Hook steps left.
    steps: AtomicU64,
    limit: AtomicU64,
    /// Why the hook stopped the script, once it did.
    stopped: Mutex<Option<String>>,
    call: Mutex<Option<(Option<Instant>, Option<CancellationToken>)>>,
}

impl Budget {
    /// A fresh budget of `instructions`, ending at `deadline` or when
    /// `cancel` fires.
    pub(crate) fn start(&self, instructions: u64, deadline: Option<Instant>, cancel: Option<CancellationToken>) {
        self.steps
            .store(instructions / u64::from(HOOK_STEP) + 1, Ordering::SeqCst);
        self.limit.store(instructions, Ordering::SeqCst);
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = None;
        *self.call.lock().unwrap_or_else(PoisonError::into_inner) = Some((deadline, cancel));
    }

    fn tick(&self) -> Result<VmState, mlua::Error> {
        if let Some(why) = self.why_stop() {
            *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = Some(why.clone());
            return Err(mlua::Error::RuntimeError(why));
        }
        Ok(VmState::Continue)
    }

    fn why_stop(&self) -> Option<String> {
        let left = self.steps.load(Ordering::SeqCst);
        if left == 0 {
            return Some(format!(
                "the script ran more than {} instructions (lua.max_instructions) and was stopped",
                self.limit.load(Ordering::SeqCst)
            ));
        }
        self.steps.store(left - 1, Ordering::SeqCst);
        let call = self.call.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((deadline, cancel)) = call.as_ref() {
            if cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
                return Some("the call was cancelled".to_owned());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Some("the call ran out of time (its timeout) and was stopped".to_owned());
            }
        }
        None
    }

    /// Why the hook stopped the script, if it did: `pcall` must not
    /// swallow that.
    fn stopped(&self) -> Option<String> {
        self.stopped.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A sandboxed Lua state and its budget.
pub struct Sandbox {
    pub(crate) lua: Lua,
    pub(crate) budget: Arc<Budget>,
    pub(crate) limits: Limits,
    /// The call `ctx.run` belongs to.
    pub(crate) current: crate::ctx::Current,
    pub(crate) run: mlua::Function,
}

/// What the base library keeps: the rest (`dofile`, `loadfile`,
/// `collectgarbage`, `print`, `require`, ...) is removed.
const BASE_KEPT: &[&str] = &[
    "_G",
    "_VERSION",
    "assert",
    "error",
    "getmetatable",
    "ipairs",
    "next",
    "pairs",
    "pcall",
    "rawequal",
    "rawget",
    "rawlen",
    "rawset",
    "select",
    "setmetatable",
    "tonumber",
    "tostring",
    "type",
    "xpcall",
    "load",
    "string",
    "table",
    "math",
    "utf8",
];

/// `pcall` and `xpcall` that do not catch the budget's stop, and `load`
/// that only takes text.
const PRELUDE: &str = r#"
local raw_pcall, raw_xpcall, raw_load, exhausted, error, pack, unpack =
  pcall, xpcall, load, ...
local function pass(r)
  if not r[1] then
    local why = exhausted()
    if why then error(why, 0) end
  end
  return unpack(r, 1, r.n)
end
pcall = function(f, ...) return pass(pack(raw_pcall(f, ...))) end
xpcall = function(f, h, ...) return pass(pack(raw_xpcall(f, h, ...))) end
load = function(chunk, name, mode, env)
  if mode ~= nil and mode ~= "t" then
    return nil, "load: only text chunks can be loaded (mode \"t\")"
  end
  if type(chunk) == "string" and chunk:byte(1) == 27 then
    return nil, "load: binary chunks are not allowed"
  end
  return raw_load(chunk, name, "t", env)
end
"#;

impl Sandbox {
    /// A new state with `limits`; `require` finds modules in `modules`
    /// (the tools directory), and nowhere when it is `None`.
    pub fn new(limits: Limits, modules: Option<&Path>) -> Result<Self, LuaError> {
        let lua = Lua::new_with(
            StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::UTF8,
            LuaOptions::default(),
        )?;
        let globals = lua.globals();
        let names: Vec<String> = globals
            .pairs::<String, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| k)
            .collect();
        for name in names {
            if !BASE_KEPT.contains(&name.as_str()) {
                globals.raw_set(name, Value::Nil)?;
            }
        }
        let string: mlua::Table = globals.get("string")?;
        string.raw_set("dump", Value::Nil)?;

        let budget = Arc::new(Budget::default());
        let hook_budget = Arc::clone(&budget);
        lua.set_global_hook(HookTriggers::new().every_nth_instruction(HOOK_STEP), move |_, _| {
            hook_budget.tick()
        })?;
        let check = Arc::clone(&budget);
        let exhausted = lua.create_function(move |_, ()| Ok(check.stopped()))?;
        let table: mlua::Table = globals.get("table")?;
        lua.load(PRELUDE)
            .set_name("=wield")
            .set_mode(ChunkMode::Text)
            .call::<()>((
                exhausted,
                globals.get::<Value>("error")?,
                table.get::<Value>("pack")?,
                table.get::<Value>("unpack")?,
            ))?;
        globals.raw_set("require", require_fn(&lua, modules.map(Path::to_path_buf))?)?;
        globals.raw_set(
            "print",
            lua.create_function(|_, args: mlua::Variadic<Value>| {
                let parts: Vec<String> = args.iter().map(display).collect();
                tracing::info!(target: "wield_lua", "{}", parts.join("\t"));
                Ok(())
            })?,
        )?;
        let current = crate::ctx::Current::default();
        let run = crate::ctx::run_function(&lua, Arc::clone(&current))?;
        // Making an async function loaded the coroutine library: scripts
        // do not get it (a `coroutine.resume` would catch the budget's stop).
        globals.raw_set("coroutine", Value::Nil)?;
        lua.set_memory_limit(limits.memory)?;
        Ok(Self {
            lua,
            budget,
            limits,
            current,
            run,
        })
    }

    /// Start a budget for what runs next: the instruction limit, and the
    /// deadline and cancellation of a call.
    pub(crate) fn start(&self, deadline: Option<Instant>, cancel: Option<CancellationToken>) {
        self.budget.start(self.limits.instructions, deadline, cancel);
    }

    /// Load and run the file at `path` as a text chunk named after it, with
    /// a fresh budget; what it returns.
    pub fn run_file(&self, path: &Path) -> Result<Value, LuaError> {
        let code = std::fs::read_to_string(path).map_err(|source| LuaError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.run_code(&code, &format!("@{}", path.display()))
    }

    /// Run `code` as a text chunk named `name` with a fresh budget.
    pub fn run_code(&self, code: &str, name: &str) -> Result<Value, LuaError> {
        self.start(None, None);
        Ok(self
            .lua
            .load(code)
            .set_name(name)
            .set_mode(ChunkMode::Text)
            .eval::<Value>()?)
    }

    pub fn lua(&self) -> &Lua {
        &self.lua
    }
}

/// A value as `print` and `ctx.log` show it.
pub(crate) fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string_lossy(),
        Value::Nil => "nil".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Number(n) => n.to_string(),
        other => format!("<{}>", other.type_name()),
    }
}

/// `require(name)`: `a.b` is `a/b.lua` inside `dir` (symbolic links may not
/// lead out of it); each module runs once.
fn require_fn(lua: &Lua, dir: Option<PathBuf>) -> mlua::Result<mlua::Function> {
    let loaded = lua.create_table()?;
    lua.create_function(move |lua, name: String| {
        if let Some(v) = loaded.raw_get::<Option<Value>>(name.as_str())? {
            return Ok(v);
        }
        let Some(dir) = &dir else {
            return Err(mlua::Error::runtime(format!(
                "require(\"{name}\"): modules are not available here"
            )));
        };
        let valid = !name.is_empty()
            && name.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
        if !valid {
            return Err(mlua::Error::runtime(format!(
                "require(\"{name}\"): a module name is a dotted name of a file inside the tools directory ({}), \
                 like \"lib.util\" for lib/util.lua",
                dir.display()
            )));
        }
        let file = dir.join(format!("{}.lua", name.replace('.', "/")));
        let inside = match (std::fs::canonicalize(&file), std::fs::canonicalize(dir)) {
            (Ok(real), Ok(root)) => real.starts_with(root),
            _ => false,
        };
        if !inside {
            return Err(mlua::Error::runtime(format!(
                "require(\"{name}\"): no module {} inside the tools directory {}",
                file.display(),
                dir.display()
            )));
        }
        let code = std::fs::read_to_string(&file)
            .map_err(|e| mlua::Error::runtime(format!("require(\"{name}\"): {}: {e}", file.display())))?;
        let value: Value = lua
            .load(code)
            .set_name(format!("@{}", file.display()))
            .set_mode(ChunkMode::Text)
            .call(name.as_str())?;
        let value = if value.is_nil() { Value::Boolean(true) } else { value };
        loaded.raw_set(name.as_str(), value.clone())?;
        Ok(value)
    })
}
