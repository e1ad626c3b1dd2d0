//! wield-sandbox
