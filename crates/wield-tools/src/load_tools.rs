//! `load_tools`: load the schemas of deferred tools for the rest of the
//! session.
//!
//! Deferred tools are offered to the model by name only (a system-prompt
//! block); calling this tool marks the chosen ones loaded in the session, so
//! the front-end sends their schemas from then on and the executor lets them
//! run. The answer also carries the schemas, for front-ends that cannot
//! change the tool list mid-conversation. The tool policy comes from the
//! [`ToolPolicy`] service the front-end installs.

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::policy::{LOADS_DEFERRED, ToolPolicy};
use wield_core::{Context, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};

pub struct LoadTools {
    base: ToolBase,
}

impl Default for LoadTools {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadTools {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "load_tools",
                    "Load deferred tools so they can be called. Deferred tools are listed by name in \
                 <available-deferred-tools>; pass their names (or globs such as \"mcp__docs__*\") in `tools`, \
                 or an MCP server name in `server` to load all of its deferred tools. Loaded tools stay \
                 available for the rest of the session.",
                    json!({
                        "type": "object",
                        "properties": {
                            "tools": {
                                "type": ["array", "null"],
                                "items": {"type": "string"},
                                "description": "Tool names or globs (`*` only) of deferred tools to load."
                            },
                            "server": {
                                "type": ["string", "null"],
                                "description": "An MCP server name: load every deferred tool it provides."
                            }
                        },
                        "required": ["tools", "server"],
                        "additionalProperties": false
                    }),
                )
                .title("Load deferred tools")
                .strict(true),
                // Changes only what this session may see: read-only as far as
                // approval is concerned. Sequential, because it changes the tool
                // set later calls are checked against.
                ToolTraits {
                    parallel: false,
                    read_only: true,
                    capabilities: vec![LOADS_DEFERRED.into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for LoadTools {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let Some(policy) = ctx.service::<ToolPolicy>() else {
            return ToolResult::error(
                "no tool policy is installed in this runtime, so there are no deferred tools to load",
            );
        };
        let patterns: Vec<String> = input
            .get("tools")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let server = input
            .get("server")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty());
        let picked = match policy.select_deferred(&patterns, server.map(str::trim)) {
            Ok(p) => p,
            Err(e) => return ToolResult::error(e),
        };
        let mut schemas = Vec::new();
        let mut newly = Vec::new();
        for name in &picked {
            if !ctx.session.is_loaded(name) {
                newly.push((*name).to_owned());
            }
            ctx.session.mark_loaded(name);
            if let Some(spec) = policy.deferred_spec(name) {
                schemas.push(json!({
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                }));
            }
        }
        let mut out = format!(
            "Loaded {} tool(s): {}. They can be called from now on.\n",
            picked.len(),
            picked.join(", ")
        );
        out.push_str(&serde_json::to_string_pretty(&schemas).unwrap_or_default());
        ToolResult::ok(out)
            .with_meta("loaded", picked.clone())
            .with_meta("newly_loaded", newly)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wield_core::policy::{PolicyBuilder, RuleList};
    use wield_core::testing::StaticTool;
    use wield_core::{Services, ToolRef};

    use super::*;

    #[tokio::test]
    async fn loads_matching_deferred_tools_into_the_session() {
        let mut registry = wield_core::Registry::new();
        for name in ["mcp__docs__search", "mcp__docs__get"] {
            let tool: ToolRef = Arc::new(StaticTool::new(name, json!({"type":"object"})));
            registry.register_from(tool, "mcp:docs").unwrap();
        }
        registry
            .register(Arc::new(StaticTool::new("plain", json!({"type":"object"}))))
            .unwrap();
        registry.register(Arc::new(LoadTools::new())).unwrap();
        // The source names its tools' server; the config defers them.
        registry.describe_source(
            "mcp:docs",
            wield_core::SourceMeta {
                label: Some("docs".into()),
                deferred_by: None,
            },
        );
        let policy = PolicyBuilder::new()
            .deferred(RuleList::parse("[tools] deferred", &["mcp__*"]).unwrap())
            .build(&registry);
        let mut services = Services::new();
        services.insert(Arc::new(policy));
        let mut ctx = Context::detached(".");
        ctx.services = Arc::new(services);
        let tool = LoadTools::new();
        let r = tool
            .execute(json!({"tools": ["MCP__DOCS__S*"], "server": null}), &ctx)
            .await;
        assert!(r.success, "{r:?}");
        assert!(ctx.session.is_loaded("mcp__docs__search"));
        assert!(!ctx.session.is_loaded("mcp__docs__get"));
        assert!(r.output.contains("\"input_schema\""));
        let r = tool.execute(json!({"tools": null, "server": "docs"}), &ctx).await;
        assert_eq!(r.metadata["newly_loaded"], json!(["mcp__docs__get"]));
        let r = tool.execute(json!({"tools": ["plain"], "server": null}), &ctx).await;
        assert!(r.error.unwrap().contains("already available"));
        let r = tool.execute(json!({"tools": null, "server": null}), &ctx).await;
        assert!(
            r.error
                .unwrap()
                .contains("deferred tools: mcp__docs__get, mcp__docs__search")
        );
    }

    #[tokio::test]
    async fn a_model_calls_deferred_tools_only_after_loading_them() {
        use wield_core::{Call, Config, ExecutorBuilder, Registry, Session};
        let mut registry = Registry::new();
        registry
            .register(Arc::new(
                StaticTool::new("mcp__docs__get", json!({"type":"object"})).traits(wield_core::ToolTraits {
                    read_only: true,
                    ..wield_core::ToolTraits::default()
                }),
            ))
            .unwrap();
        registry.register(Arc::new(LoadTools::new())).unwrap();
        let policy = Arc::new(
            PolicyBuilder::new()
                .deferred(RuleList::parse("[tools] deferred", &["mcp__*"]).unwrap())
                .build(&registry),
        );
        let mut services = Services::new();
        services.insert(Arc::clone(&policy));
        let executor = ExecutorBuilder::new(Arc::new(registry), Arc::new(Config::default()), ".")
            .services(services)
            .visibility(policy)
            .build();
        let session = Arc::new(Session::new("model", true));
        let cancel = tokio_util::sync::CancellationToken::new();
        let get = || Call::new("1", "mcp__docs__get", json!({}));
        let r = executor.run_one(get(), &session, &cancel).await;
        assert!(r.error.unwrap().contains("it is deferred"));
        let r = executor
            .run_one(
                Call::new("2", "load_tools", json!({"tools": ["mcp__docs__*"]})),
                &session,
                &cancel,
            )
            .await;
        assert!(r.success, "{r:?}");
        assert!(executor.run_one(get(), &session, &cancel).await.success);
        // Loading lasts for the session only.
        let other = Arc::new(Session::new("next", true));
        assert!(!executor.run_one(get(), &other, &cancel).await.success);
    }
}
