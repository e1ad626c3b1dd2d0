//! Approval rules an attacker's command or path must not fool: shell syntax, wrappers, symlinked paths.
