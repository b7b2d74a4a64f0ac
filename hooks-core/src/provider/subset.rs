//! What the provider transforms share: naming a place in a schema, moving a narrowing keyword
//! into the description, the keywords no target's subset can express, and closing an object.
//!
//! Used by the strict and subset transforms (`anthropic.rs`, `openai.rs`, `gemini.rs`), which
//! never import one another: what two of them need lives here. The policy these helpers serve is
//! in the [module docs](super) ("What a transform does with what a target cannot take").

use serde_json::{Map, Value};

use crate::schema::is_merged;
use crate::schema::walk::try_for_each_subschema_mut;

/// `path.key`, or `key` at the root.
pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// How a path is named in a reason: `property `a.b``, or `the input` at the root.
pub(super) fn at(path: &str) -> String {
    if path.is_empty() {
        "the input".to_owned()
    } else {
        format!("property `{path}`")
    }
}

/// The keys a target does not accept on this node: `always`, plus `format` when its value is
/// not one of `formats`.
pub(super) fn keys_to_move(
    map: &Map<String, Value>,
    always: &[&str],
    formats: &[&str],
) -> Vec<String> {
    let mut moved: Vec<String> = always.iter().map(|s| (*s).to_owned()).collect();
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !formats.contains(&f))
    {
        moved.push("format".into());
    }
    moved
}

/// Moves `keys` (those present) out of `map` and appends them to its description as
/// `{key: value, …}` (values as compact JSON), after a blank line.
pub(super) fn relocate(map: &mut Map<String, Value>, keys: &[String]) {
    let moved: Vec<String> = keys
        .iter()
        .filter_map(|k| map.remove(k).map(|v| format!("{k}: {v}")))
        .collect();
    if moved.is_empty() {
        return;
    }
    let note = format!("{{{}}}", moved.join(", "));
    let text = match map.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d}\n\n{note}"),
        _ => note,
    };
    map.insert("description".into(), Value::String(text));
}

/// Keywords no target's subset can express, and how a reason names them.
const INEXPRESSIBLE: &[(&str, &str)] = &[
    ("not", "`not`"),
    ("if", "`if`/`then`/`else`"),
    ("then", "`if`/`then`/`else`"),
    ("else", "`if`/`then`/`else`"),
    ("prefixItems", "a tuple (`prefixItems`)"),
    ("patternProperties", "`patternProperties`"),
    ("propertyNames", "`propertyNames`"),
    ("dependentSchemas", "dependent schemas"),
    ("dependentRequired", "dependent schemas"),
    ("unevaluatedProperties", "`unevaluated*` keywords"),
    ("unevaluatedItems", "`unevaluated*` keywords"),
];

/// `allOf`, which OpenAI strict and Gemini cannot express (an `extra` of [`inexpressible`]).
pub(super) const ALL_OF: &[(&str, &str)] = &[("allOf", "`allOf`")];

/// Why a keyword makes a schema inexpressible in a subset, if it does: the first of
/// [`INEXPRESSIBLE`] and then `extra` that `map` has.
pub(super) fn inexpressible(
    map: &Map<String, Value>,
    path: &str,
    extra: &[(&str, &str)],
) -> Option<String> {
    INEXPRESSIBLE
        .iter()
        .chain(extra)
        .find(|(k, _)| map.contains_key(*k))
        .map(|(_, what)| format!("{} uses {what}", at(path)))
}

/// Why a merged object (properties of its own beside alternatives: a `#[serde(flatten)]` enum,
/// see [`crate::schema::canonicalize`]) cannot be strict, if `map` is one: a strict subset
/// closes every object, so the alternatives' fields could never be given.
pub(super) fn merged_object(map: &Map<String, Value>, path: &str) -> Option<String> {
    if !is_merged(map) {
        return None;
    }
    let combinator = ["anyOf", "oneOf", "allOf"]
        .into_iter()
        .find(|k| map.contains_key(*k))
        .unwrap_or("anyOf");
    Some(format!(
        "{} has properties of its own beside `{combinator}` alternatives (a #[serde(flatten)] \
         enum), which a strict schema cannot express: it closes every object \
         (`additionalProperties: false`), so the alternatives' fields could not be given",
        at(path)
    ))
}

/// Why an object schema's `additionalProperties` cannot be closed, if it cannot: a map
/// (`additionalProperties` is a schema) or an object with no declared properties.
pub(super) fn open_object(map: &Map<String, Value>, path: &str) -> Option<String> {
    match map.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) | None if !map.contains_key("properties") => Some(format!(
            "{} is an object with no declared properties (it accepts any keys)",
            at(path)
        )),
        Some(Value::Bool(true)) | None => None,
        Some(_) => Some(is_a_map(path)),
    }
}

/// The reason a map (`additionalProperties` is a schema) cannot be closed.
pub(super) fn is_a_map(path: &str) -> String {
    format!(
        "{} is a map (`additionalProperties` is a schema, as for HashMap<String, T>)",
        at(path)
    )
}

/// Whether `map` describes an object (`type: "object"` or `properties`).
pub(super) fn is_object_schema(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties")
}

/// Calls `f(keyword, child, path)` on every subschema of `map` but a bool
/// `additionalProperties`, in [`try_for_each_subschema_mut`]'s order. The path is
/// `path.name` under `properties`, `keyword.name` under the other maps (`$defs.Node`),
/// `path[]` under `items`, and `path` under the rest.
pub(super) fn walk_children(
    map: &mut Map<String, Value>,
    path: &str,
    f: &mut dyn FnMut(&str, &mut Value, &str) -> Result<(), String>,
) -> Result<(), String> {
    try_for_each_subschema_mut(map, |keyword, name, child| {
        let p = match (keyword, name) {
            ("properties", Some(name)) => join(path, name),
            (_, Some(name)) => join(keyword, name),
            ("items", None) => format!("{path}[]"),
            ("additionalProperties", None) if child.is_boolean() => return Ok(()),
            (_, None) => path.to_owned(),
        };
        f(keyword, child, &p)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn relocates_bounds_into_the_description() {
        let mut map = json!({"type": "integer", "minimum": 0, "description": "How many."})
            .as_object()
            .cloned()
            .unwrap_or_default();
        relocate(&mut map, &["minimum".to_owned(), "maximum".to_owned()]);
        assert_eq!(
            Value::Object(map),
            json!({"type": "integer", "description": "How many.\n\n{minimum: 0}"})
        );
    }
}
