//! `[mcp.servers.NAME]`: how to reach an external MCP server.
//!
//! ```toml
//! [mcp.servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { DEBUG = "1" }          # added to wield's environment
//! cwd = "tools"                  # relative to the workspace (the default)
//! timeout = "20s"                # start-up and each call (default 30 s)
//!
//! [mcp.servers.docs]
//! url = "http://127.0.0.1:8080/mcp"
//! headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
//! deferred = true                # tools listed by name, loaded on demand
//! enabled = false                # configured but not started
//! ```
//!
//! `${VAR}` in `env` and `headers` values is replaced by the variable from
//! wield's environment, so secrets stay out of config files. A variable
//! that is not set makes that server's start fail, naming it (a warning,
//! like any failed start): an empty token would only fail later, less
//! clearly.
//! A local server gets wield's whole environment, with `env` added on top.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wield_core::Config;

use crate::McpError;

/// Start-up and per-call time limit when `timeout` is not set.
/// The keys of `[mcp.servers.NAME]` tables.
pub const CONFIG_KEYS: &[&str] = &[
    "mcp.servers.*.command",
    "mcp.servers.*.args",
    "mcp.servers.*.env.**",
    "mcp.servers.*.cwd",
    "mcp.servers.*.url",
    "mcp.servers.*.headers.**",
    "mcp.servers.*.deferred",
    "mcp.servers.*.enabled",
    "mcp.servers.*.timeout",
];

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A local process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// `cwd`, else the workspace.
        cwd: PathBuf,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// One line for listings: the command line or the URL.
    pub fn summary(&self) -> String {
        match self {
            Self::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            Self::Http { url, .. } => url.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub deferred: bool,
    pub enabled: bool,
    /// For start-up and for each call.
    pub timeout: Duration,
    /// The workspace, offered to the server as its one root.
    pub workspace: PathBuf,
    /// Why the server cannot start as configured (an `env` or `headers`
    /// value names a variable that is not set): its start fails with this,
    /// a warning like any failed start, and nothing else is held up.
    pub unresolved: Option<String>,
}

impl ServerConfig {
    /// Every `[mcp.servers.NAME]` table, in name order. Relative `cwd`s are
    /// resolved against `workspace`. A server whose table has a mistake is
    /// kept, failing its start with what is wrong (a warning, like any
    /// failed start): one server's typo does not stop wield or the other
    /// servers.
    pub fn all_from(config: &Config, workspace: &Path) -> Result<Vec<ServerConfig>, McpError> {
        // A section of the wrong type would otherwise read as "no servers".
        for (path, example) in [
            ("mcp", "[mcp.servers.NAME] with command = \"...\" or url = \"...\""),
            (
                "mcp.servers",
                "[mcp.servers.NAME] with command = \"...\" or url = \"...\", one table per server",
            ),
        ] {
            if let Some(v) = config.value(path).filter(|v| !v.is_table()) {
                return Err(McpError::Config(format!(
                    "{path} must be a table, e.g. {example}; found {}",
                    v.type_str()
                )));
            }
        }
        let servers: Vec<ServerConfig> = config
            .table_at("mcp.servers")
            .iter()
            .map(|(name, value)| {
                let parsed = match value.as_table() {
                    Some(table) => Self::parse(name, table, workspace),
                    None => Err(McpError::Config(format!(
                        "mcp.servers.{name} must be a table, e.g. [mcp.servers.{name}] with command = \"...\" or url = \"...\""
                    ))),
                };
                parsed.unwrap_or_else(|e| Self::misconfigured(name, value, workspace, &e))
            })
            .collect();
        check_case(&servers)?;
        Ok(servers)
    }

    /// A server whose table has a mistake: what can be read of it, for
    /// listings, and a start that fails saying what is wrong.
    fn misconfigured(name: &str, value: &toml::Value, workspace: &Path, error: &McpError) -> ServerConfig {
        let table = value.as_table();
        let text = |k: &str| {
            table
                .and_then(|t| t.get(k))
                .and_then(toml::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let transport = if table.is_some_and(|t| t.contains_key("url") && !t.contains_key("command")) {
            Transport::Http {
                url: text("url"),
                headers: BTreeMap::new(),
            }
        } else {
            Transport::Stdio {
                command: text("command"),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: workspace.to_path_buf(),
            }
        };
        let why = match error {
            McpError::Config(why) => why.clone(),
            other => wield_core::error_chain(other),
        };
        ServerConfig {
            name: name.to_owned(),
            transport,
            deferred: false,
            enabled: table
                .and_then(|t| t.get("enabled"))
                .and_then(toml::Value::as_bool)
                .unwrap_or(true),
            timeout: DEFAULT_TIMEOUT,
            workspace: workspace.to_path_buf(),
            unresolved: Some(format!("its configuration has a mistake: {why}; fix it in the config")),
        }
    }

    pub fn parse(name: &str, table: &toml::Table, workspace: &Path) -> Result<ServerConfig, McpError> {
        check_name(name)?;
        let enabled = match table.get("enabled") {
            None => true,
            Some(toml::Value::Boolean(b)) => *b,
            Some(other) => {
                return Err(McpError::Config(format!(
                    "mcp.servers.{name}.enabled must be true or false, found {}",
                    other.type_str()
                )));
            }
        };
        let key = |k: &str| format!("mcp.servers.{name}.{k}");
        let string = |k: &str| -> Result<Option<String>, McpError> {
            match table.get(k) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(McpError::Config(format!(
                    "{} must be a string, found {}",
                    key(k),
                    other.type_str()
                ))),
            }
        };
        let boolean = |k: &str, default: bool| -> Result<bool, McpError> {
            match table.get(k) {
                None => Ok(default),
                Some(toml::Value::Boolean(b)) => Ok(*b),
                Some(other) => Err(McpError::Config(format!(
                    "{} must be true or false, found {}",
                    key(k),
                    other.type_str()
                ))),
            }
        };
        let unresolved: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
        let map = |k: &str| -> Result<BTreeMap<String, String>, McpError> {
            match table.get(k) {
                None => Ok(BTreeMap::new()),
                Some(toml::Value::Table(t)) => t
                    .iter()
                    .map(|(n, v)| match v {
                        // A server that is not started needs no values.
                        toml::Value::String(s) if !enabled => Ok((n.clone(), s.clone())),
                        toml::Value::String(s) => match expand_env(s) {
                            Ok(s) => Ok((n.clone(), s)),
                            Err(var) => {
                                unresolved.borrow_mut().get_or_insert_with(|| {
                                    format!(
                                        "{}.{n} refers to ${{{var}}}, but {var} is not set in wield's environment",
                                        key(k)
                                    )
                                });
                                Ok((n.clone(), s.clone()))
                            }
                        },
                        other => Err(McpError::Config(format!(
                            "{}.{n} must be a string, found {}",
                            key(k),
                            other.type_str()
                        ))),
                    })
                    .collect(),
                Some(other) => Err(McpError::Config(format!(
                    "{} must be a table of strings, e.g. {{ NAME = \"value\" }}, found {}",
                    key(k),
                    other.type_str()
                ))),
            }
        };

        let command = string("command")?;
        let url = string("url")?;
        let transport = match (command, url) {
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(McpError::Config(format!("{} must not be empty", key("command"))));
                }
                let args = match table.get("args") {
                    None => Vec::new(),
                    Some(toml::Value::Array(items)) => items
                        .iter()
                        .map(|v| match v {
                            toml::Value::String(s) => Ok(s.clone()),
                            other => Err(McpError::Config(format!(
                                "{} must be a list of strings, found a {}",
                                key("args"),
                                other.type_str()
                            ))),
                        })
                        .collect::<Result<_, _>>()?,
                    Some(other) => Err(McpError::Config(format!(
                        "{} must be a list of strings, e.g. [\"-y\", \"pkg\"], found {}",
                        key("args"),
                        other.type_str()
                    )))?,
                };
                // Relative arguments (`args = ["data"]`) mean the same
                // whatever directory wield was started from.
                let cwd = match string("cwd")? {
                    Some(c) => {
                        let p = PathBuf::from(c);
                        if p.is_absolute() { p } else { workspace.join(p) }
                    }
                    None => workspace.to_path_buf(),
                };
                Transport::Stdio {
                    command,
                    args,
                    env: map("env")?,
                    cwd,
                }
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(McpError::Config(format!(
                        "{} must be an http:// or https:// URL, got `{url}`",
                        key("url")
                    )));
                }
                for k in ["args", "env", "cwd"] {
                    if table.contains_key(k) {
                        return Err(McpError::Config(format!(
                            "{} only applies to servers started with `command`, not to `url` servers",
                            key(k)
                        )));
                    }
                }
                Transport::Http {
                    url,
                    headers: map("headers")?,
                }
            }
            (Some(_), Some(_)) => {
                return Err(McpError::Config(format!(
                    "mcp.servers.{name} sets both `command` and `url`: use `command` for a local server, `url` for an HTTP one"
                )));
            }
            (None, None) => {
                return Err(McpError::Config(format!(
                    "mcp.servers.{name} needs `command` (a local server) or `url` (an HTTP server)"
                )));
            }
        };
        if matches!(transport, Transport::Stdio { .. }) && table.contains_key("headers") {
            return Err(McpError::Config(format!(
                "{} only applies to `url` servers",
                key("headers")
            )));
        }
        let timeout = match table.get("timeout") {
            None => DEFAULT_TIMEOUT,
            Some(v) => parse_timeout(v).ok_or_else(|| {
                McpError::Config(format!(
                    "{} must be a positive number of seconds or a duration like \"20s\", found {v}",
                    key("timeout")
                ))
            })?,
        };
        Ok(ServerConfig {
            name: name.to_owned(),
            transport,
            deferred: boolean("deferred", false)?,
            enabled,
            timeout,
            workspace: workspace.to_path_buf(),
            unresolved: unresolved.into_inner(),
        })
    }
}

/// Server names become part of tool names (`mcp__NAME__tool`), so they must
/// be API-safe and must not contain the `__` separator, nor touch it: a
/// server `ev_` would make `mcp__ev___x`, which another server's rule
/// `mcp__ev__*` matches.
fn check_name(name: &str) -> Result<(), McpError> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !name.contains("__")
        && !name.starts_with('_')
        && !name.ends_with('_');
    if ok {
        Ok(())
    } else {
        Err(McpError::Config(format!(
            "MCP server name `{name}` must be 1-32 letters, digits, `_` or `-` (no `__`, no `_` at either end): it becomes part of tool names like mcp__{name}__tool"
        )))
    }
}

/// Approval rules and tool filters match tool names ignoring case, so a
/// rule for `mcp__s__*` would reach the tools of a server named `S` too:
/// server names must differ in more than case.
fn check_case(servers: &[ServerConfig]) -> Result<(), McpError> {
    let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for s in servers {
        if let Some(other) = seen.insert(s.name.to_lowercase(), &s.name) {
            return Err(McpError::Config(format!(
                "MCP server names `{other}` and `{}` differ only in case; approval rules and tool filters match \
                 tool names ignoring case, so a rule for one would reach the other's tools: rename one",
                s.name
            )));
        }
    }
    Ok(())
}

fn parse_timeout(v: &toml::Value) -> Option<Duration> {
    let d = match v {
        toml::Value::Integer(n) => u64::try_from(*n).ok().map(Duration::from_secs),
        toml::Value::Float(f) => wield_core::config::seconds(*f),
        toml::Value::String(s) => wield_core::config::parse_duration(s),
        _ => None,
    }?;
    (!d.is_zero()).then_some(d)
}

/// Replace each `${VAR}` with the environment variable; the name of the
/// first variable that is not set (or not Unicode) is the error. A `${`
/// without its `}` stays as it is.
fn expand_env(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            // `${}` names no variable: kept as written.
            Some(0) => {
                out.push_str("${}");
                rest = &after[1..];
            }
            Some(end) => {
                let var = &after[..end];
                out.push_str(&std::env::var(var).map_err(|_| var.to_owned())?);
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServerConfig, McpError> {
        let t: toml::Table = toml::from_str(text).unwrap();
        ServerConfig::parse("srv", &t, Path::new("/ws"))
    }

    #[test]
    fn stdio_and_http_servers() {
        let s = parse("command = \"npx\"\nargs = [\"-y\", \"x\"]\ncwd = \"sub\"\ntimeout = \"5s\"").unwrap();
        assert_eq!(s.timeout, Duration::from_secs(5));
        assert!(s.enabled && !s.deferred);
        let Transport::Stdio { args, cwd, .. } = &s.transport else {
            panic!()
        };
        assert_eq!(args, &["-y", "x"]);
        assert_eq!(cwd, Path::new("/ws/sub"));
        assert_eq!(s.transport.summary(), "npx -y x");
        let s = parse("command = \"npx\"").unwrap();
        let Transport::Stdio { cwd, .. } = &s.transport else {
            panic!()
        };
        assert_eq!(cwd, Path::new("/ws"), "the workspace is the default cwd");

        let s = parse("url = \"http://127.0.0.1:1/mcp\"\ndeferred = true\nheaders = { A = \"b\" }").unwrap();
        assert!(s.deferred);
        assert!(matches!(s.transport, Transport::Http { .. }));
    }

    #[test]
    fn mistakes_are_explained() {
        let e = parse("").unwrap_err().to_string();
        assert!(e.contains("needs `command`"), "{e}");
        let e = parse("command = \"a\"\nurl = \"http://x\"").unwrap_err().to_string();
        assert!(e.contains("both"), "{e}");
        let e = parse("url = \"ftp://x\"").unwrap_err().to_string();
        assert!(e.contains("http://"), "{e}");
        let e = parse("command = \"a\"\ntimeout = -1").unwrap_err().to_string();
        assert!(e.contains("timeout"), "{e}");
        let e = parse("command = \"a\"\nargs = \"x\"").unwrap_err().to_string();
        assert!(e.contains("list of strings"), "{e}");
        let t = toml::Table::new();
        assert!(ServerConfig::parse("a__b", &t, Path::new("/")).is_err());
        assert!(ServerConfig::parse("a.b", &t, Path::new("/")).is_err());
        for bad in ["ev_", "_ev"] {
            let e = ServerConfig::parse(bad, &t, Path::new("/")).unwrap_err().to_string();
            assert!(e.contains("either end"), "{e}");
        }
    }

    /// Regression: `mcp` or `mcp.servers` of another type than a table was
    /// read as "no servers configured".
    #[test]
    fn sections_of_the_wrong_type_are_errors() {
        for text in ["[mcp]\nservers = 5", "[mcp]\nservers = []", "mcp = \"x\"", "mcp = 5"] {
            let table: toml::Table = toml::from_str(text).unwrap();
            let config = Config::from_table(table).unwrap();
            let e = ServerConfig::all_from(&config, Path::new("/ws"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("must be a table"), "{text}: {e}");
        }
        let table: toml::Table = toml::from_str("[mcp]\n").unwrap();
        assert!(
            ServerConfig::all_from(&Config::from_table(table).unwrap(), Path::new("/ws"))
                .unwrap()
                .is_empty()
        );
    }

    /// A mistake in one server's table fails that server, saying what is
    /// wrong, and leaves the others as they are.
    #[test]
    fn a_servers_mistake_is_its_own() {
        let text = "[mcp.servers.good]\ncommand = \"a\"\n\
                    [mcp.servers.late]\nurl = \"http://x/mcp\"\ntimeout = \"soon\"\n\
                    [mcp.servers.flat]\ncommand = 5\n\
                    [mcp.servers]\nodd = 3\n";
        let config = Config::from_table(toml::from_str(text).unwrap()).unwrap();
        let servers = ServerConfig::all_from(&config, Path::new("/ws")).unwrap();
        let get = |n: &str| servers.iter().find(|s| s.name == n).unwrap();
        assert_eq!(get("good").unresolved, None);
        let late = get("late");
        assert_eq!(late.transport.summary(), "http://x/mcp");
        assert!(
            late.unresolved.as_deref().unwrap().contains("mcp.servers.late.timeout"),
            "{late:?}"
        );
        assert!(
            get("flat")
                .unresolved
                .as_deref()
                .unwrap()
                .contains("mcp.servers.flat.command")
        );
        assert!(get("odd").unresolved.as_deref().unwrap().contains("must be a table"));
    }

    #[test]
    fn server_names_must_differ_in_more_than_case() {
        let text = "[mcp.servers.s]\ncommand = \"a\"\n[mcp.servers.S]\ncommand = \"b\"\n";
        let config = Config::from_table(toml::from_str(text).unwrap()).unwrap();
        let e = ServerConfig::all_from(&config, Path::new("/ws"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("differ only in case") && e.contains("rename one"), "{e}");
    }

    #[test]
    fn env_references_expand() {
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(expand_env("x${PATH}y").unwrap(), format!("x{path}y"));
        assert_eq!(expand_env("a${b").unwrap(), "a${b");
        assert_eq!(expand_env("a${}b").unwrap(), "a${}b");
        assert_eq!(
            expand_env("${WIELD_SURELY_UNSET_VAR}").unwrap_err(),
            "WIELD_SURELY_UNSET_VAR"
        );
    }

    /// Regression: a variable that is not set became an empty string, so
    /// `Bearer ${TOKEN}` sent `Bearer ` and the server's refusal was all
    /// the user saw. Now that server's start fails, saying why.
    #[test]
    fn an_unset_variable_fails_its_server_naming_it() {
        let s =
            parse("url = \"http://x\"\nheaders = { Authorization = \"Bearer ${WIELD_SURELY_UNSET_VAR}\" }").unwrap();
        let e = s.unresolved.unwrap();
        assert!(
            e.contains("mcp.servers.srv.headers.Authorization") && e.contains("WIELD_SURELY_UNSET_VAR is not set"),
            "{e}"
        );
        let s = parse("command = \"a\"\nenv = { A = \"${WIELD_SURELY_UNSET_VAR}\" }").unwrap();
        assert!(s.unresolved.unwrap().contains("mcp.servers.srv.env.A"));
        // A server that is not started is not checked.
        let s = parse("command = \"a\"\nenabled = false\nenv = { A = \"${WIELD_SURELY_UNSET_VAR}\" }").unwrap();
        assert!(!s.enabled && s.unresolved.is_none());
        assert_eq!(
            parse("command = \"a\"\nenv = { A = \"${PATH}\" }").unwrap().unresolved,
            None
        );
    }
}
