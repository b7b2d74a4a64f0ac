//! Walking a JSON Schema: the keywords that hold subschemas, and the nullable `anyOf`.
//!
//! Shared by the canonical form (`super::canonicalize`, [`super::anthropic_input_schema`]), the
//! unknown-field check (`super::check`) and every provider's transform (`crate::provider`), so
//! that none of them imports another to walk a schema.
//!
//! The keyword lists follow JSON Schema 2020-12 ("Keywords for Applying Subschemas"), the draft
//! schemars writes; `definitions` (draft 7) is walked like `$defs`.

use serde_json::{Map, Value};

/// Keywords whose value is one subschema.
pub(crate) const CHILD: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
];
/// Keywords whose value is an array of subschemas.
pub(crate) const CHILD_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value is a map of named subschemas.
pub(crate) const CHILD_MAPS: &[&str] = &[
    "properties",
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

/// Calls `f(keyword, name, child)` on every direct subschema of the schema object `map`: those
/// under [`CHILD_MAPS`] (with the entry's `name`), then [`CHILD`], then [`CHILD_LISTS`] (`name`
/// is `None` for both), each list in its order. A bool child (`additionalProperties: false`) is
/// passed too. Stops at, and returns, the first error.
pub(crate) fn try_for_each_subschema_mut<E>(
    map: &mut Map<String, Value>,
    mut f: impl FnMut(&'static str, Option<&str>, &mut Value) -> Result<(), E>,
) -> Result<(), E> {
    for key in CHILD_MAPS {
        if let Some(Value::Object(children)) = map.get_mut(*key) {
            for (name, child) in children.iter_mut() {
                f(key, Some(name), child)?;
            }
        }
    }
    for key in CHILD {
        if let Some(child) = map.get_mut(*key) {
            f(key, None, child)?;
        }
    }
    for key in CHILD_LISTS {
        if let Some(Value::Array(children)) = map.get_mut(*key) {
            for child in children.iter_mut() {
                f(key, None, child)?;
            }
        }
    }
    Ok(())
}

/// [`try_for_each_subschema_mut`] for a callback that cannot fail.
pub(crate) fn for_each_subschema_mut(
    map: &mut Map<String, Value>,
    mut f: impl FnMut(&'static str, Option<&str>, &mut Value),
) {
    let done = try_for_each_subschema_mut::<std::convert::Infallible>(map, |k, n, c| {
        f(k, n, c);
        Ok(())
    });
    match done {
        Ok(()) => {}
        Err(never) => match never {},
    }
}

/// Calls `f(keyword, name, child)` on every direct subschema of `map`, read-only, in
/// [`try_for_each_subschema_mut`]'s order (for walks that only count or look).
pub(crate) fn for_each_subschema<'s>(
    map: &'s Map<String, Value>,
    mut f: impl FnMut(&'static str, Option<&'s str>, &'s Value),
) {
    for key in CHILD_MAPS {
        if let Some(Value::Object(children)) = map.get(*key) {
            for (name, child) in children {
                f(key, Some(name), child);
            }
        }
    }
    for key in CHILD {
        if let Some(child) = map.get(*key) {
            f(key, None, child);
        }
    }
    for key in CHILD_LISTS {
        if let Some(Value::Array(children)) = map.get(*key) {
            for child in children {
                f(key, None, child);
            }
        }
    }
}

/// Whether `v` is exactly `{"type": "null"}`.
fn is_null_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
        && v.as_object().is_some_and(|m| m.len() == 1)
}

/// Splits `{"anyOf": [X, {"type": "null"}], description…}` into (X merged with the outer
/// keywords, true); any other schema into (itself, false). `split_null_branches(v, false)`.
pub(crate) fn split_nullable(v: &Value) -> (Value, bool) {
    split_null_branches(v, false)
}

/// Removes the `{"type": "null"}` branches of `v`'s `anyOf`: (the schema without them, whether
/// there were any). One remaining branch is merged with the outer keywords (outer ones win, in
/// their order after the branch's own keys): `{"description": "d", "anyOf": [{"type":
/// "string"}, {"type": "null"}]}` → `({"type": "string", "description": "d"}, true)`. Unless
/// `wider`, only the two-branch `anyOf: [X, null]` (either order) is split. When `wider`, an
/// `anyOf` of several branches keeps the non-null ones (`{"anyOf": [A, B, null]}` → `({"anyOf":
/// [A, B]}, true)`). Any other schema: `(v, false)`.
pub(crate) fn split_null_branches(v: &Value, wider: bool) -> (Value, bool) {
    let Some(map) = v.as_object() else {
        return (v.clone(), false);
    };
    let Some(Value::Array(branches)) = map.get("anyOf") else {
        return (v.clone(), false);
    };
    let rest: Vec<&Value> = branches.iter().filter(|b| !is_null_schema(b)).collect();
    match rest.as_slice() {
        _ if rest.len() == branches.len() => (v.clone(), false),
        [only] if wider || branches.len() == 2 => {
            let mut merged = match only {
                Value::Object(m) => m.clone(),
                other => return ((*other).clone(), true),
            };
            for (k, val) in map {
                if k != "anyOf" {
                    merged.insert(k.clone(), val.clone());
                }
            }
            (Value::Object(merged), true)
        }
        _ if wider => {
            let mut outer = map.clone();
            outer.insert(
                "anyOf".into(),
                Value::Array(rest.into_iter().cloned().collect()),
            );
            (Value::Object(outer), true)
        }
        _ => (v.clone(), false),
    }
}
