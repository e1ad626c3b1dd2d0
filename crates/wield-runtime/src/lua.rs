//! Lua in the runtime: tools from `.wield/tools/*.lua` and the global tools
//! directory (and their async sources), the `[lua]` limits, and the Lua
//! approval resolvers (`.wield/resolvers/*.lua`, Lua files named in
//! `approval.auto_approve`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wield_core::approval::Resolver;
use wield_core::config::ApprovalConfig;
use wield_core::{Config, KeyTree, Registry, Services, SourceWarning, ToolRef};
use wield_lua::{Limits, LuaResolver, LuaService};
use wield_sandbox::fs::Guarded;

/// What loading the tool files left for later steps.
pub(crate) struct LuaTools {
    /// The names of the file-defined tools (their `[tools.NAME]` tables
    /// are known keys).
    pub tool_names: Vec<String>,
    pub sources: Vec<wield_lua::AsyncSource>,
}

/// Load the tool files and register their tools in `registry` (and with
/// the local tools, which a rebuild registers again); one that cannot be
/// registered is a warning.
pub(crate) fn load_tools(
    workspace: &Path,
    global: Option<&Path>,
    registry: &mut Registry,
    local: &mut Vec<ToolRef>,
) -> LuaTools {
    let mut dirs = wield_lua::tool_dirs(workspace, global);
    let mut warnings = Vec::new();
    if let Some(w) = nested_warning(workspace, &dirs[0]) {
        dirs.remove(0);
        warnings.push(w);
    }
    let mut loaded = wield_lua::load_tools(&dirs, Limits::default());
    warnings.append(&mut loaded.warnings);
    loaded.warnings = warnings;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
        registry.warn("lua", w.clone());
    }
    let mut tool_names = Vec::new();
    for tool in loaded.tools {
        let name = tool.spec().name.clone();
        match registry.register_from(Arc::clone(&tool), "lua") {
            Ok(()) => {
                tool_names.push(name);
                local.push(tool);
            }
            Err(e) => {
                let w = format!("Lua tool `{name}` left out: {e}");
                tracing::warn!("{w}");
                registry.warn("lua", w);
            }
        }
    }
    LuaTools {
        tool_names,
        sources: loaded.sources,
    }
}

/// In a workspace inside another wield project's workspace, that
/// project's sandboxed commands could have written the workspace's
/// `.wield/` Lua files (as its config, which loads only when trusted):
/// they are not loaded, and a warning says so when `dir` holds any.
fn nested_warning(workspace: &Path, dir: &Path) -> Option<String> {
    let outer = wield_core::config::enclosing_project(workspace)?;
    let any = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .any(|e| e.path().extension().is_some_and(|x| x == "lua"));
    any.then(|| {
        format!(
            "the Lua files in {} are not loaded: this workspace is inside the wield project {}, whose commands \
             could have written them; run wield from {} or move them to the global tools directory",
            dir.display(),
            outer.display(),
            outer.display()
        )
    })
}

/// `[lua]` and each Lua tool's `[tools.NAME]`.
pub(crate) fn register_config_keys(known: &mut KeyTree, tool_names: &[String]) {
    known.register(wield_lua::CONFIG_KEYS);
    for name in tool_names {
        known.insert(&format!("tools.{name}.**"));
    }
}

/// Queue the async sources; whether there were any.
pub(crate) fn add_sources(sources: Vec<wield_lua::AsyncSource>, registry: &mut Registry) -> bool {
    let any = !sources.is_empty();
    for s in sources {
        s.add_to(registry);
    }
    any
}

/// Say why a source's tools are missing.
pub(crate) fn report_source_warning(w: &SourceWarning) {
    match w.source.strip_prefix("lua:") {
        Some(file) => tracing::warn!("Lua tool source {file}: {}", w.message),
        None => tracing::warn!("{}", w.message),
    }
}

/// The tools the Lua sources registered, kept with the local tools so a
/// rebuild has them too.
pub(crate) fn keep_source_tools(registry: &Registry, local: &mut Vec<ToolRef>) {
    for r in registry.list() {
        if r.source.starts_with("lua:") {
            local.push(Arc::clone(&r.tool));
        }
    }
}

/// Install the [`LuaService`] (limits, configuration) and load the Lua
/// approval resolvers; a resolver file that fails is a warning.
pub(crate) fn install(
    services: &mut Services,
    config: &Config,
    workspace: &Path,
) -> Result<Vec<Arc<dyn Resolver>>, String> {
    let limits = Limits::from_config(config)?;
    services.insert(Arc::new(LuaService {
        limits,
        config: Some(Arc::new(config.clone())),
    }));
    let dir = workspace.join(".wield").join("resolvers");
    if let Some(w) = nested_warning(workspace, &dir) {
        tracing::warn!("{w}");
        return Ok(Vec::new());
    }
    let (mut resolvers, warnings) = wield_lua::load_resolvers(&dir, limits);
    for w in warnings {
        tracing::warn!("{w}");
    }
    let top = canonical(workspace);
    for entry in &config.approval.auto_approve {
        if let Some(file) = wield_lua::auto_approve_file(entry, workspace) {
            if let Some(outer) = wield_core::config::enclosing_project(workspace) {
                tracing::warn!(
                    "approval.auto_approve names the Lua file {}, which is not loaded: this workspace is inside the wield project {}",
                    file.display(),
                    outer.display()
                );
                continue;
            }
            match LuaResolver::auto_approve_file(&file, module_dir(&file, &top).as_deref(), limits) {
                Ok(r) => resolvers.push(Arc::new(r)),
                Err(e) => {
                    return Err(format!(
                        "approval.auto_approve names the Lua file {}, which cannot be used: {e}",
                        file.display()
                    ));
                }
            }
        }
    }
    Ok(resolvers)
}

/// Where the `require` of an `approval.auto_approve` Lua file finds its
/// modules: the file's own directory, which [`policy_files`] guards with
/// it — but not when that is the workspace's top directory (or holds it),
/// which cannot be made read-only without making the whole workspace so:
/// such a file cannot `require`.
/// `top` is the canonical workspace.
fn module_dir(file: &Path, top: &Path) -> Option<PathBuf> {
    let dir = file.parent()?;
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    (!top.starts_with(&real)).then(|| dir.to_path_buf())
}

/// `workspace` as the kernel names it.
fn canonical(workspace: &Path) -> PathBuf {
    std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

/// The Lua files wield runs as approval policy (`approval.auto_approve`
/// entries naming a `.lua` file) and the directories their `require` reads,
/// guarded from tools and commands for as long as the runtime lives. The
/// resolvers of `.wield/resolvers/` need nothing more: `.wield/` is
/// protected.
///
/// A file or module directory reached through a symbolic link is refused:
/// the link itself could be pointed elsewhere by a command (a sandbox can
/// keep what a link leads to read-only, not the link).
pub(crate) fn policy_files(config: &Config, workspace: &Path) -> Result<Vec<Guarded>, String> {
    let mut out = Vec::new();
    let top = canonical(workspace);
    for entry in &config.approval.auto_approve {
        let Some(file) = wield_lua::auto_approve_file(entry, workspace) else {
            continue;
        };
        let dir = module_dir(&file, &top);
        for path in std::iter::once(file.as_path()).chain(dir.as_deref()) {
            if let Some(link) = crate::links::linked(path, &top) {
                return Err(format!(
                    "approval.auto_approve names the Lua file {}, and {} is a symbolic link: a command could point it \
                     elsewhere and approve what it likes; name the file itself, in a directory that is no link",
                    file.display(),
                    link.display()
                ));
            }
        }
        out.push(Guarded::new(
            &file,
            "a Lua approval function wield runs as policy (approval.auto_approve)",
        ));
        if let Some(dir) = dir {
            out.push(Guarded::new(
                dir,
                "the directory of a Lua approval function wield runs as policy (approval.auto_approve), where its \
                 require finds modules",
            ));
        }
    }
    Ok(out)
}

/// The approval configuration without the Lua files of `auto_approve`
/// (their resolvers answer for them).
pub(crate) fn without_lua_entries(approval: &ApprovalConfig) -> ApprovalConfig {
    let mut out = approval.clone();
    out.auto_approve
        .retain(|e| wield_lua::auto_approve_file(e, Path::new("")).is_none());
    out
}
