//! Lua frontmatter of `.chat` documents: the code runs in the same sandbox
//! as Lua tools, with `wield.opt` (and `flemma.opt`, for Flemma's
//! documents) as a write proxy into the document's options. What it did is
//! returned as an ordered list of [`OptionOp`]s for the document to apply:
//!
//! ```lua
//! wield.opt.provider = "openai"
//! wield.opt.tools = { "bash", "read" }            -- set
//! wield.opt.tools:append("grep")                  -- or :set/:remove/:prepend
//! wield.opt.tools = wield.opt.tools + "grep" - "write" ^ "bash"
//! wield.opt.tools.auto_approve = { "$standard" }
//! wield.opt.tools.autopilot = false
//! wield.opt.tools.auto_approve = function(tool_name, input, ctx)
//!   if tool_name == "read" then return true end   -- true, false, "deny", nil
//! end
//! ```
//!
//! `a + b` appends, `a - b` removes, `a ^ b` prepends (`^` binds tighter
//! than `+` and `-`, so `"write" ^ "bash"` is read as "remove `write`, then
//! prepend `bash`" after a `-`). Tool names in list operations that match
//! no known tool get a did-you-mean warning (`$presets`, `group:` names,
//! globs and `tool:pattern` argument patterns are checked by their tool
//! part only, or not at all).

use std::sync::{Arc, Mutex, PoisonError};

use mlua::{Function, Table, Value};
use serde_json::Map;
use wield_core::approval::{PRIORITY_FRONTMATTER, Resolver};

use crate::convert::to_json;
use crate::error::{LuaError, message};
use crate::resolver::{Answers, LuaResolver};
use crate::sandbox::{Limits, Sandbox};

/// What the frontmatter did, in order.
#[derive(Clone, Debug)]
pub struct FrontmatterOutcome {
    pub ops: Vec<OptionOp>,
    /// The other globals the code defined (those JSON can hold).
    pub variables: Map<String, serde_json::Value>,
    /// Did-you-mean and other warnings for the document's author.
    pub warnings: Vec<String>,
}

/// One change to an option: `key` is the dotted path written after
/// `opt.` (`provider`, `tools`, `tools.auto_approve`, `tools.autopilot`, ...).
#[derive(Clone, Debug)]
pub struct OptionOp {
    pub key: String,
    pub op: Op,
}

#[derive(Clone)]
pub enum Op {
    Set(serde_json::Value),
    Append(Vec<String>),
    Remove(Vec<String>),
    Prepend(Vec<String>),
    /// The function form of `auto_approve`: a resolver at the frontmatter's
    /// priority (90), named `frontmatter`.
    SetFunction(Arc<dyn Resolver>),
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Set(v) => f.debug_tuple("Set").field(v).finish(),
            Self::Append(v) => f.debug_tuple("Append").field(v).finish(),
            Self::Remove(v) => f.debug_tuple("Remove").field(v).finish(),
            Self::Prepend(v) => f.debug_tuple("Prepend").field(v).finish(),
            Self::SetFunction(r) => f.debug_tuple("SetFunction").field(&r.name()).finish(),
        }
    }
}

/// What the Lua side recorded, before functions become resolvers.
enum Recorded {
    Op(OptionOp),
    Function(String, Function),
}

/// The proxies, written in Lua over one Rust `record(path, kind, value)`.
const PROXY: &str = r#"
local record = ...
local Proxy, Expr = {}, {}
local methods = { set = true, append = true, remove = true, prepend = true }

local function names(v, what)
  if type(v) == "string" then return { v } end
  if type(v) == "table" and getmetatable(v) == nil then
    local out = {}
    for i, x in ipairs(v) do
      if type(x) ~= "string" then error(what .. ": item " .. i .. " is a " .. type(x) .. ", not a name", 4) end
      out[i] = x
    end
    return out
  end
  error(what .. ": expected a name or a list of names, got a " .. type(v), 4)
end

local function proxy(path) return setmetatable({ path = path }, Proxy) end

-- `"write" ^ "bash"`: a head word and what follows it.
local Seq = {}
local function seq(head, ops) return setmetatable({ head = head, ops = ops }, Seq) end
Seq.__pow = function(a, b)
  if getmetatable(b) == Seq then
    local ops = { { "prepend", names(b.head, "^") } }
    for _, o in ipairs(b.ops) do ops[#ops + 1] = o end
    return seq(a, ops)
  end
  return seq(a, { { "prepend", names(b, "^") } })
end
getmetatable("").__pow = function(a, b)
  if type(a) == "string" and (type(b) == "string" or getmetatable(b) == Seq) then return Seq.__pow(a, b) end
  error("attempt to perform arithmetic on a string value", 2)
end

local function expr(path, ops) return setmetatable({ path = path, ops = ops }, Expr) end
local function combine(kind)
  return function(a, b)
    local mt = getmetatable(a)
    if mt ~= Proxy and mt ~= Expr then error("list operators need an option on the left, like wield.opt.tools + \"grep\"", 2) end
    local ops = {}
    if mt == Expr then for _, o in ipairs(a.ops) do ops[#ops + 1] = o end end
    if getmetatable(b) == Seq then
      ops[#ops + 1] = { kind, names(b.head, kind) }
      for _, o in ipairs(b.ops) do ops[#ops + 1] = o end
    else
      ops[#ops + 1] = { kind, names(b, kind) }
    end
    return expr(a.path, ops)
  end
end
for _, mt in ipairs({ Proxy, Expr }) do
  mt.__add = combine("append")
  mt.__sub = combine("remove")
  mt.__pow = combine("prepend")
end

local function assign(path, v)
  local mt = getmetatable(v)
  if mt == Expr then
    for _, o in ipairs(v.ops) do record(path, o[1], o[2]) end
  elseif mt == Proxy then
    if v.path ~= path then error("cannot copy opt." .. v.path .. " into opt." .. path, 3) end
  elseif mt == Seq then
    error("opt." .. path .. ": a list operator needs an option on its left", 3)
  else
    record(path, "set", v)
  end
end

Proxy.__index = function(p, k)
  if methods[k] then
    return function(self, v)
      if getmetatable(self) ~= Proxy then error("call it with a colon: opt." .. p.path .. ":" .. k .. "(...)", 2) end
      if k == "set" then assign(p.path, v) else record(p.path, k, names(v, k)) end
      return self
    end
  end
  return proxy(p.path .. "." .. k)
end
Proxy.__newindex = function(p, k, v) assign(p.path .. "." .. k, v) end

local Opt = {}
Opt.__index = function(_, k) return proxy(k) end
Opt.__newindex = function(_, k, v) assign(k, v) end
local wield = { opt = setmetatable({}, Opt) }
return wield
"#;

/// Evaluate frontmatter `code` in the sandbox; `known_tools` are the tool
/// names list operations are checked against (none: no check).
pub fn evaluate(code: &str, known_tools: &[String]) -> Result<FrontmatterOutcome, LuaError> {
    let sandbox = Sandbox::new(Limits::default(), None)?;
    let lua = sandbox.lua.clone();
    let recorded: Arc<Mutex<Vec<Recorded>>> = Arc::default();
    let sink = Arc::clone(&recorded);
    let record = lua.create_function(move |lua, (path, kind, value): (String, String, Value)| {
        let entry = match (kind.as_str(), value) {
            ("set", Value::Function(f)) => {
                if !path.ends_with("auto_approve") {
                    return Err(mlua::Error::runtime(format!(
                        "opt.{path}: only auto_approve takes a function"
                    )));
                }
                Recorded::Function(path, f)
            }
            ("set", v) => {
                let json = to_json(lua, v).map_err(|e| mlua::Error::runtime(format!("opt.{path}: {}", message(&e))))?;
                Recorded::Op(OptionOp {
                    key: path,
                    op: Op::Set(json),
                })
            }
            (kind, v) => {
                let list: Vec<String> = lua.unpack(v)?;
                let op = match kind {
                    "append" => Op::Append(list),
                    "remove" => Op::Remove(list),
                    _ => Op::Prepend(list),
                };
                Recorded::Op(OptionOp { key: path, op })
            }
        };
        sink.lock().unwrap_or_else(PoisonError::into_inner).push(entry);
        Ok(())
    })?;
    let wield: Table = lua.load(PROXY).set_name("=wield.opt").call(record)?;
    let globals = lua.globals();
    globals.raw_set("wield", wield.clone())?;
    globals.raw_set("flemma", wield)?;
    let before: Vec<String> = globals
        .pairs::<String, Value>()
        .filter_map(Result::ok)
        .map(|(k, _)| k)
        .collect();

    sandbox.run_code(code, "=frontmatter")?;

    let mut variables = Map::new();
    for pair in globals.pairs::<String, Value>() {
        let (k, v) = pair?;
        if before.contains(&k) || matches!(v, Value::Function(_)) {
            continue;
        }
        if let Ok(json) = to_json(&lua, v) {
            variables.insert(k, json);
        }
    }
    let shared = Arc::new(Mutex::new(sandbox));
    let mut ops = Vec::new();
    let mut warnings = Vec::new();
    let taken = std::mem::take(&mut *recorded.lock().unwrap_or_else(PoisonError::into_inner));
    for r in taken {
        match r {
            Recorded::Op(op) => {
                check_names(&op, known_tools, &mut warnings);
                ops.push(op);
            }
            Recorded::Function(key, f) => ops.push(OptionOp {
                key,
                op: Op::SetFunction(Arc::new(LuaResolver::shared(
                    "frontmatter",
                    PRIORITY_FRONTMATTER,
                    Answers::Boolean,
                    f,
                    Arc::clone(&shared),
                ))),
            }),
        }
    }
    Ok(FrontmatterOutcome {
        ops,
        variables,
        warnings,
    })
}

/// Did-you-mean warnings for the names of a list operation.
fn check_names(op: &OptionOp, known: &[String], warnings: &mut Vec<String>) {
    if known.is_empty() {
        return;
    }
    let (verb, names): (&str, Vec<&str>) = match &op.op {
        Op::Append(v) => ("append", v.iter().map(String::as_str).collect()),
        Op::Remove(v) => ("remove", v.iter().map(String::as_str).collect()),
        Op::Prepend(v) => ("prepend", v.iter().map(String::as_str).collect()),
        Op::Set(serde_json::Value::Array(items)) => ("set", items.iter().filter_map(|v| v.as_str()).collect()),
        _ => return,
    };
    for name in names {
        // `-name` / `+name` take a tool out of or add it to what presets
        // expand to.
        let name = name.strip_prefix(['-', '+']).unwrap_or(name);
        if name.starts_with('$') || name.starts_with("group:") {
            continue;
        }
        // `bash:git *` is checked by its tool part.
        let tool = name.split_once(':').map_or(name, |(t, _)| t);
        if tool.contains(['*', '?', '[']) || known.iter().any(|k| k == tool) {
            continue;
        }
        let best = known
            .iter()
            .map(|k| (strsim::jaro_winkler(tool, k), k))
            .filter(|(score, _)| *score >= 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        warnings.push(match best {
            Some((_, k)) => format!(
                "opt.{} ({verb}): no tool is named `{tool}`; did you mean `{k}`?",
                op.key
            ),
            None => format!("opt.{} ({verb}): no tool is named `{tool}`", op.key),
        });
    }
}
