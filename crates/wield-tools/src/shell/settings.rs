//! `[bash]` and `[sandbox]` as typed settings, and the [`ShellService`] that
//! carries them (with the resolved sandbox) to the bash and process tools.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use wield_core::config::parse_duration;
use wield_core::{Config, ConfigKey};
use wield_sandbox::fs::chat::Ledger;
use wield_sandbox::process::{BackendChoice, Enabled, EnvPolicy, Inherit, RunGuard, SandboxPlan, SandboxSettings};

use crate::SetupError;

/// The keys of `[bash]`.
pub(crate) fn config_keys() -> Vec<ConfigKey> {
    [
        "shell",
        "rewrite",
        "timeout",
        "max_timeout",
        "grace",
        "max_output_bytes",
        "max_lines",
        "head_lines",
        "tail_lines",
        "env.inherit",
        "env.keep",
        "env.set.**",
        "git_watch",
    ]
    .into_iter()
    .map(ConfigKey::new)
    .collect()
}

/// How commands run: `[bash]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellSettings {
    /// The argv the command is appended to (`bash.shell`; default
    /// `["bash", "-c"]`; a string `"zsh"` means `["zsh", "-c"]`).
    pub shell: Vec<String>,
    /// A minijinja template applied to the command (`{{ command }}`,
    /// `{{ workdir }}`, `{{ workspace }}`).
    pub rewrite: Option<String>,
    pub timeout: Duration,
    /// The largest timeout a call may ask for.
    pub max_timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Per stream, during capture.
    pub max_output_bytes: usize,
    /// Output longer than this many lines is cut in the middle…
    pub max_lines: usize,
    /// …keeping this many first lines…
    pub head_lines: usize,
    /// …and this many last ones.
    pub tail_lines: usize,
    pub env: EnvPolicy,
    /// `process.max_background`: background processes one session may have
    /// running at once.
    pub max_background: usize,
    /// `bash.git_watch`: report what a command set in the git repositories
    /// under the workspace that git runs later (default true).
    pub git_watch: bool,
}

/// The keys of the command sandbox and of background processes, which
/// these settings read.
pub const CONFIG_KEYS: &[&str] = &[
    "sandbox.enabled",
    "sandbox.backend",
    "sandbox.network",
    "sandbox.read",
    "sandbox.write",
    "sandbox.protected",
    "sandbox.allow_unix_sockets",
    "process.max_background",
];

/// The default of `process.max_background`.
pub const DEFAULT_MAX_BACKGROUND: usize = 16;

impl Default for ShellSettings {
    fn default() -> Self {
        Self {
            shell: vec!["bash".into(), "-c".into()],
            rewrite: None,
            timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            grace: wield_sandbox::process::DEFAULT_GRACE,
            max_output_bytes: 1 << 20,
            max_lines: 200,
            head_lines: 100,
            tail_lines: 80,
            env: EnvPolicy::default(),
            max_background: DEFAULT_MAX_BACKGROUND,
            git_watch: true,
        }
    }
}

fn invalid(key: &str, what: &str, found: &toml::Value) -> SetupError {
    SetupError::Invalid(format!("{key} must be {what}, found {found}"))
}

fn duration(key: &str, v: &toml::Value) -> Result<Duration, SetupError> {
    let d = match v {
        toml::Value::Integer(n) => u64::try_from(*n).ok().map(Duration::from_secs),
        toml::Value::Float(f) => wield_core::config::seconds(*f),
        toml::Value::String(s) => parse_duration(s),
        _ => None,
    };
    d.ok_or_else(|| invalid(key, "a duration such as 30, \"30s\" or \"2m\"", v))
}

fn count(key: &str, v: &toml::Value) -> Result<usize, SetupError> {
    v.as_integer()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| invalid(key, "a non-negative integer", v))
}

fn strings(key: &str, v: &toml::Value) -> Result<Vec<String>, SetupError> {
    let toml::Value::Array(items) = v else {
        return Err(invalid(key, "a list of strings", v));
    };
    items
        .iter()
        .map(|i| {
            i.as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(key, "a list of strings", v))
        })
        .collect()
}

impl ShellSettings {
    /// From the `[bash]` table (and `process.max_background`).
    pub fn from_config(config: &Config) -> Result<Self, SetupError> {
        let mut s = Self::default();
        let table = config.table_at("bash");
        for (key, v) in &table {
            let path = format!("bash.{key}");
            match key.as_str() {
                "shell" => {
                    s.shell = match v {
                        toml::Value::String(p) if !p.trim().is_empty() => vec![p.clone(), "-c".into()],
                        toml::Value::Array(_) => strings(&path, v)?,
                        _ => return Err(invalid(&path, "a program (\"zsh\") or an argv ([\"zsh\", \"-lc\"])", v)),
                    };
                    if s.shell.is_empty() {
                        return Err(invalid(&path, "a non-empty argv", v));
                    }
                }
                "rewrite" => {
                    let text = v.as_str().ok_or_else(|| invalid(&path, "a template string", v))?;
                    check_template(text).map_err(|e| SetupError::Invalid(format!("{path}: {e}")))?;
                    s.rewrite = Some(text.to_owned());
                }
                "timeout" => s.timeout = duration(&path, v)?,
                "max_timeout" => s.max_timeout = duration(&path, v)?,
                "grace" => s.grace = duration(&path, v)?,
                "max_output_bytes" => s.max_output_bytes = count(&path, v)?.max(1024),
                "max_lines" => s.max_lines = count(&path, v)?,
                "head_lines" => s.head_lines = count(&path, v)?,
                "tail_lines" => s.tail_lines = count(&path, v)?,
                "env" => s.env = env_policy(v)?,
                "git_watch" => s.git_watch = v.as_bool().ok_or_else(|| invalid(&path, "true or false", v))?,
                // Unknown keys were refused when the configuration loaded.
                _ => {}
            }
        }
        if let Some(v) = config.value("process.max_background") {
            s.max_background = count("process.max_background", v)?;
        }
        Ok(s)
    }

    /// The timeout for a call: the call's own, else `bash.timeout`, at most
    /// `bash.max_timeout`.
    pub fn timeout_for(&self, requested: Option<f64>) -> Duration {
        let asked = requested.and_then(wield_core::config::seconds).unwrap_or(self.timeout);
        asked.min(self.max_timeout)
    }
}

fn env_policy(v: &toml::Value) -> Result<EnvPolicy, SetupError> {
    let mut policy = EnvPolicy::default();
    let Some(table) = v.as_table() else {
        return Err(invalid("bash.env", "a table", v));
    };
    if let Some(i) = table.get("inherit") {
        let text = i
            .as_str()
            .ok_or_else(|| invalid("bash.env.inherit", "\"core\", \"all\" or \"none\"", i))?;
        policy.inherit = text
            .parse::<Inherit>()
            .map_err(|e| SetupError::Invalid(format!("bash.env.inherit: {e}")))?;
    }
    if let Some(k) = table.get("keep") {
        policy.keep = strings("bash.env.keep", k)?;
    }
    if let Some(set) = table.get("set") {
        let Some(set) = set.as_table() else {
            return Err(invalid("bash.env.set", "a table of NAME = \"value\"", set));
        };
        let mut out = BTreeMap::new();
        for (name, value) in set {
            let value = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) => value.to_string(),
                other => return Err(invalid(&format!("bash.env.set.{name}"), "a string", other)),
            };
            out.insert(name.clone(), value);
        }
        policy.set = out;
    }
    Ok(policy)
}

fn check_template(text: &str) -> Result<(), String> {
    minijinja::Environment::new()
        .template_from_str(text)
        .map(|_| ())
        .map_err(|e| format!("invalid template: {e}"))
}

/// Apply `bash.rewrite` to a command. Every variable but `command` is
/// inserted shell-quoted: a directory a model named `x; curl … | sh` must
/// stay one word (`cd {{ workdir }}` is right; do not add quotes around it).
pub(crate) fn rewrite(template: &str, command: &str, workdir: &Path, workspace: &Path) -> Result<String, String> {
    minijinja::Environment::new()
        .render_str(
            template,
            minijinja::context! {
                command => command,
                workdir => shell_quote(&workdir.to_string_lossy()),
                workspace => shell_quote(&workspace.to_string_lossy()),
            },
        )
        .map_err(|e| format!("bash.rewrite failed: {e}"))
}

/// One POSIX shell word that reads back as `text`: single quotes, with each
/// `'` written as `'\''`.
pub(crate) fn shell_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// `[sandbox]` for commands: the workspace and the temp dir are always
/// write roots (`sandbox.write` adds more); everything is readable unless
/// `sandbox.read` lists roots (the workspace and write roots stay readable);
/// the workspace's `.wield` and `.git`, wield's global config directory and
/// `sandbox.protected` are never writable (its globs expanded to the paths
/// that match them now).
pub fn sandbox_settings(config: &Config, workspace: &Path) -> Result<SandboxSettings, SetupError> {
    let mut s = SandboxSettings::for_workspace(workspace);
    if let Some(v) = config.value("sandbox.enabled") {
        s.enabled = match v {
            toml::Value::Boolean(true) => Enabled::Yes,
            toml::Value::Boolean(false) => Enabled::No,
            toml::Value::String(t) if t == "auto" => Enabled::Auto,
            toml::Value::String(t) if t == "true" => Enabled::Yes,
            toml::Value::String(t) if t == "false" => Enabled::No,
            other => return Err(invalid("sandbox.enabled", "true, false or \"auto\"", other)),
        };
    }
    if let Some(v) = config.value("sandbox.backend") {
        let text = v
            .as_str()
            .ok_or_else(|| invalid("sandbox.backend", "\"auto\", \"landlock\", \"bwrap\" or \"none\"", v))?;
        s.backend = text
            .parse::<BackendChoice>()
            .map_err(|e| SetupError::Invalid(format!("sandbox.backend: {e}")))?;
    }
    if let Some(v) = config.value("sandbox.network") {
        s.network = v
            .as_bool()
            .ok_or_else(|| invalid("sandbox.network", "true or false", v))?;
    }
    let paths = |key: &str| -> Result<Option<Vec<PathBuf>>, SetupError> {
        config
            .value(key)
            .map(|v| strings(key, v).map(|l| l.iter().map(|p| expand(p, workspace)).collect()))
            .transpose()
    };
    if let Some(extra) = paths("sandbox.write")? {
        s.write.extend(extra);
    }
    if let Some(read) = paths("sandbox.read")? {
        let mut roots = vec![workspace.to_path_buf()];
        roots.extend(read);
        s.read = Some(roots);
    }
    if let Some(v) = config.value("sandbox.protected") {
        let (plain, globs) = wield_sandbox::fs::split_protected(strings("sandbox.protected", v)?);
        s.protected
            .extend(plain.iter().map(|p| expand(&p.to_string_lossy(), workspace)));
        // Globs become the paths matching them now (see `protected_globs`).
        let globs: Vec<String> = globs
            .iter()
            .map(|g| match g.strip_prefix("~/") {
                Some(_) => expand(g, workspace).to_string_lossy().into_owned(),
                None => g.clone(),
            })
            .collect();
        s.protected.extend(super::protected_globs::expand(&globs, workspace)?);
    }
    if let Some(sockets) = paths("sandbox.allow_unix_sockets")? {
        s.allow_unix_sockets = sockets;
    }
    if let Some(dir) = &config.global_dir {
        s.protected.push(dir.clone());
    }
    Ok(s)
}

/// `~/x` under HOME; a relative path inside the workspace.
fn expand(text: &str, workspace: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if text == "~" => std::env::var_os("HOME").map_or_else(|| workspace.to_path_buf(), PathBuf::from),
        _ => workspace.join(text),
    }
}

/// What the bash and process tools share: the settings, the workspace and
/// the sandbox, resolved once (probing bubblewrap runs it) on first use.
#[derive(Debug)]
pub struct ShellService {
    pub settings: ShellSettings,
    pub sandbox: SandboxSettings,
    workspace: PathBuf,
    plan: OnceLock<Result<Option<SandboxPlan>, String>>,
    /// The `.chat` documents wield chat ran on, read again for each
    /// command: those in the workspace are read-only to it.
    chat_documents: Option<Ledger>,
    /// The directory listings `git_watch` keeps between commands.
    pub(crate) listings: std::sync::Arc<super::git_watch::Listings>,
}

impl ShellService {
    pub fn new(settings: ShellSettings, sandbox: SandboxSettings, workspace: impl Into<PathBuf>) -> Self {
        Self {
            settings,
            sandbox,
            workspace: workspace.into(),
            plan: OnceLock::new(),
            chat_documents: None,
            listings: std::sync::Arc::default(),
        }
    }

    pub fn from_config(config: &Config, workspace: &Path) -> Result<Self, SetupError> {
        let mut service = Self::new(
            ShellSettings::from_config(config)?,
            sandbox_settings(config, workspace)?,
            workspace,
        );
        service.chat_documents = Ledger::in_config_dir(config.global_dir.clone());
        Ok(service)
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The same service with commands' write roots replaced by `write`,
    /// for a session whose file writes were narrowed (an MCP client's
    /// roots): pass the narrowed confinement's write roots, which never
    /// exceed the configured ones. Without a sandbox, commands are not
    /// confined at all and this changes nothing.
    pub fn with_write_roots(&self, write: Vec<PathBuf>) -> Self {
        let mut sandbox = self.sandbox.clone();
        sandbox.write = write;
        let mut service = Self::new(self.settings.clone(), sandbox, self.workspace.clone());
        service.chat_documents = self.chat_documents.clone();
        service.listings = std::sync::Arc::clone(&self.listings);
        service
    }

    /// The sandbox commands run in; `None` when they run unconfined; an
    /// error (for every command) when the configured backend does not work.
    pub fn plan(&self) -> Result<Option<&SandboxPlan>, String> {
        self.plan
            .get_or_init(|| {
                self.sandbox
                    .resolve()
                    .map(|plan| plan.map(|p| p.with_grace(self.settings.grace)))
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }

    /// Whether commands run sandboxed (for the approval resolver).
    pub fn sandbox_active(&self) -> bool {
        matches!(self.plan(), Ok(Some(_)))
    }

    /// Whether commands need their signals scoped by the runner: the
    /// bubblewrap backend does not scope them itself (Landlock does).
    pub fn scope_signals(&self) -> bool {
        matches!(self.plan(), Ok(Some(plan)) if plan.backend() == wield_sandbox::process::Backend::Bwrap)
    }

    /// Whether a command's leader adopts and outlives its orphans (the
    /// sandbox's keeper): see `Runner::leader_reaps`.
    pub fn leader_reaps(&self) -> bool {
        match self.plan() {
            Ok(Some(plan)) => plan.leader_reaps(),
            Ok(None) => wield_sandbox::process::sandbox::helper_declared(),
            Err(_) => false,
        }
    }

    /// Whether commands can reach the network: the sandbox is off (or
    /// cannot run) or lets them (`sandbox.network`).
    pub fn reaches_network(&self) -> bool {
        !self.sandbox_active() || self.sandbox.network
    }

    /// The argv for a command: rewritten, appended to the shell, wrapped in
    /// the sandbox; with the guard of what the sandbox needs while the
    /// command's processes live.
    pub(crate) fn argv(&self, command: &str, workdir: &Path) -> Result<(Vec<OsString>, RunGuard), String> {
        let command = match &self.settings.rewrite {
            Some(t) => rewrite(t, command, workdir, &self.workspace)?,
            None => command.to_owned(),
        };
        let mut argv: Vec<OsString> = self.settings.shell.iter().map(OsString::from).collect();
        argv.push(command.into());
        self.wrap(argv)
    }

    /// An argv as it runs: wrapped in the sandbox (or, unconfined, kept so
    /// that no process of it outlives it); with the guard of what the
    /// sandbox needs while its processes live.
    pub(crate) fn wrap(&self, argv: Vec<OsString>) -> Result<(Vec<OsString>, RunGuard), String> {
        match self.plan()? {
            // Unconfined, but kept: no process of the command outlives it.
            None => Ok((
                wield_sandbox::process::sandbox::keep_unconfined(&argv, self.settings.grace).unwrap_or(argv),
                RunGuard::default(),
            )),
            Some(plan) => {
                let documents = self.chat_documents()?;
                let plan = &plan.with_protected(documents);
                let guard = plan.prepare().map_err(|e| format!("cannot prepare the sandbox: {e}"))?;
                Ok((plan.wrap(&argv).map_err(|e| e.to_string())?, guard))
            }
        }
    }

    /// The `.chat` documents in the workspace that wield chat ran on, and
    /// the files beside them that exist: a person's decisions between two
    /// presses, which no command may change (see
    /// [`wield_sandbox::fs::chat`]). A list that cannot be read fails the
    /// command rather than protect nothing.
    fn chat_documents(&self) -> Result<Vec<PathBuf>, String> {
        let Some(ledger) = &self.chat_documents else {
            return Ok(Vec::new());
        };
        let mut roots = vec![self.workspace.as_path()];
        roots.extend(self.sandbox.write.iter().map(PathBuf::as_path));
        let found = ledger.guarded_under(&roots).map_err(|e| {
            format!(
                "cannot read the list of .chat documents to protect ({}): {e}",
                ledger.path().display()
            )
        })?;
        Ok(found
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| p.symlink_metadata().is_ok())
            .collect())
    }

    /// The environment for a command.
    pub(crate) fn env(&self) -> Vec<(OsString, OsString)> {
        self.settings.env.build()
    }
}
