//! Bounds on untrusted input and on results, and input normalization.

use serde_json::{Map, Value};

use crate::content::{ContentBlock, TextBlock, ToolResultContent, ToolUse, kind_of};

/// Bounds the dispatcher applies to every call.
///
/// - `max_input_bytes` (default 1 MiB = 1 048 576 bytes): an input larger than this, measured as
///   compact JSON (string escapes not counted), is `invalid_input` before any hook or tool sees
///   it;
/// - `max_input_depth` (default 32 levels; `{}` is depth 1): deeper input is `invalid_input`;
/// - `max_result_bytes` (default 256 KiB = 262 144 bytes): a longer result text is cut at a
///   character boundary and ends with a marker saying so
///   (`\n[toolgate: result cut at 262144 of 300000 bytes]`); the audit line's `content_bytes`
///   keeps the full size. A result made of content blocks (from a wrapped caller) is measured as
///   the bytes of its `text` blocks plus the compact JSON of every other block (an image's
///   base64 counts); the blocks that fit are kept, the `text` block that crosses the limit is
///   cut, later blocks are dropped and a last `text` block carries the marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest accepted input, in bytes of compact JSON.
    pub max_input_bytes: usize,
    /// Deepest accepted input nesting, in levels.
    pub max_input_depth: usize,
    /// Longest result text sent to the model, in bytes.
    pub max_result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_input_bytes: 1 << 20,
            max_input_depth: 32,
            max_result_bytes: 256 << 10,
        }
    }
}

impl Limits {
    /// Sets `max_input_bytes`.
    pub fn max_input_bytes(mut self, bytes: usize) -> Self {
        self.max_input_bytes = bytes;
        self
    }

    /// Sets `max_input_depth`.
    pub fn max_input_depth(mut self, levels: usize) -> Self {
        self.max_input_depth = levels;
        self
    }

    /// Sets `max_result_bytes`.
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }
}

/// A `tool_use` block after normalization: the block itself when its input was already an
/// object (no copy), or a boxed copy with the normalized input (a small value either way, since
/// it lives in every call future).
#[derive(Debug)]
pub(crate) enum Normalized<'a> {
    Borrowed(&'a ToolUse),
    Owned(Box<ToolUse>),
}

impl std::ops::Deref for Normalized<'_> {
    type Target = ToolUse;
    fn deref(&self) -> &ToolUse {
        match self {
            Normalized::Borrowed(t) => t,
            Normalized::Owned(t) => t,
        }
    }
}

/// Why an input was refused before validation; the text is written for the model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refused(pub(crate) String);

impl Refused {
    /// An input that is valid JSON but not an object.
    pub(crate) fn not_object(input: &Value) -> Refused {
        Refused(format!(
            "the input must be a JSON object, found a JSON {}",
            kind_of(input)
        ))
    }
}

/// Normalizes a `tool_use` input (DESIGN.md, step 1): an object stays as is (borrowed, no copy);
/// `null` and `""` mean `{}`; a string holding a JSON object is parsed once. Anything else, or an
/// input over the limits, is refused.
pub(crate) fn normalize<'a>(call: &'a ToolUse, limits: &Limits) -> Result<Normalized<'a>, Refused> {
    let owned = |input: Value| Normalized::Owned(Box::new(call.with_input(input)));
    let normalized = match &call.input {
        Value::Object(_) => Normalized::Borrowed(call),
        Value::Null => owned(Value::Object(Map::new())),
        Value::String(s) if s.trim().is_empty() => owned(Value::Object(Map::new())),
        Value::String(s) => {
            if s.len() > limits.max_input_bytes {
                return Err(too_large(s.len(), limits));
            }
            match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => owned(v),
                Ok(other) => {
                    return Err(Refused(format!(
                        "the input must be a JSON object, but it is a string holding a JSON {}",
                        kind_of(&other)
                    )));
                }
                Err(e) => {
                    return Err(Refused(format!(
                        "the input must be a JSON object, but it is a string that is not valid \
                         JSON ({e})"
                    )));
                }
            }
        }
        other => return Err(Refused::not_object(other)),
    };
    check_bounds(&normalized.input, limits)?;
    Ok(normalized)
}

fn too_large(bytes: usize, limits: &Limits) -> Refused {
    Refused(format!(
        "the input is too large: {bytes} bytes or more, over the limit of {} bytes; send a \
         smaller input",
        limits.max_input_bytes
    ))
}

/// Checks size and depth in one walk that allocates nothing and stops at the first excess.
pub(crate) fn check_bounds(input: &Value, limits: &Limits) -> Result<(), Refused> {
    let mut bytes = 0usize;
    match walk(input, 1, limits, &mut bytes) {
        Ok(()) => Ok(()),
        Err(Excess::Depth) => Err(Refused(format!(
            "the input is nested more than {} levels deep; flatten it",
            limits.max_input_depth
        ))),
        Err(Excess::Bytes) => Err(too_large(bytes, limits)),
    }
}

enum Excess {
    Depth,
    Bytes,
}

fn walk(v: &Value, depth: usize, limits: &Limits, bytes: &mut usize) -> Result<(), Excess> {
    let add = |bytes: &mut usize, n: usize| {
        *bytes = bytes.saturating_add(n);
        if *bytes > limits.max_input_bytes {
            Err(Excess::Bytes)
        } else {
            Ok(())
        }
    };
    match v {
        Value::Null => add(bytes, 4),
        Value::Bool(b) => add(bytes, if *b { 4 } else { 5 }),
        Value::Number(n) => add(bytes, number_len(n)),
        Value::String(s) => add(bytes, s.len() + 2),
        Value::Array(items) => {
            if depth > limits.max_input_depth {
                return Err(Excess::Depth);
            }
            add(bytes, 2 + items.len().saturating_sub(1))?;
            for item in items {
                walk(item, depth + 1, limits, bytes)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            if depth > limits.max_input_depth {
                return Err(Excess::Depth);
            }
            add(bytes, 2 + map.len().saturating_sub(1))?;
            for (k, item) in map {
                add(bytes, k.len() + 3)?;
                walk(item, depth + 1, limits, bytes)?;
            }
            Ok(())
        }
    }
}

fn number_len(n: &serde_json::Number) -> usize {
    fn digits(mut x: u64) -> usize {
        let mut d = 1;
        while x >= 10 {
            x /= 10;
            d += 1;
        }
        d
    }
    if let Some(u) = n.as_u64() {
        digits(u)
    } else if let Some(i) = n.as_i64() {
        1 + digits(i.unsigned_abs())
    } else {
        // A float: at most 24 characters in serde_json's shortest form.
        24
    }
}

/// Cuts `text` to `max` bytes at a character boundary, with a marker; returns the full size when
/// it cut.
pub(crate) fn cut_result(text: &mut String, max: usize) -> Option<usize> {
    if text.len() <= max {
        return None;
    }
    let full = text.len();
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(
        "\n[toolgate: result cut at {end} of {full} bytes]"
    ));
    Some(full)
}

/// Cuts a `tool_result` content to `max` bytes (see [`Limits`]); returns the full size when it
/// cut.
pub(crate) fn cut_content(content: &mut ToolResultContent, max: usize) -> Option<usize> {
    let blocks = match content {
        ToolResultContent::Text(text) => return cut_result(text, max),
        ToolResultContent::Blocks(blocks) => blocks,
    };
    let sizes: Vec<usize> = blocks.iter().map(block_size).collect();
    let full = sizes.iter().fold(0usize, |a, b| a.saturating_add(*b));
    if full <= max {
        return None;
    }
    let mut kept = 0usize;
    let mut keep = 0usize;
    for (block, &size) in blocks.iter_mut().zip(&sizes) {
        if kept.saturating_add(size) <= max {
            kept += size;
            keep += 1;
            continue;
        }
        if let ContentBlock::Text(t) = block {
            let mut end = max - kept;
            while end > 0 && !t.text.is_char_boundary(end) {
                end -= 1;
            }
            if end > 0 {
                t.text.truncate(end);
                kept += end;
                keep += 1;
            }
        }
        break;
    }
    blocks.truncate(keep);
    blocks.push(ContentBlock::Text(TextBlock {
        text: format!("[toolgate: result cut at {kept} of {full} bytes]"),
        extra: Map::new(),
    }));
    Some(full)
}

/// A block's size: a `text` block's text, any other block's compact JSON.
fn block_size(block: &ContentBlock) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match block {
        ContentBlock::Text(t) => t.text.len(),
        other => {
            let mut count = Count(0);
            match serde_json::to_writer(&mut count, other) {
                Ok(()) => count.0,
                Err(_) => usize::MAX,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(input: Value) -> ToolUse {
        ToolUse::new("toolu_1", "t", input)
    }

    #[test]
    fn normalizes_empty_and_string_inputs() {
        let l = Limits::default();
        assert_eq!(normalize(&call(json!(null)), &l).unwrap().input, json!({}));
        assert_eq!(normalize(&call(json!("")), &l).unwrap().input, json!({}));
        assert_eq!(
            normalize(&call(json!("{\"a\": 1}")), &l).unwrap().input,
            json!({"a": 1})
        );
        assert!(matches!(
            normalize(&call(json!({"a": 1})), &l).unwrap(),
            Normalized::Borrowed(_)
        ));
        assert_eq!(
            normalize(&call(json!([1])), &l).unwrap_err().0,
            "the input must be a JSON object, found a JSON array"
        );
        assert_eq!(
            normalize(&call(json!("[1]")), &l).unwrap_err().0,
            "the input must be a JSON object, but it is a string holding a JSON array"
        );
    }

    #[test]
    fn measures_compact_json_size() {
        let v = json!({"a": [1, true, null], "bc": "xyz", "n": -12, "f": 1.5});
        let compact =
            serde_json::to_string(&json!({"a": [1, true, null], "bc": "xyz", "n": -12})).unwrap();
        let exact = Limits::default().max_input_bytes(compact.len());
        assert!(
            check_bounds(
                &json!({"a": [1, true, null], "bc": "xyz", "n": -12}),
                &exact
            )
            .is_ok()
        );
        let one_less = Limits::default().max_input_bytes(compact.len() - 1);
        assert!(
            check_bounds(
                &json!({"a": [1, true, null], "bc": "xyz", "n": -12}),
                &one_less
            )
            .is_err()
        );
        assert!(check_bounds(&v, &Limits::default()).is_ok());
    }

    #[test]
    fn refuses_deep_input() {
        let mut v = json!({});
        for _ in 0..32 {
            v = json!({ "a": v });
        }
        let l = Limits::default();
        assert_eq!(
            check_bounds(&v, &l).unwrap_err().0,
            "the input is nested more than 32 levels deep; flatten it"
        );
        assert!(check_bounds(&v, &l.max_input_depth(33)).is_ok());
    }

    #[test]
    fn cuts_results_at_char_boundaries() {
        let mut s = "aé".repeat(10);
        assert_eq!(cut_result(&mut s, 4), Some(30));
        assert_eq!(s, "aéa\n[toolgate: result cut at 4 of 30 bytes]");
        let mut s = "aé".repeat(10);
        // Byte 2 is inside `é`: the cut moves back to the boundary at 1.
        assert_eq!(cut_result(&mut s, 2), Some(30));
        assert_eq!(s, "a\n[toolgate: result cut at 1 of 30 bytes]");
        let mut short = "abc".to_owned();
        assert_eq!(cut_result(&mut short, 3), None);
    }

    #[test]
    fn cuts_block_results() {
        let text = |t: &str| {
            ContentBlock::Text(TextBlock {
                text: t.to_owned(),
                extra: Map::new(),
            })
        };
        let image: ContentBlock = serde_json::from_value(json!({"type": "image", "source":
            {"type": "base64", "media_type": "image/png", "data": "AAAA"}}))
        .unwrap();
        let image_size = serde_json::to_string(&image).unwrap().len();
        assert_eq!(image_size, 82);

        let mut fits = ToolResultContent::Blocks(vec![text("abc"), image.clone()]);
        assert_eq!(cut_content(&mut fits, 85), None);

        // 3 + 82 + 10 = 95 bytes, limit 91: the image fits, the last text is cut to 6 bytes.
        let mut c = ToolResultContent::Blocks(vec![text("abc"), image.clone(), text("0123456789")]);
        assert_eq!(cut_content(&mut c, 91), Some(95));
        assert_eq!(
            c,
            ToolResultContent::Blocks(vec![
                text("abc"),
                image.clone(),
                text("012345"),
                text("[toolgate: result cut at 91 of 95 bytes]"),
            ])
        );

        // The image does not fit: it and everything after it are dropped.
        let mut c = ToolResultContent::Blocks(vec![text("abc"), image, text("z")]);
        assert_eq!(cut_content(&mut c, 40), Some(86));
        assert_eq!(
            c,
            ToolResultContent::Blocks(vec![
                text("abc"),
                text("[toolgate: result cut at 3 of 86 bytes]"),
            ])
        );
    }
}
