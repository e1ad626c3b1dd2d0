//! Commands: bash and background processes.

use std::path::Path;

use wield_core::{Config, Services, ToolRef};

use crate::SetupError;

pub fn tools() -> Vec<ToolRef> {
    Vec::new()
}

pub fn install_services(_services: &mut Services, _config: &Config, _workspace: &Path) -> Result<(), SetupError> {
    Ok(())
}
