//! The sandboxed Lua state every script runs in: the string, table, math
//! and utf8 libraries and a trimmed base library (no `dofile`, `loadfile`,
//! `collectgarbage`, bytecode `load`, `string.dump`; `require` only finds
//! modules inside the tools directory), a memory limit, and an instruction
//! budget that also ends a call at its deadline or on cancellation.
//!
//! The budget is checked by a hook between Lua instructions, which cannot
//! stop a C function that loops on its own. So every library function whose
//! work is not bounded by the size of its arguments is replaced: the pattern
//! functions by a matcher that counts its steps against the same budget
//! ([`crate::pattern`]); `table.move`, and `table.insert`, `table.remove`
//! and `table.sort` on anything but a plain table (a `__len` can claim any
//! length, and the C loops run over that many elements), by Lua versions
//! the hook counts; `string.rep` of an empty string, whose C loop runs `n`
//! times to build nothing, by its result. What is left runs in time bounded
//! by the memory limit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mlua::chunk::ChunkMode;
use mlua::{HookTriggers, Lua, LuaOptions, StdLib, Value, VmState};
use tokio_util::sync::CancellationToken;
use wield_sandbox::fs::{ConfineError, Confinement, open_ordinary_path};

use crate::error::LuaError;

/// The hook runs every this many instructions (and the pattern matcher
/// asks the budget every this many steps).
pub(crate) const HOOK_STEP: u32 = 10_000;

/// How long loading a file or evaluating frontmatter may take.
pub const LOAD_TIME: std::time::Duration = std::time::Duration::from_secs(2);

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

/// Why the budget stopped a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// It ran more than this many instructions (`lua.max_instructions`).
    Instructions(u64),
    /// Its call was cancelled.
    Cancelled,
    /// Its call's deadline passed.
    Deadline,
}

impl Stop {
    pub(crate) fn message(&self) -> String {
        match self {
            Self::Instructions(n) => {
                format!("the script ran more than {n} instructions (lua.max_instructions) and was stopped")
            }
            Self::Cancelled => "the call was cancelled".to_owned(),
            Self::Deadline => "the script ran past its time limit and was stopped".to_owned(),
        }
    }
}

/// What the instruction hook (and the pattern matcher) checks: the
/// instructions left, the deadline and the cancellation of the call running
/// now.
#[derive(Default)]
pub(crate) struct Budget {
    /// Hook steps left.
    steps: AtomicU64,
    limit: AtomicU64,
    /// Pattern steps short of a whole hook step, carried to the next
    /// pattern call.
    carry: AtomicU64,
    /// The state's memory limit, for what library functions build outside
    /// Lua's allocator.
    memory: AtomicUsize,
    /// Why the hook stopped the script, once it did.
    stopped: Mutex<Option<Stop>>,
    call: Mutex<Option<(Option<Instant>, Option<CancellationToken>)>>,
}

impl Budget {
    /// A fresh budget of `instructions`, ending at `deadline` or when
    /// `cancel` fires.
    pub(crate) fn start(&self, instructions: u64, deadline: Option<Instant>, cancel: Option<CancellationToken>) {
        self.steps
            .store(instructions / u64::from(HOOK_STEP) + 1, Ordering::SeqCst);
        self.limit.store(instructions, Ordering::SeqCst);
        self.carry.store(0, Ordering::SeqCst);
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = None;
        *self.call.lock().unwrap_or_else(PoisonError::into_inner) = Some((deadline, cancel));
    }

    /// One hook step (`HOOK_STEP` instructions or pattern steps): an error
    /// once the budget is spent, the deadline passed or the call cancelled.
    pub(crate) fn tick(&self) -> Result<VmState, mlua::Error> {
        if let Some(why) = self.why_stop() {
            let message = why.message();
            *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
            return Err(mlua::Error::RuntimeError(message));
        }
        Ok(VmState::Continue)
    }

    fn why_stop(&self) -> Option<Stop> {
        let left = self.steps.load(Ordering::SeqCst);
        if left == 0 {
            return Some(Stop::Instructions(self.limit.load(Ordering::SeqCst)));
        }
        self.steps.store(left - 1, Ordering::SeqCst);
        let call = self.call.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((deadline, cancel)) = call.as_ref() {
            if cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
                return Some(Stop::Cancelled);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Some(Stop::Deadline);
            }
        }
        None
    }

    /// Why the hook stopped the script, if it did: `pcall` must not
    /// swallow that.
    fn stopped(&self) -> Option<String> {
        self.stop().map(|s| s.message())
    }

    /// Why the budget stopped the script, if it did.
    pub(crate) fn stop(&self) -> Option<Stop> {
        self.stopped.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn take_carry(&self) -> u64 {
        self.carry.swap(0, Ordering::SeqCst)
    }

    pub(crate) fn put_carry(&self, steps: u64) {
        self.carry.store(steps, Ordering::SeqCst);
    }

    /// The memory limit of the state.
    pub(crate) fn memory_limit(&self) -> usize {
        self.memory.load(Ordering::SeqCst)
    }
}

/// A sandboxed Lua state and its budget.
pub struct Sandbox {
    pub(crate) lua: Lua,
    pub(crate) budget: Arc<Budget>,
    pub(crate) limits: Limits,
    /// The call a tool's `ctx` belongs to, while it runs.
    pub(crate) current: crate::ctx::Current,
    /// `ctx.run` of one call: `make_run(id)` is a function that runs
    /// commands only while the call `id` runs.
    pub(crate) make_run: mlua::Function,
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

/// The table functions whose C loops run over a length a `__len` can
/// claim (`insert`, `remove`, `sort`) or a range the caller names (`move`),
/// as Lua the hook counts — for anything but a plain table without `__len`
/// (whose length is what it holds) and, for `move`, always; and
/// `string.rep`, which builds nothing `n` times when the string and its
/// separator are empty.
const LIBRARY: &str = r##"
local plain, error, type, select, tointeger, tonumber, maxinteger = ...
-- Named as the library names them, for the messages of their errors.
local insert, remove, sort, rep = table.insert, table.remove, table.sort, string.rep

local function integer(v, n, name)
  local i = tointeger(v)
  if i == nil and type(v) == "string" then i = tointeger(tonumber(v)) end
  if i == nil then
    local why = tonumber(v) and "number has no integer representation" or "number expected, got " .. type(v)
    error("bad argument #" .. n .. " to '" .. name .. "' (" .. why .. ")", 3)
  end
  return i
end

local function a_table(t, n, name)
  if type(t) ~= "table" then
    error("bad argument #" .. n .. " to '" .. name .. "' (table expected, got " .. type(t) .. ")", 3)
  end
end

local function length(t)
  local n = tointeger(#t)
  if n == nil then error("object length is not an integer", 3) end
  return n
end

table.insert = function(t, ...)
  if plain(t) then return insert(t, ...) end
  a_table(t, 1, "insert")
  local n, e = select("#", ...), length(t) + 1
  if n == 1 then
    t[e] = ...
    return
  end
  if n ~= 2 then error("wrong number of arguments to 'insert'", 2) end
  local pos, v = ...
  pos = integer(pos, 2, "insert")
  if pos < 1 or pos > e then error("bad argument #2 to 'insert' (position out of bounds)", 2) end
  for i = e, pos + 1, -1 do t[i] = t[i - 1] end
  t[pos] = v
end

table.remove = function(t, pos)
  if plain(t) then return remove(t, pos) end
  a_table(t, 1, "remove")
  local size = length(t)
  if pos == nil then pos = size else pos = integer(pos, 2, "remove") end
  if pos ~= size and (pos < 1 or pos > size + 1) then
    error("bad argument #2 to 'remove' (position out of bounds)", 2)
  end
  local v = t[pos]
  while pos < size do
    t[pos] = t[pos + 1]
    pos = pos + 1
  end
  t[pos] = nil
  return v
end

table.move = function(a1, f, e, t, a2)
  f, e, t = integer(f, 2, "move"), integer(e, 3, "move"), integer(t, 4, "move")
  local tt = a2
  if tt == nil then tt = a1 end
  a_table(a1, 1, "move")
  a_table(tt, 5, "move")
  if e >= f then
    if not (f > 0 or e < maxinteger + f) then error("bad argument #3 to 'move' (too many elements to move)", 2) end
    local n = e - f + 1
    if t > maxinteger - n + 1 then error("bad argument #4 to 'move' (destination wrap around)", 2) end
    if t > e or t <= f or (a2 ~= nil and a1 ~= a2) then
      for i = 0, n - 1 do tt[t + i] = a1[f + i] end
    else
      for i = n - 1, 0, -1 do tt[t + i] = a1[f + i] end
    end
  end
  return tt
end

table.sort = function(t, comp)
  if plain(t) then return sort(t, comp) end
  a_table(t, 1, "sort")
  if comp ~= nil and type(comp) ~= "function" then
    error("bad argument #2 to 'sort' (function expected, got " .. type(comp) .. ")", 2)
  end
  local n = length(t)
  if n >= 2147483647 then error("bad argument #1 to 'sort' (array too big)", 2) end
  local lt = comp or function(a, b) return a < b end
  local function sift(root, last)
    while true do
      local child = root * 2
      if child > last then return end
      if child < last and lt(t[child], t[child + 1]) then child = child + 1 end
      if not lt(t[root], t[child]) then return end
      t[root], t[child] = t[child], t[root]
      root = child
    end
  end
  for i = n // 2, 1, -1 do sift(i, n) end
  for last = n, 2, -1 do
    t[1], t[last] = t[last], t[1]
    sift(1, last - 1)
  end
end

string.rep = function(s, n, sep)
  if s == "" and (sep == nil or sep == "") and tointeger(n) ~= nil then return "" end
  return rep(s, n, sep)
end
"##;

/// `make_run(id)`: the `ctx.run` of call `id`, a Lua function so that the
/// async `run` it calls can yield through it.
const MAKE_RUN: &str = r#"
local run = ...
return function(id)
  return function(argv, opts) return run(id, argv, opts) end
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
        crate::pattern::install(&lua, &string, &budget)?;
        let math: mlua::Table = globals.get("math")?;
        lua.load(LIBRARY)
            .set_name("=wield")
            .set_mode(ChunkMode::Text)
            .call::<()>((
                lua.create_function(|_, t: Value| Ok(plain_table(&t)))?,
                globals.get::<Value>("error")?,
                globals.get::<Value>("type")?,
                globals.get::<Value>("select")?,
                math.get::<Value>("tointeger")?,
                globals.get::<Value>("tonumber")?,
                math.get::<Value>("maxinteger")?,
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
        let make_run: mlua::Function = lua
            .load(MAKE_RUN)
            .set_name("=wield.run")
            .set_mode(ChunkMode::Text)
            .call(run)?;
        // Making an async function loaded the coroutine library: scripts
        // do not get it (a `coroutine.resume` would catch the budget's stop).
        globals.raw_set("coroutine", Value::Nil)?;
        let sandbox = Self {
            lua,
            budget,
            limits,
            current,
            make_run,
        };
        sandbox.set_memory_limit(limits.memory)?;
        Ok(sandbox)
    }

    /// Limit what the state may allocate to `bytes` (and what the pattern
    /// functions build outside it).
    pub(crate) fn set_memory_limit(&self, bytes: usize) -> mlua::Result<()> {
        self.lua.set_memory_limit(bytes)?;
        self.budget.memory.store(bytes, Ordering::SeqCst);
        Ok(())
    }

    /// Start a budget for what runs next: the instruction limit, and the
    /// deadline and cancellation of a call.
    pub(crate) fn start(&self, deadline: Option<Instant>, cancel: Option<CancellationToken>) {
        self.budget.start(self.limits.instructions, deadline, cancel);
    }

    /// Load and run the file at `path` as a text chunk named after it, with
    /// a fresh budget; what it returns.
    pub fn run_file(&self, path: &Path) -> Result<Value, LuaError> {
        // Opened once and checked on the descriptor it is read from (a
        // regular file, not a kernel file), so what runs is what was checked.
        let code = open_ordinary_path(path)
            .map_err(std::io::Error::other)
            .and_then(|(file, _)| read_text(file))
            .map_err(|source| LuaError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        self.run_code(&code, &format!("@{}", path.display()))
    }

    /// Run `code` as a text chunk named `name` with a fresh budget, for at
    /// most [`LOAD_TIME`]: loading a file and evaluating frontmatter must
    /// not hold up wield.
    pub fn run_code(&self, code: &str, name: &str) -> Result<Value, LuaError> {
        self.start(Some(Instant::now() + LOAD_TIME), None);
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

/// Whether `t` is a table whose length is what it holds (no metatable, or
/// one without `__len`): the C table functions are bounded on it.
fn plain_table(t: &Value) -> bool {
    match t {
        Value::Table(t) => t
            .metatable()
            .is_none_or(|m| m.raw_get::<Value>("__len").is_ok_and(|v| v.is_nil())),
        _ => false,
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

/// The text of module file `rel` beneath `dir`: opened once beneath the
/// directory's handle (links followed only while they stay inside it),
/// checked on the descriptor, and read from it, so a module swapped for a
/// link between a check and the read cannot bring in another file.
fn read_module(dir: &Path, rel: &str) -> Result<String, ConfineError> {
    let conf = Confinement::builder(dir)
        .protected(Vec::<PathBuf>::new())
        .temp_dir(None)
        .build()?;
    let (file, _) = conf.open_ordinary(rel)?;
    read_text(file).map_err(|source| ConfineError::Io {
        path: rel.to_owned(),
        source,
    })
}

/// A file's text (UTF-8), read from a descriptor already checked.
fn read_text(mut file: std::fs::File) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut code = String::new();
    file.read_to_string(&mut code)?;
    Ok(code)
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
        let rel = format!("{}.lua", name.replace('.', "/"));
        let file = dir.join(&rel);
        let code = read_module(dir, &rel).map_err(|e| {
            mlua::Error::runtime(if e.is_not_found() || matches!(e, ConfineError::Outside { .. }) {
                format!(
                    "require(\"{name}\"): no module {} inside the tools directory {} ({e})",
                    file.display(),
                    dir.display()
                )
            } else {
                format!("require(\"{name}\"): {e}")
            })
        })?;
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
