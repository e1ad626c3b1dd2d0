//! Visibility: which tools a model may see and call. The executor asks a
//! [`Visibility`] before running a call; front-ends build one from the policy
//! pipeline.

use crate::context::Session;

pub trait Visibility: Send + Sync {
    /// `Err` with the reason when the tool is hidden by policy.
    fn check_callable(&self, tool: &str, session: &Session) -> Result<(), String>;
}

/// Everything registered is callable.
pub struct AllVisible;

impl Visibility for AllVisible {
    fn check_callable(&self, _tool: &str, _session: &Session) -> Result<(), String> {
        Ok(())
    }
}
