//! The runtime a subagent runs on: its parent's, with a tool set narrowed
//! to what both the parent and the subagent's agent may call. The tools it
//! is offered and the executor that checks its calls come from that one
//! tool set, so a tool it is not offered is refused even when its model
//! names it.

use std::sync::Arc;

use wield_core::policy::ToolPolicy;

use crate::{Error, Runtime};

impl Runtime {
    /// The runtime for a subagent of a run on this one: `agent`'s layers
    /// (the `[agents.NAME.tools]` layer `--agent NAME` applies; none for a
    /// general subagent) on top of everything this runtime's policy
    /// decides, and the `withheld` tools out. Its tools and its executors
    /// are never wider than this runtime's.
    pub fn for_subagent(&self, agent: Option<&str>, withheld: &[&str]) -> Result<Self, Error> {
        let tools = self.tools().narrowed(agent, withheld).map_err(Error::usage)?;
        Ok(self.with_tools(tools))
    }

    /// This runtime with its calls checked by `policy` (a caller's, which
    /// may be narrower than the runtime's own).
    pub(crate) fn checked_by(&self, policy: Arc<ToolPolicy>) -> Self {
        self.with_tools(self.tools().with_policy(policy))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tokio_util::sync::CancellationToken;
    use wield_core::approval::YesApprover;
    use wield_core::policy::{PolicyOptions, RuleList};
    use wield_core::{Call, Session};

    use crate::{Runtime, RuntimeOptions};

    const CONFIG: &str = "[tools]\nopt_in = [\"web_fetch\"]\n\n\
                          [agents.review]\nsubagent = true\ntools.enabled = [\"read\", \"grep\", \"web_fetch\"]\n";

    async fn runtime(dir: &std::path::Path, policy: PolicyOptions) -> Runtime {
        std::fs::create_dir_all(dir.join(".wield")).unwrap();
        std::fs::write(dir.join(".wield/config.toml"), CONFIG).unwrap();
        let options = RuntimeOptions {
            policy,
            config_keys: vec!["agents.*.subagent"],
            global_dir: wield_core::config::GlobalDir::Nowhere,
            ..RuntimeOptions::default()
        };
        Runtime::load(dir, options).await.unwrap()
    }

    fn names(rt: &Runtime) -> Vec<String> {
        rt.visible().iter().map(|r| r.tool.spec().name.clone()).collect()
    }

    #[tokio::test]
    async fn a_subagent_sees_and_runs_only_what_its_agent_and_its_parent_both_allow() {
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime(dir.path(), PolicyOptions::default()).await;
        assert!(names(&rt).contains(&"bash".to_owned()));
        // The agent's list names the opt-in `web_fetch`, which the parent
        // does not have: it stays out.
        let sub = rt.for_subagent(Some("review"), &["task"]).unwrap();
        assert_eq!(names(&sub), ["grep", "read"]);
        let executor = sub.executor(Arc::new(YesApprover)).unwrap();
        let session = Arc::new(Session::new("s", true));
        let cancel = CancellationToken::new();
        for (tool, input) in [
            ("bash", json!({ "command": "touch made" })),
            ("write", json!({ "path": "made", "content": "x" })),
            ("web_fetch", json!({ "url": "http://127.0.0.1:9/" })),
        ] {
            let result = executor.run_one(Call::new("c", tool, input), &session, &cancel).await;
            assert!(!result.success, "{tool} ran: {result:?}");
            let why = result.error.unwrap_or_default();
            assert!(why.contains("hidden by the agent stage"), "{tool}: {why}");
        }
        assert!(!dir.path().join("made").exists());

        // A general subagent has the parent's tools, less the withheld ones.
        let general = rt.for_subagent(None, &["task", "bash"]).unwrap();
        let general = names(&general);
        assert!(general.contains(&"write".to_owned()) && !general.contains(&"bash".to_owned()));
    }

    #[tokio::test]
    async fn what_the_parent_run_cannot_call_its_subagents_cannot_either() {
        let dir = tempfile::tempdir().unwrap();
        let exclude = RuleList::parse("--exclude-tools", &["grep"]).unwrap();
        let policy = PolicyOptions {
            exclude: Some(exclude),
            ..PolicyOptions::default()
        };
        let rt = runtime(dir.path(), policy).await;
        let sub = rt.for_subagent(Some("review"), &[]).unwrap();
        assert_eq!(names(&sub), ["read"]);
        let unknown = rt.for_subagent(Some("nobody"), &[]).err().map(|e| e.to_string());
        assert!(unknown.is_some_and(|e| e.contains("unknown agent `nobody`")));
    }
}
