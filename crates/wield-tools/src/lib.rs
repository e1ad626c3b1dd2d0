//! wield-tools
