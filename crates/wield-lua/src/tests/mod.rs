//! Unit tests: the sandbox, tools and their ctx, async sources, resolvers
//! and frontmatter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod frontmatter;
mod patterns;
mod resolvers;
mod sandbox;
mod tools;

use std::path::Path;

/// Write `files` (name, text) into `dir`.
pub(crate) fn files(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// What resolver `r` decides for a call of `tool` with `input` in `/ws`
/// (a sandboxed, model-driven session), or its error.
pub(crate) fn ask(
    r: &dyn wield_core::approval::Resolver,
    tool: &str,
    input: serde_json::Value,
) -> Result<wield_core::approval::Decision, String> {
    let session = wield_core::Session::new("s", true);
    let traits = wield_core::ToolTraits::default();
    let call = wield_core::approval::ApprovalCall {
        tool,
        input: &input,
        subject: &wield_core::approval::Subject::None,
        traits: &traits,
        session: &session,
        workspace: Path::new("/ws"),
        sandboxed: true,
    };
    r.resolve(&call).map_err(|e| e.to_string())
}
