//! Sandboxed Lua for wield: custom tools in Flemma's shape
//! (`.wield/tools/*.lua` and the global tools directory), their async
//! sources, approval resolvers (`.wield/resolvers/*.lua` and Lua files in
//! `approval.auto_approve`), and the evaluation of `.chat` frontmatter.
//!
//! Every script runs in a [`Sandbox`]: the string, table, math and utf8
//! libraries, a trimmed base library (no `os`, `io`, `debug`, `package`,
//! `dofile`, `loadfile`, bytecode `load`, `string.dump`; `require` only
//! inside the tools directory), a memory limit and an instruction budget
//! that also stops a call at its deadline or when it is cancelled — in C
//! library functions too: the pattern functions count their steps against
//! the same budget, and the other loops a script could make endless are
//! replaced (see the `sandbox` module). A tool
//! reaches wield only through its `ctx` (the README's "Lua tools" lists
//! it): files through the file tools' confinement, commands through the
//! `bash` tool. The runtime loads all of it (`wield-runtime`'s `lua`
//! module); `.chat` documents call [`frontmatter::evaluate`].

mod blocking;
mod convert;
mod ctx;
mod error;
pub mod frontmatter;
mod loader;
mod pattern;
mod resolver;
mod sandbox;
mod source;
mod tool;

pub use blocking::off_worker;
pub use error::LuaError;
pub use loader::{Loaded, load_tools, tool_dirs};
pub use resolver::{Answers, LuaResolver, auto_approve_file, load_resolvers};
pub use sandbox::{CONFIG_KEYS, DEFAULT_INSTRUCTIONS, DEFAULT_MEMORY, LOAD_TIME, Limits, Sandbox};
pub use source::AsyncSource;
pub use tool::{GROUP, LuaService, LuaTool, Script};

#[cfg(test)]
mod tests;
