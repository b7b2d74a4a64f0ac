//! Writing messages and blocks in the Messages API's shape: the modelled fields first (`type`
//! first in a block), then `extra` in its order. Written as maps by hand (no `#[serde(flatten)]`
//! and its buffering), which gives the same JSON.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::{ContentBlock, Message, TextBlock, ToolResult, ToolUse};

/// Writes `extra`'s entries into an open map and closes it.
fn end_with_extra<M: SerializeMap>(
    mut map: M,
    extra: &Map<String, Value>,
) -> Result<M::Ok, M::Error> {
    for (k, v) in extra {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

impl Serialize for ToolUse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(4 + self.extra.len()))?;
        map.serialize_entry("type", "tool_use")?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("input", &self.input)?;
        end_with_extra(map, &self.extra)
    }
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = 2 + usize::from(self.content.is_some()) + usize::from(self.is_error);
        let mut map = s.serialize_map(Some(len + self.extra.len()))?;
        map.serialize_entry("type", "tool_result")?;
        map.serialize_entry("tool_use_id", &self.tool_use_id)?;
        if let Some(content) = &self.content {
            map.serialize_entry("content", content)?;
        }
        if self.is_error {
            map.serialize_entry("is_error", &true)?;
        }
        end_with_extra(map, &self.extra)
    }
}

impl Serialize for TextBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2 + self.extra.len()))?;
        map.serialize_entry("type", "text")?;
        map.serialize_entry("text", &self.text)?;
        end_with_extra(map, &self.extra)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(b) => b.serialize(s),
            ContentBlock::ToolUse(b) => b.serialize(s),
            ContentBlock::ToolResult(b) => b.serialize(s),
            ContentBlock::Other(map) => map.serialize(s),
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = 2 + usize::from(self.stop_reason.is_some());
        let mut map = s.serialize_map(Some(len + self.extra.len()))?;
        map.serialize_entry("role", &self.role)?;
        map.serialize_entry("content", &self.content)?;
        if let Some(stop_reason) = &self.stop_reason {
            map.serialize_entry("stop_reason", stop_reason)?;
        }
        end_with_extra(map, &self.extra)
    }
}
