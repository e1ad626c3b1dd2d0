//! How commands follow a session's life ([`wield_core::SessionHooks`]): the
//! sandbox of a session whose write roots a front-end narrowed (an MCP
//! client's roots) gets the same narrowed roots, since commands write where
//! the file tools may; the background processes a session started are
//! killed as soon as it ends.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use wield_core::{Services, Session, SessionHooks};

use super::processes::Processes;
use super::settings::ShellService;

/// The shell's [`SessionHooks`], registered by [`super::install_services`].
pub struct ShellSessionHooks;

#[async_trait]
impl SessionHooks for ShellSessionHooks {
    fn narrow_writes(&self, services: &mut Services, write: &[PathBuf]) {
        if let Some(shell) = services.get::<ShellService>() {
            services.insert(Arc::new(shell.with_write_roots(write.to_vec())));
        }
    }

    fn tools_reach_network(&self, services: &Services) -> Option<bool> {
        services.get::<ShellService>().map(|shell| shell.reaches_network())
    }

    async fn on_session_end(&self, session: &Session) {
        if let Some(processes) = session.get_extension::<Processes>() {
            processes.stop_all().await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::shell::ShellSettings;

    #[test]
    fn narrowed_writes_reach_the_command_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let mut services = Services::new();
        services.insert(Arc::new(ShellService::new(
            ShellSettings::default(),
            wield_sandbox::process::SandboxSettings::for_workspace(dir.path()),
            dir.path(),
        )));
        services.add_session_hooks(Arc::new(ShellSessionHooks));
        let before = services.get::<ShellService>().unwrap();
        services.narrow_writes(std::slice::from_ref(&sub));
        let after = services.get::<ShellService>().unwrap();
        assert!(!Arc::ptr_eq(&before, &after), "the session's shell service is replaced");
        assert_eq!(after.sandbox.write, [sub]);
        assert_eq!(services.tools_reach_network(), after.reaches_network());
    }
}
