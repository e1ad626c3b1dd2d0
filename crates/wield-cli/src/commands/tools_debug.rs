//! `wield tools debug [--json]`: every registered tool, whether the model
//! sees it, and the stage and rule that decided.

use std::io::Write;

use serde_json::json;
use wield_core::Session;
use wield_core::approval::printable;
use wield_core::policy::{Stage, Status};

use crate::app::Runtime;

pub fn print(rt: &Runtime, as_json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let tools = rt.tools().current();
    let policy = &tools.policy;
    let layer = |stage: Stage| {
        policy
            .layers()
            .iter()
            .find(|(s, _)| *s == stage)
            .map(|(_, n)| n.clone())
    };
    // A fresh model-driven session: what a model would be offered at the start.
    let session = Session::new("tools-debug", true);
    let decisions = policy.decisions();
    let count = |s: Status| decisions.iter().filter(|d| d.status == s).count();
    if as_json {
        let v = json!({
            "profile": policy.profile(),
            "agent": layer(Stage::Agent),
            "mode": layer(Stage::Mode),
            "task": layer(Stage::Task),
            "tools": decisions,
            "deferred_prompt": policy.deferred_prompt(&session),
            "source_warnings": tools.registry.warnings().iter()
                .map(|w| json!({"source": w.source, "message": w.message}))
                .collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    let dash = |o: Option<String>| o.unwrap_or_else(|| "-".into());
    writeln!(
        out,
        "profile: {}   agent: {}   mode: {}   task: {}\n",
        policy.profile(),
        dash(layer(Stage::Agent)),
        dash(layer(Stage::Mode)),
        dash(layer(Stage::Task))
    )?;
    let width = decisions.iter().map(|d| d.name.len()).max().unwrap_or(4).max(4);
    writeln!(out, "{:width$}  {:8}  {:8}  RULE", "TOOL", "STATUS", "STAGE")?;
    for d in decisions {
        writeln!(
            out,
            "{:width$}  {:8}  {:8}  {}",
            d.name,
            d.status.as_str(),
            d.stage.as_str(),
            d.rule
        )?;
    }
    writeln!(
        out,
        "\n{} in, {} deferred, {} out",
        count(Status::In),
        count(Status::Deferred),
        count(Status::Out)
    )?;
    // Async sources (MCP servers) that failed: their tools are absent above.
    for w in tools.registry.warnings() {
        writeln!(out, "warning: source `{}`: {}", w.source, printable(&w.message))?;
    }
    if let Some(block) = policy.deferred_prompt(&session) {
        writeln!(
            out,
            "\nDeferred tools are offered to a model by name, in the system prompt:\n{block}"
        )?;
    }
    Ok(())
}
