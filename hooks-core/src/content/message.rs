//! The wire shapes: `tool_use` and `tool_result` blocks, text blocks, messages.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A `tool_use` block: the model asks for one tool call.
///
/// Wire shape: `{"type": "tool_use", "id": "toolu_…", "name": "get_weather", "input": {…}}`.
/// `input` is untrusted: the dispatcher normalizes it (`""` and `null` mean `{}`, a string holding
/// a JSON object is parsed once) and validates it against the tool's schema before any hook or
/// tool sees it. Deserializing accepts a missing `type` (as in OpenAI and Gemini conversions) and
/// fails on any other `type` than `"tool_use"`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolUse {
    /// The block's id (`toolu_…`); the answering `tool_result` carries it as `tool_use_id`.
    pub id: String,
    /// The tool the model asks for.
    pub name: String,
    /// The model's arguments, normally a JSON object.
    pub input: Value,
    /// Fields this crate does not model, written back unchanged.
    pub extra: Map<String, Value>,
}

impl ToolUse {
    /// A `tool_use` block with no extra fields.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            extra: Map::new(),
        }
    }

    /// The same block (`id`, `name`, extra fields) with another `input`: what the pipeline
    /// runs after a normalization or a PreToolUse rewrite.
    pub(crate) fn with_input(&self, input: Value) -> ToolUse {
        ToolUse {
            id: self.id.clone(),
            name: self.name.clone(),
            input,
            extra: self.extra.clone(),
        }
    }
}

/// The `content` of a `tool_result` block: a string, or an array of content blocks.
///
/// Wire shape: `"15 degrees"` or `[{"type": "text", "text": "15 degrees"}, {"type": "image", …}]`
/// (Messages API: `tool_result.content` is `string | array of text, image, document, …`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// Plain text.
    Text(String),
    /// Content blocks (text, image, document, …).
    Blocks(Vec<ContentBlock>),
}

impl ToolResultContent {
    /// The text the model reads: the string itself, or the `text` blocks joined with `\n`
    /// (other blocks are skipped).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ToolResultContent::Text(text) => std::borrow::Cow::Borrowed(text),
            ToolResultContent::Blocks(blocks) => {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                std::borrow::Cow::Owned(texts.join("\n"))
            }
        }
    }
}

/// A `tool_result` block: the answer to one `tool_use`.
///
/// Wire shape: `{"type": "tool_result", "tool_use_id": "toolu_…", "content": "…", "is_error":
/// true}`; `content` may be absent (an empty result) and `is_error` is omitted when false.
/// Rule (Messages API, "Implement tool use"): every `tool_use` gets exactly one `tool_result`
/// with its id in the very next user message, `tool_result` blocks first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// The id of the `tool_use` block this answers.
    pub tool_use_id: String,
    /// The result; `None` is an empty result.
    pub content: Option<ToolResultContent>,
    /// Whether the call failed (the model sees it as an error it may act on).
    pub is_error: bool,
    /// Fields this crate does not model (`cache_control`, …), written back unchanged.
    pub extra: Map<String, Value>,
}

impl ToolResult {
    /// A successful result whose content is `text`.
    pub fn text(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            tool_use_id: tool_use_id.into(),
            content: Some(ToolResultContent::Text(text.into())),
            is_error: false,
            extra: Map::new(),
        }
    }

    /// A failed result (`is_error: true`) whose content is `text`.
    pub fn error(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::text(tool_use_id, text)
        }
    }

    /// The text of the content (see [`ToolResultContent::text`]); `""` when absent.
    pub fn content_text(&self) -> std::borrow::Cow<'_, str> {
        match &self.content {
            Some(content) => content.text(),
            None => std::borrow::Cow::Borrowed(""),
        }
    }
}

/// A `text` block: `{"type": "text", "text": "…"}` (plus `citations`, `cache_control`, … in
/// `extra`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// Fields this crate does not model, written back unchanged.
    pub extra: Map<String, Value>,
}

/// One block of a message's `content` array.
///
/// `text`, `tool_use` and `tool_result` are modelled; every other block (`image`, `document`,
/// `thinking`, `server_tool_use`, …) is kept verbatim as [`ContentBlock::Other`], so the
/// assistant turn can be sent back unchanged. An object without a string `type` is an error.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// A `text` block.
    Text(TextBlock),
    /// A `tool_use` block.
    ToolUse(ToolUse),
    /// A `tool_result` block.
    ToolResult(ToolResult),
    /// Any other block, verbatim (it includes its `type`).
    Other(Map<String, Value>),
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user turn (it carries `tool_result` blocks).
    User,
    /// The assistant turn (it carries `tool_use` blocks).
    Assistant,
}

/// A Messages API message: an assistant Message object as the API returns it, or a user turn.
///
/// Wire shape: `{"role": "assistant", "content": [...], "stop_reason": "tool_use", "id": …,
/// "model": …, "usage": …}`. `content` may also be a plain string (user turns); it is read as
/// one `text` block. Fields not modelled (`id`, `model`, `usage`, `stop_sequence`, …) stay in
/// `extra`. A user message this crate produces serializes as `{"role": "user", "content": […]}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: Role,
    /// The blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Why the model stopped (`end_turn`, `tool_use`, `max_tokens`, …), when given.
    pub stop_reason: Option<String>,
    /// Fields this crate does not model, written back unchanged.
    pub extra: Map<String, Value>,
}

impl Message {
    /// A user message holding `content`.
    pub fn user(content: Vec<ContentBlock>) -> Self {
        Message {
            role: Role::User,
            content,
            stop_reason: None,
            extra: Map::new(),
        }
    }

    /// This message as a turn of the next request's `messages`: `{"role": …, "content": […]}`,
    /// the blocks unchanged, every other field dropped.
    ///
    /// An assistant Message read from a response has `id`, `type`, `model`, `stop_reason`,
    /// `stop_sequence` and `usage`; sent back, the API refuses them (`messages.1.id: Extra inputs
    /// are not permitted`).
    /// [`Conversation::push_response`](crate::content::Conversation::push_response) uses this.
    pub fn request_turn(&self) -> Message {
        Message {
            role: self.role,
            content: self.content.clone(),
            stop_reason: None,
            extra: Map::new(),
        }
    }

    /// The `tool_use` blocks of this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t),
            _ => None,
        })
    }

    /// The `tool_result` blocks of this message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolResult(t) => Some(t),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bad_block_is_named_by_its_index() {
        let err = serde_json::from_value::<Message>(json!({
            "role": "assistant",
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "name": "lookup_user", "input": {}}
            ]
        }))
        .unwrap_err();
        assert_eq!(err.to_string(), "content[1]: missing field `id`");
        let err =
            serde_json::from_value::<Message>(json!({"role": "user", "content": 7})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "field `content` must be a string or an array of content blocks, found number"
        );
    }

    #[test]
    fn string_content_is_one_text_block_and_other_blocks_stay_verbatim() {
        let m: Message = serde_json::from_value(json!({"role": "user", "content": "hi"})).unwrap();
        assert_eq!(
            m.content,
            [ContentBlock::Text(TextBlock {
                text: "hi".into(),
                extra: Map::new()
            })]
        );
        let thinking = json!({"type": "thinking", "thinking": "…", "signature": "abc"});
        let block: ContentBlock = serde_json::from_value(thinking.clone()).unwrap();
        assert_eq!(serde_json::to_value(&block).unwrap(), thinking);
        let wrong: Result<ToolUse, _> =
            serde_json::from_value(json!({"type": "text", "id": "a", "name": "b"}));
        assert_eq!(
            wrong.unwrap_err().to_string(),
            "expected a `tool_use` block, found type \"text\""
        );
    }
}
