//! Build-time schema checks, and the unknown-field check the dispatcher runs on every input.

use serde_json::Value;

use super::split_nullable;

/// Why a canonical schema cannot be a tool's `input_schema` root, if it cannot.
pub(crate) fn root_problem(canonical: &Value) -> Option<String> {
    match canonical {
        Value::Bool(true) => Some("the schema `true` (any JSON value)".into()),
        Value::Object(map) => {
            let ty = map.get("type");
            if ty.and_then(Value::as_str) == Some("object") && map.contains_key("properties") {
                return None;
            }
            if ty.and_then(Value::as_str) == Some("object") {
                return Some(
                    "an object without named properties (a map); use a struct with named fields"
                        .into(),
                );
            }
            for combinator in ["anyOf", "oneOf", "allOf"] {
                if map.contains_key(combinator) {
                    return Some(format!(
                        "a root `{combinator}` (an enum or untagged type); Anthropic requires \
                         `input_schema.type: \"object\"` with no top-level {combinator}"
                    ));
                }
            }
            match ty {
                Some(t) => Some(format!("`type: {t}`")),
                None => Some("a schema with no `type`".into()),
            }
        }
        other => Some(format!("the schema `{other}`")),
    }
}

/// Whether a property schema accepts any JSON value without saying so explicitly: `true`, `{}`,
/// or only annotations (a documented `serde_json::Value`).
fn is_open(v: &Value) -> bool {
    match v {
        Value::Bool(true) => true,
        Value::Object(map) => map.keys().all(|k| {
            matches!(
                k.as_str(),
                "description"
                    | "title"
                    | "default"
                    | "examples"
                    | "deprecated"
                    | "readOnly"
                    | "writeOnly"
                    | "$comment"
            )
        }),
        _ => false,
    }
}

/// The paths (`payload`, `options.extra`, `items[].meta`) of properties whose schema is a bare
/// `true` or `{}`.
pub(crate) fn open_properties(canonical: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk_open(canonical, "", &mut found, 0);
    found
}

fn walk_open(v: &Value, prefix: &str, found: &mut Vec<String>, depth: usize) {
    if depth > 32 {
        return;
    }
    let Value::Object(map) = v else { return };
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, p) in props {
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            let (inner, _) = split_nullable(p);
            if is_open(&inner) {
                found.push(path);
            } else {
                walk_open(&inner, &path, found, depth + 1);
            }
        }
    }
    if let Some(items) = map.get("items") {
        walk_open(items, &format!("{prefix}[]"), found, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            for b in branches {
                walk_open(b, prefix, found, depth + 1);
            }
        }
    }
}

/// The unknown-field check derived from a canonical schema: objects with `properties` and
/// `additionalProperties: false` reject keys they do not list, at every depth the schema
/// describes without `$ref` (a recursive type is checked down to its first `$ref`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FieldCheck {
    /// Nothing to check.
    Any,
    /// An object: its known properties and whether others are refused.
    Object {
        props: Vec<(String, FieldCheck)>,
        closed: bool,
    },
    /// An array whose items are checked.
    Array(Box<FieldCheck>),
}

/// One step of a path into the input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// An input field the schema does not allow.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UnknownField {
    /// Where the object holding it sits (outermost first).
    pub(crate) path: Vec<Seg>,
    /// The unknown key.
    pub(crate) field: String,
    /// The keys the object allows.
    pub(crate) expected: Vec<String>,
}

impl UnknownField {
    /// The path written as `options.filters[2]`; empty at the top level.
    pub(crate) fn path_text(&self) -> String {
        render_path(&self.path)
    }
}

pub(crate) fn render_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

impl FieldCheck {
    pub(crate) fn from_schema(schema: &Value) -> FieldCheck {
        Self::build(schema, 0)
    }

    fn build(v: &Value, depth: usize) -> FieldCheck {
        if depth > 64 {
            return FieldCheck::Any;
        }
        let (v, _) = split_nullable(v);
        let Value::Object(map) = &v else {
            return FieldCheck::Any;
        };
        if let Some(Value::Object(props)) = map.get("properties") {
            let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
            let props: Vec<(String, FieldCheck)> = props
                .iter()
                .map(|(k, s)| (k.clone(), Self::build(s, depth + 1)))
                .collect();
            if !closed && props.iter().all(|(_, c)| *c == FieldCheck::Any) {
                return FieldCheck::Any;
            }
            return FieldCheck::Object { props, closed };
        }
        if let Some(items) = map.get("items") {
            return match Self::build(items, depth + 1) {
                FieldCheck::Any => FieldCheck::Any,
                inner => FieldCheck::Array(Box::new(inner)),
            };
        }
        FieldCheck::Any
    }

    /// Checks `input`; allocates nothing unless a field is unknown.
    pub(crate) fn check(&self, input: &Value) -> Result<(), UnknownField> {
        match (self, input) {
            (FieldCheck::Any, _) => Ok(()),
            (FieldCheck::Object { props, closed }, Value::Object(obj)) => {
                for (key, value) in obj {
                    match props.iter().find(|(k, _)| k == key) {
                        // The common case (a scalar or open property): no call.
                        Some((_, FieldCheck::Any)) => {}
                        Some((_, inner)) => inner.check(value).map_err(|mut e| {
                            e.path.insert(0, Seg::Key(key.clone()));
                            e
                        })?,
                        None if *closed => {
                            return Err(UnknownField {
                                path: Vec::new(),
                                field: key.clone(),
                                expected: props.iter().map(|(k, _)| k.clone()).collect(),
                            });
                        }
                        None => {}
                    }
                }
                Ok(())
            }
            (FieldCheck::Array(inner), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    inner.check(item).map_err(|mut e| {
                        e.path.insert(0, Seg::Index(i));
                        e
                    })?;
                }
                Ok(())
            }
            // A value of another kind is the deserializer's to reject.
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_unknown_fields_at_depth() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "options": {"anyOf": [{
                    "type": "object",
                    "properties": {"num_results": {"type": "integer"}},
                    "additionalProperties": false
                }, {"type": "null"}]},
                "tags": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"k": {"type": "string"}},
                    "additionalProperties": false
                }}
            },
            "additionalProperties": false
        });
        let check = FieldCheck::from_schema(&schema);
        assert_eq!(check.check(&json!({"query": "x", "options": null})), Ok(()));
        let e = check.check(&json!({"query": "x", "extra": 1})).unwrap_err();
        assert_eq!((e.path_text().as_str(), e.field.as_str()), ("", "extra"));
        assert_eq!(e.expected, vec!["query", "options", "tags"]);
        let e = check
            .check(&json!({"options": {"num_results": 1, "sort": "x"}}))
            .unwrap_err();
        assert_eq!(
            (e.path_text().as_str(), e.field.as_str()),
            ("options", "sort")
        );
        let e = check
            .check(&json!({"tags": [{"k": "a"}, {"k": "b", "v": 1}]}))
            .unwrap_err();
        assert_eq!((e.path_text().as_str(), e.field.as_str()), ("tags[1]", "v"));
    }

    #[test]
    fn open_objects_accept_unknown_fields() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(FieldCheck::from_schema(&schema), FieldCheck::Any);
    }

    #[test]
    fn reports_open_properties_and_bad_roots() {
        let schema = json!({"type": "object", "properties": {
            "payload": true,
            "documented": {"description": "anything"},
            "nested": {"type": "object", "properties": {"meta": {}}},
            "fine": {"type": "string"}
        }});
        assert_eq!(
            open_properties(&schema),
            vec!["payload", "documented", "nested.meta"]
        );
        assert_eq!(root_problem(&schema), None);
        assert_eq!(
            root_problem(&json!({"type": "string"})).as_deref(),
            Some("`type: \"string\"`")
        );
    }
}
