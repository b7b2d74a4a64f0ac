//! Anthropic Messages API: the `tools` entries, default and strict.
//!
//! Documents: "Define tools" and "Implement tool use" (the entry `{name, description,
//! input_schema}`; `input_schema` a JSON Schema object with `"type": "object"` at the root;
//! `input_examples`), "Strict tool use", and "Structured outputs" with its "JSON Schema
//! limitations" (the subset `strict: true` accepts) and "Schema complexity limits" (the limits
//! on a request's strict tools together).
//!
//! - [`Provider::Anthropic`](super::Provider::Anthropic): `{"name": …, "description": …,
//!   "input_schema": …}` with the schema of [`anthropic_input_schema`] (the canonical form without
//!   a root combinator; an optional field keeps its nullable `anyOf`, so `null` is accepted where
//!   the argument type accepts it). Every dispatcher's default definitions are these entries.
//! - [`Provider::AnthropicStrict`](super::Provider::AnthropicStrict): the same entry with
//!   `"strict": true` and the schema narrowed to the strict subset: every object
//!   `additionalProperties: false`; no numeric bounds (`minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`, `multipleOf`), no string length bounds, `minItems` only 0 or 1, no other
//!   array bounds, string `format` only `date-time`, `time`, `date`, `duration`, `email`,
//!   `hostname`, `uri`, `ipv4`, `ipv6`, `uuid`; no recursion; `oneOf` written as `anyOf`; an
//!   optional field left out of `required` (its nullable `anyOf` collapsed,
//!   [`without_null_branches`]). A bound or format outside the subset is moved into the
//!   description; a tool the subset cannot express (a recursive type, a map, a tuple, `not`, a
//!   merged object such as a `#[serde(flatten)]` enum, …) is emitted without `strict`, and
//!   [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools) says why.
//!
//! # Input examples
//!
//! A tool's `input_examples`
//! ([`ToolDef::input_examples`](crate::dispatch::ToolDef::input_examples), `#[tool(input_examples =
//! …)]`) follow its `input_schema` in both entries: `"input_examples": [{"location": "San
//! Francisco, CA", "unit": "fahrenheit"}, …]`, an array of input objects. Rule ("Define tools",
//! "Providing tool use examples",
//! `https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools`): "Each example
//! must be valid according to the tool's `input_schema`. Invalid examples return a 400 error";
//! `build()` checks each one against the tool's schema and its input type. No other target has the
//! field.
//!
//! # Limits on a request's strict tools
//!
//! Source: "Structured outputs", "Schema complexity limits", "Explicit limits"
//! (`https://platform.claude.com/docs/en/build-with-claude/structured-outputs#schema-complexity-limits`):
//! "The following limits apply to all requests with `output_config.format` or `strict: true`" and
//! "apply to the combined total across all strict schemas in a single request":
//!
//! | limit | value | what counts (the page's words) |
//! |---|---|---|
//! | strict tools per request | [`ANTHROPIC_MAX_STRICT_TOOLS`] (20) | "tools with `strict: true`. Non-strict tools don't count" |
//! | optional parameters | [`ANTHROPIC_MAX_OPTIONAL_PARAMETERS`] (24) | "Each parameter not listed in `required`", across all strict tool schemas |
//! | parameters with union types | [`ANTHROPIC_MAX_UNION_PARAMETERS`] (16) | "parameters that use `anyOf` or type arrays (for example, `\"type\": [\"string\", \"null\"]`)" |
//!
//! toolgate counts them on each strict entry as sent: every property absent from its own
//! object's `required`, at any depth (nested objects, array items, `anyOf` branches); every
//! schema with `anyOf` or a `type` array of two or more types, at any depth. An `Option<T>` field
//! is one optional parameter and no union (the Anthropic form drops the `null` branch); a
//! data-carrying enum is one union. The API answers a request over a limit with a 400 ("Schemas
//! contains too many optional parameters (25), which would make grammar compilation
//! inefficient"), so a dispatcher never sends one: the tools past a limit are emitted
//! non-strict, in the order the [module docs](super) give ("Strict limits"), and a tool marked
//! `strict = true` is never demoted (marked tools over a limit together fail `build()`). The
//! page also names "additional internal limits on the compiled grammar size" ("Schema is too
//! complex for compilation") with no numbers: those cannot be checked before sending.
//!
//! No call or result conversions: toolgate's [`ToolUse`](crate::ToolUse) and
//! [`ToolResult`](crate::ToolResult) are this API's `tool_use` and `tool_result` blocks.

use serde_json::{Map, Value};

use super::request_limits::{Load, RequestLimits};
use super::subset::{
    at, inexpressible, is_object_schema, keys_to_move, merged_object, open_object, relocate,
    walk_children,
};
use super::{Definition, Target, ToolSource};
use crate::schema::walk::for_each_subschema;
use crate::schema::{anthropic_input_schema, without_null_branches};

/// Strict tools one request may hold ("Structured outputs", "Schema complexity limits": "Strict
/// tools per request | 20 | Maximum number of tools with `strict: true`").
pub const ANTHROPIC_MAX_STRICT_TOOLS: usize = 20;

/// Optional parameters one request's strict tools may hold together ("Schema complexity limits":
/// "Optional parameters | 24 | Total optional parameters across all strict tool schemas and JSON
/// output schemas. Each parameter not listed in `required` counts toward this limit").
pub const ANTHROPIC_MAX_OPTIONAL_PARAMETERS: usize = 24;

/// Union-typed parameters one request's strict tools may hold together ("Schema complexity
/// limits": "Parameters with union types | 16 | Total parameters that use `anyOf` or type arrays
/// … across all strict schemas").
pub const ANTHROPIC_MAX_UNION_PARAMETERS: usize = 16;

/// [`Provider::Anthropic`](super::Provider::Anthropic).
pub(super) const TARGET: Target = Target {
    name: "anthropic",
    strict: false,
    definition,
    request_limits: None,
    cache_control: true,
};

/// [`Provider::AnthropicStrict`](super::Provider::AnthropicStrict).
pub(super) const STRICT_TARGET: Target = Target {
    name: "anthropic-strict",
    strict: true,
    definition: strict_definition,
    request_limits: Some(RequestLimits {
        tools: ANTHROPIC_MAX_STRICT_TOOLS,
        optional: ANTHROPIC_MAX_OPTIONAL_PARAMETERS,
        unions: ANTHROPIC_MAX_UNION_PARAMETERS,
        who: "Anthropic strict tool use",
        load,
    }),
    cache_control: true,
};

/// The Anthropic `tools` entry of one tool: `{"name": …, "description": …, "input_schema": …}`,
/// then `"input_examples": […]` when the tool has examples (the builder makes every
/// dispatcher's default definitions with it).
pub(crate) fn entry(
    name: &str,
    description: &str,
    canonical: &Value,
    input_examples: &[Value],
) -> Value {
    entry_with(
        name,
        description,
        anthropic_input_schema(canonical),
        input_examples,
    )
}

/// The entry's fields in the published order: `name`, `description`, `input_schema`,
/// `input_examples` (when there are any).
fn entry_with(
    name: &str,
    description: &str,
    input_schema: Value,
    input_examples: &[Value],
) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), name.into());
    entry.insert("description".into(), description.into());
    entry.insert("input_schema".into(), input_schema);
    if !input_examples.is_empty() {
        entry.insert(
            "input_examples".into(),
            Value::Array(input_examples.to_vec()),
        );
    }
    Value::Object(entry)
}

/// The default entry ([`entry`]). Never an error.
fn definition(tool: &ToolSource<'_>, _may_be_strict: bool) -> Result<Definition, String> {
    Ok(Definition::plain(entry(
        tool.name,
        tool.description,
        tool.canonical,
        tool.input_examples,
    )))
}

/// The strict entry (the default one with `"strict": true` last), or the default one and why
/// the tool cannot be strict; the default one, with no reason, when it may not be strict. Never
/// an error. The strict schema starts from the canonical one with its nullable `anyOf`s
/// collapsed (`without_null_branches`: an optional field is one left out of `required`), so it
/// admits only what the argument type accepts.
fn strict_definition(tool: &ToolSource<'_>, may_be_strict: bool) -> Result<Definition, String> {
    let schema = anthropic_input_schema(tool.canonical);
    let plain = |schema| entry_with(tool.name, tool.description, schema, tool.input_examples);
    if !may_be_strict {
        return Ok(Definition::plain(plain(schema)));
    }
    Ok(match strict(&without_null_branches(tool.canonical)) {
        Ok(narrowed) => {
            let mut value = plain(narrowed);
            if let Value::Object(entry) = &mut value {
                entry.insert("strict".into(), Value::Bool(true));
            }
            Definition::plain(value)
        }
        Err(reason) => Definition {
            value: plain(schema),
            non_strict: Some(reason),
        },
    })
}

/// What a strict entry counts toward the request's limits: one strict tool, its optional
/// parameters and its union-typed parameters (see the module docs for what counts).
fn load(entry: &Value) -> Load {
    let mut load = Load {
        tools: 1,
        ..Load::default()
    };
    if let Some(schema) = entry.get("input_schema") {
        count(schema, &mut load);
    }
    load
}

/// Adds the optional and union-typed parameters of `schema` and of every subschema to `load`.
fn count(schema: &Value, load: &mut Load) {
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(Value::Object(props)) = map.get("properties") {
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        load.optional += props
            .keys()
            .filter(|k| !required.contains(&k.as_str()))
            .count();
    }
    let several_types = matches!(map.get("type"), Some(Value::Array(t)) if t.len() > 1);
    if several_types || map.contains_key("anyOf") || map.contains_key("oneOf") {
        load.unions += 1;
    }
    for_each_subschema(map, |_, _, child| count(child, load));
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

/// A canonical schema, its nullable `anyOf`s collapsed (`without_null_branches`), narrowed
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
    use serde_json::json;

    use super::*;

    #[test]
    fn counts_optional_and_union_typed_parameters_at_every_depth() {
        let entry = json!({"name": "plan", "description": "Plans.", "strict": true,
            "input_schema": {"type": "object", "properties": {
                "title": {"type": "string"},
                "note": {"type": "string"},
                "stops": {"type": "array", "items": {"type": "object",
                    "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}},
                    "required": ["city"], "additionalProperties": false}},
                "shape": {"anyOf": [
                    {"type": "object", "properties": {"r": {"type": "number"}},
                     "required": ["r"], "additionalProperties": false},
                    {"type": "object", "properties": {"side": {"type": "number"},
                                                      "label": {"type": "string"}},
                     "required": ["side"], "additionalProperties": false}]},
                "id": {"type": ["string", "integer"]},
                "level": {"type": ["integer"]}
            }, "required": ["title", "stops", "shape"], "additionalProperties": false}});
        // Optional: `note`, `id`, `level` at the root, `nights` in the items, `label` in a
        // branch. Unions: the `anyOf` and the two-type array (not the one-type array).
        assert_eq!(
            load(&entry),
            Load {
                tools: 1,
                optional: 5,
                unions: 2
            }
        );
    }

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
