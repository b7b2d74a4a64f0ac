//! `toolgate::testing::Replay`, what a user's own tests call: recorded turns of every API (the
//! fixtures of `tests/fixtures/`) replayed through a dispatcher with a fixed context, each
//! call's outcome, effective input and text; a transcript's assistant turns in one session (a
//! turn replayed again is answered from memory); a pause resumed; a halt; what is not a turn.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use toolgate::{
    Decision, Dispatcher, HookContext, ToolUse,
    approval::Decisions,
    audit::Outcome,
    dispatch::{Clock, DispatcherBuilder, Effect, HookError, PreHookDef, ToolDef},
    testing::{Replay, ReplayError},
};

use crate::support;

/// `get_weather`'s arguments in both spellings the fixtures use.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Weather {
    /// The place.
    location: String,
    /// `celsius` or `fahrenheit` (Anthropic's examples).
    unit: Option<String>,
    /// The same (OpenAI's and Gemini's examples).
    units: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Time {
    /// An IANA time zone.
    timezone: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Email {
    /// The address.
    to: String,
    /// The subject.
    #[allow(dead_code)]
    subject: String,
    /// The body.
    #[allow(dead_code)]
    body: String,
}

/// The agent under test: weather (units default to celsius, a rewrite), time, and e-mail, which
/// asks a person for an address outside the company and halts on an empty one.
fn agent() -> DispatcherBuilder {
    Dispatcher::builder()
        .tool(
            ToolDef::sync("get_weather", "Gets the weather.", |_env, w: Weather| {
                let unit = w.unit.or(w.units).unwrap_or_default();
                Ok(format!("{}: 21 degrees {unit}", w.location))
            })
            .effect(Effect::read()),
        )
        .tool(ToolDef::sync(
            "get_time",
            "Gets the time.",
            |_env, t: Time| Ok(format!("10:15 in {}", t.timezone)),
        ))
        .tool(
            ToolDef::sync("send_email", "Sends an e-mail.", |_env, e: Email| {
                Ok(format!("sent to {}", e.to))
            })
            .effect(Effect::write()),
        )
        .pre_hook(
            PreHookDef::sync("app::celsius", 5, |_env, call: &ToolUse| {
                let set = |k: &str| call.input.get(k).is_some_and(|v| !v.is_null());
                Ok(if set("unit") || set("units") {
                    Decision::Allow
                } else {
                    let mut input = call.input.clone();
                    input["unit"] = json!("celsius");
                    Decision::Rewrite(input)
                })
            })
            .tools(["get_weather"]),
        )
        .pre_hook(
            PreHookDef::sync("app::outside_mail", 10, |_env, call: &ToolUse| {
                match call.input["to"].as_str() {
                    Some("") | None => Err(HookError::new("no address")),
                    Some(to) if to.ends_with("@example.com") => Ok(Decision::ask(
                        "mail outside the company needs a person's approval",
                    )),
                    Some(_) => Ok(Decision::Allow),
                }
            })
            .tools(["send_email"]),
        )
}

fn context() -> HookContext {
    HookContext::builder("u_1", "sess_replay")
        .clock(Clock::fixed(
            UNIX_EPOCH + Duration::from_secs(1_795_515_300),
        ))
        .build()
}

#[test]
fn a_recorded_messages_api_response_replays_into_each_calls_outcome_input_and_text() {
    let replay = Replay::new(agent(), context()).unwrap();
    let turn = replay
        .turn(&support::fixture(
            "anthropic/responses/02_parallel_tool_use.json",
        ))
        .unwrap();
    assert_eq!(
        turn.outcomes(),
        [
            ("toolu_01AbQ4wEr6TyU8iO0pAsD2fG", Outcome::Ok),
            ("toolu_01HjK3lZx5Cv7Bn9Mq1We3Rt", Outcome::Ok),
            ("toolu_01Yu6Io8Pa0Sd2Fg4Hj6Kl8Z", Outcome::Ok),
        ]
    );
    let chicago = &turn["toolu_01AbQ4wEr6TyU8iO0pAsD2fG"];
    assert_eq!(
        chicago.input,
        json!({"location": "Chicago, IL", "unit": "celsius"})
    );
    assert_eq!(chicago.rewritten_by, ["app::celsius"]);
    assert_eq!(chicago.text, "Chicago, IL: 21 degrees celsius");
    let denver = &turn["toolu_01HjK3lZx5Cv7Bn9Mq1We3Rt"];
    assert!(denver.rewritten_by.is_empty());
    assert_eq!(
        turn["toolu_01Yu6Io8Pa0Sd2Fg4Hj6Kl8Z"].text,
        "10:15 in America/Chicago"
    );
    // The answer to send the model: one user message, a result per call, in order.
    let answer = turn.answer.unwrap();
    assert_eq!(answer["role"], "user");
    assert_eq!(answer["content"].as_array().unwrap().len(), 3);
    assert!(turn.pending.is_none() && turn.error.is_none());
}

#[test]
fn every_apis_recorded_turn_replays_through_the_same_rules() {
    let replay = Replay::new(agent(), context()).unwrap();
    // OpenAI Chat Completions: a completion; the e-mail outside the company waits for a person.
    let chat = replay
        .turn(&support::fixture(
            "openai/chat_completion_parallel_tool_calls.json",
        ))
        .unwrap();
    assert_eq!(
        chat.outcomes(),
        [
            ("call_Lq8Vn2Rt6Yx0Pz4Mk7Bw1Jd", Outcome::Ok),
            ("call_Hs3Fd9Gk1Jl5Zx7Cv2Bn8Mq", Outcome::Ok),
            ("call_Wp6Te4Ry2Ui8Oa0Sd3Fg5Hj", Outcome::AwaitingApproval),
        ]
    );
    // `units: null` is not set: the rule fills in the unit.
    assert_eq!(
        chat["call_Hs3Fd9Gk1Jl5Zx7Cv2Bn8Mq"].input,
        json!({"location": "Quito, Ecuador", "units": null, "unit": "celsius"})
    );
    let mail = &chat["call_Wp6Te4Ry2Ui8Oa0Sd3Fg5Hj"];
    assert_eq!(mail.asked_by[0].hook, "app::outside_mail");
    assert_eq!(mail.text, "");
    let pending = chat.pending.expect("the turn paused");
    // The person approves what they were shown; the resumed call runs.
    let shown = pending.awaiting().next().unwrap();
    let decisions = Decisions::builder().approve(shown, "lead").build().unwrap();
    let resumed = replay.resume(&pending, &decisions).unwrap();
    assert_eq!(
        resumed.outcomes(),
        [("call_Wp6Te4Ry2Ui8Oa0Sd3Fg5Hj", Outcome::Ok)]
    );
    assert_eq!(resumed.calls[0].text, "sent to maria@example.com");
    // OpenAI Responses and Gemini.
    let responses = replay
        .turn(&support::fixture("openai/responses_function_calls.json"))
        .unwrap();
    assert_eq!(
        responses["call_Rk2Wq8Ls4Nd6Vb0Xe3Tg5Yh7"].text,
        "Lisbon, Portugal: 21 degrees celsius"
    );
    let gemini = replay
        .turn(&support::fixture("gemini/candidate_function_calls.json"))
        .unwrap();
    // Gemini's calls have no id: the session names them by the turn's place (its third; a
    // resume is no turn).
    assert_eq!(
        gemini.outcomes(),
        [("gemini-2-0", Outcome::Ok), ("gemini-2-1", Outcome::Ok)]
    );
    assert_eq!(
        gemini["gemini-2-1"].input,
        json!({"location": "Quito, Ecuador", "unit": "celsius"})
    );
}

#[test]
fn a_transcripts_assistant_turns_replay_in_one_session_and_a_turn_again_is_a_replay() {
    let replay = Replay::new(agent(), context()).unwrap();
    let weather = support::fixture("anthropic/responses/02_parallel_tool_use.json");
    let id = "toolu_01AbQ4wEr6TyU8iO0pAsD2fG";
    // A conversation as the Messages API takes it: the user's turns are skipped.
    let conversation = json!({"messages": [
        {"role": "user", "content": "Weather in Chicago and Denver, and the time in Chicago?"},
        weather,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "…"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}],
         "stop_reason": "end_turn"},
    ]});
    let turns = replay.transcript(&conversation).unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].calls.len(), 3);
    assert_eq!(turns[0][id].outcome, Outcome::Ok);
    assert!(!turns[0][id].replay);
    assert!(turns[1].calls.is_empty());
    assert_eq!(turns[1].stop_reason.as_deref(), Some("end_turn"));
    // The same turn again (a retried request): answered from the session's memory.
    let again = replay.turn(&conversation["messages"][1]).unwrap();
    assert!(again.calls.iter().all(|c| c.replay));
    assert_eq!(again[id].text, turns[0][id].text);
}

#[test]
fn a_rule_that_cannot_decide_halts_the_turn_and_the_replay_shows_it() {
    let replay = Replay::new(agent(), context()).unwrap();
    let turn = replay
        .turn(
            &json!({"role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "send_email",
             "input": {"to": "", "subject": "s", "body": "b"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time",
             "input": {"timezone": "UTC"}}]}),
        )
        .unwrap();
    assert_eq!(
        turn.outcomes(),
        [
            ("toolu_1", Outcome::HookFailed),
            ("toolu_2", Outcome::NotRun)
        ]
    );
    assert_eq!(
        turn["toolu_1"].blocked_by.as_deref(),
        Some("app::outside_mail")
    );
    let halt = turn.error.as_ref().and_then(|e| e.halt()).expect("a halt");
    assert_eq!(halt.hook, "app::outside_mail");
    assert!(turn.answer.is_none());
}

#[test]
fn what_is_not_a_turn_or_a_transcript_is_refused_naming_what_it_has() {
    let replay = Replay::new(agent(), context()).unwrap();
    let e = replay.turn(&json!({"id": "x", "model": "m"})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an assistant turn: expected a Messages API message (`role: \"assistant\"`, a \
         `content` array), an OpenAI chat completion, choice or assistant message with \
         `tool_calls`, a Responses API response (`output`), or a Gemini response, candidate or \
         `model` content; this value has the keys `id`, `model`"
    );
    let user = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    assert_eq!(replay.turn(&user).unwrap_err(), ReplayError::NotAssistant);
    let e = replay.transcript(&json!("messages")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a transcript: expected a JSON array of turns, or a conversation with `messages` \
         (Messages API, OpenAI Chat Completions) or `contents` (Gemini); this value has a string"
    );
    let bad_block = json!([{"role": "assistant", "content": [{"type": "tool_use"}]}]);
    let e = replay.transcript(&bad_block).unwrap_err();
    let ReplayError::InTranscript { index: 0, error } = &e else {
        panic!("{e:?}");
    };
    assert!(matches!(**error, ReplayError::Unreadable(_)), "{error:?}");
}
