//! What an agent brings to an `AgentSession` built as `wield run` builds
//! it: a named agent's provider, model, prompt, steps and tools with the
//! project instructions (the built-in prompt without one); `task`
//! subagents under the parent's rules, their tokens counted in the run's;
//! named subagents with their own steps, an unknown one refused.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::json;
use wield_agent::{AgentSession, AgentTools, SessionError, StopReason};
use wield_test_support::agent::{Build, Flags, load, project, run_once, tool_contents, write};
use wield_test_support::scripted::{Scripted, Turn, offered};

/// The system prompt of the first request `provider` got.
fn system_prompt(provider: &Scripted) -> String {
    provider.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_gets_its_provider_prompt_steps_and_tools_and_the_project_instructions() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Reviewed."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(ws, "notes.txt", "the answer is 42\n");
    write(ws, "AGENTS.md", "Always cite line numbers.\n");
    write(ws, "CLAUDE.md", "Not read: AGENTS.md is there.\n");
    write(
        ws,
        ".wield/config.toml",
        &format!(
            "default_provider = \"other\"\n\n\
             [providers.other]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"x\"\n\n\
             {}\n\
             [agent]\ninstructions = \"Answer in one line.\"\nmax_steps = 20\n\n\
             [agents.rev]\nprovider = \"fake\"\nmodel = \"reviewer-model\"\n\
             system_prompt = \"You review code; you change nothing.\"\nmax_steps = 1\n\n\
             [agents.rev.tools]\nenabled = [\"read\", \"grep\"]\n",
            provider.config()
        ),
    );
    // `--agent rev`: its policy layer and its settings.
    let flags = Flags {
        agent: Some("rev"),
        ..Flags::default()
    };
    let build = Build {
        agent: Some("rev"),
        ..Build::default()
    };
    let ran = run_once(ws, flags, build, "Review notes.txt").await;
    let outcome = ran.ok();
    assert_eq!((outcome.stop, outcome.steps), (StopReason::MaxSteps, 2));
    assert_eq!(outcome.answer.trim_end(), "Reviewed.");
    let requests = provider.requests();
    assert_eq!(requests[0]["model"], "reviewer-model");
    let system = system_prompt(&provider);
    assert!(system.starts_with("You review code; you change nothing."), "{system}");
    assert!(
        !system.contains("coding agent") && !system.contains("Not read"),
        "{system}"
    );
    assert!(system.contains("# Project instructions (AGENTS.md)\n\nAlways cite line numbers."));
    assert!(system.ends_with("Answer in one line."), "{system}");
    let mut tools = offered(&requests[0]);
    tools.sort_unstable();
    assert_eq!(tools, ["grep", "read"]);

    // Without an agent: the built-in prompt, CLAUDE.md when there is no
    // AGENTS.md, and agent.system_prompt would replace it.
    std::fs::remove_file(ws.join("AGENTS.md")).unwrap();
    let provider = Scripted::start(vec![Turn::Text("Hi.")]);
    let config = format!("{}\n[agent]\ninstructions = \"Be terse.\"\n", provider.config());
    write(ws, ".wield/config.toml", &config);
    let ran = run_once(ws, Flags::default(), Build::default(), "Hello").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let system = system_prompt(&provider);
    assert!(system.contains("coding agent") && system.contains(std::env::consts::OS));
    assert!(
        system.contains(&ws.canonicalize().unwrap().display().to_string()),
        "{system}"
    );
    assert!(system.contains("(CLAUDE.md)\n\nNot read: AGENTS.md is there.") && system.ends_with("Be terse."));
    let other = Scripted::start(vec![Turn::Text("Hi.")]);
    write(
        ws,
        ".wield/config.toml",
        &format!("{}\n[agent]\nsystem_prompt = \"Only say hi.\"\n", other.config()),
    );
    let ran = run_once(ws, Flags::default(), Build::default(), "Hello").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let system = system_prompt(&other);
    assert!(
        system.starts_with("Only say hi.") && !system.contains("coding agent"),
        "{system}"
    );

    // A wrong value is refused, naming the key (`wield` exits 2 on it).
    write(
        ws,
        ".wield/config.toml",
        &format!("{config}\n[context]\ncompact_at = 0\n"),
    );
    let tools = AgentTools::new();
    let rt = load(ws, &tools, Flags::default()).await;
    let Err(SessionError::Invalid(err)) = AgentSession::builder(&rt).tools(&tools).build() else {
        panic!("a session was built with compact_at = 0")
    };
    assert!(
        err.contains("context.compact_at: expected a whole number from 1 to 100"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_runs_a_subagent_under_the_parent_s_rules_and_counts_its_tokens() {
    let provider = Scripted::start(vec![
        Turn::Call(
            "task",
            json!({ "description": "read notes", "prompt": "What does notes.txt say?" }),
        ),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("It says 42."),
        Turn::Text("The subagent found 42."),
    ]);
    let dir = project(&provider, "");
    let flags = Flags {
        exclude_tools: Some("bash"),
        ..Flags::default()
    };
    let ran = run_once(dir.path(), flags, Build::default(), "Delegate it.").await;
    let outcome = ran.ok();
    assert_eq!(outcome.stop, StopReason::Done);
    assert_eq!(outcome.answer.trim_end(), "The subagent found 42.");
    // The subagent's two requests count in the run's usage.
    assert_eq!(outcome.usage.input, 400, "{:?}", outcome.usage);
    let requests = provider.requests();
    assert!(offered(&requests[0]).contains(&"task".to_owned()));
    let child = offered(&requests[1]);
    assert!(child.contains(&"read".to_owned()), "{child:?}");
    for absent in ["task", "ask", "bash"] {
        assert!(
            !child.contains(&absent.to_owned()),
            "the subagent was offered {absent}: {child:?}"
        );
    }
    assert!(requests[1].to_string().contains("What does notes.txt say?"));
    assert!(
        !requests[1].to_string().contains("Delegate it."),
        "the subagent saw the parent's conversation"
    );
    let text = tool_contents(&requests[3]).pop().unwrap();
    assert!(
        text.contains("It says 42.") && text.contains("[subagent `read notes`: 2 steps, read ×1]"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_subagent_gets_its_own_steps_and_an_unknown_one_is_refused() {
    let provider = Scripted::start(vec![
        Turn::Call(
            "task",
            json!({ "description": "d", "prompt": "Look.", "agent": "nobody" }),
        ),
        Turn::Call(
            "task",
            json!({ "description": "d", "prompt": "Look.", "agent": "reader" }),
        ),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Only got as far as notes.txt."),
        Turn::Text("Done."),
    ]);
    let dir = project(
        &provider,
        "[agents.reader]\nsubagent = true\ndescription = \"Reads files\"\nmax_steps = 1\n",
    );
    let ran = run_once(dir.path(), Flags::default(), Build::default(), "Go.").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let requests = provider.requests();
    let description = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap()["function"]["description"]
        .to_string();
    assert!(description.contains("`reader`: Reads files"), "{description}");
    let refused = tool_contents(&requests[1]).pop().unwrap();
    assert!(refused.contains("unknown subagent `nobody`; the configured ones: reader"));
    // max_steps = 1: one step with tools, then the last turn without.
    assert!(requests[3].get("tools").is_none(), "{}", requests[3]);
    let text = tool_contents(&requests[4]).pop().unwrap();
    assert!(
        text.contains("Only got as far") && text.contains("[stopped by the step limit after 2 steps]"),
        "{text}"
    );
}
