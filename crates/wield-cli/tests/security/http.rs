//! `mcp serve --http` authentication against other local users.
