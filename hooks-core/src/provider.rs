//! [`Provider`]: the APIs a dispatcher's tools can be handed to, and conversions of tool calls
//! (in) and tool results (out) between their wire formats and toolgate's [`ToolUse`](crate::ToolUse) and
//! [`ToolResult`] (the Anthropic Messages API shape).
//!
//! A call converted from any provider is a [`ToolUse`](crate::ToolUse) like any other: the same pipeline, hooks
//! and outcomes apply (`invalid_input` for arguments that are not a JSON object, `unknown_tool`,
//! `blocked`, …). The conversions check only what they need to answer the call (an id, a name);
//! the arguments are left to the pipeline, so a model's malformed arguments become an
//! `invalid_input` result the model can read, never a host error.
//!
//! | provider | calls in | results out |
//! |---|---|---|
//! | OpenAI Chat Completions | [`openai::tool_use`], [`openai::tool_uses`] | [`openai::tool_message`] |
//! | OpenAI Responses | [`openai_responses::tool_use`], [`openai_responses::tool_uses`] | [`openai_responses::function_call_output`] |
//! | Gemini | [`gemini::tool_use`] | [`gemini::function_response`] |
//! | MCP | [`mcp::tool_use`] | [`mcp::call_tool_result`] |
//!
//! Results carry the text of the content ([`ToolResult::content_text`]: a string as is, `text`
//! blocks joined with `\n`, other blocks left out).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::content::{ToolResult, kind_of};

/// A target API for tool definitions
/// ([`Dispatcher::tool_definitions_for`](crate::Dispatcher::tool_definitions_for)) and
/// tool-call conversions (this module).
///
/// Names (for [`FromStr`], [`Provider::name`] and `Display`): `anthropic`, `anthropic-strict`,
/// `openai`, `openai-responses`, `gemini`, `mcp`.
///
/// ```
/// use toolgate_core::Provider;
///
/// let p: Provider = "openai-responses".parse().unwrap();
/// assert_eq!(p, Provider::OpenAiResponses);
/// assert_eq!(p.to_string(), "openai-responses");
/// assert!("claude".parse::<Provider>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum Provider {
    /// Anthropic Messages API `tools` entries, `{name, description, input_schema}` (the
    /// default; the same as [`Dispatcher::tool_definitions`](crate::Dispatcher::tool_definitions)).
    #[default]
    Anthropic,
    /// Anthropic with `strict: true` (docs: "Strict tool use"): the schema narrowed to the strict
    /// subset; a tool outside it is emitted without `strict`.
    AnthropicStrict,
    /// OpenAI Chat Completions `tools` entries, `{type: "function", function: {name,
    /// description, parameters, strict}}` (docs: "Function calling").
    OpenAi,
    /// OpenAI Responses API `tools` entries, `{type: "function", name, description,
    /// parameters, strict}`.
    OpenAiResponses,
    /// Gemini `functionDeclarations` entries, `{name, description, parameters}` with
    /// `parameters` in Gemini's OpenAPI 3.0 subset (docs: "Function calling",
    /// `FunctionDeclaration`).
    Gemini,
    /// MCP `tools/list` entries, `{name, description, inputSchema}` (spec: "Tools").
    Mcp,
}

impl Provider {
    /// Every provider, in declaration order.
    pub const ALL: [Provider; 6] = [
        Provider::Anthropic,
        Provider::AnthropicStrict,
        Provider::OpenAi,
        Provider::OpenAiResponses,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The provider's name: `anthropic`, `anthropic-strict`, `openai`, `openai-responses`,
    /// `gemini` or `mcp`.
    pub const fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::AnthropicStrict => "anthropic-strict",
            Provider::OpenAi => "openai",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    /// Whether definitions for this provider are strict where the schema allows it
    /// (`anthropic-strict`, `openai`, `openai-responses`), so that
    /// [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools) may list tools.
    pub const fn is_strict(self) -> bool {
        matches!(
            self,
            Provider::AnthropicStrict | Provider::OpenAi | Provider::OpenAiResponses
        )
    }

    /// The position in [`Provider::ALL`] (which lists the variants in declaration order, and
    /// the variants have default discriminants).
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A provider name [`Provider::from_str`] does not know. `Display`: ``unknown provider
/// `claude`: expected one of anthropic, anthropic-strict, openai, openai-responses, gemini,
/// mcp`` (the names of [`Provider::ALL`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProvider(
    /// The name as given.
    pub String,
);

impl fmt::Display for UnknownProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown provider `{}`: expected one of ", self.0)?;
        for (i, p) in Provider::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(p.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownProvider {}

impl FromStr for Provider {
    type Err = UnknownProvider;

    /// Parses a provider name (see [`Provider::name`]), ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownProvider(s.to_owned()))
    }
}

/// A provider's call item that cannot become a [`ToolUse`](crate::ToolUse): it lacks what the answer needs (an
/// id, a name) or is not a function call. Raised on the host's side, before the pipeline: the
/// model's arguments are never the cause (bad arguments are `invalid_input` results).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {what}: {message}")]
pub struct ConvertError {
    what: &'static str,
    message: String,
}

impl ConvertError {
    fn new(what: &'static str, message: impl Into<String>) -> Self {
        ConvertError {
            what,
            message: message.into(),
        }
    }
}

fn string_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    what: &'static str,
) -> Result<&'a str, ConvertError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ConvertError::new(
            what,
            format!("`{key}` must be a string, found {}", kind_of(other)),
        )),
        None => Err(ConvertError::new(what, format!("`{key}` is missing"))),
    }
}

fn object<'a>(v: &'a Value, what: &'static str) -> Result<&'a Map<String, Value>, ConvertError> {
    v.as_object().ok_or_else(|| {
        ConvertError::new(
            what,
            format!("expected a JSON object, found {}", kind_of(v)),
        )
    })
}

/// The text of a result for an API with no error flag: a failure that does not already say so
/// (`Error:`, `BLOCKED:`, `Not run:`) gets `Error: ` in front.
fn text_saying_failure(result: &ToolResult) -> String {
    let text = result.content_text();
    if result.is_error
        && !["Error:", "BLOCKED:", "Not run:"]
            .iter()
            .any(|p| text.starts_with(p))
    {
        format!("Error: {text}")
    } else {
        text.into_owned()
    }
}

/// OpenAI Chat Completions: `tool_calls` in, `role: "tool"` messages out (docs: "Function
/// calling").
pub mod openai {
    use serde_json::{Value, json};

    use super::{ConvertError, object, string_field, text_saying_failure};
    use crate::content::{ToolResult, ToolUse};

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
                format!(
                    "`tool_calls` must be an array, found {}",
                    super::kind_of(other)
                ),
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
}

/// OpenAI Responses API: `function_call` items in, `function_call_output` items out.
pub mod openai_responses {
    use serde_json::{Value, json};

    use super::{ConvertError, object, string_field, text_saying_failure};
    use crate::content::{ToolResult, ToolUse};

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
                        super::kind_of(other)
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
}

/// Gemini: `functionCall` parts in, `functionResponse` parts out (docs: "Function calling").
pub mod gemini {
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
}

/// MCP: `tools/call` requests in, `CallToolResult` out (spec: "Tools").
pub mod mcp {
    use serde_json::{Value, json};

    use super::{ConvertError, object, string_field};
    use crate::content::{ToolResult, ToolUse, kind_of};

    const WHAT: &str = "an MCP tools/call request";

    /// A JSON-RPC `tools/call` request as a [`ToolUse`].
    ///
    /// In: `{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name":
    /// "get_weather", "arguments": {…}}}`. The `ToolUse` id is the request id as text (`"7"`);
    /// an absent `arguments` means `{}`.
    ///
    /// # Errors
    /// [`ConvertError`] when the request is not an object, `method` is present and not
    /// `"tools/call"`, `id` is not a string or number, or `params.name` is missing.
    pub fn tool_use(request: &Value) -> Result<ToolUse, ConvertError> {
        let obj = object(request, WHAT)?;
        if let Some(m) = obj.get("method")
            && m != "tools/call"
        {
            return Err(ConvertError::new(
                WHAT,
                format!("expected method \"tools/call\", found {m}"),
            ));
        }
        let id = match obj.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(ConvertError::new(
                    WHAT,
                    format!(
                        "`id` must be a string or a number, found {}",
                        kind_of(other)
                    ),
                ));
            }
            None => return Err(ConvertError::new(WHAT, "`id` is missing")),
        };
        let params = obj
            .get("params")
            .ok_or_else(|| ConvertError::new(WHAT, "`params` is missing"))?;
        let params = object(params, WHAT)?;
        let name = string_field(params, "name", WHAT)?;
        let input = params.get("arguments").cloned().unwrap_or(Value::Null);
        Ok(ToolUse::new(id, name, input))
    }

    /// A result as an MCP `CallToolResult`: `{"content": [{"type": "text", "text": "…"}],
    /// "isError": false}` (`content` is `[]` for an absent content). A failure is a result with
    /// `isError: true`, not a JSON-RPC error, so the model sees it (spec: "Error Handling").
    pub fn call_tool_result(result: &ToolResult) -> Value {
        let content = match &result.content {
            None => json!([]),
            Some(c) => json!([{"type": "text", "text": c.text().into_owned()}]),
        };
        json!({"content": content, "isError": result.is_error})
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn index_is_the_position_in_all() {
        for (i, p) in Provider::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i, "{p}");
        }
    }

    #[test]
    fn a_gemini_call_without_a_name_is_answered_with_an_empty_name() {
        let result = ToolResult::text("gemini-0-0", "19°C, sunny");
        assert_eq!(
            gemini::function_response(&json!({"functionCall": {"args": {}}}), &result),
            json!({"functionResponse": {"name": "", "response": {"output": "19°C, sunny"}}})
        );
    }
}
