//! The other APIs' whole turns through a session: a turn cut at its output limit runs nothing
//! (OpenAI Chat `finish_reason: "length"`, a Responses response or `function_call` item with
//! `status: "incomplete"`, Gemini `finishReason: "MAX_TOKENS"`), each call audited as `not_run`; a
//! turn without calls is `NothingToRun`; ids follow each API's rules (a Gemini call without an id
//! gets `gemini-{turn}-{i}`).

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    CallError, Dispatcher, HookContext, Reply, RespondError, Session,
    audit::{AuditLog, Outcome},
    content::IdRule,
    dispatch::ToolDef,
};

use crate::support::{TempDir, fixture, json_lines};

/// `get_weather`'s arguments, as the OpenAI fixtures send them.
#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The place.
    location: String,
    /// `celsius` or `fahrenheit`.
    units: Option<String>,
}

/// `send_email`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct Email {
    /// The recipient.
    to: String,
    /// The subject.
    #[allow(dead_code)]
    subject: String,
    /// The body.
    #[allow(dead_code)]
    body: String,
}

struct World {
    session: Session,
    ran: Arc<Mutex<Vec<String>>>,
    dir: TempDir,
}

fn world() -> World {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let (weather, email) = (Arc::clone(&ran), Arc::clone(&ran));
    let dir = TempDir::new("turns");
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "get_weather",
            "Gets the weather.",
            move |_env, w: Weather| {
                weather.lock().unwrap().push(w.location.clone());
                let units = w.units.unwrap_or_else(|| "celsius".to_owned());
                Ok(format!("{}: 19 {units}", w.location))
            },
        ))
        .tool(ToolDef::sync(
            "send_email",
            "Sends an email.",
            move |_env, e: Email| {
                email.lock().unwrap().push(e.to.clone());
                Ok(format!("sent to {}", e.to))
            },
        ))
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    World {
        session: d.session(HookContext::builder("u_001", "sess_turns").build()),
        ran,
        dir,
    }
}

impl World {
    /// `(tool_use_id, outcome, content, replay)` of each audit line.
    fn lines(&self) -> Vec<(String, String, String, bool)> {
        json_lines(&self.dir.join("audit_log.jsonl"))
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
}

fn not_run(id: &str) -> (String, String, String, bool) {
    (
        id.to_owned(),
        "not_run".to_owned(),
        "Not run: the turn was cut at its output limit, so this call may be cut off.".to_owned(),
        false,
    )
}

#[test]
fn an_openai_choice_is_answered_whole_and_a_length_cut_one_runs_nothing() {
    let w = world();
    let completion = fixture("openai/chat_completion_parallel_tool_calls.json");
    let reply = toolgate::block_on(w.session.respond_openai_choice(&completion)).unwrap();
    assert_eq!(
        reply,
        Reply::Answer(vec![
            json!({"role": "tool", "tool_call_id": "call_Lq8Vn2Rt6Yx0Pz4Mk7Bw1Jd",
                   "content": "Lisbon, Portugal: 19 celsius"}),
            json!({"role": "tool", "tool_call_id": "call_Hs3Fd9Gk1Jl5Zx7Cv2Bn8Mq",
                   "content": "Quito, Ecuador: 19 celsius"}),
            json!({"role": "tool", "tool_call_id": "call_Wp6Te4Ry2Ui8Oa0Sd3Fg5Hj",
                   "content": "sent to maria@example.com"}),
        ])
    );
    // The completion sent again is answered from memory. The choice alone has no completion
    // id: nothing tells it from a later turn that reuses the call ids, so it is refused.
    assert_eq!(
        toolgate::block_on(w.session.respond_openai_choice(&completion)).unwrap(),
        reply
    );
    let choice = &completion["choices"][0];
    let err = toolgate::block_on(w.session.respond_openai_choice(choice)).unwrap_err();
    assert!(
        matches!(&err, RespondError::Call(CallError::IdRecycled { tool_use_id })
            if tool_use_id == "call_Lq8Vn2Rt6Yx0Pz4Mk7Bw1Jd"),
        "{err:?}"
    );
    assert_eq!(w.ran.lock().unwrap().len(), 3);
    // In a session of its own, the choice alone reads the same.
    let fresh = world();
    assert_eq!(
        toolgate::block_on(fresh.session.respond_openai_choice(choice)).unwrap(),
        reply
    );

    let cut = fixture("openai/chat_completion_length.json");
    let err = toolgate::block_on(w.session.respond_openai_choice(&cut)).unwrap_err();
    assert!(matches!(err, RespondError::Truncated { tool_uses: 3, .. }));
    assert_eq!(
        err.to_string(),
        "the OpenAI Chat Completions turn was cut at its output limit (finish_reason: \
         \"length\"), so its 3 call(s) may be cut off and none was run; request the turn again \
         with a larger max_completion_tokens"
    );
    assert_eq!(w.ran.lock().unwrap().len(), 3, "nothing more ran");
    let lines = w.lines();
    assert_eq!(
        lines[6..],
        [
            not_run("call_Lq8Vn2Rt6Yx0Pz4Mk7Bw1Jd"),
            not_run("call_Hs3Fd9Gk1Jl5Zx7Cv2Bn8Mq"),
            not_run("call_Wp6Te4Ry2Ui8Oa0Sd3Fg5Hj"),
        ]
    );
    assert_eq!(
        lines.iter().filter(|l| l.3).count(),
        3,
        "the second read replayed"
    );
}

#[test]
fn a_choice_without_tool_calls_and_a_length_cut_text_run_nothing() {
    let w = world();
    for finish in ["stop", "length", "content_filter"] {
        let choice = json!({"index": 0, "finish_reason": finish,
            "message": {"role": "assistant", "content": "It is sunny.", "refusal": null}});
        assert_eq!(
            toolgate::block_on(w.session.respond_openai_choice(&choice)).unwrap(),
            Reply::NothingToRun {
                stop_reason: Some(finish.to_owned())
            }
        );
    }
    assert!(w.lines().is_empty());
}

#[test]
fn openai_ids_must_be_unique_but_not_of_the_messages_api_pattern() {
    let w = world();
    let call = |id: &str, location: &str| {
        json!({"id": id, "type": "function", "function": {"name": "get_weather",
               "arguments": json!({"location": location}).to_string()}})
    };
    let choice = |calls: Vec<Value>| {
        json!({"index": 0, "finish_reason": "tool_calls",
               "message": {"role": "assistant", "content": null, "tool_calls": calls}})
    };
    let repeated = choice(vec![call("call_1", "Lisbon"), call("call_1", "Quito")]);
    let Err(RespondError::Id(e)) = toolgate::block_on(w.session.respond_openai_choice(&repeated))
    else {
        panic!("a repeated id refuses the turn");
    };
    assert_eq!((e.block, e.rule), (2, IdRule::Repeated));
    // `call.1` is no Messages API id, but OpenAI documents no pattern: it runs.
    let dotted = choice(vec![call("call.1", "Lisbon")]);
    let Reply::Answer(items) =
        toolgate::block_on(w.session.respond_openai_choice(&dotted)).unwrap()
    else {
        panic!("an answer");
    };
    assert_eq!(items[0]["tool_call_id"], "call.1");
    assert_eq!(*w.ran.lock().unwrap(), ["Lisbon"]);
}

#[test]
fn a_responses_turn_is_answered_whole_and_an_incomplete_one_runs_nothing() {
    let w = world();
    let response = fixture("openai/responses_function_calls.json");
    assert_eq!(
        toolgate::block_on(w.session.respond_openai_response(&response)).unwrap(),
        Reply::Answer(vec![
            json!({"type": "function_call_output", "call_id": "call_Rk2Wq8Ls4Nd6Vb0Xe3Tg5Yh7",
                   "output": "Lisbon, Portugal: 19 celsius"}),
            json!({"type": "function_call_output", "call_id": "call_Pm7Jc1Hf5Za9Ku3Qo6Wr2Ex4",
                   "output": "Quito, Ecuador: 19 celsius"}),
        ])
    );

    let incomplete = fixture("openai/responses_incomplete.json");
    let err = toolgate::block_on(w.session.respond_openai_response(&incomplete)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the OpenAI Responses turn was cut at its output limit (status: \"incomplete\", \
         incomplete_details.reason: \"max_output_tokens\"), so its 2 call(s) may be cut off and \
         none was run; request the turn again with a larger max_output_tokens"
    );
    // A completed response holding an incomplete item is cut too.
    let mut item_cut = incomplete.clone();
    item_cut["status"] = json!("completed");
    item_cut["incomplete_details"] = Value::Null;
    item_cut["output"][0]["call_id"] = json!("call_other_1");
    item_cut["output"][1]["call_id"] = json!("call_other_2");
    let err = toolgate::block_on(w.session.respond_openai_response(&item_cut)).unwrap_err();
    assert!(
        matches!(&err, RespondError::Truncated { signal, tool_uses: 2, .. }
            if signal == "function_call item 2 has status: \"incomplete\""),
        "{err}"
    );
    assert_eq!(w.ran.lock().unwrap().len(), 2);
    let lines = w.lines();
    assert_eq!(
        lines[2..],
        [
            not_run("call_Rk2Wq8Ls4Nd6Vb0Xe3Tg5Yh7"),
            not_run("call_Pm7Jc1Hf5Za9Ku3Qo6Wr2Ex4"),
            not_run("call_other_1"),
            not_run("call_other_2"),
        ]
    );
    // A response with no function call: nothing to run, with its status.
    let text_only = json!({"id": "resp_1", "status": "completed", "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}
    ]});
    assert_eq!(
        toolgate::block_on(w.session.respond_openai_response(&text_only)).unwrap(),
        Reply::NothingToRun {
            stop_reason: Some("completed".to_owned())
        }
    );
}

#[test]
fn a_gemini_candidate_without_ids_gets_turn_ids_and_a_max_tokens_one_runs_nothing() {
    let w = world();
    let response = fixture("gemini/candidate_function_calls.json");
    let expected = Reply::Answer(vec![
        json!({"functionResponse": {"name": "get_weather",
               "response": {"output": "Lisbon, Portugal: 19 celsius"}}}),
        json!({"functionResponse": {"name": "get_weather",
               "response": {"output": "Quito, Ecuador: 19 celsius"}}}),
    ]);
    assert_eq!(
        toolgate::block_on(w.session.respond_gemini_candidate(&response, 4)).unwrap(),
        expected
    );
    // The host retries turn 4: answered from memory, nothing runs again.
    let candidate = &response["candidates"][0];
    assert_eq!(
        toolgate::block_on(w.session.respond_gemini_candidate(candidate, 4)).unwrap(),
        expected
    );
    assert_eq!(w.ran.lock().unwrap().len(), 2);

    let cut = fixture("gemini/candidate_max_tokens.json");
    let err = toolgate::block_on(w.session.respond_gemini_candidate(&cut, 5)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the Gemini turn was cut at its output limit (finishReason: \"MAX_TOKENS\"), so its 2 \
         call(s) may be cut off and none was run; request the turn again with a larger \
         maxOutputTokens"
    );
    assert_eq!(w.ran.lock().unwrap().len(), 2);
    let ok = |id: &str, content: &str, replay: bool| {
        (id.to_owned(), "ok".to_owned(), content.to_owned(), replay)
    };
    assert_eq!(
        w.lines(),
        [
            ok("gemini-4-0", "Lisbon, Portugal: 19 celsius", false),
            ok("gemini-4-1", "Quito, Ecuador: 19 celsius", false),
            ok("gemini-4-0", "Lisbon, Portugal: 19 celsius", true),
            ok("gemini-4-1", "Quito, Ecuador: 19 celsius", true),
            not_run("gemini-5-0"),
            not_run("gemini-5-1"),
        ]
    );
    let summary = w.session.end();
    assert_eq!(
        summary.outcomes.into_iter().collect::<Vec<_>>(),
        [(Outcome::Ok, 2), (Outcome::NotRun, 2)]
    );
    // Gemini's own ids are kept, and echoed.
    let w = world();
    let with_id = json!({"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc-9", "name": "get_weather", "args": {"location": "Oslo"}}}
    ]}, "finishReason": "STOP"});
    assert_eq!(
        toolgate::block_on(w.session.respond_gemini_candidate(&with_id, 0)).unwrap(),
        Reply::Answer(vec![
            json!({"functionResponse": {"id": "fc-9", "name": "get_weather",
            "response": {"output": "Oslo: 19 celsius"}}})
        ])
    );
    // A candidate without calls (a safety stop has no content at all): nothing to run.
    assert_eq!(
        toolgate::block_on(
            w.session
                .respond_gemini_candidate(&json!({"finishReason": "SAFETY"}), 1)
        )
        .unwrap(),
        Reply::NothingToRun {
            stop_reason: Some("SAFETY".to_owned())
        }
    );
}

#[test]
fn a_whole_response_with_several_choices_or_candidates_is_refused() {
    let w = world();
    let two = json!({"choices": [{"index": 0}, {"index": 1}]});
    let err = toolgate::block_on(w.session.respond_openai_choice(&two)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot read an OpenAI chat completion choice: `choices` has 2 entries; pass the one to \
         answer, not the whole response"
    );
    let none = json!({"candidates": []});
    let err = toolgate::block_on(w.session.respond_gemini_candidate(&none, 0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot read a Gemini candidate: `candidates` has 0 entries; pass the one to answer, \
         not the whole response"
    );
}
