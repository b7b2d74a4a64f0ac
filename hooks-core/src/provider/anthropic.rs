//! Anthropic Messages API: the `tools` entries, default and strict.
//!
//! Documents: "Define tools" and "Implement tool use" (the entry `{name, description,
//! input_schema}`; `input_schema` a JSON Schema object with `"type": "object"` at the root), and
//! "Strict tool use" with its "JSON Schema limitations" (the subset `strict: true` accepts).
//!
//! - [`Provider::Anthropic`](super::Provider::Anthropic): `{"name": …, "description": …, "input_schema": …}` with the
//!   schema of [`anthropic_input_schema`] (the canonical form without a root combinator; an
//!   optional field keeps its nullable `anyOf`, so `null` is accepted where the argument type
//!   accepts it). Every dispatcher's default definitions are these entries.
//! - [`Provider::AnthropicStrict`](super::Provider::AnthropicStrict): the same entry with `"strict": true` and the schema narrowed
//!   to the strict subset: every object `additionalProperties: false`; no numeric bounds
//!   (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`), no string
//!   length bounds, `minItems` only 0 or 1, no other array bounds, string `format` only
//!   `date-time`, `time`, `date`, `duration`, `email`, `hostname`, `uri`, `ipv4`, `ipv6`,
//!   `uuid`; no recursion; `oneOf` written as `anyOf`; an optional field left out of `required`
//!   (its nullable `anyOf` collapsed, [`without_null_branches`]). A bound or format outside the
//!   subset is moved into the description; a tool the subset cannot express (a recursive type,
//!   a map, a tuple, `not`, a merged object such as a `#[serde(flatten)]` enum, …) is emitted
//!   without `strict`, and
//!   [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools) says why.
//!
//! No call or result conversions: toolgate's [`ToolUse`](crate::ToolUse) and
//! [`ToolResult`](crate::ToolResult) are this API's `tool_use` and `tool_result` blocks.

use serde_json::{Value, json};

use super::subset::{
    at, inexpressible, is_object_schema, keys_to_move, merged_object, open_object, relocate,
    walk_children,
};
use super::{Definition, Target};
use crate::schema::{anthropic_input_schema, without_null_branches};

/// [`Provider::Anthropic`](super::Provider::Anthropic).
pub(super) const TARGET: Target = Target {
    name: "anthropic",
    strict: false,
    definition,
};

/// [`Provider::AnthropicStrict`](super::Provider::AnthropicStrict).
pub(super) const STRICT_TARGET: Target = Target {
    name: "anthropic-strict",
    strict: true,
    definition: strict_definition,
};

/// The Anthropic `tools` entry of one tool: `{"name": …, "description": …, "input_schema": …}`
/// (the builder makes every dispatcher's default definitions with it).
pub(crate) fn entry(name: &str, description: &str, canonical: &Value) -> Value {
    json!({
        "name": name,
        "description": description,
        "input_schema": anthropic_input_schema(canonical),
    })
}

/// The default entry ([`entry`]). Never an error.
fn definition(name: &str, description: &str, canonical: &Value) -> Result<Definition, String> {
    Ok(Definition::plain(entry(name, description, canonical)))
}

/// The strict entry, or the default one and why the tool cannot be strict. Never an error.
/// The strict schema starts from the canonical one with its nullable `anyOf`s collapsed
/// ([`without_null_branches`]: an optional field is one left out of `required`), so it admits
/// only what the argument type accepts.
fn strict_definition(
    name: &str,
    description: &str,
    canonical: &Value,
) -> Result<Definition, String> {
    let schema = anthropic_input_schema(canonical);
    Ok(match strict(&without_null_branches(canonical)) {
        Ok(narrowed) => Definition::plain(json!({
            "name": name,
            "description": description,
            "input_schema": narrowed,
            "strict": true,
        })),
        Err(reason) => Definition {
            value: json!({
                "name": name,
                "description": description,
                "input_schema": schema,
            }),
            non_strict: Some(reason),
        },
    })
}

/// String formats Anthropic strict tool use accepts ("JSON Schema limitations").
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Bounds no strict target accepts as-is (moved into the description).
const BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
    "contains",
];

/// A canonical schema, its nullable `anyOf`s collapsed ([`without_null_branches`]), narrowed
/// to the strict subset, or why it cannot be.
pub(super) fn strict(schema: &Value) -> Result<Value, String> {
    let mut v = schema.clone();
    node(&mut v, "")?;
    Ok(v)
}

/// Narrows one node in place and walks its subschemas; `path` names it in a reason.
fn node(v: &mut Value, path: &str) -> Result<(), String> {
    let Value::Object(map) = v else {
        return match v {
            Value::Bool(false) => Ok(()),
            _ => Err(format!("{} accepts any JSON value", at(path))),
        };
    };
    if map.contains_key("$ref") {
        return Err(format!(
            "{} refers back to a type that contains it (`$ref`): Anthropic strict tool use does \
             not support recursive schemas",
            at(path)
        ));
    }
    if let Some(reason) = inexpressible(map, path, &[]) {
        return Err(reason);
    }
    if let Some(reason) = merged_object(map, path) {
        return Err(reason);
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    if is_object_schema(map) {
        if let Some(reason) = open_object(map, path) {
            return Err(reason);
        }
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    let mut moved = keys_to_move(map, BOUNDS, FORMATS);
    if map
        .get("minItems")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 1)
    {
        moved.push("minItems".into());
    }
    relocate(map, &moved);
    walk_children(map, path, &mut |_, child, p| node(child, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(props: Value) -> Value {
        json!({"type": "object", "properties": props, "additionalProperties": false})
    }

    #[test]
    fn anthropic_strict_moves_min_items_above_one_and_writes_one_of_as_any_of() {
        let schema = root(json!({
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "notes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        }));
        assert_eq!(
            strict(&schema),
            Ok(root(json!({
                "tags": {"type": "array", "items": {"type": "string"},
                         "description": "{minItems: 2}"},
                "notes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            })))
        );
    }
}
