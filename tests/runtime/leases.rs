//! Claims kept alive while their calls run, on a store two sessions share (as two workers
//! would): a sync tool and an async tool held five times their lease are never interrupted, a
//! retry meanwhile is told they are in progress, then replays their one answer; a claim whose
//! renewals fail (a store that holds nothing) lapses, a retry answers it interrupted, and the
//! late answer is refused: the host gets the store's answer, and the audit trail has one final
//! line for the call. The same across real processes, SQLite files and PostgreSQL:
//! `tests/stores/sqlite.rs`, `tests/postgres/leases.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::json;
use toolgate::dispatch::{BoxFuture, Env, ToolDef};
use toolgate::store::{
    AnswerStore, CallKey, Claim, Hold, InputDigest, MemoryAnswerStore, StoreError, StoreFuture,
    Token,
};
use toolgate::{CallError, Dispatcher, HookContext, ToolError, ToolResult, ToolUse};

use crate::ask::Lines;

/// The lease of every claim here: the tools run five of them and more.
const LEASE: Duration = Duration::from_millis(100);

/// What the model reads for a call interrupted earlier.
const NOT_RUN_AGAIN: &str = "Not run: this call was interrupted earlier while the tool ran, so it \
     may or may not have taken effect, and it is not run again. Check whether it took effect \
     before making the call again.";

/// A gate the tools wait at until the test opens it, counting their runs.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    runs: AtomicUsize,
}

impl Gate {
    fn wait(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
}

/// The async tool: waits for the gate, opened on another thread.
fn refund_async(env: Env<'_>, r: Refund) -> BoxFuture<'_, Result<String, ToolError>> {
    let gate = env.state::<Arc<Gate>>().map(|g| Arc::clone(&g));
    Box::pin(async move {
        let gate = gate.map_err(ToolError::internal)?;
        let (tx, rx) = futures_channel();
        std::thread::spawn(move || {
            gate.wait();
            tx();
        });
        rx.await;
        Ok(format!("refunded {}", r.order_id))
    })
}

/// `refund_sync` blocks its thread at the gate; `refund_async` waits for it on another thread.
fn dispatcher(gate: &Arc<Gate>, lines: &Lines) -> Dispatcher {
    let sync_gate = Arc::clone(gate);
    Dispatcher::builder()
        .tool(
            ToolDef::sync("refund_sync", "Refunds.", move |_env, r: Refund| {
                sync_gate.wait();
                Ok(format!("refunded {}", r.order_id))
            })
            .unguarded("the test's own tool"),
        )
        .tool(
            ToolDef::new_async("refund_async", "Refunds.", refund_async)
                .unguarded("the test's own tool"),
        )
        .state(Arc::clone(gate))
        .audit_log(
            toolgate::audit::AuditLog::builder()
                .sink(lines.clone())
                .build()
                .unwrap(),
        )
        .claim_lease(LEASE)
        .build()
        .unwrap()
}

/// A one-shot signal from a thread to a future: the sender, and a future that is ready once it
/// was called (polled again by a timer, as the dispatcher's default timer needs no runtime).
fn futures_channel() -> (impl FnOnce() + Send, impl std::future::Future<Output = ()>) {
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let set = Arc::clone(&done);
    let wait = async move {
        while !done.load(Ordering::SeqCst) {
            futures_timer::Delay::new(Duration::from_millis(2)).await;
        }
    };
    (move || set.store(true, Ordering::SeqCst), wait)
}

fn ctx() -> HookContext {
    HookContext::builder("u_1", "sess_leases").build()
}

/// Runs `call` in one session while another session on the same store retries it until the
/// tool has been running five leases: every retry meanwhile is told it is in progress; then
/// the first answers and the retry replays that answer.
fn held_past_its_lease(tool: &str) {
    let gate = Arc::new(Gate::default());
    let lines = Lines::default();
    let d = dispatcher(&gate, &lines);
    let store: Arc<dyn AnswerStore> = Arc::new(MemoryAnswerStore::new());
    let call = ToolUse::new("toolu_1", tool, json!({"order_id": "o_1"}));
    let answer = ToolResult::text("toolu_1", "refunded o_1");
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let session = d.session_with_store(ctx(), Arc::clone(&store));
            toolgate::block_on(session.call(&call))
        });
        let retry = d.session_with_store(ctx(), Arc::clone(&store));
        while gate.runs() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        for _ in 0..5 {
            std::thread::sleep(LEASE);
            let e = toolgate::block_on(retry.call(&call)).unwrap_err();
            assert!(
                matches!(e, CallError::InProgress { .. }),
                "a retry while the held call runs, past its lease: {e}"
            );
        }
        gate.open();
        assert_eq!(first.join().unwrap().unwrap(), answer, "answered once");
        assert_eq!(
            toolgate::block_on(retry.call(&call)).unwrap(),
            answer,
            "the retry replays it"
        );
    });
    assert_eq!(gate.runs(), 1, "the tool ran once");
    let lines = lines.take();
    let finals: Vec<_> = lines.iter().filter(|l| l.get("replay").is_none()).collect();
    assert_eq!(finals.len(), 1, "{lines:?}");
    assert_eq!(finals[0]["outcome"], "ok");
    assert_eq!(
        finals[0].get("lease"),
        None,
        "a store that keeps its holds in this process renews nothing"
    );
    let stats = d.lease_stats();
    assert_eq!(
        (
            stats.held,
            stats.renewals,
            stats.renewals_failed,
            stats.fenced
        ),
        (1, 0, 0, 0)
    );
    assert_eq!(stats.claim_lease, LEASE);
    assert_eq!(stats.renew_every, LEASE / 3);
}

#[test]
fn a_sync_tool_held_five_leases_is_never_interrupted_and_answered_once() {
    held_past_its_lease("refund_sync");
}

#[test]
fn an_async_tool_held_five_leases_is_never_interrupted_and_answered_once() {
    held_past_its_lease("refund_async");
}

/// A store that says it renews and holds nothing: every renewal of its claims "fails" at once,
/// as a worker cut off from its database.
struct HoldsNothing(MemoryAnswerStore);

impl AnswerStore for HoldsNothing {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        self.0.claim(key, token, digest, lease)
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: toolgate::audit::Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.0.answered(key, token, outcome, result)
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.0.release(key, token, tool_started)
    }

    fn renews(&self) -> bool {
        true
    }

    fn hold(&self, _key: CallKey<'_>, _token: Token, _lease: Duration) -> Option<Hold> {
        Some(Hold::kept(|| {}))
    }
}

#[test]
fn a_claim_not_kept_lapses_a_retry_answers_it_interrupted_and_the_late_answer_is_refused() {
    let gate = Arc::new(Gate::default());
    let lines = Lines::default();
    let d = dispatcher(&gate, &lines);
    let store: Arc<dyn AnswerStore> = Arc::new(HoldsNothing(MemoryAnswerStore::new()));
    let call = ToolUse::new("toolu_1", "refund_sync", json!({"order_id": "o_1"}));
    let interrupted = ToolResult::error("toolu_1", NOT_RUN_AGAIN);
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let session = d.session_with_store(ctx(), Arc::clone(&store));
            toolgate::block_on(session.call(&call))
        });
        let retry = d.session_with_store(ctx(), Arc::clone(&store));
        while gate.runs() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(LEASE * 3);
        assert_eq!(
            toolgate::block_on(retry.call(&call)).unwrap(),
            interrupted,
            "past the lease, a retry answers the call interrupted"
        );
        gate.open();
        assert_eq!(
            first.join().unwrap().unwrap(),
            interrupted,
            "the late answer is refused: the host gets the store's answer, never the tool's"
        );
    });
    assert_eq!(gate.runs(), 1, "the tool ran once");
    let lines = lines.take();
    let finals: Vec<_> = lines.iter().filter(|l| l.get("replay").is_none()).collect();
    assert_eq!(finals.len(), 1, "one final line for the call: {lines:?}");
    let line = finals[0];
    assert_eq!(line["outcome"], "not_run");
    assert_eq!(line["content"], NOT_RUN_AGAIN);
    assert_eq!(
        line["detail"],
        "the tool ran (outcome ok), but the store refused it: tool_use \"toolu_1\" of session \
         \"sess_leases\" is no longer held by this claim (the store holds it as interrupted: \
         this claim's lease ran out and a retry took the call over), so its answer is not \
         recorded: the store holds the call as interrupted, and that is its answer, here as to \
         every retry; the tool's answer was \"refunded o_1\""
    );
    assert_eq!(
        line["lease"],
        json!({"lease_ms": 100, "renew_every_ms": 33, "renewals": 0, "renewals_failed": 0})
    );
    let stats = d.lease_stats();
    assert_eq!((stats.held, stats.fenced), (1, 1));
}
