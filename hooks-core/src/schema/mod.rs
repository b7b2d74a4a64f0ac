//! Tool schemas: one canonical JSON Schema per tool, built once when the dispatcher is built,
//! then one transform per target.
//!
//! `generate` asks schemars (draft 2020-12, subschemas inlined, no `$schema`) for the argument
//! type's schema. [`canonicalize`] turns that into the canonical form every target starts from:
//! - no `$schema`, no `title` anywhere (titles name generated Rust structs), no root
//!   `description` (a `#[input]` struct's doc is about the Rust type; the tool's description is
//!   the function's);
//! - an optional or nullable value is always `{"anyOf": [X, {"type": "null"}]}` (schemars writes
//!   `type: [T, "null"]` and puts `null` in `enum`), with its description on the outside;
//! - a unit enum whose variants have doc comments (`oneOf` of `const`s) is a plain `enum`, the
//!   variants' docs appended to the description;
//! - integer and number `format`s (`uint32`, `int64`, `double`) are dropped; `minimum: 0` stays
//!   for unsigned integers;
//! - every object with `properties` says `additionalProperties: false` unless the tool opted
//!   out. The dispatcher then rejects unknown fields in such objects wherever the schema reaches
//!   them: through properties, array items, map values (`HashMap<String, T>`) and the branches
//!   of an `anyOf`/`oneOf` (an enum with data: refused only when no branch accepts the input).
//!   It does not look past a `$ref` (a recursive type is checked down to its first `$ref`) or
//!   into `allOf` (its branches describe one value together, so one branch's unknown key may be
//!   another's field);
//! - `$ref`/`$defs` remain only for recursive types.
//!
//! - descriptions are unwrapped ([`unwrap_doc`]): a doc comment wrapped at 100 columns reads as
//!   one paragraph.
//!
//! Property order is declaration order: schemars' `preserve_order` feature is on, which also
//! turns `serde_json::Map` into an insertion-ordered map for every crate in the build.
//!
//! The Anthropic `input_schema` ([`anthropic_input_schema`]) is the canonical form with the
//! nullable `anyOf` collapsed to its non-null branch (optionality is said by `required`), since
//! Anthropic's tool docs ask for no type arrays and clients handle plain schemas best. Every
//! target's transform is in its provider's file under [`crate::provider`]; [`targets`] keeps the
//! first path of the definitions' types. Walking subschemas (and splitting the nullable `anyOf`)
//! is in `walk.rs`, shared by this module, the unknown-field check and the transforms.

pub(crate) mod check;
pub(crate) mod explain;
pub mod targets;
pub(crate) mod walk;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use walk::{for_each_subschema_mut, split_nullable};

/// The schema of `A` as schemars writes it (draft 2020-12, inlined, no `$schema`).
pub(crate) fn generate<A: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    settings
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value()
}

/// The canonical form of a raw schemars schema (see the module docs). `closed` adds
/// `additionalProperties: false` to every object that has `properties`. Never fails: a keyword
/// it does not know is kept as it is.
///
/// Source of the rules it serves: Anthropic's tool-use docs ("Define tools": `input_schema` is
/// a JSON Schema object with `"type": "object"` at the root); the nullable `anyOf` form is the
/// one every target's transform starts from ([`crate::provider`]).
///
/// ```
/// use serde_json::json;
/// use toolgate_core::schema::canonicalize;
///
/// let raw = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "title": "Args",
///     "type": "object",
///     "properties": {
///         "unit": {"description": "The unit", "type": ["string", "null"],
///                  "enum": ["celsius", "fahrenheit", null]},
///         "n": {"type": "integer", "format": "uint32", "minimum": 0}
///     }
/// });
/// assert_eq!(canonicalize(&raw, true), json!({
///     "type": "object",
///     "properties": {
///         "unit": {"description": "The unit", "anyOf": [
///             {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]},
///         "n": {"type": "integer", "minimum": 0}
///     },
///     "additionalProperties": false
/// }));
/// ```
pub fn canonicalize(raw: &Value, closed: bool) -> Value {
    let mut v = raw.clone();
    if let Value::Object(root) = &mut v {
        root.remove("$schema");
        // The root's doc is the Rust argument type's; the tool's description says what the
        // tool does.
        root.remove("description");
        // A tool without model arguments (an empty argument struct): an object with no
        // properties, which is not a map.
        if root.get("type").and_then(Value::as_str) == Some("object")
            && !root.contains_key("properties")
            && !root.contains_key("additionalProperties")
            && !root.contains_key("patternProperties")
        {
            root.insert("properties".into(), Value::Object(Map::new()));
        }
    }
    canon(&mut v, closed);
    attach_values_docs(&mut v);
    v
}

const NUMERIC_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int128", "int", "uint8", "uint16", "uint32", "uint64",
    "uint128", "uint", "float", "double",
];

fn canon(v: &mut Value, closed: bool) {
    let Value::Object(map) = v else { return };
    map.remove("title");
    if let Some(Value::String(d)) = map.get_mut("description") {
        *d = unwrap_doc(d);
    }
    // Recurse first, so that children are canonical before this level is rewritten.
    for_each_subschema_mut(map, |_, _, child| canon(child, closed));

    if let Some(Value::String(f)) = map.get("format")
        && NUMERIC_FORMATS.contains(&f.as_str())
    {
        map.remove("format");
    }

    documented_enum_to_enum(map);
    if closed && map.contains_key("properties") && !map.contains_key("additionalProperties") {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    type_array_to_any_of(map);
}

/// `{"type": ["string", "null"], "enum": ["a", null], …}` → `{"anyOf": [{"type": "string",
/// "enum": ["a"], …}, {"type": "null"}]}`, keeping `description` and `default` outside.
fn type_array_to_any_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let non_null: Vec<Value> = types
        .iter()
        .filter(|t| t.as_str() != Some("null"))
        .cloned()
        .collect();
    let has_null = non_null.len() < types.len();
    if !has_null || non_null.len() != 1 {
        return;
    }
    let mut inner = std::mem::take(map);
    inner.insert(
        "type".into(),
        non_null.into_iter().next().unwrap_or(Value::Null),
    );
    if let Some(Value::Array(values)) = inner.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in [
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    ] {
        if let Some(val) = inner.remove(key) {
            map.insert(key.into(), val);
        }
    }
    map.insert(
        "anyOf".into(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
}

/// A unit enum with documented variants: `oneOf: [{const: "A", description: "first"}, …]` →
/// `{type: string, enum: ["A", …]}` with `A: first` appended to the description.
fn documented_enum_to_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = map.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut docs = Vec::new();
    for variant in variants {
        let Some(obj) = variant.as_object() else {
            return;
        };
        let Some(c) = obj.get("const") else { return };
        if !(c.is_string() || c.is_number() || c.is_boolean()) {
            return;
        }
        if obj
            .keys()
            .any(|k| !matches!(k.as_str(), "const" | "type" | "description"))
        {
            return;
        }
        if let Some(Value::String(d)) = obj.get("description") {
            let shown = c.as_str().map_or_else(|| c.to_string(), str::to_owned);
            docs.push(format!("`{shown}`: {}", d.trim_end_matches('.')));
        }
        values.push(c.clone());
    }
    if values.is_empty() || !values.iter().all(Value::is_string) {
        return;
    }
    map.remove("oneOf");
    map.insert("type".into(), Value::String("string".into()));
    map.insert("enum".into(), Value::Array(values));
    if !docs.is_empty() {
        // Attached to a description by `attach_values_docs`, once the nullable wrapper (whose
        // description is the field's doc) is known.
        let values_doc = format!("One of: {}.", docs.join("; "));
        map.insert(VALUES_DOC.into(), Value::String(values_doc));
    }
}

/// A private key carrying a documented enum's "One of: …" text during canonicalization.
const VALUES_DOC: &str = "x-toolgate-values-doc";

/// Appends each documented enum's values text to the description the model reads: the
/// description of the nullable wrapper around it when there is one (the field's doc), else its
/// own.
fn attach_values_docs(v: &mut Value) {
    let Value::Object(map) = v else { return };
    let mut hoisted = None;
    if map_has_description(map)
        && let Some(Value::Array(branches)) = map.get_mut("anyOf")
        && branches.len() == 2
    {
        for b in branches.iter_mut() {
            if let Value::Object(bm) = b
                && let Some(doc) = bm.remove(VALUES_DOC)
            {
                hoisted = Some(doc);
            }
        }
    }
    if let Some(doc) = hoisted.or_else(|| map.remove(VALUES_DOC)) {
        let doc = doc.as_str().unwrap_or_default().to_owned();
        let desc = match map.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{} {doc}", with_period(d)),
            _ => doc,
        };
        map.insert("description".into(), Value::String(desc));
    }
    for (_, child) in map.iter_mut() {
        match child {
            Value::Object(_) => attach_values_docs(child),
            Value::Array(items) => items.iter_mut().for_each(attach_values_docs),
            _ => {}
        }
    }
}

fn map_has_description(map: &Map<String, Value>) -> bool {
    map.get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| !d.is_empty())
}

fn with_period(s: &str) -> String {
    let s = s.trim_end();
    if s.ends_with(['.', '!', '?', ':']) {
        s.to_owned()
    } else {
        format!("{s}.")
    }
}

/// The Anthropic `input_schema`: the canonical form with every nullable `anyOf` collapsed to its
/// non-null branch (the field's outer keywords, such as its description, kept); optionality is
/// then said by `required` alone. Never fails.
///
/// Source: Anthropic's tool-use docs ("Define tools"): `input_schema` is a JSON Schema object
/// with `"type": "object"` at the root and no top-level `oneOf`/`anyOf`/`allOf`; their examples
/// write an optional field as a plain schema left out of `required`, not as a union with
/// `null`.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::schema::anthropic_input_schema;
///
/// let canonical = json!({
///     "type": "object",
///     "properties": {
///         "location": {"type": "string"},
///         "unit": {"description": "The unit", "anyOf": [
///             {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]}
///     },
///     "required": ["location"],
///     "additionalProperties": false
/// });
/// assert_eq!(anthropic_input_schema(&canonical), json!({
///     "type": "object",
///     "properties": {
///         "location": {"type": "string"},
///         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
///                  "description": "The unit"}
///     },
///     "required": ["location"],
///     "additionalProperties": false
/// }));
/// ```
pub fn anthropic_input_schema(canonical: &Value) -> Value {
    let mut v = canonical.clone();
    collapse_nullable(&mut v);
    v
}

fn collapse_nullable(v: &mut Value) {
    let (collapsed, was) = split_nullable(v);
    if was {
        *v = collapsed;
    }
    if let Value::Object(map) = v {
        for_each_subschema_mut(map, |_, _, child| collapse_nullable(child));
    }
}

/// Unwraps a doc comment into the text a model reads: lines of one paragraph are joined with a
/// space; a blank line (paragraph break) stays `\n\n`; lines that start a list item (`- `,
/// `* `, `+ `, `1. `), a table row (`|`) or a code fence, and the lines inside a fence, keep their
/// line break. Leading and trailing space is trimmed.
pub fn unwrap_doc(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut in_fence = false;
    let mut prev_blank = true;
    for raw in doc.trim().lines() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        let fence = trimmed.starts_with("```");
        if trimmed.is_empty() {
            if !prev_blank {
                out.push_str("\n\n");
            }
            prev_blank = true;
            continue;
        }
        let starts_block = fence
            || in_fence
            || trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed.starts_with("+ ")
            || trimmed.starts_with('|')
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !prev_blank {
            out.push(if starts_block { '\n' } else { ' ' });
        }
        out.push_str(if in_fence || fence { line } else { trimmed });
        if fence {
            in_fence = !in_fence;
        }
        prev_blank = false;
    }
    out
}

/// Whether `name` is a valid tool name for every target: `^[a-zA-Z0-9_-]{1,64}$` (Anthropic's
/// published pattern, narrowed to 64, which OpenAI and Gemini also accept).
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwraps_doc_comments() {
        assert_eq!(
            unwrap_doc(
                "Retrieves customer information based on their customer ID. Returns the\ncustomer's name, email, and phone number."
            ),
            "Retrieves customer information based on their customer ID. Returns the customer's name, email, and phone number."
        );
        assert_eq!(unwrap_doc("One.\n\nTwo\nlines."), "One.\n\nTwo lines.");
        assert_eq!(
            unwrap_doc("Units:\n- celsius\n- fahrenheit"),
            "Units:\n- celsius\n- fahrenheit"
        );
        assert_eq!(
            unwrap_doc("Steps:\n1. look\n2. act"),
            "Steps:\n1. look\n2. act"
        );
        assert_eq!(unwrap_doc("  padded  "), "padded");
    }

    #[test]
    fn documented_enum_values_reach_the_fields_description() {
        let variants = json!([
            {"description": "Window seat.", "type": "string", "const": "window"},
            {"description": "Aisle seat.", "type": "string", "const": "aisle"}
        ]);
        let raw = json!({
            "type": "object",
            "properties": {
                "seat": {"description": "Preferred seat", "anyOf": [{"oneOf": variants}, {"type": "null"}]},
                "plain": {"description": "Seat", "oneOf": variants},
                "bare": {"anyOf": [{"oneOf": variants}, {"type": "null"}]}
            }
        });
        let canonical = canonicalize(&raw, true);
        let values = "One of: `window`: Window seat; `aisle`: Aisle seat.";
        let enum_schema = json!({"type": "string", "enum": ["window", "aisle"]});
        assert_eq!(
            canonical["properties"]["seat"],
            json!({"description": format!("Preferred seat. {values}"), "anyOf": [enum_schema, {"type": "null"}]})
        );
        assert_eq!(
            canonical["properties"]["plain"],
            json!({"description": format!("Seat. {values}"), "type": "string", "enum": ["window", "aisle"]})
        );
        assert_eq!(
            canonical["properties"]["bare"]["anyOf"][0],
            json!({"type": "string", "enum": ["window", "aisle"], "description": values})
        );
        assert!(!canonical.to_string().contains("x-toolgate"));
    }

    #[test]
    fn canonical_form_of_an_optional_enum() {
        let raw = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "unit": {"description": "The unit", "type": ["string", "null"],
                         "enum": ["celsius", "fahrenheit", null]},
                "n": {"type": "integer", "format": "uint32", "minimum": 0}
            }
        });
        let canonical = canonicalize(&raw, true);
        assert_eq!(
            canonical,
            json!({
                "type": "object",
                "properties": {
                    "unit": {"description": "The unit", "anyOf": [
                        {"type": "string", "enum": ["celsius", "fahrenheit"]},
                        {"type": "null"}
                    ]},
                    "n": {"type": "integer", "minimum": 0}
                },
                "additionalProperties": false
            })
        );
        assert_eq!(
            anthropic_input_schema(&canonical)["properties"]["unit"],
            json!({
                "type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit"
            })
        );
    }
}
