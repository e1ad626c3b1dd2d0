//! Lua left out (the `lua` feature off). Tool files are left out with a
//! warning; a Lua approval function — which may refuse calls as well as
//! approve them — is an error rather than ignored, so a policy written with
//! one is never run wider than it was written.

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use wield_core::approval::Resolver;
use wield_core::config::ApprovalConfig;
use wield_core::{Config, KeyTree, Registry, Services, SourceWarning, ToolRef};
use wield_sandbox::fs::Guarded;

/// The `[lua]` keys, still known: a configuration shared with builds that
/// have Lua loads here too.
const CONFIG_KEYS: &[&str] = &["lua.memory_limit", "lua.max_instructions"];

/// What loading the tool files left for later steps: nothing.
pub(crate) struct LuaTools {
    pub tool_names: Vec<String>,
    pub sources: Vec<Infallible>,
}

/// The Lua files in the tool directories are not loaded: a warning says so.
pub(crate) fn load_tools(
    workspace: &Path,
    global: Option<&Path>,
    registry: &mut Registry,
    _local: &mut Vec<ToolRef>,
) -> LuaTools {
    let mut dirs = vec![workspace.join(".wield").join("tools")];
    dirs.extend(global.map(|g| g.join("tools")));
    for dir in dirs {
        if has_lua_files(&dir) {
            let w = format!(
                "the Lua tools in {} are not loaded: this build of wield has no Lua (the `lua` feature)",
                dir.display()
            );
            tracing::warn!("{w}");
            registry.warn("lua", w);
        }
    }
    LuaTools {
        tool_names: Vec::new(),
        sources: Vec::new(),
    }
}

pub(crate) fn register_config_keys(known: &mut KeyTree, _tool_names: &[String]) {
    known.register(CONFIG_KEYS);
}

pub(crate) fn add_sources(sources: Vec<Infallible>, _registry: &mut Registry) -> bool {
    !sources.is_empty()
}

pub(crate) fn report_source_warning(w: &SourceWarning) {
    tracing::warn!("{}", w.message);
}

pub(crate) fn keep_source_tools(_registry: &Registry, _local: &mut [ToolRef]) {}

/// No resolvers; an error when the workspace or the configuration has a
/// Lua approval function.
pub(crate) fn install(
    _services: &mut Services,
    config: &Config,
    workspace: &Path,
) -> Result<Vec<Arc<dyn Resolver>>, String> {
    let dir = workspace.join(".wield").join("resolvers");
    if has_lua_files(&dir) {
        return Err(format!(
            "{} holds Lua approval resolvers, and this build of wield has no Lua (the `lua` feature): they could \
             refuse calls, so wield does not run without them; build wield with the `lua` feature or move them away",
            dir.display()
        ));
    }
    if let Some(entry) = config
        .approval
        .auto_approve
        .iter()
        .find(|e| ApprovalConfig::lua_file(e).is_some())
    {
        return Err(format!(
            "approval.auto_approve names the Lua file {entry}, and this build of wield has no Lua (the `lua` \
             feature): build wield with it or remove the entry"
        ));
    }
    Ok(Vec::new())
}

/// No Lua file runs as policy, so none needs guarding.
pub(crate) fn policy_files(_config: &Config, _workspace: &Path) -> Result<Vec<Guarded>, String> {
    Ok(Vec::new())
}

/// A configuration with Lua entries never loads ([`install`]).
pub(crate) fn without_lua_entries(approval: &ApprovalConfig) -> ApprovalConfig {
    approval.clone()
}

fn has_lua_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.path().extension().is_some_and(|x| x == "lua"))
    })
}
