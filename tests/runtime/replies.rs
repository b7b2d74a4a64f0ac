//! Every answer is one the API accepts: a message without `tool_use` blocks gets
//! `Reply::NothingToRun` with its `stop_reason`, never an empty user message (the API refuses one:
//! "all messages must have non-empty content"); the request's assistant turn holds `role` and
//! `content` only.

use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, Message, Reply, audit::AuditLog, content::Conversation,
    dispatch::ToolDef,
};

use crate::support::{TempDir, json_lines};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

fn dispatcher(dir: &TempDir) -> Dispatcher {
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "ping",
            "Answers pong.",
            |_env, _n: Nothing| Ok("pong".to_owned()),
        ))
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap()
}

#[test]
fn a_message_without_tool_use_gets_nothing_to_run_with_its_stop_reason() {
    let dir = TempDir::new("replies-nothing");
    let d = dispatcher(&dir);
    let s = d.session(HookContext::builder("u", "sess_replies").build());
    let text = json!([{"type": "text", "text": "Done."}]);
    // `pause_turn` comes with server-tool blocks, which are not `tool_use`.
    let server = json!([{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                         "input": {"query": "refund policy"}}]);
    let cases: [(Value, Value); 7] = [
        (text.clone(), json!("end_turn")),
        (text.clone(), json!("stop_sequence")),
        (json!([]), json!("refusal")),
        (server, json!("pause_turn")),
        (text.clone(), json!("max_tokens")),
        (text.clone(), Value::Null),
        (
            json!([{"type": "thinking", "thinking": "…", "signature": "c2ln"}]),
            json!("end_turn"),
        ),
    ];
    for (content, stop_reason) in cases {
        let message: Message = serde_json::from_value(
            json!({"role": "assistant", "content": content, "stop_reason": stop_reason}),
        )
        .unwrap();
        let reply = toolgate::block_on(s.respond(&message)).unwrap();
        assert_eq!(
            reply,
            Reply::NothingToRun {
                stop_reason: stop_reason.as_str().map(str::to_owned)
            },
            "{stop_reason}"
        );
        assert_eq!(reply.answer(), None);
    }
    // Nothing ran and nothing was audited.
    assert!(json_lines(&dir.join("audit_log.jsonl")).is_empty());
    assert_eq!(s.end().calls, 0);
}

#[test]
fn a_message_with_tool_use_gets_an_answer() {
    let dir = TempDir::new("replies-answer");
    let s = dispatcher(&dir).session(HookContext::builder("u", "sess_replies").build());
    let message: Message = serde_json::from_value(json!({
        "role": "assistant", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}]
    }))
    .unwrap();
    let reply = toolgate::block_on(s.respond(&message)).unwrap();
    assert_eq!(
        serde_json::to_value(reply.into_answer().unwrap()).unwrap(),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "pong"}
        ]})
    );
}

#[test]
fn a_conversation_keeps_each_turn_as_a_request_may_hold_it() {
    let response: Message = serde_json::from_value(json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "Ping it.", "signature": "c2ln"},
            {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {},
             "cache_control": {"type": "ephemeral"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    }))
    .unwrap();
    let turn = serde_json::to_value(response.request_turn()).unwrap();
    assert_eq!(
        turn,
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Ping it.", "signature": "c2ln"},
            {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {},
             "cache_control": {"type": "ephemeral"}}
        ]})
    );
    let mut conversation = Conversation::new();
    conversation.push_user_text("Ping, please.");
    conversation.push_response(&response);
    assert_eq!(conversation.messages().len(), 2);
    assert_eq!(
        serde_json::to_value(&conversation).unwrap(),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Ping, please."}]},
            turn
        ])
    );
}
