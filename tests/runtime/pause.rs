//! The durable pause: with no approver, `respond` answers the blocks that need no approval and
//! returns a `PendingTurn`; it serializes, is read back in a fresh dispatcher (as a later process
//! would) and resumed with a person's decisions into the complete user message. Every refusal of a
//! resume, the expiry, the chain run again at resume, and the session's answer memory (a retry
//! while paused, a resume twice). Their neighbours: a turn cut short or edited by hand, decisions
//! that never cross between two waiting calls or onto the same input asked again, an input with
//! its keys reordered, a rule changed under the same path.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use crate::ask::{Lines, at_start, dispatcher, handling_fee, large_refund};
use crate::support;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, Reply, ToolResult, ToolUse,
    approval::{Approval, Decisions, PendingTurn, ResumeError, Resumed, TurnFormat},
    dispatch::PreHookDef,
    provider::{gemini, openai, openai_responses},
};

fn ctx(session: &str, user: &str, at: SystemTime) -> HookContext {
    HookContext::builder(user, session)
        .clock(toolgate::dispatch::Clock::fixed(at))
        .build()
}

/// Every API whose whole turns pause for a person: each test runs for each.
const FORMATS: [TurnFormat; 4] = [
    TurnFormat::AnthropicMessages,
    TurnFormat::OpenaiChat,
    TurnFormat::OpenaiResponses,
    TurnFormat::Gemini,
];

/// Two refunds in one turn of `format`: `toolu_1` (900 cents, no approval needed) and `toolu_2`
/// (25 000 cents, a person must approve); each API's own shape, the same ids, the response's
/// id as [`turn_name`] gives it.
fn turn(format: TurnFormat) -> Value {
    let args = |order: &str, cents: u32| json!({"order_id": order, "amount_cents": cents});
    let calls = [
        ("toolu_1", args("o_1", 900)),
        ("toolu_2", args("o_2", 25000)),
    ];
    match format {
        TurnFormat::AnthropicMessages => json!({
            "id": "msg_1", "role": "assistant", "stop_reason": "tool_use",
            "content": calls.iter().map(|(id, input)| json!(
                {"type": "tool_use", "id": id, "name": "refund", "input": input}
            )).collect::<Vec<_>>()
        }),
        TurnFormat::OpenaiChat => json!({"id": "chatcmpl-1", "choices": [{
            "index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null,
                "tool_calls": calls.iter().map(|(id, input)| json!(
                    {"id": id, "type": "function",
                     "function": {"name": "refund", "arguments": input.to_string()}}
                )).collect::<Vec<_>>()}
        }]}),
        TurnFormat::OpenaiResponses => json!({
            "id": "resp_1", "status": "completed",
            "output": calls.iter().map(|(id, input)| json!(
                {"type": "function_call", "id": format!("fc_{id}"), "call_id": id,
                 "name": "refund", "arguments": input.to_string(), "status": "completed"}
            )).collect::<Vec<_>>()
        }),
        TurnFormat::Gemini => json!({
            "finishReason": "STOP",
            "content": {"role": "model",
                "parts": gemini_calls(&calls)}
        }),
        other => panic!("no turn for {other:?}"),
    }
}

/// The id of the model response of [`turn`]'s `format`: the turn's name when it pauses.
fn turn_name(format: TurnFormat) -> &'static str {
    match format {
        TurnFormat::AnthropicMessages => "msg_1",
        TurnFormat::OpenaiChat => "chatcmpl-1",
        TurnFormat::OpenaiResponses => "resp_1",
        TurnFormat::Gemini => "gemini-0",
        other => panic!("no turn for {other:?}"),
    }
}

/// Gemini's `functionCall` parts of `calls`.
fn gemini_calls(calls: &[(&str, Value)]) -> Vec<Value> {
    calls
        .iter()
        .map(|(id, input)| json!({"functionCall": {"id": id, "name": "refund", "args": input}}))
        .collect()
}

/// The turn's reply, its answer (when it has one) as JSON.
fn respond(format: TurnFormat, session: &toolgate::Session) -> Reply<Value> {
    let turn = turn(format);
    let reply = match format {
        TurnFormat::AnthropicMessages => {
            let message = serde_json::from_value(turn).unwrap();
            let reply = toolgate::block_on(session.respond(&message)).unwrap();
            return match reply {
                Reply::Answer(m) => Reply::Answer(serde_json::to_value(m).unwrap()),
                Reply::Pending(p) => Reply::Pending(p),
                other => panic!("unexpected reply {other:?}"),
            };
        }
        TurnFormat::OpenaiChat => toolgate::block_on(session.respond_openai_choice(&turn)),
        TurnFormat::OpenaiResponses => toolgate::block_on(session.respond_openai_response(&turn)),
        TurnFormat::Gemini => toolgate::block_on(session.respond_gemini_candidate(&turn, 0)),
        other => panic!("no turn for {other:?}"),
    };
    match reply.unwrap() {
        Reply::Answer(items) => Reply::Answer(Value::Array(items)),
        Reply::Pending(p) => Reply::Pending(p),
        other => panic!("unexpected reply {other:?}"),
    }
}

/// What `format` answers for `results` (Messages API `tool_result` blocks as JSON): the user
/// message for the Messages API, else the API's items, made by the provider's own functions.
fn expected(format: TurnFormat, results: Value) -> Value {
    let results: Vec<ToolResult> = serde_json::from_value(results).unwrap();
    let calls = gemini_calls(&[("toolu_1", json!({})), ("toolu_2", json!({}))]);
    match format {
        TurnFormat::AnthropicMessages => json!({"role": "user", "content": results}),
        TurnFormat::OpenaiChat => {
            json!(results.iter().map(openai::tool_message).collect::<Vec<_>>())
        }
        TurnFormat::OpenaiResponses => json!(
            results
                .iter()
                .map(openai_responses::function_call_output)
                .collect::<Vec<_>>()
        ),
        TurnFormat::Gemini => json!(
            results
                .iter()
                .zip(&calls)
                .map(|(r, c)| gemini::function_response(c, r))
                .collect::<Vec<_>>()
        ),
        other => panic!("no answer for {other:?}"),
    }
}

/// A resumed turn's answer as JSON.
fn answered(resumed: Resumed) -> Value {
    serde_json::to_value(resumed).unwrap()
}

const LARGE_ASK: &str = "refunds above 20000 cents need a person's approval";

/// The digest of `{"order_id":"o_2","amount_cents":25000}`.
fn digest_o2() -> String {
    support::sha256_hex(br#"{"order_id":"o_2","amount_cents":25000}"#)
}

/// The fingerprint of a dispatcher with the refund tool and `hooks` (path, order) on it,
/// computed from its documented text.
fn fingerprint(d: &Dispatcher, hooks: &[(&str, i64)]) -> String {
    let mut text = String::from("toolgate dispatcher fingerprint 1\n");
    text.push_str(&format!(
        "tool\trefund\t{}\n",
        d.canonical_schema("refund").unwrap()
    ));
    for (path, order) in hooks {
        text.push_str(&format!("pre_hook\t{order}\t{path}\n"));
    }
    support::sha256_hex(text.as_bytes())
}

fn pause(d: &Dispatcher, format: TurnFormat) -> PendingTurn {
    let session = d.session(ctx("sess_ask", "u_001", at_start()));
    let reply = respond(format, &session);
    session.end();
    match reply {
        Reply::Pending(p) => p,
        other => panic!("expected a pending turn, got {other:?}"),
    }
}

fn decisions(list: Vec<(&str, Approval)>) -> Decisions {
    list.into_iter()
        .fold(Decisions::builder(), |b, (id, a)| b.decide(id, a))
        .build()
        .unwrap()
}

/// Resumes `pending` in a fresh session of `d` at `at`.
fn resume(
    d: &Dispatcher,
    pending: &PendingTurn,
    at: SystemTime,
    list: Vec<(&str, Approval)>,
) -> Result<Value, ResumeError> {
    let session = d.session(ctx("sess_ask", "u_001", at));
    let r = toolgate::block_on(session.resume(pending, &decisions(list)));
    session.end();
    r.map(answered)
}

/// Block `i` of an answer of `format` (a user message's `content[i]`, else `items[i]`).
fn block(format: TurnFormat, answer: &Value, i: usize) -> Value {
    match format {
        TurnFormat::AnthropicMessages => answer["content"][i].clone(),
        _ => answer[i].clone(),
    }
}

fn line(id: &str, input: Value, at: &str, rest: Value) -> Value {
    let mut l = json!({
        "ts": at, "session_id": "sess_ask", "user_id": "u_001",
        "tool_use_id": id, "tool": "refund", "input": input, "duration_us": 0,
    });
    for (k, v) in rest.as_object().unwrap() {
        l[k] = v.clone();
    }
    l
}

fn later(secs: u64) -> SystemTime {
    at_start() + Duration::from_secs(secs)
}

/// What a paused turn of `format` is as JSON: the Messages API's, with its `turn_format`, and
/// for Gemini each block's call as Gemini sent it.
fn stored(format: TurnFormat, fp: &str) -> Value {
    let mut blocks = json!([
        {"state": "answered", "result": {"type": "tool_result", "tool_use_id": "toolu_1",
                                         "content": "refunded 900 on o_1"}},
        {"state": "awaiting_approval", "tool_use_id": "toolu_2", "tool": "refund",
         "input": {"order_id": "o_2", "amount_cents": 25000},
         "effective_input": {"order_id": "o_2", "amount_cents": 25000},
         "input_digest": digest_o2(),
         "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}]},
    ]);
    if format == TurnFormat::Gemini {
        let calls = gemini_calls(&[
            ("toolu_1", json!({"order_id": "o_1", "amount_cents": 900})),
            ("toolu_2", json!({"order_id": "o_2", "amount_cents": 25000})),
        ]);
        for (b, c) in blocks.as_array_mut().unwrap().iter_mut().zip(calls) {
            b["call"] = c;
        }
    }
    json!({
        "format": 2, "turn_format": format.as_str(), "turn_id": turn_name(format),
        "turn": turn_name(format),
        "session_id": "sess_ask", "user_id": "u_001", "fingerprint": fp,
        "created_at": "2026-11-24T10:15:00Z", "pending_ttl_ms": 86_400_000, "blocks": blocks
    })
}

#[test]
fn a_paused_turn_is_serialized_read_back_in_a_fresh_dispatcher_and_resumed() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let pending = pause(&d, format);
        let fp = fingerprint(&d, &[("app::large_refund", 10)]);
        assert_eq!(d.fingerprint(), fp);
        let text = serde_json::to_string(&pending).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            stored(format, &fp)
        );
        // Only the block that needed no approval ran; the paused one has a line that is not
        // final, and the summary counts final lines only.
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            lines.take(),
            vec![
                line(
                    "toolu_1",
                    json!({"order_id": "o_1", "amount_cents": 900}),
                    "2026-11-24T10:15:00Z",
                    json!({"outcome": "ok", "is_error": false, "content": "refunded 900 on o_1"})
                ),
                line(
                    "toolu_2",
                    json!({"order_id": "o_2", "amount_cents": 25000}),
                    "2026-11-24T10:15:00Z",
                    json!({"outcome": "awaiting_approval", "is_error": false, "content": "",
                           "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                           "final": false})
                ),
            ],
            "{format:?}"
        );

        // A later process: a fresh dispatcher built the same way, the turn read back from text.
        let (runs2, lines2) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let fresh = dispatcher(&runs2, &lines2, vec![large_refund()], |b| b);
        let read: PendingTurn = serde_json::from_str(&text).unwrap();
        assert_eq!(read, pending);
        let session = fresh.session(ctx("sess_ask", "u_001", later(600)));
        let approvals = decisions(vec![(
            "toolu_2",
            Approval::approve_digest("lead@example.com", digest_o2()),
        )]);
        let answer = answered(toolgate::block_on(session.resume(&read, &approvals)).unwrap());
        let both = json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "refunded 900 on o_1"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "refunded 25000 on o_2"},
        ]);
        assert_eq!(answer, expected(format, both.clone()), "{format:?}");
        assert_eq!(runs2.load(Ordering::SeqCst), 1);
        assert_eq!(
            lines2.take(),
            vec![line(
                "toolu_2",
                json!({"order_id": "o_2", "amount_cents": 25000}),
                "2026-11-24T10:25:00Z",
                json!({"outcome": "ok", "is_error": false, "content": "refunded 25000 on o_2",
                       "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                       "approved_by": "lead@example.com"})
            )]
        );
        // The resumed answer is remembered: resuming again, or retrying the paused turn, runs
        // nothing twice.
        let again = answered(toolgate::block_on(session.resume(&read, &approvals)).unwrap());
        assert_eq!(again, answer);
        let Reply::Answer(retried) = respond(format, &session) else {
            panic!("the retried turn of {format:?} should be answered");
        };
        assert_eq!(retried, expected(format, both));
        // toolu_1 is not in this session's memory (it was answered in the first process), so
        // the retry runs it; toolu_2 is replayed.
        assert_eq!(runs2.load(Ordering::SeqCst), 2);
        let summary = session.end();
        assert_eq!(summary.calls, 2);
    }
}

#[test]
fn a_denial_at_resume_blocks_the_call_with_the_persons_reason() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let pending = pause(&d, format);
        lines.take();
        let deny = Approval::deny(
            "lead@example.com",
            "the order was already refunded in store.",
        );
        let answer = resume(&d, &pending, later(60), vec![("toolu_2", deny)]).unwrap();
        let text = "BLOCKED: a person declined this call: the order was already refunded in store.";
        assert_eq!(
            answer,
            expected(
                format,
                json!([
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "refunded 900 on o_1"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": text,
                     "is_error": true},
                ])
            )
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            lines.take(),
            vec![line(
                "toolu_2",
                json!({"order_id": "o_2", "amount_cents": 25000}),
                "2026-11-24T10:16:00Z",
                json!({"outcome": "blocked", "is_error": true, "content": text,
                       "detail": "a person declined the call (asked by `app::large_refund`: \
                                  refunds above 20000 cents need a person's approval)",
                       "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                       "denied_by": "lead@example.com"})
            )]
        );
    }
}

#[test]
fn a_turn_past_its_time_to_live_answers_its_calls_blocked() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| {
            b.pending_ttl(Duration::from_secs(3600))
        });
        let pending = pause(&d, format);
        lines.take();
        // At exactly the time to live it is still alive (and needs its decision).
        assert_eq!(
            resume(&d, &pending, later(3600), vec![])
                .unwrap_err()
                .to_string(),
            "tool_use \"toolu_2\" is waiting for approval and has no decision"
        );
        // One second past: answered `blocked`, whatever the decisions (none needed).
        let answer = resume(&d, &pending, later(3601), vec![]).unwrap();
        let text = "BLOCKED: this call waited for a person's approval longer than 3600 s and \
                    expired; it was not done. Ask the user whether to try it again.";
        let expired = expected(
            format,
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": "refunded 900 on o_1"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": text,
                 "is_error": true},
            ]),
        );
        assert_eq!(answer, expired);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            lines.take(),
            vec![line(
                "toolu_2",
                json!({"order_id": "o_2", "amount_cents": 25000}),
                "2026-11-24T11:15:01Z",
                json!({"outcome": "blocked", "is_error": true, "content": text,
                       "blocked_by": "app::large_refund",
                       "detail": "the pending turn expired: it waited longer than its time to \
                                  live of 3600 s (asked by `app::large_refund`: refunds above \
                                  20000 cents need a person's approval)",
                       "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}]})
            )]
        );
        let approved = resume(
            &d,
            &pending,
            later(7200),
            vec![("toolu_2", Approval::approve("lead"))],
        )
        .unwrap();
        assert_eq!(approved, expired);
    }
    assert_eq!(
        toolgate::dispatch::DispatcherBuilder::DEFAULT_PENDING_TTL,
        Duration::from_secs(86_400)
    );
}

#[test]
fn at_resume_the_chain_runs_again_and_a_deny_still_wins() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let frozen = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&frozen);
        let freeze = PreHookDef::sync("app::weekly_limit", 20, move |_env, _call: &ToolUse| {
            Ok(if flag.load(Ordering::SeqCst) {
                Decision::deny("this week's refund limit was reached.")
            } else {
                Decision::Allow
            })
        });
        let d = dispatcher(&runs, &lines, vec![large_refund(), freeze], |b| b);
        let pending = pause(&d, format);
        lines.take();
        // Between the pause and the approval, other refunds used up the week's limit.
        frozen.store(true, Ordering::SeqCst);
        let answer = resume(
            &d,
            &pending,
            later(60),
            vec![("toolu_2", Approval::approve("lead"))],
        )
        .unwrap();
        let denied = expected(
            format,
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": "refunded 900 on o_1"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                 "content": "BLOCKED: this week's refund limit was reached."},
            ]),
        );
        assert_eq!(block(format, &answer, 1), block(format, &denied, 1));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            lines.take(),
            vec![line(
                "toolu_2",
                json!({"order_id": "o_2", "amount_cents": 25000}),
                "2026-11-24T10:16:00Z",
                json!({"outcome": "blocked", "is_error": true,
                       "content": "BLOCKED: this week's refund limit was reached.",
                       "blocked_by": "app::weekly_limit",
                       "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                       "approved_by": "lead"})
            )]
        );
    }
}

#[test]
fn at_resume_the_last_rewriter_is_not_asked_about_its_own_input_again() {
    // The fee (a rewrite every time it runs) makes 25000 into 25100, which asks: the call
    // pauses with that input. At resume the fee's rewrite is applied again, as if it had just
    // happened: the fee is not asked about 25100, `large_refund` asks about the approved input,
    // and the refund runs with it, the fee once.
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let fees: Arc<std::sync::Mutex<Vec<u64>>> = Arc::default();
    let d = dispatcher(
        &runs,
        &lines,
        vec![handling_fee(&fees), large_refund()],
        |b| b,
    );
    let pending = pause(&d, TurnFormat::AnthropicMessages);
    let waiting = pending.awaiting().next().unwrap();
    assert_eq!(
        (&waiting.effective_input, &waiting.rewritten_by),
        (
            &json!({"order_id": "o_2", "amount_cents": 25100}),
            &vec!["app::handling_fee".to_owned()]
        )
    );
    assert_eq!(*fees.lock().unwrap(), [900, 25000]);
    lines.take();
    let approve = Approval::approve("lead");
    let answer = resume(&d, &pending, later(60), vec![("toolu_2", approve)]).unwrap();
    assert_eq!(answer["content"][1]["content"], "refunded 25100 on o_2");
    assert_eq!(*fees.lock().unwrap(), [900, 25000], "the fee ran no more");
    assert_eq!(
        lines.take(),
        vec![line(
            "toolu_2",
            json!({"order_id": "o_2", "amount_cents": 25000}),
            "2026-11-24T10:16:00Z",
            json!({"outcome": "ok", "is_error": false, "content": "refunded 25100 on o_2",
                   "rewritten_by": ["app::handling_fee"],
                   "effective_input": {"order_id": "o_2", "amount_cents": 25100},
                   "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                   "approved_by": "lead"})
        )]
    );

    // An edit at resume was produced by the approver, not by the fee: the fee decides on it.
    fees.lock().unwrap().clear();
    let edit = Approval::edit("lead", json!({"order_id": "o_2", "amount_cents": 15000}));
    let answer = resume(&d, &pending, later(60), vec![("toolu_2", edit)]).unwrap();
    assert_eq!(answer["content"][1]["content"], "refunded 15100 on o_2");
    assert_eq!(*fees.lock().unwrap(), [15000]);
    assert_eq!(
        lines.take(),
        vec![line(
            "toolu_2",
            json!({"order_id": "o_2", "amount_cents": 25000}),
            "2026-11-24T10:16:00Z",
            json!({"outcome": "ok", "is_error": false, "content": "refunded 15100 on o_2",
                   "rewritten_by": ["app::handling_fee", "<approver>", "app::handling_fee"],
                   "effective_input": {"order_id": "o_2", "amount_cents": 15100},
                   // Nobody asks about 15100: the asks are those of the final input's pass.
                   "approved_by": "lead"})
        )]
    );
}

#[test]
fn an_edit_at_resume_is_authorized_as_a_rewrite() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let pending = pause(&d, format);
        lines.take();
        let edit = Approval::edit("lead", json!({"order_id": "o_2", "amount_cents": 21000}));
        let answer = resume(&d, &pending, later(60), vec![("toolu_2", edit)]).unwrap();
        let edited = expected(
            format,
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": "refunded 900 on o_1"},
                {"type": "tool_result", "tool_use_id": "toolu_2",
                 "content": "refunded 21000 on o_2"},
            ]),
        );
        assert_eq!(answer, edited);
        assert_eq!(
            lines.take(),
            vec![line(
                "toolu_2",
                json!({"order_id": "o_2", "amount_cents": 25000}),
                "2026-11-24T10:16:00Z",
                json!({"outcome": "ok", "is_error": false, "content": "refunded 21000 on o_2",
                       "rewritten_by": ["<approver>"],
                       "effective_input": {"order_id": "o_2", "amount_cents": 21000},
                       "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                       "approved_by": "lead"})
            )]
        );
    }
}

#[test]
fn every_refusal_of_a_resume_is_typed_and_runs_nothing() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let pending = pause(&d, format);
        lines.take();
        refusals(&d, &pending);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(lines.take(), Vec::<Value>::new());
    }
}

/// Every refusal of resuming `pending` (paused by `d`), each found before anything runs.
fn refusals(d: &Dispatcher, pending: &PendingTurn) {
    let approve = || vec![("toolu_2", Approval::approve("lead"))];
    let refused = |d: &Dispatcher, p: &PendingTurn, session: &str, user: &str, list| {
        let s = d.session(ctx(session, user, later(60)));
        let e = toolgate::block_on(s.resume(p, &decisions(list))).unwrap_err();
        s.end();
        e
    };

    let e = refused(d, pending, "sess_other", "u_001", approve());
    assert!(matches!(e, ResumeError::OtherSession { .. }));
    assert_eq!(
        e.to_string(),
        "the pending turn belongs to session \"sess_ask\" of user \"u_001\", not to session \
         \"sess_other\" of user \"u_001\""
    );
    let e = refused(d, pending, "sess_ask", "u_002", approve());
    assert_eq!(
        e.to_string(),
        "the pending turn belongs to session \"sess_ask\" of user \"u_001\", not to session \
         \"sess_ask\" of user \"u_002\""
    );

    // A dispatcher whose hooks changed (one more guard on the tool).
    let (r2, l2) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let extra = PreHookDef::sync("app::extra", 5, |_env, _c: &ToolUse| Ok(Decision::Allow));
    let changed = dispatcher(&r2, &l2, vec![large_refund(), extra], |b| b);
    let e = refused(&changed, pending, "sess_ask", "u_001", approve());
    assert_eq!(
        e.to_string(),
        format!(
            "the dispatcher changed since the turn paused (fingerprint {}, now {}): its tools \
             or PreToolUse hooks are not those the calls were checked by",
            pending.fingerprint,
            fingerprint(&changed, &[("app::extra", 5), ("app::large_refund", 10)])
        )
    );
    assert_ne!(changed.fingerprint(), d.fingerprint());

    let mut other_format = serde_json::to_value(pending).unwrap();
    other_format["format"] = json!(3);
    let other_format: PendingTurn = serde_json::from_value(other_format).unwrap();
    let e = refused(d, &other_format, "sess_ask", "u_001", approve());
    assert_eq!(
        e.to_string(),
        "the pending turn has format 3; this build reads format 2"
    );

    let e = refused(
        d,
        pending,
        "sess_ask",
        "u_001",
        vec![("toolu_1", Approval::approve("lead"))],
    );
    assert_eq!(
        e.to_string(),
        "tool_use \"toolu_1\" is not waiting for approval in this pending turn"
    );

    let wrong = support::sha256_hex(br#"{"order_id":"o_2","amount_cents":2500}"#);
    let e = refused(
        d,
        pending,
        "sess_ask",
        "u_001",
        vec![("toolu_2", Approval::approve_digest("lead", wrong.clone()))],
    );
    assert_eq!(
        e.to_string(),
        format!(
            "the approval of tool_use \"toolu_2\" is for input digest {wrong}, but the call's \
             input has digest {}",
            digest_o2()
        )
    );

    // The stored input was altered after the pause: its digest no longer matches.
    let mut altered = serde_json::to_value(pending).unwrap();
    altered["blocks"][1]["effective_input"]["amount_cents"] = json!(250000);
    let altered: PendingTurn = serde_json::from_value(altered).unwrap();
    let e = refused(d, &altered, "sess_ask", "u_001", approve());
    assert_eq!(
        e.to_string(),
        format!(
            "the approval of tool_use \"toolu_2\" is for input digest {}, but the call's input \
             has digest {}",
            digest_o2(),
            support::sha256_hex(br#"{"order_id":"o_2","amount_cents":250000}"#)
        )
    );

    let e = refused(d, pending, "sess_ask", "u_001", vec![]);
    assert_eq!(
        e.to_string(),
        "tool_use \"toolu_2\" is waiting for approval and has no decision"
    );
}

#[test]
fn a_retry_while_paused_runs_nothing_twice_and_pauses_again() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let session = d.session(ctx("sess_ask", "u_001", at_start()));
        let first = respond(format, &session);
        let second = respond(format, &session);
        // The same pending turn: toolu_1 answered from memory, toolu_2 asked about again.
        assert_eq!(second, first);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let l = lines.take();
        let brief: Vec<(Value, Value, Value)> = l
            .iter()
            .map(|l| {
                (
                    l["tool_use_id"].clone(),
                    l["outcome"].clone(),
                    l.get("replay").cloned().unwrap_or(Value::Null),
                )
            })
            .collect();
        assert_eq!(
            brief,
            vec![
                (json!("toolu_1"), json!("ok"), Value::Null),
                (json!("toolu_2"), json!("awaiting_approval"), Value::Null),
                (json!("toolu_1"), json!("ok"), json!(true)),
                (json!("toolu_2"), json!("awaiting_approval"), Value::Null),
            ]
        );
        // Resumed in the same session: toolu_2 runs once; a retry then is answered from memory.
        let pending = first.pending().unwrap();
        let approvals = decisions(vec![("toolu_2", Approval::approve("lead"))]);
        let answer = answered(toolgate::block_on(session.resume(pending, &approvals)).unwrap());
        let Reply::Answer(retried) = respond(format, &session) else {
            panic!("the retried turn of {format:?} should be answered");
        };
        assert_eq!(retried, answer);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        let summary = session.end();
        // Final lines only: toolu_1 once, toolu_2 once (replays and pauses are not counted).
        assert_eq!(summary.calls, 2);
        assert_eq!(
            serde_json::to_value(&summary.outcomes).unwrap(),
            json!({"ok": 2})
        );
    }
}

#[test]
fn an_approver_answers_inline_for_every_api() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| {
            b.approver(AlwaysApprove)
        });
        let session = d.session(ctx("sess_ask", "u_001", at_start()));
        let Reply::Answer(answer) = respond(format, &session) else {
            panic!("an approver answers inline: {format:?} should not pause");
        };
        assert_eq!(
            answer,
            expected(
                format,
                json!([
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "refunded 900 on o_1"},
                    {"type": "tool_result", "tool_use_id": "toolu_2",
                     "content": "refunded 25000 on o_2"},
                ])
            )
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}

#[test]
fn a_turn_of_an_api_pauses_only_in_the_session_of_its_format() {
    // A paused OpenAI turn resumes into OpenAI's items, never a Messages API message: the
    // answer's shape follows the turn, whatever the host resumes it with.
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let pending = pause(&d, TurnFormat::OpenaiChat);
    assert_eq!(pending.turn_format, TurnFormat::OpenaiChat);
    let session = d.session(ctx("sess_ask", "u_001", later(60)));
    let approvals = decisions(vec![("toolu_2", Approval::approve("lead"))]);
    let resumed = toolgate::block_on(session.resume(&pending, &approvals)).unwrap();
    assert_eq!(resumed.clone().into_message(), None);
    assert_eq!(
        resumed.into_items().unwrap()[1],
        json!({"role": "tool", "tool_call_id": "toolu_2", "content": "refunded 25000 on o_2"})
    );
}

struct AlwaysApprove;

impl toolgate::approval::Approver for AlwaysApprove {
    fn approve<'a>(
        &'a self,
        _request: toolgate::approval::ApprovalRequest<'a>,
    ) -> toolgate::dispatch::BoxFuture<'a, Approval> {
        Box::pin(async { Approval::approve("bot") })
    }
}

/// Three refunds above 20 000 cents in one message: all three wait for a person.
fn three_waiting() -> toolgate::Message {
    support::assistant(
        json!([
            {"type": "tool_use", "id": "toolu_a", "name": "refund",
             "input": {"order_id": "o_a", "amount_cents": 21000}},
            {"type": "tool_use", "id": "toolu_b", "name": "refund",
             "input": {"order_id": "o_b", "amount_cents": 22000}},
            {"type": "tool_use", "id": "toolu_c", "name": "refund",
             "input": {"order_id": "o_c", "amount_cents": 23000}},
        ]),
        "tool_use",
    )
}

#[test]
fn a_call_decided_twice_is_refused_whatever_the_order_and_nothing_runs() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let session = d.session(ctx("sess_ask", "u_001", at_start()));
    let Reply::Pending(pending) = toolgate::block_on(session.respond(&three_waiting())).unwrap()
    else {
        panic!("three refunds wait for a person");
    };
    assert_eq!(pending.awaiting().count(), 3);
    lines.take();
    let approve = r#"{"decision": "approve", "by": "lead"}"#;
    let deny = r#"{"decision": "deny", "by": "lead", "reason": "no."}"#;
    let twice = "tool_use \"toolu_b\" has two decisions; decide each waiting call once";
    // As an approval page posts them: one JSON object, the second call decided twice, in both
    // orders. A map would keep the last; `Decisions` refuses both, naming the id.
    for (first, second) in [(approve, deny), (deny, approve)] {
        let posted = format!(
            r#"{{"toolu_a": {approve}, "toolu_b": {first}, "toolu_b": {second}, "toolu_c": {approve}}}"#
        );
        let e = serde_json::from_str::<Decisions>(&posted).unwrap_err();
        assert!(e.to_string().starts_with(twice), "{e}");
    }
    // The builder refuses the same, whatever the decisions.
    let built = Decisions::builder()
        .approve_any_input("toolu_a", "lead")
        .approve_any_input("toolu_b", "lead")
        .deny("toolu_b", "lead", "no.")
        .approve_any_input("toolu_c", "lead")
        .build()
        .unwrap_err();
    assert_eq!(built.to_string(), twice);
    assert_eq!(built.tool_use_id, "toolu_b");
    let mut decisions = Decisions::new();
    decisions
        .insert("toolu_b", Approval::deny("lead", "no."))
        .unwrap();
    let e = decisions
        .insert("toolu_b", Approval::approve("lead"))
        .unwrap_err();
    assert_eq!(e.to_string(), twice);
    // The decision kept is the first: inserting again changes nothing.
    assert_eq!(
        decisions.get("toolu_b"),
        Some(&Approval::deny("lead", "no."))
    );
    assert_eq!(decisions.len(), 1);
    // Nothing ran, nothing was audited: no decision could be made of the posted text.
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(lines.take(), Vec::<Value>::new());
    // Decided once each, the same text resumes: two refunds run, the denied one does not.
    let posted = format!(r#"{{"toolu_a": {approve}, "toolu_b": {deny}, "toolu_c": {approve}}}"#);
    let decisions: Decisions = serde_json::from_str(&posted).unwrap();
    assert_eq!(
        serde_json::to_value(&decisions).unwrap(),
        serde_json::from_str::<Value>(&posted).unwrap()
    );
    let answer = answered(toolgate::block_on(session.resume(&pending, &decisions)).unwrap());
    let texts: Vec<&Value> = answer["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["content"])
        .collect();
    assert_eq!(
        texts,
        [
            &json!("refunded 21000 on o_a"),
            &json!("BLOCKED: a person declined this call: no."),
            &json!("refunded 23000 on o_c"),
        ]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// A pending turn is plain JSON a host keeps: one cut short (a write that stopped half-way) does
/// not read back, and one edited by hand so that its blocks no longer answer one `tool_use` each
/// (no block, an empty id, an id twice, a waiting call under an answered call's id) is refused
/// before anything runs: nothing audited, no tool run, and the turn still resumes as it was.
#[test]
fn a_pending_turn_cut_short_or_edited_by_hand_is_refused_before_anything_runs() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let pending = pause(&d, TurnFormat::AnthropicMessages);
    lines.take();
    let text = serde_json::to_string(&pending).unwrap();
    let cut = serde_json::from_str::<PendingTurn>(&text[..200]).unwrap_err();
    assert_eq!(
        (cut.classify(), cut.line(), cut.column()),
        (serde_json::error::Category::Eof, 1, 200)
    );

    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut v = serde_json::to_value(&pending).unwrap();
        edit(&mut v);
        serde_json::from_value::<PendingTurn>(v).unwrap()
    };
    let approve = || {
        vec![(
            "toolu_2",
            Approval::approve_digest("lead@example.com", digest_o2()),
        )]
    };
    let cases: Vec<(PendingTurn, &str)> = vec![
        (
            edited(&|v| v["blocks"] = json!([])),
            "the pending turn cannot be resumed as it stands: it has no block; it was changed \
             since it paused",
        ),
        (
            edited(&|v| v["blocks"][0]["result"]["tool_use_id"] = json!("")),
            "the pending turn cannot be resumed as it stands: block 1 has an empty tool_use id; \
             it was changed since it paused",
        ),
        (
            edited(&|v| {
                let again = v["blocks"][1].clone();
                v["blocks"].as_array_mut().unwrap().push(again);
            }),
            "the pending turn cannot be resumed as it stands: blocks 2 and 3 both answer \
             tool_use \"toolu_2\"; it was changed since it paused",
        ),
        (
            edited(&|v| v["blocks"][0]["result"]["tool_use_id"] = json!("toolu_2")),
            "the pending turn cannot be resumed as it stands: blocks 1 and 2 both answer \
             tool_use \"toolu_2\"; it was changed since it paused",
        ),
    ];
    for (turn, why) in &cases {
        let e = resume(&d, turn, later(60), approve()).unwrap_err();
        assert!(matches!(e, ResumeError::Malformed { .. }), "{e:?}");
        assert_eq!(e.to_string(), *why);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(lines.take(), Vec::<Value>::new());
    // The turn as it paused still resumes: nothing above took its place.
    let answer = resume(&d, &pending, later(60), approve()).unwrap();
    assert_eq!(answer["content"][1]["content"], "refunded 25000 on o_2");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// `(o, cents)` refunds as one message's `tool_use` blocks, ids as given.
fn refunds_message(calls: &[(&str, &str, u32)]) -> toolgate::Message {
    let blocks: Vec<Value> = calls
        .iter()
        .map(|(id, order, cents)| {
            json!({"type": "tool_use", "id": id, "name": "refund",
                   "input": {"order_id": order, "amount_cents": cents}})
        })
        .collect();
    support::assistant(Value::Array(blocks), "tool_use")
}

/// The digest of a refund input as the model wrote it (`order_id` first).
fn refund_digest(order: &str, cents: u32) -> String {
    support::sha256_hex(format!(r#"{{"order_id":"{order}","amount_cents":{cents}}}"#).as_bytes())
}

/// Two calls of one turn wait for a person: a decision meant for one is never applied to the
/// other. Approvals whose digests are swapped, decisions for one call only, a decision for a
/// call of another turn: each refused before anything runs; decided right, each call runs with
/// its own input.
#[test]
fn the_decisions_of_two_waiting_calls_never_cross() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let session = d.session(ctx("sess_ask", "u_001", at_start()));
    let message = refunds_message(&[("toolu_a", "o_a", 21000), ("toolu_b", "o_b", 22000)]);
    let Reply::Pending(pending) = toolgate::block_on(session.respond(&message)).unwrap() else {
        panic!("both refunds wait for a person");
    };
    let digests: Vec<(&str, &str)> = pending
        .awaiting()
        .map(|a| (a.tool_use_id.as_str(), a.input_digest.as_str()))
        .collect();
    let (da, db) = (refund_digest("o_a", 21000), refund_digest("o_b", 22000));
    assert_eq!(
        digests,
        [("toolu_a", da.as_str()), ("toolu_b", db.as_str())]
    );
    lines.take();
    let refused = |list: Vec<(&str, Approval)>| {
        toolgate::block_on(session.resume(&pending, &decisions(list)))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(vec![
            ("toolu_a", Approval::approve_digest("lead", db.clone())),
            ("toolu_b", Approval::approve_digest("lead", da.clone())),
        ]),
        format!(
            "the approval of tool_use \"toolu_a\" is for input digest {db}, but the call's input \
             has digest {da}"
        )
    );
    assert_eq!(
        refused(vec![(
            "toolu_b",
            Approval::approve_digest("lead", db.clone())
        )]),
        "tool_use \"toolu_a\" is waiting for approval and has no decision"
    );
    assert_eq!(
        refused(vec![
            ("toolu_a", Approval::approve("lead")),
            ("toolu_b", Approval::approve("lead")),
            ("toolu_2", Approval::approve("lead")),
        ]),
        "tool_use \"toolu_2\" is not waiting for approval in this pending turn"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(lines.take(), Vec::<Value>::new());
    let right = decisions(vec![
        ("toolu_a", Approval::approve_digest("lead", da)),
        ("toolu_b", Approval::deny("lead", "not this one.")),
    ]);
    let answer = answered(toolgate::block_on(session.resume(&pending, &right)).unwrap());
    assert_eq!(
        answer["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "refunded 21000 on o_a"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true,
             "content": "BLOCKED: a person declined this call: not this one."},
        ])
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// The same refund asked again in a later turn is a new call: the approval of the first does not
/// cover it. It pauses again, the first turn's decisions are refused for it, the first turn
/// resumed again is a replay, and it runs only once a person approves it too. With an approver
/// inline, the approver is asked once per call.
#[test]
fn an_approval_covers_its_own_call_only_not_the_same_input_asked_again() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let session = d.session(ctx("sess_ask", "u_001", at_start()));
    let pause_of = |message: &toolgate::Message| match toolgate::block_on(session.respond(message))
    {
        Ok(Reply::Pending(p)) => p,
        other => panic!("expected a pending turn, got {other:?}"),
    };
    let first = pause_of(&refunds_message(&[("toolu_2", "o_2", 25000)]));
    let approved = decisions(vec![("toolu_2", Approval::approve("lead"))]);
    toolgate::block_on(session.resume(&first, &approved)).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let second = pause_of(&refunds_message(&[("toolu_9", "o_2", 25000)]));
    let waiting = second.awaiting().next().unwrap();
    assert_eq!(
        (waiting.tool_use_id.as_str(), waiting.input_digest.as_str()),
        ("toolu_9", digest_o2().as_str())
    );
    let refused = toolgate::block_on(session.resume(&second, &approved)).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "tool_use \"toolu_2\" is not waiting for approval in this pending turn"
    );
    let undecided = toolgate::block_on(session.resume(&second, &Decisions::new())).unwrap_err();
    assert_eq!(
        undecided.to_string(),
        "tool_use \"toolu_9\" is waiting for approval and has no decision"
    );
    // The first turn resumed again replays its answer: nothing runs.
    let again = answered(toolgate::block_on(session.resume(&first, &approved)).unwrap());
    assert_eq!(again["content"][0]["content"], "refunded 25000 on o_2");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let own = decisions(vec![("toolu_9", Approval::approve("lead"))]);
    let answer = answered(toolgate::block_on(session.resume(&second, &own)).unwrap());
    assert_eq!(answer["content"][0]["content"], "refunded 25000 on o_2");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let outcomes: Vec<(Value, Value, Value)> = lines
        .take()
        .iter()
        .map(|l| {
            (
                l["tool_use_id"].clone(),
                l["outcome"].clone(),
                l["approved_by"].clone(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            (json!("toolu_2"), json!("awaiting_approval"), Value::Null),
            (json!("toolu_2"), json!("ok"), json!("lead")),
            (json!("toolu_9"), json!("awaiting_approval"), Value::Null),
            (json!("toolu_2"), json!("ok"), Value::Null),
            (json!("toolu_9"), json!("ok"), json!("lead")),
        ]
    );

    // Inline: the approver is asked about each call, the same input twice.
    let asked = Arc::new(AtomicUsize::new(0));
    let counting = Counting(Arc::clone(&asked));
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let inline = dispatcher(&runs, &lines, vec![large_refund()], |b| {
        b.approver(counting)
    });
    let session = inline.session(ctx("sess_ask", "u_001", at_start()));
    for id in ["toolu_2", "toolu_9"] {
        let reply = toolgate::block_on(session.respond(&refunds_message(&[(id, "o_2", 25000)])));
        assert!(matches!(reply, Ok(Reply::Answer(_))));
    }
    assert_eq!(
        (asked.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)),
        (2, 2)
    );
}

/// Approves every call, counting the requests.
struct Counting(Arc<AtomicUsize>);

impl toolgate::approval::Approver for Counting {
    fn approve<'a>(
        &'a self,
        _request: toolgate::approval::ApprovalRequest<'a>,
    ) -> toolgate::dispatch::BoxFuture<'a, Approval> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Approval::approve("bot") })
    }
}

/// The same input with its keys in another order. The answer memory and a pending turn's digest
/// take the input's JSON text in the order the model wrote its keys (ARCHITECTURE.md, "Ids and
/// retries"; the digest's documented text): a retry of an answered id with the keys reordered is
/// refused as an id reused with another input (never run twice), and a pending turn whose JSON
/// had its keys reordered (a store that sorts them, as PostgreSQL's `jsonb` does) no longer
/// matches its digest and is refused before anything runs. Inside the chain, inputs compare as
/// JSON values: a person's edit that only reorders the keys is the input they saw, no rewrite.
#[test]
fn the_same_input_with_its_keys_reordered_is_refused_never_run_twice() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let session = d.session(ctx("sess_ask", "u_001", at_start()));
    // The same response sent again (its id `msg_1`), its input's keys reordered.
    let mut small = refunds_message(&[("toolu_1", "o_1", 900)]);
    small.extra.insert("id".to_owned(), json!("msg_1"));
    toolgate::block_on(session.respond(&small)).unwrap();
    let reordered = support::assistant_with_id(
        "msg_1",
        json!([{"type": "tool_use", "id": "toolu_1", "name": "refund",
                "input": {"amount_cents": 900, "order_id": "o_1"}}]),
        "tool_use",
    );
    let e = toolgate::block_on(session.respond(&reordered)).unwrap_err();
    assert!(
        matches!(&e, toolgate::RespondError::Call(toolgate::CallError::IdReused { tool_use_id })
            if tool_use_id == "toolu_1"),
        "{e:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let pending =
        match toolgate::block_on(session.respond(&refunds_message(&[("toolu_2", "o_2", 25000)])))
            .unwrap()
        {
            Reply::Pending(p) => p,
            other => panic!("expected a pending turn, got {other:?}"),
        };
    lines.take();
    // As a store that sorts keys gives it back.
    let mut sorted = serde_json::to_value(&pending).unwrap();
    let input = json!({"amount_cents": 25000, "order_id": "o_2"});
    sorted["blocks"][0]["input"] = input.clone();
    sorted["blocks"][0]["effective_input"] = input;
    let sorted: PendingTurn = serde_json::from_value(sorted).unwrap();
    let approve = decisions(vec![("toolu_2", Approval::approve("lead"))]);
    let e = toolgate::block_on(session.resume(&sorted, &approve)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the approval of tool_use \"toolu_2\" is for input digest {}, but the call's input \
             has digest {}",
            digest_o2(),
            support::sha256_hex(br#"{"amount_cents":25000,"order_id":"o_2"}"#)
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(lines.take(), Vec::<Value>::new());

    let edit = Approval::edit("lead", json!({"amount_cents": 25000, "order_id": "o_2"}));
    let answer = answered(
        toolgate::block_on(session.resume(&pending, &decisions(vec![("toolu_2", edit)]))).unwrap(),
    );
    assert_eq!(answer["content"][0]["content"], "refunded 25000 on o_2");
    let line = &lines.take()[0];
    assert_eq!(
        (
            &line["outcome"],
            line.get("rewritten_by"),
            &line["approved_by"]
        ),
        (&json!("ok"), None, &json!("lead"))
    );
}

/// The rules changed between the pause and the resume, in another process. A rule changed under
/// the same path and order keeps the fingerprint (it cannot see a hook's body), so the turn
/// resumes, and the approved call's chain runs again: the rule that now denies wins over the
/// person's approval, and the tool does not run. A rule added that denies changes the
/// fingerprint: the resume is refused before anything runs.
#[test]
fn at_resume_a_rule_that_now_denies_blocks_the_approved_call() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let pending = pause(&d, format);

        let stricter = PreHookDef::sync("app::large_refund", 10, |_env, call: &ToolUse| {
            Ok(match call.input["amount_cents"].as_u64() {
                Some(n) if n > 20_000 => {
                    Decision::deny("refunds above 20000 cents are no longer made.")
                }
                _ => Decision::Allow,
            })
        });
        let (runs2, lines2) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let redeployed = dispatcher(&runs2, &lines2, vec![stricter], |b| b);
        assert_eq!(redeployed.fingerprint(), pending.fingerprint);
        let approve = || vec![("toolu_2", Approval::approve("lead"))];
        let answer = resume(&redeployed, &pending, later(60), approve()).unwrap();
        let text = "BLOCKED: refunds above 20000 cents are no longer made.";
        assert_eq!(
            block(format, &answer, 1),
            block(
                format,
                &expected(
                    format,
                    json!([
                        {"type": "tool_result", "tool_use_id": "toolu_1",
                         "content": "refunded 900 on o_1"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": text,
                         "is_error": true},
                    ])
                ),
                1
            )
        );
        assert_eq!(runs2.load(Ordering::SeqCst), 0);
        assert_eq!(
            lines2.take(),
            vec![line(
                "toolu_2",
                json!({"order_id": "o_2", "amount_cents": 25000}),
                "2026-11-24T10:16:00Z",
                json!({"outcome": "blocked", "is_error": true, "content": text,
                       "blocked_by": "app::large_refund", "approved_by": "lead"})
            )]
        );

        let freeze = PreHookDef::sync("app::freeze", 20, |_env, _call: &ToolUse| {
            Ok(Decision::deny("refunds are frozen."))
        });
        let (runs3, lines3) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let added = dispatcher(&runs3, &lines3, vec![large_refund(), freeze], |b| b);
        let e = resume(&added, &pending, later(60), approve()).unwrap_err();
        assert!(matches!(e, ResumeError::DispatcherChanged { .. }), "{e:?}");
        assert_eq!(
            (runs3.load(Ordering::SeqCst), lines3.take()),
            (0, Vec::<Value>::new())
        );
    }
}

#[test]
fn every_api_turn_paused_in_a_session_on_a_store_is_kept_there_and_resumed_from_it() {
    for format in FORMATS {
        let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
        let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
        let turns = Arc::new(toolgate::store::MemoryPendingStore::new());
        let session = d
            .session(ctx("sess_ask", "u_001", at_start()))
            .with_pending_store(turns.clone());
        let Reply::Pending(pending) = respond(format, &session) else {
            panic!("{format:?}: the large refund waits for a person");
        };
        let kept = toolgate::block_on(toolgate::store::PendingStore::waiting(&*turns, "sess_ask"));
        assert_eq!(kept.unwrap(), vec![pending.clone()], "{format:?}");
        let call = pending.awaiting().next().unwrap();
        assert_eq!(call.input_digest, digest_o2());
        let decisions = Decisions::builder().approve(call, "lead").build().unwrap();
        let worker = d.session(ctx("sess_ask", "u_001", later(60)));
        let answer = toolgate::block_on(worker.resume_from(&*turns, turn_name(format), &decisions));
        assert_eq!(
            answered(answer.unwrap()),
            expected(
                format,
                json!([
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "refunded 900 on o_1"},
                    {"type": "tool_result", "tool_use_id": "toolu_2",
                     "content": "refunded 25000 on o_2"},
                ])
            ),
            "{format:?}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2, "{format:?}");
    }
}

#[test]
fn a_call_a_person_declined_is_recorded_as_theirs_and_the_asking_hook_as_the_asker() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let pending = pause(&d, TurnFormat::AnthropicMessages);
    let deny = Approval::deny("lead@example.com", "the order was already refunded.");
    resume(&d, &pending, later(60), vec![("toolu_2", deny)]).unwrap();
    let records: Vec<toolgate::audit::AuditRecord> = lines
        .take()
        .into_iter()
        .map(|l| serde_json::from_value(l).unwrap())
        .collect();
    let [_small, asked, declined] = records.as_slice() else {
        panic!("three lines: {records:?}");
    };
    // The pause's line, then the final one: declined by the person; the hook only asked, and
    // denied nothing.
    assert_eq!(asked.outcome, toolgate::audit::Outcome::AwaitingApproval);
    assert_eq!(asked.asked_by, declined.asked_by);
    assert_eq!(declined.outcome, toolgate::audit::Outcome::Blocked);
    assert_eq!(declined.blocked_by, None);
    assert_eq!(declined.denied_by.as_deref(), Some("lead@example.com"));
    assert_eq!(
        declined.asked_by,
        vec![toolgate::approval::Asked {
            hook: "app::large_refund".into(),
            reason: LARGE_ASK.into(),
        }]
    );
    // `toolgate audit tail` prints the hook as the asker, then who declined: the command's
    // own tests (cli/tests/commands.rs) pin that line.
    // The report: the person's decline, never a denial by the hook that asked.
    let mut trail = toolgate::audit::Trail::default();
    for (n, r) in records.iter().enumerate() {
        let mut line = Vec::new();
        r.write_json(&mut line);
        trail
            .push_call_line(&line, std::path::Path::new("audit_log.jsonl"), n as u64 + 1)
            .unwrap();
    }
    let options = toolgate::audit::report::ReportOptions::default();
    let figures = toolgate::audit::report::Figures::of(&trail, &options);
    let denials = figures.rules.get("app::large_refund").map(|r| r.denials);
    assert_eq!(denials.unwrap_or(0), 0, "{:?}", figures.rules);
    assert_eq!(figures.decided.len(), 1);
    assert_eq!(
        figures.decided[0].resolution,
        toolgate::audit::report::Resolution::Declined {
            by: "lead@example.com".into()
        }
    );
}
