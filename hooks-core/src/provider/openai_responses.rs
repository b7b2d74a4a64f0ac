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
//! A host answering a whole response uses
//! [`Session::respond_openai_response`](crate::Session::respond_openai_response): it runs
//! nothing when the response or a `function_call` item has `status: "incomplete"`. Ids: a
//! `call_id` must be non-empty and unique in its response.
//!
//! This file uses [`openai`](super::openai)'s strict transform: both are OpenAI's, with one
//! schema subset. It is the one import between provider files.

#[cfg(feature = "openai")]
use serde_json::json;
use serde_json::{Map, Value};

use super::openai::function;
#[cfg(feature = "openai")]
use super::{ConvertError, Turn, object, optional_string, string_field, text_saying_failure};
use super::{Definition, Target, ToolSource};
#[cfg(feature = "openai")]
use crate::content::de::kind_of;
#[cfg(feature = "openai")]
use crate::content::message::{ToolResult, ToolResultContent, ToolUse};
#[cfg(feature = "openai")]
use crate::content::output::{Media, Source};
#[cfg(feature = "openai")]
use crate::texts;

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

#[cfg(feature = "openai")]
const WHAT: &str = "an OpenAI Responses function_call item";

#[cfg(feature = "openai")]
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

#[cfg(feature = "openai")]
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

#[cfg(feature = "openai")]
/// A whole Response, for
/// [`Session::respond_openai_response`](crate::Session::respond_openai_response): its
/// `function_call` items, its `status`, and whether it was cut (`status: "incomplete"` on the
/// response, or on a `function_call` item).
pub(crate) fn response_turn(response: &Value) -> Result<Turn<'_>, ConvertError> {
    const RESPONSE: &str = "an OpenAI response";
    let obj = object(response, RESPONSE)?;
    let Some(Value::Array(output)) = obj.get("output") else {
        return Err(ConvertError::new(
            RESPONSE,
            "`output` is missing or not an array",
        ));
    };
    let items: Vec<&Value> = output
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
        .collect();
    let uses = items
        .iter()
        .map(|i| tool_use(i))
        .collect::<Result<Vec<_>, _>>()?;
    let stop_reason = optional_string(obj, "status", RESPONSE)?;
    let incomplete = |v: &Value| v.get("status").and_then(Value::as_str) == Some("incomplete");
    let truncated = if stop_reason.as_deref() == Some("incomplete") {
        let why = obj
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str);
        Some(match why {
            Some(reason) => format!(
                "status: \"incomplete\", incomplete_details.reason: {}",
                Value::from(reason)
            ),
            None => "status: \"incomplete\"".to_owned(),
        })
    } else {
        items
            .iter()
            .position(|i| incomplete(i))
            .map(|n| format!("function_call item {} has status: \"incomplete\"", n + 1))
    };
    Ok(Turn {
        id: obj
            .get("id")
            .and_then(Value::as_str)
            .map(std::borrow::Cow::Borrowed),
        uses,
        items,
        stop_reason,
        truncated,
    })
}

#[cfg(feature = "openai")]
/// A result as the input item that answers its call: `{"type": "function_call_output",
/// "call_id": "call_…", "output": "19°C, sunny"}`. No error field exists: a failure says so
/// in the text, as in [`openai::tool_message`](super::openai::tool_message).
///
/// A successful result with an image or a PDF among its blocks gets `output` as an array of
/// input content (SDK: `FunctionCallOutput.output: str | list[input_text | input_image |
/// input_file]`), one item per block, in order:
///
/// | block | item |
/// |---|---|
/// | `text`, plain-text `document` | `{"type": "input_text", "text": …}` |
/// | `image`, base64 | `{"type": "input_image", "image_url": "data:image/png;base64,…"}` |
/// | `image`, URL | `{"type": "input_image", "image_url": <url>}` |
/// | `document`, base64 PDF | `{"type": "input_file", "filename": <title>.pdf or "document.pdf", "file_data": "data:application/pdf;base64,…"}` |
/// | `document`, PDF URL | `{"type": "input_file", "file_url": <url>}` |
/// | any other | `input_text` with a note naming what was left out |
///
/// Any other result (text only, or a failure) is a string, as for Chat Completions.
pub fn function_call_output(result: &ToolResult) -> Value {
    let output = match &result.content {
        Some(ToolResultContent::Blocks(blocks))
            if !result.is_error
                && blocks
                    .iter()
                    .any(|b| matches!(Media::of(b), Media::Image(_) | Media::Pdf(..))) =>
        {
            Value::Array(blocks.iter().map(|b| input_item(Media::of(b))).collect())
        }
        _ => Value::String(text_saying_failure(result)),
    };
    json!({
        "type": "function_call_output",
        "call_id": result.tool_use_id,
        "output": output,
    })
}

#[cfg(feature = "openai")]
/// One block as a Responses input content item (see [`function_call_output`]'s table).
fn input_item(media: Media<'_>) -> Value {
    let text = |text: &str| json!({"type": "input_text", "text": text});
    match media {
        Media::Text(t) | Media::TextDocument(t, _) => text(t),
        Media::Image(Source::Base64(media_type, data)) => json!({"type": "input_image",
            "image_url": format!("data:{media_type};base64,{data}")}),
        Media::Image(Source::Url(url)) => json!({"type": "input_image", "image_url": url}),
        Media::Pdf(Source::Base64(media_type, data), title) => json!({"type": "input_file",
            "filename": pdf_filename(title),
            "file_data": format!("data:{media_type};base64,{data}")}),
        Media::Pdf(Source::Url(url), _) => json!({"type": "input_file", "file_url": url}),
        Media::Other(_) => text(&texts::left_out(
            &media.described().unwrap_or_default(),
            texts::NO_SUCH_CONTENT,
        )),
    }
}

#[cfg(feature = "openai")]
/// The `filename` of an inline PDF: its title, with `.pdf` added unless it ends so; else
/// `document.pdf`.
fn pdf_filename(title: Option<&str>) -> String {
    match title {
        Some(t) if t.to_ascii_lowercase().ends_with(".pdf") => t.to_owned(),
        Some(t) => format!("{t}.pdf"),
        None => "document.pdf".to_owned(),
    }
}
