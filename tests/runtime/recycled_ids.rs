//! A `tool_use` id that a later turn reuses is a new call: OpenAI-compatible servers (vLLM,
//! Kimi, gpt-oss) number a turn's calls, so `functions.get_time:0` comes again, with the same
//! input or another, in a later turn. The answer memory keeps each call under its turn, the
//! model response's `id`: the later turn's call runs, and a resend of either turn replays its
//! own answer, in this process or on another worker sharing the store. A message without its
//! response's `id` that reuses an id is refused, naming the id, and never answered with another
//! turn's result; so is a message beside `Session::call` (which has no turn) on one id. Two turns
//! paused on the same recycled first id are two pending turns, each resumed once.
//! (The other APIs' turns: `tests/providers/recycled_ids.rs`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    CallError, Dispatcher, HookContext, Message, Reply, RespondError, ToolResult, ToolUse,
    approval::{Approval, Decisions},
    audit::AuditLog,
    dispatch::ToolDef,
    store::{
        AnswerStore, CallKey, Claim, InputDigest, MemoryAnswerStore, MemoryPendingStore,
        PendingStore, Token, sqlite::SqliteStore,
    },
};

use crate::ask::{Lines, at_start, context, dispatcher, large_refund};
use crate::support::{TempDir, assistant, assistant_with_id, json_lines};

/// `get_time`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct Time {
    /// An IANA zone; UTC when absent.
    timezone: Option<String>,
}

/// A clock that moves five minutes at each run: every run answers another time, so a replay
/// (the same time) and a run (the next one) read apart.
fn clock_dispatcher(runs: &Arc<AtomicUsize>, dir: &TempDir) -> Dispatcher {
    let ran = Arc::clone(runs);
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "get_time",
            "Gets the current time.",
            move |_env, t: Time| {
                let n = ran.fetch_add(1, Ordering::SeqCst);
                let zone = t.timezone.unwrap_or_else(|| "UTC".to_owned());
                Ok(format!("12:{:02} {zone}", n * 5))
            },
        ))
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap()
}

fn ctx() -> HookContext {
    HookContext::builder("u_001", "sess_recycled").build()
}

/// One `get_time` call `id` with `input`.
fn get_time(id: &str, input: Value) -> Value {
    json!([{"type": "tool_use", "id": id, "name": "get_time", "input": input}])
}

/// The text of the one `tool_result` of an answer.
fn text(reply: Result<Reply, RespondError>) -> String {
    match reply {
        Ok(Reply::Answer(answer)) => {
            let results: Vec<&ToolResult> = answer.tool_results().collect();
            assert_eq!(results.len(), 1, "{answer:?}");
            results[0].content_text().into_owned()
        }
        other => panic!("expected an answer, got {other:?}"),
    }
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

fn line(id: &str, content: &str, replay: bool) -> (String, String, String, bool) {
    (id.into(), "ok".into(), content.into(), replay)
}

/// What `CallError::IdRecycled` says for `id`.
fn recycled_text(id: &str) -> String {
    format!(
        "tool_use {id:?} was used before in this session, and one of the two calls came \
         without its model response's id, so a resend of the same call cannot be told from a \
         later turn that reuses the id; nothing was run: pass each response as the API returned \
         it, with its `id`"
    )
}

/// Asserts `reply` is the refusal of recycled `id`, with its text.
fn assert_recycled(reply: Result<Reply, RespondError>, id: &str) {
    match reply {
        Err(RespondError::Call(e @ CallError::IdRecycled { .. })) => {
            assert!(matches!(&e, CallError::IdRecycled { tool_use_id } if tool_use_id == id));
            assert_eq!(e.to_string(), recycled_text(id));
        }
        other => panic!("expected the refusal of {id:?}, got {other:?}"),
    }
}

#[test]
fn a_later_message_that_reuses_an_id_with_the_same_input_runs_and_each_resend_replays_its_own() {
    let runs = Arc::new(AtomicUsize::new(0));
    let dir = TempDir::new("recycled-same");
    let s = clock_dispatcher(&runs, &dir).session(ctx());
    let id = "toolu_time_0";
    let first = assistant_with_id("msg_01A", get_time(id, json!({})), "tool_use");
    let later = assistant_with_id("msg_01B", get_time(id, json!({})), "tool_use");
    assert_eq!(text(toolgate::block_on(s.respond(&first))), "12:00 UTC");
    // The same call, the same empty input, a later turn: run, not the first turn's time.
    assert_eq!(text(toolgate::block_on(s.respond(&later))), "12:05 UTC");
    // A resend of either turn replays that turn's own answer.
    assert_eq!(text(toolgate::block_on(s.respond(&first))), "12:00 UTC");
    assert_eq!(text(toolgate::block_on(s.respond(&later))), "12:05 UTC");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        lines(&dir),
        [
            line(id, "12:00 UTC", false),
            line(id, "12:05 UTC", false),
            line(id, "12:00 UTC", true),
            line(id, "12:05 UTC", true),
        ]
    );
    assert_eq!(s.end().calls, 2);
}

#[test]
fn a_later_message_that_reuses_an_id_with_another_input_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let dir = TempDir::new("recycled-other");
    let s = clock_dispatcher(&runs, &dir).session(ctx());
    let id = "toolu_time_0";
    let first = assistant_with_id("msg_01A", get_time(id, json!({})), "tool_use");
    let oslo = json!({"timezone": "Europe/Oslo"});
    let later = assistant_with_id("msg_01B", get_time(id, oslo.clone()), "tool_use");
    assert_eq!(text(toolgate::block_on(s.respond(&first))), "12:00 UTC");
    assert_eq!(
        text(toolgate::block_on(s.respond(&later))),
        "12:05 Europe/Oslo"
    );
    assert_eq!(
        text(toolgate::block_on(s.respond(&later))),
        "12:05 Europe/Oslo"
    );
    // The same response with another input under the id is still a reused id.
    let edited = assistant_with_id("msg_01B", get_time(id, json!({})), "tool_use");
    assert!(matches!(
        toolgate::block_on(s.respond(&edited)),
        Err(RespondError::Call(CallError::IdReused { tool_use_id })) if tool_use_id == id
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        lines(&dir),
        [
            line(id, "12:00 UTC", false),
            line(id, "12:05 Europe/Oslo", false),
            line(id, "12:05 Europe/Oslo", true),
        ]
    );
}

#[test]
fn a_message_without_its_id_that_reuses_an_id_is_refused_naming_it_and_runs_nothing() {
    let runs = Arc::new(AtomicUsize::new(0));
    let dir = TempDir::new("recycled-unnamed");
    let s = clock_dispatcher(&runs, &dir).session(ctx());
    // Hand-made, without the response's `id`: it runs the first time.
    let bare = assistant(get_time("toolu_bare", json!({})), "tool_use");
    assert_eq!(text(toolgate::block_on(s.respond(&bare))), "12:00 UTC");
    // Again: a resend, or a later turn that reuses the id? Nothing tells, so it is refused,
    // never answered with the first one's time.
    assert_recycled(toolgate::block_on(s.respond(&bare)), "toolu_bare");
    let other = assistant(
        get_time("toolu_bare", json!({"timezone": "Asia/Tokyo"})),
        "tool_use",
    );
    assert_recycled(toolgate::block_on(s.respond(&other)), "toolu_bare");
    // With an id after one without, and without one after one with: the same.
    let named = assistant_with_id("msg_01C", get_time("toolu_bare", json!({})), "tool_use");
    assert_recycled(toolgate::block_on(s.respond(&named)), "toolu_bare");
    let named = assistant_with_id("msg_01D", get_time("toolu_named", json!({})), "tool_use");
    assert_eq!(text(toolgate::block_on(s.respond(&named))), "12:05 UTC");
    let stripped = named.request_turn();
    assert_recycled(toolgate::block_on(s.respond(&stripped)), "toolu_named");
    // An empty `id` is no id.
    let empty = assistant_with_id("", get_time("toolu_named", json!({})), "tool_use");
    assert_recycled(toolgate::block_on(s.respond(&empty)), "toolu_named");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A refused block is not audited (nothing ran, nothing was answered).
    assert_eq!(
        lines(&dir),
        [
            line("toolu_bare", "12:00 UTC", false),
            line("toolu_named", "12:05 UTC", false)
        ]
    );
}

#[test]
fn call_names_a_call_by_its_id_and_is_refused_beside_a_turn_on_one_id() {
    let runs = Arc::new(AtomicUsize::new(0));
    let dir = TempDir::new("recycled-call");
    let s = clock_dispatcher(&runs, &dir).session(ctx());
    let call = ToolUse::new("call_1", "get_time", json!({}));
    let first = toolgate::block_on(s.call(&call)).unwrap();
    assert_eq!(first, ToolResult::text("call_1", "12:00 UTC"));
    // `call` has no turn: its id names the call, and a retry replays.
    assert_eq!(toolgate::block_on(s.call(&call)).unwrap(), first);
    // A message that reuses it, and a call that reuses a message's id: refused.
    let message = assistant_with_id("msg_01A", get_time("call_1", json!({})), "tool_use");
    assert_recycled(toolgate::block_on(s.respond(&message)), "call_1");
    let message = assistant_with_id("msg_01B", get_time("toolu_1", json!({})), "tool_use");
    assert_eq!(text(toolgate::block_on(s.respond(&message))), "12:05 UTC");
    let e = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "get_time", json!({}))));
    let e = e.unwrap_err();
    assert_eq!(e.to_string(), recycled_text("toolu_1"));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn a_later_turn_waits_while_the_first_turns_call_with_the_id_is_in_progress() {
    let runs = Arc::new(AtomicUsize::new(0));
    let dir = TempDir::new("recycled-running");
    let store = Arc::new(MemoryAnswerStore::new());
    let s = clock_dispatcher(&runs, &dir).session_with_store(ctx(), store.clone());
    // The first turn's call is claimed (as a worker running it holds it) and not answered.
    let first = CallKey::in_turn("sess_recycled", "msg_01A", "toolu_time_0");
    let token = Token::draw();
    let claim = toolgate::block_on(store.claim(first, token, InputDigest([1; 32]), Duration::MAX));
    assert_eq!(claim.unwrap(), Claim::Claimed);
    let later = assistant_with_id("msg_01B", get_time("toolu_time_0", json!({})), "tool_use");
    let e = toolgate::block_on(s.respond(&later)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tool_use \"toolu_time_0\" is still being answered by an earlier attempt; nothing was \
         run twice: wait for it, then retry to get its answer"
    );
    // Once it is answered, the later turn's call runs as its own.
    let answer = ToolResult::text("toolu_time_0", "11:55 UTC");
    let answered = store.answered(first, token, toolgate::audit::Outcome::Ok, &answer);
    toolgate::block_on(answered).unwrap();
    assert_eq!(text(toolgate::block_on(s.respond(&later))), "12:00 UTC");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_resend_on_another_worker_sharing_the_store_replays_its_own_turn() {
    let runs = Arc::new(AtomicUsize::new(0));
    let dir = TempDir::new("recycled-workers");
    let store = Arc::new(SqliteStore::open(dir.join("agent.sqlite3")).unwrap());
    let d = clock_dispatcher(&runs, &dir);
    let first = assistant_with_id("msg_01A", get_time("toolu_time_0", json!({})), "tool_use");
    let later = assistant_with_id("msg_01B", get_time("toolu_time_0", json!({})), "tool_use");
    let a = d.session_with_store(ctx(), store.clone());
    assert_eq!(text(toolgate::block_on(a.respond(&first))), "12:00 UTC");
    assert_eq!(text(toolgate::block_on(a.respond(&later))), "12:05 UTC");
    a.end();
    // Another worker's session of the same conversation, on the same file.
    let b = d.session_with_store(
        ctx(),
        Arc::new(SqliteStore::open(dir.join("agent.sqlite3")).unwrap()),
    );
    assert_eq!(text(toolgate::block_on(b.respond(&later))), "12:05 UTC");
    assert_eq!(text(toolgate::block_on(b.respond(&first))), "12:00 UTC");
    let third = assistant_with_id("msg_01C", get_time("toolu_time_0", json!({})), "tool_use");
    assert_eq!(text(toolgate::block_on(b.respond(&third))), "12:10 UTC");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// A refund of 250.00 of `order` under the id `toolu_refund_0`, in the response `id`.
fn refund_message(id: &str, order: &str) -> Value {
    json!({"id": id, "role": "assistant", "stop_reason": "tool_use", "content": [
        {"type": "tool_use", "id": "toolu_refund_0", "name": "refund",
         "input": {"order_id": order, "amount_cents": 25_000}}]})
}

/// The same refund as a chat completion `id` whose call is `functions.refund:0`, as vLLM
/// numbers a turn's calls.
fn refund_completion(id: &str, order: &str) -> Value {
    let arguments = json!({"order_id": order, "amount_cents": 25_000}).to_string();
    json!({"id": id, "object": "chat.completion", "choices": [{
        "index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "functions.refund:0", "type": "function",
             "function": {"name": "refund", "arguments": arguments}}]}}]})
}

/// The turn's reply (Messages API when `chat` is false, else OpenAI Chat Completions).
fn respond(session: &toolgate::Session, chat: bool, turn: &Value) -> Reply<Value> {
    if chat {
        return match toolgate::block_on(session.respond_openai_choice(turn)).unwrap() {
            Reply::Answer(items) => Reply::Answer(Value::Array(items)),
            Reply::Pending(p) => Reply::Pending(p),
            other => panic!("unexpected reply {other:?}"),
        };
    }
    let message: Message = serde_json::from_value(turn.clone()).unwrap();
    match toolgate::block_on(session.respond(&message)).unwrap() {
        Reply::Answer(m) => Reply::Answer(serde_json::to_value(m).unwrap()),
        Reply::Pending(p) => Reply::Pending(p),
        other => panic!("unexpected reply {other:?}"),
    }
}

/// The text of the one result of an answer of either API, as JSON.
fn answer_text(answer: &Value) -> &str {
    match answer {
        Value::Array(items) => items[0]["content"].as_str().unwrap(),
        message => message["content"][0]["content"].as_str().unwrap(),
    }
}

#[test]
fn two_turns_paused_on_the_same_recycled_first_id_are_kept_apart_and_resumed_once_each() {
    for chat in [false, true] {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let pending = MemoryPendingStore::new();
        let session = d.session(context(at_start()));
        let (id, names) = match chat {
            false => ("toolu_refund_0", ["msg_P1", "msg_P2"]),
            true => ("functions.refund:0", ["chatcmpl-P1", "chatcmpl-P2"]),
        };
        let turns: Vec<Value> = names
            .iter()
            .zip(["o_1", "o_2"])
            .map(|(name, order)| match chat {
                false => refund_message(name, order),
                true => refund_completion(name, order),
            })
            .collect();
        for (turn, name) in turns.iter().zip(names) {
            let Reply::Pending(p) = respond(&session, chat, turn) else {
                panic!("the refund of {name} asks a person");
            };
            assert_eq!((p.turn_id.as_str(), p.turn.as_deref()), (name, Some(name)));
            toolgate::block_on(pending.put(&p)).unwrap();
        }
        let waiting = toolgate::block_on(pending.waiting("sess_ask")).unwrap();
        let kept: Vec<&str> = waiting.iter().map(|t| t.turn_id.as_str()).collect();
        assert_eq!(kept, names, "both pauses are kept");
        let approve = Decisions::builder()
            .decide(id, Approval::approve("lead"))
            .build()
            .unwrap();
        let mut answers = Vec::new();
        for name in [names[0], names[1], names[0], names[1]] {
            let resumed = toolgate::block_on(session.resume_from(&pending, name, &approve));
            let resumed = serde_json::to_value(resumed.unwrap()).unwrap();
            answers.push(answer_text(&resumed).to_owned());
        }
        let (o1, o2) = ("refunded 25000 on o_1", "refunded 25000 on o_2");
        assert_eq!(answers, [o1, o2, o1, o2], "{chat}");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "each turn's refund ran once"
        );
        // A resend of each turn after its resume replays its own answer.
        for (turn, expected) in turns.iter().zip([o1, o2]) {
            let Reply::Answer(answer) = respond(&session, chat, turn) else {
                panic!("a resend after the resume is answered");
            };
            assert_eq!(answer_text(&answer), expected);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        session.end();
    }
}

/// A store that keys calls by session and `tool_use` id only, as every store did before calls
/// had turns.
struct IgnoresTurns(MemoryAnswerStore);

impl AnswerStore for IgnoresTurns {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> toolgate::store::StoreFuture<'a, Result<Claim, toolgate::store::StoreError>> {
        let key = CallKey::new(key.session_id, key.tool_use_id);
        self.0.claim(key, token, digest, lease)
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: toolgate::audit::Outcome,
        result: &'a ToolResult,
    ) -> toolgate::store::StoreFuture<'a, Result<(), toolgate::store::StoreError>> {
        let key = CallKey::new(key.session_id, key.tool_use_id);
        self.0.answered(key, token, outcome, result)
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> toolgate::store::StoreFuture<'a, Result<(), toolgate::store::StoreError>> {
        let key = CallKey::new(key.session_id, key.tool_use_id);
        self.0.release(key, token, tool_started)
    }
}

#[test]
fn a_store_that_ignores_turns_fails_the_conformance_suite_at_the_later_turn() {
    let store = IgnoresTurns(MemoryAnswerStore::new());
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        toolgate::block_on(toolgate::store::conformance::answer_store(&store));
    }))
    .expect_err("a store that answers a later turn with the first turn's call is refused");
    let message = failed
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert!(
        message.contains("a later turn's call with the same id and input is a new call"),
        "{message}"
    );
}
