//! OpenAI Responses API: the flat `tools` entry, `function_call` items in,
//! `function_call_output` items out.
//!
//! Documents: "Function calling" (the Responses API's entry, its `function_call` and
//! `function_call_output` items) and "Structured Outputs", "Supported schemas" (the strict
//! subset and its limits on one schema, shared with Chat Completions and described in
//! [`openai`](super::openai)).
//!
//! The entry: `{"type": "function", "name": …, "description": …, "parameters": …, "strict":
//! true}`, the Chat Completions `function` object without the nesting; `strict` is always sent
//! (the two APIs default differently). The `ToolUse` id is the item's `call_id`, which the
//! answer names; the item's own `id` (`fc_…`) is not used. No error field exists: a failed
//! result says so in its text.
//!
//! This file uses [`openai`](super::openai)'s strict transform: both are OpenAI's, with one
//! schema subset. It is the one import between provider files.

use serde_json::{Map, Value, json};

use super::openai::function;
use super::{
    ConvertError, Definition, Target, ToolSource, object, string_field, text_saying_failure,
};
use crate::content::{ToolResult, ToolUse, kind_of};

/// [`Provider::OpenAiResponses`](super::Provider::OpenAiResponses).
pub(super) const TARGET: Target = Target {
    name: "openai-responses",
    strict: true,
    definition,
    request_limits: None,
    cache_control: false,
};

/// `{"type": "function", …}` followed by the keys of [`openai`](super::openai)'s `function`
/// object. Never an error.
fn definition(tool: &ToolSource<'_>, may_be_strict: bool) -> Result<Definition, String> {
    let (fields, non_strict) = function(tool, may_be_strict);
    let mut flat = Map::new();
    flat.insert("type".into(), "function".into());
    flat.extend(fields);
    Ok(Definition {
        value: Value::Object(flat),
        non_strict,
    })
}

// ---- calls in, results out ----

const WHAT: &str = "an OpenAI Responses function_call item";

/// A `function_call` output item as a [`ToolUse`].
///
/// In: `{"type": "function_call", "id": "fc_…", "call_id": "call_…", "name": "get_weather",
/// "arguments": "{…}", "status": "completed"}`. The `ToolUse` id is `call_id` (what
/// `function_call_output` must name); `arguments`, a JSON string, is left to the pipeline
/// as for Chat Completions.
///
/// # Errors
/// [`ConvertError`] when the item is not an object, its `type` is not `"function_call"`, or
/// `call_id` or `name` is missing or not a string.
pub fn tool_use(item: &Value) -> Result<ToolUse, ConvertError> {
    let obj = object(item, WHAT)?;
    match obj.get("type") {
        Some(Value::String(t)) if t == "function_call" => {}
        Some(t) => {
            return Err(ConvertError::new(
                WHAT,
                format!("expected type \"function_call\", found {t}"),
            ));
        }
        None => return Err(ConvertError::new(WHAT, "`type` is missing")),
    }
    let call_id = string_field(obj, "call_id", WHAT)?;
    let name = string_field(obj, "name", WHAT)?;
    let input = obj.get("arguments").cloned().unwrap_or(Value::Null);
    Ok(ToolUse::new(call_id, name, input))
}

/// The `function_call` items of a response, in order; other items (`message`,
/// `reasoning`, …) are skipped.
///
/// In: a Response object (`{"id": "resp_…", "output": [ … ]}`) or its `output` array.
///
/// # Errors
/// [`ConvertError`] when there is no `output` array, or a `function_call` item fails
/// [`tool_use`].
pub fn tool_uses(response_or_output: &Value) -> Result<Vec<ToolUse>, ConvertError> {
    let items = match response_or_output {
        Value::Array(items) => items,
        Value::Object(obj) => match obj.get("output") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(ConvertError::new(
                    "an OpenAI response",
                    "`output` is missing or not an array",
                ));
            }
        },
        other => {
            return Err(ConvertError::new(
                "an OpenAI response",
                format!(
                    "expected a Response object or its `output` array, found {}",
                    kind_of(other)
                ),
            ));
        }
    };
    items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
        .map(tool_use)
        .collect()
}

/// A result as the input item that answers its call: `{"type": "function_call_output",
/// "call_id": "call_…", "output": "19°C, sunny"}`. No error field exists: a failure says so
/// in the text, as in [`openai::tool_message`](super::openai::tool_message).
pub fn function_call_output(result: &ToolResult) -> Value {
    json!({
        "type": "function_call_output",
        "call_id": result.tool_use_id,
        "output": text_saying_failure(result),
    })
}
