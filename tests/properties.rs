//! Property tests (proptest): generated assistant messages through generated policies, checked
//! against an independent model of the pipeline (ARCHITECTURE.md, "The life of one call").
//!
//! Generated: `tool_use` blocks with known and unknown names (empty, differently cased, 80
//! characters, non-ASCII), inputs of every JSON shape (objects valid or not, arrays, scalars,
//! `null`, `""`, strings holding JSON or not, deep nesting, strings over the byte limit), duplicate
//! and odd ids, text and thinking blocks between them, `max_tokens` and user-role messages;
//! PreToolUse hooks (sync or async, any order, any matcher) that allow, deny, rewrite (validly,
//! with an unknown field, a wrong type, a non-object or a too-deep input), error, panic, yield
//! or hang past a deadline; a sync tool and an async tool that succeed, return over-long text,
//! fail, fail internally, panic, yield or hang; observers and a Stop hook that fail or panic.
//!
//! Checked for every case: no panic escapes; a message with an id the Messages API refuses
//! (empty, off its pattern, repeated) runs nothing and names the first such block; a message
//! without `tool_use` gets `Reply::NothingToRun`; otherwise every `tool_use` gets exactly one
//! `tool_result` with its id, in order, `tool_result` blocks only (in the `Halt`'s answer when
//! the agent halts);
//! each result is the model's (outcome, `is_error`, content); a call whose PreToolUse chain
//! denied, errored, panicked or timed out had no side effect (the tools' journal holds exactly
//! the calls that reached them, with their effective input); hooks saw the inputs the chain
//! semantics say; observers never change a result (what they saw is what the host got, even
//! when an earlier observer failed); the audit log has exactly one line per block with the right
//! outcome and content; Stop ran exactly once per session; the summary's counts are right.
//!
//! Case counts: `PROPTEST_CASES` overrides every block here (the long run); otherwise the CI
//! run makes 4 000 + 1 500 cases, 2 000 of the rewrite-chain property (`rewrite_chain.rs`),
//! 3 000 + 3 000 of the message reader's (`message_wire.rs`) and 3 000 of the audit line's
//! (`audit_line.rs`). Long run (release build, 1 million cases per property; the one recorded
//! below predates `message_wire.rs` and `audit_line.rs`):
//! `PROPTEST_CASES=1000000 cargo test --release --test properties -- --test-threads 2 --nocapture`
//! (recorded on 2026-11-30, 2 shared cores: 1 000 001 + 1 000 000 cases, all passed, 832 s; the
//! fault classes it generated are printed with `--nocapture`).

// proptest's `TestCaseError` and the model's halting `Expected` are large; this is test code.
#![allow(clippy::result_large_err)]

mod support;

// The rewrite rule of the PreToolUse chain on random chains: rewrites are re-authorized.
#[path = "properties/rewrite_chain.rs"]
mod rewrite_chain;

// Reading and writing `Message` in one pass, against the earlier `Map` reader.
#[path = "properties/message_wire.rs"]
mod message_wire;

// The audit line written by hand is serde_json's, byte for byte.
#[path = "properties/audit_line.rs"]
mod audit_line;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use support::{
    ExpiredTimer, HALT_TEXT, INJECTED, NOT_RUN_HALT, NOT_RUN_MAX_TOKENS, NeverTimer, PANIC_TEXT,
    TempDir, any_json, assistant, quiet_injected_panics, short_text, tool_timeout_text,
};
use toolgate::{
    CallError, Decision, Dispatcher, HookContext, Message, Reply, RespondError, ToolError,
    ToolResult, ToolUse,
    audit::{AuditLog, CallRecord, Outcome},
    content::{ContentBlock, INTERNAL_ERROR_MESSAGE, Role, TextBlock},
    dispatch::{BoxFuture, Env, HookError, Limits, PostHookDef, PreHookDef, StopHookDef, ToolDef},
};

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A runner's settings for this file's properties: `cases(default)` cases, XorShift (several
/// times cheaper than the default ChaCha in a debug build), failures kept in
/// `tests/properties.proptest-regressions` and replayed first.
fn runner_config(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(default),
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/properties.proptest-regressions",
            ),
        )),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The generated case
// ---------------------------------------------------------------------------------------------

/// What one hook invocation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HookAct {
    Allow,
    Deny,
    DenyInstead,
    RewriteValid,
    RewriteUnknownField,
    RewriteWrongType,
    RewriteNonObject,
    RewriteTooDeep,
    Error,
    Panic,
    /// Async hooks only: never finishes (with no deadline it is an `Allow` after a yield).
    Hang,
}

#[derive(Debug, Clone, Copy)]
struct HookStep {
    act: HookAct,
    /// Async hooks only: `.await` a yield before acting.
    yields: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Matches {
    All,
    Alpha,
    Beta,
}

#[derive(Debug, Clone)]
struct HookSpec {
    order: i64,
    matches: Matches,
    is_async: bool,
    /// A deadline of its own (5 ms) instead of the dispatcher's (50 ms); only with deadlines.
    own_timeout: bool,
    steps: Vec<HookStep>,
}

/// What one tool invocation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolAct {
    Ok,
    Big,
    Fail,
    Internal,
    Panic,
    /// `beta` only: never finishes (with no deadline it is an `Ok` after a yield).
    Hang,
}

#[derive(Debug, Clone, Copy)]
struct ToolStep {
    act: ToolAct,
    /// `beta` only: `.await` a yield before acting.
    yields: bool,
}

/// What one observer (or the flaky Stop hook) invocation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ObsAct {
    Ok,
    Fail,
    Panic,
}

#[derive(Debug, Clone)]
enum IdKind {
    Unique,
    Duplicate,
    Empty,
    Odd,
}

#[derive(Debug, Clone)]
enum NameKind {
    Alpha,
    Beta,
    Unknown,
    Empty,
    Upper,
    Long,
    NonAscii,
}

/// A recipe for an input; made concrete with the case's limits.
#[derive(Debug, Clone)]
enum InputKind {
    Alpha(i64, Option<String>),
    Beta(Option<String>, Option<Vec<String>>),
    Any(Value),
    Null,
    EmptyString,
    Whitespace,
    JsonString(Box<InputKind>),
    NotJson(String),
    ExtraField,
    WrongType(u8),
    /// Nested objects, this many levels.
    Deep(usize),
    /// `s` is a string 16 bytes over the input limit.
    Huge,
    /// `s` is a string of a quarter of the input limit: large but accepted.
    Large,
}

#[derive(Debug, Clone)]
enum BlockSpec {
    Text(String),
    Thinking,
    Use(IdKind, NameKind, InputKind),
}

#[derive(Debug, Clone)]
struct Case {
    hooks: Vec<HookSpec>,
    alpha: Vec<ToolStep>,
    beta: Vec<ToolStep>,
    observer_sync: Vec<ObsAct>,
    observer_async: Vec<(ObsAct, bool)>,
    stop_flaky: ObsAct,
    blocks: Vec<BlockSpec>,
    /// `tool_use` (or none), `max_tokens`, or a user-role message.
    stop: u8,
    small_limits: bool,
    deadlines: bool,
    via_json: bool,
    end_explicitly: bool,
}

fn hook_act() -> impl Strategy<Value = HookAct> {
    prop_oneof![
        6 => Just(HookAct::Allow),
        2 => Just(HookAct::Deny),
        1 => Just(HookAct::DenyInstead),
        2 => Just(HookAct::RewriteValid),
        1 => Just(HookAct::RewriteUnknownField),
        1 => Just(HookAct::RewriteWrongType),
        1 => Just(HookAct::RewriteNonObject),
        1 => Just(HookAct::RewriteTooDeep),
        1 => Just(HookAct::Error),
        1 => Just(HookAct::Panic),
        1 => Just(HookAct::Hang),
    ]
}

fn hook_spec() -> impl Strategy<Value = HookSpec> {
    (
        0i64..3,
        prop_oneof![
            3 => Just(Matches::All),
            1 => Just(Matches::Alpha),
            1 => Just(Matches::Beta)
        ],
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec((hook_act(), any::<bool>()), 1..4),
    )
        .prop_map(|(order, matches, is_async, own_timeout, steps)| HookSpec {
            order,
            matches,
            is_async,
            own_timeout,
            steps: steps
                .into_iter()
                .map(|(act, yields)| HookStep {
                    act: if is_async || act != HookAct::Hang {
                        act
                    } else {
                        HookAct::Allow
                    },
                    yields: is_async && yields,
                })
                .collect(),
        })
}

fn tool_steps(is_async: bool) -> impl Strategy<Value = Vec<ToolStep>> {
    prop::collection::vec(
        (
            prop_oneof![
                5 => Just(ToolAct::Ok),
                1 => Just(ToolAct::Big),
                2 => Just(ToolAct::Fail),
                1 => Just(ToolAct::Internal),
                2 => Just(ToolAct::Panic),
                1 => Just(ToolAct::Hang),
            ],
            any::<bool>(),
        ),
        1..4,
    )
    .prop_map(move |steps| {
        steps
            .into_iter()
            .map(|(act, yields)| ToolStep {
                act: if is_async || act != ToolAct::Hang {
                    act
                } else {
                    ToolAct::Ok
                },
                yields: is_async && yields,
            })
            .collect()
    })
}

fn obs_act() -> impl Strategy<Value = ObsAct> {
    prop_oneof![6 => Just(ObsAct::Ok), 1 => Just(ObsAct::Fail), 1 => Just(ObsAct::Panic)]
}

/// Short strings with the characters that need escaping in JSON.
fn input_kind() -> impl Strategy<Value = InputKind> {
    let base = prop_oneof![
        6 => (any::<i64>(), prop::option::of(short_text())).prop_map(|(n, s)| InputKind::Alpha(n, s)),
        4 => (prop::option::of(short_text()), prop::option::of(prop::collection::vec(short_text(), 0..3)))
            .prop_map(|(s, t)| InputKind::Beta(s, t)),
        4 => any_json(&["n", "s", "tags"]).prop_map(InputKind::Any),
        1 => Just(InputKind::Null),
        1 => Just(InputKind::EmptyString),
        1 => Just(InputKind::Whitespace),
        1 => short_text().prop_map(InputKind::NotJson),
        1 => Just(InputKind::ExtraField),
        2 => (0u8..4).prop_map(InputKind::WrongType),
        2 => (1usize..=60).prop_map(InputKind::Deep),
        1 => Just(InputKind::Huge),
        1 => Just(InputKind::Large),
    ];
    base.prop_flat_map(|k| {
        prop_oneof![
            8 => Just(k.clone()),
            1 => Just(InputKind::JsonString(Box::new(k))),
        ]
    })
}

fn block_spec() -> impl Strategy<Value = BlockSpec> {
    prop_oneof![
        1 => short_text().prop_map(BlockSpec::Text),
        1 => Just(BlockSpec::Thinking),
        5 => (
            prop_oneof![
                // Most messages keep valid ids, so most cases reach the pipeline; one bad id
                // refuses the whole message.
                18 => Just(IdKind::Unique),
                2 => Just(IdKind::Duplicate),
                1 => Just(IdKind::Empty),
                1 => Just(IdKind::Odd)
            ],
            prop_oneof![
                8 => Just(NameKind::Alpha),
                8 => Just(NameKind::Beta),
                1 => Just(NameKind::Unknown),
                1 => Just(NameKind::Empty),
                1 => Just(NameKind::Upper),
                1 => Just(NameKind::Long),
                1 => Just(NameKind::NonAscii)
            ],
            input_kind(),
        )
            .prop_map(|(i, n, k)| BlockSpec::Use(i, n, k)),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            prop::collection::vec(hook_spec(), 0..4),
            tool_steps(false),
            tool_steps(true),
            prop::collection::vec(obs_act(), 1..4),
            prop::collection::vec((obs_act(), any::<bool>()), 1..4),
            obs_act(),
        ),
        (
            prop::collection::vec(block_spec(), 0..7),
            prop_oneof![17 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
            prop::bool::weighted(0.9),
            any::<bool>(),
            prop::bool::weighted(0.2),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (hooks, alpha, beta, observer_sync, observer_async, stop_flaky),
                (blocks, stop, small_limits, deadlines, via_json, end_explicitly),
            )| Case {
                hooks,
                alpha,
                beta,
                observer_sync,
                observer_async,
                stop_flaky,
                blocks,
                stop,
                small_limits,
                deadlines,
                via_json,
                end_explicitly,
            },
        )
}

// ---------------------------------------------------------------------------------------------
// The system under test: two tools, up to four hooks, three observers, two Stop hooks
// ---------------------------------------------------------------------------------------------

/// Arguments of `alpha` (sync).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
struct AlphaArgs {
    /// A number.
    n: i64,
    /// A text.
    s: Option<String>,
}

/// Arguments of `beta` (async).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
struct BetaArgs {
    /// A text.
    s: Option<String>,
    /// Tags.
    tags: Option<Vec<String>>,
}

const HOOK_DEADLINE_MS: u64 = 50;
const OWN_HOOK_DEADLINE_MS: u64 = 5;
const TOOL_DEADLINE_MS: u64 = 70;

fn limits(small: bool) -> Limits {
    if small {
        Limits::default()
            .max_input_bytes(4096)
            .max_input_depth(8)
            .max_result_bytes(1024)
    } else {
        Limits::default()
    }
}

/// Something a tool or hook did, in order.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Hook {
        hook: usize,
        id: String,
        input: Value,
    },
    Tool {
        tool: &'static str,
        args: Value,
    },
}

/// What an observer saw.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    id: String,
    outcome: Outcome,
    result: Option<ToolResult>,
    blocked_by: Option<String>,
    rewritten_by: Vec<String>,
    detail: Option<String>,
    content_bytes: Option<usize>,
}

/// The case and everything the items did, shared through `State<World>`.
struct World {
    case: Case,
    hook_calls: [AtomicUsize; 4],
    tool_calls: [AtomicUsize; 2],
    obs_calls: [AtomicUsize; 2],
    stops: AtomicUsize,
    events: Mutex<Vec<Event>>,
    seen: Mutex<Vec<Seen>>,
}

fn world<'a>(env: &Env<'a>) -> Arc<World> {
    env.state::<World>().expect("World is given").into_arc()
}

fn nested_object(levels: usize) -> Value {
    let mut v = json!({});
    for _ in 1..levels {
        v = json!({ "s": v });
    }
    v
}

impl World {
    /// A fresh world for one case: every counter at zero, no events.
    fn new(case: &Case) -> Arc<World> {
        Arc::new(World {
            case: case.clone(),
            hook_calls: Default::default(),
            tool_calls: Default::default(),
            obs_calls: Default::default(),
            stops: AtomicUsize::new(0),
            events: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn hook_step(&self, k: usize) -> HookStep {
        let spec = &self.case.hooks[k];
        let i = self.hook_calls[k].fetch_add(1, Ordering::SeqCst);
        spec.steps[i % spec.steps.len()]
    }

    fn decide(&self, k: usize, act: HookAct, call: &ToolUse) -> Result<Decision, HookError> {
        let alpha = call.name == "alpha";
        Ok(match act {
            HookAct::Allow | HookAct::Hang => Decision::Allow,
            HookAct::Deny => Decision::deny(format!("hook {k} says no.")),
            HookAct::DenyInstead => {
                Decision::deny_instead(format!("hook {k} says no."), "Ask a human.")
            }
            HookAct::RewriteValid if alpha => {
                Decision::Rewrite(json!({"n": 7, "s": format!("rewritten by {k}")}))
            }
            HookAct::RewriteValid => {
                Decision::Rewrite(json!({"s": format!("rewritten by {k}"), "tags": ["r"]}))
            }
            HookAct::RewriteUnknownField => {
                Decision::Rewrite(json!({"n": 1, "s": null, "zzz": true}))
            }
            HookAct::RewriteWrongType if alpha => Decision::Rewrite(json!({"n": "seven"})),
            HookAct::RewriteWrongType => Decision::Rewrite(json!({"tags": "not a list"})),
            HookAct::RewriteNonObject => Decision::Rewrite(json!([1, 2, 3])),
            HookAct::RewriteTooDeep => Decision::Rewrite(nested_object(40)),
            HookAct::Error => {
                return Err(HookError::new(format!(
                    "hook {k} could not reach its backend"
                )));
            }
            HookAct::Panic => panic!("{INJECTED}: hook {k}"),
        })
    }

    fn log(&self, e: Event) {
        self.events.lock().unwrap().push(e);
    }

    fn tool_step(&self, t: usize) -> ToolStep {
        let steps = if t == 0 {
            &self.case.alpha
        } else {
            &self.case.beta
        };
        let i = self.tool_calls[t].fetch_add(1, Ordering::SeqCst);
        steps[i % steps.len()]
    }

    fn tool_result(
        &self,
        tool: &'static str,
        act: ToolAct,
        text: String,
    ) -> Result<String, ToolError> {
        match act {
            ToolAct::Ok | ToolAct::Hang => Ok(text),
            ToolAct::Big => Ok("x".repeat(limits(self.case.small_limits).max_result_bytes + 100)),
            ToolAct::Fail => Err(ToolError::new(format!("{tool} failed on purpose."))),
            ToolAct::Internal => Err(ToolError::internal(std::io::Error::other("db down"))),
            ToolAct::Panic => panic!("{INJECTED}: {tool}"),
        }
    }

    fn observe(&self, o: usize, act: ObsAct) -> Result<(), HookError> {
        let _ = o;
        match act {
            ObsAct::Ok => Ok(()),
            ObsAct::Fail => Err(HookError::new("observer failed on purpose")),
            ObsAct::Panic => panic!("{INJECTED}: observer"),
        }
    }
}

fn hook_sync<const K: usize>(env: Env<'_>, call: &ToolUse) -> Result<Decision, HookError> {
    let w = world(&env);
    let step = w.hook_step(K);
    w.log(Event::Hook {
        hook: K,
        id: call.id.clone(),
        input: call.input.clone(),
    });
    w.decide(K, step.act, call)
}

fn hook_async<'a, const K: usize>(
    env: Env<'a>,
    call: &'a ToolUse,
) -> BoxFuture<'a, Result<Decision, HookError>> {
    Box::pin(async move {
        let w = world(&env);
        let step = w.hook_step(K);
        w.log(Event::Hook {
            hook: K,
            id: call.id.clone(),
            input: call.input.clone(),
        });
        if step.yields {
            support::yield_once().await;
        }
        if step.act == HookAct::Hang && w.case.deadlines {
            support::hang::<()>().await;
        } else if step.act == HookAct::Hang {
            support::yield_once().await;
        }
        w.decide(K, step.act, call)
    })
}

fn alpha(env: Env<'_>, args: AlphaArgs) -> Result<String, ToolError> {
    let w = world(&env);
    let step = w.tool_step(0);
    let text = serde_json::to_string(&args).unwrap();
    w.log(Event::Tool {
        tool: "alpha",
        args: serde_json::to_value(&args).unwrap(),
    });
    w.tool_result("alpha", step.act, text)
}

fn beta(env: Env<'_>, args: BetaArgs) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move {
        let w = world(&env);
        let step = w.tool_step(1);
        w.log(Event::Tool {
            tool: "beta",
            args: serde_json::to_value(&args).unwrap(),
        });
        if step.yields {
            support::yield_once().await;
        }
        if step.act == ToolAct::Hang && w.case.deadlines {
            support::hang::<()>().await;
        } else if step.act == ToolAct::Hang {
            support::yield_once().await;
        }
        w.tool_result("beta", step.act, serde_json::to_string(&args).unwrap())
    })
}

fn obs_record(env: Env<'_>, r: &CallRecord<'_>) -> Result<(), HookError> {
    world(&env).seen.lock().unwrap().push(Seen {
        id: r.call.id.clone(),
        outcome: r.outcome,
        result: r.result.cloned(),
        blocked_by: r.blocked_by.map(str::to_owned),
        rewritten_by: r.rewritten_by.iter().map(|s| (*s).to_owned()).collect(),
        detail: r.detail.map(str::to_owned),
        content_bytes: r.content_bytes,
    });
    Ok(())
}

fn obs_flaky(env: Env<'_>, _r: &CallRecord<'_>) -> Result<(), HookError> {
    let w = world(&env);
    let i = w.obs_calls[0].fetch_add(1, Ordering::SeqCst);
    w.observe(0, w.case.observer_sync[i % w.case.observer_sync.len()])
}

fn obs_async<'a>(env: Env<'a>, _r: &'a CallRecord<'a>) -> BoxFuture<'a, Result<(), HookError>> {
    Box::pin(async move {
        let w = world(&env);
        let i = w.obs_calls[1].fetch_add(1, Ordering::SeqCst);
        let (act, yields) = w.case.observer_async[i % w.case.observer_async.len()];
        if yields {
            support::yield_once().await;
        }
        w.observe(1, act)
    })
}

fn hook_path(k: usize) -> String {
    format!("props::hook_{k}")
}

fn build(case: &Case, w: &Arc<World>, log: AuditLog) -> Dispatcher {
    // Built once: their schemas are generated at construction.
    static TOOLS: std::sync::LazyLock<[ToolDef; 2]> = std::sync::LazyLock::new(|| {
        [
            ToolDef::sync("alpha", "A sync tool.", alpha),
            ToolDef::new_async("beta", "An async tool.", beta),
        ]
    });
    let mut b = Dispatcher::builder()
        .tool(TOOLS[0].clone())
        .tool(TOOLS[1].clone())
        .state_arc(Arc::clone(w))
        .limits(limits(case.small_limits))
        .post_hook(PostHookDef::sync("props::obs_record", obs_record))
        .post_hook(PostHookDef::sync("props::obs_flaky", obs_flaky))
        .post_hook(PostHookDef::new_async("props::obs_async", obs_async))
        .stop_hook(StopHookDef::new("props::stop_count", |env, _s| {
            world(&env).stops.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }))
        .stop_hook(StopHookDef::new("props::stop_flaky", |env, _s| {
            let w = world(&env);
            w.observe(2, w.case.stop_flaky)
        }))
        .audit_log(log);
    if case.deadlines {
        b = b
            .timer(ExpiredTimer)
            .hook_timeout(Duration::from_millis(HOOK_DEADLINE_MS))
            .tool_timeout(Duration::from_millis(TOOL_DEADLINE_MS));
    } else {
        // The default deadlines stay on, on a timer whose deadlines never pass: no case
        // depends on the machine's speed.
        b = b.timer(NeverTimer);
    }
    type SyncHook = fn(Env<'_>, &ToolUse) -> Result<Decision, HookError>;
    type AsyncHook = for<'a> fn(Env<'a>, &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>>;
    let sync: [SyncHook; 4] = [
        hook_sync::<0>,
        hook_sync::<1>,
        hook_sync::<2>,
        hook_sync::<3>,
    ];
    let asyn: [AsyncHook; 4] = [
        hook_async::<0>,
        hook_async::<1>,
        hook_async::<2>,
        hook_async::<3>,
    ];
    for (k, h) in case.hooks.iter().enumerate() {
        let mut def = if h.is_async {
            PreHookDef::new_async(hook_path(k), h.order, asyn[k])
        } else {
            PreHookDef::sync(hook_path(k), h.order, sync[k])
        };
        def = match h.matches {
            Matches::All => def,
            Matches::Alpha => def.tools(["alpha"]),
            Matches::Beta => def.tools(["beta"]),
        };
        if case.deadlines && h.own_timeout {
            def = def.timeout(Duration::from_millis(OWN_HOOK_DEADLINE_MS));
        }
        b = b.pre_hook(def);
    }
    b.build().expect("the generated dispatcher builds")
}

// ---------------------------------------------------------------------------------------------
// Making the message
// ---------------------------------------------------------------------------------------------

fn materialize(kind: &InputKind, l: &Limits) -> Value {
    match kind {
        InputKind::Alpha(n, s) => json!({"n": n, "s": s}),
        InputKind::Beta(s, t) => json!({"s": s, "tags": t}),
        InputKind::Any(v) => v.clone(),
        InputKind::Null => Value::Null,
        InputKind::EmptyString => json!(""),
        InputKind::Whitespace => json!(" \n\t "),
        InputKind::JsonString(inner) => {
            Value::String(serde_json::to_string(&materialize(inner, l)).unwrap())
        }
        InputKind::NotJson(s) => json!(format!("not json: {s}")),
        InputKind::ExtraField => json!({"n": 1, "s": "x", "extra": true}),
        InputKind::WrongType(0) => json!({"n": "1"}),
        InputKind::WrongType(1) => json!({"n": 1.5}),
        InputKind::WrongType(2) => json!({"n": u64::MAX}),
        InputKind::WrongType(_) => json!({"s": 5, "tags": [1]}),
        InputKind::Deep(levels) => nested_object(*levels),
        InputKind::Huge => json!({"n": 1, "s": "h".repeat(l.max_input_bytes + 16)}),
        InputKind::Large => json!({"n": 1, "s": "l".repeat(l.max_input_bytes / 4)}),
    }
}

fn message(case: &Case) -> Message {
    let l = limits(case.small_limits);
    let content = case
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            BlockSpec::Text(t) => ContentBlock::Text(TextBlock {
                text: t.clone(),
                extra: Map::new(),
            }),
            BlockSpec::Thinking => ContentBlock::Other(
                json!({"type": "thinking", "thinking": "Let me check.", "signature": "c2ln"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            BlockSpec::Use(id, name, input) => ContentBlock::ToolUse(ToolUse::new(
                match id {
                    IdKind::Unique => format!("toolu_{i:02}"),
                    IdKind::Duplicate => "toolu_dup".to_owned(),
                    IdKind::Empty => String::new(),
                    IdKind::Odd => "tøølu \"🦀\" \u{0}".to_owned(),
                },
                match name {
                    NameKind::Alpha => "alpha".to_owned(),
                    NameKind::Beta => "beta".to_owned(),
                    NameKind::Unknown => "gamma".to_owned(),
                    NameKind::Empty => String::new(),
                    NameKind::Upper => "ALPHA".to_owned(),
                    NameKind::Long => "x".repeat(80),
                    NameKind::NonAscii => "ålpha".to_owned(),
                },
                materialize(input, &l),
            )),
        })
        .collect();
    Message {
        role: if case.stop == 2 {
            Role::User
        } else {
            Role::Assistant
        },
        content,
        stop_reason: Some(
            if case.stop == 1 {
                "max_tokens"
            } else {
                "tool_use"
            }
            .to_owned(),
        ),
        extra: Map::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// The model of the pipeline
// ---------------------------------------------------------------------------------------------

/// What the model says about one block's content.
#[derive(Debug, Clone, PartialEq)]
enum Text {
    Exact(String),
    Prefix(String),
}

#[derive(Debug, Clone)]
struct Expected {
    id: String,
    outcome: Outcome,
    is_error: bool,
    text: Text,
    blocked_by: Option<String>,
    rewritten_by: Vec<String>,
    detail: Option<String>,
    /// The input as the audit line must show it (after normalization).
    input: Value,
    known_tool: bool,
    /// The full size of a result the model cut (`content_bytes`); `None` when not cut.
    content_bytes: Option<usize>,
}

#[derive(Debug)]
enum Answer {
    Ok,
    Halt {
        index: usize,
        outcome: Outcome,
        hook: String,
        detail: String,
    },
    MaxTokens(usize),
    NotAssistant,
    /// No `tool_use` block: `Reply::NothingToRun`.
    NothingToRun,
    /// A refused id: its block (from 1) and the error text.
    BadId {
        block: usize,
        text: String,
    },
}

/// Container nesting, as the limits count it (`{}` is 1, a scalar 0).
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Why an input is refused before validation (`None`: it is an object within the limits).
fn bounds(v: &Value, l: &Limits) -> Option<String> {
    if depth(v) > l.max_input_depth {
        return Some(format!(
            "the input is nested more than {} levels deep",
            l.max_input_depth
        ));
    }
    let size = serde_json::to_string(v).unwrap().len();
    // The generator keeps every input either far below the byte limit or over it.
    assert!(
        size <= l.max_input_bytes / 2 || size > l.max_input_bytes,
        "ambiguous size {size}"
    );
    (size > l.max_input_bytes).then(|| "the input is too large".to_owned())
}

/// The input an audit line shows: the normalized input; when normalization refuses it, the raw
/// input, or a fixed note when the raw input itself is over the limits (never copied whole).
fn recorded(input: &Value, l: &Limits) -> Value {
    if let Ok(v) = normalize(input, l) {
        return v;
    }
    let over = match input {
        Value::String(s) => s.len() + 2 > l.max_input_bytes,
        other => {
            depth(other) > l.max_input_depth
                || serde_json::to_string(other).unwrap().len() > l.max_input_bytes
        }
    };
    if over {
        Value::String(format!(
            "[input not recorded: over the input limits ({} bytes, {} levels)]",
            l.max_input_bytes, l.max_input_depth
        ))
    } else {
        input.clone()
    }
}

/// Normalization (ARCHITECTURE.md, "The life of one call", step 1) and bounds: the object, or why
/// it is refused.
fn normalize(input: &Value, l: &Limits) -> Result<Value, String> {
    let v = match input {
        Value::Object(_) => input.clone(),
        Value::Null => json!({}),
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) if s.len() > l.max_input_bytes => {
            return Err("the input is too large".into());
        }
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                return Err("the input must be a JSON object, but it is a string holding".into());
            }
            Err(_) => {
                return Err(
                    "the input must be a JSON object, but it is a string that is not valid JSON"
                        .into(),
                );
            }
        },
        _ => return Err("the input must be a JSON object, found a JSON".into()),
    };
    match bounds(&v, l) {
        Some(why) => Err(why),
        None => Ok(v),
    }
}

fn is_text(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null) | Some(Value::String(_)))
}

/// Whether an object is a valid input of the tool (written from the schemas, not with serde).
fn valid(tool: &str, v: &Value) -> bool {
    let Value::Object(m) = v else { return false };
    if tool == "alpha" {
        m.keys().all(|k| k == "n" || k == "s")
            && m.get("n").and_then(Value::as_i64).is_some()
            && is_text(m.get("s"))
    } else {
        m.keys().all(|k| k == "s" || k == "tags")
            && is_text(m.get("s"))
            && match m.get("tags") {
                None | Some(Value::Null) => true,
                Some(Value::Array(a)) => a.iter().all(Value::is_string),
                Some(_) => false,
            }
    }
}

/// The arguments the tool receives for a valid input, as it journals them.
fn args_of(tool: &str, v: &Value) -> Value {
    if tool == "alpha" {
        serde_json::to_value(serde_json::from_value::<AlphaArgs>(v.clone()).unwrap()).unwrap()
    } else {
        serde_json::to_value(serde_json::from_value::<BetaArgs>(v.clone()).unwrap()).unwrap()
    }
}

fn shown(name: &str) -> String {
    match name.char_indices().nth(64) {
        None => name.to_owned(),
        Some((end, _)) => format!("{}…", &name[..end]),
    }
}

fn cut(text: String, max: usize) -> (String, Option<usize>) {
    if text.len() <= max {
        return (text, None);
    }
    let full = text.len();
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (
        format!(
            "{}\n[toolgate: result cut at {end} of {full} bytes]",
            &text[..end]
        ),
        Some(full),
    )
}

struct Model {
    hook_calls: Vec<usize>,
    tool_calls: [usize; 2],
    events: Vec<Event>,
}

impl Model {
    /// Runs one block through the model; `Err` carries the halt (the block's own `Expected`).
    fn call(&mut self, case: &Case, call: &ToolUse) -> Result<Expected, Expected> {
        let l = limits(case.small_limits);
        let known = call.name == "alpha" || call.name == "beta";
        let mut e = Expected {
            id: call.id.clone(),
            outcome: Outcome::InvalidInput,
            is_error: true,
            text: Text::Prefix(String::new()),
            blocked_by: None,
            rewritten_by: Vec::new(),
            detail: None,
            input: recorded(&call.input, &l),
            known_tool: known,
            content_bytes: None,
        };
        let input = match normalize(&call.input, &l) {
            Ok(v) => v,
            Err(why) => {
                e.text = Text::Prefix(format!(
                    "Error: invalid input for tool `{}`: {why}",
                    shown(&call.name)
                ));
                return Ok(e);
            }
        };
        e.input = input.clone();
        if !known {
            e.outcome = Outcome::UnknownTool;
            e.text = Text::Exact(format!(
                "Error: unknown tool '{}'. Available tools: alpha, beta.",
                shown(&call.name)
            ));
            return Ok(e);
        }
        if !valid(&call.name, &input) {
            e.text = Text::Prefix(format!("Error: invalid input for tool `{}`", call.name));
            return Ok(e);
        }
        // The chain, in (order, path) order.
        let mut chain: Vec<usize> = (0..case.hooks.len())
            .filter(|&k| match case.hooks[k].matches {
                Matches::All => true,
                Matches::Alpha => call.name == "alpha",
                Matches::Beta => call.name == "beta",
            })
            .collect();
        chain.sort_by_key(|&k| (case.hooks[k].order, hook_path(k)));
        // A rewrite to a new input starts the chain again from its first hook, without the
        // rewriter (it produced the input); one equal to the input the hook saw is an Allow; one
        // back to an input the call already had, or a ninth, halts (ARCHITECTURE.md,
        // "Contracts": "The PreToolUse chain and rewrites").
        let mut current = input;
        let mut producer: Option<usize> = None;
        // Each input the call had, with how many rewrites came before it.
        let mut had: Vec<(Value, usize)> = vec![(current.clone(), 0)];
        'pass: loop {
            for &k in &chain {
                if producer == Some(k) {
                    continue;
                }
                let spec = &case.hooks[k];
                let step = spec.steps[self.hook_calls[k] % spec.steps.len()];
                self.hook_calls[k] += 1;
                self.events.push(Event::Hook {
                    hook: k,
                    id: call.id.clone(),
                    input: current.clone(),
                });
                let path = hook_path(k);
                let cut_off =
                    case.deadlines && spec.is_async && (step.yields || step.act == HookAct::Hang);
                if cut_off {
                    let ms = if spec.own_timeout {
                        OWN_HOOK_DEADLINE_MS
                    } else {
                        HOOK_DEADLINE_MS
                    };
                    e.outcome = Outcome::HookTimeout;
                    e.text = Text::Exact(HALT_TEXT.into());
                    e.blocked_by = Some(path);
                    e.detail = Some(format!("the hook ran past its deadline of {ms} ms"));
                    return Err(e);
                }
                let alpha = call.name == "alpha";
                let new = match step.act {
                    HookAct::Allow | HookAct::Hang => None,
                    HookAct::Deny | HookAct::DenyInstead => {
                        e.outcome = Outcome::Blocked;
                        e.text = Text::Exact(if step.act == HookAct::Deny {
                            format!("BLOCKED: hook {k} says no.")
                        } else {
                            format!("BLOCKED: hook {k} says no. Ask a human.")
                        });
                        e.blocked_by = Some(path);
                        return Ok(e);
                    }
                    HookAct::Error | HookAct::Panic => {
                        e.outcome = Outcome::HookFailed;
                        e.text = Text::Exact(HALT_TEXT.into());
                        e.blocked_by = Some(path);
                        e.detail = Some(if step.act == HookAct::Error {
                            format!("hook {k} could not reach its backend")
                        } else {
                            format!("the hook panicked: {INJECTED}: hook {k}")
                        });
                        return Err(e);
                    }
                    HookAct::RewriteValid if alpha => {
                        Some(json!({"n": 7, "s": format!("rewritten by {k}")}))
                    }
                    HookAct::RewriteValid => {
                        Some(json!({"s": format!("rewritten by {k}"), "tags": ["r"]}))
                    }
                    HookAct::RewriteUnknownField => Some(json!({"n": 1, "s": null, "zzz": true})),
                    HookAct::RewriteWrongType if alpha => Some(json!({"n": "seven"})),
                    HookAct::RewriteWrongType => Some(json!({"tags": "not a list"})),
                    HookAct::RewriteNonObject => Some(json!([1, 2, 3])),
                    HookAct::RewriteTooDeep => Some(nested_object(40)),
                };
                let Some(v) = new else { continue };
                if v == current {
                    continue;
                }
                e.rewritten_by.push(path.clone());
                let halt = |e: &mut Expected, detail: String| {
                    e.outcome = Outcome::HookFailed;
                    e.text = Text::Exact(HALT_TEXT.into());
                    e.blocked_by = Some(path.clone());
                    e.detail = Some(detail);
                };
                let order = e
                    .rewritten_by
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if let Some((_, since)) = had.iter().find(|(h, _)| *h == v) {
                    let mut cycle: Vec<String> = Vec::new();
                    for p in &e.rewritten_by[*since..] {
                        if !cycle.contains(p) {
                            cycle.push(p.clone());
                        }
                    }
                    let mut cycle: Vec<String> = cycle.iter().map(|p| format!("`{p}`")).collect();
                    let last = cycle.pop().expect("the rewrite that looped");
                    let cycle = if cycle.is_empty() {
                        last
                    } else {
                        format!("{} and {last}", cycle.join(", "))
                    };
                    let detail = format!(
                        "the PreToolUse chain looped: the rewrites of {cycle} undo each other \
                         (`{path}` rewrote the input back to an earlier one; rewrites in order: \
                         {order})"
                    );
                    halt(&mut e, detail);
                    return Err(e);
                }
                if e.rewritten_by.len() > 8 {
                    let detail = format!(
                        "the PreToolUse chain did not settle: more than 8 rewrites for one call \
                         (rewrites in order: {order})"
                    );
                    halt(&mut e, detail);
                    return Err(e);
                }
                let valid_rewrite =
                    v.is_object() && bounds(&v, &l).is_none() && valid(&call.name, &v);
                if !valid_rewrite {
                    e.text = Text::Prefix(format!(
                        "Error: invalid input for tool `{}`: a policy rewrite of this call \
                         produced an input that is invalid",
                        call.name
                    ));
                    return Ok(e);
                }
                had.push((v.clone(), e.rewritten_by.len()));
                current = v;
                producer = Some(k);
                continue 'pass;
            }
            break;
        }
        // The tool.
        let t = usize::from(call.name == "beta");
        let steps = if t == 0 { &case.alpha } else { &case.beta };
        let step = steps[self.tool_calls[t] % steps.len()];
        self.tool_calls[t] += 1;
        let tool: &'static str = if t == 0 { "alpha" } else { "beta" };
        let args = args_of(tool, &current);
        self.events.push(Event::Tool {
            tool,
            args: args.clone(),
        });
        let cut_off = case.deadlines && t == 1 && (step.yields || step.act == ToolAct::Hang);
        let (outcome, text, detail) = if cut_off {
            (
                Outcome::ToolTimeout,
                tool_timeout_text(TOOL_DEADLINE_MS),
                Some(format!(
                    "the tool ran past its deadline of {TOOL_DEADLINE_MS} ms"
                )),
            )
        } else {
            match step.act {
                ToolAct::Ok | ToolAct::Hang => {
                    (Outcome::Ok, serde_json::to_string(&args).unwrap(), None)
                }
                ToolAct::Big => (Outcome::Ok, "x".repeat(l.max_result_bytes + 100), None),
                ToolAct::Fail => (
                    Outcome::ToolError,
                    format!("{tool} failed on purpose."),
                    None,
                ),
                ToolAct::Internal => (
                    Outcome::ToolError,
                    INTERNAL_ERROR_MESSAGE.to_owned(),
                    Some("db down".to_owned()),
                ),
                ToolAct::Panic => (
                    Outcome::Panicked,
                    PANIC_TEXT.to_owned(),
                    Some(format!("the tool panicked: {INJECTED}: {tool}")),
                ),
            }
        };
        let (text, content_bytes) = cut(text, l.max_result_bytes);
        e.content_bytes = content_bytes;
        e.outcome = outcome;
        e.is_error = outcome != Outcome::Ok;
        e.text = Text::Exact(text);
        e.detail = detail;
        Ok(e)
    }

    fn not_run(call: &ToolUse, why: &str, l: &Limits) -> Expected {
        Expected {
            id: call.id.clone(),
            outcome: Outcome::NotRun,
            is_error: true,
            text: Text::Exact(why.to_owned()),
            blocked_by: None,
            rewritten_by: Vec::new(),
            detail: None,
            input: recorded(&call.input, l),
            known_tool: call.name == "alpha" || call.name == "beta",
            content_bytes: None,
        }
    }
}

/// The model's answer for a whole message.
fn model(case: &Case, message: &Message) -> (Answer, Vec<Expected>, Vec<Event>) {
    let l = limits(case.small_limits);
    let uses: Vec<&ToolUse> = message.tool_uses().collect();
    let mut m = Model {
        hook_calls: vec![0; case.hooks.len()],
        tool_calls: [0; 2],
        events: Vec::new(),
    };
    if case.stop == 2 {
        return (Answer::NotAssistant, Vec::new(), Vec::new());
    }
    if uses.is_empty() {
        return (Answer::NothingToRun, Vec::new(), Vec::new());
    }
    if case.stop == 1 {
        let e = uses
            .iter()
            .map(|c| Model::not_run(c, NOT_RUN_MAX_TOKENS, &l))
            .collect();
        return (Answer::MaxTokens(uses.len()), e, Vec::new());
    }
    // The Messages API's id rules, written from its 400 answers: non-empty, the pattern
    // `^[a-zA-Z0-9_-]+$`, unique in the message. One bad id: nothing runs.
    let n = uses.len();
    let bad = uses.iter().enumerate().find_map(|(i, c)| {
        let pattern =
            c.id.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
        if c.id.is_empty() {
            Some((i, "is empty"))
        } else if !pattern {
            Some((
                i,
                "does not match the Messages API's pattern `^[a-zA-Z0-9_-]+$`",
            ))
        } else if uses[..i].iter().any(|e| e.id == c.id) {
            Some((i, "repeats the id of an earlier block"))
        } else {
            None
        }
    });
    if let Some((i, rule)) = bad {
        let text = format!(
            "tool_use id {} (block {} of {n}) {rule}; none of the message's {n} tool_use \
             block(s) was run",
            serde_json::to_string(&uses[i].id).unwrap(),
            i + 1
        );
        let why = format!("Not run: {text}.");
        let e = uses.iter().map(|c| Model::not_run(c, &why, &l)).collect();
        return (Answer::BadId { block: i + 1, text }, e, Vec::new());
    }
    let mut out = Vec::new();
    for (i, call) in uses.iter().enumerate() {
        match m.call(case, call) {
            Ok(e) => out.push(e),
            Err(e) => {
                let answer = Answer::Halt {
                    index: i,
                    outcome: e.outcome,
                    hook: e.blocked_by.clone().unwrap(),
                    detail: e.detail.clone().unwrap(),
                };
                out.push(e);
                out.extend(
                    uses[i + 1..]
                        .iter()
                        .map(|c| Model::not_run(c, NOT_RUN_HALT, &l)),
                );
                return (answer, out, m.events);
            }
        }
    }
    (Answer::Ok, out, m.events)
}

// ---------------------------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------------------------

/// An audit folder reused by the cases of one test thread (opening and removing a folder per
/// case cost more than the case itself); each case reads only the lines written after the
/// previous case's. A fresh folder every 500 cases keeps the files small in long runs.
struct AuditScratch {
    _dir: TempDir,
    log: AuditLog,
    offsets: std::cell::Cell<[u64; 2]>,
    cases: std::cell::Cell<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<std::rc::Rc<AuditScratch>>> =
        const { std::cell::RefCell::new(None) };
}

impl AuditScratch {
    fn get() -> std::rc::Rc<AuditScratch> {
        SCRATCH.with(|slot| {
            let mut slot = slot.borrow_mut();
            if let Some(s) = slot.as_ref().filter(|s| s.cases.get() < 500) {
                s.cases.set(s.cases.get() + 1);
                return std::rc::Rc::clone(s);
            }
            let dir = TempDir::new("props");
            let log = AuditLog::open(dir.path()).unwrap();
            let s = std::rc::Rc::new(AuditScratch {
                _dir: dir,
                log,
                offsets: std::cell::Cell::new([0, 0]),
                cases: std::cell::Cell::new(1),
            });
            *slot = Some(std::rc::Rc::clone(&s));
            s
        })
    }

    /// The lines of `path` written since the last call for the same file (`which`).
    fn new_lines(&self, path: &std::path::Path, which: usize) -> Vec<Value> {
        use std::io::{Read, Seek, SeekFrom};
        let mut offsets = self.offsets.get();
        let mut f = std::fs::File::open(path).unwrap();
        f.seek(SeekFrom::Start(offsets[which])).unwrap();
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        offsets[which] += text.len() as u64;
        self.offsets.set(offsets);
        assert!(text.is_empty() || text.ends_with('\n'), "a torn line");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("each audit line is JSON"))
            .collect()
    }
}

fn check_text(got: &str, want: &Text, max: usize) -> Result<(), TestCaseError> {
    match want {
        Text::Exact(t) => prop_assert_eq!(got, t.as_str()),
        Text::Prefix(p) => prop_assert!(
            got.starts_with(p.as_str()),
            "{:?} does not start with {:?}",
            got,
            p
        ),
    }
    // Every result respects the result limit (plus the marker).
    prop_assert!(got.len() <= max + 64, "a result of {} bytes", got.len());
    Ok(())
}

/// The operator detail: exactly the model's, but for a rewrite the chain made invalid, whose
/// serde message the model does not compute (its answer is checked by prefix too): there, the
/// detail names the hook that rewrote last.
fn check_detail(got: Option<&str>, e: &Expected) -> Result<(), TestCaseError> {
    match (e.outcome, e.rewritten_by.last(), &e.detail) {
        (Outcome::InvalidInput, Some(hook), None) => {
            let got = got.unwrap_or_default();
            let prefix = format!("PreToolUse hook `{hook}` rewrote the input into an invalid one");
            prop_assert!(got.starts_with(&prefix), "{:?} for {:?}", got, e);
        }
        _ => prop_assert_eq!(got, e.detail.as_deref(), "detail of {:?}", e),
    }
    Ok(())
}

fn run_case(case: &Case) -> Result<(), TestCaseError> {
    let log = AuditScratch::get();
    let w = World::new(case);
    let d = build(case, &w, log.log.clone());
    let l = limits(case.small_limits);
    let mut message = message(case);
    if case.via_json {
        let text = serde_json::to_string(&message).unwrap();
        let parsed: Message = serde_json::from_str(&text).unwrap();
        // Floats may come back one ULP off (serde_json's default parser), so only the shape is
        // compared; the run below uses the parsed message.
        prop_assert_eq!(parsed.content.len(), message.content.len());
        prop_assert_eq!(
            parsed
                .tool_uses()
                .map(|u| (&u.id, &u.name))
                .collect::<Vec<_>>(),
            message
                .tool_uses()
                .map(|u| (&u.id, &u.name))
                .collect::<Vec<_>>()
        );
        message = parsed;
    }
    let (answer, expected, events) = model(case, &message);
    let uses: Vec<ToolUse> = message.tool_uses().cloned().collect();

    let session = d.session(HookContext::builder("u_prop", "sess_prop").build());
    let got = catch_unwind(AssertUnwindSafe(|| {
        toolgate::block_on(session.respond(&message))
    }));
    let Ok(got) = got else {
        return Err(TestCaseError::fail("a panic escaped respond"));
    };

    // The answer: one tool_result per tool_use, same ids, same order, nothing else.
    let answer_msg: Option<Message> = match (&answer, got) {
        (Answer::Ok, Ok(Reply::Answer(m))) => Some(m),
        (Answer::NothingToRun, Ok(Reply::NothingToRun { stop_reason })) => {
            prop_assert_eq!(stop_reason, message.stop_reason.clone());
            None
        }
        (Answer::BadId { block, text }, Err(RespondError::Id(e))) => {
            prop_assert_eq!(e.block, *block);
            prop_assert_eq!(&e.id, &uses[block - 1].id);
            prop_assert_eq!(&e.to_string(), text);
            None
        }
        (
            Answer::Halt {
                index,
                outcome,
                hook,
                detail,
            },
            Err(RespondError::Call(CallError::Halt(h))),
        ) => {
            prop_assert_eq!(h.outcome, *outcome);
            prop_assert_eq!(&h.hook, hook);
            prop_assert_eq!(&h.detail, detail);
            prop_assert_eq!(&h.tool_use_id, &uses[*index].id);
            let results: Vec<&ToolResult> = h.answer().tool_results().collect();
            prop_assert_eq!(
                h.result(),
                Some(results[*index]),
                "Halt::result is the halted block's"
            );
            Some(h.into_answer())
        }
        (Answer::MaxTokens(n), Err(RespondError::MaxTokens { tool_uses })) => {
            prop_assert_eq!(*n, tool_uses);
            None
        }
        (Answer::NotAssistant, Err(RespondError::NotAssistant)) => None,
        (want, got) => {
            return Err(TestCaseError::fail(format!(
                "expected {want:?}, got {got:?}"
            )));
        }
    };
    if let Some(m) = &answer_msg {
        prop_assert_eq!(m.role, Role::User);
        prop_assert_eq!(m.content.len(), uses.len());
        for (block, (call, e)) in m.content.iter().zip(uses.iter().zip(&expected)) {
            let ContentBlock::ToolResult(r) = block else {
                return Err(TestCaseError::fail("a non-tool_result block in the answer"));
            };
            prop_assert_eq!(&r.tool_use_id, &call.id);
            prop_assert_eq!(r.is_error, e.is_error, "is_error of {:?}", e);
            check_text(&r.content_text(), &e.text, l.max_result_bytes)?;
        }
    }

    // Side effects: exactly the calls that reached the tools, with their effective inputs, and
    // the hooks saw what the chain semantics say.
    prop_assert_eq!(&*w.events.lock().unwrap(), &events);

    // Observers: one record per block, in order, with the very result the host got.
    let seen = w.seen.lock().unwrap().clone();
    prop_assert_eq!(seen.len(), expected.len());
    for (i, (s, e)) in seen.iter().zip(&expected).enumerate() {
        prop_assert_eq!(&s.id, &e.id);
        prop_assert_eq!(s.outcome, e.outcome);
        prop_assert_eq!(&s.blocked_by, &e.blocked_by);
        prop_assert_eq!(&s.rewritten_by, &e.rewritten_by);
        check_detail(s.detail.as_deref(), e)?;
        prop_assert_eq!(s.content_bytes, e.content_bytes, "content_bytes of {:?}", e);
        if let Some(m) = &answer_msg {
            let ContentBlock::ToolResult(r) = &m.content[i] else {
                unreachable!()
            };
            prop_assert_eq!(
                s.result.as_ref(),
                Some(r),
                "observers saw the result the host got"
            );
        } else {
            // max_tokens: the observers saw the `Not run:` results.
            let r = s.result.as_ref().unwrap();
            check_text(&r.content_text(), &e.text, l.max_result_bytes)?;
        }
    }

    // Stop exactly once, whether the session is ended or only dropped.
    let ended = case.end_explicitly.then(|| session.end());
    drop(session);
    prop_assert_eq!(w.stops.load(Ordering::SeqCst), 1);

    // The audit log: one line per block, in order, with the right outcome and content.
    let lines = log.new_lines(&log.log.audit_log_path().unwrap(), 0);
    prop_assert_eq!(lines.len(), expected.len());
    for (i, (line, e)) in lines.iter().zip(&expected).enumerate() {
        prop_assert_eq!(&line["session_id"], "sess_prop");
        prop_assert_eq!(&line["user_id"], "u_prop");
        prop_assert_eq!(line["tool_use_id"].as_str(), Some(e.id.as_str()));
        prop_assert_eq!(line["tool"].as_str(), Some(uses[i].name.as_str()));
        prop_assert_eq!(line["outcome"].as_str(), Some(e.outcome.as_str()));
        prop_assert_eq!(line["is_error"].as_bool(), Some(e.is_error));
        // Compared as both sides read back: serde_json's default float parsing may be one ULP
        // off, for the audit line and for the expectation alike.
        let reread: Value =
            serde_json::from_str(&serde_json::to_string(&e.input).unwrap()).unwrap();
        prop_assert_eq!(&line["input"], &reread);
        let content = line["content"].as_str().unwrap();
        check_text(content, &e.text, l.max_result_bytes)?;
        prop_assert_eq!(
            line.get("blocked_by").and_then(Value::as_str),
            e.blocked_by.as_deref()
        );
        let rewritten: Vec<&str> = line
            .get("rewritten_by")
            .map(|v| {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        prop_assert_eq!(
            rewritten,
            e.rewritten_by
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        );
        check_detail(line.get("detail").and_then(Value::as_str), e)?;
        let was_cut = content.contains("\n[toolgate: result cut at ");
        prop_assert_eq!(line.get("content_bytes").is_some(), was_cut);
        // The full size the model computed, not the one the observers were given.
        prop_assert_eq!(
            line.get("content_bytes").and_then(Value::as_u64),
            e.content_bytes.map(|n| n as u64)
        );
    }

    // The summary: counts, tools, observer errors; one summary line.
    let mut outcomes: BTreeMap<Outcome, u64> = BTreeMap::new();
    let mut tools: BTreeMap<String, u64> = BTreeMap::new();
    for (call, e) in uses.iter().zip(&expected) {
        *outcomes.entry(e.outcome).or_default() += 1;
        if e.known_tool {
            *tools.entry(call.name.clone()).or_default() += 1;
        }
    }
    let failing = |a: ObsAct| u64::from(a != ObsAct::Ok);
    let n = expected.len();
    let observer_errors: u64 = (0..n)
        .map(|i| {
            failing(case.observer_sync[i % case.observer_sync.len()])
                + failing(case.observer_async[i % case.observer_async.len()].0)
        })
        .sum::<u64>()
        + failing(case.stop_flaky);
    let summaries = log.new_lines(&log.log.session_summaries_path().unwrap(), 1);
    prop_assert_eq!(summaries.len(), 1);
    let line = &summaries[0];
    prop_assert_eq!(line["calls"].as_u64(), Some(n as u64));
    prop_assert_eq!(line["observer_errors"].as_u64(), Some(observer_errors));
    let line_outcomes: BTreeMap<String, u64> =
        serde_json::from_value(line["outcomes"].clone()).unwrap();
    let want_outcomes: BTreeMap<String, u64> = outcomes
        .iter()
        .map(|(o, c)| (o.as_str().to_owned(), *c))
        .collect();
    prop_assert_eq!(line_outcomes, want_outcomes);
    let line_tools: BTreeMap<String, u64> = serde_json::from_value(line["tools"].clone()).unwrap();
    prop_assert_eq!(&line_tools, &tools);
    if let Some(s) = ended {
        prop_assert_eq!(s.calls, n as u64);
        prop_assert_eq!(&s.outcomes, &outcomes);
        prop_assert_eq!(&s.tools, &tools);
        prop_assert_eq!(s.observer_errors, observer_errors);
    }
    Ok(())
}

/// Counts of fault classes across the cases run (printed with `--nocapture`).
#[derive(Default)]
struct Tally(Mutex<BTreeMap<&'static str, u64>>);

impl Tally {
    fn add(&self, case: &Case) {
        let mut t = self.0.lock().unwrap();
        let mut bump = |k: &'static str, n: usize| *t.entry(k).or_default() += n as u64;
        bump("cases", 1);
        for h in &case.hooks {
            for s in &h.steps {
                bump(
                    match s.act {
                        HookAct::Allow => "hook step: allow",
                        HookAct::Deny | HookAct::DenyInstead => "hook step: deny",
                        HookAct::RewriteValid => "hook step: valid rewrite",
                        HookAct::RewriteUnknownField
                        | HookAct::RewriteWrongType
                        | HookAct::RewriteNonObject
                        | HookAct::RewriteTooDeep => "hook step: invalid rewrite",
                        HookAct::Error => "hook step: error",
                        HookAct::Panic => "hook step: panic",
                        HookAct::Hang => "hook step: hang",
                    },
                    1,
                );
            }
        }
        for s in case.alpha.iter().chain(&case.beta) {
            bump(
                match s.act {
                    ToolAct::Ok => "tool step: ok",
                    ToolAct::Big => "tool step: over-long result",
                    ToolAct::Fail | ToolAct::Internal => "tool step: error",
                    ToolAct::Panic => "tool step: panic",
                    ToolAct::Hang => "tool step: hang",
                },
                1,
            );
        }
        for b in &case.blocks {
            if let BlockSpec::Use(id, name, input) = b {
                bump("tool_use blocks", 1);
                if matches!(id, IdKind::Duplicate) {
                    bump("input: duplicate id", 1);
                }
                if !matches!(name, NameKind::Alpha | NameKind::Beta) {
                    bump("input: unknown name", 1);
                }
                let mut k = input;
                if let InputKind::JsonString(inner) = k {
                    bump("input: JSON in a string", 1);
                    k = inner;
                }
                bump(
                    match k {
                        InputKind::Alpha(..) | InputKind::Beta(..) => "input: schema-shaped object",
                        InputKind::Any(_) => "input: arbitrary JSON",
                        InputKind::Null | InputKind::EmptyString | InputKind::Whitespace => {
                            "input: null or empty"
                        }
                        InputKind::NotJson(_) => "input: string not JSON",
                        InputKind::ExtraField | InputKind::WrongType(_) => {
                            "input: unknown field or wrong type"
                        }
                        InputKind::Deep(_) => "input: deep nesting",
                        InputKind::Huge => "input: over the byte limit",
                        InputKind::Large => "input: large within the limit",
                        InputKind::JsonString(_) => "input: JSON in a string",
                    },
                    1,
                );
            }
        }
        bump(
            match case.stop {
                0 => "message: tool_use",
                1 => "message: max_tokens",
                _ => "message: user role",
            },
            1,
        );
        if case.deadlines {
            bump("deadlines on", 1);
        }
        let obs = case
            .observer_sync
            .iter()
            .chain(case.observer_async.iter().map(|(a, _)| a));
        bump(
            "observer/stop step: fail or panic",
            obs.chain([&case.stop_flaky])
                .filter(|a| **a != ObsAct::Ok)
                .count(),
        );
    }
}

/// The whole contract, message by message: `cases(4000)` generated cases (shrunk on failure;
/// failures are kept in `tests/properties.proptest-regressions` and replayed first). Prints the
/// fault classes generated (see it with `--nocapture`).
#[test]
fn every_tool_use_is_answered_once_and_nothing_fails_open() {
    use proptest::test_runner::{Config, TestRunner};
    quiet_injected_panics();
    let config = Config {
        max_shrink_iters: 2000,
        ..runner_config(4000)
    };
    let tally = Tally::default();
    let started = std::time::Instant::now();
    let mut runner = TestRunner::new(config);
    let result = runner.run(&case(), |case| {
        tally.add(&case);
        run_case(&case)
    });
    println!(
        "fault classes over {} generated cases (shrinking included), {:.1} s:",
        tally.0.lock().unwrap().get("cases").copied().unwrap_or(0),
        started.elapsed().as_secs_f64()
    );
    for (k, v) in tally.0.lock().unwrap().iter() {
        println!("{k:>40}: {v}");
    }
    if let Err(e) = result {
        panic!("{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(1500),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/properties.proptest-regressions",
            ),
        )),
        ..ProptestConfig::default()
    })]

    /// One call at a time with any input: `ok` exactly when the model says the input is valid,
    /// `invalid_input` or `unknown_tool` otherwise, and never a panic.
    #[test]
    fn any_input_is_validated_before_any_tool_sees_it(
        name in prop_oneof![Just("alpha"), Just("beta"), Just("gamma")],
        input in prop_oneof![any_json(&["n", "s", "tags"]), input_kind().prop_map(|k| materialize(&k, &limits(true)))],
    ) {
        quiet_injected_panics();
        let case = Case {
            hooks: Vec::new(),
            alpha: vec![ToolStep { act: ToolAct::Ok, yields: false }],
            beta: vec![ToolStep { act: ToolAct::Ok, yields: false }],
            observer_sync: vec![ObsAct::Ok],
            observer_async: vec![(ObsAct::Ok, false)],
            stop_flaky: ObsAct::Ok,
            blocks: Vec::new(),
            stop: 0,
            small_limits: true,
            deadlines: false,
            via_json: false,
            end_explicitly: true,
        };
        let scratch = AuditScratch::get();
        let w = World::new(&case);
        let d = build(&case, &w, scratch.log.clone());
        let call = ToolUse::new("toolu_1", name, input);
        let mut m = Model { hook_calls: Vec::new(), tool_calls: [0; 2], events: Vec::new() };
        let e = m.call(&case, &call).expect("no hooks, no halt");
        let s = d.session(HookContext::builder("u", "s").build());
        let r = catch_unwind(AssertUnwindSafe(|| toolgate::block_on(s.call(&call))));
        prop_assert!(r.is_ok(), "a panic escaped");
        let r = r.unwrap().expect("no hooks, no halt");
        prop_assert_eq!(r.is_error, e.is_error);
        check_text(&r.content_text(), &e.text, 1024)?;
        let summary = s.end();
        prop_assert_eq!(summary.outcomes.get(&e.outcome), Some(&1));
        prop_assert_eq!(&*w.events.lock().unwrap(), &m.events);
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions: each finding of the property and fuzz runs, as a plain test
// ---------------------------------------------------------------------------------------------

/// Finding 1 (property run): with two blocks sharing one id, `Halt::result` returned the first
/// block's (successful) result instead of the failed block's `BLOCKED:` one. Since the id check was
/// added (`6a6871a`), a message that repeats an id is refused whole before anything runs (the
/// Messages API refuses it too: "tool_use ids must be unique"), so no halt can meet a repeated id.
#[test]
fn regression_a_message_repeating_an_id_is_refused_before_anything_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "ping",
            "Answers pong.",
            move |_env, _a: BetaArgs| {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok("pong".to_owned())
            },
        ))
        .tool(ToolDef::sync(
            "pong",
            "Answers ping.",
            |_env, _a: BetaArgs| Ok("ping".to_owned()),
        ))
        .pre_hook(
            PreHookDef::sync("props::broken", 1, |_env, _call| {
                Err(HookError::new("policy table missing"))
            })
            .tools(["pong"]),
        )
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u", "s").build());
    let message = assistant(
        json!([
            {"type": "tool_use", "id": "toolu_same", "name": "ping", "input": {}},
            {"type": "tool_use", "id": "toolu_same", "name": "pong", "input": {}}
        ]),
        "tool_use",
    );
    let Err(RespondError::Id(e)) = toolgate::block_on(s.respond(&message)) else {
        panic!("a repeated id refuses the message");
    };
    assert_eq!(
        e.to_string(),
        "tool_use id \"toolu_same\" (block 2 of 2) repeats the id of an earlier block; none of \
         the message's 2 tool_use block(s) was run"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(s.end().outcomes.get(&Outcome::NotRun), Some(&2));
}

/// Finding 2 (property run): a call of a known tool whose input failed normalization (an array,
/// say) was missing from the summary's `tools` count, while one failing validation was counted.
#[test]
fn regression_tools_count_every_call_of_a_known_tool() {
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "ping",
            "Answers pong.",
            |_env, _a: BetaArgs| Ok("pong".to_owned()),
        ))
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u", "s").build());
    for (i, input) in [json!([]), json!({"s": 5}), json!({})]
        .into_iter()
        .enumerate()
    {
        toolgate::block_on(s.call(&ToolUse::new(format!("toolu_{i}"), "ping", input))).unwrap();
    }
    let summary = s.end();
    assert_eq!(summary.tools.get("ping"), Some(&3));
    assert_eq!(summary.outcomes.get(&Outcome::InvalidInput), Some(&2));
}
