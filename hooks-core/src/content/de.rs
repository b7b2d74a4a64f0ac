//! Reading messages and blocks: hand-written so that `type` is checked and `extra` keeps the
//! rest, in one pass over the text.
//!
//! An object is first read into [`Entries`], its `(key, value)` pairs in the order sent, with no
//! hashing; a message's `content` array is read straight into such entries, block by block,
//! without a `serde_json::Map` of each block in between. The rules are then applied to the
//! entries, once the whole value has been read: so a malformed JSON text is reported before any
//! rule, and a rule's error text carries no position, as when these types were read through a
//! `Map`. What a duplicate key means is what a `Map` makes of it: the last value wins, at the
//! first one's place.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{ContentBlock, Message, Role, TextBlock, ToolResult, ToolResultContent, ToolUse};

/// The JSON kind of a value, for error messages: `null`, `boolean`, `number`, `string`,
/// `array`, `object`.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The key of a modelled field as a `'static` string (kept without an allocation when read).
fn known_key(s: &str) -> Option<&'static str> {
    Some(match s {
        "type" => "type",
        "id" => "id",
        "name" => "name",
        "input" => "input",
        "text" => "text",
        "content" => "content",
        "tool_use_id" => "tool_use_id",
        "is_error" => "is_error",
        "role" => "role",
        "stop_reason" => "stop_reason",
        _ => return None,
    })
}

/// One JSON object's entries in the order sent.
#[derive(Default)]
struct Entries(Vec<(Cow<'static, str>, Value)>);

impl Entries {
    /// The values sent under `keys` (the last of each, as a `Map` keeps), and the entries left
    /// in their order: one pass over the entries.
    fn split<const N: usize>(self, keys: [&str; N]) -> ([Option<Value>; N], Entries) {
        let mut found = [const { None }; N];
        let mut rest = Vec::new();
        for (k, v) in self.0 {
            match keys.iter().position(|key| *key == k) {
                Some(i) => found[i] = Some(v),
                None => rest.push((k, v)),
            }
        }
        (found, Entries(rest))
    }

    /// The value sent under `key` (the last one).
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The entries left, as the `Map` a `Map`'s own `Deserialize` would have built of them.
    fn into_map(self) -> Map<String, Value> {
        if self.0.is_empty() {
            return Map::new();
        }
        let mut map = Map::with_capacity(self.0.len());
        for (k, v) in self.0 {
            map.insert(k.into_owned(), v);
        }
        map
    }
}

/// A key: a modelled field's borrowed ([`known_key`]), any other owned.
struct Key(Cow<'static, str>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(Key(match known_key(s) {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(s.to_owned()),
                }))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key, E> {
                Ok(Key(match known_key(&s) {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(s),
                }))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Reads a map's entries (the caller has checked it is a map).
fn read_entries<'de, A: MapAccess<'de>>(mut access: A) -> Result<Entries, A::Error> {
    let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(4).min(16));
    while let Some(Key(key)) = access.next_key()? {
        let value: Value = access.next_value()?;
        entries.push((key, value));
    }
    Ok(Entries(entries))
}

/// The visitor of an object read as [`Entries`]; anything else is refused as a `Map` refuses it
/// (`invalid type: string "x", expected a map`).
struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Entries, E> {
        // As a `Map` reads a unit (serde_json's own deserializers never give one for a map).
        Ok(Entries::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Entries, A::Error> {
        read_entries(access)
    }
}

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EntriesVisitor)
    }
}

/// One item of a message's `content` array, read as is: an object's entries, or any other value
/// (refused later, with its index, in the words a `Map` would use).
enum Item {
    Object(Entries),
    NotAnObject(Value),
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Item, A::Error> {
                read_entries(access).map(Item::Object)
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::Bool(b)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::from(n)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::from(n)))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::from(n)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::String(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::String(s)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::Null))
            }
            fn visit_none<E: de::Error>(self) -> Result<Item, E> {
                Ok(Item::NotAnObject(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, access: A) -> Result<Item, A::Error> {
                let items =
                    Vec::<Value>::deserialize(de::value::SeqAccessDeserializer::new(access))?;
                Ok(Item::NotAnObject(Value::Array(items)))
            }
        }
        d.deserialize_any(ItemVisitor)
    }
}

impl Item {
    /// The block this item is, or the reason it is none (without its index).
    fn into_block<E: de::Error>(self) -> Result<ContentBlock, E> {
        match self {
            Item::Object(entries) => ContentBlock::from_entries(entries),
            Item::NotAnObject(value) => match Map::deserialize(value) {
                Err(e) => Err(E::custom(e)),
                Ok(_) => Err(E::custom("a content block must be an object")),
            },
        }
    }
}

/// A message's `content` as read: a string, the array's items, or the kind of anything else.
enum RawContent {
    Text(String),
    Items(Vec<Item>),
    Wrong(&'static str),
}

impl<'de> Deserialize<'de> for RawContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = RawContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawContent, E> {
                Ok(RawContent::Text(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<RawContent, E> {
                Ok(RawContent::Text(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<RawContent, A::Error> {
                let mut items = Vec::with_capacity(access.size_hint().unwrap_or(4).min(64));
                while let Some(item) = access.next_element()? {
                    items.push(item);
                }
                Ok(RawContent::Items(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<RawContent, A::Error> {
                while access.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RawContent::Wrong("object"))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawContent, E> {
                Ok(RawContent::Wrong("boolean"))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawContent, E> {
                Ok(RawContent::Wrong("number"))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawContent, E> {
                Ok(RawContent::Wrong("number"))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<RawContent, E> {
                // serde_json's `Value` keeps a non-finite float as `null`.
                Ok(RawContent::Wrong(if n.is_finite() {
                    "number"
                } else {
                    "null"
                }))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawContent, E> {
                Ok(RawContent::Wrong("null"))
            }
            fn visit_none<E: de::Error>(self) -> Result<RawContent, E> {
                Ok(RawContent::Wrong("null"))
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

/// A message as read, before its rules: `role`, `content` and `stop_reason` as sent (the last of
/// each), every other entry in order.
#[derive(Default)]
struct RawMessage {
    role: Option<Value>,
    content: Option<RawContent>,
    stop_reason: Option<Value>,
    extra: Entries,
}

impl<'de> Deserialize<'de> for RawMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MessageVisitor;
        impl<'de> Visitor<'de> for MessageVisitor {
            type Value = RawMessage;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawMessage, E> {
                Ok(RawMessage::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<RawMessage, A::Error> {
                let mut raw = RawMessage::default();
                while let Some(Key(key)) = access.next_key()? {
                    match &*key {
                        "role" => raw.role = Some(access.next_value()?),
                        "content" => raw.content = Some(access.next_value()?),
                        "stop_reason" => raw.stop_reason = Some(access.next_value()?),
                        _ => raw.extra.0.push((key, access.next_value()?)),
                    }
                }
                Ok(raw)
            }
        }
        d.deserialize_map(MessageVisitor)
    }
}

fn check_type<E: de::Error>(sent: Option<Value>, want: &str) -> Result<(), E> {
    match sent {
        None => Ok(()),
        Some(Value::String(t)) if t == want => Ok(()),
        Some(other) => Err(E::custom(format_args!(
            "expected a `{want}` block, found type {other}"
        ))),
    }
}

fn string_field<E: de::Error>(sent: Option<Value>, key: &'static str) -> Result<String, E> {
    match sent {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(E::custom(format_args!(
            "field `{key}` must be a string, found {}",
            kind_of(&other)
        ))),
        None => Err(E::missing_field(key)),
    }
}

impl ToolUse {
    fn from_entries<E: de::Error>(entries: Entries) -> Result<Self, E> {
        let ([kind, id, name, input], extra) = entries.split(["type", "id", "name", "input"]);
        check_type(kind, "tool_use")?;
        let id = string_field(id, "id")?;
        let name = string_field(name, "name")?;
        Ok(ToolUse {
            id,
            name,
            input: input.unwrap_or(Value::Null),
            extra: extra.into_map(),
        })
    }
}

impl ToolResult {
    fn from_entries<E: de::Error>(entries: Entries) -> Result<Self, E> {
        let ([kind, tool_use_id, content, is_error], extra) =
            entries.split(["type", "tool_use_id", "content", "is_error"]);
        check_type(kind, "tool_result")?;
        let tool_use_id = string_field(tool_use_id, "tool_use_id")?;
        let content = match content {
            None => None,
            Some(v) => Some(ToolResultContent::deserialize(v).map_err(E::custom)?),
        };
        let is_error = match is_error {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(other) => {
                return Err(E::custom(format_args!(
                    "field `is_error` must be a boolean, found {}",
                    kind_of(&other)
                )));
            }
        };
        Ok(ToolResult {
            tool_use_id,
            content,
            is_error,
            extra: extra.into_map(),
        })
    }
}

impl TextBlock {
    fn from_entries<E: de::Error>(entries: Entries) -> Result<Self, E> {
        let ([kind, text], extra) = entries.split(["type", "text"]);
        check_type(kind, "text")?;
        let text = string_field(text, "text")?;
        Ok(TextBlock {
            text,
            extra: extra.into_map(),
        })
    }
}

impl ContentBlock {
    fn from_entries<E: de::Error>(entries: Entries) -> Result<Self, E> {
        let kind = match entries.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(other) => {
                return Err(E::custom(format_args!(
                    "a content block's `type` must be a string, found {}",
                    kind_of(other)
                )));
            }
            None => return Err(E::missing_field("type")),
        };
        match kind {
            "text" => TextBlock::from_entries(entries).map(ContentBlock::Text),
            "tool_use" => ToolUse::from_entries(entries).map(ContentBlock::ToolUse),
            "tool_result" => ToolResult::from_entries(entries).map(ContentBlock::ToolResult),
            _ => Ok(ContentBlock::Other(entries.into_map())),
        }
    }
}

impl RawMessage {
    fn into_message<E: de::Error>(self) -> Result<Message, E> {
        let role = match self.role {
            Some(v) => Role::deserialize(v).map_err(E::custom)?,
            None => return Err(E::missing_field("role")),
        };
        let content = match self.content {
            Some(RawContent::Text(text)) => vec![ContentBlock::Text(TextBlock {
                text,
                extra: Map::new(),
            })],
            Some(RawContent::Items(items)) => {
                let mut blocks = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let block = item
                        .into_block::<E>()
                        .map_err(|e| E::custom(format_args!("content[{i}]: {e}")))?;
                    blocks.push(block);
                }
                blocks
            }
            Some(RawContent::Wrong(kind)) => {
                return Err(E::custom(format_args!(
                    "field `content` must be a string or an array of content blocks, found {kind}"
                )));
            }
            None => return Err(E::missing_field("content")),
        };
        let stop_reason = match self.stop_reason {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                return Err(E::custom(format_args!(
                    "field `stop_reason` must be a string or null, found {}",
                    kind_of(&other)
                )));
            }
        };
        Ok(Message {
            role,
            content,
            stop_reason,
            extra: self.extra.into_map(),
        })
    }
}

impl<'de> Deserialize<'de> for ToolUse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ToolUse::from_entries(Entries::deserialize(d)?)
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ToolResult::from_entries(Entries::deserialize(d)?)
    }
}

impl<'de> Deserialize<'de> for TextBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        TextBlock::from_entries(Entries::deserialize(d)?)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ContentBlock::from_entries(Entries::deserialize(d)?)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawMessage::deserialize(d)?.into_message()
    }
}
