//! wield-core
