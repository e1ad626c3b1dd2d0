//! Unit tests: the sandbox, tools and their ctx, async sources, resolvers
//! and frontmatter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod frontmatter;
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
