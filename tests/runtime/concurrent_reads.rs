//! Reads run concurrently: the read-only blocks of one message are polled together in `respond`, at
//! most `max_concurrent_reads` at once, with no runtime (`block_on`). The overlap is proved without
//! a time: a lookup waits until a given number of lookups run at once (a sequential run would wait
//! forever, so a tool deadline turns that into a failed assertion instead of a hang), and the most
//! lookups running at once is asserted exactly. The invariants: results, observers and audit lines
//! in `tool_use` order whatever order the tools finish in; a write's PreToolUse chain only after
//! every earlier block finished; a halt leaves the sequential run's answers and names the later
//! blocks that had already run; an `ask` in a read's chain pauses that block only; a retried
//! message runs nothing twice.

use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    CallError, Decision, Dispatcher, HookContext, Reply, RespondError, ToolError, ToolUse,
    approval::{Decisions, PendingBlock},
    audit::{AuditLog, CallRecord},
    dispatch::{
        BoxFuture, DispatcherBuilder, Effect, Env, HookError, PostHookDef, PreHookDef, ToolDef,
    },
};

use crate::support::{
    HALT_TEXT, NOT_RUN_HALT, TempDir, answer_of, assistant, json_lines, yield_once,
};

/// Arguments of `lookup_order`.
#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// The order id.
    order: String,
    /// Wait until this many lookups have run at once (0: do not wait).
    wait_for: usize,
    /// Finish only after the lookup of this order finished.
    #[serde(default)]
    after: Option<String>,
}

/// Arguments of `refund`.
#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// The amount, in dollars.
    amount: u64,
}

/// What the tools and hooks saw.
#[derive(Default)]
struct World {
    /// Lookups running now.
    running: AtomicUsize,
    /// The most lookups that ran at once.
    max_running: AtomicUsize,
    /// Tool bodies finished, in the order they finished.
    finished: Mutex<Vec<String>>,
    /// Dollars refunded.
    spent: AtomicU64,
    /// What the spending limit saw when it ran: the tool bodies finished then.
    limit_saw: Mutex<Vec<Vec<String>>>,
    /// The `tool_use_id`s the observer saw, in order.
    observed: Mutex<Vec<String>>,
}

fn lookup_order(env: Env<'_>, l: Lookup) -> BoxFuture<'_, Result<String, ToolError>> {
    let world = env.state::<World>().unwrap().into_arc();
    Box::pin(async move {
        let now = world.running.fetch_add(1, Ordering::SeqCst) + 1;
        world.max_running.fetch_max(now, Ordering::SeqCst);
        // Waits (waking itself) for the other lookups: only running together gets past this.
        poll_fn(|cx| {
            let met = world.max_running.load(Ordering::SeqCst) >= l.wait_for
                && l.after.as_ref().is_none_or(|a| {
                    world
                        .finished
                        .lock()
                        .unwrap()
                        .contains(&format!("lookup {a}"))
                });
            if met {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
        .await;
        yield_once().await;
        world.running.fetch_sub(1, Ordering::SeqCst);
        world
            .finished
            .lock()
            .unwrap()
            .push(format!("lookup {}", l.order));
        Ok(format!("order {}: shipped", l.order))
    })
}

/// A dispatcher with `lookup_order` (an async read), `refund` (a sync write under a spending
/// limit of $100), a policy hook on lookups (errors on order `boom`, asks about order
/// `secret`), an observer and an audit log; `max` reads at once.
fn builder(world: &Arc<World>, dir: &TempDir) -> DispatcherBuilder {
    let refunds = Arc::clone(world);
    let limit = Arc::clone(world);
    let seen = Arc::clone(world);
    Dispatcher::builder()
        .tool(
            ToolDef::new_async("lookup_order", "Looks an order up.", lookup_order)
                .effect(Effect::read()),
        )
        .tool(
            ToolDef::sync("refund", "Refunds an amount.", move |_env, r: Refund| {
                refunds.spent.fetch_add(r.amount, Ordering::SeqCst);
                refunds
                    .finished
                    .lock()
                    .unwrap()
                    .push(format!("refund {}", r.amount));
                Ok(format!("refunded ${}", r.amount))
            })
            .effect(Effect::write()),
        )
        .pre_hook(
            PreHookDef::sync("tests::spending_limit", 1, move |_env, call| {
                let finished = limit.finished.lock().unwrap().clone();
                limit.limit_saw.lock().unwrap().push(finished);
                let spent = limit.spent.load(Ordering::SeqCst);
                let amount = call.input["amount"].as_u64().unwrap_or(0);
                Ok(if spent + amount > 100 {
                    Decision::deny(format!("over the limit: ${spent} spent of $100."))
                } else {
                    Decision::Allow
                })
            })
            .tools(["refund"]),
        )
        .pre_hook(
            PreHookDef::sync(
                "tests::order_policy",
                2,
                |_env, call| match call.input["order"].as_str() {
                    Some("boom") => Err(HookError::new("policy service down")),
                    Some(o) if o.starts_with("secret") => {
                        Ok(Decision::ask("a person checks secret orders"))
                    }
                    _ => Ok(Decision::Allow),
                },
            )
            .tools(["lookup_order"]),
        )
        .post_hook(PostHookDef::sync(
            "tests::observer",
            move |_env, r: &CallRecord<'_>| {
                seen.observed.lock().unwrap().push(r.call.id.clone());
                Ok(())
            },
        ))
        .state_arc(Arc::clone(world))
        .tool_timeout(Duration::from_secs(5))
        .audit_log(AuditLog::open(dir.path()).unwrap())
}

fn ctx() -> HookContext {
    HookContext::builder("u_001", "sess_reads").build()
}

fn lookup(id: &str, order: &str, wait_for: usize, after: Option<&str>) -> Value {
    let mut input = json!({"order": order, "wait_for": wait_for});
    if let Some(a) = after {
        input["after"] = json!(a);
    }
    json!({"type": "tool_use", "id": id, "name": "lookup_order", "input": input})
}

fn refund(id: &str, amount: u64) -> Value {
    json!({"type": "tool_use", "id": id, "name": "refund", "input": {"amount": amount}})
}

fn result(id: &str, content: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": content})
}

fn error(id: &str, content: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": true})
}

/// `(tool_use_id, outcome, content, replay)` of each audit line, in file order.
fn lines(dir: &TempDir) -> Vec<(String, String, String, bool)> {
    json_lines(&dir.join("audit_log.jsonl"))
        .into_iter()
        .map(|l| {
            (
                l["tool_use_id"].as_str().unwrap().to_owned(),
                l["outcome"].as_str().unwrap().to_owned(),
                l["content"].as_str().unwrap_or("").to_owned(),
                l.get("replay") == Some(&json!(true)),
            )
        })
        .collect()
}

fn line(id: &str, outcome: &str, content: &str) -> (String, String, String, bool) {
    (id.into(), outcome.into(), content.into(), false)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn four_reads_run_at_once_and_answer_in_tool_use_order_though_they_finish_in_reverse() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("reads-four");
    let s = builder(&world, &dir).build().unwrap().session(ctx());
    // Each lookup waits until all four run, and each finishes only after the one after it.
    let message = assistant(
        json!([
            lookup("toolu_1", "o1", 4, Some("o2")),
            lookup("toolu_2", "o2", 4, Some("o3")),
            lookup("toolu_3", "o3", 4, Some("o4")),
            lookup("toolu_4", "o4", 4, None),
        ]),
        "tool_use",
    );
    let answer = answer_of(toolgate::block_on(s.respond(&message)).unwrap());
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"role": "user", "content": [
            result("toolu_1", "order o1: shipped"),
            result("toolu_2", "order o2: shipped"),
            result("toolu_3", "order o3: shipped"),
            result("toolu_4", "order o4: shipped"),
        ]})
    );
    assert_eq!(world.max_running.load(Ordering::SeqCst), 4);
    assert_eq!(
        *world.finished.lock().unwrap(),
        strings(&["lookup o4", "lookup o3", "lookup o2", "lookup o1"])
    );
    assert_eq!(
        *world.observed.lock().unwrap(),
        strings(&["toolu_1", "toolu_2", "toolu_3", "toolu_4"])
    );
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "ok", "order o1: shipped"),
            line("toolu_2", "ok", "order o2: shipped"),
            line("toolu_3", "ok", "order o3: shipped"),
            line("toolu_4", "ok", "order o4: shipped"),
        ]
    );
    assert_eq!(s.end().calls, 4);
}

#[test]
fn at_most_max_concurrent_reads_run_at_once() {
    for (max, expected) in [(2, 2), (3, 3), (1, 1), (0, 1)] {
        let world = Arc::new(World::default());
        let dir = TempDir::new("reads-max");
        let d = builder(&world, &dir)
            .max_concurrent_reads(max)
            .build()
            .unwrap();
        let s = d.session(ctx());
        // Each waits until `expected` run at once: more would not be needed, fewer would fail.
        let message = assistant(
            json!([
                lookup("toolu_1", "o1", expected, None),
                lookup("toolu_2", "o2", expected, None),
                lookup("toolu_3", "o3", expected, None),
                lookup("toolu_4", "o4", expected, None),
                lookup("toolu_5", "o5", expected, None),
                lookup("toolu_6", "o6", expected, None),
            ]),
            "tool_use",
        );
        let answer = answer_of(toolgate::block_on(s.respond(&message)).unwrap());
        let contents: Vec<Value> = (1..=6)
            .map(|i| result(&format!("toolu_{i}"), &format!("order o{i}: shipped")))
            .collect();
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"role": "user", "content": contents}),
            "max {max}"
        );
        assert_eq!(
            world.max_running.load(Ordering::SeqCst),
            expected,
            "max {max}"
        );
        assert_eq!(
            *world.observed.lock().unwrap(),
            strings(&[
                "toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5", "toolu_6"
            ]),
            "max {max}"
        );
    }
}

#[test]
fn a_writes_chain_runs_after_every_earlier_block_finished_and_sees_the_refund_before_it() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("reads-write");
    let s = builder(&world, &dir).build().unwrap().session(ctx());
    let message = assistant(
        json!([
            lookup("toolu_1", "o1", 2, Some("o2")),
            lookup("toolu_2", "o2", 2, None),
            refund("toolu_3", 60),
            lookup("toolu_4", "o3", 2, Some("o4")),
            lookup("toolu_5", "o4", 2, None),
            refund("toolu_6", 60),
        ]),
        "tool_use",
    );
    let answer = answer_of(toolgate::block_on(s.respond(&message)).unwrap());
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"role": "user", "content": [
            result("toolu_1", "order o1: shipped"),
            result("toolu_2", "order o2: shipped"),
            result("toolu_3", "refunded $60"),
            result("toolu_4", "order o3: shipped"),
            result("toolu_5", "order o4: shipped"),
            error("toolu_6", "BLOCKED: over the limit: $60 spent of $100."),
        ]})
    );
    // The reads of each pair overlapped; each refund's chain saw every block before it done.
    assert_eq!(world.max_running.load(Ordering::SeqCst), 2);
    assert_eq!(
        *world.limit_saw.lock().unwrap(),
        [
            strings(&["lookup o2", "lookup o1"]),
            strings(&[
                "lookup o2",
                "lookup o1",
                "refund 60",
                "lookup o4",
                "lookup o3"
            ]),
        ]
    );
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "ok", "order o1: shipped"),
            line("toolu_2", "ok", "order o2: shipped"),
            line("toolu_3", "ok", "refunded $60"),
            line("toolu_4", "ok", "order o3: shipped"),
            line("toolu_5", "ok", "order o4: shipped"),
            line(
                "toolu_6",
                "blocked",
                "BLOCKED: over the limit: $60 spent of $100."
            ),
        ]
    );
}

#[test]
fn a_halt_in_a_reads_chain_leaves_the_sequential_answers() {
    let expected = json!({"role": "user", "content": [
        result("toolu_1", "order o1: shipped"),
        error("toolu_2", HALT_TEXT),
        error("toolu_3", NOT_RUN_HALT),
    ]});
    for max in [8, 1] {
        let world = Arc::new(World::default());
        let dir = TempDir::new("reads-halt");
        let d = builder(&world, &dir)
            .max_concurrent_reads(max)
            .build()
            .unwrap();
        let s = d.session(ctx());
        let message = assistant(
            json!([
                lookup("toolu_1", "o1", 1, None),
                lookup("toolu_2", "boom", 1, None),
                lookup("toolu_3", "o3", 1, None),
            ]),
            "tool_use",
        );
        let Err(RespondError::Call(CallError::Halt(halt))) =
            toolgate::block_on(s.respond(&message))
        else {
            panic!("a halt")
        };
        assert_eq!(halt.tool_use_id, "toolu_2", "max {max}");
        assert_eq!(halt.hook, "tests::order_policy", "max {max}");
        assert!(halt.ran_after().is_empty(), "max {max}");
        assert_eq!(
            serde_json::to_value(halt.answer()).unwrap(),
            expected,
            "max {max}"
        );
        assert_eq!(
            *world.finished.lock().unwrap(),
            strings(&["lookup o1"]),
            "max {max}"
        );
        assert_eq!(
            lines(&dir),
            [
                line("toolu_1", "ok", "order o1: shipped"),
                line("toolu_2", "hook_failed", HALT_TEXT),
                line("toolu_3", "not_run", NOT_RUN_HALT),
            ],
            "max {max}"
        );
    }
}

/// The inner dispatcher of the wrapped-caller test: `lookup_order` (a read) behind a policy hook
/// that, for order `boom`, fails after yielding once (so later blocks start meanwhile).
fn inner_dispatcher(world: &Arc<World>) -> Dispatcher {
    fn late_policy<'a>(
        _env: Env<'a>,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<Decision, HookError>> {
        Box::pin(async move {
            if call.input["order"] == "boom" {
                yield_once().await;
                yield_once().await;
                return Err(HookError::new("policy service down"));
            }
            Ok(Decision::Allow)
        })
    }
    Dispatcher::builder()
        .tool(
            ToolDef::new_async("lookup_order", "Looks an order up.", lookup_order)
                .effect(Effect::read()),
        )
        .pre_hook(PreHookDef::new_async("tests::late_policy", 1, late_policy))
        .state_arc(Arc::clone(world))
        .build()
        .unwrap()
}

#[test]
fn a_halt_after_a_later_read_started_names_the_blocks_that_ran() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("reads-ran-after");
    // Two at a time: blocks 1 and 2 start together; block 3 waits for a place.
    let d = Dispatcher::builder()
        .wrap(inner_dispatcher(&world))
        .max_concurrent_reads(2)
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let s = d.session(ctx());
    let message = assistant(
        json!([
            lookup("toolu_1", "boom", 0, None),
            lookup("toolu_2", "o2", 0, None),
            lookup("toolu_3", "o3", 0, None),
        ]),
        "tool_use",
    );
    let Err(RespondError::Call(CallError::Halt(halt))) = toolgate::block_on(s.respond(&message))
    else {
        panic!("a halt")
    };
    // Block 2 started while block 1's wrapped policy was still deciding; block 3 had not.
    assert_eq!(halt.ran_after(), ["toolu_2"]);
    assert_eq!(
        serde_json::to_value(halt.answer()).unwrap(),
        json!({"role": "user", "content": [
            error("toolu_1", HALT_TEXT),
            result("toolu_2", "order o2: shipped"),
            error("toolu_3", NOT_RUN_HALT),
        ]})
    );
    assert_eq!(*world.finished.lock().unwrap(), strings(&["lookup o2"]));
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "hook_failed", HALT_TEXT),
            line("toolu_2", "ok", "order o2: shipped"),
            line("toolu_3", "not_run", NOT_RUN_HALT),
        ]
    );
}

#[test]
fn an_ask_in_a_reads_chain_pauses_that_block_and_the_other_reads_run() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("reads-ask");
    let d = builder(&world, &dir).build().unwrap();
    let s = d.session(ctx());
    let message = assistant(
        json!([
            lookup("toolu_1", "o1", 2, None),
            lookup("toolu_2", "secret", 0, None),
            lookup("toolu_3", "o3", 2, None),
        ]),
        "tool_use",
    );
    let Reply::Pending(pending) = toolgate::block_on(s.respond(&message)).unwrap() else {
        panic!("a pending turn")
    };
    let shape: Vec<Value> = pending
        .blocks
        .iter()
        .map(|b| match b {
            PendingBlock::Answered { result, .. } => serde_json::to_value(result).unwrap(),
            PendingBlock::AwaitingApproval(a) => {
                json!({"awaiting": a.tool_use_id, "asked_by": a.asked_by})
            }
            _ => json!("other"),
        })
        .collect();
    assert_eq!(
        shape,
        [
            result("toolu_1", "order o1: shipped"),
            json!({"awaiting": "toolu_2", "asked_by": [
                {"hook": "tests::order_policy", "reason": "a person checks secret orders"}
            ]}),
            result("toolu_3", "order o3: shipped"),
        ]
    );
    assert_eq!(world.max_running.load(Ordering::SeqCst), 2);
    let decisions = Decisions::builder()
        .approve_any_input("toolu_2", "lead")
        .build()
        .unwrap();
    let answer = toolgate::block_on(s.resume(&pending, &decisions)).unwrap();
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"role": "user", "content": [
            result("toolu_1", "order o1: shipped"),
            result("toolu_2", "order secret: shipped"),
            result("toolu_3", "order o3: shipped"),
        ]})
    );
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "ok", "order o1: shipped"),
            line("toolu_2", "awaiting_approval", ""),
            line("toolu_3", "ok", "order o3: shipped"),
            line("toolu_2", "ok", "order secret: shipped"),
        ]
    );
}

#[test]
fn a_retried_message_of_reads_runs_nothing_twice() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("reads-retry");
    let s = builder(&world, &dir).build().unwrap().session(ctx());
    let message = crate::support::assistant_with_id(
        "msg_01",
        json!([
            lookup("toolu_1", "o1", 2, Some("o2")),
            lookup("toolu_2", "o2", 2, None),
        ]),
        "tool_use",
    );
    let first = toolgate::block_on(s.respond(&message)).unwrap();
    let again = toolgate::block_on(s.respond(&message)).unwrap();
    assert_eq!(again, first);
    assert_eq!(
        *world.finished.lock().unwrap(),
        strings(&["lookup o2", "lookup o1"])
    );
    let replay =
        |id: &str, content: &str| (id.to_owned(), "ok".to_owned(), content.to_owned(), true);
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "ok", "order o1: shipped"),
            line("toolu_2", "ok", "order o2: shipped"),
            replay("toolu_1", "order o1: shipped"),
            replay("toolu_2", "order o2: shipped"),
        ]
    );
    assert_eq!(s.end().calls, 2);
}

#[test]
fn a_respond_future_with_concurrent_reads_is_send() {
    fn send<T: Send>(t: T) -> T {
        t
    }
    let world = Arc::new(World::default());
    let dir = TempDir::new("reads-send");
    let s = builder(&world, &dir).build().unwrap().session(ctx());
    let message = assistant(
        json!([
            lookup("toolu_1", "o1", 2, None),
            lookup("toolu_2", "o2", 2, None),
        ]),
        "tool_use",
    );
    // A host's multi-threaded runtime can move the message's future between threads.
    let answer = answer_of(toolgate::block_on(send(s.respond(&message))).unwrap());
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"role": "user", "content": [
            result("toolu_1", "order o1: shipped"),
            result("toolu_2", "order o2: shipped"),
        ]})
    );
}

#[test]
fn approved_reads_resume_together_in_tool_use_order() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("reads-resume");
    let d = builder(&world, &dir).build().unwrap();
    let s = d.session(ctx());
    // Each waits until both run; the first finishes only after the second.
    let message = assistant(
        json!([
            lookup("toolu_1", "secret_a", 2, Some("secret_b")),
            lookup("toolu_2", "secret_b", 2, None),
        ]),
        "tool_use",
    );
    let Reply::Pending(pending) = toolgate::block_on(s.respond(&message)).unwrap() else {
        panic!("a pending turn")
    };
    assert_eq!(
        pending
            .awaiting()
            .map(|a| a.tool_use_id.as_str())
            .collect::<Vec<_>>(),
        ["toolu_1", "toolu_2"]
    );
    assert!(world.finished.lock().unwrap().is_empty());
    let decisions = Decisions::builder()
        .approve_any_input("toolu_1", "lead")
        .approve_any_input("toolu_2", "lead")
        .build()
        .unwrap();
    let answer = toolgate::block_on(s.resume(&pending, &decisions)).unwrap();
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"role": "user", "content": [
            result("toolu_1", "order secret_a: shipped"),
            result("toolu_2", "order secret_b: shipped"),
        ]})
    );
    assert_eq!(world.max_running.load(Ordering::SeqCst), 2);
    assert_eq!(
        *world.finished.lock().unwrap(),
        strings(&["lookup secret_b", "lookup secret_a"])
    );
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "awaiting_approval", ""),
            line("toolu_2", "awaiting_approval", ""),
            line("toolu_1", "ok", "order secret_a: shipped"),
            line("toolu_2", "ok", "order secret_b: shipped"),
        ]
    );
}
