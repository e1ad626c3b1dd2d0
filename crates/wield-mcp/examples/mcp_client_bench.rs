//! wield's MCP client's round trip to a local (stdio) server: sequential
//! calls of one tool through [`McpClients`], as `wield call` and `wield mcp
//! serve` make them, on a multi-threaded runtime as the CLI's.
//!
//! ```text
//! mcp_client_bench N TOOL ARGS_JSON -- CMD...
//! ```
//! Against `mcp_bench floor BYTES` (a server that answers at once) the time
//! is the client's and the pipe's. Prints one JSON object, times in
//! microseconds.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::Instant;

use wield_core::{Context, Registry};
use wield_mcp::{McpClients, ServerConfig};

const USAGE: &str = "usage: mcp_client_bench N TOOL ARGS_JSON -- CMD...";

async fn run(n: usize, tool: &str, args: serde_json::Value, cmd: &[String]) -> Result<String, String> {
    let dir = std::env::current_dir().map_err(|e| e.to_string())?;
    let (command, rest) = cmd.split_first().ok_or(USAGE)?;
    let mut table = toml::Table::new();
    table.insert("command".into(), command.clone().into());
    table.insert(
        "args".into(),
        toml::Value::Array(rest.iter().cloned().map(toml::Value::from).collect()),
    );
    let config = ServerConfig::parse("bench", &table, Path::new(&dir)).map_err(|e| e.to_string())?;
    let clients = McpClients::new(vec![config]);
    let mut registry = Registry::new();
    clients.add_sources(&mut registry, |_| true);
    let warnings = registry.load_sources().await;
    if !warnings.is_empty() {
        return Err(format!("{warnings:?}"));
    }
    let name = wield_mcp::client::tool_name("bench", tool);
    let registered = registry.get(&name).ok_or(format!("no tool {name}"))?;
    let ctx = Context::detached(&dir);
    let mut times = Vec::with_capacity(n);
    // The first calls warm up; they are not counted.
    for i in 0..n + n / 10 {
        let start = Instant::now();
        let result = registered.tool.execute(args.clone(), &ctx).await;
        let took = start.elapsed();
        if !result.success {
            return Err(format!("the call failed: {}", result.output));
        }
        if i >= n / 10 {
            times.push(took.as_secs_f64() * 1e6);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    Ok(format!(
        r#"{{"calls":{n},"p50_us":{:.1},"p90_us":{:.1},"p99_us":{:.1},"min_us":{:.1}}}"#,
        at(0.5),
        at(0.9),
        at(0.99),
        times[0]
    ))
}

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match argv.iter().position(|a| a == "--") {
        Some(sep) if sep == 3 && sep + 1 < argv.len() => {
            argv[0].parse::<usize>().map_err(|e| format!("N: {e}")).and_then(|n| {
                let args = serde_json::from_str(&argv[2]).map_err(|e| format!("ARGS_JSON: {e}"))?;
                Ok((n.max(1), args))
            })
        }
        _ => Err(USAGE.to_owned()),
    };
    let outcome = parsed.and_then(|(n, args)| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(run(n, &argv[1], args, &argv[4..]))
    });
    match outcome {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp_client_bench: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
