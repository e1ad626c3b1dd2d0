//! The three-phase pipeline: ordering, parallelism, approval, hooks,
//! timeouts, cancellation, panics and the size guard.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_core::approval::{ApprovalStore, ResolverChain, standard_chain};
use wield_core::hooks::{Hook, HookCall, PreHookOutcome};
use wield_core::{
    ApprovalAnswer, ApprovalRequest, Approver, Call, Config, Context, Event, ExecutorBuilder, Refusal, Registry, Scope,
    Session, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits,
};

/// Sleeps `ms`, records the peak number of concurrent executions.
struct Probe {
    base: ToolBase,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl Probe {
    fn new(name: &str, parallel: bool, running: Arc<AtomicUsize>, peak: Arc<AtomicUsize>) -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    name,
                    "probe",
                    json!({"type":"object","properties":{"ms":{"type":"integer"},"out":{"type":"string"},"panic":{"type":"boolean"}}}),
                ),
                ToolTraits {
                    parallel,
                    read_only: true,
                    ..ToolTraits::default()
                },
            ),
            running,
            peak,
        }
    }
}

#[async_trait]
impl Tool for Probe {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    async fn pre(&self, input: &Value, _ctx: &Context) -> Result<(), Refusal> {
        match input["refuse"].as_str() {
            Some("model") => Err(Refusal::to_model("read it first, then call again")),
            Some("broken") => Err(Refusal::failed(
                "could not look at the file",
                std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied"),
            )),
            _ => Ok(()),
        }
    }
    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        if input["panic"] == true {
            panic!("probe asked to panic");
        }
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let ms = input["ms"].as_u64().unwrap_or(0);
        let cancelled = tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => false,
            () = ctx.cancel.cancelled() => true,
        };
        self.running.fetch_sub(1, Ordering::SeqCst);
        if cancelled {
            return ToolResult::error("cancelled inside");
        }
        ToolResult::ok(input["out"].as_str().unwrap_or("done").to_owned())
    }
}

struct Fixture {
    registry: Arc<Registry>,
    peak: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut r = Registry::new();
    r.register(Arc::new(Probe::new("par", true, running.clone(), peak.clone())))
        .unwrap();
    r.register(Arc::new(Probe::new("seq", false, running.clone(), peak.clone())))
        .unwrap();
    Fixture {
        registry: Arc::new(r),
        peak,
    }
}

fn session() -> Arc<Session> {
    Arc::new(Session::new("t", true))
}

#[tokio::test]
async fn results_come_back_in_call_order_and_parallel_calls_overlap() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/").build();
    let calls = vec![
        Call::new("1", "par", json!({"ms": 400, "out": "a"})),
        Call::new("2", "nope", json!({})),
        Call::new("3", "par", json!({"ms": 10, "out": "c"})),
        Call::new("4", "seq", json!({"ms": 10, "out": "d"})),
        Call::new("5", "par", json!({"ms": 300, "out": "e"})),
    ];
    let start = Instant::now();
    let res = ex.run_batch(calls, &session(), &CancellationToken::new()).await;
    let outs: Vec<&str> = res.iter().map(|r| r.output.as_str()).collect();
    assert_eq!(outs, ["a", "", "c", "d", "e"]);
    assert!(!res[1].success);
    // One after the other they would take 720 ms.
    assert!(start.elapsed() < Duration::from_millis(650), "{:?}", start.elapsed());
    assert_eq!(f.peak.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_refusal_for_the_model_is_its_result_and_a_broken_check_says_so() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/").build();
    let calls = vec![
        Call::new("1", "par", json!({"refuse": "model"})),
        Call::new("2", "par", json!({"refuse": "broken"})),
    ];
    let res = ex.run_batch(calls, &session(), &CancellationToken::new()).await;
    assert!(!res[0].success && !res[1].success);
    assert_eq!(res[0].error.as_deref(), Some("read it first, then call again"));
    let broken = res[1].error.as_deref().unwrap_or_default();
    assert!(broken.contains("wield could not check it"), "{broken}");
    assert!(
        broken.contains("could not look at the file: permission denied"),
        "{broken}"
    );
    assert!(broken.contains("not in the call"), "{broken}");
}

#[tokio::test]
async fn the_parallel_bound_is_respected() {
    let f = fixture();
    let mut cfg = Config::default();
    cfg.executor.max_parallel = 2;
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg), "/").build();
    let calls = (0..6)
        .map(|i| Call::new(i.to_string(), "par", json!({"ms": 30})))
        .collect();
    let res = ex.run_batch(calls, &session(), &CancellationToken::new()).await;
    assert!(res.iter().all(|r| r.success));
    assert_eq!(f.peak.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn non_parallel_calls_run_one_at_a_time() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/").build();
    let calls = (0..4)
        .map(|i| Call::new(i.to_string(), "seq", json!({"ms": 20})))
        .collect();
    ex.run_batch(calls, &session(), &CancellationToken::new()).await;
    assert_eq!(f.peak.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_panic_is_an_error_result_and_the_batch_goes_on() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/").build();
    let res = ex
        .run_batch(
            vec![
                Call::new("1", "seq", json!({"panic": true})),
                Call::new("2", "seq", json!({"out": "ok"})),
            ],
            &session(),
            &CancellationToken::new(),
        )
        .await;
    assert!(!res[0].success && res[0].error.as_deref().unwrap().contains("panic"));
    assert_eq!(res[1].output, "ok");
}

#[tokio::test]
async fn cancelling_the_batch_cancels_running_calls() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/").build();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        c2.cancel();
    });
    let start = Instant::now();
    let res = ex
        .run_batch(
            vec![
                Call::new("1", "par", json!({"ms": 5000})),
                Call::new("2", "par", json!({"ms": 5000})),
            ],
            &session(),
            &cancel,
        )
        .await;
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(res.iter().all(|r| !r.success));
}

#[tokio::test]
async fn timeouts_come_from_the_call_then_config_then_default() {
    let f = fixture();
    let mut table = toml::Table::new();
    table.insert(
        "par".into(),
        toml::Value::Table(toml::from_str("timeout = \"50ms\"").unwrap()),
    );
    let cfg = Config::from_table(table).unwrap();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg), "/").build();
    let r = ex
        .run_one(
            Call::new("1", "par", json!({"ms": 2000})),
            &session(),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(r.error.as_deref(), Some("timed out after 50ms"));
    assert_eq!(r.metadata["timed_out"], true);
}

struct Scripted {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Approver for Scripted {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.pattern.clone());
        self.answer.clone()
    }
}

#[derive(Default)]
struct MemStore(Mutex<Vec<(Scope, String)>>);

impl ApprovalStore for MemStore {
    fn remember(&self, scope: Scope, pattern: &str) -> Result<(), wield_core::StoreError> {
        self.0.lock().unwrap().push((scope, pattern.to_owned()));
        Ok(())
    }
    fn patterns(&self) -> Vec<String> {
        Vec::new()
    }
}

#[tokio::test]
async fn session_approval_is_remembered_for_the_session() {
    let f = fixture();
    let mut cfg = Config::default();
    cfg.approval.auto_approve.clear();
    let approver = Arc::new(Scripted {
        answer: ApprovalAnswer::Allow(Scope::Session),
        asked: Mutex::new(Vec::new()),
    });
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg), "/")
        .approver(approver.clone())
        .build();
    let s = session();
    let c = CancellationToken::new();
    assert!(ex.run_one(Call::new("1", "par", json!({})), &s, &c).await.success);
    assert!(ex.run_one(Call::new("2", "par", json!({})), &s, &c).await.success);
    assert_eq!(approver.asked.lock().unwrap().len(), 1, "asked only once");
    assert_eq!(s.rules(), ["par"]);
}

#[tokio::test]
async fn project_approval_goes_to_the_store_and_cancel_batch_refuses_the_rest() {
    let f = fixture();
    let mut cfg = Config::default();
    cfg.approval.auto_approve.clear();
    let store = Arc::new(MemStore::default());
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg.clone()), "/")
        .approver(Arc::new(Scripted {
            answer: ApprovalAnswer::Allow(Scope::Project),
            asked: Mutex::new(Vec::new()),
        }))
        .store(store.clone())
        .build();
    ex.run_one(Call::new("1", "par", json!({})), &session(), &CancellationToken::new())
        .await;
    assert_eq!(store.0.lock().unwrap().as_slice(), [(Scope::Project, "par".to_owned())]);

    let approver = Arc::new(Scripted {
        answer: ApprovalAnswer::CancelBatch,
        asked: Mutex::new(Vec::new()),
    });
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg), "/")
        .approver(approver.clone())
        .build();
    let res = ex
        .run_batch(
            vec![Call::new("1", "par", json!({})), Call::new("2", "seq", json!({}))],
            &session(),
            &CancellationToken::new(),
        )
        .await;
    assert!(
        res.iter()
            .all(|r| r.error.as_deref().unwrap_or("").contains("cancelled"))
    );
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn deny_message_from_the_person_reaches_the_model() {
    let f = fixture();
    let mut cfg = Config::default();
    cfg.approval.auto_approve.clear();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg), "/")
        .approver(Arc::new(Scripted {
            answer: ApprovalAnswer::Deny(Some("use the other tool".into())),
            asked: Mutex::new(Vec::new()),
        }))
        .build();
    let r = ex
        .run_one(Call::new("1", "par", json!({})), &session(), &CancellationToken::new())
        .await;
    assert_eq!(r.error.as_deref(), Some("use the other tool"));
}

struct Rewriter;

#[async_trait]
impl Hook for Rewriter {
    fn name(&self) -> &str {
        "rewriter"
    }
    async fn pre(&self, call: &HookCall<'_>) -> PreHookOutcome {
        match call.input["out"].as_str() {
            Some("block") => PreHookOutcome {
                block: Some("not today".into()),
                ..PreHookOutcome::default()
            },
            Some("bad") => PreHookOutcome {
                input: Some(json!({"ms": "not a number"})),
                ..PreHookOutcome::default()
            },
            _ => PreHookOutcome {
                input: Some(json!({"out": "rewritten"})),
                feedback: vec!["hook says hi".into()],
                ..PreHookOutcome::default()
            },
        }
    }
}

#[tokio::test]
async fn pre_hooks_block_rewrite_and_are_revalidated() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/")
        .hook(Arc::new(Rewriter))
        .build();
    let c = CancellationToken::new();
    let s = session();
    let r = ex.run_one(Call::new("1", "par", json!({"out": "x"})), &s, &c).await;
    assert!(
        r.output.starts_with("rewritten") && r.output.contains("hook says hi"),
        "{}",
        r.output
    );
    let r = ex.run_one(Call::new("2", "par", json!({"out": "block"})), &s, &c).await;
    assert_eq!(r.error.as_deref(), Some("blocked by hook `rewriter`: not today"));
    let r = ex.run_one(Call::new("3", "par", json!({"out": "bad"})), &s, &c).await;
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("rewrote the input into an invalid one")
    );
}

#[tokio::test]
async fn events_follow_the_call() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/").build();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    ex.events().subscribe(Arc::new(move |e: &Event| {
        let name = match e {
            Event::CallPending { .. } => "pending",
            Event::CallApproved { .. } => "approved",
            Event::CallDenied { .. } => "denied",
            Event::CallStarted { .. } => "started",
            Event::OutputDelta { .. } => "delta",
            Event::Progress { .. } => "progress",
            Event::Notice { .. } => "notice",
            Event::CallFinished { .. } => "finished",
        };
        s2.lock().unwrap().push(name);
    }));
    ex.run_one(Call::new("1", "par", json!({})), &session(), &CancellationToken::new())
        .await;
    assert_eq!(seen.lock().unwrap().as_slice(), ["approved", "started", "finished"]);
}

#[tokio::test]
async fn oversized_output_is_cut_and_saved() {
    let f = fixture();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(Config::default()), "/").build();
    let big = "x\n".repeat(5000);
    let r = ex
        .run_one(
            Call::new("1", "par", json!({"out": big})),
            &session(),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(r.metadata["truncated"], true);
    assert!(r.output.contains("[Showing lines 1-2000 of 5000"));
    let saved = r.metadata["full_output"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(saved).unwrap(), big);
}

#[tokio::test]
async fn custom_resolvers_slot_into_the_chain() {
    use wield_core::approval::{ApprovalCall, PRIORITY_FRONTMATTER, ResolveError};
    use wield_core::{Decision, Resolver};
    struct DenyAll;
    impl Resolver for DenyAll {
        fn name(&self) -> &str {
            "frontmatter"
        }
        fn priority(&self) -> i32 {
            PRIORITY_FRONTMATTER
        }
        fn resolve(&self, _c: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
            Ok(Decision::Deny("frontmatter says no".into()))
        }
    }
    let f = fixture();
    let cfg = Config::default();
    // Config (100) approves `par` ($readonly) before the frontmatter resolver (90) is asked.
    let mut chain: ResolverChain = standard_chain(&cfg.approval, vec![]);
    chain.add(Arc::new(DenyAll));
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg.clone()), "/")
        .chain(chain.clone())
        .build();
    let r = ex
        .run_one(Call::new("1", "par", json!({})), &session(), &CancellationToken::new())
        .await;
    assert!(r.success);
    let mut cfg2 = cfg;
    cfg2.approval.auto_approve.clear();
    let mut chain2 = standard_chain(&cfg2.approval, vec![]);
    chain2.add(Arc::new(DenyAll));
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg2), "/")
        .chain(chain2)
        .build();
    let r = ex
        .run_one(Call::new("1", "par", json!({})), &session(), &CancellationToken::new())
        .await;
    assert_eq!(r.error.as_deref(), Some("denied by policy: frontmatter says no"));
}

#[test]
fn durations_read_as_a_person_would_never_as_zero_milliseconds() {
    use wield_core::human_duration;
    assert_eq!(human_duration(Duration::from_secs(2)), "2s");
    assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
    assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
    assert_eq!(human_duration(Duration::from_micros(300)), "300µs");
    assert_eq!(human_duration(Duration::from_nanos(40)), "40ns");
    assert_eq!(human_duration(Duration::ZERO), "0µs");
}

/// A person who takes their time to decide.
struct Slow(Duration);

#[async_trait]
impl Approver for Slow {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        tokio::time::sleep(self.0).await;
        ApprovalAnswer::Allow(Scope::Once)
    }
}

/// A call's duration is its own: not the time the person took to decide,
/// nor the time the calls before it in the batch ran.
#[tokio::test]
async fn a_call_s_duration_leaves_out_the_decision_and_the_other_calls() {
    let f = fixture();
    let mut cfg = Config::default();
    cfg.approval.auto_approve.clear();
    let ex = ExecutorBuilder::new(f.registry.clone(), Arc::new(cfg), "/")
        .approver(Arc::new(Slow(Duration::from_millis(400))))
        .build();
    let started = Instant::now();
    let timed = ex
        .run_batch_timed(
            vec![
                Call::new("1", "seq", json!({ "ms": 200 })),
                Call::new("2", "seq", json!({ "ms": 10 })),
            ],
            &session(),
            &CancellationToken::new(),
        )
        .await;
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "both were asked and ran"
    );
    let [(first, d1), (second, d2)] = timed.as_slice() else {
        panic!("{timed:?}")
    };
    assert!(first.success && second.success, "{timed:?}");
    assert!(
        *d1 >= Duration::from_millis(200) && *d1 < Duration::from_millis(390),
        "{d1:?}"
    );
    assert!(
        *d2 >= Duration::from_millis(10) && *d2 < Duration::from_millis(190),
        "{d2:?}"
    );
}
