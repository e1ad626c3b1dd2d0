//! Paths that other programs run later: a write to one always asks a
//! person, even when an approve rule (such as the default `$standard`)
//! matches, because what is written there runs outside any sandbox the next
//! time the person opens the project (`.envrc` with direnv, `.vscode/`
//! tasks, `.github/workflows/` in CI, `.husky/` and `.pre-commit-config.yaml`
//! on the next commit). Deny rules still win, and a person (or `--yes`) may
//! allow the call, once.
//!
//! The [`AskPathsResolver`] sits above the config resolver and looks at the
//! paths a tool declares it will write ([`wield_core::Tool::paths`]), as
//! given and as resolved (a link `docs/ci -> ../.github/workflows` counts),
//! so wield-core needs to know no tool.

use std::path::Path;
use std::sync::Arc;

use wield_core::approval::{ApprovalCall, Decision, ResolveError, Resolver, ResolverChain};
use wield_core::{Access as CoreAccess, Config, Registry};
use wield_sandbox::fs::{Access, Confinement, ProtectedGlobs};

use crate::SetupError;

/// What always asks, anchored at the workspace, at any depth, matched
/// without regard to case; a match covers everything below it.
pub const DEFAULT_ASK_PATHS: &[&str] = &[
    "**/.envrc",
    "**/.vscode",
    "**/.idea",
    "**/.github/workflows",
    "**/.husky",
    "**/.pre-commit-config.yaml",
    "**/.gitattributes",
    "**/.gitmodules",
];

/// The priority of [`AskPathsResolver`]: above the config resolver (100),
/// so an approve rule cannot spare the ask.
pub const PRIORITY_ASK_PATHS: i32 = 110;

/// The globs of [`DEFAULT_ASK_PATHS`] and `approval.ask_paths` (which adds
/// to them), checked once when the runtime starts, and the hooks directory
/// the workspace's repository names in `core.hooksPath` when it lies in
/// the workspace (`.githooks`): a hook kept executable there runs at the
/// next commit.
pub fn ask_path_globs(config: &Config, workspace: &Path) -> Result<ProtectedGlobs, SetupError> {
    let bad = |found: &dyn std::fmt::Display| {
        SetupError::Invalid(format!(
            "approval.ask_paths must be a list of globs, e.g. [\"deploy/**\"], found {found}"
        ))
    };
    let mut globs: Vec<String> = DEFAULT_ASK_PATHS.iter().map(|s| (*s).to_owned()).collect();
    match config.value("approval.ask_paths") {
        None => {}
        Some(toml::Value::Array(items)) => {
            for i in items {
                globs.push(i.as_str().ok_or_else(|| bad(i))?.to_owned());
            }
        }
        Some(other) => return Err(bad(other)),
    }
    if let Some(hooks) = crate::shell::git_watch::workspace_hooks_path(workspace) {
        let hooks = hooks.to_string_lossy();
        globs.push(globset::escape(hooks.trim_start_matches("./").trim_end_matches('/')));
    }
    ProtectedGlobs::new_case_insensitive(&globs).map_err(|e| SetupError::Invalid(format!("approval.ask_paths: {e}")))
}

/// Asks for every call that writes a path matching [`DEFAULT_ASK_PATHS`] or
/// `approval.ask_paths`, unless a resolver of the chain below it denies it.
pub struct AskPathsResolver {
    registry: Arc<Registry>,
    conf: Arc<Confinement>,
    globs: ProtectedGlobs,
    /// The rest of the chain (config, frontmatter, remembered rules, ...),
    /// asked first so that a deny anywhere in it still wins.
    below: ResolverChain,
}

impl AskPathsResolver {
    /// `below` is the chain this resolver is added to, as it is before:
    /// its deny answers are kept.
    pub fn new(registry: Arc<Registry>, conf: Arc<Confinement>, globs: ProtectedGlobs, below: ResolverChain) -> Self {
        Self {
            registry,
            conf,
            globs,
            below,
        }
    }

    /// The first path `call` writes that matches an ask-path glob, and the
    /// glob.
    fn hit(&self, call: &ApprovalCall<'_>) -> Option<(String, String)> {
        let registered = self.registry.get(call.tool)?;
        registered
            .tool
            .paths(call.input)
            .into_iter()
            .filter(|p| p.access == CoreAccess::Write)
            .find_map(|p| self.matching(&p.path).map(|glob| (p.path, glob)))
    }

    /// The ask-path glob a path written as `path` matches, as given or as
    /// resolved.
    fn matching(&self, path: &str) -> Option<String> {
        let ws = self.conf.workspace();
        let lexical = if Path::new(path).is_absolute() {
            Path::new(path).to_path_buf()
        } else {
            ws.join(path)
        };
        // `a/../.envrc` is `.envrc`.
        let lexical = wield_core::approval::normalize_lexically(&lexical);
        if let Some(g) = self.globs.matching(&lexical, ws) {
            return Some(g.to_owned());
        }
        let real = self.conf.real_path(path, Access::Read).ok()?;
        self.globs.matching(&real, ws).map(str::to_owned)
    }
}

impl Resolver for AskPathsResolver {
    fn name(&self) -> &str {
        "ask_paths"
    }

    fn priority(&self) -> i32 {
        PRIORITY_ASK_PATHS
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        let Some((_, glob)) = self.hit(call) else {
            return Ok(Decision::Pass);
        };
        match self.below.resolve(call).decision {
            deny @ Decision::Deny(_) => Ok(deny),
            _ => {
                tracing::debug!(
                    "`{}` writes a path matching {glob} (approval.ask_paths): asking",
                    call.tool
                );
                Ok(Decision::RequireApproval)
            }
        }
    }

    fn why_ask(&self, call: &ApprovalCall<'_>) -> Option<String> {
        let (path, glob) = self.hit(call)?;
        Some(format!(
            "it writes `{path}`, which matches `{glob}` in approval.ask_paths: a file that other programs run or \
             obey later (shell hooks, editor and CI settings), so every write to it asks (remove the entry from \
             approval.ask_paths to stop that)"
        ))
    }
}
