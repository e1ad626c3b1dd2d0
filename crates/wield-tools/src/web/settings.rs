//! `[web_fetch]` and `[web_search]` as typed settings, read from the tool's
//! own config table at each call.

use std::time::Duration;

use wield_core::{ConfigKey, HANDLES_TIMEOUT, ToolTraits};

use super::guard::Allow;
use super::http::Limits;

/// The default body cap of `web_fetch` (`web_fetch.max_bytes`): 5 MiB.
pub const DEFAULT_MAX_BYTES: usize = 5 << 20;
/// The default time limit of one fetch or search, redirects included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The keys both tools read from their own tables (`timeout` is read by
/// the executor).
/// The traits of both web tools. Not read-only: they reach the network
/// (a fetched URL, a query leaving the machine), so they stay out of
/// `$standard` and need approval by default.
pub(crate) fn traits() -> ToolTraits {
    ToolTraits {
        open_world: true,
        groups: vec!["web".into()],
        capabilities: vec![HANDLES_TIMEOUT.into()],
        ..ToolTraits::default()
    }
}

pub(crate) fn common_keys() -> Vec<ConfigKey> {
    ["allow", "max_bytes", "timeout"]
        .into_iter()
        .map(ConfigKey::new)
        .collect()
}

/// The guard and limits from a tool's table (`tool` names it in errors).
///
/// The time limit is the call's, which the executor put in the context:
/// `timeout` in the tool's table, else [`DEFAULT_TIMEOUT`].
pub(crate) fn limits(tool: &str, table: &toml::Table, timeout: Duration) -> Result<Limits, String> {
    let key = |k: &str| format!("{tool}.{k}");
    let allow_key = key("allow");
    let allow = match table.get("allow") {
        None => Allow::default(),
        Some(toml::Value::Array(items)) => {
            let items: Option<Vec<String>> = items.iter().map(|v| v.as_str().map(str::to_owned)).collect();
            let items = items.ok_or_else(|| format!("{allow_key} must be a list of strings"))?;
            Allow::parse(&allow_key, &items)?
        }
        Some(v) => return Err(format!("{allow_key} must be a list of strings, found {v}")),
    };
    let max_bytes = match table.get("max_bytes") {
        None => DEFAULT_MAX_BYTES,
        Some(v) => v
            .as_integer()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{} must be a positive number of bytes, found {v}", key("max_bytes")))?,
    };
    Ok(Limits {
        allow,
        allow_key,
        max_bytes,
        timeout,
    })
}

/// A string key of a tool's table.
pub(crate) fn string(tool: &str, table: &toml::Table, key: &str) -> Result<Option<String>, String> {
    match table.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(format!("{tool}.{key} must be a string, found {v}")),
    }
}
