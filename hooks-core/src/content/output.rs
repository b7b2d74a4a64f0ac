//! What a tool answers with: text (a `String`, or any value's JSON text) or content blocks
//! ([`Content`]: text, [`Image`], [`Document`]), and how either becomes the `content` of a
//! `tool_result` ([`ToolOutput`], [`output_content`]); the checks a block result passes before
//! the model reads it; and the reading of a result's blocks that the providers share.
//!
//! Source of the block shapes: the Messages API, "Implement tool use" (`tool_result.content` is a
//! string or an array of `text`, `image` and `document` blocks: "Example of tool result with
//! images", "… with documents") and the SDKs' `ImageBlockParam` (`source`: `base64` with
//! `media_type` `image/jpeg`, `image/png`, `image/gif` or `image/webp`, or `url`) and
//! `DocumentBlockParam` (`source`: `base64` PDF, `text` with `media_type: "text/plain"`, or
//! `url`; optional `title` and `context`).

use std::any::Any;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::base::future::BoxFuture;
use crate::content::message::{ContentBlock, TextBlock, ToolResultContent};
use crate::error::ToolError;

/// A tool's answer as content blocks: text, images and documents, in order, sent as the
/// `tool_result`'s `content` array. Return it (or `Result<Content, E>`) from a `#[tool]`
/// function, or from a hand-built [`ToolDef`](crate::dispatch::ToolDef).
///
/// Wire shape (Messages API, "Implement tool use"):
///
/// ```json
/// [{"type": "text", "text": "Revenue by month:"},
///  {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0…"}}]
/// ```
///
/// ```
/// use serde_json::json;
/// use toolgate_core::content::{Content, Document, Image};
///
/// let content = Content::new()
///     .text("Revenue by month:")
///     .image(Image::png("iVBORw0KGgo="))
///     .document(Document::pdf("JVBERi0xLjQ=").title("Q3 report"));
/// assert_eq!(serde_json::to_value(&content).unwrap(), json!([
///     {"type": "text", "text": "Revenue by month:"},
///     {"type": "image", "source": {"type": "base64", "media_type": "image/png",
///                                  "data": "iVBORw0KGgo="}},
///     {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
///                                     "data": "JVBERi0xLjQ="}, "title": "Q3 report"}
/// ]));
/// ```
///
/// Rules, checked when the tool returns (a block that breaks one makes the call a `tool_error` the
/// model reads as [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE), the reason in
/// the audit line's `detail`, so one bad block never makes the API refuse the whole request):
/// base64 data is standard base64 (`A–Z a–z 0–9 + /`, padded with `=`; not a `data:` URL); a URL
/// starts with `https://` or `http://`; no `tool_use` or `tool_result` block. An empty text is not
/// added (the Messages API refuses empty text blocks); a `Content` with no block is a result
/// without `content`.
///
/// Size: the blocks count against [`Limits::max_result_bytes`](crate::dispatch::Limits) (default
/// 256 KiB) as their compact JSON, base64 included; an image or document that does not fit is left
/// out whole, never cut (a model cannot use half an image), and a last text block says so. Raise
/// the limit for tools that return images: a 1 MB PNG is about 1.4 MB of base64.
///
/// Other APIs: OpenAI Chat Completions and Gemini take text only (an image or PDF becomes a
/// note naming what was left out); the Responses API takes images and PDFs; MCP takes `image`
/// and `resource` items. See [`crate::provider`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Content {
    blocks: Vec<ContentBlock>,
}

impl Content {
    /// No blocks yet.
    pub fn new() -> Self {
        Content { blocks: Vec::new() }
    }

    /// Adds a `text` block, `{"type": "text", "text": …}`; an empty text adds nothing.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        let text = text.into();
        if !text.is_empty() {
            self.blocks.push(ContentBlock::Text(TextBlock {
                text,
                extra: Map::new(),
            }));
        }
        self
    }

    /// Adds an `image` block.
    pub fn image(mut self, image: Image) -> Self {
        self.blocks.push(image.into_block());
        self
    }

    /// Adds a `document` block.
    pub fn document(mut self, document: Document) -> Self {
        self.blocks.push(ContentBlock::Other(document.0));
        self
    }

    /// Adds any block as it is (a `search_result` block, a block with `cache_control`, …). It
    /// is checked like the others when the tool returns.
    pub fn block(mut self, block: ContentBlock) -> Self {
        self.blocks.push(block);
        self
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[ContentBlock] {
        &self.blocks
    }
}

impl From<Content> for ToolResultContent {
    fn from(content: Content) -> Self {
        ToolResultContent::Blocks(content.blocks)
    }
}

impl Serialize for Content {
    /// The `content` array: `[{"type": "text", …}, {"type": "image", …}]`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.blocks.serialize(s)
    }
}

/// An `image` block for [`Content::image`]: `{"type": "image", "source": {"type": "base64",
/// "media_type": "image/png", "data": "<base64>"}}`, or `{"type": "image", "source": {"type":
/// "url", "url": "https://…"}}`. The four media types are the ones the Messages API accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct Image(Map<String, Value>);

impl Image {
    /// A base64 image of `media_type` (not checked here: a tool's return is checked when it
    /// returns; an image a remote MCP server sent is carried as it came).
    pub(crate) fn base64(media_type: &str, data: String) -> Self {
        Image(block(
            "image",
            json!({"type": "base64", "media_type": media_type, "data": data}),
        ))
    }

    /// A PNG, as base64 (standard alphabet, padded).
    pub fn png(base64: impl Into<String>) -> Self {
        Image::base64("image/png", base64.into())
    }

    /// A JPEG, as base64.
    pub fn jpeg(base64: impl Into<String>) -> Self {
        Image::base64("image/jpeg", base64.into())
    }

    /// A GIF, as base64.
    pub fn gif(base64: impl Into<String>) -> Self {
        Image::base64("image/gif", base64.into())
    }

    /// A WebP image, as base64.
    pub fn webp(base64: impl Into<String>) -> Self {
        Image::base64("image/webp", base64.into())
    }

    /// The `image` content block.
    pub(crate) fn into_block(self) -> ContentBlock {
        ContentBlock::Other(self.0)
    }

    /// An image the API fetches from `url` (`https://…`).
    pub fn url(url: impl Into<String>) -> Self {
        Image(block("image", json!({"type": "url", "url": url.into()})))
    }
}

/// A `document` block for [`Content::document`]: a PDF as base64 (`{"type": "document",
/// "source": {"type": "base64", "media_type": "application/pdf", "data": "<base64>"}}`) or by
/// URL (`"source": {"type": "url", "url": "https://…"}`), or plain text (`"source": {"type":
/// "text", "media_type": "text/plain", "data": "…"}`); optional `title` and `context`.
#[derive(Debug, Clone, PartialEq)]
pub struct Document(Map<String, Value>);

impl Document {
    /// A PDF, as base64 (standard alphabet, padded).
    pub fn pdf(base64: impl Into<String>) -> Self {
        Document(block(
            "document",
            json!({"type": "base64", "media_type": "application/pdf", "data": base64.into()}),
        ))
    }

    /// A PDF the API fetches from `url` (`https://…`).
    pub fn pdf_url(url: impl Into<String>) -> Self {
        Document(block("document", json!({"type": "url", "url": url.into()})))
    }

    /// A plain-text document.
    pub fn text(text: impl Into<String>) -> Self {
        Document(block(
            "document",
            json!({"type": "text", "media_type": "text/plain", "data": text.into()}),
        ))
    }

    /// Sets the document's `title`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.0.insert("title".into(), Value::String(title.into()));
        self
    }

    /// Sets the document's `context` (what the model should know about it, not quoted).
    pub fn context(mut self, context: impl Into<String>) -> Self {
        self.0
            .insert("context".into(), Value::String(context.into()));
        self
    }
}

fn block(kind: &str, source: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("type".into(), Value::String(kind.into()));
    map.insert("source".into(), source);
    map
}

// ---- what a tool returns ----

/// What a hand-built tool ([`ToolDef::sync`](crate::dispatch::ToolDef::sync),
/// [`ToolDef::new_async`](crate::dispatch::ToolDef::new_async)) may answer with: `String` (the text
/// the model reads), [`Content`] (content blocks) or [`ToolResultContent`] (either). A `#[tool]`
/// function may return any `Serialize` value instead (see [`output_content`]).
pub trait ToolOutput: Send + 'static {
    /// The `content` of the `tool_result`.
    fn into_content(self) -> ToolResultContent;

    /// An async tool's future, made to answer with the `content` (one more boxed future, except
    /// for [`ToolResultContent`], which needs no conversion).
    fn erase_future<'a>(
        future: BoxFuture<'a, Result<Self, ToolError>>,
    ) -> BoxFuture<'a, Result<ToolResultContent, ToolError>>
    where
        Self: Sized,
    {
        Box::pin(async move { future.await.map(Self::into_content) })
    }
}

impl ToolOutput for String {
    #[inline]
    fn into_content(self) -> ToolResultContent {
        ToolResultContent::Text(self)
    }
}

impl ToolOutput for Content {
    #[inline]
    fn into_content(self) -> ToolResultContent {
        self.into()
    }
}

impl ToolOutput for ToolResultContent {
    #[inline]
    fn into_content(self) -> ToolResultContent {
        self
    }

    #[inline]
    fn erase_future<'a>(
        future: BoxFuture<'a, Result<Self, ToolError>>,
    ) -> BoxFuture<'a, Result<ToolResultContent, ToolError>> {
        future
    }
}

/// Turns a tool's return value into the text the model reads: a value that serializes to a JSON
/// string becomes that string itself (no quotes); `()` becomes the empty text; anything else
/// becomes its compact JSON text (`{"id":"o_1","amount_cents":2599}`).
///
/// # Errors
/// A value that cannot be serialized (a map with non-string keys, a failing `Serialize` impl)
/// is an internal [`ToolError`].
pub fn output_text<T: Serialize + 'static>(value: T) -> Result<String, ToolError> {
    let mut slot = Some(value);
    let any: &mut dyn Any = &mut slot;
    if let Some(s) = any.downcast_mut::<Option<String>>() {
        return Ok(s.take().unwrap_or_default());
    }
    if let Some(s) = any.downcast_mut::<Option<&'static str>>() {
        return Ok(s.take().unwrap_or_default().to_owned());
    }
    if any.is::<Option<()>>() {
        return Ok(String::new());
    }
    match slot.take() {
        Some(value) => json_text(serde_json::to_string(&value)),
        None => json_text(Err(serde::ser::Error::custom(
            "toolgate: output taken twice",
        ))),
    }
}

/// The non-generic rest of [`output_text`] (compiled once, not once per output type): a JSON
/// string becomes its text, anything else stays JSON; errors are internal.
fn json_text(text: Result<String, serde_json::Error>) -> Result<String, ToolError> {
    let text = text.map_err(ToolError::internal)?;
    if text.starts_with('"') {
        return serde_json::from_str::<String>(&text).map_err(ToolError::internal);
    }
    Ok(text)
}

/// Turns a `#[tool]` function's return value into the `content` the model reads: a
/// [`Content`] is its blocks, a [`ToolResultContent`] itself; any other value is its text by
/// [`output_text`] (a JSON string is the text itself, `()` the empty text, anything else its
/// compact JSON text). Chosen by type at compile time: the text path costs what it did before
/// blocks existed.
///
/// # Errors
/// As [`output_text`]: a value that cannot be serialized is an internal [`ToolError`].
#[inline]
pub fn output_content<T: Serialize + 'static>(value: T) -> Result<ToolResultContent, ToolError> {
    let mut slot = Some(value);
    let any: &mut dyn Any = &mut slot;
    if let Some(content) = any.downcast_mut::<Option<Content>>() {
        return Ok(content.take().unwrap_or_default().into());
    }
    if let Some(content) = any.downcast_mut::<Option<ToolResultContent>>() {
        return Ok(content
            .take()
            .unwrap_or(ToolResultContent::Blocks(Vec::new())));
    }
    match slot.take() {
        Some(value) => output_text(value).map(ToolResultContent::Text),
        None => Err(ToolError::internal("toolgate: output taken twice")),
    }
}

// ---- the checks a block result passes ----

/// A tool's `content` as the model will read it: a text as is; blocks checked (see
/// [`Content`]'s rules), empty text blocks dropped, and no blocks at all made an absent
/// `content`.
///
/// # Errors
/// An internal [`ToolError`] naming the first bad block and why (operator-only).
pub(crate) fn checked(content: ToolResultContent) -> Result<Option<ToolResultContent>, ToolError> {
    let mut blocks = match content {
        text @ ToolResultContent::Text(_) => return Ok(Some(text)),
        ToolResultContent::Blocks(blocks) => blocks,
    };
    for (i, b) in blocks.iter().enumerate() {
        if let Err(why) = check_block(b) {
            return Err(ToolError::internal(format!(
                "the tool's content block {i} is not valid: {why}"
            )));
        }
    }
    blocks.retain(|b| !matches!(b, ContentBlock::Text(t) if t.text.is_empty()));
    Ok((!blocks.is_empty()).then_some(ToolResultContent::Blocks(blocks)))
}

fn check_block(block: &ContentBlock) -> Result<(), String> {
    let map = match block {
        ContentBlock::Text(_) => return Ok(()),
        ContentBlock::ToolUse(_) => {
            return Err("a `tool_use` block cannot be part of a tool_result's content".into());
        }
        ContentBlock::ToolResult(_) => {
            return Err("a `tool_result` block cannot be part of a tool_result's content".into());
        }
        ContentBlock::Other(map) => map,
    };
    let kind = map.get("type").and_then(Value::as_str).unwrap_or_default();
    let source = || match map.get("source") {
        Some(Value::Object(s)) => Ok(s),
        _ => Err(format!("(`{kind}`) `source` must be an object")),
    };
    match kind {
        "image" => {
            let s = source()?;
            match str_of(s, "type") {
                "base64" => {
                    let media_type = str_of(s, "media_type");
                    if !IMAGE_TYPES.contains(&media_type) {
                        return Err(format!(
                            "(`image`) `source.media_type` is {:?}; the Messages API takes {}",
                            media_type,
                            IMAGE_TYPES.join(", ")
                        ));
                    }
                    base64_ok("image", str_of(s, "data"))
                }
                "url" => url_ok("image", str_of(s, "url")),
                _ => Ok(()),
            }
        }
        "document" => {
            let s = source()?;
            match str_of(s, "type") {
                "base64" => {
                    if str_of(s, "media_type") != "application/pdf" {
                        return Err(format!(
                            "(`document`) a base64 document must be `application/pdf`, not {:?}",
                            str_of(s, "media_type")
                        ));
                    }
                    base64_ok("document", str_of(s, "data"))
                }
                "url" => url_ok("document", str_of(s, "url")),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The image media types the Messages API accepts (`ImageBlockParam`).
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

fn str_of<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn base64_ok(kind: &str, data: &str) -> Result<(), String> {
    let problem = if data.is_empty() {
        Some("it is empty".to_owned())
    } else if data.starts_with("data:") {
        Some("it is a `data:` URL; give only the base64 after `base64,`".to_owned())
    } else {
        let bytes = data.as_bytes();
        let padding = bytes
            .iter()
            .rev()
            .take(2)
            .take_while(|&&b| b == b'=')
            .count();
        let body = &bytes[..bytes.len() - padding];
        match body
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'+' || b == b'/'))
        {
            Some(i) => Some(format!(
                "byte {i} is {:?}, which is not in the standard base64 alphabet",
                data[i..].chars().next().unwrap_or_default()
            )),
            None if !bytes.len().is_multiple_of(4) => Some(format!(
                "its length, {}, is not a multiple of 4 (base64 must be padded with `=`)",
                bytes.len()
            )),
            None => None,
        }
    };
    match problem {
        Some(p) => Err(format!("(`{kind}`) `source.data` is not base64: {p}")),
        None => Ok(()),
    }
}

fn url_ok(kind: &str, url: &str) -> Result<(), String> {
    if url.starts_with("https://") || url.starts_with("http://") {
        Ok(())
    } else {
        Err(format!(
            "(`{kind}`) `source.url` must start with `https://` or `http://`, found {url:?}"
        ))
    }
}

// ---- reading a result's blocks, for the providers ----

/// One block of a result as the providers read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Media<'a> {
    /// A `text` block.
    Text(&'a str),
    /// An `image` block.
    Image(Source<'a>),
    /// A PDF `document` block, with its `title` when it has one.
    Pdf(Source<'a>, Option<&'a str>),
    /// A plain-text `document` block: its text, and its `title` when it has one.
    TextDocument(&'a str, Option<&'a str>),
    /// Any other block (`search_result`, a document made of content, a file reference, or one
    /// whose fields are not the expected ones): its `type`.
    Other(&'a str),
}

/// Where an image or a PDF comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Source<'a> {
    /// Inline: `(media_type, base64 data)`.
    Base64(&'a str, &'a str),
    /// A URL the API fetches.
    Url(&'a str),
}

impl<'a> Media<'a> {
    /// Reads one block.
    pub(crate) fn of(block: &'a ContentBlock) -> Media<'a> {
        let map = match block {
            ContentBlock::Text(t) => return Media::Text(&t.text),
            ContentBlock::ToolUse(_) => return Media::Other("tool_use"),
            ContentBlock::ToolResult(_) => return Media::Other("tool_result"),
            ContentBlock::Other(map) => map,
        };
        let kind = map.get("type").and_then(Value::as_str).unwrap_or("?");
        let Some(Value::Object(s)) = map.get("source") else {
            return Media::Other(kind);
        };
        let field = |key: &str| s.get(key).and_then(Value::as_str);
        let title = map.get("title").and_then(Value::as_str);
        let source = match (
            field("type"),
            field("media_type"),
            field("data"),
            field("url"),
        ) {
            (Some("base64"), Some(media_type), Some(data), _) => {
                Some(Source::Base64(media_type, data))
            }
            (Some("url"), _, _, Some(url)) => Some(Source::Url(url)),
            _ => None,
        };
        match (kind, source, field("type"), field("data")) {
            ("image", Some(source), _, _) => Media::Image(source),
            ("document", Some(Source::Base64("application/pdf", data)), _, _) => {
                Media::Pdf(Source::Base64("application/pdf", data), title)
            }
            ("document", Some(url @ Source::Url(_)), _, _) => Media::Pdf(url, title),
            ("document", None, Some("text"), Some(text)) => Media::TextDocument(text, title),
            _ => Media::Other(kind),
        }
    }

    /// What a note about a left-out block calls it: `an image (image/png)`, `an image
    /// (https://…)`, `a PDF document "Q3 report"`, `a search_result block` (`an image block` for
    /// an image whose fields are not the expected ones). `None` for the
    /// blocks every API can carry as text (`text`, a plain-text document).
    pub(crate) fn described(&self) -> Option<String> {
        Some(match self {
            Media::Text(_) | Media::TextDocument(..) => return None,
            Media::Image(Source::Base64(media_type, _)) => format!("an image ({media_type})"),
            Media::Image(Source::Url(url)) => format!("an image ({url})"),
            Media::Pdf(_, Some(title)) => format!("a PDF document {title:?}"),
            Media::Pdf(_, None) => "a PDF document".to_owned(),
            Media::Other(kind) if kind.starts_with(['a', 'e', 'i', 'o', 'u']) => {
                format!("an {kind} block")
            }
            Media::Other(kind) => format!("a {kind} block"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(v: Value) -> ToolResultContent {
        ToolResultContent::Blocks(serde_json::from_value(v).unwrap())
    }

    fn why(v: Value) -> String {
        match checked(blocks(v)) {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.detail().unwrap_or_default(),
        }
    }

    /// A text block, then a base64 image of `media_type` holding `data`.
    fn image(media_type: &str, data: &str) -> Value {
        json!([{"type": "text", "text": "chart:"},
               {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                            "data": data}}])
    }

    #[test]
    fn bad_images_are_named_with_the_reason() {
        assert_eq!(why(image("image/png", "iVBORw0KGgo=")), "ok");
        assert_eq!(
            why(image("image/png", "data:image/png;base64,iVBO")),
            "the tool's content block 1 is not valid: (`image`) `source.data` is not base64: it \
             is a `data:` URL; give only the base64 after `base64,`"
        );
        assert_eq!(
            why(image("image/png", "iVBO\nRw0K")),
            "the tool's content block 1 is not valid: (`image`) `source.data` is not base64: \
             byte 4 is '\\n', which is not in the standard base64 alphabet"
        );
        assert_eq!(
            why(image("image/png", "iVBORw0KGgo")),
            "the tool's content block 1 is not valid: (`image`) `source.data` is not base64: its \
             length, 11, is not a multiple of 4 (base64 must be padded with `=`)"
        );
        assert_eq!(
            why(image("image/png", "")),
            "the tool's content block 1 is not valid: (`image`) `source.data` is not base64: it \
             is empty"
        );
        assert_eq!(
            why(image("image/bmp", "Qk0=")),
            "the tool's content block 1 is not valid: (`image`) `source.media_type` is \
             \"image/bmp\"; the Messages API takes image/jpeg, image/png, image/gif, image/webp"
        );
        // The detail is the operator's; the model reads the generic text.
        let e = checked(blocks(image("image/png", ""))).unwrap_err();
        assert_eq!(e.message(), crate::texts::INTERNAL_ERROR_MESSAGE);
    }

    /// A document URL of a scheme the Messages API does not fetch.
    const FTP_PDF: &str = "ftp://x/a.pdf";

    #[test]
    fn bad_documents_and_blocks_are_named_with_the_reason() {
        assert_eq!(
            why(json!([{"type": "document", "source": {"type": "base64",
                "media_type": "text/html", "data": "PGI+"}}])),
            "the tool's content block 0 is not valid: (`document`) a base64 document must be \
             `application/pdf`, not \"text/html\""
        );
        assert_eq!(
            why(json!([{"type": "document", "source": {"type": "url", "url": FTP_PDF}}])),
            "the tool's content block 0 is not valid: (`document`) `source.url` must start with \
             `https://` or `http://`, found \"ftp://x/a.pdf\""
        );
        assert_eq!(
            why(json!([{"type": "image", "source": "iVBO"}])),
            "the tool's content block 0 is not valid: (`image`) `source` must be an object"
        );
        assert_eq!(
            why(json!([{"type": "tool_use", "id": "t", "name": "n", "input": {}}])),
            "the tool's content block 0 is not valid: a `tool_use` block cannot be part of a \
             tool_result's content"
        );
    }

    #[test]
    fn empty_texts_go_and_no_blocks_is_no_content() {
        assert_eq!(
            checked(blocks(json!([{"type": "text", "text": ""},
                                  {"type": "text", "text": "x"}])))
            .unwrap(),
            Some(blocks(json!([{"type": "text", "text": "x"}])))
        );
        assert_eq!(
            checked(blocks(json!([{"type": "text", "text": ""}]))).unwrap(),
            None
        );
        assert_eq!(checked(Content::new().text("").into()).unwrap(), None);
        assert_eq!(
            checked(ToolResultContent::Text(String::new())).unwrap(),
            Some(ToolResultContent::Text(String::new()))
        );
    }

    #[test]
    fn blocks_read_as_media() {
        let content = Content::new()
            .text("a")
            .image(Image::jpeg("/9j/"))
            .image(Image::url("https://x.test/a.png"))
            .document(Document::pdf("JVBE").title("Q3"))
            .document(Document::pdf_url("https://x.test/a.pdf"))
            .document(Document::text("plain").title("notes"))
            .block(
                serde_json::from_value(json!({"type": "search_result", "source": "s",
                "title": "t", "content": []}))
                .unwrap(),
            )
            .block(serde_json::from_value(json!({"type": "image", "source": "iVBO"})).unwrap());
        let media: Vec<Media<'_>> = content.blocks().iter().map(Media::of).collect();
        assert_eq!(
            media,
            [
                Media::Text("a"),
                Media::Image(Source::Base64("image/jpeg", "/9j/")),
                Media::Image(Source::Url("https://x.test/a.png")),
                Media::Pdf(Source::Base64("application/pdf", "JVBE"), Some("Q3")),
                Media::Pdf(Source::Url("https://x.test/a.pdf"), None),
                Media::TextDocument("plain", Some("notes")),
                Media::Other("search_result"),
                Media::Other("image"),
            ]
        );
        let described: Vec<Option<String>> = media.iter().map(Media::described).collect();
        assert_eq!(
            described,
            [
                None,
                Some("an image (image/jpeg)".to_owned()),
                Some("an image (https://x.test/a.png)".to_owned()),
                Some("a PDF document \"Q3\"".to_owned()),
                Some("a PDF document".to_owned()),
                None,
                Some("a search_result block".to_owned()),
                Some("an image block".to_owned()),
            ]
        );
    }

    #[test]
    fn output_content_keeps_text_as_text_and_blocks_as_blocks() {
        assert_eq!(
            output_content(String::from("15 degrees")).unwrap(),
            ToolResultContent::Text("15 degrees".into())
        );
        assert_eq!(
            output_content(json!({"a": 1})).unwrap(),
            ToolResultContent::Text("{\"a\":1}".into())
        );
        let content = Content::new().text("x").image(Image::gif("R0lG"));
        assert_eq!(
            output_content(content.clone()).unwrap(),
            ToolResultContent::Blocks(content.blocks().to_vec())
        );
        assert_eq!(
            output_content(ToolResultContent::Text("t".into())).unwrap(),
            ToolResultContent::Text("t".into())
        );
    }
}
