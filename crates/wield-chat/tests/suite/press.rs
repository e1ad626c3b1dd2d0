//! What the cycle tests share: a workspace talking to the scripted
//! provider, and one press on a document in it as a front-end makes it
//! (the document opened, the runtime loaded with what it decides, the
//! cycle run to its stop), in process, with what the cycle said it did not
//! take as the person's.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wield_chat::cycle::{CycleError, Progress, Stop};
use wield_chat::{ChatDocument, CycleFlags, DocumentError};
use wield_core::config::GlobalDir;
use wield_runtime::{Runtime, RuntimeOptions};
use wield_sandbox::fs::chat::Ledger;
use wield_test_support::scripted::{Scripted, Turn};

/// A workspace: `.wield/config.toml` with `config`, and the provider it
/// talks to when there is one.
pub struct Project {
    dir: tempfile::TempDir,
    pub provider: Option<Scripted>,
}

impl Project {
    /// A workspace talking to a provider that answers with `turns`, with
    /// `config` besides and `notes.txt` saying "the answer is 42".
    pub fn new(turns: Vec<Turn>, config: &str) -> Self {
        let provider = Scripted::start(turns);
        let project = Self::configured(&format!("{}\n{config}", provider.config()));
        project.put("notes.txt", "the answer is 42\n");
        Self {
            provider: Some(provider),
            ..project
        }
    }

    /// A workspace with `config` only.
    pub fn configured(config: &str) -> Self {
        let project = Self {
            dir: tempfile::tempdir().unwrap(),
            provider: None,
        };
        project.put(".wield/config.toml", config);
        project
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` in the workspace.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `text` to `rel`, making its directory.
    pub fn put(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// The requests the provider got, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.provider.as_ref().unwrap().requests()
    }

    /// `rel` as `wield chat status --json` shows it: the parsed document's
    /// state.
    pub fn status(&self, rel: &str) -> Value {
        serde_json::to_value(wield_chat::parse(&self.read(rel)).state()).unwrap()
    }

    /// A press on `rel` with `press`'s flags.
    pub async fn press_with(&self, rel: &str, press: Press) -> Result<Stop, Refused> {
        press.on(self.root(), rel).await
    }

    /// A press on `rel`.
    pub async fn press(&self, rel: &str) -> Result<Stop, Refused> {
        self.press_with(rel, Press::default()).await
    }

    /// A press on `rel` with `press`'s flags, and the changes the cycle
    /// reported it did not take as the person's ([`Progress::NotTaken`]).
    pub async fn press_watched(&self, rel: &str, press: Press) -> (Result<Stop, Refused>, Vec<String>) {
        press.watched(self.root(), rel).await
    }
}

/// What a front-end decides of a press beside the document (`wield chat`'s
/// flags).
#[derive(Clone, Default)]
pub struct Press {
    pub once: bool,
    pub no_autopilot: bool,
    /// `--model`.
    pub model: Option<String>,
    /// Ctrl-C.
    pub cancel: CancellationToken,
    /// `--set KEY=VALUE` settings (`sandbox.backend="bwrap"`, say).
    pub set: Vec<String>,
    /// The global configuration directory: with one, the documents guarded
    /// between presses are listed in it, as `wield chat` lists them (and
    /// every runtime loaded with it reads them); without, in the
    /// workspace's `ledger`, and the runtime has none.
    pub global_dir: Option<PathBuf>,
}

/// Why a press did not end in a [`Stop`]: the document (or its frontmatter)
/// cannot be worked on, or the cycle failed.
#[derive(Debug)]
pub enum Refused {
    Document(DocumentError),
    Cycle(CycleError),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Document(e) => e.fmt(f),
            Self::Cycle(e) => e.fmt(f),
        }
    }
}

impl Refused {
    /// Whether the person fixes this in the document or its frontmatter
    /// (what `wield chat` calls a usage error).
    pub fn is_invalid(&self) -> bool {
        matches!(self, Self::Document(DocumentError::Invalid(_)))
    }
}

impl Press {
    /// The press on `rel` in `workspace`, the documents guarded between
    /// presses listed in its `ledger` (not in the user's list) unless a
    /// global configuration directory is named.
    pub async fn on(self, workspace: &Path, rel: &str) -> Result<Stop, Refused> {
        self.watched(workspace, rel).await.0
    }

    /// [`Press::on`], and the changes the cycle reported it did not take
    /// as the person's.
    pub async fn watched(self, workspace: &Path, rel: &str) -> (Result<Stop, Refused>, Vec<String>) {
        let mut not_taken = Vec::new();
        let stop = self.run(workspace, rel, &mut not_taken).await;
        (stop, not_taken)
    }

    async fn run(self, workspace: &Path, rel: &str, not_taken: &mut Vec<String>) -> Result<Stop, Refused> {
        let doc = ChatDocument::open(&workspace.join(rel)).map_err(Refused::Document)?;
        let mut options = RuntimeOptions {
            tools: wield_agent::tools::agent_tools(),
            config_keys: [wield_llm::settings::CONFIG_KEYS, wield_agent::CONFIG_KEYS].concat(),
            set: self.set.clone(),
            global_dir: self.global_dir.clone().map_or(GlobalDir::Nowhere, GlobalDir::At),
            ..RuntimeOptions::default()
        };
        doc.adjust(&mut options).map_err(Refused::Document)?;
        let rt = Runtime::load(workspace, options)
            .await
            .map_err(|e| Refused::Document(e.into()))?;
        let agent = wield_agent::AgentSettings::from_config(rt.config(), None).unwrap();
        let all = wield_llm::settings::Providers::from_config(
            Some(&serde_json::to_value(rt.config().value("providers").unwrap()).unwrap()),
            None,
            |_| None,
        )
        .unwrap();
        let settings = doc
            .provider(&all, None, self.model.as_deref(), &agent)
            .map_err(Refused::Document)?;
        let endpoint = settings.endpoint(|_| None).unwrap();
        let provider = wield_llm::Provider::new(endpoint).unwrap();
        let flags = CycleFlags {
            no_autopilot: self.no_autopilot,
            once: self.once,
            // With a global directory, the runtime's list, as `wield chat`'s.
            ledger: self.global_dir.is_none().then(|| Ledger::at(workspace.join("ledger"))),
            ..CycleFlags::default()
        };
        let cycle = doc
            .cycle(&rt, provider, &settings, &agent, flags)
            .map_err(Refused::Document)?;
        cycle
            .run(&self.cancel, |p| {
                if let Progress::NotTaken(why) = p {
                    not_taken.push(why.to_owned());
                }
            })
            .await
            .map_err(Refused::Cycle)
    }
}
