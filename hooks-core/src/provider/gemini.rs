//! Gemini: `functionCall` parts in, `functionResponse` parts out (docs: "Function calling").

use serde_json::{Map, Value, json};

use super::{ConvertError, object, string_field};
use crate::content::{ToolResult, ToolUse, kind_of};

const WHAT: &str = "a Gemini functionCall";

fn call_of(part: &Value) -> &Value {
    part.get("functionCall").unwrap_or(part)
}

/// A `functionCall` as a [`ToolUse`].
///
/// In: a content part `{"functionCall": {"name": "get_weather", "args": {…}, "id": "…"}}` or
/// the bare `FunctionCall`. `args` is already an object (not a string, unlike OpenAI); an
/// absent `args` means `{}`. Gemini's `id` is optional and often absent: the `ToolUse` id is
/// then `fallback_id` (choose one unique within the session, e.g. `"gemini-3-0"` for turn 3,
/// part 0), used for the audit line; [`function_response`] echoes only an id Gemini gave.
///
/// # Errors
/// [`ConvertError`] when the call is not an object, or `name` is missing or not a string,
/// or `id` is neither absent nor a string.
pub fn tool_use(part: &Value, fallback_id: impl Into<String>) -> Result<ToolUse, ConvertError> {
    let obj = object(call_of(part), WHAT)?;
    let name = string_field(obj, "name", WHAT)?;
    let id = match obj.get("id") {
        None | Some(Value::Null) => fallback_id.into(),
        Some(Value::String(s)) if s.is_empty() => fallback_id.into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(ConvertError::new(
                WHAT,
                format!("`id` must be a string, found {}", kind_of(other)),
            ));
        }
    };
    let input = obj.get("args").cloned().unwrap_or(Value::Null);
    Ok(ToolUse::new(id, name, input))
}

/// The `functionResponse` part that answers `function_call` (the part or `FunctionCall`
/// the model sent): `{"functionResponse": {"id": "…", "name": "get_weather", "response":
/// {"output": "19°C, sunny"}}}`, or `{"error": "…"}` inside `response` for a failed result
/// (`FunctionResponse.response`: "Use "output" key to specify function output and "error"
/// key to specify error details"). `name` is the call's; `id` is there only when the call
/// had one. A call without a string `name` (one [`tool_use`] refuses, so the host should not
/// be answering it) gets `"name": ""`, and a non-string `name` is echoed as given: this
/// function never fails. The text is the content as is (`BLOCKED: …` stays).
pub fn function_response(function_call: &Value, result: &ToolResult) -> Value {
    let call = call_of(function_call);
    let mut response = Map::new();
    if let Some(id @ Value::String(s)) = call.get("id")
        && !s.is_empty()
    {
        response.insert("id".into(), id.clone());
    }
    let name = call.get("name").cloned().unwrap_or_else(|| json!(""));
    response.insert("name".into(), name);
    let key = if result.is_error { "error" } else { "output" };
    response.insert(
        "response".into(),
        json!({ key: result.content_text().into_owned() }),
    );
    json!({ "functionResponse": response })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_gemini_call_without_a_name_is_answered_with_an_empty_name() {
        let result = ToolResult::text("gemini-0-0", "19°C, sunny");
        assert_eq!(
            function_response(&json!({"functionCall": {"args": {}}}), &result),
            json!({"functionResponse": {"name": "", "response": {"output": "19°C, sunny"}}})
        );
    }
}
