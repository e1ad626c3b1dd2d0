//! `system_info`: the machine and setup the tools run in — operating
//! system, architecture, kernel, the shell commands run in, the workspace,
//! the sandbox commands get, and wield's version.

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::{Context, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};

pub struct SystemInfo {
    base: ToolBase,
}

impl Default for SystemInfo {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemInfo {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "system_info",
                    "Describe the system the tools run on: operating system, architecture, kernel, the shell \
                     commands run in, the workspace, the sandbox commands run in, and wield's version.",
                    json!({"type": "object", "properties": {}, "additionalProperties": false}),
                )
                .strict(true)
                .title("System information"),
                ToolTraits {
                    read_only: true,
                    groups: vec!["system".into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

/// The distribution's name from os-release, else the OS family.
fn os_name() -> String {
    let family = std::env::consts::OS;
    let pretty = std::fs::read_to_string("/etc/os-release").ok().and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim().trim_matches('"').to_owned())
    });
    match pretty {
        Some(p) if !p.is_empty() => format!("{family} ({p})"),
        _ => family.to_owned(),
    }
}

fn kernel() -> String {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    match (read("/proc/sys/kernel/ostype"), read("/proc/sys/kernel/osrelease")) {
        (Some(t), Some(r)) => format!("{t} {r}"),
        (None, Some(r)) => r,
        _ => "unknown".into(),
    }
}

/// The sandbox commands run in, as bash would get it.
fn sandbox(ctx: &Context) -> String {
    let service = crate::shell::service(ctx);
    match service.plan() {
        Ok(Some(plan)) => format!(
            "{} (network {})",
            plan.backend(),
            if plan.network() { "allowed" } else { "blocked" }
        ),
        Ok(None) => "none: commands run unconfined (file tools stay confined to the workspace)".into(),
        Err(e) => format!("unavailable: {e}"),
    }
}

#[async_trait]
impl Tool for SystemInfo {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, _input: Value, ctx: &Context) -> ToolResult {
        let shell = crate::shell::service(ctx).settings.shell.join(" ");
        let user_shell = std::env::var("SHELL").unwrap_or_default();
        let fields = [
            ("os", os_name()),
            ("arch", std::env::consts::ARCH.to_owned()),
            ("kernel", kernel()),
            ("shell", shell),
            ("user_shell", user_shell),
            ("workspace", ctx.cwd.display().to_string()),
            ("sandbox", sandbox(ctx)),
            ("wield", env!("CARGO_PKG_VERSION").to_owned()),
        ];
        let text: String = fields
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}: {v}\n"))
            .collect();
        let mut result = ToolResult::ok(text);
        for (k, v) in fields {
            result = result.with_meta(k, v);
        }
        result
    }
}
