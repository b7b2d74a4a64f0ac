//! OpenAI Chat Completions: `tool_calls` in, `role: "tool"` messages out (docs: "Function
//! calling").

use serde_json::{Value, json};

use super::{ConvertError, object, string_field, text_saying_failure};
use crate::content::{ToolResult, ToolUse, kind_of};

const WHAT: &str = "an OpenAI tool call";

/// One entry of an assistant message's `tool_calls` as a [`ToolUse`].
///
/// In: `{"id": "call_…", "type": "function", "function": {"name": "get_weather",
/// "arguments": "{\"location\":\"Lisbon\"}"}}`. `arguments` is a JSON *string*; it becomes the
/// `input` unchanged and the pipeline parses it once (a string that is not a JSON object is
/// `invalid_input`, like any bad input). `id` becomes the `ToolUse` id, so the result's
/// `tool_use_id` is the `tool_call_id` to answer with.
///
/// # Errors
/// [`ConvertError`] when the item is not an object, `type` is present and not `"function"`
/// (a custom tool call), or `id`, `function` or `function.name` is missing or not a string.
pub fn tool_use(tool_call: &Value) -> Result<ToolUse, ConvertError> {
    let obj = object(tool_call, WHAT)?;
    if let Some(t) = obj.get("type")
        && t != "function"
    {
        return Err(ConvertError::new(
            WHAT,
            format!("only `function` tool calls are supported, found type {t}"),
        ));
    }
    let id = string_field(obj, "id", WHAT)?;
    let function = obj
        .get("function")
        .ok_or_else(|| ConvertError::new(WHAT, "`function` is missing"))?;
    let function = object(function, WHAT)?;
    let name = string_field(function, "name", WHAT)?;
    let input = function.get("arguments").cloned().unwrap_or(Value::Null);
    Ok(ToolUse::new(id, name, input))
}

/// The `tool_calls` of an assistant message, in order (empty when it has none).
///
/// In: `{"role": "assistant", "content": null, "tool_calls": [ … ]}` (`choices[0].message`
/// of a Chat Completion).
///
/// # Errors
/// [`ConvertError`] when `message` is not an object, `tool_calls` is neither absent, `null`
/// nor an array, or an entry fails [`tool_use`].
pub fn tool_uses(message: &Value) -> Result<Vec<ToolUse>, ConvertError> {
    let obj = object(message, "an OpenAI assistant message")?;
    match obj.get("tool_calls") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(calls)) => calls.iter().map(tool_use).collect(),
        Some(other) => Err(ConvertError::new(
            "an OpenAI assistant message",
            format!("`tool_calls` must be an array, found {}", kind_of(other)),
        )),
    }
}

/// A result as the `role: "tool"` message that answers its call: `{"role": "tool",
/// "tool_call_id": "call_…", "content": "19°C, sunny"}`.
///
/// Chat Completions has no `is_error` field, so a failure says so in the text: a failed
/// result whose text does not start with `Error:`, `BLOCKED:` or `Not run:` gets `Error: `
/// in front (`BLOCKED: …` stays as it is). Rule (guide): one such message per call, right
/// after the assistant message, for every `tool_call_id`.
pub fn tool_message(result: &ToolResult) -> Value {
    json!({
        "role": "tool",
        "tool_call_id": result.tool_use_id,
        "content": text_saying_failure(result),
    })
}
