//! Turning command-line settings into library objects: the workspace, the
//! merged configuration, the registry, the services and the executor.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use wield_core::{
    Approver, Config, ConfigLoader, Executor, ExecutorBuilder, KeyTree, Registered, Registry, Services, approval,
    events::AuditLog,
};

use crate::cli::GlobalArgs;

/// An error that is the user's to fix on the command line: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Everything a command needs, built once per process.
pub struct Runtime {
    pub global: GlobalArgs,
    pub workspace: PathBuf,
    pub config: Arc<Config>,
    pub registry: Arc<Registry>,
    pub services: Services,
}

impl Runtime {
    pub async fn load(global: &GlobalArgs) -> anyhow::Result<Self> {
        let workspace = match &global.dir {
            Some(d) => d.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let workspace =
            std::fs::canonicalize(&workspace).map_err(|e| usage(format!("workspace {}: {e}", workspace.display())))?;
        if !workspace.is_dir() {
            return Err(usage(format!("workspace {} is not a directory", workspace.display())));
        }

        let mut registry = Registry::new();
        let mut tools = wield_tools::builtin_tools();
        if std::env::var_os("WIELD_DEBUG_TOOLS").is_some_and(|v| v == "1") {
            tools.extend(crate::debug_tools::tools());
        }
        registry
            .register_many(tools)
            .context("registering the built-in tools")?;

        let mut known = KeyTree::core();
        for r in registry.list() {
            known.insert_under(&r.tool.spec().name, &r.tool.config_keys());
        }
        let mut loader = ConfigLoader::new().standard_files(&workspace);
        if let Some(file) = &global.config {
            loader = loader.file(file);
        }
        loader = loader.env(std::env::vars());
        let overrides = overrides_table(&global.set)?;
        if !overrides.is_empty() {
            loader = loader.overrides("--set", overrides);
        }
        let config = loader.load(&known).map_err(|e| usage(e.to_string()))?;

        let mut services = Services::new();
        wield_tools::install_services(&mut services, &config, &workspace).map_err(|e| usage(e.to_string()))?;

        Ok(Self {
            global: global.clone(),
            workspace,
            config: Arc::new(config),
            registry: Arc::new(registry),
            services,
        })
    }

    /// The approver for this process: `--yes`, else a headless refusal.
    pub fn approver(&self) -> Arc<dyn Approver> {
        if self.global.yes {
            Arc::new(approval::YesApprover)
        } else {
            Arc::new(approval::HeadlessApprover)
        }
    }

    pub fn executor(&self) -> anyhow::Result<Executor> {
        let mut builder = ExecutorBuilder::new(Arc::clone(&self.registry), Arc::clone(&self.config), &self.workspace)
            .approver(self.approver())
            .services(self.services.clone());
        let audit_file = self.global.audit.clone().or_else(|| self.config.audit.file.clone());
        if let Some(path) = audit_file {
            let log = AuditLog::open(&path).with_context(|| format!("opening audit log {}", path.display()))?;
            builder = builder.audit(Arc::new(log));
        }
        Ok(builder.build())
    }

    /// The tools a model sees, in name order.
    pub fn visible(&self) -> Vec<Arc<Registered>> {
        self.registry.list().cloned().collect()
    }
}

fn overrides_table(sets: &[String]) -> anyhow::Result<toml::Table> {
    let mut table = toml::Table::new();
    for s in sets {
        let Some((key, value)) = s.split_once('=') else {
            return Err(usage(format!("--set expects KEY=VALUE, got `{s}`")));
        };
        wield_core::config::set_path(&mut table, key.trim(), wield_core::config::parse_scalar(value.trim()))
            .map_err(|e| usage(e.to_string()))?;
    }
    Ok(table)
}
