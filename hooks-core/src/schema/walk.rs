//! Walking a JSON Schema: the keywords that hold subschemas, the nullable `anyOf`, the JSON kinds
//! a schema accepts, and following a `$ref` within the schema.
//!
//! Shared by the canonical form (`super::canonicalize`, [`super::anthropic_input_schema`]), the
//! unknown-field check (`super::check`), the input walk (`super::explain`), the meta-schema check
//! (`super::meta`) and every provider's transform (`crate::provider`), so that none of them
//! imports another to walk a schema.
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

/// The kind bits of JSON values ([`kind_bit`]) and of what a schema accepts ([`kinds`]).
pub(crate) const NULL: u8 = 1;
pub(crate) const BOOL: u8 = 2;
pub(crate) const NUMBER: u8 = 4;
pub(crate) const STRING: u8 = 8;
pub(crate) const ARRAY: u8 = 16;
pub(crate) const OBJECT: u8 = 32;
pub(crate) const ALL_KINDS: u8 = 63;

/// The kind bit of a JSON value.
pub(crate) fn kind_bit(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOL,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

/// The JSON kinds a schema accepts, as far as its `type`, `const`, `enum`, `properties` or
/// `items` say; all kinds when they say nothing.
pub(crate) fn kinds(schema: &Value) -> u8 {
    let Value::Object(map) = schema else {
        return if *schema == Value::Bool(false) {
            0
        } else {
            ALL_KINDS
        };
    };
    let named = |t: &Value| match t.as_str() {
        Some("null") => NULL,
        Some("boolean") => BOOL,
        Some("number" | "integer") => NUMBER,
        Some("string") => STRING,
        Some("array") => ARRAY,
        Some("object") => OBJECT,
        _ => ALL_KINDS,
    };
    match map.get("type") {
        Some(Value::Array(types)) => return types.iter().fold(0, |k, t| k | named(t)),
        Some(t) => return named(t),
        None => {}
    }
    if let Some(c) = map.get("const") {
        return kind_bit(c);
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.iter().fold(0, |k, v| k | kind_bit(v));
    }
    if map.contains_key("properties") {
        return OBJECT;
    }
    if map.contains_key("items") {
        return ARRAY;
    }
    ALL_KINDS
}

/// The subschema a `$ref` (or `$dynamicRef`) names within `root`: `#` (the root), a JSON
/// pointer fragment (`#/$defs/Node`, `#/properties/a`; `~0`, `~1` and `%`-escapes decoded), or a
/// plain-name fragment (`#node`) matching an `$anchor`, a `$dynamicAnchor` or, before draft
/// 2019-09, an `$id` of `#node`. `None` for anything else: a reference to another document, or a
/// pointer to nothing. (An `$id` that changes the base URI is not followed: toolgate's tool
/// schemas are single documents.)
pub(crate) fn resolve_ref<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    if let Some(pointer) = fragment.strip_prefix('/') {
        let mut at = root;
        for token in pointer.split('/') {
            let token = percent_decode(token)?.replace("~1", "/").replace("~0", "~");
            at = match at {
                Value::Object(map) => map.get(&token)?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        return Some(at);
    }
    find_anchor(root, fragment, 0)
}

fn find_anchor<'s>(v: &'s Value, name: &str, depth: usize) -> Option<&'s Value> {
    if depth > 64 {
        return None;
    }
    match v {
        Value::Object(map) => {
            let named = |k: &str, prefix: &str| {
                map.get(k)
                    .and_then(Value::as_str)
                    .and_then(|a| a.strip_prefix(prefix))
                    == Some(name)
            };
            if named("$anchor", "") || named("$dynamicAnchor", "") || named("$id", "#") {
                return Some(v);
            }
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "enum" | "const" | "default" | "examples"))
                .find_map(|(_, child)| find_anchor(child, name, depth + 1))
        }
        Value::Array(items) => items.iter().find_map(|c| find_anchor(c, name, depth + 1)),
        _ => None,
    }
}

/// `%XX` escapes decoded (a JSON pointer in a URI fragment); `None` for a malformed escape or
/// bytes that are not UTF-8.
fn percent_decode(token: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !token.contains('%') {
        return Some(std::borrow::Cow::Borrowed(token));
    }
    let bytes = token.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = token.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(std::borrow::Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_pointers_and_anchors_within_the_schema() {
        let root = json!({
            "properties": {"a/b": {"type": "string"}, "c": {"$anchor": "cee", "type": "integer"}},
            "$defs": {"Node": {"type": "object"}},
            "definitions": {"Old": {"$id": "#old", "type": "null"}}
        });
        assert_eq!(resolve_ref(&root, "#"), Some(&root));
        assert_eq!(
            resolve_ref(&root, "#/$defs/Node"),
            Some(&json!({"type": "object"}))
        );
        assert_eq!(
            resolve_ref(&root, "#/properties/a~1b"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            resolve_ref(&root, "#/properties/a%7E1b"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            resolve_ref(&root, "#cee").and_then(|s| s.get("type")),
            Some(&json!("integer"))
        );
        assert_eq!(
            resolve_ref(&root, "#old").and_then(|s| s.get("type")),
            Some(&json!("null"))
        );
        assert_eq!(resolve_ref(&root, "#/$defs/Missing"), None);
        assert_eq!(resolve_ref(&root, "other.json#/a"), None);
    }
}
