//! Reading and writing `Message` (`content/de.rs` and `content/ser.rs`, which brought
//! `respond_e2e_over_handwritten` down): the one-pass reader must accept and refuse exactly what
//! reading through a `serde_json::Map` did, with the same error texts, and the writer must give the
//! same JSON text as the derived `flatten` writer did. The reference below is that earlier code,
//! kept here as the model, with one deliberate change: fields the crate does not model (`extra`)
//! keep the order they were sent in (the `Map` reader's `remove` moved the last entry into a
//! removed one's place).
//!
//! Generated: JSON texts of messages whose keys may repeat (the last value wins, at the first
//! one's place), with `role`, `content`, `stop_reason` right, wrong or missing; `content` a
//! string, an array of blocks or any other value; blocks of every modelled kind and others,
//! with their fields right, wrong, missing or repeated; items that are not objects; and texts
//! whose top level is not an object at all.

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolgate::{
    Message, ToolResult, ToolUse,
    content::{ContentBlock, Role, TextBlock, ToolResultContent},
};

use crate::cases;
use crate::support::any_json;

// ---- the reference: the earlier reader, over a `Map` ----------------------------------------

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn take_type(map: &mut Map<String, Value>, want: &str) -> Result<(), String> {
    match map.shift_remove("type") {
        None => Ok(()),
        Some(Value::String(t)) if t == want => Ok(()),
        Some(other) => Err(format!("expected a `{want}` block, found type {other}")),
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    match map.shift_remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "field `{key}` must be a string, found {}",
            kind_of(&other)
        )),
        None => Err(format!("missing field `{key}`")),
    }
}

fn reference_block(item: Value) -> Result<ContentBlock, String> {
    let mut map = Map::deserialize(item).map_err(|e| e.to_string())?;
    let kind = match map.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => {
            return Err(format!(
                "a content block's `type` must be a string, found {}",
                kind_of(other)
            ));
        }
        None => return Err("missing field `type`".into()),
    };
    match kind.as_str() {
        "text" => {
            take_type(&mut map, "text")?;
            let text = take_string(&mut map, "text")?;
            Ok(ContentBlock::Text(TextBlock { text, extra: map }))
        }
        "tool_use" => {
            take_type(&mut map, "tool_use")?;
            let id = take_string(&mut map, "id")?;
            let name = take_string(&mut map, "name")?;
            let input = map.shift_remove("input").unwrap_or(Value::Null);
            Ok(ContentBlock::ToolUse(ToolUse {
                id,
                name,
                input,
                extra: map,
            }))
        }
        "tool_result" => {
            take_type(&mut map, "tool_result")?;
            let tool_use_id = take_string(&mut map, "tool_use_id")?;
            let content = match map.shift_remove("content") {
                None => None,
                Some(v) => Some(ToolResultContent::deserialize(v).map_err(|e| e.to_string())?),
            };
            let is_error = match map.shift_remove("is_error") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(other) => {
                    return Err(format!(
                        "field `is_error` must be a boolean, found {}",
                        kind_of(&other)
                    ));
                }
            };
            Ok(ContentBlock::ToolResult(ToolResult {
                tool_use_id,
                content,
                is_error,
                extra: map,
            }))
        }
        _ => Ok(ContentBlock::Other(map)),
    }
}

fn reference_message(text: &str) -> Result<Message, String> {
    let mut map: Map<String, Value> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let role = match map.shift_remove("role") {
        Some(v) => Role::deserialize(v).map_err(|e| e.to_string())?,
        None => return Err("missing field `role`".into()),
    };
    let content = match map.shift_remove("content") {
        Some(Value::String(text)) => vec![ContentBlock::Text(TextBlock {
            text,
            extra: Map::new(),
        })],
        Some(Value::Array(items)) => {
            let mut blocks = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                blocks.push(reference_block(item).map_err(|e| format!("content[{i}]: {e}"))?);
            }
            blocks
        }
        Some(other) => {
            return Err(format!(
                "field `content` must be a string or an array of content blocks, found {}",
                kind_of(&other)
            ));
        }
        None => return Err("missing field `content`".into()),
    };
    let stop_reason = match map.shift_remove("stop_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(format!(
                "field `stop_reason` must be a string or null, found {}",
                kind_of(&other)
            ));
        }
    };
    Ok(Message {
        role,
        content,
        stop_reason,
        extra: map,
    })
}

/// The earlier writer's text, built as a `Map` in the order it wrote: the modelled fields
/// (`type` first in a block), then `extra`.
fn reference_text(message: &Message) -> String {
    fn with_extra(mut map: Map<String, Value>, extra: &Map<String, Value>) -> Value {
        for (k, v) in extra {
            map.insert(k.clone(), v.clone());
        }
        Value::Object(map)
    }
    fn block(b: &ContentBlock) -> Value {
        let mut map = Map::new();
        match b {
            ContentBlock::Text(t) => {
                map.insert("type".into(), json!("text"));
                map.insert("text".into(), json!(t.text));
                with_extra(map, &t.extra)
            }
            ContentBlock::ToolUse(t) => {
                map.insert("type".into(), json!("tool_use"));
                map.insert("id".into(), json!(t.id));
                map.insert("name".into(), json!(t.name));
                map.insert("input".into(), t.input.clone());
                with_extra(map, &t.extra)
            }
            ContentBlock::ToolResult(t) => {
                map.insert("type".into(), json!("tool_result"));
                map.insert("tool_use_id".into(), json!(t.tool_use_id));
                match &t.content {
                    None => {}
                    Some(ToolResultContent::Text(s)) => {
                        map.insert("content".into(), json!(s));
                    }
                    Some(ToolResultContent::Blocks(bs)) => {
                        map.insert("content".into(), bs.iter().map(block).collect());
                    }
                }
                if t.is_error {
                    map.insert("is_error".into(), json!(true));
                }
                with_extra(map, &t.extra)
            }
            ContentBlock::Other(m) => Value::Object(m.clone()),
        }
    }
    let mut map = Map::new();
    map.insert("role".into(), serde_json::to_value(message.role).unwrap());
    map.insert(
        "content".into(),
        message.content.iter().map(block).collect(),
    );
    if let Some(s) = &message.stop_reason {
        map.insert("stop_reason".into(), json!(s));
    }
    serde_json::to_string(&with_extra(map, &message.extra)).unwrap()
}

// ---- the generated texts ---------------------------------------------------------------------

/// A JSON object written entry by entry, so that a key may repeat.
fn object(entries: &[(String, String)]) -> String {
    let body: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap()))
        .collect();
    format!("{{{}}}", body.join(","))
}

const WORDS: &[&str] = &[
    "tool_use",
    "text",
    "tool_result",
    "thinking",
    "user",
    "assistant",
];

fn value_text() -> impl Strategy<Value = String> {
    any_json(WORDS).prop_map(|v| v.to_string())
}

fn block_text() -> impl Strategy<Value = String> {
    let kind = prop_oneof![
        Just("\"tool_use\"".to_owned()),
        Just("\"text\"".to_owned()),
        Just("\"tool_result\"".to_owned()),
        Just("\"thinking\"".to_owned()),
        value_text(),
    ];
    let string_or_any = || prop_oneof![3 => "\"[a-z_0-9]{0,6}\"", 1 => value_text()];
    let content = prop_oneof![
        "\"[a-z ]{0,6}\"",
        Just(r#"[{"type":"text","text":"a"},{"type":"image","source":{}}]"#.to_owned()),
        value_text(),
    ];
    let entry = prop_oneof![
        kind.prop_map(|v| ("type".to_owned(), v)),
        string_or_any().prop_map(|v| ("id".to_owned(), v)),
        string_or_any().prop_map(|v| ("name".to_owned(), v)),
        value_text().prop_map(|v| ("input".to_owned(), v)),
        string_or_any().prop_map(|v| ("text".to_owned(), v)),
        string_or_any().prop_map(|v| ("tool_use_id".to_owned(), v)),
        content.prop_map(|v| ("content".to_owned(), v)),
        prop_oneof![
            Just("true".to_owned()),
            Just("false".to_owned()),
            value_text()
        ]
        .prop_map(|v| ("is_error".to_owned(), v)),
        ("[a-z_]{1,6}", value_text()),
    ];
    prop_oneof![
        6 => prop::collection::vec(entry, 0..7).prop_map(|e| object(&e)),
        1 => value_text(),
    ]
}

fn message_text() -> impl Strategy<Value = String> {
    let role = prop_oneof![
        Just("\"assistant\"".to_owned()),
        Just("\"user\"".to_owned()),
        value_text()
    ];
    let content = prop_oneof![
        4 => prop::collection::vec(block_text(), 0..5).prop_map(|b| format!("[{}]", b.join(","))),
        1 => "\"[a-z ]{0,6}\"",
        1 => value_text(),
    ];
    let stop = prop_oneof![
        Just("\"tool_use\"".to_owned()),
        Just("null".to_owned()),
        value_text()
    ];
    let entry = prop_oneof![
        role.prop_map(|v| ("role".to_owned(), v)),
        content.prop_map(|v| ("content".to_owned(), v)),
        stop.prop_map(|v| ("stop_reason".to_owned(), v)),
        ("[a-z_]{1,6}", value_text()),
    ];
    prop_oneof![
        8 => prop::collection::vec(entry, 0..7).prop_map(|e| object(&e)),
        1 => value_text(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(3000), ..ProptestConfig::default() })]

    /// The one-pass reader accepts exactly what the reference accepts, with the same value
    /// (extra fields in the order sent) and, when it refuses, the same error text; from a
    /// text and from a `Value` alike; and what it accepts is written back as the reference
    /// wrote it.
    #[test]
    fn messages_read_and_write_as_through_a_map(text in message_text()) {
        let expected = reference_message(&text);
        let from_text = serde_json::from_str::<Message>(&text).map_err(|e| e.to_string());
        match (&expected, &from_text) {
            (Ok(want), Ok(got)) => {
                prop_assert_eq!(got, want);
                prop_assert_eq!(serde_json::to_string(got).unwrap(), reference_text(want));
            }
            (Err(want), Err(got)) => prop_assert_eq!(got, want),
            _ => prop_assert!(false, "{text}: reference {expected:?}, read {from_text:?}"),
        }
        // From a `Value` (duplicate keys already merged by the `Value`): the same outcome,
        // error texts without a position.
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            let from_value = serde_json::from_value::<Message>(value).map_err(|e| e.to_string());
            match (&expected, &from_value) {
                (Ok(want), Ok(got)) => prop_assert_eq!(got, want),
                (Err(want), Err(got)) if !value_is_an_object(&text) => {
                    // Not an object: the `Value` deserializer's words, without a position.
                    prop_assert_eq!(without_position(want), got.as_str());
                }
                (Err(want), Err(got)) => prop_assert_eq!(got, want),
                _ => prop_assert!(false, "{text}: reference {expected:?}, from a Value {from_value:?}"),
            }
        }
    }

    /// A block read on its own (`ContentBlock`, and each modelled kind) gets the reference's
    /// value or error text.
    #[test]
    fn blocks_read_as_through_a_map(text in block_text()) {
        let Ok(value) = serde_json::from_str::<Value>(&text) else { unreachable!() };
        let expected = reference_block(value.clone());
        let got = serde_json::from_str::<ContentBlock>(&text).map_err(|e| e.to_string());
        match (&expected, &got) {
            (Ok(want), Ok(got)) => prop_assert_eq!(got, want),
            (Err(want), Err(got)) if !value.is_object() => {
                prop_assert_eq!(without_position(got), want.as_str());
            }
            (Err(want), Err(got)) => prop_assert_eq!(got, want),
            _ => prop_assert!(false, "{text}: reference {expected:?}, read {got:?}"),
        }
    }
}

/// `error` without the ` at line L column C` serde_json adds to an error read from a text.
fn without_position(error: &str) -> &str {
    match error.rfind(" at line ") {
        Some(i) if error[i..].contains(" column ") => &error[..i],
        _ => error,
    }
}

fn value_is_an_object(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object())
}

#[test]
fn extra_fields_keep_the_order_they_were_sent_in() {
    let text = r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{},"caller":{"type":"direct"},"cache_control":null}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1}}"#;
    let message: Message = serde_json::from_str(text).unwrap();
    assert_eq!(
        serde_json::to_string(&message).unwrap(),
        r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{},"caller":{"type":"direct"},"cache_control":null}],"stop_reason":"tool_use","id":"msg_1","type":"message","model":"m","stop_sequence":null,"usage":{"input_tokens":1}}"#
    );
}
