//! `ctx`, what a Lua tool sees of wield: the stable contract, and nothing
//! else. Files go through the same confinement as the file tools (the same
//! roots, the same refusals); commands run through the `bash` tool (its
//! sandbox, scrubbed environment, timeout and output limits).

use std::io::Read;
use std::sync::Arc;

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

/// The call whose `ctx.run` runs now (one call at a time per state).
pub(crate) type Current = Arc<std::sync::Mutex<Option<Context>>>;

/// `ctx.run`, made once per state: an async function must be made while
/// the coroutine library is present, and scripts do not get that library.
pub(crate) fn run_function(lua: &Lua, current: Current) -> mlua::Result<mlua::Function> {
    lua.create_async_function(move |lua, (argv, opts): (Vec<String>, Option<Table>)| {
        let ctx = current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        async move {
            let Some(ctx) = ctx else {
                return Err(mlua::Error::runtime("ctx.run: no call is running"));
            };
            let out = run(ctx, argv, opts).await?;
            to_lua(&lua, &out)
        }
    })
}

/// The `ctx` table for one call of tool `name`.
/// A read-only tool is approved without asking, so it may not write or
/// run commands: this says so.
fn read_only_refusal(tool: &str, what: &str) -> String {
    format!(
        "{what}: `{tool}` is declared read_only, so it cannot write files or run commands; \
         drop read_only = true (it will need approval)"
    )
}

pub(crate) fn build(
    lua: &Lua,
    ctx: &Context,
    config: &toml::Table,
    run_fn: &mlua::Function,
    read_only: bool,
) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("cwd", ctx.cwd.display().to_string())?;
    t.set("timeout", ctx.timeout.as_secs_f64())?;
    t.set("tool", ctx.tool.clone())?;

    let path = lua.create_table()?;
    let c = ctx.clone();
    path.set(
        "resolve",
        lua.create_function(move |lua, p: String| {
            let r = confinement(&c).and_then(|conf| {
                conf.real_path(&p, Access::Read)
                    .map(|r| r.display().to_string())
                    .map_err(|e| e.to_string())
            });
            soft(lua, r)
        })?,
    )?;
    t.set("path", path)?;

    let fs = lua.create_table()?;
    let c = ctx.clone();
    fs.set(
        "read",
        lua.create_function(move |lua, p: String| {
            let data = read(&c, &p).map(|bytes| lua.create_string(bytes));
            match data {
                Ok(s) => soft(lua, Ok(s?)),
                Err(e) => soft::<bool>(lua, Err(e)),
            }
        })?,
    )?;
    let c = ctx.clone();
    fs.set(
        "write",
        lua.create_function(move |lua, (p, data): (String, mlua::LuaString)| {
            if read_only {
                return soft::<bool>(lua, Err(read_only_refusal(&c.tool, "ctx.fs.write")));
            }
            soft(lua, write(&c, &p, &data.as_bytes()))
        })?,
    )?;
    let c = ctx.clone();
    fs.set(
        "list",
        lua.create_function(move |lua, p: Option<String>| {
            let r = list(lua, &c, p.as_deref().unwrap_or("."))?;
            soft(lua, r)
        })?,
    )?;
    t.set("fs", fs)?;

    let sandbox = lua.create_table()?;
    let c = ctx.clone();
    sandbox.set(
        "is_path_writable",
        lua.create_function(move |_, p: String| {
            Ok(!read_only && confinement(&c).is_ok_and(|conf| conf.resolve(&p, Access::Write).is_ok()))
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
        t.set("run", run_fn)?;
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
type Cut = fn(&str, usize, usize) -> wield_core::truncate::Truncated;

/// `ctx.truncate.head/tail(text, max_lines?, max_bytes?)`,
/// `middle(text, head_lines?, tail_lines?)` and `format_size(bytes)`.
fn truncate_table(lua: &Lua, ctx: &Context) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let limits = ctx.limits;
    let ends: [(&str, Cut); 2] = [
        ("head", wield_core::truncate::truncate_head),
        ("tail", wield_core::truncate::truncate_tail),
    ];
    for (name, cut) in ends {
        t.set(
            name,
            lua.create_function(move |_, (text, lines, bytes): (String, Option<usize>, Option<usize>)| {
                Ok(cut(
                    &text,
                    lines.unwrap_or(limits.max_lines),
                    bytes.unwrap_or(limits.max_bytes),
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
