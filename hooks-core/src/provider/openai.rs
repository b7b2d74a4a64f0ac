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
//! `minProperties`/`maxProperties`; `$defs` and recursion allowed; at most
//! [`OPENAI_MAX_NESTING`] levels of object nesting (the root object is level 1). A keyword that
//! only narrows values is moved into the description; a construct the subset cannot express (a
//! map, a tuple, `allOf`, a merged object such as a `#[serde(flatten)]` enum, …) makes the tool
//! non-strict.
//!
//! Calls and results: [`tool_use`], [`tool_uses`] and [`tool_message`]. Chat Completions has no
//! `is_error` field, so a failed result says so in its text.

use serde_json::{Map, Value, json};

use super::subset::{
    ALL_OF, at, inexpressible, is_object_schema, keys_to_move, merged_object, open_object,
    relocate, walk_children,
};
use super::{ConvertError, Definition, Target, object, string_field, text_saying_failure};
use crate::content::{ToolResult, ToolUse, kind_of};
use crate::schema::anthropic_input_schema;
use crate::schema::walk::split_nullable;

/// [`Provider::OpenAi`](super::Provider::OpenAi).
pub(super) const TARGET: Target = Target {
    name: "openai",
    strict: true,
    definition,
};

/// `{"type": "function", "function": {…}}`, the object of [`function`]. Never an error.
fn definition(name: &str, description: &str, canonical: &Value) -> Result<Definition, String> {
    let (fields, non_strict) = function(name, description, canonical);
    Ok(Definition {
        value: json!({"type": "function", "function": fields}),
        non_strict,
    })
}

/// The `{"name": …, "description": …, "parameters": …, "strict": …}` object both OpenAI APIs
/// send (Chat Completions nested under `function`, Responses flat), and why it is not strict
/// when it is not: `parameters` is the strict subset ([`strict`]) when the schema fits it, else
/// the Anthropic `input_schema` with `strict: false`.
pub(super) fn function(
    name: &str,
    description: &str,
    canonical: &Value,
) -> (Map<String, Value>, Option<String>) {
    let (parameters, is_strict, non_strict) = match strict(canonical) {
        Ok(s) => (s, true, None),
        Err(reason) => (anthropic_input_schema(canonical), false, Some(reason)),
    };
    let mut fields = Map::new();
    fields.insert("name".into(), name.into());
    fields.insert("description".into(), description.into());
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

/// The canonical schema in OpenAI's strict subset, or why it cannot be.
pub(super) fn strict(canonical: &Value) -> Result<Value, String> {
    let mut v = canonical.clone();
    node(&mut v, "", 0)?;
    Ok(v)
}

/// Narrows one node in place and walks its subschemas; `depth` counts the objects above it.
fn node(v: &mut Value, path: &str, depth: usize) -> Result<(), String> {
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
    walk_children(map, path, &mut |keyword, child, p| {
        // `$defs` start a new nesting count: they are reached through `$ref`.
        let d = if matches!(keyword, "$defs" | "definitions") {
            0
        } else {
            depth
        };
        node(child, p, d)
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

const WHAT: &str = "an OpenAI tool call";

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

/// A result as the `role: "tool"` message that answers its call: `{"role": "tool",
/// "tool_call_id": "call_…", "content": "19°C, sunny"}`.
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
