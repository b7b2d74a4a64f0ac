//! [`Limits`]: the bounds on untrusted input (applied in `normalize.rs`) and on results (a result
//! over its bound is cut here).

use serde_json::Map;

use crate::content::message::{ContentBlock, TextBlock, ToolResultContent};
use crate::texts;

/// Bounds the dispatcher applies to every call.
///
/// - `max_input_bytes` (default 1 MiB = 1 048 576 bytes): an input larger than this, measured as
///   compact JSON (string escapes not counted), is `invalid_input` before any hook or tool sees
///   it;
/// - `max_input_depth` (default 32 levels; `{}` is depth 1): deeper input is `invalid_input`;
/// - `max_result_bytes` (default 256 KiB = 262 144 bytes): a longer result text is cut at a
///   character boundary and ends with a marker saying so (`\n[toolgate: result cut at 262144 of
///   300000 bytes]`); the audit line's `content_bytes` keeps the full size. A result made of
///   content blocks (a tool's [`Content`](crate::content::Content), a wrapped caller's blocks) is
///   measured as the bytes of its `text` blocks plus the compact JSON of every other block (an
///   image's or a PDF's base64 counts); the blocks that fit are kept in order; a `text` block that
///   crosses the limit is cut, but an image, a document or any other block that does not fit is
///   left out whole, never cut (a model cannot use half an image or half a PDF); every block after
///   that point is left out too, and a last `text` block carries the marker, which names what was
///   left out: `[toolgate: result cut at 1024 of 5000086 bytes; left out: 1 image, 1 text block]`
///   (no `left out` when only a text was cut). A tool that returns images needs a larger limit than
///   the default: a 1 MB PNG is about 1.4 MB of base64. A result of more than
///   [`MAX_RESULT_BLOCKS`] blocks keeps its first `MAX_RESULT_BLOCKS - 1` and the marker
///   (`[toolgate: result cut at 1023 of 100000 blocks; left out: 98977 text blocks]`): a text
///   block counts its text only, so without this bound a wrapped caller's many small or empty
///   blocks would make a request of any size.
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

/// The most blocks a block result keeps, the marker of a cut included (see [`Limits`]).
pub const MAX_RESULT_BLOCKS: usize = 1024;

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
    text.push('\n');
    text.push_str(&texts::result_cut(end, full));
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
    let count = blocks.len();
    if full <= max && count <= MAX_RESULT_BLOCKS {
        return None;
    }
    // Room for the marker when the blocks are too many.
    let room = count.min(MAX_RESULT_BLOCKS - 1);
    let mut kept = 0usize;
    let mut keep = 0usize;
    let mut over_bytes = false;
    for (block, &size) in blocks.iter_mut().zip(&sizes).take(room) {
        if kept.saturating_add(size) <= max {
            kept += size;
            keep += 1;
            continue;
        }
        over_bytes = true;
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
    let left_out = left_out(&blocks[keep..]);
    blocks.truncate(keep);
    let marker = if !over_bytes && count > MAX_RESULT_BLOCKS {
        texts::blocks_over(keep, count, &left_out)
    } else if left_out.is_empty() {
        texts::result_cut(kept, full)
    } else {
        texts::blocks_cut(kept, full, &left_out)
    };
    blocks.push(ContentBlock::Text(TextBlock {
        text: marker,
        extra: Map::new(),
    }));
    Some(full)
}

/// The blocks left out of a cut result, counted by kind: `1 image, 2 text blocks` (images,
/// documents, text blocks, other blocks; empty when there are none).
fn left_out(blocks: &[ContentBlock]) -> String {
    let mut counts = [0usize; 4];
    for b in blocks {
        let kind = match b {
            ContentBlock::Other(map) => match map.get("type").and_then(|t| t.as_str()) {
                Some("image") => 0,
                Some("document") => 1,
                _ => 3,
            },
            ContentBlock::Text(_) => 2,
            _ => 3,
        };
        counts[kind] += 1;
    }
    let names = [
        ("image", "images"),
        ("document", "documents"),
        ("text block", "text blocks"),
        ("other block", "other blocks"),
    ];
    counts
        .iter()
        .zip(names)
        .filter(|(n, _)| **n > 0)
        .map(|(&n, (one, many))| format!("{n} {}", if n == 1 { one } else { many }))
        .collect::<Vec<_>>()
        .join(", ")
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

        // The image does not fit: it is left out whole, and everything after it too.
        let mut c = ToolResultContent::Blocks(vec![text("abc"), image.clone(), text("z")]);
        assert_eq!(cut_content(&mut c, 40), Some(86));
        assert_eq!(
            c,
            ToolResultContent::Blocks(vec![
                text("abc"),
                text("[toolgate: result cut at 3 of 86 bytes; left out: 1 image, 1 text block]"),
            ])
        );

        // A PDF one byte over the room left; two images and two texts after it.
        let pdf: ContentBlock = serde_json::from_value(json!({"type": "document", "source":
            {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}))
        .unwrap();
        let pdf_size = serde_json::to_string(&pdf).unwrap().len();
        let mut c = ToolResultContent::Blocks(vec![
            text("abc"),
            pdf,
            image.clone(),
            text("y"),
            image,
            text("z"),
        ]);
        let full = 3 + pdf_size + 82 + 1 + 82 + 1;
        assert_eq!(cut_content(&mut c, 3 + pdf_size - 1), Some(full));
        assert_eq!(
            c,
            ToolResultContent::Blocks(vec![
                text("abc"),
                text(&format!(
                    "[toolgate: result cut at 3 of {full} bytes; left out: 2 images, 1 document, \
                     2 text blocks]"
                )),
            ])
        );
    }
}
