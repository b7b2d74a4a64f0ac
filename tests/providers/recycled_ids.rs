//! The other APIs' turns whose call ids recur: vLLM (here serving a Kimi-K2 model) names a
//! Chat Completions turn's calls `functions.{name}:{position}`, so `functions.get_time:0` comes
//! in every turn that asks the time first; Responses and Gemini calls can recur the same way.
//! Each turn is named by its response (the completion's `id`, the Response's `id`, the Gemini
//! candidate's turn number): a later turn's call runs, with the same input or another, and a
//! resend of a turn replays that turn's answer. A Chat Completions choice passed without its
//! completion has no id: a call id it shares with an earlier call is refused, naming it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    CallError, Dispatcher, HookContext, Reply, RespondError, Session, audit::AuditLog,
    dispatch::ToolDef,
};

use crate::support::{TempDir, fixture, json_lines};

/// `get_time`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct Time {
    /// An IANA zone; UTC when absent.
    timezone: Option<String>,
}

struct World {
    session: Session,
    runs: Arc<AtomicUsize>,
    dir: TempDir,
}

/// A session whose `get_time` moves five minutes at each run, so a run and a replay read apart.
fn world(name: &str) -> World {
    let runs = Arc::new(AtomicUsize::new(0));
    let ran = Arc::clone(&runs);
    let dir = TempDir::new(name);
    let d = Dispatcher::builder()
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
        .unwrap();
    World {
        session: d.session(HookContext::builder("u_001", "sess_recycled").build()),
        runs,
        dir,
    }
}

impl World {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// `(tool_use_id, content, replay)` of each audit line.
    fn lines(&self) -> Vec<(String, String, bool)> {
        json_lines(&self.dir.join("audit_log.jsonl"))
            .into_iter()
            .map(|l| {
                (
                    l["tool_use_id"].as_str().unwrap().to_owned(),
                    l["content"].as_str().unwrap().to_owned(),
                    l.get("replay") == Some(&json!(true)),
                )
            })
            .collect()
    }
}

/// The one answer item of a turn.
fn item(reply: Result<Reply<Vec<Value>>, RespondError>) -> Value {
    match reply {
        Ok(Reply::Answer(mut items)) if items.len() == 1 => items.remove(0),
        other => panic!("expected one answer item, got {other:?}"),
    }
}

fn line(id: &str, content: &str, replay: bool) -> (String, String, bool) {
    (id.to_owned(), content.to_owned(), replay)
}

const ID: &str = "functions.get_time:0";

#[test]
fn a_vllm_call_id_recurring_in_later_completions_runs_each_turn_and_replays_each_resend() {
    let w = world("recycled-chat");
    let turn1 = fixture("openai/vllm/turn1_get_time.json");
    let turn2 = fixture("openai/vllm/turn2_get_time_again.json");
    let turn3 = fixture("openai/vllm/turn3_get_time_oslo.json");
    let chat = |turn: &Value| item(toolgate::block_on(w.session.respond_openai_choice(turn)));
    let tool = |content: &str| json!({"role": "tool", "tool_call_id": ID, "content": content});
    assert_eq!(chat(&turn1), tool("12:00 UTC"));
    // The same call id and the same empty arguments in a later turn: run again, not the first
    // turn's time.
    assert_eq!(chat(&turn2), tool("12:05 UTC"));
    // Other arguments under the same id, a third turn: run.
    assert_eq!(chat(&turn3), tool("12:10 Europe/Oslo"));
    // Each completion sent again is answered from memory with its own answer.
    assert_eq!(chat(&turn2), tool("12:05 UTC"));
    assert_eq!(chat(&turn1), tool("12:00 UTC"));
    assert_eq!(chat(&turn3), tool("12:10 Europe/Oslo"));
    assert_eq!(w.runs(), 3);
    assert_eq!(
        w.lines(),
        [
            line(ID, "12:00 UTC", false),
            line(ID, "12:05 UTC", false),
            line(ID, "12:10 Europe/Oslo", false),
            line(ID, "12:05 UTC", true),
            line(ID, "12:00 UTC", true),
            line(ID, "12:10 Europe/Oslo", true),
        ]
    );
}

#[test]
fn a_choice_passed_without_its_completion_that_reuses_a_call_id_is_refused_naming_it() {
    let w = world("recycled-choice");
    let turn1 = fixture("openai/vllm/turn1_get_time.json");
    let turn2 = fixture("openai/vllm/turn2_get_time_again.json");
    let choice = |turn: &Value| turn["choices"][0].clone();
    let first = toolgate::block_on(w.session.respond_openai_choice(&choice(&turn1)));
    assert_eq!(item(first)["content"], "12:00 UTC");
    for turn in [choice(&turn1), choice(&turn2), turn2.clone()] {
        let e = toolgate::block_on(w.session.respond_openai_choice(&turn)).unwrap_err();
        assert!(
            matches!(&e, RespondError::Call(CallError::IdRecycled { tool_use_id }) if tool_use_id == ID),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "tool_use \"functions.get_time:0\" was used before in this session, and one of the \
             two calls came without its model response's id, so a resend of the same call \
             cannot be told from a later turn that reuses the id; nothing was run: pass each \
             response as the API returned it, with its `id`"
        );
    }
    assert_eq!(w.runs(), 1);
    assert_eq!(w.lines(), [line(ID, "12:00 UTC", false)]);
}

/// A Response `id` with one `function_call` `functions.get_time:0` of `arguments`, or, with no
/// `id`, a Response without one.
fn response(id: Option<&str>, arguments: &str) -> Value {
    let mut r = json!({
        "object": "response", "status": "completed", "model": "openai/gpt-oss-120b",
        "output": [{"type": "function_call", "id": "fc_0", "call_id": ID, "name": "get_time",
                    "arguments": arguments, "status": "completed"}]
    });
    if let Some(id) = id {
        r["id"] = json!(id);
    }
    r
}

#[test]
fn a_responses_call_id_recurring_in_later_responses_runs_each_turn_and_replays_each_resend() {
    let w = world("recycled-responses");
    let respond = |r: &Value| item(toolgate::block_on(w.session.respond_openai_response(r)));
    let output =
        |text: &str| json!({"type": "function_call_output", "call_id": ID, "output": text});
    let (a, b) = (
        response(Some("resp_A"), "{}"),
        response(Some("resp_B"), "{}"),
    );
    let c = response(Some("resp_C"), r#"{"timezone":"Asia/Tokyo"}"#);
    assert_eq!(respond(&a), output("12:00 UTC"));
    assert_eq!(respond(&b), output("12:05 UTC"));
    assert_eq!(respond(&c), output("12:10 Asia/Tokyo"));
    assert_eq!(respond(&a), output("12:00 UTC"));
    assert_eq!(respond(&b), output("12:05 UTC"));
    assert_eq!(w.runs(), 3);
    // A Response without its id cannot be told from a resend.
    let e = toolgate::block_on(w.session.respond_openai_response(&response(None, "{}")));
    assert!(matches!(
        e,
        Err(RespondError::Call(CallError::IdRecycled { tool_use_id })) if tool_use_id == ID
    ));
    assert_eq!(w.runs(), 3);
}

/// A Gemini candidate with one `functionCall` `functions.get_time:0` of `args`.
fn candidate(args: Value) -> Value {
    json!({"finishReason": "STOP", "content": {"role": "model", "parts": [
        {"functionCall": {"id": ID, "name": "get_time", "args": args}}]}})
}

#[test]
fn a_gemini_call_id_recurring_in_later_turns_runs_each_turn_and_replays_each_resend() {
    let w = world("recycled-gemini");
    let respond = |c: &Value, turn| {
        item(toolgate::block_on(
            w.session.respond_gemini_candidate(c, turn),
        ))
    };
    let part = |text: &str| json!({"functionResponse": {"id": ID, "name": "get_time", "response": {"output": text}}});
    let (utc, lima) = (
        candidate(json!({})),
        candidate(json!({"timezone": "America/Lima"})),
    );
    assert_eq!(respond(&utc, 1), part("12:00 UTC"));
    assert_eq!(respond(&utc, 3), part("12:05 UTC"));
    assert_eq!(respond(&lima, 5), part("12:10 America/Lima"));
    assert_eq!(respond(&utc, 3), part("12:05 UTC"));
    assert_eq!(respond(&utc, 1), part("12:00 UTC"));
    assert_eq!(w.runs(), 3);
    // Another input under the id in a turn already answered: the id names one call there.
    let e = toolgate::block_on(w.session.respond_gemini_candidate(&lima, 1)).unwrap_err();
    assert!(matches!(
        e,
        RespondError::Call(CallError::IdReused { tool_use_id }) if tool_use_id == ID
    ));
    assert_eq!(w.runs(), 3);
}
