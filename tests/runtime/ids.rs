//! Only ids the API accepts are run and answered: `respond` refuses a whole message whose
//! `tool_use` ids break the Messages API's rules (empty, not `^[a-zA-Z0-9_-]+$`, repeated), running
//! nothing and auditing every block as `not_run`; `call`, which serves every API, refuses only an
//! empty id.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    CallError, Dispatcher, HookContext, RespondError, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    content::IdRule,
    dispatch::ToolDef,
};

use crate::support::{TempDir, assistant, json_lines};

/// The text of a message.
#[derive(Deserialize, JsonSchema)]
struct Text {
    /// What to send.
    text: String,
}

fn dispatcher(sent: &Arc<Mutex<Vec<String>>>, dir: &TempDir) -> Dispatcher {
    let sent = Arc::clone(sent);
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "send_message",
            "Sends a message.",
            move |_env, t: Text| {
                sent.lock().unwrap().push(t.text.clone());
                Ok(format!("sent: {}", t.text))
            },
        ))
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap()
}

fn send(id: &str, text: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "send_message", "input": {"text": text}})
}

#[test]
fn respond_refuses_a_message_with_an_id_the_api_refuses_and_runs_nothing() {
    // (the message's ids, the block named, its rule, the error text)
    let cases: [(&[&str], usize, IdRule, &str); 7] = [
        (
            &["toolu_1", ""],
            2,
            IdRule::Empty,
            "tool_use id \"\" (block 2 of 2) is empty; none of the message's 2 tool_use \
             block(s) was run",
        ),
        (
            &["toolu 1"],
            1,
            IdRule::Pattern,
            "tool_use id \"toolu 1\" (block 1 of 1) does not match the Messages API's pattern \
             `^[a-zA-Z0-9_-]+$`; none of the message's 1 tool_use block(s) was run",
        ),
        (
            &["toolu_1", "toolu.2", "toolu_3"],
            2,
            IdRule::Pattern,
            "tool_use id \"toolu.2\" (block 2 of 3) does not match the Messages API's pattern \
             `^[a-zA-Z0-9_-]+$`; none of the message's 3 tool_use block(s) was run",
        ),
        (
            &["tööl_1"],
            1,
            IdRule::Pattern,
            "tool_use id \"tööl_1\" (block 1 of 1) does not match the Messages API's pattern \
             `^[a-zA-Z0-9_-]+$`; none of the message's 1 tool_use block(s) was run",
        ),
        (
            &["toolu_1\n"],
            1,
            IdRule::Pattern,
            "tool_use id \"toolu_1\\n\" (block 1 of 1) does not match the Messages API's \
             pattern `^[a-zA-Z0-9_-]+$`; none of the message's 1 tool_use block(s) was run",
        ),
        (
            &["toolu_1", "toolu_2", "toolu_1"],
            3,
            IdRule::Repeated,
            "tool_use id \"toolu_1\" (block 3 of 3) repeats the id of an earlier block; none \
             of the message's 3 tool_use block(s) was run",
        ),
        (
            &["toolu_A", "toolu_a", "toolu_A"],
            3,
            IdRule::Repeated,
            "tool_use id \"toolu_A\" (block 3 of 3) repeats the id of an earlier block; none \
             of the message's 3 tool_use block(s) was run",
        ),
    ];
    for (ids, block, rule, text) in cases {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let dir = TempDir::new("ids-respond");
        let s = dispatcher(&sent, &dir).session(HookContext::builder("u", "sess_ids").build());
        let blocks: Vec<Value> = ids.iter().map(|id| send(id, "hello")).collect();
        let message = assistant(Value::Array(blocks), "tool_use");
        let Err(RespondError::Id(e)) = toolgate::block_on(s.respond(&message)) else {
            panic!("{ids:?} must be refused");
        };
        assert_eq!(
            (e.id.as_str(), e.block, e.blocks, e.rule),
            (ids[block - 1], block, ids.len(), rule),
            "{ids:?}"
        );
        assert_eq!(e.to_string(), text);
        assert!(sent.lock().unwrap().is_empty(), "{ids:?}: nothing runs");
        // Every block audited as not_run, with the reason.
        let lines: Vec<(Value, Value, Value)> = json_lines(&dir.join("audit_log.jsonl"))
            .into_iter()
            .map(|l| {
                (
                    l["tool_use_id"].clone(),
                    l["outcome"].clone(),
                    l["content"].clone(),
                )
            })
            .collect();
        let expected: Vec<(Value, Value, Value)> = ids
            .iter()
            .map(|id| {
                (
                    json!(id),
                    json!("not_run"),
                    json!(format!("Not run: {text}.")),
                )
            })
            .collect();
        assert_eq!(lines, expected, "{ids:?}");
        assert_eq!(
            s.end().outcomes.into_iter().collect::<Vec<_>>(),
            [(Outcome::NotRun, ids.len() as u64)]
        );
    }
}

#[test]
fn respond_runs_every_id_the_pattern_accepts() {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let dir = TempDir::new("ids-ok");
    let s = dispatcher(&sent, &dir).session(HookContext::builder("u", "sess_ids").build());
    let ids = ["toolu_01AbQ4wEr6TyU8iO0pAsD2fG", "a", "A-b_9", "0", "-_-"];
    let blocks: Vec<Value> = ids.iter().map(|id| send(id, id)).collect();
    let message = assistant(Value::Array(blocks), "tool_use");
    let answer = crate::support::answer_of(toolgate::block_on(s.respond(&message)).unwrap());
    let got: Vec<&str> = answer
        .tool_results()
        .map(|r| r.tool_use_id.as_str())
        .collect();
    assert_eq!(got, ids);
    assert_eq!(*sent.lock().unwrap(), ids);
}

#[test]
fn call_refuses_only_an_empty_id() {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let dir = TempDir::new("ids-call");
    let s = dispatcher(&sent, &dir).session(HookContext::builder("u", "sess_ids").build());
    // MCP request ids (`7`) and other APIs' ids are not held to the Messages API's pattern.
    for id in ["7", "call:1", "req 2"] {
        let call = ToolUse::new(id, "send_message", json!({"text": id}));
        assert_eq!(
            toolgate::block_on(s.call(&call)).unwrap(),
            ToolResult::text(id, format!("sent: {id}"))
        );
    }
    let empty = ToolUse::new("", "send_message", json!({"text": "lost"}));
    let err = toolgate::block_on(s.call(&empty)).unwrap_err();
    assert!(matches!(err, CallError::EmptyId));
    assert_eq!(
        err.to_string(),
        "the tool_use id is empty, so no tool_result could answer it; nothing was run"
    );
    assert_eq!(*sent.lock().unwrap(), ["7", "call:1", "req 2"]);
    let last = json_lines(&dir.join("audit_log.jsonl")).pop().unwrap();
    assert_eq!(
        (&last["tool_use_id"], &last["outcome"], &last["content"]),
        (
            &json!(""),
            &json!("not_run"),
            &json!("Not run: the tool_use id is empty, so no tool_result could answer it.")
        )
    );
}
