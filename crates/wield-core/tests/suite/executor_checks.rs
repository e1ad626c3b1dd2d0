//! The pipeline's checks and messages: who is asked and when a rule asks
//! every time, what a refused or unknown call tells the model, the time
//! limits a call gets and when its output is cut.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_core::approval::{FnResolver, standard_chain};
use wield_core::events::AuditLog;
use wield_core::hooks::{Hook, HookCall};
use wield_core::{
    ApprovalAnswer, ApprovalRequest, Approver, Call, Config, Context, Decision, Event, ExecutorBuilder, Registry,
    Scope, Session, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits,
};

/// Answers `out` (or sleeps `ms` first), with the traits it was made with.
struct Echo {
    base: ToolBase,
}

impl Echo {
    fn new(name: &str, capabilities: &[&str]) -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    name,
                    "echo",
                    json!({"type":"object","properties":{
                        "out":{"type":"string"},"ms":{"type":"integer"},
                        "timeout":{},"panic":{"type":"string"},"meta":{"type":"boolean"}}}),
                ),
                ToolTraits {
                    read_only: true,
                    capabilities: capabilities.iter().map(|c| (*c).to_owned()).collect(),
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for Echo {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        match input["panic"].as_str() {
            Some("str") => panic!("a static message"),
            Some("string") => panic!("a message for {}", ctx.call_id),
            Some(_) => std::panic::panic_any(42_u8),
            None => {}
        }
        if let Some(ms) = input["ms"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let result = ToolResult::ok(input["out"].as_str().unwrap_or("done").to_owned());
        let result = result.with_meta("timeout_ms", u64::try_from(ctx.timeout.as_millis()).unwrap());
        if input["meta"] == true {
            return result.with_meta("truncated", false);
        }
        result
    }
}

fn registry(tools: Vec<Echo>) -> Arc<Registry> {
    let mut r = Registry::new();
    for t in tools {
        r.register(Arc::new(t)).unwrap();
    }
    Arc::new(r)
}

fn session() -> Arc<Session> {
    Arc::new(Session::new("t", true))
}

/// Records every request and answers `answer`.
struct Recorder {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Recorder {
    fn new(answer: ApprovalAnswer) -> Arc<Self> {
        Arc::new(Self {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Approver for Recorder {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

fn asking_config() -> Config {
    let mut cfg = Config::default();
    cfg.approval.auto_approve.clear();
    cfg
}

async fn run(ex: &wield_core::Executor, call: Call) -> ToolResult {
    ex.run_one(call, &session(), &CancellationToken::new()).await
}

#[tokio::test]
async fn the_executor_hands_back_what_it_was_built_with() {
    let reg = registry(vec![Echo::new("echo", &[])]);
    let cfg = Arc::new(Config::default());
    let ex = ExecutorBuilder::new(reg.clone(), cfg.clone(), "/ws").build();
    assert!(Arc::ptr_eq(ex.registry(), &reg));
    assert!(Arc::ptr_eq(ex.config(), &cfg));
    assert_eq!(ex.workspace(), std::path::Path::new("/ws"));
    assert!(ex.audit().is_none());
    let mut services = wield_core::Services::new();
    services.insert(Arc::new(7_u32));
    let dir = tempfile::tempdir().unwrap();
    let audit = Arc::new(AuditLog::open(&dir.path().join("audit.jsonl")).unwrap());
    let ex = ExecutorBuilder::new(reg, cfg, "/ws")
        .services(services)
        .audit(audit.clone())
        .build();
    assert_eq!(ex.services().get::<u32>().as_deref(), Some(&7));
    assert!(Arc::ptr_eq(ex.audit().unwrap(), &audit));
}

#[tokio::test]
async fn a_confirm_rule_asks_every_time_and_is_never_remembered() {
    let reg = registry(vec![Echo::new("echo", &[])]);
    let mut cfg = asking_config();
    cfg.approval.confirm = vec!["echo".into()];
    let approver = Recorder::new(ApprovalAnswer::Allow(Scope::Session));
    let ex = ExecutorBuilder::new(reg, Arc::new(cfg), "/ws")
        .approver(approver.clone())
        .build();
    let s = session();
    let c = CancellationToken::new();
    assert!(ex.run_one(Call::new("1", "echo", json!({})), &s, &c).await.success);
    assert!(ex.run_one(Call::new("2", "echo", json!({})), &s, &c).await.success);
    let asked = approver.asked.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert!(asked.iter().all(|r| r.always_asks));
    assert!(s.rules().is_empty(), "{:?}", s.rules());
}

#[tokio::test]
async fn only_resolvers_above_the_remembered_rules_ask_every_time() {
    let reg = registry(vec![Echo::new("echo", &[])]);
    let cfg = asking_config();
    for (priority, always) in [(80, false), (81, true), (50, false)] {
        let mut chain = standard_chain(&cfg.approval, vec![]);
        chain.add(FnResolver::arc("asks", priority, |_| Ok(Decision::RequireApproval)));
        let approver = Recorder::new(ApprovalAnswer::Allow(Scope::Once));
        let ex = ExecutorBuilder::new(reg.clone(), Arc::new(cfg.clone()), "/ws")
            .chain(chain)
            .approver(approver.clone())
            .build();
        assert!(run(&ex, Call::new("1", "echo", json!({}))).await.success);
        let asked = approver.asked.lock().unwrap();
        assert_eq!(asked[0].always_asks, always, "priority {priority}");
        assert_eq!(asked[0].pattern, "echo");
    }
    // No resolver decided: a remembered pattern would do.
    let approver = Recorder::new(ApprovalAnswer::Allow(Scope::Session));
    let ex = ExecutorBuilder::new(reg, Arc::new(cfg), "/ws")
        .approver(approver.clone())
        .build();
    let s = session();
    ex.run_one(Call::new("1", "echo", json!({})), &s, &CancellationToken::new())
        .await;
    assert!(!approver.asked.lock().unwrap()[0].always_asks);
    assert_eq!(s.rules(), ["echo"]);
}

#[tokio::test]
async fn only_denied_calls_are_announced_as_denied() {
    let reg = registry(vec![Echo::new("echo", &[]), Echo::new("gone", &[])]);
    let mut cfg = Config::default();
    cfg.approval.deny = vec!["gone".into()];
    let ex = ExecutorBuilder::new(reg, Arc::new(cfg), "/ws").build();
    let denied = Arc::new(Mutex::new(Vec::new()));
    let seen = denied.clone();
    ex.events().subscribe(Arc::new(move |e: &Event| {
        if let Event::CallDenied { call_id, .. } = e {
            seen.lock().unwrap().push(call_id.clone());
        }
    }));
    let r = run(&ex, Call::new("unknown", "nope", json!({}))).await;
    assert_eq!(r.metadata["refused"], "unknown_tool");
    let r = run(&ex, Call::new("invalid", "echo", json!([]))).await;
    assert_eq!(r.metadata["refused"], "invalid");
    let r = run(&ex, Call::new("denied", "gone", json!({}))).await;
    assert_eq!(r.metadata["refused"], "denied");
    assert_eq!(denied.lock().unwrap().as_slice(), ["denied"]);
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_named_by_their_kind() {
    let reg = registry(vec![Echo::new("echo", &[])]);
    let ex = ExecutorBuilder::new(reg, Arc::new(Config::default()), "/ws").build();
    for (input, kind) in [
        (json!([]), "an array"),
        (json!(null), "null"),
        (json!(true), "a boolean"),
        (json!(1), "a number"),
        (json!("x"), "a string"),
    ] {
        let r = run(&ex, Call::new("1", "echo", input)).await;
        assert_eq!(
            r.error.as_deref(),
            Some(
                format!("Invalid arguments for tool `echo`: the arguments must be a JSON object, got {kind}").as_str()
            )
        );
    }
}

#[tokio::test]
async fn an_unknown_tool_is_answered_with_the_nearest_names_and_the_broken_sources() {
    let reg = registry(vec![Echo::new("echo", &[]), Echo::new("read", &[])]);
    let ex = ExecutorBuilder::new(reg, Arc::new(Config::default()), "/ws").build();
    let r = run(&ex, Call::new("1", "ecoh", json!({}))).await;
    assert_eq!(
        r.error.as_deref(),
        Some("unknown tool `ecoh`. Did you mean `echo`? Available tools: echo, read.")
    );
    let r = run(&ex, Call::new("1", "zzzzzzzzzzzz", json!({}))).await;
    assert_eq!(
        r.error.as_deref(),
        Some("unknown tool `zzzzzzzzzzzz`. Available tools: echo, read.")
    );
    let mut reg = Registry::new();
    reg.register(Arc::new(Echo::new("echo", &[]))).unwrap();
    reg.warn("mcp server files", "did not start");
    let ex = ExecutorBuilder::new(Arc::new(reg), Arc::new(Config::default()), "/ws").build();
    let r = run(&ex, Call::new("1", "files_read", json!({}))).await;
    let error = r.error.unwrap();
    assert!(
        error.ends_with(" Tool sources whose tools are missing: mcp server files: did not start."),
        "{error}"
    );
}

#[tokio::test]
async fn a_panic_is_reported_with_its_message() {
    let reg = registry(vec![Echo::new("echo", &[])]);
    let ex = ExecutorBuilder::new(reg, Arc::new(Config::default()), "/ws").build();
    for (kind, what) in [
        ("str", "a static message"),
        ("string", "a message for c7"),
        ("other", "unknown panic"),
    ] {
        let r = run(&ex, Call::new("c7", "echo", json!({"panic": kind}))).await;
        assert_eq!(
            r.error.as_deref(),
            Some(
                format!("tool `echo` failed internally (panic: {what}); this is a bug in the tool, not in your call")
                    .as_str()
            )
        );
        assert_eq!(r.metadata["panicked"], true);
    }
}

fn with_tool_config(name: &str, toml_text: &str) -> Config {
    let mut table = toml::Table::new();
    table.insert(name.into(), toml::Value::Table(toml::from_str(toml_text).unwrap()));
    Config::from_table(table).unwrap()
}

#[tokio::test]
async fn a_call_s_timeout_comes_from_its_argument_when_the_tool_takes_one() {
    let reg = registry(vec![
        Echo::new("timed", &[wield_core::TIMEOUT_ARGUMENT]),
        Echo::new("plain", &[]),
    ]);
    let ex = ExecutorBuilder::new(reg, Arc::new(Config::default()), "/ws").build();
    let timeout_ms = |r: ToolResult| r.metadata["timeout_ms"].as_u64().unwrap();
    let r = run(&ex, Call::new("1", "timed", json!({"timeout": 3}))).await;
    assert_eq!(timeout_ms(r), 3000);
    let r = run(&ex, Call::new("1", "timed", json!({"timeout": "250ms"}))).await;
    assert_eq!(timeout_ms(r), 250);
    // A tool that does not take one keeps the default.
    let default = u64::try_from(Config::default().executor.timeout.as_millis()).unwrap();
    let r = run(&ex, Call::new("1", "plain", json!({"timeout": 3}))).await;
    assert_eq!(timeout_ms(r), default);
}

#[tokio::test]
async fn a_tool_s_configured_timeout_may_be_whole_or_fractional_seconds() {
    for (text, ms) in [
        ("timeout = 4", 4000),
        ("timeout = 0.5", 500),
        ("timeout = \"2s\"", 2000),
    ] {
        let reg = registry(vec![Echo::new("echo", &[])]);
        let ex = ExecutorBuilder::new(reg, Arc::new(with_tool_config("echo", text)), "/ws").build();
        let r = run(&ex, Call::new("1", "echo", json!({}))).await;
        assert_eq!(r.metadata["timeout_ms"], ms, "{text}");
    }
}

#[tokio::test]
async fn a_tool_that_keeps_its_own_time_gets_a_margin_past_its_limit() {
    let reg = registry(vec![
        Echo::new("own", &[wield_core::HANDLES_TIMEOUT]),
        Echo::new("plain", &[]),
    ]);
    let mut table = toml::Table::new();
    for name in ["own", "plain"] {
        table.insert(
            name.into(),
            toml::Value::Table(toml::from_str("timeout = \"100ms\"").unwrap()),
        );
    }
    let ex = ExecutorBuilder::new(reg, Arc::new(Config::from_table(table).unwrap()), "/ws").build();
    let r = run(&ex, Call::new("1", "own", json!({"ms": 400}))).await;
    assert!(r.success, "{:?}", r.error);
    let r = run(&ex, Call::new("1", "plain", json!({"ms": 400}))).await;
    assert_eq!(r.error.as_deref(), Some("timed out after 100ms"));
}

struct Stamp;

#[async_trait]
impl Hook for Stamp {
    fn name(&self) -> &str {
        "stamp"
    }
    async fn post(&self, _call: &HookCall<'_>, result: &mut ToolResult) {
        result.output.push_str(" [stamped]");
    }
}

#[tokio::test]
async fn post_hooks_see_every_result() {
    let reg = registry(vec![Echo::new("echo", &[])]);
    let ex = ExecutorBuilder::new(reg, Arc::new(Config::default()), "/ws")
        .hook(Arc::new(Stamp))
        .build();
    let r = run(&ex, Call::new("1", "echo", json!({"out": "hi"}))).await;
    assert_eq!(r.output, "hi [stamped]");
}

#[tokio::test]
async fn output_is_cut_only_past_its_limits() {
    let mut cfg = Config::default();
    cfg.truncation.max_bytes = 100;
    cfg.truncation.max_lines = 10;
    let reg = registry(vec![Echo::new("echo", &[])]);
    let ex = ExecutorBuilder::new(reg, Arc::new(cfg), "/ws").build();
    let kept = |r: &ToolResult| !r.metadata.contains_key("truncated");
    // Exactly at either limit, or long lines under both: as it is.
    for out in ["x".repeat(100), "a\n".repeat(10), "y".repeat(99)] {
        let r = run(&ex, Call::new("1", "echo", json!({"out": out}))).await;
        assert!(kept(&r), "{out:?}: {:?}", r.metadata);
        assert_eq!(r.output, out);
    }
    for out in ["x".repeat(101), "a\n".repeat(11)] {
        let r = run(&ex, Call::new("1", "echo", json!({"out": out}))).await;
        assert_eq!(r.metadata["truncated"], true, "{out:?}");
    }
    // A tool that says whether it cut its output is believed.
    let r = run(
        &ex,
        Call::new("1", "echo", json!({"out": "x".repeat(300), "meta": true})),
    )
    .await;
    assert_eq!(r.output.len(), 300);
    assert_eq!(r.metadata["truncated"], false);
}
