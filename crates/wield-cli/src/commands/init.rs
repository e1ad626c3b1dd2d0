//! `wield init [--force]`: a first `.wield/config.toml`, every setting in it
//! commented out, for a new user to read and edit.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::app::workspace;
use crate::cli::{GlobalArgs, InitArgs};

/// The file `wield init` writes. Settings are commented out with a `#`
/// right before the key (`#model = …`), explanations with `# `, so that a
/// setting is used by deleting one character, and the test suite can
/// uncomment every setting and load the result: each key here must be one
/// wield knows.
pub const TEMPLATE: &str = r##"# wield's configuration for this project. It is read after
# ~/.config/wield/config.toml and before --config FILE, WIELD_SECTION__KEY
# variables and --set KEY=VALUE. An unknown key is an error that names it.
#
# Every setting below is commented out: delete the `#` in front of a line
# (and of its [table] line) to use it.

# The provider `wield run` and `wield complete` use unless --provider names one.
#default_provider = "local"

# A model served on this machine by a server speaking the OpenAI Chat
# Completions API (llama.cpp's llama-server, Ollama, vLLM, LM Studio).
#[providers.local]
#kind = "openai-compatible"
#base_url = "http://127.0.0.1:8080/v1"
#model = "qwen2.5-coder-7b-instruct"

# A cloud provider. The key is read from the environment variable named by
# api_key_env, never from this file; export it in your shell.
#[providers.claude]
#kind = "anthropic"
#model = "claude-sonnet-4-5"
#api_key_env = "ANTHROPIC_API_KEY"

# Which tool calls run without asking. "$standard" is every read-only tool
# and the tools that only write files; "bash:PATTERN" matches a command.
# Deny always wins.
#[approval]
#auto_approve = ["$standard", "bash:git status*", "bash:cargo test*"]
#confirm = ["bash:git commit*"]
#deny = ["bash:git push*"]

# Shell commands: the default and the largest timeout a call may ask for.
#[bash]
#timeout = "30s"
#max_timeout = "600s"

# The sandbox commands run in ("auto": on when this machine supports one;
# `wield sandbox check` tells). Commands may write the workspace only.
#[sandbox]
#enabled = "auto"
#backend = "auto"
#network = false
#write = []
"##;

pub fn run(global: &GlobalArgs, args: &InitArgs) -> anyhow::Result<ExitCode> {
    let workspace = workspace(global)?;
    let dir = workspace.join(".wield");
    let file = dir.join("config.toml");
    if !args.force && file.symlink_metadata().is_ok() {
        anyhow::bail!(
            "{} already exists; wield init leaves it as it is (pass --force to replace it with the commented example)",
            file.display()
        );
    }
    if !dir.is_dir() {
        // As wield makes `.wield/` for its own state: only its user may enter.
        wield_core::private_dir::ensure_private_dir(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    }
    let gitignore = dir.join(".gitignore");
    let had_gitignore = gitignore.symlink_metadata().is_ok();
    // The state wield keeps directly in `.wield/` is ignored from the start;
    // the state directories ignore themselves when they are made.
    wield_core::private_dir::ignore_state_file(&dir, "history");
    wield_runtime::write_atomic(&file, TEMPLATE.as_bytes())?;

    let mut out = std::io::stdout().lock();
    writeln!(out, "wrote {} (every setting in it is commented out)", file.display())?;
    if !had_gitignore && gitignore.is_file() {
        writeln!(
            out,
            "wrote {} (wield's own state in .wield/ stays out of git; config.toml is yours to commit)",
            gitignore.display()
        )?;
    }
    if let Some(enclosing) = wield_core::config::enclosing_project(&workspace) {
        writeln!(
            out,
            "note: this workspace lies in the wield project {}: once you have edited the file, run `{}` to have it loaded",
            enclosing.display(),
            command(global, &workspace, "config trust")
        )?;
    }
    writeln!(out, "next:")?;
    writeln!(
        out,
        "  1. choose a provider: uncomment [providers.local] or [providers.claude] in {}",
        file.display()
    )?;
    writeln!(
        out,
        "  2. `{}` sends it a one-token request",
        command(global, &workspace, "providers check")
    )?;
    writeln!(out, "  3. `{}` starts the agent", command(global, &workspace, "run"))?;
    Ok(ExitCode::SUCCESS)
}

/// `wield ARGS`, with `-C DIR` when the workspace was named with it.
fn command(global: &GlobalArgs, workspace: &Path, args: &str) -> String {
    match &global.dir {
        Some(_) => format!("wield -C {} {args}", workspace.display()),
        None => format!("wield {args}"),
    }
}
