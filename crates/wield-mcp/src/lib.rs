//! wield-mcp
