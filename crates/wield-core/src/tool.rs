//! The tool model: what the model sees ([`ToolSpec`]), what the runtime needs
//! ([`ToolTraits`]), the object-safe [`Tool`] trait and its [`ToolResult`].

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approval::Subject;
use crate::config::ConfigKey;
use crate::context::Context;
use crate::refusal::Refusal;

/// Capability: approve the tool automatically while a process sandbox is active.
pub const AUTO_APPROVE_IF_SANDBOXED: &str = "auto_approve_if_sandboxed";
/// Capability: the tool enforces its own timeout (and kills what it started),
/// so the executor only stops it after a grace margin.
pub const HANDLES_TIMEOUT: &str = "handles_timeout";

/// Capability: calling the tool again with the same arguments changes
/// nothing more (MCP `idempotentHint`; read-only tools are idempotent
/// anyway).
pub const IDEMPOTENT: &str = "idempotent";
/// Capability: the tool only adds (creates what is missing) and never
/// overwrites or removes anything (MCP `destructiveHint: false`).
pub const ADDITIVE: &str = "additive";

/// Capability: the tool's `timeout` argument (seconds, or a duration like
/// `"2m"`) is the call's time limit. Only tools that declare it: the
/// arguments of other tools (a bridged MCP tool's `timeout`, in whatever
/// unit its server chose) are theirs alone.
pub const TIMEOUT_ARGUMENT: &str = "timeout_argument";

/// What the model sees of a tool.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// OpenAI strict mode: every property required, `additionalProperties:
    /// false`, optional fields nullable. Checked at registration.
    #[serde(default)]
    pub strict: bool,
    /// A human title (MCP `title`); defaults to none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The JSON schema of the structured content the tool returns (MCP
    /// `outputSchema`; a bridged tool's, passed through), in the result's
    /// `structured_content` metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            strict: false,
            title: None,
            output_schema: None,
        }
    }

    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

/// What the runtime needs to know about a tool to schedule, gate and show it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolTraits {
    /// May run concurrently with other parallel-safe calls of the same batch.
    pub parallel: bool,
    /// Runs commands that the process sandbox can confine.
    pub sandboxable: bool,
    /// Changes nothing outside itself (member of `$readonly`).
    pub read_only: bool,
    /// Creates, changes or removes files in the workspace and nothing else
    /// (no commands, no network): with the read-only tools, the members of
    /// the `$standard` approval preset.
    #[serde(default)]
    pub writes_files: bool,
    /// Reaches outside the machine (network); becomes MCP `openWorldHint`.
    pub open_world: bool,
    /// Named sets this tool belongs to (`fs`, `runtime`, `web`, `memory`, …).
    pub groups: Vec<String>,
    /// Free-form capability flags such as [`AUTO_APPROVE_IF_SANDBOXED`].
    pub capabilities: Vec<String>,
    /// Hidden unless some policy layer names it explicitly.
    pub opt_in: bool,
    /// Listed by name only; its schema is loaded on demand.
    pub deferred: bool,
    /// Secret scopes the tool may use (informational, for policy and audit).
    pub secret_scopes: Vec<String>,
}

impl Default for ToolTraits {
    fn default() -> Self {
        Self {
            parallel: true,
            sandboxable: false,
            read_only: false,
            writes_files: false,
            open_world: false,
            groups: Vec::new(),
            capabilities: Vec::new(),
            opt_in: false,
            deferred: false,
            secret_scopes: Vec::new(),
        }
    }
}

impl ToolTraits {
    pub fn has_capability(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g.eq_ignore_ascii_case(group))
    }
}

/// What every tool carries: its [`ToolSpec`] and [`ToolTraits`]. A tool holds
/// one and returns it from [`Tool::base`], which is all `spec()` and
/// `traits()` read.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolBase {
    pub spec: ToolSpec,
    pub traits: ToolTraits,
}

impl ToolBase {
    pub fn new(spec: ToolSpec, traits: ToolTraits) -> Self {
        Self { spec, traits }
    }
}

/// Whether a tool reads or writes a path it declares through [`Tool::paths`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
}

/// A path a call will touch, for the sandbox pre-filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathUse {
    pub path: String,
    pub access: Access,
}

/// The outcome of one call. Tools report failures here; they never panic.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ToolResult {
    pub success: bool,
    pub output: String,
    pub error: Option<String>,
    /// Exit codes, truncation facts, saved-output paths, attachments, durations.
    pub metadata: Map<String, Value>,
}

impl ToolResult {
    pub fn ok(output: impl Into<String>) -> Self {
        Self {
            success: true,
            output: output.into(),
            error: None,
            metadata: Map::new(),
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self {
            success: false,
            output: String::new(),
            error: Some(message.into()),
            metadata: Map::new(),
        }
    }

    /// A failure that still carries output (a command that exited non-zero).
    pub fn failed_with_output(output: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            success: false,
            output: output.into(),
            error: Some(message.into()),
            metadata: Map::new(),
        }
    }

    #[must_use]
    pub fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.to_owned(), value.into());
        self
    }

    /// The text a model should read: the output, then the error if any.
    pub fn text_for_model(&self) -> String {
        match (&self.error, self.output.is_empty()) {
            (None, _) => self.output.clone(),
            (Some(e), true) => format!("Error: {e}"),
            (Some(e), false) => format!("{}\nError: {e}", self.output),
        }
    }
}

/// One tool. Object-safe: the registry holds `Arc<dyn Tool>`.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's spec and traits.
    fn base(&self) -> &ToolBase;

    /// What the model sees.
    fn spec(&self) -> &ToolSpec {
        &self.base().spec
    }

    /// What the runtime needs.
    fn traits(&self) -> &ToolTraits {
        &self.base().traits
    }

    /// One line for approval prompts and logs.
    fn preview(&self, input: &Value, width: usize) -> String {
        default_preview(&self.spec().name, input, width)
    }

    /// Paths the call will touch, checked against the roots before it runs.
    fn paths(&self, _input: &Value) -> Vec<PathUse> {
        Vec::new()
    }

    /// What argument patterns (`tool:GLOB`) are matched against: the only
    /// way approval learns a call's subject. By default the
    /// [`paths`](Self::paths) the call declares (the executor adds where each
    /// leads). A tool that runs a shell command line returns it parsed
    /// ([`Subject::Command`]), so approval rules see the commands the shell
    /// will run rather than a string; a tool whose subject is some other
    /// argument returns it ([`Subject::Text`], [`Subject::Paths`]).
    fn approval_subject(&self, input: &Value) -> Subject {
        Subject::from_paths(&self.paths(input))
    }

    /// Known keys of this tool's own config table (`[name]`), for validation.
    fn config_keys(&self) -> Vec<ConfigKey> {
        Vec::new()
    }

    /// Pre-flight check before approval (e.g. read-before-write). An `Err`
    /// refuses the call: [`Refusal::ToModel`] with its message,
    /// [`Refusal::Failed`] saying the check failed (the cause is logged).
    async fn pre(&self, _input: &Value, _ctx: &Context) -> Result<(), Refusal> {
        Ok(())
    }

    /// Extra detail for a person approving the call: a unified diff, say.
    async fn approval_detail(&self, _input: &Value, _ctx: &Context) -> Option<String> {
        None
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult;

    /// The time limit of a call that sets none, before `executor.timeout`
    /// (a bridged MCP server's own `timeout`).
    fn default_timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// Post-processing after execution, in call order.
    async fn post(&self, _input: &Value, _result: &mut ToolResult, _ctx: &Context) {}
}

/// A shared tool handle.
pub type ToolRef = Arc<dyn Tool>;

/// `name: key="value" key2=3`, cut to `width` characters.
pub fn default_preview(name: &str, input: &Value, width: usize) -> String {
    let mut line = format!("{name}:");
    if let Value::Object(map) = input {
        for (k, v) in map {
            if v.is_null() {
                continue;
            }
            let shown = match v {
                Value::String(s) => format!("{s:?}"),
                other => other.to_string(),
            };
            line.push(' ');
            line.push_str(k);
            line.push('=');
            line.push_str(&shown);
        }
    }
    one_line(&line, width)
}

/// Collapse newlines and cut to `width` characters with an ellipsis.
pub fn one_line(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if flat.chars().count() <= width {
        return flat;
    }
    let mut cut: String = flat.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
