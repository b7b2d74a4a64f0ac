//! MCP: `tools/list` entries, `tools/call` requests in, `CallToolResult` out.
//!
//! Documents: the Model Context Protocol specification, revisions 2025-06-18 and 2025-11-25,
//! "Tools" (`tools/list`, `tools/call`, "Tool Result": text, image and embedded resource
//! content, resource links, "Structured Content", "Output Schema"; "Error Handling") and its
//! `schema.ts` (`Tool`, `CallToolResult`, `ImageContent`, `EmbeddedResource`,
//! `ResourceLink`).
//!
//! The entry ([`tool_definition`]): `{"name": …, "description": …, "inputSchema": …}`, with the
//! Anthropic `input_schema` ([`anthropic_input_schema`]) as `inputSchema`: a JSON Schema object
//! whose root is `"type": "object"`, which is all the spec asks; and `"outputSchema": …` for a
//! tool whose output type has an object JSON Schema ([`output_schema`]): both revisions type
//! `outputSchema` as `{type: "object", …}` ("Currently restricted to type: \"object\" at the
//! root level"), so a tool whose output is a string, a number, an array or a union of shapes gets
//! none (the 2026-07-28 revision lifts the restriction; an object root is valid there too).
//!
//! The result ([`call_tool_result`]): `content` items for the result's blocks, `isError` for a
//! failure (a tool error is a result with `isError: true`, not a JSON-RPC error, so the model
//! sees it), and `structuredContent` for a tool with an `outputSchema` ("Servers MUST provide
//! structured results that conform to this schema"; "a tool that returns structured content
//! SHOULD also return the serialized JSON in a TextContent block"). The structured value is
//! the result's text parsed back, here at the MCP boundary only: the Messages API path never
//! pays for it.

use serde_json::{Map, Value, json};

use super::{ConvertError, Definition, Target, ToolSource, object, string_field};
use crate::content::de::kind_of;
use crate::content::message::{ToolResult, ToolResultContent, ToolUse};
use crate::content::output::{Media, Source};
use crate::schema::{anthropic_input_schema, canonicalize};
use crate::texts;

/// [`Provider::Mcp`](super::Provider::Mcp).
pub(super) const TARGET: Target = Target {
    name: "mcp",
    strict: false,
    definition,
    request_limits: None,
    cache_control: false,
};

/// [`tool_definition`]. Never an error.
fn definition(tool: &ToolSource<'_>, _may_be_strict: bool) -> Result<Definition, String> {
    Ok(Definition::plain(tool_definition(
        tool.name,
        tool.description,
        tool.canonical,
        tool.output_schema,
    )))
}

/// One tool's `tools/list` entry, from its name, description, canonical input schema
/// ([`canonicalize`]) and MCP output schema (from [`output_schema`], or
/// [`Dispatcher::output_schema`](crate::Dispatcher::output_schema)):
///
/// ```json
/// {"name": "get_weather", "description": "Gets the weather in a city.",
///  "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
///                  "required": ["city"], "additionalProperties": false},
///  "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}},
///                   "required": ["celsius"]}}
/// ```
///
/// `outputSchema` is there only when `output_schema` is `Some`. These are the entries of
/// [`Dispatcher::tool_definitions_for(Provider::Mcp)`](crate::Dispatcher::tool_definitions_for).
pub fn tool_definition(
    name: &str,
    description: &str,
    canonical: &Value,
    output_schema: Option<&Value>,
) -> Value {
    let mut entry = json!({
        "name": name,
        "description": description,
        "inputSchema": anthropic_input_schema(canonical),
    });
    if let (Some(schema), Value::Object(map)) = (output_schema, &mut entry) {
        map.insert("outputSchema".into(), schema.clone());
    }
    entry
}

/// The MCP `outputSchema` of a tool from the JSON Schema of its output type as schemars writes it
/// (what [`ToolDef::output_type`](crate::dispatch::ToolDef::output_type) and `#[tool]` record): the
/// canonical form ([`canonicalize`], not closed: no `additionalProperties: false` is added,
/// and an optional field stays `{"anyOf": [X, {"type": "null"}]}`, since a `None` serializes as
/// `null`), or `None` when its root is not `"type": "object"` (MCP requires an object root).
///
/// ```
/// use serde_json::json;
/// use toolgate_core::provider::mcp::output_schema;
///
/// let raw = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Weather",
///     "type": "object", "properties": {"celsius": {"type": "number", "format": "double"}},
///     "required": ["celsius"]});
/// assert_eq!(output_schema(&raw), Some(json!({"type": "object",
///     "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]})));
/// assert_eq!(output_schema(&json!({"type": "string"})), None);
/// ```
pub fn output_schema(raw: &Value) -> Option<Value> {
    let schema = canonicalize(raw, false);
    (schema.get("type").and_then(Value::as_str) == Some("object")).then_some(schema)
}

// ---- calls in, results out ----

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

/// A result as an MCP `CallToolResult`, for a tool whose `tools/list` entry has
/// `output_schema` (pass [`Dispatcher::output_schema`](crate::Dispatcher::output_schema) of the
/// tool called) or has none (`None`; a wrapped caller's tools have none).
///
/// ```json
/// {"content": [{"type": "text", "text": "{\"celsius\":21.5}"}],
///  "structuredContent": {"celsius": 21.5}, "isError": false}
/// ```
///
/// `content`, one item per block, in order (`[]` for an absent content; a string content is one
/// `text` item):
///
/// | `tool_result` block | MCP item |
/// |---|---|
/// | `text` | `{"type": "text", "text": …}` |
/// | `image`, base64 | `{"type": "image", "data": <base64>, "mimeType": "image/png"}` |
/// | `image`, URL | `{"type": "resource_link", "uri": <url>, "name": <last path segment>}` |
/// | `document`, base64 PDF | `{"type": "resource", "resource": {"uri": "toolgate://tool_result/<i>", "mimeType": "application/pdf", "blob": <base64>}}` |
/// | `document`, PDF URL | `{"type": "resource_link", "uri": <url>, "name": <title, or last path segment>, "mimeType": "application/pdf"}` |
/// | `document`, plain text | `{"type": "resource", "resource": {"uri": "toolgate://tool_result/<i>", "mimeType": "text/plain", "text": …}}` |
/// | any other (`search_result`, …) | a `text` item: `[toolgate: a search_result block was left out: this API's tool results have no such content]` |
///
/// An embedded resource needs a `uri`; a tool's document has none, so it is named by its
/// position in the content (`<i>`, from 0); a document's `title` and `context` have no place in
/// an embedded resource and are not carried.
///
/// `isError` is the result's `is_error`: a failure is a result the model reads, not a JSON-RPC
/// error (spec: "Error Handling"). `structuredContent`, when `output_schema` is `Some` and the
/// result is not an error: the result's text (the tool's value as compact JSON, already the `text`
/// item the spec asks for beside it) parsed back into the object. When that text is not a JSON
/// object (the result was cut at [`Limits::max_result_bytes`](crate::dispatch::Limits)), there is
/// no `structuredContent`: the result gets `isError: true` and a last `text` item saying the
/// structured result was left out, since a successful result without the structured content its
/// `outputSchema` promises breaks the spec's "MUST" (clients reject it). Never fails.
pub fn call_tool_result(result: &ToolResult, output_schema: Option<&Value>) -> Value {
    let mut content: Vec<Value> = match &result.content {
        None => Vec::new(),
        Some(ToolResultContent::Text(text)) => vec![text_item(text)],
        Some(ToolResultContent::Blocks(blocks)) => blocks
            .iter()
            .enumerate()
            .map(|(i, b)| item(i, Media::of(b)))
            .collect(),
    };
    let mut is_error = result.is_error;
    let structured_content = match output_schema {
        Some(_) if !is_error => {
            let value = structured(result);
            if value.is_none() {
                content.push(text_item(texts::STRUCTURED_LEFT_OUT));
                is_error = true;
            }
            value
        }
        _ => None,
    };
    let mut out = Map::new();
    out.insert("content".into(), Value::Array(content));
    if let Some(value) = structured_content {
        out.insert("structuredContent".into(), value);
    }
    out.insert("isError".into(), Value::Bool(is_error));
    Value::Object(out)
}

/// The result's text parsed back, when it is a JSON object.
fn structured(result: &ToolResult) -> Option<Value> {
    match serde_json::from_str::<Value>(&result.content_text()) {
        Ok(value @ Value::Object(_)) => Some(value),
        _ => None,
    }
}

fn text_item(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// The MCP content item of block `i` (see [`call_tool_result`]'s table).
fn item(i: usize, media: Media<'_>) -> Value {
    let embedded = |mime_type: &str, key: &str, data: &str| {
        json!({"type": "resource", "resource": {
            "uri": format!("toolgate://tool_result/{i}"), "mimeType": mime_type, key: data}})
    };
    match media {
        Media::Text(text) => text_item(text),
        Media::Image(Source::Base64(media_type, data)) => {
            json!({"type": "image", "data": data, "mimeType": media_type})
        }
        Media::Image(Source::Url(url)) => {
            json!({"type": "resource_link", "uri": url, "name": last_segment(url)})
        }
        Media::Pdf(Source::Base64(media_type, data), _) => embedded(media_type, "blob", data),
        Media::Pdf(Source::Url(url), title) => json!({"type": "resource_link", "uri": url,
            "name": title.unwrap_or_else(|| last_segment(url)), "mimeType": "application/pdf"}),
        Media::TextDocument(text, _) => embedded("text/plain", "text", text),
        Media::Other(_) => {
            let what = media.described().unwrap_or_default();
            text_item(&texts::left_out(&what, texts::NO_SUCH_CONTENT))
        }
    }
}

/// The last segment of a URL's path (`https://x.test/charts/q3.png?v=2` → `q3.png`), or the
/// URL itself when its path ends with `/` or has no segment.
fn last_segment(url: &str) -> &str {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let after_scheme = path.split_once("://").map_or(path, |(_, rest)| rest);
    match after_scheme.split_once('/') {
        Some((_, p)) => match p.rsplit('/').next() {
            Some(last) if !last.is_empty() => last,
            _ => url,
        },
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_url_resources() {
        assert_eq!(
            last_segment("https://x.test/charts/q3.png?v=2#top"),
            "q3.png"
        );
        assert_eq!(last_segment("https://x.test/a.pdf"), "a.pdf");
        assert_eq!(last_segment("https://x.test/dir/"), "https://x.test/dir/");
        assert_eq!(last_segment("https://x.test"), "https://x.test");
    }
}
