//! Long-running commands: started now, polled later, killed (with their
//! whole tree) on request or when dropped.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::ProcessError;
use super::runner::{Exit, Runner, kill_and_wait, terminate};
use super::tree::{self, ProcessTree};

/// A command running in the background. Its stdout and stderr both go to a
/// log file. Dropping it kills its whole process tree.
#[derive(Debug)]
pub struct Background {
    pid: u32,
    tree: ProcessTree,
    child: tokio::process::Child,
    started: Instant,
    log: PathBuf,
    exit: Option<Exit>,
    ended: Option<Instant>,
}

/// How to stop a background process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGTERM to the tree, SIGKILL after the grace period.
    Term,
    /// SIGKILL to the tree at once.
    Kill,
}

impl Runner {
    /// Start the command in the background, its output appended to `log`.
    /// The runner's timeout, cancellation and capture settings do not apply.
    pub fn spawn_background(&self, log: &Path) -> Result<Background, ProcessError> {
        tree::ensure_subreaper();
        let marker = tree::new_marker();
        let open = || {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .map_err(|source| ProcessError::Log {
                    path: log.to_path_buf(),
                    source,
                })
        };
        let (out, err) = (open()?, open()?);
        let mut cmd = self.command(&marker)?;
        cmd.stdout(Stdio::from(out)).stderr(Stdio::from(err));
        let child = cmd.spawn().map_err(|source| ProcessError::Spawn {
            program: self.program(),
            source,
        })?;
        drop(cmd);
        let pid = tree::io_pid(child.id()).map_err(|source| ProcessError::Spawn {
            program: self.program(),
            source,
        })?;
        Ok(Background {
            pid,
            tree: self.tree(pid, marker),
            child,
            started: Instant::now(),
            log: log.to_path_buf(),
            exit: None,
            ended: None,
        })
    }
}

impl Background {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// How long it ran (until now, or until it exited).
    pub fn runtime(&self) -> Duration {
        self.ended.unwrap_or_else(Instant::now) - self.started
    }

    /// How it exited, if it has (polls without blocking).
    pub fn try_exit(&mut self) -> Option<Exit> {
        if self.exit.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.exit = Some(Exit::from_status(status));
            self.ended = Some(Instant::now());
        }
        self.exit
    }

    /// Wait until it exits on its own.
    pub async fn wait(&mut self) -> Result<Exit, ProcessError> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        let status = self.child.wait().await.map_err(ProcessError::Wait)?;
        let exit = Exit::from_status(status);
        self.exit = Some(exit);
        self.ended = Some(Instant::now());
        Ok(exit)
    }

    /// Stop the process and everything it started. Returns how the leader
    /// ended (its own exit if it had already exited).
    pub async fn stop(&mut self, signal: StopSignal, grace: Duration) -> Result<Exit, ProcessError> {
        if let Some(exit) = self.try_exit() {
            // The leader is gone; its descendants may not be.
            match signal {
                StopSignal::Term => {
                    self.tree.kill_leftovers(grace).await;
                }
                StopSignal::Kill => self.tree.kill_all(true).await,
            }
            return Ok(exit);
        }
        let status = match signal {
            StopSignal::Term => terminate(&self.tree, &mut self.child, grace).await,
            StopSignal::Kill => {
                let status = kill_and_wait(&self.tree, &mut self.child).await;
                self.tree.kill_all(true).await;
                status
            }
        }
        .map_err(ProcessError::Wait)?;
        let exit = Exit::from_status(status);
        self.exit = Some(exit);
        self.ended = Some(Instant::now());
        Ok(exit)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Kill the whole tree, then reap the leader here (through its
        // `Child`, which records the exit so nothing signals the PID again):
        // its dead children are then re-parented to wield, the subreaper,
        // and `kill_now` reaps them. Left to the runtime, the leader could
        // still be unreaped when wield exits, and its killed children would
        // linger as zombies of PID 1.
        if self.exit.is_none() {
            // A leader that reaps its tree goes last (see `leader_reaps`).
            self.tree.kill_now();
            self.tree.signal(Signal::KILL);
            let _ = self.child.start_kill();
            // SIGKILL cannot be refused, only delayed by a loaded machine:
            // allow it up to two seconds.
            for _ in 0..400 {
                if matches!(self.child.try_wait(), Ok(Some(_)) | Err(_)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.tree.kill_now();
        self.tree.reap_stragglers_later();
    }
}
