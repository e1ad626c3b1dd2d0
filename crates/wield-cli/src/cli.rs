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

/// The options every command takes. Their own help heading keeps a
/// command's options apart from them in its `--help`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
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
    /// Remembered approvals (.wield/approvals.toml and the global file): list, add, remove.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// MCP: serve the visible tools to MCP clients, list the configured MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Apply a `*** Begin Patch` patch, completely or not at all (the patch tool, for people).
    #[command(subcommand)]
    Patch(PatchCommand),
    /// The process sandbox: what this machine supports and what commands would run under.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// The project's configuration: trust a nested project's `.wield/config.toml`.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Send one user message to a model and stream its reply; executes nothing.
    ///
    /// The reply's text goes to stdout as it comes; tool calls the model asks for are listed,
    /// not run. Exit status: 0 answered, 1 the provider failed (its message on stderr), 2 usage
    /// error.
    Complete(CompleteArgs),
    /// The configured model providers: list them, check one.
    #[command(subcommand)]
    Providers(ProvidersCommand),
    /// Run the agent on a task: the model calls tools, wield decides and runs them, until it answers.
    ///
    /// Headless (`-p TASK`, or the task on stdin): nothing is asked; a call that needs approval is
    /// refused (the model is told why) unless --yes or a rule approves it; the final answer goes to
    /// stdout, each tool call to stderr. Exit status: 0 the model finished, 1 a provider that cannot
    /// be used or a runtime error, 2 a usage or configuration mistake, 3 stopped by a limit
    /// (--max-steps, --token-budget, --timeout), 130 cancelled.
    Run(RunArgs),
    /// The saved sessions of `wield run` (.wield/sessions): list them, newest first.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// `.chat` documents: `wield chat FILE` moves the tool cycle on (categorize,
    /// execute, send); the subcommands start one, show its state, approve or reject
    /// its tool calls.
    Chat(ChatArgs),
    /// Start a project: write a commented `.wield/config.toml` in the workspace.
    ///
    /// Every setting in it is commented out, so it changes nothing until you edit it. An existing
    /// file is left alone (exit status 1) unless --force is given.
    Init(InitArgs),
    /// Print a completion script for SHELL to stdout.
    ///
    /// For example `wield completions bash > ~/.local/share/bash-completion/completions/wield`, or
    /// `wield completions fish > ~/.config/fish/completions/wield.fish`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (wield.1 and one per command) to DIR.
    #[command(hide = true)]
    Man {
        /// Where the pages go.
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Replace an existing `.wield/config.toml`.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ChatArgs {
    #[command(subcommand)]
    pub command: Option<ChatCommand>,
    /// The document: one press of the key. Phase 1 writes a placeholder for each
    /// new tool call, phase 2 runs the approved ones and writes results, phase 3
    /// sends the conversation and streams the reply in; with autopilot the phases
    /// follow each other until a call waits for you.
    pub file: Option<PathBuf>,
    /// Do a single phase.
    #[arg(long)]
    pub once: bool,
    /// Stop after each phase that wrote results and after each reply with tool
    /// calls (the frontmatter's or configuration's `autopilot = false`).
    #[arg(long)]
    pub no_autopilot: bool,
    /// The provider (over the frontmatter's and the configuration's).
    #[arg(long)]
    pub provider: Option<String>,
    /// The model.
    #[arg(long)]
    pub model: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// Start a document: an optional `@System:` message, then an empty `@You:`.
    New {
        file: PathBuf,
        /// The system prompt.
        #[arg(long, value_name = "TEXT")]
        system: Option<String>,
    },
    /// The document's state: messages, tool calls with their status, what
    /// waits for a decision, problems with their lines.
    Status {
        file: PathBuf,
        /// One JSON object (messages with line ranges, tool uses, pending ids, diagnostics).
        #[arg(long)]
        json: bool,
    },
    /// Mark tool calls `(approved)`: the next cycle runs them.
    Approve {
        file: PathBuf,
        /// The tool-use ids (see `status`).
        ids: Vec<String>,
        /// Every pending call.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
    /// Mark a tool call `(rejected)`: the model is told, with MESSAGE if given.
    Reject {
        file: PathBuf,
        id: String,
        #[arg(long, value_name = "TEXT")]
        message: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task (`-` to read it from stdin; without -p it is read from stdin).
    #[arg(short = 'p', long = "prompt", value_name = "TASK")]
    pub prompt: Option<String>,
    /// Run without asking anything, even in a terminal (implied by -p, --json or a
    /// stdin that is not a terminal).
    #[arg(long)]
    pub headless: bool,
    /// The provider to use (a `[providers.NAME]`; default: `default_provider`).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model, instead of the provider's.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Steps with tools before one last turn in text (default: the agent's
    /// `max_steps`, else `agent.max_steps`, else 50).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Stop once the requests' input and output tokens reach N.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u64>,
    /// Stop after this long, e.g. 10m.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub timeout: Option<std::time::Duration>,
    /// Also write the final answer to FILE.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Stream JSON Lines events to stdout instead of the answer (see the README for the schema).
    #[arg(long)]
    pub json: bool,
    /// Go on with a saved session: an id from `wield sessions list` or a file; alone, the newest
    /// whose run did not fail.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Save nothing of this session.
    #[arg(long)]
    pub ephemeral: bool,
}

#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The message, or `-` to read it from stdin.
    pub prompt: Option<String>,
    /// A whole conversation as JSON (`{"system": …, "messages": [ … ]}` in wield's
    /// conversation model) instead of PROMPT.
    #[arg(long, value_name = "FILE", conflicts_with = "prompt")]
    pub input: Option<PathBuf>,
    /// The provider to use (a `[providers.NAME]`; default: `default_provider`).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model, instead of the provider's.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// A system prompt.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Offer the visible tools to the model (their calls are shown, not run).
    #[arg(long)]
    pub tools: bool,
    /// Print one JSON object: provider, model, content, tool_calls, usage, stop.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// The configured providers, and whether their key is set.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Check that a provider can run the agent: it answers (and how fast), wield's first request
    /// fits its context, and it calls tools. Each problem is named with how to fix it; exit 1 if any.
    Check {
        /// The provider (default: `default_provider`).
        name: Option<String>,
    },
    /// Add a provider to the project's .wield/config.toml. `wield providers add local` is a model
    /// server on this machine (llama.cpp's llama-server, Ollama, LM Studio, vLLM): it asks the
    /// server for its model and context.
    Add {
        /// The provider's name, as `--provider NAME` and `default_provider` use it.
        name: String,
        /// anthropic, openai, openai-responses, gemini or openai-compatible (the default).
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// Where requests go (openai-compatible default: http://127.0.0.1:8080/v1).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The model (default: the first the server lists, else the kind's own).
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// Make it the default provider (the first one added always is).
        #[arg(long)]
        default: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Each saved session: its id, when it was saved, how its run ended, its size and its task.
    /// `--resume` without an id takes the newest whose run did not fail.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Load this workspace's `.wield/config.toml` although it lies in another wield project's
    /// workspace (whose sandboxed commands could have written it), as long as its content stays
    /// what it is now. Read it first: wield runs its hooks and obeys its rules.
    Trust {
        /// Forget the trust instead.
        #[arg(long)]
        remove: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// The remembered patterns, project then global.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remember a pattern: `read`, `mcp__*`, `group:fs`, `bash:git status*`, `write:src/*`.
    Add {
        pattern: String,
        #[arg(long, default_value = "project", value_name = "project|global")]
        scope: String,
    },
    /// Forget a pattern (from both files unless --scope is given).
    Remove {
        pattern: String,
        #[arg(long, value_name = "project|global")]
        scope: Option<String>,
    },
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
    /// Every registered tool: in, deferred or out, and the stage and rule that decided.
    Debug {
        #[arg(long)]
        json: bool,
    },
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

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve the visible tools over MCP: stdio by default, streamable HTTP at /mcp with --http.
    ///
    /// Every call runs through the same pipeline as `wield call` (validation, hooks, approval,
    /// sandbox, limits, audit) in one session per MCP connection. Calls that need approval ask
    /// the client's user when the client supports elicitation, otherwise they are refused with
    /// instructions; -y approves them.
    Serve {
        /// Serve streamable HTTP on ADDR (e.g. 127.0.0.1:8765) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// The bearer token HTTP clients must send. Prefer WIELD_MCP_TOKEN or --token-file: a
        /// command line is readable by every user. With none of them, wield makes a token and
        /// writes it to a file only you can read, whose path it prints.
        #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
        token: Option<String>,
        /// Read the bearer token from the first line of FILE (which other users must not be
        /// able to read).
        #[arg(long, value_name = "FILE")]
        token_file: Option<std::path::PathBuf>,
        /// Most HTTP sessions open at once.
        #[arg(long, default_value_t = 256, value_name = "N")]
        max_sessions: usize,
        /// A host name HTTP clients may reach the server by, besides its address and the
        /// loopback names (repeat it, or separate names with commas). Every other Host or
        /// Origin is refused, against DNS rebinding.
        #[arg(
            long = "allow-host",
            env = "WIELD_MCP_ALLOW_HOSTS",
            value_delimiter = ',',
            value_name = "NAME"
        )]
        allow_hosts: Vec<String>,
        /// Close an HTTP session after this long with no request being answered (`90s`, `5m`);
        /// a call still running keeps its session open.
        #[arg(long, default_value = "5m", value_name = "DURATION", value_parser = parse_duration_arg)]
        session_idle: std::time::Duration,
        /// How long the client's user has to answer an approval form before the call is
        /// refused and the form withdrawn.
        #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = parse_duration_arg)]
        approval_timeout: std::time::Duration,
    },
    /// The configured MCP servers ([mcp.servers.NAME]): state, tool count, and why one failed.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// What sandboxing this machine supports (Landlock ABI, seccomp, bubblewrap), what
    /// `backend = "auto"` picks, and what the current configuration resolves to.
    /// Exit status 1 when the configured sandbox cannot be used.
    Check {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PatchCommand {
    /// Apply the patch in FILE (`-` for stdin) to the workspace through the patch tool: same
    /// engine, checks and output. Nothing is changed unless every operation applies.
    /// Exit status: 0 applied, 1 refused or failed (no file changed), 2 usage error.
    Apply {
        /// The patch file, or `-` to read it from stdin.
        file: String,
        /// Print {"success":bool,"output":str,"error":str|null,"metadata":{}}.
        #[arg(long)]
        json: bool,
    },
}

/// A duration on the command line: `30s`, `5m`, `1h`, `250ms`.
fn parse_duration_arg(text: &str) -> Result<std::time::Duration, String> {
    wield_core::config::parse_duration(text)
        .ok_or_else(|| format!("`{text}` is not a duration (examples: 30s, 5m, 250ms)"))
}
