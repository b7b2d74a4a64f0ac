//! What the audit log hides stays hidden in a paused turn (`approval/seal.rs`): a card PIN
//! nested in the input and a token a PreToolUse rewrite added are in no byte of the
//! `PendingTurn`, of the in-memory store or of the audit files, and the resumed tool gets their
//! real values. A resume that cannot give them back (no key, another key, a sealed value or a
//! shown input changed, the sealed value removed or moved to another call) is refused and runs
//! nothing; a dispatcher that cannot seal does not pause such a call. Keys rotate; an edit at
//! resume keeps the hidden fields it left as shown; a Gemini turn's kept call is masked; a
//! paused call that ends blocked in its own message is answered again from memory.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolgate::{
    Decision, HookContext, Reply, ToolUse,
    approval::{Approval, Decisions, PendingTurn, ResumeError, Resumed, SealKeys, SealProblem},
    audit::AuditLog,
    dispatch::{Clock, HookError, PreHookDef},
    store::{MemoryPendingStore, PendingStore, Taken},
};

use crate::support::sealed::{self, Paid};
use crate::support::{self, TempDir};

/// The session's context, its clock fixed (a paused turn records when it paused).
fn ctx() -> HookContext {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_515_300);
    HookContext::builder(sealed::USER, sealed::SESSION)
        .clock(Clock::fixed(at))
        .build()
}

/// An audit log writing its files into `dir`.
fn files(dir: &std::path::Path) -> toolgate::audit::AuditLogBuilder {
    AuditLog::builder().dir(dir)
}

/// Pauses [`sealed::message`] on `d`: the small payment is answered, the big one waits.
fn pause(d: &toolgate::Dispatcher) -> PendingTurn {
    match toolgate::block_on(d.session(ctx()).respond(&sealed::message())).unwrap() {
        Reply::Pending(turn) => turn,
        other => panic!("expected a pending turn, got {other:?}"),
    }
}

/// The waiting call of `turn` as JSON.
fn waiting(turn: &PendingTurn) -> Value {
    serde_json::to_value(turn).unwrap()["blocks"][1].clone()
}

/// `toolu_big` approved by the lead for the digest the turn shows.
fn approved(turn: &PendingTurn) -> Decisions {
    let digest = turn.awaiting().next().unwrap().input_digest.clone();
    Decisions::builder()
        .decide("toolu_big", Approval::approve_digest("lead", digest))
        .build()
        .unwrap()
}

/// Which secrets the audit lines kept hold: none.
fn no_secret_in(lines: &sealed::Lines) {
    let text = serde_json::to_vec(&lines.all()).unwrap();
    assert_eq!(sealed::secrets_in(&text), Vec::<String>::new());
}

fn answer(resumed: Resumed) -> Value {
    serde_json::to_value(resumed).unwrap()
}

#[test]
fn a_hidden_field_is_in_no_byte_of_the_paused_turn_and_the_resumed_tool_gets_it() {
    let dir = TempDir::new("sealed-memory");
    let paid = Paid::default();
    let d = sealed::dispatcher(files(&dir), &paid, Some(sealed::keys()));
    let turn = pause(&d);
    assert_eq!(
        paid.inputs(),
        [sealed::real("o_0", 900)],
        "the small payment ran"
    );

    // The turn shows the inputs as the audit line does; the real ones are sealed.
    let text = serde_json::to_string(&turn).unwrap();
    assert_eq!(sealed::secrets_in(text.as_bytes()), Vec::<String>::new());
    let big = waiting(&turn);
    assert_eq!(
        big["input"],
        sealed::shown_input(),
        "the nested PIN, the card number masked"
    );
    assert_eq!(
        big["effective_input"],
        sealed::shown_effective(),
        "the token the rewrite added"
    );
    let seal = big["sealed"].as_str().unwrap();
    let hex = seal.strip_prefix("aes256-siv:k1:").unwrap();
    assert!(
        hex.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{seal}"
    );
    let shown = serde_json::to_string(&sealed::shown_effective()).unwrap();
    assert_eq!(
        big["input_digest"],
        json!(support::sha256_hex(format!("{shown}\n{seal}").as_bytes())),
        "the digest covers the shown input and the sealed value"
    );

    // Kept in the store, listed, taken: no byte of it holds a secret.
    let store = Arc::new(MemoryPendingStore::new());
    toolgate::block_on(store.put(&turn)).unwrap();
    let listed = toolgate::block_on(store.waiting(sealed::SESSION)).unwrap();
    assert_eq!(listed, std::slice::from_ref(&turn));
    let listed = serde_json::to_vec(&listed).unwrap();
    assert_eq!(sealed::secrets_in(&listed), Vec::<String>::new());

    // Another process: the same dispatcher and key, a fresh session.
    let later_paid = Paid::default();
    let later = sealed::dispatcher(files(&dir), &later_paid, Some(sealed::keys()));
    let session = later.session(ctx());
    assert_eq!(
        turn.turn_id, "msg_sealed",
        "a turn is named by its response's id"
    );
    let resumed = toolgate::block_on(session.resume_from(&*store, "msg_sealed", &approved(&turn)));
    assert_eq!(answer(resumed.unwrap()), sealed::resumed_answer());
    assert_eq!(
        later_paid.inputs(),
        [sealed::real("o_1", 25000)],
        "the real PIN and token"
    );
    let Taken::Resumed(kept) = toolgate::block_on(store.take(
        sealed::SESSION,
        "msg_sealed",
        toolgate::store::Token::draw(),
        Duration::from_secs(600),
    ))
    .unwrap() else {
        panic!("the turn's answer is kept");
    };
    assert_eq!(kept, sealed::resumed_answer());

    // The audit files: every line masked, the paused line as the turn shows it.
    let mut read = 0;
    assert_eq!(
        sealed::files_holding_secrets(&dir, &mut read),
        Vec::<String>::new()
    );
    assert_eq!(read, 2, "audit_log.jsonl and session_summaries.jsonl");
    let lines = support::json_lines(&dir.join("audit_log.jsonl"));
    let paused = lines
        .iter()
        .find(|l| l["outcome"] == "awaiting_approval")
        .unwrap();
    assert_eq!(
        paused["input"], big["input"],
        "a page shows what the audit line shows"
    );
    assert_eq!(paused["effective_input"], big["effective_input"]);
}

#[test]
fn a_call_paused_again_by_a_retried_message_seals_to_the_same_bytes() {
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let d = sealed::dispatcher(sealed::kept(&lines), &paid, Some(sealed::keys()));
    let session = d.session(ctx());
    let first = toolgate::block_on(session.respond(&sealed::message())).unwrap();
    let again = toolgate::block_on(session.respond(&sealed::message())).unwrap();
    let (Reply::Pending(first), Reply::Pending(again)) = (first, again) else {
        panic!("both pause");
    };
    assert_eq!(first, again, "one turn, one digest a person approves");
    assert_eq!(
        paid.inputs().len(),
        1,
        "the small payment ran once, then was replayed"
    );
    no_secret_in(&lines);
}

/// Resumes `turn` on a dispatcher with `keys`, approving `toolu_big` as the turn shows it:
/// the error, after checking that nothing ran and nothing was audited.
fn refused(turn: &PendingTurn, keys: Option<SealKeys>) -> String {
    let dir = TempDir::new("sealed-refused");
    let paid = Paid::default();
    let d = sealed::dispatcher(files(&dir), &paid, keys);
    let decisions = Decisions::builder()
        .approve_any_input("toolu_big", "lead")
        .build()
        .unwrap();
    let e = toolgate::block_on(d.session(ctx()).resume(turn, &decisions)).unwrap_err();
    assert_eq!(paid.inputs(), Vec::<Value>::new(), "nothing ran: {e}");
    let audited = std::fs::read(dir.join("audit_log.jsonl")).unwrap_or_default();
    assert_eq!(audited, b"", "nothing was audited: {e}");
    assert!(matches!(e, ResumeError::SealedInput { .. }), "{e:?}");
    e.to_string()
}

/// The refusal's text for `problem`.
fn refusal(problem: &str) -> String {
    format!(
        "the input of tool_use \"toolu_big\" has fields the audit log's redaction hides, and \
         their real values cannot be given back: {problem}; nothing was run"
    )
}

/// `turn` with its waiting call changed by `edit` (its JSON), the digest made to match again,
/// as someone who can write the store would.
fn tampered(turn: &PendingTurn, edit: impl FnOnce(&mut Value)) -> PendingTurn {
    let mut v = serde_json::to_value(turn).unwrap();
    let big = &mut v["blocks"][1];
    edit(big);
    let effective = serde_json::to_string(&big["effective_input"]).unwrap();
    let text = match big["sealed"].as_str() {
        Some(seal) => format!("{effective}\n{seal}"),
        None => effective,
    };
    big["input_digest"] = json!(support::sha256_hex(text.as_bytes()));
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_resume_that_cannot_give_the_hidden_fields_back_refuses_and_runs_nothing() {
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let d = sealed::dispatcher(sealed::kept(&lines), &paid, Some(sealed::keys()));
    let turn = pause(&d);
    let does_not_open = refusal(
        "they do not open with key \"k1\": the key is not the one they were sealed with, or the \
         pending turn was changed since it paused",
    );

    // The key: missing, of another id, of the right id and other bytes.
    assert_eq!(
        refused(&turn, None),
        refusal("this dispatcher has no seal key (DispatcherBuilder::seal_keys)")
    );
    let other_id = SealKeys::new(sealed::key("k2", 0x5a));
    assert_eq!(
        refused(&turn, Some(other_id)),
        refusal(
            "they were sealed with key \"k1\", which this dispatcher does not have (keep a \
             retired key with SealKeys::also_open until its turns have expired)"
        )
    );
    let wrong_bytes = SealKeys::new(sealed::key("k1", 0x33));
    assert_eq!(refused(&turn, Some(wrong_bytes)), does_not_open);

    // The turn changed where the store keeps it (the digest recomputed to match).
    let keys = || Some(sealed::keys());
    let flipped = tampered(&turn, |big| {
        let seal = big["sealed"].as_str().unwrap();
        let last = if seal.ends_with('0') { '1' } else { '0' };
        big["sealed"] = json!(format!("{}{last}", &seal[..seal.len() - 1]));
    });
    assert_eq!(
        refused(&flipped, keys()),
        does_not_open,
        "a sealed byte changed"
    );
    let cheaper = tampered(&turn, |big| {
        big["input"]["amount_cents"] = json!(2500);
        big["effective_input"]["amount_cents"] = json!(2500);
    });
    assert_eq!(
        refused(&cheaper, keys()),
        does_not_open,
        "the shown input changed"
    );
    let moved = tampered(&turn, |big| big["tool_use_id"] = json!("toolu_other"));
    let decisions = Decisions::builder()
        .approve_any_input("toolu_other", "lead")
        .build()
        .unwrap();
    let e = toolgate::block_on(
        sealed::dispatcher(sealed::kept(&lines), &paid, keys())
            .session(ctx())
            .resume(&moved, &decisions),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        does_not_open.replace("toolu_big", "toolu_other"),
        "a sealed value moved to another call"
    );
    let stripped = tampered(&turn, |big| {
        big.as_object_mut().unwrap().remove("sealed");
    });
    assert_eq!(
        refused(&stripped, keys()),
        refusal(
            "the pending turn shows them without a sealed value (it was paused by a dispatcher \
             whose redaction did not hide them, or changed since)"
        ),
        "the placeholder never reaches the tool"
    );
    let garbage = tampered(&turn, |big| big["sealed"] = json!("aes256-siv:k1:abc"));
    assert_eq!(
        refused(&garbage, keys()),
        refusal(
            "its sealed value is not one this build reads: its bytes are not an even number of \
             hex digits"
        )
    );
    let e = toolgate::block_on(
        sealed::dispatcher(sealed::kept(&lines), &paid, keys())
            .session(ctx())
            .resume(
                &garbage,
                &Decisions::builder()
                    .approve_any_input("toolu_big", "l")
                    .build()
                    .unwrap(),
            ),
    )
    .unwrap_err();
    assert!(
        matches!(
            &e,
            ResumeError::SealedInput {
                problem: SealProblem::Malformed { .. },
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        paid.inputs(),
        [sealed::real("o_0", 900)],
        "only the first pause ran anything"
    );

    // Refused resumes spoil nothing: the right key resumes the turn as it was kept.
    let resumed = toolgate::block_on(d.session(ctx()).resume(&turn, &approved(&turn)));
    assert_eq!(answer(resumed.unwrap()), sealed::resumed_answer());
    assert_eq!(paid.inputs()[1], sealed::real("o_1", 25000));
    no_secret_in(&lines);
}

#[test]
fn a_dispatcher_without_a_key_blocks_a_call_with_hidden_fields_instead_of_pausing_it() {
    let dir = TempDir::new("sealed-no-key");
    let paid = Paid::default();
    let d = sealed::dispatcher(files(&dir), &paid, None);
    let reply = toolgate::block_on(d.session(ctx()).respond(&sealed::message())).unwrap();
    let Reply::Answer(message) = reply else {
        panic!("nothing can pause: {reply:?}");
    };
    let texts: Vec<_> = message
        .tool_results()
        .map(|r| (r.is_error, r.content_text().into_owned()))
        .collect();
    assert_eq!(
        texts,
        [
            (false, "paid 900 on o_0".to_owned()),
            (
                true,
                "BLOCKED: this call needs a person's approval, and none can be given here \
                 (payments above 20000 cents). Tell the user it was not done and that a person \
                 must approve it."
                    .to_owned()
            )
        ]
    );
    let lines = support::json_lines(&dir.join("audit_log.jsonl"));
    let big = lines
        .iter()
        .find(|l| l["tool_use_id"] == "toolu_big")
        .unwrap();
    assert_eq!(big["outcome"], "blocked");
    assert_eq!(
        big["detail"],
        "the call needs a person's approval (asked by `app::large_payment`: payments above \
         20000 cents); the input of tool `pay` has fields the audit log's redaction hides, and \
         this dispatcher has no seal key to keep them out of the paused turn \
         (DispatcherBuilder::seal_keys): it cannot pause for a person"
    );
    assert_eq!(paid.inputs(), [sealed::real("o_0", 900)]);
}

#[test]
fn a_retired_key_still_opens_what_it_sealed_and_the_new_one_seals() {
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let old = sealed::dispatcher(sealed::kept(&lines), &paid, Some(sealed::keys()));
    let turn = pause(&old);
    let rotated = || {
        SealKeys::new(sealed::key("k2", 0x77))
            .also_open(sealed::key("k1", 0x5a))
            .unwrap()
    };
    let new = sealed::dispatcher(sealed::kept(&lines), &paid, Some(rotated()));
    let resumed = toolgate::block_on(new.session(ctx()).resume(&turn, &approved(&turn)));
    assert_eq!(answer(resumed.unwrap()), sealed::resumed_answer());
    assert_eq!(paid.inputs()[1], sealed::real("o_1", 25000));
    let session = HookContext::builder(sealed::USER, "sess_sealed_2").build();
    let Reply::Pending(next) =
        toolgate::block_on(new.session(session).respond(&sealed::message())).unwrap()
    else {
        panic!("it pauses");
    };
    assert!(
        waiting(&next)["sealed"]
            .as_str()
            .unwrap()
            .starts_with("aes256-siv:k2:")
    );
    assert_eq!(
        rotated()
            .also_open(sealed::key("k1", 0x01))
            .unwrap_err()
            .to_string(),
        "seal key \"k1\": another key of these keys has its id"
    );
    assert_eq!(
        toolgate::approval::SealKey::new("k 1", &[0; 64])
            .unwrap_err()
            .to_string(),
        "seal key \"k 1\": its id must be 1 to 64 letters, digits, `.`, `_` or `-`"
    );
    assert_eq!(
        toolgate::approval::SealKey::from_hex("k1", "00ff")
            .unwrap_err()
            .to_string(),
        "seal key \"k1\": it must be 64 bytes, not 2"
    );
    no_secret_in(&lines);
}

#[test]
fn an_edit_at_resume_keeps_the_hidden_fields_it_left_as_shown() {
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let d = sealed::dispatcher(sealed::kept(&lines), &paid, Some(sealed::keys()));
    let turn = pause(&d);
    // The person lowers the amount in the input they saw, its hidden fields as shown.
    let mut edited = sealed::shown_effective();
    edited["amount_cents"] = json!(20000);
    let decisions = Decisions::builder()
        .decide("toolu_big", Approval::edit("lead", edited))
        .build()
        .unwrap();
    let resumed = toolgate::block_on(d.session(ctx()).resume(&turn, &decisions)).unwrap();
    assert_eq!(
        answer(resumed)["content"][1]["content"],
        "paid 20000 on o_1",
        "the edit ran"
    );
    assert_eq!(
        paid.inputs()[1],
        sealed::real("o_1", 20000),
        "with the real PIN and token"
    );

    // A PIN typed anew is the person's.
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let d = sealed::dispatcher(sealed::kept(&lines), &paid, Some(sealed::keys()));
    let turn = pause(&d);
    let mut edited = sealed::shown_effective();
    edited["card"]["pin"] = json!("pin-typed-anew");
    let decisions = Decisions::builder()
        .decide("toolu_big", Approval::edit("lead", edited))
        .build()
        .unwrap();
    toolgate::block_on(d.session(ctx()).resume(&turn, &decisions)).unwrap();
    let mut want = sealed::real("o_1", 25000);
    want["card"]["pin"] = json!("pin-typed-anew");
    assert_eq!(paid.inputs()[1], want);
    no_secret_in(&lines);
}

#[test]
fn a_denied_call_with_hidden_fields_runs_nothing_and_is_answered() {
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let d = sealed::dispatcher(sealed::kept(&lines), &paid, Some(sealed::keys()));
    let turn = pause(&d);
    let decisions = Decisions::builder()
        .decide("toolu_big", Approval::deny("lead", "too large"))
        .build()
        .unwrap();
    let resumed = toolgate::block_on(d.session(ctx()).resume(&turn, &decisions)).unwrap();
    assert_eq!(
        answer(resumed)["content"][1],
        json!({"type": "tool_result", "tool_use_id": "toolu_big", "is_error": true,
               "content": "BLOCKED: a person declined this call: too large"})
    );
    assert_eq!(paid.inputs().len(), 1);
    no_secret_in(&lines);
}

#[test]
fn a_gemini_turn_keeps_its_call_masked() {
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let d = sealed::dispatcher(sealed::kept(&lines), &paid, Some(sealed::keys()));
    let candidate = json!({"finishReason": "STOP", "content": {"role": "model", "parts": [
        {"functionCall": {"id": "toolu_big", "name": "pay", "args": sealed::sent("o_1", 25000)}}
    ]}});
    let reply = toolgate::block_on(d.session(ctx()).respond_gemini_candidate(&candidate, 0));
    let Reply::Pending(turn) = reply.unwrap() else {
        panic!("it pauses");
    };
    let text = serde_json::to_string(&turn).unwrap();
    assert_eq!(sealed::secrets_in(text.as_bytes()), Vec::<String>::new());
    let kept = serde_json::to_value(&turn).unwrap()["blocks"][0]["call"].clone();
    assert_eq!(
        kept,
        json!({"functionCall": {"id": "toolu_big", "name": "pay", "args": sealed::shown_input()}})
    );
    let resumed = toolgate::block_on(d.session(ctx()).resume(&turn, &approved(&turn)));
    assert_eq!(
        answer(resumed.unwrap()),
        json!([{"functionResponse": {"id": "toolu_big", "name": "pay",
                                     "response": {"output": "paid 25000 on o_1"}}}])
    );
    assert_eq!(paid.inputs(), [sealed::real("o_1", 25000)]);
    no_secret_in(&lines);
}

#[test]
fn a_paused_call_blocked_by_a_later_halt_is_replayed_not_refused_on_retry() {
    let paid = Paid::default();
    let lines = sealed::Lines::default();
    let d = sealed::builder(sealed::kept(&lines), &paid)
        .pre_hook(PreHookDef::sync(
            "app::broken",
            1,
            |_env, call: &ToolUse| {
                if call.input["order_id"] == "o_halt" {
                    return Err(HookError::new("the rule's database is down"));
                }
                Ok(Decision::Allow)
            },
        ))
        .seal_keys(sealed::keys())
        .build()
        .unwrap();
    let message = support::assistant_with_id(
        "msg_halt",
        json!([
            {"type": "tool_use", "id": "toolu_big", "name": "pay",
             "input": sealed::sent("o_1", 25000)},
            {"type": "tool_use", "id": "toolu_halt", "name": "pay",
             "input": sealed::sent("o_halt", 100)}
        ]),
        "tool_use",
    );
    let session = d.session(ctx());
    let halted = toolgate::block_on(session.respond(&message)).unwrap_err();
    let first = halted.halt().unwrap().answer().clone();
    assert_eq!(
        first.tool_results().next().unwrap().content_text(),
        "BLOCKED: this call needs a person's approval, and none can be given here (payments \
         above 20000 cents). Tell the user it was not done and that a person must approve it."
    );
    // The retry: the paused call was remembered with its real input, so it is replayed.
    let again = toolgate::block_on(session.respond(&message)).unwrap_err();
    assert_eq!(again.halt().unwrap().answer().content[0], first.content[0]);
    assert_eq!(paid.inputs(), Vec::<Value>::new());
    no_secret_in(&lines);
}

/// A call's outcome and operator detail, as an observer saw them.
type Seen = (String, Option<String>);

#[test]
fn a_mask_that_panics_blocks_the_call_instead_of_pausing_it() {
    support::quiet_injected_panics();
    let seen: Arc<std::sync::Mutex<Vec<Seen>>> = Arc::default();
    let record = Arc::clone(&seen);
    let rules = toolgate::audit::Redaction::new()
        .field_with("pay", "/card/pin", |_| {
            panic!("{} in a mask", support::INJECTED)
        })
        .unwrap();
    let d = toolgate::Dispatcher::builder()
        .tool(toolgate::dispatch::ToolDef::sync(
            "pay",
            "Charges a card.",
            |_env, _p: sealed::Pay| Ok("paid".to_owned()),
        ))
        .pre_hook(PreHookDef::sync("app::ask", 10, |_env, _c: &ToolUse| {
            Ok(Decision::ask("every payment"))
        }))
        .post_hook(toolgate::dispatch::PostHookDef::sync(
            "app::seen",
            move |_env, r| {
                let detail = r.detail.map(str::to_owned);
                record
                    .lock()
                    .unwrap()
                    .push((r.outcome.as_str().to_owned(), detail));
                Ok(())
            },
        ))
        .audit_log(
            sealed::kept(&sealed::Lines::default())
                .redaction(rules)
                .build()
                .unwrap(),
        )
        .seal_keys(sealed::keys())
        .build()
        .unwrap();
    let message = support::assistant(
        json!([{"type": "tool_use", "id": "toolu_big", "name": "pay",
                "input": sealed::sent("o_1", 25000)}]),
        "tool_use",
    );
    let reply = toolgate::block_on(d.session(ctx()).respond(&message)).unwrap();
    assert!(matches!(reply, Reply::Answer(_)), "not paused: {reply:?}");
    let detail = format!(
        "the call needs a person's approval (asked by `app::ask`: every payment); the audit log's \
         redaction panicked on the input of tool `pay`: {} in a mask; it cannot pause for a \
         person",
        support::INJECTED
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [("blocked".to_owned(), Some(detail))]
    );
}
