//! The command-line contract (see the README's command reference).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "wield",
    version,
    about = "A tool runtime for LLM agents: policy, approval, sandboxing and bounded output for every tool call.",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Workspace root (default: the current directory). Relative paths resolve against it.
    #[arg(short = 'C', long = "directory", global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// An extra config file, read after ~/.config/wield/config.toml and .wield/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Tool profile: minimal, messaging, coding or full.
    #[arg(long, global = true, env = "WIELD_PROFILE", value_name = "NAME")]
    pub profile: Option<String>,
    /// Only these tools (comma-separated globs or group:NAME).
    #[arg(
        long,
        global = true,
        env = "WIELD_INCLUDE_TOOLS",
        value_delimiter = ',',
        value_name = "G,.."
    )]
    pub include_tools: Vec<String>,
    /// Never these tools (comma-separated globs or group:NAME).
    #[arg(
        long,
        global = true,
        env = "WIELD_EXCLUDE_TOOLS",
        value_delimiter = ',',
        value_name = "G,.."
    )]
    pub exclude_tools: Vec<String>,
    /// Approve calls that would need confirmation (deny rules still win).
    #[arg(short = 'y', long, global = true)]
    pub yes: bool,
    /// Append one JSON line per finished call to FILE.
    #[arg(long, global = true, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Agent whose [agents.NAME.tools] layer applies.
    #[arg(long, global = true, value_name = "NAME")]
    pub agent: Option<String>,
    /// Mode whose [modes.NAME.tools] layer applies.
    #[arg(long, global = true, value_name = "NAME")]
    pub mode: Option<String>,
    /// Task whose [tasks.NAME.tools] layer applies.
    #[arg(long, global = true, value_name = "NAME")]
    pub task: Option<String>,
    /// Set a config key for this run, e.g. --set bash.timeout=10 (repeatable).
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one tool call through the whole pipeline (validation, policy, approval, sandbox, limits).
    ///
    /// `wield call` is a session of one call driven by a person: checks that exist to keep a
    /// model honest, like read-before-write, do not apply to it. Everything else does.
    /// Exit status: 0 success, 1 the call failed, was denied or needs approval, 2 usage error.
    Call(CallArgs),
    /// List, show, explain and export the tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's name (or its provider-safe API name).
    pub tool: String,
    /// The arguments as a JSON object, or `-` to read them from stdin. Default: {}.
    pub args: Option<String>,
    /// Print {"success":bool,"output":str,"error":str|null,"metadata":{}}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// The visible tools with a one-line description.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A tool's description, schema and traits.
    Show { name: String },
    /// Export the visible tools for a provider.
    Schema {
        #[arg(
            long,
            default_value = "anthropic",
            value_name = "anthropic|openai|responses|gemini|mcp"
        )]
        format: String,
    },
}
