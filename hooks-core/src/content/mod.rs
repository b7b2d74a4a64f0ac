//! Content blocks and messages in the Anthropic Messages API's exact wire shape.
//!
//! Source of the shapes: the Messages API reference and the "Implement tool use" and "Parallel
//! tool use" pages (`tool_use` and `tool_result` blocks, `stop_reason`). Fields this crate does
//! not model (`cache_control`, image and document `source`s, `citations`, …) are kept in each
//! block's `extra` map and written back unchanged, so a message survives a round trip.

pub(crate) mod conversation;
pub(crate) mod de;
pub(crate) mod ids;
pub(crate) mod message;
pub(crate) mod output;
mod ser;
pub(crate) mod usage;

// The three a host names most (`ToolUse`, `ToolResult`, `Message`) are at the crate's root.
pub use message::{ContentBlock, Role, TextBlock, ToolResultContent};
pub(crate) use message::{Message, ToolResult, ToolUse};

pub use crate::texts::{EXTERNAL_TOOL_MESSAGE, INTERNAL_ERROR_MESSAGE};
pub use conversation::Conversation;
pub use ids::{IdError, IdRule};
pub use output::{Content, Document, Image, ToolOutput, output_content, output_text};
pub use usage::Usage;
