//! OpenAI Chat Completions: the `tools` entry, `tool_calls` in, `role: "tool"` messages out;
//! and the strict schema subset both OpenAI APIs use (the Responses API's flat entry and its
//! items are in [`openai_responses`](super::openai_responses)).
//!
//! Documents: "Function calling" (the entry, `tool_calls`, the `role: "tool"` message) and
//! "Structured Outputs", "Supported schemas" (the strict subset).
//!
//! The entry: `{"type": "function", "function": {"name": …, "description": …, "parameters": …,
//! "strict": true}}`. `strict` is always sent, `true` or `false`: Chat Completions and
//! Responses default differently. A tool outside the strict subset is sent with `strict: false`
//! and the Anthropic `input_schema` ([`anthropic_input_schema`]) as `parameters`;
//! [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools) says why.
//!
//! The strict subset: every object `additionalProperties: false` and every property in
//! `required`; an optional (nullable) scalar as a type union with `"null"` (`{"type":
//! ["string", "null"], "enum": ["celsius", "fahrenheit"]}`, `null` not added to `enum`, as in
//! the guide's `get_weather`); an optional object or array as `anyOf: [X, {"type": "null"}]`; a
//! field that may be omitted but not `null` (`#[serde(default)]`) becomes required: the model
//! must then give a value; no `oneOf` (written as `anyOf`), `allOf`, `not`, `if`/`then`/`else`;
//! no `default`; string `format` only `date-time`, `time`, `date`, `duration`, `email`,
//! `hostname`, `ipv4`, `ipv6`, `uuid`; no `minLength`/`maxLength`, `uniqueItems`,
//! `minProperties`/`maxProperties`; `$defs` and recursion allowed. A keyword that only narrows
//! values is moved into the description; a construct the subset cannot express (a map, a tuple,
//! `allOf`, a merged object such as a `#[serde(flatten)]` enum, …) makes the tool non-strict.
//!
//! # Limits on one schema
//!
//! Source: "Structured Outputs", "Supported schemas"
//! (`https://platform.openai.com/docs/guides/structured-outputs#supported-schemas`), in the
//! versions raised in July 2025 (earlier: 100 properties, 5 levels, 15 000 characters, 500 enum
//! values, 7 500 characters):
//!
//! | limit | value | the page's words |
//! |---|---|---|
//! | object properties | [`OPENAI_MAX_PROPERTIES`] (5 000) | "A schema may have up to 5000 object properties total, with up to 10 levels of nesting." |
//! | nesting | [`OPENAI_MAX_NESTING`] (10) | (the same sentence; the root object is level 1) |
//! | string length | [`OPENAI_MAX_STRING_LENGTH`] (120 000) | "total string length of all property names, definition names, enum values, and const values cannot exceed 120,000 characters" |
//! | enum values | [`OPENAI_MAX_ENUM_VALUES`] (1 000) | "A schema may have up to 1000 enum values across all enum properties." |
//! | one large enum | [`OPENAI_MAX_LARGE_ENUM_LENGTH`] (15 000) | "For a single enum property with string values, the total string length of all enum values cannot exceed 15,000 characters when there are more than 250 enum values." |
//!
//! The page states them for "a schema": toolgate applies them to each tool's `parameters`
//! (counted on the strict form as sent: every key of every `properties` map; every `$defs` name;
//! every `enum` entry; characters as Unicode scalar values, a non-string enum or const value
//! counted by its JSON text). A tool over one is emitted with `strict: false` and
//! [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools) says which limit, in
//! whatever the other tools are: one tool's limits do not depend on them. OpenAI documents no limit across
//! a request's strict tools together.
//!
//! Calls and results: [`tool_use`], [`tool_uses`] and [`tool_message`]. Chat Completions has no
//! `is_error` field, so a failed result says so in its text. A host answering a whole choice
//! uses [`Session::respond_openai_choice`](crate::Session::respond_openai_choice) instead: it
//! runs nothing when `finish_reason` is `"length"` (the bare converters carry no finish
//! reason, so they cannot tell). Ids: a `tool_call` id must be non-empty and unique in its
//! message (OpenAI documents no pattern for `call_…` ids; each `role: "tool"` message names
//! its call by id).

use serde_json::{Map, Value, json};

use super::subset::{
    ALL_OF, at, inexpressible, is_object_schema, keys_to_move, merged_object, open_object,
    relocate, walk_children,
};
#[cfg(feature = "openai")]
use super::{
    ConvertError, Turn, object, optional_string, string_field, text_saying_failure, the_one,
};
use super::{Definition, Target, ToolSource};
#[cfg(feature = "openai")]
use crate::content::de::kind_of;
#[cfg(feature = "openai")]
use crate::content::message::{ToolResult, ToolUse};
use crate::schema::anthropic_input_schema;
use crate::schema::walk::split_nullable;

/// [`Provider::OpenAi`](super::Provider::OpenAi).
pub(super) const TARGET: Target = Target {
    name: "openai",
    strict: true,
    definition,
    request_limits: None,
    cache_control: false,
};

/// `{"type": "function", "function": {…}}`, the object of [`function`]. Never an error.
fn definition(tool: &ToolSource<'_>, may_be_strict: bool) -> Result<Definition, String> {
    let (fields, non_strict) = function(tool, may_be_strict);
    Ok(Definition {
        value: json!({"type": "function", "function": fields}),
        non_strict,
    })
}

/// The `{"name": …, "description": …, "parameters": …, "strict": …}` object both OpenAI APIs
/// send (Chat Completions nested under `function`, Responses flat), and why it is not strict
/// when it is not: `parameters` is the strict subset ([`strict`]) when the tool may be strict
/// and the schema fits it, else the Anthropic `input_schema` with `strict: false` (with no
/// reason when it may not be strict: the caller has one).
pub(super) fn function(
    tool: &ToolSource<'_>,
    may_be_strict: bool,
) -> (Map<String, Value>, Option<String>) {
    let attempt = if may_be_strict {
        strict(tool.canonical).map(Some)
    } else {
        Ok(None)
    };
    let (parameters, is_strict, non_strict) = match attempt {
        Ok(Some(s)) => (s, true, None),
        Ok(None) => (anthropic_input_schema(tool.canonical), false, None),
        Err(reason) => (anthropic_input_schema(tool.canonical), false, Some(reason)),
    };
    let mut fields = Map::new();
    fields.insert("name".into(), tool.name.into());
    fields.insert("description".into(), tool.description.into());
    fields.insert("parameters".into(), parameters);
    fields.insert("strict".into(), is_strict.into());
    (fields, non_strict)
}

/// String formats OpenAI Structured Outputs accepts ("Supported schemas").
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords OpenAI strict mode does not accept but that only narrow values.
const MOVED: &[&str] = &[
    "default",
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
];

/// Deepest object nesting OpenAI strict mode accepts (the root object is level 1). Source:
/// OpenAI's "Structured Outputs" guide, "Supported schemas", "Objects have limitations on nesting
/// depth and size": "A schema may have up to 5000 object properties total, with up to 10 levels
/// of nesting." (earlier versions said 100 properties and 5 levels). `$defs` entries start their
/// own count; [`definition`](super::definition) emits a deeper tool non-strict.
pub const OPENAI_MAX_NESTING: usize = 10;

/// Object properties one strict schema may have in total (the same sentence as
/// [`OPENAI_MAX_NESTING`]: "up to 5000 object properties total").
pub const OPENAI_MAX_PROPERTIES: usize = 5000;

/// Enum values one strict schema may have ("Limitations on enum size": "A schema may have up to
/// 1000 enum values across all enum properties").
pub const OPENAI_MAX_ENUM_VALUES: usize = 1000;

/// Characters of one strict schema's names and values ("Limitations on total string size":
/// "total string length of all property names, definition names, enum values, and const values
/// cannot exceed 120,000 characters").
pub const OPENAI_MAX_STRING_LENGTH: usize = 120_000;

/// An enum of more than this many string values is a large enum, held to
/// [`OPENAI_MAX_LARGE_ENUM_LENGTH`] ("Limitations on enum size").
pub const OPENAI_LARGE_ENUM_VALUES: usize = 250;

/// Characters of one large enum's string values ("For a single enum property with string values,
/// the total string length of all enum values cannot exceed 15,000 characters when there are
/// more than 250 enum values").
pub const OPENAI_MAX_LARGE_ENUM_LENGTH: usize = 15_000;

/// The canonical schema in OpenAI's strict subset, or why it cannot be (outside the subset, or
/// over one of the limits on one schema).
pub(super) fn strict(canonical: &Value) -> Result<Value, String> {
    let mut v = canonical.clone();
    let mut size = Size::default();
    node(&mut v, "", 0, &mut size)?;
    size.check()?;
    Ok(v)
}

/// What one strict schema holds, against the limits on one schema (module docs).
#[derive(Debug, Default, PartialEq, Eq)]
struct Size {
    properties: usize,
    enum_values: usize,
    /// Property names, definition names, enum values and const values, in characters.
    characters: usize,
}

impl Size {
    /// Counts the names and values of one node (the node itself, not its subschemas); a large
    /// enum over its own limit is named by `path`.
    fn add(&mut self, map: &Map<String, Value>, path: &str) -> Result<(), String> {
        for names in ["properties", "$defs", "definitions"] {
            if let Some(Value::Object(named)) = map.get(names) {
                if names == "properties" {
                    self.properties += named.len();
                }
                self.characters += named.keys().map(|k| k.chars().count()).sum::<usize>();
            }
        }
        if let Some(c) = map.get("const") {
            self.characters += characters(c);
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            self.enum_values += values.len();
            let length: usize = values.iter().map(characters).sum();
            self.characters += length;
            let strings = values.iter().filter(|v| v.is_string()).count();
            let string_length: usize = values
                .iter()
                .filter(|v| v.is_string())
                .map(characters)
                .sum();
            if strings > OPENAI_LARGE_ENUM_VALUES && string_length > OPENAI_MAX_LARGE_ENUM_LENGTH {
                return Err(format!(
                    "{} has an enum of {strings} string values totalling {string_length} \
                     characters; OpenAI strict mode allows {OPENAI_MAX_LARGE_ENUM_LENGTH} for an \
                     enum of more than {OPENAI_LARGE_ENUM_VALUES} values",
                    at(path)
                ));
            }
        }
        Ok(())
    }

    /// The totals against their limits: every one crossed, joined with `; `.
    fn check(&self) -> Result<(), String> {
        let mut over = Vec::new();
        if self.properties > OPENAI_MAX_PROPERTIES {
            over.push(format!(
                "the schema has {} object properties; OpenAI strict mode allows \
                 {OPENAI_MAX_PROPERTIES} in one schema",
                self.properties
            ));
        }
        if self.enum_values > OPENAI_MAX_ENUM_VALUES {
            over.push(format!(
                "the schema has {} enum values; OpenAI strict mode allows \
                 {OPENAI_MAX_ENUM_VALUES} in one schema",
                self.enum_values
            ));
        }
        if self.characters > OPENAI_MAX_STRING_LENGTH {
            over.push(format!(
                "the property names, definition names, enum values and const values of the \
                 schema total {} characters; OpenAI strict mode allows \
                 {OPENAI_MAX_STRING_LENGTH} in one schema",
                self.characters
            ));
        }
        if over.is_empty() {
            Ok(())
        } else {
            Err(over.join("; "))
        }
    }
}

/// A name's or value's length in characters: a string's Unicode scalar values, any other
/// value's JSON text.
fn characters(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        other => other.to_string().chars().count(),
    }
}

/// Narrows one node in place and walks its subschemas; `depth` counts the objects above it;
/// `size` adds up what the limits on one schema count.
fn node(v: &mut Value, path: &str, depth: usize, size: &mut Size) -> Result<(), String> {
    if let Some(merged) = nullable_scalar(v) {
        *v = merged;
    }
    let Value::Object(map) = v else {
        return match v {
            Value::Bool(false) => Ok(()),
            _ => Err(format!("{} accepts any JSON value", at(path))),
        };
    };
    if let Some(Value::String(target)) = map.get("$ref") {
        if !target.starts_with('#') {
            return Err(format!(
                "{} refers to an external schema (`$ref: {target}`)",
                at(path)
            ));
        }
        return Ok(());
    }
    if let Some(reason) = inexpressible(map, path, ALL_OF) {
        return Err(reason);
    }
    if let Some(reason) = merged_object(map, path) {
        return Err(reason);
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    let object = is_object_schema(map);
    let depth = if object { depth + 1 } else { depth };
    if object {
        if depth > OPENAI_MAX_NESTING {
            return Err(format!(
                "{} is an object nested {depth} levels deep; OpenAI strict mode allows \
                 {OPENAI_MAX_NESTING}",
                at(path)
            ));
        }
        if let Some(reason) = open_object(map, path) {
            return Err(reason);
        }
        map.insert("additionalProperties".into(), Value::Bool(false));
        let keys: Vec<Value> = match map.get("properties") {
            Some(Value::Object(props)) => props.keys().map(|k| Value::String(k.clone())).collect(),
            _ => Vec::new(),
        };
        map.insert("required".into(), Value::Array(keys));
    }
    let moved = keys_to_move(map, MOVED, FORMATS);
    relocate(map, &moved);
    size.add(map, path)?;
    walk_children(map, path, &mut |keyword, child, p| {
        // `$defs` start a new nesting count: they are reached through `$ref`.
        let d = if matches!(keyword, "$defs" | "definitions") {
            0
        } else {
            depth
        };
        node(child, p, d, size)
    })
}

/// `{"anyOf": [{"type": "string", …}, {"type": "null"}], "description": …}` →
/// `{"type": ["string", "null"], …, "description": …}` when the non-null branch is a plain
/// scalar (one `type` of `string`, `number`, `integer` or `boolean`, no combinator or `$ref`).
fn nullable_scalar(v: &Value) -> Option<Value> {
    let (Value::Object(mut merged), true) = split_nullable(v) else {
        return None;
    };
    let ty = merged.get("type")?.as_str()?.to_owned();
    if !matches!(ty.as_str(), "string" | "number" | "integer" | "boolean")
        || ["anyOf", "oneOf", "allOf", "$ref"]
            .iter()
            .any(|k| merged.contains_key(*k))
    {
        return None;
    }
    merged.insert("type".into(), json!([ty, "null"]));
    Some(Value::Object(merged))
}

// ---- Chat Completions: calls in, results out ----

#[cfg(feature = "openai")]
const WHAT: &str = "an OpenAI tool call";

#[cfg(feature = "openai")]
/// One entry of an assistant message's `tool_calls` as a [`ToolUse`].
///
/// In: `{"id": "call_…", "type": "function", "function": {"name": "get_weather",
/// "arguments": "{\"location\":\"Lisbon\"}"}}`. `arguments` is a JSON *string*; it becomes the
/// `input` unchanged and the pipeline parses it once (a string that is not a JSON object is
/// `invalid_input`, like any bad input). `id` becomes the `ToolUse` id, so the result's
/// `tool_use_id` is the `tool_call_id` to answer with.
///
/// # Errors
/// [`ConvertError`] when the item is not an object, `type` is present and not `"function"`
/// (a custom tool call), or `id`, `function` or `function.name` is missing or not a string.
pub fn tool_use(tool_call: &Value) -> Result<ToolUse, ConvertError> {
    let obj = object(tool_call, WHAT)?;
    if let Some(t) = obj.get("type")
        && t != "function"
    {
        return Err(ConvertError::new(
            WHAT,
            format!("only `function` tool calls are supported, found type {t}"),
        ));
    }
    let id = string_field(obj, "id", WHAT)?;
    let function = obj
        .get("function")
        .ok_or_else(|| ConvertError::new(WHAT, "`function` is missing"))?;
    let function = object(function, WHAT)?;
    let name = string_field(function, "name", WHAT)?;
    let input = function.get("arguments").cloned().unwrap_or(Value::Null);
    Ok(ToolUse::new(id, name, input))
}

#[cfg(feature = "openai")]
/// The `tool_calls` of an assistant message, in order (empty when it has none).
///
/// In: `{"role": "assistant", "content": null, "tool_calls": [ … ]}` (`choices[0].message`
/// of a Chat Completion).
///
/// # Errors
/// [`ConvertError`] when `message` is not an object, `tool_calls` is neither absent, `null`
/// nor an array, or an entry fails [`tool_use`].
pub fn tool_uses(message: &Value) -> Result<Vec<ToolUse>, ConvertError> {
    let obj = object(message, "an OpenAI assistant message")?;
    match obj.get("tool_calls") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(calls)) => calls.iter().map(tool_use).collect(),
        Some(other) => Err(ConvertError::new(
            "an OpenAI assistant message",
            format!("`tool_calls` must be an array, found {}", kind_of(other)),
        )),
    }
}

#[cfg(feature = "openai")]
/// A whole choice (or a chat completion with one choice), for
/// [`Session::respond_openai_choice`](crate::Session::respond_openai_choice): its calls, its
/// `finish_reason`, and whether that is `"length"` (the output limit cut the message, so a
/// call's `arguments` may be cut off).
pub(crate) fn choice_turn(choice: &Value) -> Result<Turn<'_>, ConvertError> {
    const CHOICE: &str = "an OpenAI chat completion choice";
    // A choice has no id of its own: the completion's `id` names the turn.
    let id = match choice.get("choices") {
        Some(_) => choice
            .get("id")
            .and_then(Value::as_str)
            .map(std::borrow::Cow::Borrowed),
        None => None,
    };
    let obj = object(the_one(choice, "choices", CHOICE)?, CHOICE)?;
    let message = obj
        .get("message")
        .ok_or_else(|| ConvertError::new(CHOICE, "`message` is missing"))?;
    let stop_reason = optional_string(obj, "finish_reason", CHOICE)?;
    let truncated =
        (stop_reason.as_deref() == Some("length")).then(|| "finish_reason: \"length\"".to_owned());
    Ok(Turn {
        id,
        uses: tool_uses(message)?,
        items: Vec::new(),
        stop_reason,
        truncated,
    })
}

#[cfg(feature = "openai")]
/// A result as the `role: "tool"` message that answers its call: `{"role": "tool",
/// "tool_call_id": "call_…", "content": "19°C, sunny"}`.
///
/// `content` is a string: the message takes a string or text parts, nothing else (SDK:
/// `ChatCompletionToolMessageParam.content: str | Iterable[ChatCompletionContentPartTextParam]`).
/// A result of content blocks is its texts joined with `\n`, an image or a PDF replaced by a
/// note naming it (`[toolgate: an image (image/png) was left out: this API's tool results take
/// text only]`; see [`provider`](super)).
///
/// Chat Completions has no `is_error` field, so a failure says so in the text: a failed
/// result whose text does not start with `Error:`, `BLOCKED:` or `Not run:` gets `Error: `
/// in front (`BLOCKED: …` stays as it is). Rule (guide): one such message per call, right
/// after the assistant message, for every `tool_call_id`.
pub fn tool_message(result: &ToolResult) -> Value {
    json!({
        "role": "tool",
        "tool_call_id": result.tool_use_id,
        "content": text_saying_failure(result),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_a_nullable_scalar_into_a_type_union() {
        let v = json!({"description": "Units.", "anyOf": [
            {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]});
        assert_eq!(
            nullable_scalar(&v),
            Some(
                json!({"type": ["string", "null"], "enum": ["celsius", "fahrenheit"],
                        "description": "Units."})
            )
        );
        let object = json!({"anyOf": [{"type": "object", "properties": {}}, {"type": "null"}]});
        assert_eq!(nullable_scalar(&object), None);
    }

    /// A closed root with one string property `level` whose `enum` is `values`.
    fn enum_schema(values: Vec<Value>) -> Value {
        json!({"type": "object", "properties": {"level": {"type": "string", "enum": values}},
               "required": ["level"], "additionalProperties": false})
    }

    fn words(n: usize, len: usize) -> Vec<Value> {
        (0..n)
            .map(|i| Value::String(format!("{i:0len$}")))
            .collect()
    }

    #[test]
    fn holds_one_schema_to_the_published_limits_and_not_one_over() {
        // 1000 enum values pass, 1001 do not (4 characters each: no other limit is near).
        assert!(strict(&enum_schema(words(1000, 4))).is_ok());
        assert_eq!(
            strict(&enum_schema(words(1001, 4))),
            Err(
                "the schema has 1001 enum values; OpenAI strict mode allows 1000 in one schema"
                    .to_owned()
            )
        );
        // A large enum (more than 250 values): 15 000 characters pass, 15 001 do not.
        let mut large = words(300, 50);
        assert!(strict(&enum_schema(large.clone())).is_ok());
        large[0] = Value::String("x".repeat(51));
        assert_eq!(
            strict(&enum_schema(large)),
            Err(
                "property `level` has an enum of 300 string values totalling 15001 characters; \
                 OpenAI strict mode allows 15000 for an enum of more than 250 values"
                    .to_owned()
            )
        );
        // 250 values are not a large enum: 250 × 480 = 120 000 characters, the `level` name
        // (5) brings the schema's total to 120 005.
        assert_eq!(
            strict(&enum_schema(words(250, 480))),
            Err(
                "the property names, definition names, enum values and const values of the \
                 schema total 120005 characters; OpenAI strict mode allows 120000 in one schema"
                    .to_owned()
            )
        );
        assert!(strict(&enum_schema(words(250, 479))).is_ok());
    }

    #[test]
    fn counts_properties_at_every_depth_and_defs_names_as_characters() {
        let props = |n: usize| -> Map<String, Value> {
            (0..n)
                .map(|i| (format!("p{i}"), json!({"type": "boolean"})))
                .collect()
        };
        // 4999 at the root and one nested object with 1 property: 5001 with `inner` itself.
        let mut root = props(4999);
        root.insert(
            "inner".into(),
            json!({"type": "object", "properties": {"x": {"type": "boolean"}},
                   "required": ["x"], "additionalProperties": false}),
        );
        let schema = json!({"type": "object", "properties": root,
                            "additionalProperties": false});
        assert_eq!(
            strict(&schema),
            Err(
                "the schema has 5001 object properties; OpenAI strict mode allows 5000 in one \
                 schema"
                    .to_owned()
            )
        );
        let schema = json!({"type": "object", "properties": props(5000),
                            "additionalProperties": false});
        assert!(strict(&schema).is_ok());
        let mut size = Size::default();
        let defs = json!({"$defs": {"Node": {"type": "object"}}, "const": "é", "enum": [1, "ab"]});
        assert_eq!(
            size.add(defs.as_object().unwrap_or(&Map::new()), ""),
            Ok(())
        );
        assert_eq!(
            size,
            Size {
                properties: 0,
                enum_values: 2,
                characters: 4 + 1 + 1 + 2
            }
        );
    }

    #[test]
    fn openai_strict_moves_default_and_requires_a_defaulted_field() {
        // `#[serde(default = "five")] n: u32`: not in `required`, with a `default`.
        let schema = json!({"type": "object",
            "properties": {"q": {"type": "string"},
                           "n": {"type": "integer", "minimum": 0, "default": 5,
                                 "description": "How many."}},
            "required": ["q"], "additionalProperties": false});
        assert_eq!(
            strict(&schema),
            Ok(json!({"type": "object",
                "properties": {"q": {"type": "string"},
                               "n": {"type": "integer", "minimum": 0,
                                     "description": "How many.\n\n{default: 5}"}},
                "required": ["q", "n"], "additionalProperties": false}))
        );
    }
}
