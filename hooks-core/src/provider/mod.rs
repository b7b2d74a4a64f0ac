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

pub mod gemini;
pub mod mcp;
pub mod openai;
pub mod openai_responses;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_the_position_in_all() {
        for (i, p) in Provider::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i, "{p}");
        }
    }
}
