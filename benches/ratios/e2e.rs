//! `respond_e2e_over_handwritten`: an assistant message as JSON text → parsed → answered → the user
//! message as JSON text, through toolgate (`serde_json::from_str::<Message>`, `Session::respond` on
//! the 20-tool dispatcher without hooks, `serde_json::to_string` of the answer) against the same by
//! hand (serde into structs, the tool's name matched, its arguments deserialized from the input,
//! the function called, its output and the user message serialized).
//!
//! Both sides get the same text with a new `tool_use` id each call (a session answers an id once),
//! made by the same odometer, and both must produce the same user message text (checked once).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate::{Message, Reply, Session};

use crate::common::{LookupUserArgs, poll_ready, tools};

/// The message text with a 12-digit counter in its id, advanced in place.
pub(crate) struct FreshText(String);

const PREFIX: &str = r#"{"role":"assistant","content":[{"type":"text","text":"Let me look that up."},{"type":"tool_use","id":"toolu_e2e_"#;
const SUFFIX: &str = r#"","name":"lookup_user","input":{"user_id":"u_001","include_orders":true}}],"stop_reason":"tool_use"}"#;

impl FreshText {
    pub(crate) fn new() -> Self {
        FreshText(format!("{PREFIX}000000000000{SUFFIX}"))
    }

    /// The text with the next id.
    pub(crate) fn next(&mut self) -> &str {
        let mut bytes = std::mem::take(&mut self.0).into_bytes();
        for b in bytes[..PREFIX.len() + 12].iter_mut().rev() {
            if *b == b'9' {
                *b = b'0';
            } else if b.is_ascii_digit() {
                *b += 1;
                break;
            } else {
                break;
            }
        }
        self.0 = String::from_utf8(bytes).expect("ASCII");
        &self.0
    }
}

/// toolgate's side: parse, respond, serialize.
pub(crate) fn toolgate_side(s: &Session, text: &str) -> String {
    let message: Message = serde_json::from_str(text).expect("a valid message");
    match poll_ready(s.respond(&message)) {
        Ok(Reply::Answer(answer)) => serde_json::to_string(&answer).expect("serializes"),
        other => panic!("the e2e message was not answered: {other:?}"),
    }
}

#[derive(Deserialize)]
struct InMessage {
    #[allow(dead_code)]
    role: String,
    content: Vec<InBlock>,
    #[allow(dead_code)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InBlock {
    Text {
        #[allow(dead_code)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

#[derive(Serialize)]
struct OutMessage<'a> {
    role: &'static str,
    content: Vec<OutBlock<'a>>,
}

#[derive(Serialize)]
struct OutBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    tool_use_id: &'a str,
    content: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

/// The hand-written side: serde into structs, match the name, call, serialize.
pub(crate) fn handwritten_side(text: &str) -> String {
    let message: InMessage = serde_json::from_str(text).expect("a valid message");
    let mut content = Vec::with_capacity(message.content.len());
    for block in &message.content {
        let InBlock::ToolUse { id, name, input } = block else {
            continue;
        };
        let (text, is_error) = match name.as_str() {
            "lookup_user" => match LookupUserArgs::deserialize(input) {
                Ok(a) => (
                    serde_json::to_string(&tools::lookup_user(a.user_id, a.include_orders))
                        .expect("User serializes"),
                    false,
                ),
                Err(e) => (e.to_string(), true),
            },
            other => (format!("unknown tool {other}"), true),
        };
        content.push(OutBlock {
            kind: "tool_result",
            tool_use_id: id,
            content: text,
            is_error,
        });
    }
    serde_json::to_string(&OutMessage {
        role: "user",
        content,
    })
    .expect("serializes")
}
