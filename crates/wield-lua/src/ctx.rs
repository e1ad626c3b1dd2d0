//! `ctx`, what a Lua tool sees of wield: the stable contract, and nothing
//! else. Files go through the same confinement as the file tools (the same
//! roots, the same refusals); commands run through the `bash` tool (its
//! sandbox, scrubbed environment, timeout and output limits).
//!
//! All tools of one file share one Lua state, so a script can keep a
//! `ctx` (or one of its functions) in a global or an upvalue and call it
//! from a later call of another tool — a `read_only` one, approved without
//! asking. So a `ctx` is good only for its own call: each is made for a call
//! id, and every function that reaches wield (`path`, `fs`, `sandbox`,
//! `run`) checks that this call is the one running now, and answers with
//! that call's traits (a `read_only` call cannot write or run commands).
//! Once its call has ended — returned, failed, timed out or cancelled —
//! a kept `ctx` is dead: its functions raise an error saying so.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mlua::{Lua, Table, Value};
use serde_json::json;
use wield_core::{Context, Tool};
use wield_sandbox::fs::{Access, Confinement, Kind};

use crate::convert::{to_lua, toml_to_lua};
use crate::sandbox::display;

/// The most `ctx.fs.read` returns.
const MAX_READ: u64 = 16 * 1024 * 1024;

/// `(nil, message)`, Lua's way of failing softly.
type Soft<T> = Result<T, String>;

fn soft<T: mlua::IntoLua>(lua: &Lua, r: Soft<T>) -> mlua::Result<mlua::MultiValue> {
    match r {
        Ok(v) => Ok(mlua::MultiValue::from_vec(vec![v.into_lua(lua)?])),
        Err(e) => Ok(mlua::MultiValue::from_vec(vec![
            Value::Nil,
            Value::String(lua.create_string(e)?),
        ])),
    }
}

fn confinement(ctx: &Context) -> Soft<Arc<Confinement>> {
    wield_tools::fs::confinement(ctx).map_err(|r| r.error.unwrap_or_default())
}

/// The file's bytes (Lua strings are bytes: any encoding reads).
fn read(ctx: &Context, path: &str) -> Soft<Vec<u8>> {
    let conf = confinement(ctx)?;
    let file = conf.open_read(path).map_err(|e| e.to_string())?;
    let mut data = Vec::new();
    file.take(MAX_READ + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("{path}: {e}"))?;
    if data.len() as u64 > MAX_READ {
        return Err(format!(
            "{path} is larger than {}; ctx.fs.read reads files up to that size",
            wield_tools::fs::human_size(MAX_READ)
        ));
    }
    Ok(data)
}

fn write(ctx: &Context, path: &str, data: &[u8]) -> Soft<bool> {
    let conf = confinement(ctx)?;
    let resolved = conf.resolve(path, Access::Write).map_err(|e| e.to_string())?;
    if let Some(parent) = resolved.real_path().parent() {
        conf.create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    conf.write_atomic(path, data).map_err(|e| e.to_string())?;
    Ok(true)
}

fn list(lua: &Lua, ctx: &Context, path: &str) -> mlua::Result<Soft<Table>> {
    let entries = match confinement(ctx).and_then(|c| c.read_dir(path).map_err(|e| e.to_string())) {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    let out = lua.create_table()?;
    for e in entries {
        let item = lua.create_table()?;
        item.set("name", e.name.to_string_lossy().into_owned())?;
        item.set(
            "type",
            match e.kind {
                Kind::File => "file",
                Kind::Dir => "directory",
                Kind::Symlink => "symlink",
                Kind::Other(_) => "other",
            },
        )?;
        item.set("size", e.len)?;
        out.push(item)?;
    }
    Ok(Ok(out))
}

fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `ctx.run(argv, opts)`: the words as one command line of quoted words,
/// run by the `bash` tool under its sandbox and limits.
async fn run(ctx: Context, argv: Vec<String>, opts: Option<Table>) -> mlua::Result<serde_json::Value> {
    if argv.is_empty() {
        return Err(mlua::Error::runtime(
            "ctx.run: argv is empty; pass a list like {\"ls\", \"-l\"}",
        ));
    }
    let command = argv.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
    // At most the call's own time limit.
    let (mut workdir, mut timeout) = (serde_json::Value::Null, json!(ctx.timeout.as_secs_f64()));
    if let Some(o) = &opts {
        if let Some(cwd) = o.get::<Option<String>>("cwd")? {
            workdir = cwd.into();
        }
        if let Some(t) = o.get::<Option<f64>>("timeout")? {
            timeout = t.min(ctx.timeout.as_secs_f64()).into();
        }
    }
    let mut sub = ctx.clone();
    sub.events = wield_core::EventSink::default();
    let result = wield_tools::shell::BashTool::new()
        .execute(
            json!({"command": command, "workdir": workdir, "timeout": timeout, "label": null}),
            &sub,
        )
        .await;
    Ok(json!({
        "success": result.success,
        "output": result.output,
        "error": result.error,
        "exit_code": result.metadata.get("exit_code").cloned().unwrap_or(serde_json::Value::Null),
        "timed_out": result.metadata.get("timed_out").cloned().unwrap_or(false.into()),
    }))
}

/// The call running in a state now: its id, its context and whether its
/// tool is `read_only`.
pub(crate) struct Live {
    id: u64,
    ctx: Context,
    read_only: bool,
}

/// The call running in a state now, if any (one call at a time per state).
pub(crate) type Current = Arc<Mutex<Option<Live>>>;

/// A call's hold on [`Current`]: made when the call starts, and when it is
/// dropped — however the call ends — its `ctx` is dead.
pub(crate) struct Running {
    current: Current,
    pub(crate) id: u64,
}

impl Running {
    pub(crate) fn begin(current: &Current, ctx: &Context, read_only: bool) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        *current.lock().unwrap_or_else(PoisonError::into_inner) = Some(Live {
            id,
            ctx: ctx.clone(),
            read_only,
        });
        Self {
            current: Arc::clone(current),
            id,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|l| l.id == self.id) {
            *current = None;
        }
    }
}

/// The context of call `id` of `tool` if it is the one running now, and
/// whether it is read-only; else the error a kept `ctx` gives.
fn live(current: &Current, id: u64, tool: &str, what: &str) -> mlua::Result<(Context, bool)> {
    match current.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
        Some(l) if l.id == id => Ok((l.ctx.clone(), l.read_only)),
        _ => Err(mlua::Error::runtime(format!(
            "{what}: this ctx belongs to a call of `{tool}` that has ended; a tool can use only the ctx \
             passed to the call running now (a ctx kept in a global or an upvalue is dead once its call returns)"
        ))),
    }
}

/// The raw `ctx.run(id, argv, opts)`, made once per state: an async
/// function must be made while the coroutine library is present, and
/// scripts do not get that library. Each call's `ctx.run` is a closure
/// over it with the call's id (`Sandbox::make_run`), and it runs only
/// while that call runs and is not read-only.
pub(crate) fn run_function(lua: &Lua, current: Current) -> mlua::Result<mlua::Function> {
    lua.create_async_function(move |lua, (id, argv, opts): (u64, Vec<String>, Option<Table>)| {
        let running = current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|l| (l.id, l.ctx.clone(), l.read_only));
        async move {
            let ctx = match running {
                Some((now, ctx, read_only)) if now == id => {
                    if read_only {
                        return Err(mlua::Error::runtime(read_only_refusal(&ctx.tool, "ctx.run")));
                    }
                    ctx
                }
                _ => {
                    return Err(mlua::Error::runtime(
                        "ctx.run: this ctx belongs to a call that has ended; a tool can use only the ctx passed \
                         to the call running now (a ctx kept in a global or an upvalue is dead once its call returns)",
                    ));
                }
            };
            let out = run(ctx, argv, opts).await?;
            to_lua(&lua, &out)
        }
    })
}

/// A read-only tool is approved without asking, so it may not write or
/// run commands: this says so.
fn read_only_refusal(tool: &str, what: &str) -> String {
    format!(
        "{what}: `{tool}` is declared read_only, so it cannot write files or run commands; \
         drop read_only = true (it will need approval)"
    )
}

/// The `ctx` table for the call `running` of tool `ctx.tool`; it works
/// only while that call runs.
pub(crate) fn build(
    lua: &Lua,
    ctx: &Context,
    config: &toml::Table,
    make_run: &mlua::Function,
    current: &Current,
    id: u64,
    read_only: bool,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("cwd", ctx.cwd.display().to_string())?;
    t.set("timeout", ctx.timeout.as_secs_f64())?;
    t.set("tool", ctx.tool.clone())?;
    let tool: Arc<str> = Arc::from(ctx.tool.as_str());
    // The context of this call, while it runs.
    let now = {
        let current = Arc::clone(current);
        move |what: &str| live(&current, id, &tool, what)
    };

    let path = lua.create_table()?;
    let c = now.clone();
    path.set(
        "resolve",
        lua.create_function(move |lua, p: String| {
            let (ctx, _) = c("ctx.path.resolve")?;
            let r = confinement(&ctx).and_then(|conf| {
                conf.real_path(&p, Access::Read)
                    .map(|r| r.display().to_string())
                    .map_err(|e| e.to_string())
            });
            soft(lua, r)
        })?,
    )?;
    t.set("path", path)?;

    let fs = lua.create_table()?;
    let c = now.clone();
    fs.set(
        "read",
        lua.create_function(move |lua, p: String| {
            let (ctx, _) = c("ctx.fs.read")?;
            let data = read(&ctx, &p).map(|bytes| lua.create_string(bytes));
            match data {
                Ok(s) => soft(lua, Ok(s?)),
                Err(e) => soft::<bool>(lua, Err(e)),
            }
        })?,
    )?;
    let c = now.clone();
    fs.set(
        "write",
        lua.create_function(move |lua, (p, data): (String, mlua::LuaString)| {
            let (ctx, read_only) = c("ctx.fs.write")?;
            if read_only {
                return soft::<bool>(lua, Err(read_only_refusal(&ctx.tool, "ctx.fs.write")));
            }
            soft(lua, write(&ctx, &p, &data.as_bytes()))
        })?,
    )?;
    let c = now.clone();
    fs.set(
        "list",
        lua.create_function(move |lua, p: Option<String>| {
            let (ctx, _) = c("ctx.fs.list")?;
            let r = list(lua, &ctx, p.as_deref().unwrap_or("."))?;
            soft(lua, r)
        })?,
    )?;
    t.set("fs", fs)?;

    let sandbox = lua.create_table()?;
    let c = now.clone();
    sandbox.set(
        "is_path_writable",
        lua.create_function(move |_, p: String| {
            let (ctx, read_only) = c("ctx.sandbox.is_path_writable")?;
            Ok(!read_only && confinement(&ctx).is_ok_and(|conf| conf.resolve(&p, Access::Write).is_ok()))
        })?,
    )?;
    t.set("sandbox", sandbox)?;

    if read_only {
        let tool = ctx.tool.clone();
        t.set(
            "run",
            lua.create_function(move |_, _: mlua::MultiValue| -> mlua::Result<()> {
                Err(mlua::Error::runtime(read_only_refusal(&tool, "ctx.run")))
            })?,
        )?;
    } else {
        t.set("run", make_run.call::<mlua::Function>(id)?)?;
    }

    t.set("truncate", truncate_table(lua, ctx)?)?;

    let cfg = config.clone();
    t.set(
        "get_config",
        // A copy each time: the script cannot change what others see.
        lua.create_function(move |lua, _self: Value| toml_to_lua(lua, &cfg))?,
    )?;

    let tool = ctx.tool.clone();
    t.set(
        "log",
        lua.create_function(move |_, args: mlua::Variadic<Value>| {
            let parts: Vec<String> = args.iter().map(display).collect();
            tracing::info!(target: "wield_lua", tool = %tool, "{}", parts.join(" "));
            Ok(())
        })?,
    )?;
    Ok(t)
}

/// `truncate_head` or `truncate_tail`.
type Cut = fn(&str, usize, usize, &wield_core::truncate::SavedOutputs) -> wield_core::truncate::Truncated;

/// `ctx.truncate.head/tail(text, max_lines?, max_bytes?)`,
/// `middle(text, head_lines?, tail_lines?)` and `format_size(bytes)`.
fn truncate_table(lua: &Lua, ctx: &Context) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let limits = ctx.limits;
    // Cut text is saved where the call's runtime keeps its outputs, as a
    // Rust tool's would be.
    let saved = ctx.saved_outputs();
    let ends: [(&str, Cut); 2] = [
        ("head", wield_core::truncate::truncate_head),
        ("tail", wield_core::truncate::truncate_tail),
    ];
    for (name, cut) in ends {
        let saved = Arc::clone(&saved);
        t.set(
            name,
            lua.create_function(move |_, (text, lines, bytes): (String, Option<usize>, Option<usize>)| {
                Ok(cut(
                    &text,
                    lines.unwrap_or(limits.max_lines),
                    bytes.unwrap_or(limits.max_bytes),
                    &saved,
                )
                .text)
            })?,
        )?;
    }
    t.set(
        "middle",
        lua.create_function(move |_, (text, head, tail): (String, Option<usize>, Option<usize>)| {
            let half = limits.max_lines / 2;
            Ok(wield_core::truncate::truncate_middle(
                &text,
                head.unwrap_or(half),
                tail.unwrap_or(half),
                limits.max_bytes,
                &saved,
            )
            .text)
        })?,
    )?;
    t.set(
        "format_size",
        lua.create_function(|_, bytes: f64| Ok(wield_tools::fs::human_size(bytes.max(0.0) as u64)))?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn words_are_quoted_whole() {
        assert_eq!(shell_quote("ls"), "ls");
        assert_eq!(shell_quote("; rm -rf ~"), "'; rm -rf ~'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
    }
}
