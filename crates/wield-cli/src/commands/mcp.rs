//! `wield mcp serve [--http ADDR]` and `wield mcp list`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use wield_core::approval::printable;
use wield_mcp::{ApprovalMode, ForwardToClient, HttpOptions, ServerState, Token};
use wield_runtime::ServeOptions;

/// The environment variable an HTTP server's token can come from.
const TOKEN_ENV: &str = "WIELD_MCP_TOKEN";

use crate::app::{Runtime, Servers, exit_error, usage};
use crate::cli::{GlobalArgs, McpCommand};

pub async fn run(global: &GlobalArgs, cmd: McpCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::Serve {
            http,
            token,
            token_file,
            max_sessions,
            allow_hosts,
            session_idle,
            approval_timeout,
        } => {
            if approval_timeout.is_zero() {
                return Err(usage("--approval-timeout must be longer than 0 (e.g. 10m)"));
            }
            let http = match http.as_deref().map(parse_addr).transpose()? {
                None => None,
                Some(addr) => {
                    let (token, generated) = http_token(token, token_file)?;
                    let mut options = HttpOptions::new(addr, token);
                    options.max_sessions = max_sessions;
                    options.allowed_hosts = allow_hosts;
                    options.session_idle = session_idle;
                    Some((options, generated))
                }
            };
            serve(global, http, approval_timeout).await
        }
        McpCommand::List { json } => list(global, json).await,
    }
}

/// The HTTP server's token, from `--token-file`, `--token` (with a warning:
/// every user can read a command line) or `WIELD_MCP_TOKEN`; else a new one,
/// and `true` to say it was made here.
fn http_token(flag: Option<String>, file: Option<std::path::PathBuf>) -> anyhow::Result<(Token, bool)> {
    let bad = |e: wield_mcp::McpError| usage(wield_core::error_chain(&e));
    if let Some(path) = file {
        return Ok((Token::from_file(&path).map_err(bad)?, false));
    }
    if let Some(t) = flag {
        eprintln!(
            "wield: warning: a token given with --token can be read by every user of this machine (in \
             /proc/PID/cmdline); use WIELD_MCP_TOKEN or --token-file instead"
        );
        return Ok((Token::new(&t, "--token").map_err(bad)?, false));
    }
    if let Some(t) = std::env::var_os(TOKEN_ENV) {
        let t = t
            .into_string()
            .map_err(|_| usage(format!("{TOKEN_ENV} is not valid UTF-8")))?;
        return Ok((Token::new(&t, TOKEN_ENV).map_err(bad)?, false));
    }
    Ok((Token::generate().map_err(bad)?, true))
}

/// Where a token wield made is written: `wield/tokens` in
/// `$XDG_RUNTIME_DIR`, else in `$XDG_STATE_HOME`, else in `~/.local/state`.
/// The sandbox hides each of these from commands, so the list is the
/// sandbox's.
fn token_dir() -> anyhow::Result<std::path::PathBuf> {
    wield_sandbox::process::token_dirs().into_iter().next().ok_or_else(|| {
        usage(format!(
            "no place for the server's token: set HOME or XDG_RUNTIME_DIR, or give one with {TOKEN_ENV} or \
             --token-file"
        ))
    })
}

/// `127.0.0.1:8765`, `[::1]:8765`, `localhost:8765`, or a bare port (on
/// 127.0.0.1).
fn parse_addr(text: &str) -> anyhow::Result<SocketAddr> {
    let t = text.trim();
    if let Ok(port) = t.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = t.strip_prefix("localhost:") {
        let port: u16 = port
            .parse()
            .map_err(|_| usage(format!("--http {text}: `{port}` is not a port number")))?;
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    t.parse().map_err(|_| {
        usage(format!(
            "--http expects an address like 127.0.0.1:8765 (or a port), got `{text}`"
        ))
    })
}

async fn serve(
    global: &GlobalArgs,
    http: Option<(HttpOptions, bool)>,
    approval_timeout: std::time::Duration,
) -> anyhow::Result<ExitCode> {
    // The servers wield bridges may ask the client for completions and for
    // its user's input. Over stdio there is one client; over HTTP, the
    // request goes to the session whose call the server is working on.
    let forward = http.is_none().then(|| Arc::new(ForwardToClient::new()));
    let front: Arc<dyn wield_mcp::client::FrontEnd> = match &forward {
        Some(f) => f.clone(),
        None => Arc::new(wield_mcp::client::RouteToCallers::new()),
    };
    let front = Some(front);
    // Bridged servers start in the background, in `mcp_server`: the client
    // gets its answers at once, and each server's tools when it is up.
    let rt = Runtime::load_with(global, front, Servers::None, vec![wield_agent::tools::ask_tool()]).await?;
    let approval = if global.yes {
        ApprovalMode::Yes
    } else {
        ApprovalMode::AskClient
    };
    let server = rt
        .mcp_server(ServeOptions {
            approval,
            approval_timeout,
            forward,
        })
        .map_err(exit_error)?;

    let Some((options, generated)) = http else {
        // SIGINT or SIGTERM ends the session like the end of its input:
        // wield returns, and the bridged servers are stopped with it.
        tokio::select! {
            served = server.serve_stdio() => served?,
            () = super::stop_signal() => {}
        }
        return Ok(ExitCode::SUCCESS);
    };
    let token = options.token.clone();
    let running = server
        .serve_http(options)
        .await
        .map_err(|e| usage(wield_core::error_chain(&e)))?;
    let local = running.local_addr();
    let token_file = if generated {
        let name = format!("mcp-{}.token", local.port());
        let path = wield_mcp::write_token_file(&token_dir()?, &name, &token)
            .map_err(|e| usage(wield_core::error_chain(&e)))?;
        eprintln!(
            "wield: clients must send `Authorization: Bearer TOKEN`; the token is in {} (readable by you only; \
             set WIELD_MCP_TOKEN or --token-file to choose it)",
            path.display()
        );
        Some(path)
    } else {
        None
    };
    eprintln!("wield: serving MCP on http://{local}/mcp (Ctrl-C or SIGTERM stops)");
    let stop = running.shutdown_token();
    tokio::spawn(async move {
        super::stop_signal().await;
        stop.cancel();
    });
    let served = running.wait().await;
    if let Some(path) = token_file {
        let _ = std::fs::remove_file(path);
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

async fn list(global: &GlobalArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let rt = Runtime::load(global).await?;
    let status = rt.mcp().map(|m| m.status()).unwrap_or_default();
    // A health check: 1 when an enabled server could not be started.
    let code = if status.iter().any(|s| s.state == ServerState::Failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    let mut out = std::io::stdout().lock();
    if as_json {
        writeln!(out, "{}", serde_json::to_string_pretty(&json!({ "servers": status }))?)?;
        return Ok(code);
    }
    if status.is_empty() {
        writeln!(
            out,
            "No MCP servers are configured. Add one to .wield/config.toml, e.g.\n\n\
             [mcp.servers.everything]\n\
             command = \"npx\"\n\
             args = [\"-y\", \"@modelcontextprotocol/server-everything\"]"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = status.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    writeln!(out, "{:width$}  {:9}  {:>5}  SERVER", "NAME", "STATE", "TOOLS")?;
    for s in &status {
        let tools = if s.deferred {
            format!("{}d", s.tools)
        } else {
            s.tools.to_string()
        };
        writeln!(
            out,
            "{:width$}  {:9}  {:>5}  {}",
            s.name,
            s.state.as_str(),
            tools,
            s.transport
        )?;
        // What a server says (its stderr, its tools' names) is shown,
        // never obeyed by the terminal.
        if let Some(e) = &s.error {
            writeln!(out, "{:width$}  error: {}", "", printable(e))?;
        }
        for w in &s.warnings {
            writeln!(out, "{:width$}  warning: {}", "", printable(w))?;
        }
        if let Some(text) = &s.instructions {
            // Their first line; `--json` has them whole.
            let first = text.lines().next().unwrap_or_default();
            let more = if first.len() < text.len() { " …" } else { "" };
            writeln!(out, "{:width$}  instructions: {}{more}", "", printable(first))?;
        }
    }
    if status.iter().any(|s| s.deferred) {
        writeln!(
            out,
            "\n(d: deferred; the tools are listed by name and loaded on demand)"
        )?;
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("8765").unwrap(), "127.0.0.1:8765".parse().unwrap());
        assert_eq!(parse_addr("localhost:1").unwrap(), "127.0.0.1:1".parse().unwrap());
        assert_eq!(parse_addr("[::1]:2").unwrap(), "[::1]:2".parse().unwrap());
        assert!(parse_addr("nope").is_err());
    }
}
