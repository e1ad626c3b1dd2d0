//! Events that stream to whoever listens (terminal UI, MCP progress, audit
//! log) and the JSON Lines audit log.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// Which output stream a delta came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Something that happened to a call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    CallPending {
        call_id: String,
        tool: String,
        preview: String,
    },
    CallApproved {
        call_id: String,
        tool: String,
        by: String,
    },
    CallDenied {
        call_id: String,
        tool: String,
        reason: String,
    },
    CallStarted {
        call_id: String,
        tool: String,
    },
    OutputDelta {
        call_id: String,
        tool: String,
        stream: Stream,
        text: String,
    },
    /// How far a call has got, as its tool tells it (a bridged MCP
    /// server's progress notifications): `progress` grows from one to the
    /// next, `total` is there when known.
    Progress {
        call_id: String,
        tool: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// Something a call did that the person should know of although it was
    /// allowed (a command set a git hook in a nested repository): `kind`
    /// names the tool's concern (`git_config`), `message` says what.
    Notice {
        call_id: String,
        tool: String,
        kind: String,
        message: String,
    },
    CallFinished {
        call_id: String,
        tool: String,
        success: bool,
        duration_ms: u64,
        truncated: bool,
    },
}

impl Event {
    pub fn call_id(&self) -> &str {
        match self {
            Event::CallPending { call_id, .. }
            | Event::CallApproved { call_id, .. }
            | Event::CallDenied { call_id, .. }
            | Event::CallStarted { call_id, .. }
            | Event::OutputDelta { call_id, .. }
            | Event::Progress { call_id, .. }
            | Event::Notice { call_id, .. }
            | Event::CallFinished { call_id, .. } => call_id,
        }
    }
}

/// A subscriber.
pub trait EventListener: Send + Sync {
    fn on_event(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync> EventListener for F {
    fn on_event(&self, event: &Event) {
        self(event);
    }
}

/// Fan-out of events to subscribers. Cloning shares the subscriber list.
#[derive(Clone, Default)]
pub struct EventSink {
    listeners: Arc<RwLock<Vec<Arc<dyn EventListener>>>>,
}

impl EventSink {
    pub fn subscribe(&self, listener: Arc<dyn EventListener>) {
        if let Ok(mut l) = self.listeners.write() {
            l.push(listener);
        }
    }

    pub fn has_listeners(&self) -> bool {
        self.listeners.read().map(|l| !l.is_empty()).unwrap_or(false)
    }

    pub fn emit(&self, event: &Event) {
        if let Ok(listeners) = self.listeners.read() {
            for l in listeners.iter() {
                l.on_event(event);
            }
        }
    }
}

/// One line of the audit log.
#[derive(Debug, Serialize)]
pub struct AuditRecord<'a> {
    pub time: String,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
    pub decision: &'a str,
    pub success: bool,
    pub duration_ms: u64,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Appends one JSON line per finished call.
pub struct AuditLog {
    file: Mutex<File>,
}

impl AuditLog {
    /// Open (or create) the log at `path` for appending. It holds every
    /// call's full input, so it is its owner's alone: the directories made
    /// for it are 0700, the file is created 0600 (and an existing one of
    /// this user's that others could read is closed to them), a link in its
    /// place is refused rather than followed, and so is anything but a
    /// regular file.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && !parent.is_dir()
        {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the audit log {} is not a regular file", path.display()),
            ));
        }
        // SAFETY: geteuid cannot fail and touches no memory.
        let me = unsafe { libc::geteuid() };
        if meta.uid() == me && meta.mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(Self { file: Mutex::new(file) })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        call_id: &str,
        tool: &str,
        input: &Value,
        decision: &str,
        success: bool,
        duration: Duration,
        truncated: bool,
        error: Option<&str>,
    ) {
        let rec = AuditRecord {
            time: now(),
            call_id,
            tool,
            input,
            decision,
            success,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            truncated,
            error,
        };
        self.write_line(&rec);
    }

    /// Appends another kind of record (a model turn a front-end writes
    /// beside the calls it caused): its fields after the time, one line.
    pub fn append<T: Serialize>(&self, record: &T) {
        #[derive(Serialize)]
        struct Stamped<'a, T> {
            time: String,
            #[serde(flatten)]
            record: &'a T,
        }
        self.write_line(&Stamped { time: now(), record });
    }

    fn write_line<T: Serialize>(&self, record: &T) {
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        line.push('\n');
        if let Ok(mut f) = self.file.lock() {
            // One write call per line keeps lines whole under O_APPEND even
            // when several wield processes share the log.
            if let Err(e) = f.write_all(line.as_bytes()) {
                tracing::warn!("audit log write failed: {e}");
            }
        }
    }
}
