//! The rewrite rule of the PreToolUse chain (ARCHITECTURE.md, "Contracts": "The PreToolUse chain
//! and rewrites"), on random chains of up to five hooks, sync and async, that allow, deny and
//! rewrite the fields other hooks look at (`owner`, `amount`, `note`), sometimes into an invalid
//! input, and rewriters that never allow what they produced (`amount` raised by a step, or by
//! one more each time the hook runs).
//!
//! Checked for every case, against an independent model of the rule (a rewrite to a new input
//! starts a new pass from the chain's first hook, without the rewriter, which produced it; a
//! rewrite equal to the input the hook saw is an `Allow`; a rewrite back to an input the call
//! already had, or a ninth rewrite, halts as `hook_failed`, the detail naming the rewriters since
//! that input):
//! - every hook of the chain either allowed the effective input (the last input it saw) or
//!   produced it (its last run rewrote to it), and the tool ran once, with it, only then;
//! - a denying hook saw the input the model says, and the tool did not run;
//! - the hooks were called, in order, with the inputs the model says;
//! - the outcome, the result, `blocked_by`, `rewritten_by`, `effective_input` and `detail` (or
//!   the `Halt`) are the model's.
//!
//! `cases(2000)` cases in CI (`PROPTEST_CASES` overrides).

use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate::{
    CallError, Decision, Dispatcher, HookContext, ToolError, ToolUse,
    audit::{CallRecord, Outcome},
    dispatch::{BoxFuture, Env, HookError, PostHookDef, PreHookDef, ToolDef},
};

use crate::support::{HALT_TEXT, NeverTimer, yield_once};

/// The owners, amounts and notes inputs are made of.
const OWNERS: [&str; 3] = ["u_1", "u_2", "u_3"];
const AMOUNTS: u64 = 12;
const NOTES: [Option<&str>; 3] = [None, Some("a"), Some("b")];

/// When a rule applies, judged on the input the hook sees.
#[derive(Debug, Clone, Copy)]
enum Cond {
    Always,
    Owner(usize),
    Amount(u64),
    AmountAtLeast(u64),
    Note(usize),
}

/// What a rule decides.
#[derive(Debug, Clone, Copy)]
enum Act {
    Allow,
    Deny,
    SetOwner(usize),
    SetAmount(u64),
    /// `amount + by`, modulo [`AMOUNTS`]: walks through several inputs, or around in a loop;
    /// never the input it saw.
    AddAmount(u64),
    /// `amount + runs + 1`, modulo [`AMOUNTS`], `runs` being how often the hook ran before in
    /// this call: another output every time it runs.
    AddRuns,
    SetNote(usize),
    /// `amount: "many"`: not an integer, so the rewrite is invalid.
    Invalid,
}

#[derive(Debug, Clone)]
struct HookSpec {
    order: i64,
    is_async: bool,
    /// The first rule whose condition holds decides; none: `Allow`.
    rules: Vec<(Cond, Act)>,
}

#[derive(Debug, Clone)]
struct Case {
    hooks: Vec<HookSpec>,
    owner: usize,
    amount: u64,
    note: usize,
}

fn cond() -> impl Strategy<Value = Cond> {
    prop_oneof![
        2 => Just(Cond::Always),
        2 => (0..OWNERS.len()).prop_map(Cond::Owner),
        2 => (0..AMOUNTS).prop_map(Cond::Amount),
        1 => (0..AMOUNTS).prop_map(Cond::AmountAtLeast),
        1 => (0..NOTES.len()).prop_map(Cond::Note),
    ]
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        3 => Just(Act::Allow),
        2 => Just(Act::Deny),
        2 => (0..OWNERS.len()).prop_map(Act::SetOwner),
        2 => (0..AMOUNTS).prop_map(Act::SetAmount),
        2 => (1..AMOUNTS).prop_map(Act::AddAmount),
        1 => Just(Act::AddRuns),
        1 => (0..NOTES.len()).prop_map(Act::SetNote),
        1 => Just(Act::Invalid),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(
            (
                0i64..3,
                any::<bool>(),
                prop::collection::vec((cond(), act()), 1..4),
            )
                .prop_map(|(order, is_async, rules)| HookSpec {
                    order,
                    is_async,
                    rules,
                }),
            1..=5,
        ),
        0..OWNERS.len(),
        0..AMOUNTS,
        0..NOTES.len(),
    )
        .prop_map(|(hooks, owner, amount, note)| Case {
            hooks,
            owner,
            amount,
            note,
        })
}

/// The input of a call: `{"owner": …, "amount": …}` and `"note"` when there is one.
fn input(owner: usize, amount: u64, note: usize) -> Value {
    let mut v = json!({"owner": OWNERS[owner], "amount": amount});
    if let Some(n) = NOTES[note] {
        v["note"] = json!(n);
    }
    v
}

/// What a hook decides on `v` when it ran `runs` times before in this call: the model and the
/// hooks under test both use this (it is the hook's own logic, not the chain's rule).
fn decide(spec: &HookSpec, k: usize, v: &Value, runs: usize) -> Decision {
    let owner = OWNERS
        .iter()
        .position(|o| v["owner"] == *o)
        .expect("a valid input's owner");
    let amount = v["amount"].as_u64().expect("a valid input's amount");
    let note = NOTES
        .iter()
        .position(|n| v.get("note").and_then(Value::as_str) == *n)
        .expect("a valid input's note");
    let holds = |c: &Cond| match *c {
        Cond::Always => true,
        Cond::Owner(o) => owner == o,
        Cond::Amount(a) => amount == a,
        Cond::AmountAtLeast(a) => amount >= a,
        Cond::Note(n) => note == n,
    };
    let Some((_, act)) = spec.rules.iter().find(|(c, _)| holds(c)) else {
        return Decision::Allow;
    };
    match *act {
        Act::Allow => Decision::Allow,
        Act::Deny => Decision::deny(format!("hook {k} says no.")),
        Act::SetOwner(o) => Decision::Rewrite(input(o, amount, note)),
        Act::SetAmount(a) => Decision::Rewrite(input(owner, a, note)),
        Act::AddAmount(by) => Decision::Rewrite(input(owner, (amount + by) % AMOUNTS, note)),
        Act::AddRuns => {
            let by = u64::try_from(runs).unwrap() + 1;
            Decision::Rewrite(input(owner, (amount + by) % AMOUNTS, note))
        }
        Act::SetNote(n) => Decision::Rewrite(input(owner, amount, n)),
        Act::Invalid => Decision::Rewrite(json!({"owner": OWNERS[owner], "amount": "many"})),
    }
}

fn path(k: usize) -> String {
    format!("chain::hook_{k}")
}

// ---- the system under test ----

/// Arguments of `refund`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Refund {
    /// Whose order.
    owner: String,
    /// How much.
    amount: u64,
    /// A note.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// What the observer saw: outcome, `blocked_by`, `rewritten_by`, `effective_input`, `detail`.
type Seen = (
    Outcome,
    Option<String>,
    Vec<String>,
    Option<Value>,
    Option<String>,
);

/// The case and what the hooks and the tool saw, shared through `State<World>`.
struct World {
    case: Case,
    /// `(hook, input it saw)`, in call order.
    hook_calls: Mutex<Vec<(usize, Value)>>,
    /// What each of those runs rewrote the input to (`None`: it did not rewrite).
    hook_rewrites: Mutex<Vec<Option<Value>>>,
    /// The inputs the tool ran with.
    tool_calls: Mutex<Vec<Value>>,
    /// What the observer saw.
    record: Mutex<Option<Seen>>,
}

fn world(env: &Env<'_>) -> Arc<World> {
    env.state::<World>().expect("World is given").into_arc()
}

fn hook_sync<const K: usize>(env: Env<'_>, call: &ToolUse) -> Result<Decision, HookError> {
    let w = world(&env);
    let mut calls = w.hook_calls.lock().unwrap();
    let runs = calls.iter().filter(|(h, _)| *h == K).count();
    calls.push((K, call.input.clone()));
    let decision = decide(&w.case.hooks[K], K, &call.input, runs);
    let rewrote = match &decision {
        Decision::Rewrite(v) => Some(v.clone()),
        _ => None,
    };
    w.hook_rewrites.lock().unwrap().push(rewrote);
    Ok(decision)
}

fn hook_async<'a, const K: usize>(
    env: Env<'a>,
    call: &'a ToolUse,
) -> BoxFuture<'a, Result<Decision, HookError>> {
    Box::pin(async move {
        yield_once().await;
        hook_sync::<K>(env, call)
    })
}

fn refund(env: Env<'_>, args: Refund) -> Result<String, ToolError> {
    let v = serde_json::to_value(&args).unwrap();
    world(&env).tool_calls.lock().unwrap().push(v.clone());
    Ok(v.to_string())
}

fn observe(env: Env<'_>, r: &CallRecord<'_>) -> Result<(), HookError> {
    *world(&env).record.lock().unwrap() = Some((
        r.outcome,
        r.blocked_by.map(str::to_owned),
        r.rewritten_by.iter().map(|s| (*s).to_owned()).collect(),
        r.effective_input.cloned(),
        r.detail.map(str::to_owned),
    ));
    Ok(())
}

fn build(case: &Case, w: &Arc<World>) -> Dispatcher {
    static TOOL: std::sync::LazyLock<ToolDef> =
        std::sync::LazyLock::new(|| ToolDef::sync("refund", "Refunds an order.", refund));
    type SyncHook = fn(Env<'_>, &ToolUse) -> Result<Decision, HookError>;
    type AsyncHook = for<'a> fn(Env<'a>, &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>>;
    let sync: [SyncHook; 5] = [
        hook_sync::<0>,
        hook_sync::<1>,
        hook_sync::<2>,
        hook_sync::<3>,
        hook_sync::<4>,
    ];
    let asyn: [AsyncHook; 5] = [
        hook_async::<0>,
        hook_async::<1>,
        hook_async::<2>,
        hook_async::<3>,
        hook_async::<4>,
    ];
    let mut b = Dispatcher::builder()
        .tool(TOOL.clone())
        .state_arc(Arc::clone(w))
        .post_hook(PostHookDef::sync("chain::observe", observe))
        // Async hooks keep their default deadline; this timer never fires, so no case depends
        // on how fast the machine is.
        .timer(NeverTimer);
    for (k, h) in case.hooks.iter().enumerate() {
        b = b.pre_hook(if h.is_async {
            PreHookDef::new_async(path(k), h.order, asyn[k])
        } else {
            PreHookDef::sync(path(k), h.order, sync[k])
        });
    }
    b.build().expect("the generated chain builds")
}

// ---- the model ----

/// How the model says the call ends.
#[derive(Debug, PartialEq)]
enum End {
    /// Every hook allowed; the tool runs with the effective input.
    Ran,
    Blocked(usize),
    InvalidRewrite(usize),
    /// At the hook, the rewriters of the loop in order (each once).
    Looped(usize, Vec<usize>),
    Unsettled(usize),
}

#[derive(Debug)]
struct Expected {
    end: End,
    /// `(hook, input it saw)`, in call order.
    calls: Vec<(usize, Value)>,
    /// The hooks that rewrote, in order.
    rewritten_by: Vec<usize>,
    /// The input after the last valid rewrite.
    effective: Value,
}

/// The rule as ARCHITECTURE.md states it ("Contracts": "The PreToolUse chain and rewrites"),
/// written without the pipeline's code: the tool runs only with an input every hook either
/// allowed or produced.
fn model(case: &Case) -> Expected {
    let mut chain: Vec<usize> = (0..case.hooks.len()).collect();
    chain.sort_by_key(|&k| (case.hooks[k].order, path(k)));
    let start = input(case.owner, case.amount, case.note);
    // Every input the call had, with how many rewrites came before it.
    let mut inputs_so_far = vec![(start.clone(), 0)];
    // The hook that produced the effective input: it does not decide on it.
    let mut producer = None;
    let mut e = Expected {
        end: End::Ran,
        calls: Vec::new(),
        rewritten_by: Vec::new(),
        effective: start,
    };
    let mut pass = 0;
    while pass < 100 {
        pass += 1;
        let mut restarted = false;
        for &k in &chain {
            if producer == Some(k) {
                continue;
            }
            let runs = e.calls.iter().filter(|(h, _)| *h == k).count();
            e.calls.push((k, e.effective.clone()));
            match decide(&case.hooks[k], k, &e.effective, runs) {
                Decision::Allow => {}
                Decision::Deny { .. } => {
                    e.end = End::Blocked(k);
                    return e;
                }
                Decision::Rewrite(v) if v == e.effective => {}
                Decision::Rewrite(v) => {
                    e.rewritten_by.push(k);
                    if let Some((_, since)) = inputs_so_far.iter().find(|(had, _)| *had == v) {
                        let mut cycle = Vec::new();
                        for &r in &e.rewritten_by[*since..] {
                            if !cycle.contains(&r) {
                                cycle.push(r);
                            }
                        }
                        e.end = End::Looped(k, cycle);
                    } else if e.rewritten_by.len() > 8 {
                        e.end = End::Unsettled(k);
                    } else if !v["amount"].is_u64() {
                        e.end = End::InvalidRewrite(k);
                    } else {
                        inputs_so_far.push((v.clone(), e.rewritten_by.len()));
                        e.effective = v;
                        producer = Some(k);
                        restarted = true;
                        break;
                    }
                    return e;
                }
                #[allow(unreachable_patterns)] // for `Decision` variants to come
                other => panic!("no hook decides {other:?}"),
            }
        }
        if !restarted {
            return e;
        }
    }
    panic!("the model did not settle in 100 passes")
}

// ---- the property ----

fn run_case(case: &Case) -> Result<(), TestCaseError> {
    let w = Arc::new(World {
        case: case.clone(),
        hook_calls: Mutex::new(Vec::new()),
        hook_rewrites: Mutex::new(Vec::new()),
        tool_calls: Mutex::new(Vec::new()),
        record: Mutex::new(None),
    });
    let d = build(case, &w);
    let s = d.session(HookContext::builder("u_1", "sess_chain").build());
    let start = input(case.owner, case.amount, case.note);
    let got = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "refund", start.clone())));
    let want = model(case);
    let hook_calls = w.hook_calls.lock().unwrap().clone();
    let hook_rewrites = w.hook_rewrites.lock().unwrap().clone();
    let tool_calls = w.tool_calls.lock().unwrap().clone();
    let (outcome, blocked_by, rewritten_by, effective_input, detail) = w
        .record
        .lock()
        .unwrap()
        .clone()
        .expect("the observer saw the call");

    // The hooks were asked what the model says, in order.
    prop_assert_eq!(&hook_calls, &want.calls);
    let paths: Vec<String> = want.rewritten_by.iter().map(|&k| path(k)).collect();
    prop_assert_eq!(&rewritten_by, &paths);
    let listed = paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let want_effective = (want.effective != start).then(|| want.effective.clone());
    if !matches!(want.end, End::Ran) {
        prop_assert!(tool_calls.is_empty(), "the tool ran for {:?}", want.end);
    }
    match want.end {
        End::Ran => {
            let r = got.expect("no halt");
            prop_assert_eq!(outcome, Outcome::Ok);
            prop_assert_eq!(
                (r.is_error, r.content_text()),
                (false, want.effective.to_string().into())
            );
            prop_assert_eq!(&tool_calls, &vec![want.effective.clone()]);
            // Every hook of the chain either allowed the input the tool ran with (the last
            // input it saw; a rewrite to the same is an allow) or produced it (its last run
            // rewrote to it, and it was not asked about it): read from what the hooks saw and
            // did, not from the model.
            let ran_with = &tool_calls[0];
            for k in 0..case.hooks.len() {
                let last = hook_calls
                    .iter()
                    .rposition(|(h, _)| *h == k)
                    .expect("every hook of the chain ran");
                let (saw, rewrote) = (&hook_calls[last].1, hook_rewrites[last].as_ref());
                let allowed = saw == ran_with && rewrote.is_none_or(|v| v == ran_with);
                let produced = saw != ran_with && rewrote == Some(ran_with);
                prop_assert!(
                    allowed || produced,
                    "hook {} neither allowed nor produced the input the tool ran with",
                    k
                );
            }
            prop_assert_eq!((blocked_by, detail), (None, None));
            prop_assert_eq!(effective_input, want_effective);
        }
        End::Blocked(k) => {
            let r = got.expect("no halt");
            prop_assert_eq!(outcome, Outcome::Blocked);
            prop_assert_eq!(
                (r.is_error, r.content_text()),
                (true, format!("BLOCKED: hook {k} says no.").into())
            );
            prop_assert_eq!(hook_calls.last().map(|(_, v)| v), Some(&want.effective));
            prop_assert_eq!((blocked_by, detail), (Some(path(k)), None));
            prop_assert_eq!(effective_input, want_effective);
        }
        End::InvalidRewrite(k) => {
            let r = got.expect("no halt");
            prop_assert_eq!(outcome, Outcome::InvalidInput);
            prop_assert!(r.is_error);
            prop_assert!(
                r.content_text().starts_with(
                    "Error: invalid input for tool `refund`: a policy rewrite of this call \
                     produced an input that is invalid at `amount`"
                ),
                "{}",
                r.content_text()
            );
            prop_assert_eq!(blocked_by, None);
            let want_detail = format!(
                "PreToolUse hook `{}` rewrote the input into an invalid one at `amount`: ",
                path(k)
            );
            prop_assert!(
                detail
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with(&want_detail)
            );
            prop_assert_eq!(effective_input, want_effective);
        }
        End::Looped(k, _) | End::Unsettled(k) => {
            let halt = match got.expect_err("a halt") {
                CallError::Halt(halt) => halt,
                other => panic!("a halt, not {other:?}"),
            };
            let want_detail = if let End::Looped(_, cycle) = &want.end {
                let mut cycle: Vec<String> =
                    cycle.iter().map(|&r| format!("`{}`", path(r))).collect();
                let last = cycle.pop().expect("the rewrite that looped");
                let cycle = match cycle.len() {
                    0 => last,
                    _ => format!("{} and {last}", cycle.join(", ")),
                };
                format!(
                    "the PreToolUse chain looped: the rewrites of {cycle} undo each other (`{}` \
                     rewrote the input back to an earlier one; rewrites in order: {listed})",
                    path(k)
                )
            } else {
                format!(
                    "the PreToolUse chain did not settle: more than 8 rewrites for one call \
                     (rewrites in order: {listed})"
                )
            };
            prop_assert_eq!(
                (halt.outcome, &halt.hook, &halt.detail),
                (Outcome::HookFailed, &path(k), &want_detail)
            );
            prop_assert_eq!(
                halt.result().map(|r| r.content_text()),
                Some(HALT_TEXT.into())
            );
            prop_assert_eq!(outcome, Outcome::HookFailed);
            prop_assert_eq!((blocked_by, detail), (Some(path(k)), Some(want_detail)));
            prop_assert_eq!(effective_input, want_effective);
        }
    }
    Ok(())
}

/// How many cases of each ending the run made (printed with `--nocapture`), so a change to
/// the generator that stops making loops or runaway chains shows.
#[derive(Default)]
struct Tally(Mutex<std::collections::BTreeMap<&'static str, u64>>);

#[test]
fn every_hook_that_allowed_last_saw_the_input_the_tool_ran_with() {
    let tally = Tally::default();
    let config = ProptestConfig {
        max_shrink_iters: 2000,
        ..crate::runner_config(2000)
    };
    proptest::test_runner::TestRunner::new(config)
        .run(&case(), |c| {
            let want = model(&c);
            if let (End::Ran, Some(&p)) = (&want.end, want.rewritten_by.last()) {
                // The producer, were it asked about its own input, would change it again.
                let runs = want.calls.iter().filter(|(h, _)| *h == p).count();
                let again = decide(&c.hooks[p], p, &want.effective, runs);
                if matches!(&again, Decision::Rewrite(v) if *v != want.effective) {
                    *tally
                        .0
                        .lock()
                        .unwrap()
                        .entry("ran, rewritten once")
                        .or_default() += 1;
                }
            }
            let end = match want.end {
                End::Ran => "ran",
                End::Blocked(_) => "blocked",
                End::InvalidRewrite(_) => "invalid rewrite",
                End::Looped(..) => "looped",
                End::Unsettled(_) => "did not settle",
            };
            *tally.0.lock().unwrap().entry(end).or_default() += 1;
            run_case(&c)
        })
        .unwrap();
    let tally = tally.0.into_inner().unwrap();
    println!("rewrite chains by ending: {tally:?}");
    for end in [
        "ran",
        "ran, rewritten once",
        "blocked",
        "invalid rewrite",
        "looped",
        "did not settle",
    ] {
        assert!(
            tally.get(end).copied().unwrap_or(0) > 0,
            "no case {end}: {tally:?}"
        );
    }
}
