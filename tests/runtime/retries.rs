//! A retried message runs nothing twice: a session remembers every `tool_use` id it answered; a
//! retry is answered from that memory (a `replay: true` audit line, left out of the counts); a
//! concurrent duplicate is refused as in progress; an id reused with another input is refused; a
//! call cancelled after its tool started is not run again; a halted or `not_run` block was not
//! answered, so a retry runs it. The memory is bounded and behind a trait a host can implement.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    CallError, Decision, Dispatcher, HookContext, Reply, RespondError, ToolError, ToolResult,
    ToolUse,
    audit::{AuditLog, Outcome},
    dispatch::{BoxFuture, Env, HookError, PreHookDef, ToolDef},
    store::{
        AnswerStore, CallKey, Claim, InputDigest, MemoryAnswerStore, Remembered, StoreError,
        StoreFuture, Token,
    },
};

use crate::support::{
    HALT_TEXT, NOT_RUN_HALT, TempDir, assistant, assistant_with_id, json_lines, poll_once,
};

/// The text of an email.
#[derive(Deserialize, JsonSchema)]
struct Email {
    /// What to send.
    text: String,
}

/// What the tools did, and the switches the tests turn.
#[derive(Default)]
struct World {
    /// Emails sent, in order.
    sent: Mutex<Vec<String>>,
    /// Refund bodies entered.
    refunds_started: AtomicUsize,
    /// The policy service is down: the PreToolUse hook errors (the agent halts).
    policy_down: AtomicBool,
    /// Opens the gate the async hook and the async tool wait at.
    open: AtomicBool,
}

/// Waits until the world's gate is open (polled by hand with `poll_once`).
fn gate(world: Arc<World>) -> impl std::future::Future<Output = ()> + Send {
    std::future::poll_fn(move |_cx| {
        if world.open.load(Ordering::SeqCst) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
}

fn slow_refund(env: Env<'_>, e: Email) -> BoxFuture<'_, Result<String, ToolError>> {
    let world = env.state::<World>().unwrap().into_arc();
    Box::pin(async move {
        world.refunds_started.fetch_add(1, Ordering::SeqCst);
        gate(world).await;
        Ok(format!("refunded: {}", e.text))
    })
}

fn gated_check<'a>(env: Env<'a>, call: &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>> {
    let world = env.state::<World>().unwrap().into_arc();
    Box::pin(async move {
        if call.input["text"] == "gated" {
            gate(world).await;
        }
        Ok(Decision::Allow)
    })
}

fn dispatcher(world: &Arc<World>, dir: &TempDir) -> Dispatcher {
    let sent = Arc::clone(world);
    let policy = Arc::clone(world);
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "send_email",
            "Sends an email.",
            move |_env, e: Email| {
                sent.sent.lock().unwrap().push(e.text.clone());
                Ok(format!("sent: {}", e.text))
            },
        ))
        .tool(ToolDef::new_async(
            "slow_refund",
            "Refunds an order.",
            slow_refund,
        ))
        .pre_hook(
            PreHookDef::sync("tests::policy_service", 1, move |_env, _call| {
                if policy.policy_down.load(Ordering::SeqCst) {
                    Err(HookError::new("policy service down"))
                } else {
                    Ok(Decision::Allow)
                }
            })
            .tools(["send_email"]),
        )
        .pre_hook(
            PreHookDef::new_async("tests::gated_check", 2, gated_check).tools(["slow_refund"]),
        )
        .state_arc(Arc::clone(world))
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap()
}

fn ctx() -> HookContext {
    HookContext::builder("u_001", "sess_retries").build()
}

fn email(id: &str, text: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "send_email", "input": {"text": text}})
}

/// `(tool_use_id, outcome, content, replay)` of each audit line.
fn lines(dir: &TempDir) -> Vec<(String, String, String, bool)> {
    json_lines(&dir.join("audit_log.jsonl"))
        .into_iter()
        .map(|l| {
            (
                l["tool_use_id"].as_str().unwrap().to_owned(),
                l["outcome"].as_str().unwrap().to_owned(),
                l["content"].as_str().unwrap().to_owned(),
                l.get("replay") == Some(&json!(true)),
            )
        })
        .collect()
}

fn line(id: &str, outcome: &str, content: &str, replay: bool) -> (String, String, String, bool) {
    (id.into(), outcome.into(), content.into(), replay)
}

#[test]
fn a_retried_message_is_answered_from_memory_and_runs_nothing_twice() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-same");
    let s = dispatcher(&world, &dir).session(ctx());
    // The same response sent twice: its id, `msg_01`, says so.
    let message = assistant_with_id(
        "msg_01",
        json!([email("toolu_1", "invoice"), email("toolu_2", "receipt")]),
        "tool_use",
    );
    let first = toolgate::block_on(s.respond(&message)).unwrap();
    let again = toolgate::block_on(s.respond(&message)).unwrap();
    assert_eq!(again, first);
    let Reply::Answer(answer) = first else {
        panic!("an answer")
    };
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sent: invoice"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sent: receipt"}
        ]})
    );
    assert_eq!(*world.sent.lock().unwrap(), ["invoice", "receipt"]);
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "ok", "sent: invoice", false),
            line("toolu_2", "ok", "sent: receipt", false),
            line("toolu_1", "ok", "sent: invoice", true),
            line("toolu_2", "ok", "sent: receipt", true),
        ]
    );
    let replay = &json_lines(&dir.join("audit_log.jsonl"))[2];
    assert_eq!(
        replay["detail"],
        "replayed from the session's memory: this tool_use id was answered before, so nothing \
         ran again"
    );
    // Replays are left out of the counts.
    let summary = s.end();
    assert_eq!(summary.calls, 2);
    assert_eq!(
        summary.outcomes.into_iter().collect::<Vec<_>>(),
        [(Outcome::Ok, 2)]
    );
    assert_eq!(
        json_lines(&dir.join("session_summaries.jsonl"))[0]["calls"],
        2
    );
}

#[test]
fn after_a_halt_a_retry_replays_the_answered_blocks_and_runs_the_rest() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-halt");
    let d = dispatcher(&world, &dir);
    let s = d.session(ctx());
    let message = assistant_with_id(
        "msg_01",
        json!([
            {"type": "tool_use", "id": "toolu_r", "name": "slow_refund", "input": {"text": "o_1"}},
            email("toolu_a", "first"),
            email("toolu_b", "second")
        ]),
        "tool_use",
    );
    world.open.store(true, Ordering::SeqCst);
    world.policy_down.store(true, Ordering::SeqCst);
    let Err(RespondError::Call(CallError::Halt(halt))) = toolgate::block_on(s.respond(&message))
    else {
        panic!("the policy service is down: a halt");
    };
    assert_eq!(halt.tool_use_id, "toolu_a");
    let texts: Vec<String> = halt
        .answer()
        .tool_results()
        .map(|r| r.content_text().into_owned())
        .collect();
    assert_eq!(texts, ["refunded: o_1", HALT_TEXT, NOT_RUN_HALT]);
    // The policy service is back: the host retries the message.
    world.policy_down.store(false, Ordering::SeqCst);
    let Reply::Answer(answer) = toolgate::block_on(s.respond(&message)).unwrap() else {
        panic!("an answer");
    };
    let texts: Vec<String> = answer
        .tool_results()
        .map(|r| r.content_text().into_owned())
        .collect();
    assert_eq!(texts, ["refunded: o_1", "sent: first", "sent: second"]);
    assert_eq!(world.refunds_started.load(Ordering::SeqCst), 1);
    assert_eq!(*world.sent.lock().unwrap(), ["first", "second"]);
    assert_eq!(
        lines(&dir),
        [
            line("toolu_r", "ok", "refunded: o_1", false),
            line("toolu_a", "hook_failed", HALT_TEXT, false),
            line("toolu_b", "not_run", NOT_RUN_HALT, false),
            line("toolu_r", "ok", "refunded: o_1", true),
            line("toolu_a", "ok", "sent: first", false),
            line("toolu_b", "ok", "sent: second", false),
        ]
    );
    let summary = s.end();
    assert_eq!(summary.calls, 5);
    assert_eq!(
        summary.outcomes.into_iter().collect::<Vec<_>>(),
        [
            (Outcome::Ok, 3),
            (Outcome::HookFailed, 1),
            (Outcome::NotRun, 1)
        ]
    );
}

#[test]
fn an_id_reused_with_another_input_is_refused_and_nothing_runs() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-reused");
    let s = dispatcher(&world, &dir).session(ctx());
    let first = ToolUse::new("toolu_1", "send_email", json!({"text": "invoice"}));
    assert_eq!(
        toolgate::block_on(s.call(&first)).unwrap(),
        ToolResult::text("toolu_1", "sent: invoice")
    );
    // Same fields, another order: another JSON text, another input.
    for input in [
        json!({"text": "refund 500"}),
        json!({"text": "invoice", "cc": "x"}),
    ] {
        let other = ToolUse::new("toolu_1", "send_email", input);
        let err = toolgate::block_on(s.call(&other)).unwrap_err();
        assert!(matches!(&err, CallError::IdReused { tool_use_id } if tool_use_id == "toolu_1"));
        assert_eq!(
            err.to_string(),
            "tool_use \"toolu_1\" was already used in this session with another input; a \
             tool_use id names one call, so nothing was run"
        );
    }
    // Through respond: the same response (`msg_01`) sent again with another input is refused
    // at that block.
    let message = assistant_with_id("msg_01", json!([email("toolu_9", "invoice")]), "tool_use");
    toolgate::block_on(s.respond(&message)).unwrap();
    let message = assistant_with_id(
        "msg_01",
        json!([email("toolu_9", "refund 500")]),
        "tool_use",
    );
    let err = toolgate::block_on(s.respond(&message)).unwrap_err();
    assert!(
        matches!(&err, RespondError::Call(CallError::IdReused { tool_use_id })
            if tool_use_id == "toolu_9"),
        "{err}"
    );
    assert_eq!(*world.sent.lock().unwrap(), ["invoice", "invoice"]);
    assert_eq!(
        lines(&dir),
        [
            line("toolu_1", "ok", "sent: invoice", false),
            line("toolu_9", "ok", "sent: invoice", false)
        ]
    );
}

#[test]
fn a_concurrent_duplicate_is_refused_as_in_progress_then_replayed() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-race");
    let s = dispatcher(&world, &dir).session(ctx());
    let call = ToolUse::new("toolu_r", "slow_refund", json!({"text": "o_1"}));
    let mut first = pin!(s.call(&call));
    assert!(
        poll_once(first.as_mut()).is_none(),
        "the tool waits at the gate"
    );
    assert_eq!(world.refunds_started.load(Ordering::SeqCst), 1);
    // The host times out on its side and retries while the first attempt runs.
    let err = toolgate::block_on(s.call(&call)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool_use \"toolu_r\" is still being answered by an earlier attempt; nothing was run \
         twice: wait for it, then retry to get its answer"
    );
    // A message that reuses the id, from a call that had no response id: nothing tells a
    // resend from a later turn's call, so it is refused (ARCHITECTURE.md, "Ids and retries").
    let message = assistant_with_id(
        "msg_01",
        json!([{"type": "tool_use", "id": "toolu_r", "name": "slow_refund", "input": {"text": "o_1"}}]),
        "tool_use",
    );
    assert!(matches!(
        toolgate::block_on(s.respond(&message)),
        Err(RespondError::Call(CallError::IdRecycled { tool_use_id })) if tool_use_id == "toolu_r"
    ));
    world.open.store(true, Ordering::SeqCst);
    let done = poll_once(first.as_mut()).expect("the gate is open");
    assert_eq!(done.unwrap(), ToolResult::text("toolu_r", "refunded: o_1"));
    assert_eq!(
        toolgate::block_on(s.call(&call)).unwrap(),
        ToolResult::text("toolu_r", "refunded: o_1")
    );
    assert_eq!(world.refunds_started.load(Ordering::SeqCst), 1);
    assert_eq!(
        lines(&dir),
        [
            line("toolu_r", "ok", "refunded: o_1", false),
            line("toolu_r", "ok", "refunded: o_1", true),
        ]
    );
}

#[test]
fn a_call_cancelled_after_its_tool_started_is_not_run_again() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-cancelled");
    let s = dispatcher(&world, &dir).session(ctx());
    let call = ToolUse::new("toolu_r", "slow_refund", json!({"text": "o_1"}));
    {
        let mut fut = pin!(s.call(&call));
        assert!(poll_once(fut.as_mut()).is_none());
    } // the host gave up on it while the tool ran
    world.open.store(true, Ordering::SeqCst);
    let text = "Not run: this call was interrupted earlier while the tool ran, so it may or may \
                not have taken effect, and it is not run again. Check whether it took effect \
                before making the call again.";
    assert_eq!(
        toolgate::block_on(s.call(&call)).unwrap(),
        ToolResult::error("toolu_r", text)
    );
    assert_eq!(world.refunds_started.load(Ordering::SeqCst), 1);
    assert_eq!(
        lines(&dir),
        [
            line("toolu_r", "cancelled", "", false),
            line("toolu_r", "not_run", text, true),
        ]
    );
    let summary = s.end();
    assert_eq!(summary.calls, 1);
    assert_eq!(summary.outcomes.get(&Outcome::Cancelled), Some(&1));
}

#[test]
fn a_call_cancelled_before_its_tool_started_runs_on_retry() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-unstarted");
    let s = dispatcher(&world, &dir).session(ctx());
    let call = ToolUse::new("toolu_g", "slow_refund", json!({"text": "gated"}));
    {
        let mut fut = pin!(s.call(&call));
        assert!(
            poll_once(fut.as_mut()).is_none(),
            "the hook waits at the gate"
        );
    }
    assert_eq!(world.refunds_started.load(Ordering::SeqCst), 0);
    world.open.store(true, Ordering::SeqCst);
    assert_eq!(
        toolgate::block_on(s.call(&call)).unwrap(),
        ToolResult::text("toolu_g", "refunded: gated")
    );
    assert_eq!(world.refunds_started.load(Ordering::SeqCst), 1);
    assert_eq!(
        lines(&dir),
        [
            line("toolu_g", "cancelled", "", false),
            line("toolu_g", "ok", "refunded: gated", false),
        ]
    );
}

#[test]
fn blocks_not_run_at_max_tokens_run_on_a_retry_that_is_not_cut() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-max-tokens");
    let s = dispatcher(&world, &dir).session(ctx());
    let blocks = json!([email("toolu_1", "invoice")]);
    let cut = assistant(blocks.clone(), "max_tokens");
    assert!(matches!(
        toolgate::block_on(s.respond(&cut)),
        Err(RespondError::MaxTokens { tool_uses: 1 })
    ));
    let whole = assistant(blocks, "tool_use");
    assert!(matches!(
        toolgate::block_on(s.respond(&whole)),
        Ok(Reply::Answer(_))
    ));
    assert_eq!(*world.sent.lock().unwrap(), ["invoice"]);
}

#[test]
fn the_memory_forgets_oldest_first_past_its_caps() {
    let store = Arc::new(MemoryAnswerStore::with_caps(2, 1 << 20));
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-cap");
    let d = dispatcher(&world, &dir);
    let s = d.session_with_store(ctx(), store.clone());
    for i in 1..=3 {
        let call = ToolUse::new(format!("toolu_{i}"), "send_email", json!({"text": "x"}));
        toolgate::block_on(s.call(&call)).unwrap();
    }
    assert_eq!(store.len(), 2);
    let key = |id| CallKey::new("sess_retries", id);
    assert_eq!(store.get(key("toolu_1")), None);
    assert!(matches!(
        store.get(key("toolu_3")),
        Some(Remembered::Answered { outcome: Outcome::Ok, result, .. })
            if result == ToolResult::text("toolu_3", "sent: x")
    ));
    // Forgotten: a retry of the oldest call runs it again (keep the cap above what a retry
    // reaches back to), and its answer evicts `toolu_2`; `toolu_3` is still remembered.
    for i in [1, 3] {
        let call = ToolUse::new(format!("toolu_{i}"), "send_email", json!({"text": "x"}));
        toolgate::block_on(s.call(&call)).unwrap();
    }
    assert_eq!(world.sent.lock().unwrap().len(), 4);

    // The byte cap: each entry counts its session id, its tool_use id, its content and the
    // overhead.
    let per_entry = "sess_retries".len()
        + "toolu_1".len()
        + "sent: x".len()
        + MemoryAnswerStore::ENTRY_OVERHEAD;
    let store = Arc::new(MemoryAnswerStore::with_caps(100, 2 * per_entry + 1));
    let s = d.session_with_store(ctx(), store.clone());
    for i in 1..=4 {
        let call = ToolUse::new(format!("toolu_{i}"), "send_email", json!({"text": "x"}));
        toolgate::block_on(s.call(&call)).unwrap();
    }
    assert_eq!(store.len(), 2);
    assert_eq!(store.get(key("toolu_2")), None);
    assert!(store.get(key("toolu_3")).is_some());
}

/// A host's store: the in-memory one behind a switch that makes the database "go down".
struct HostStore {
    inner: MemoryAnswerStore,
    down: AtomicBool,
    claims: AtomicUsize,
}

impl AnswerStore for HostStore {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return StoreFuture::ready(Err(StoreError::new(
                toolgate::store::StoreErrorKind::Unavailable,
                "connection refused (db-7:5432)",
            )));
        }
        // A real database answers later: exercise the boxed path.
        let claim = self.inner.claim(key, token, digest, lease);
        StoreFuture::boxed(claim)
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.inner.answered(key, token, outcome, result)
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.inner.release(key, token, tool_started)
    }

    fn abandon(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        self.inner.abandon(key, token, tool_started)
    }
}

#[test]
fn a_host_store_is_used_and_a_failing_one_runs_nothing() {
    let world = Arc::new(World::default());
    let dir = TempDir::new("retry-host-store");
    let store = Arc::new(HostStore {
        inner: MemoryAnswerStore::new(),
        down: AtomicBool::new(false),
        claims: AtomicUsize::new(0),
    });
    let d = dispatcher(&world, &dir);
    let s = d.session_with_store(ctx(), store.clone());
    let call = ToolUse::new("toolu_1", "send_email", json!({"text": "invoice"}));
    toolgate::block_on(s.call(&call)).unwrap();
    // Another session (another process) on the same store: the answer is remembered there.
    let other = d.session_with_store(ctx(), store.clone());
    assert_eq!(
        toolgate::block_on(other.call(&call)).unwrap(),
        ToolResult::text("toolu_1", "sent: invoice")
    );
    assert_eq!(store.claims.load(Ordering::SeqCst), 2);
    store.down.store(true, Ordering::SeqCst);
    let next = ToolUse::new("toolu_2", "send_email", json!({"text": "receipt"}));
    let err = toolgate::block_on(s.call(&next)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool_use \"toolu_2\" was not run: the answer store failed: connection refused \
         (db-7:5432)"
    );
    assert_eq!(*world.sent.lock().unwrap(), ["invoice"]);
}

#[test]
fn the_input_digest_is_the_sha256_of_the_json_text_in_received_key_order() {
    let ab: Value = serde_json::from_str(r#"{"a":1,"b":[true,null,"x"]}"#).unwrap();
    let ba: Value = serde_json::from_str(r#"{"b":[true,null,"x"],"a":1}"#).unwrap();
    // `printf '%s' '{"a":1,"b":[true,null,"x"]}' | sha256sum`
    assert_eq!(
        InputDigest::of(&ab, 32).to_string(),
        "eca8cfb31ab74533e1eb2f4c74d2d55dfe3c79ac704787e54be8647ea7777eb1"
    );
    assert_ne!(InputDigest::of(&ab, 32), InputDigest::of(&ba, 32));
    // Past the depth bound, the input is not walked: one marker digest per bound.
    let deep = json!({"a": {"b": {"c": {}}}});
    let deeper = json!({"a": {"b": {"c": {"d": 1}}}});
    // `printf '%s' '[input deeper than 3 levels]' | sha256sum`
    assert_eq!(
        InputDigest::of(&deeper, 3).to_string(),
        "850e5ba6ce58c0307102764370bfa18d1b61c6d87e0969ce66d09b82d7bb747b"
    );
    assert_eq!(InputDigest::of(&deep, 3), InputDigest::of(&deeper, 3));
    assert_ne!(InputDigest::of(&deep, 4), InputDigest::of(&deeper, 4));
}
