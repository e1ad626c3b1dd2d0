//! wield-patch
