//! Checking a schema toolgate did not derive before it is sent: a `#[schemars(schema_with = …)]`
//! part of a tool's schema, or a wrapped caller's `input_schema` (a remote server's).
//!
//! [`check`] applies the JSON Schema meta-schema of the schema's draft (its `$schema`: 2020-12
//! when it names none, 2019-09, 07, 06 or 04; MCP servers often send draft-07) structurally:
//! every schema is an object (or, from draft 06, a boolean), and every keyword the draft defines
//! holds a value of the kind its meta-schema requires (`type` a known type name or a list of
//! distinct ones, `required` a list of distinct strings, `minLength` a non-negative integer,
//! `multipleOf` a number above 0, `properties` a map of schemas, `anyOf` a non-empty list of
//! schemas, …), read in the order the schema gives them. Every `$ref` must point within the
//! schema (`super::walk::resolve_ref`): the providers resolve nothing, and a dangling one would
//! otherwise be explained later with a wrong reason. Keywords the draft does not define are
//! annotations and are left alone, as the meta-schema leaves them. Not checked without the
//! `full-validation` feature: that a `pattern` (or a `patternProperties` key) is a valid regular
//! expression; with it, the schema is also compiled by `boon` against the draft's own
//! meta-schema (`super::full`), which checks that too.
//!
//! Each problem is a [`Fault`]: the keyword's place as a JSON pointer into the schema
//! (`/properties/unit/type`) and why.

use serde_json::{Map, Value};

use super::walk::resolve_ref;
use crate::content::de::kind_of;
use crate::texts::quoted;

/// A JSON Schema draft, named by a schema's `$schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum Draft {
    D4,
    D6,
    D7,
    D2019,
    #[default]
    D2020,
}

impl Draft {
    /// The draft of a `$schema` URI (`http` or `https`, with or without the trailing `#`).
    pub(crate) fn from_uri(uri: &str) -> Option<Draft> {
        let uri = uri.trim_end_matches('#');
        let rest = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        Some(match rest {
            "json-schema.org/draft/2020-12/schema" => Draft::D2020,
            "json-schema.org/draft/2019-09/schema" => Draft::D2019,
            "json-schema.org/draft-07/schema" => Draft::D7,
            "json-schema.org/draft-06/schema" => Draft::D6,
            "json-schema.org/draft-04/schema" => Draft::D4,
            _ => return None,
        })
    }

    /// The draft a schema names at its root: 2020-12 when it names none (or `$schema` is not a
    /// string); `None` for a URI toolgate does not know.
    pub(crate) fn of(schema: &Value) -> Option<Draft> {
        match schema.get("$schema") {
            Some(Value::String(uri)) => Draft::from_uri(uri),
            _ => Some(Draft::default()),
        }
    }

    /// How a fault names the draft: `JSON Schema 2020-12`, `draft-07`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Draft::D4 => "JSON Schema draft-04",
            Draft::D6 => "JSON Schema draft-06",
            Draft::D7 => "JSON Schema draft-07",
            Draft::D2019 => "JSON Schema 2019-09",
            Draft::D2020 => "JSON Schema 2020-12",
        }
    }

    /// Before 2019-09, the keywords beside a `$ref` are ignored.
    pub(crate) fn ref_overrides_siblings(self) -> bool {
        self <= Draft::D7
    }

    /// From 2020-12, a tuple is `prefixItems` and `items` is always one schema.
    pub(crate) fn has_prefix_items(self) -> bool {
        self == Draft::D2020
    }
}

/// One problem of a schema: where (a JSON pointer into it; empty for the root) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) pointer: String,
    pub(crate) reason: String,
}

/// The faults of `schema` against its draft's meta-schema (see the module docs), in the order
/// its keywords are written; empty for a valid schema. Also the draft it was checked as.
pub(crate) fn check(schema: &Value) -> (Draft, Vec<Fault>) {
    let mut checker = Checker {
        root: schema,
        draft: Draft::default(),
        faults: Vec::new(),
    };
    match Draft::of(schema) {
        Some(d) => checker.draft = d,
        None => {
            let uri = schema.get("$schema").and_then(Value::as_str).unwrap_or("");
            checker.faults.push(Fault {
                pointer: "/$schema".into(),
                reason: format!(
                    "unknown `$schema` `{}`; toolgate knows JSON Schema 2020-12, 2019-09, \
                     draft-07, draft-06 and draft-04",
                    quoted(uri)
                ),
            });
        }
    }
    let mut pointer = String::new();
    checker.schema(schema, &mut pointer, 0);
    (checker.draft, checker.faults)
}

const TYPES: &[&str] = &[
    "array", "boolean", "integer", "null", "number", "object", "string",
];

const MAX_DEPTH: usize = 128;

/// What a keyword's value must be.
#[derive(Clone, Copy)]
enum Expect {
    /// Any JSON value (`default`, `const`).
    Any,
    /// A subschema.
    Schema,
    /// A map of subschemas (`properties`, `$defs`).
    SchemaMap,
    /// A non-empty list of subschemas (`anyOf`).
    SchemaList,
    /// `items` before 2020-12: a subschema or a list of them.
    SchemaOrList,
    /// `dependencies`: a map of subschemas or lists of distinct strings.
    Dependencies,
    /// `dependentRequired`: a map of lists of distinct strings.
    StringListMap,
    /// `required`: a list of distinct strings (non-empty in draft-04).
    StringList,
    /// `type`.
    Type,
    /// `enum`: a list (non-empty in draft-04).
    List,
    /// `examples`.
    AnyList,
    String,
    Bool,
    Number,
    /// `multipleOf`.
    Positive,
    /// `minLength` and the other counts.
    Count,
    /// `exclusiveMinimum`/`exclusiveMaximum`: a number, or draft-04's boolean.
    Exclusive,
    /// `$ref`, `$dynamicRef`: a reference that resolves within the schema.
    Ref,
}

/// The keywords a draft defines and what each must hold (the drafts' meta-schemas); `None` for
/// a keyword the draft does not define.
fn expect(keyword: &str, draft: Draft) -> Option<Expect> {
    use Draft::*;
    use Expect::*;
    let since = |first: Draft, e: Expect| (draft >= first).then_some(e);
    match keyword {
        "type" => Some(Type),
        "enum" => Some(List),
        "const" => since(D6, Any),
        "default" => Some(Any),
        "examples" => since(D6, AnyList),
        "title" | "description" | "format" | "pattern" => Some(String),
        "$comment" | "contentEncoding" | "contentMediaType" => since(D7, String),
        "$id" => Some(String),
        "$schema" => Some(String),
        "$anchor" => since(D2019, String),
        "$dynamicAnchor" => since(D2020, String),
        "readOnly" | "writeOnly" => since(D7, Bool),
        "deprecated" => since(D2019, Bool),
        "uniqueItems" => Some(Bool),
        "multipleOf" => Some(Positive),
        "minimum" | "maximum" => Some(Number),
        "exclusiveMinimum" | "exclusiveMaximum" => Some(Exclusive),
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" => {
            Some(Count)
        }
        "minContains" | "maxContains" => since(D2019, Count),
        "required" => Some(StringList),
        "dependentRequired" => since(D2019, StringListMap),
        "properties" | "patternProperties" | "definitions" => Some(SchemaMap),
        "$defs" | "dependentSchemas" => since(D2019, SchemaMap),
        "dependencies" => Some(Dependencies),
        "additionalProperties" | "not" => Some(Schema),
        "additionalItems" => (draft < D2020).then_some(Schema),
        "contains" | "propertyNames" => since(D6, Schema),
        "if" | "then" | "else" | "contentSchema" => since(D7, Schema),
        "unevaluatedProperties" | "unevaluatedItems" => since(D2019, Schema),
        "items" => Some(if draft == D2020 { Schema } else { SchemaOrList }),
        "prefixItems" => since(D2020, SchemaList),
        "allOf" | "anyOf" | "oneOf" => Some(SchemaList),
        "$ref" => Some(Ref),
        "$dynamicRef" => since(D2020, Ref),
        _ => None,
    }
}

struct Checker<'s> {
    root: &'s Value,
    draft: Draft,
    faults: Vec<Fault>,
}

/// `value`, for a fault: its kind, and the value itself when short.
fn shown(value: &Value) -> String {
    match value {
        Value::Array(_) | Value::Object(_) => format!("an {}", kind_of(value)),
        Value::Null => "null".into(),
        other => format!("the {} {}", kind_of(other), quoted(&other.to_string())),
    }
}

fn is_count(v: &Value) -> bool {
    v.as_u64().is_some() || v.as_f64().is_some_and(|f| f >= 0.0 && f.fract() == 0.0)
}

/// A fault's reason for a keyword whose value is not `what` it must be.
fn wrong(keyword: &str, value: &Value, what: &str) -> String {
    format!("`{keyword}` must be {what}, found {}", shown(value))
}

/// What a keyword holding a plain value (no subschema, no field name, no reference) must be,
/// when `value` is not that; `None` when it is. The other kinds have their own steps in
/// `Checker::keyword`, and are never unmet here.
fn unmet(expected: Expect, value: &Value, draft: Draft) -> Option<&'static str> {
    let (ok, what) = match expected {
        Expect::List if draft == Draft::D4 => (
            value.as_array().is_some_and(|items| !items.is_empty()),
            "a non-empty array",
        ),
        Expect::List | Expect::AnyList => (value.is_array(), "an array"),
        Expect::String => (value.is_string(), "a string"),
        Expect::Bool => (value.is_boolean(), "true or false"),
        Expect::Number => (value.is_number(), "a number"),
        Expect::Positive => (
            value.as_f64().is_some_and(|f| f > 0.0),
            "a number greater than 0",
        ),
        Expect::Count => (is_count(value), "a non-negative integer"),
        Expect::Exclusive if draft == Draft::D4 => (value.is_boolean(), "true or false (draft-04)"),
        Expect::Exclusive => (value.is_number(), "a number"),
        Expect::Any
        | Expect::Schema
        | Expect::SchemaMap
        | Expect::SchemaList
        | Expect::SchemaOrList
        | Expect::Dependencies
        | Expect::StringListMap
        | Expect::StringList
        | Expect::Type
        | Expect::Ref => return None,
    };
    (!ok).then_some(what)
}

/// Appends `/token` to a JSON pointer, `~` written `~0` and `/` written `~1` (RFC 6901).
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

impl Checker<'_> {
    fn fault(&mut self, pointer: &str, reason: String) {
        self.faults.push(Fault {
            pointer: pointer.to_owned(),
            reason,
        });
    }

    /// Checks `v` as a schema at `pointer`.
    fn schema(&mut self, v: &Value, pointer: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let map = match v {
            Value::Object(map) => map,
            Value::Bool(_) if self.draft >= Draft::D6 => return,
            other => {
                let what = if self.draft >= Draft::D6 {
                    "a JSON object or a boolean"
                } else {
                    "a JSON object"
                };
                return self.fault(
                    pointer,
                    format!("a schema must be {what}, found {}", shown(other)),
                );
            }
        };
        for (keyword, value) in map {
            let Some(expected) = expect(keyword, self.draft) else {
                continue;
            };
            let len = pointer.len();
            push_token(pointer, keyword);
            self.keyword(keyword, value, expected, pointer, depth);
            pointer.truncate(len);
        }
    }

    /// Checks one keyword's value, at `pointer` (the keyword's own place), against what the
    /// draft's meta-schema requires of it (`expected`): the subschemas a keyword holds are
    /// checked as schemas in turn, a list of field names for distinct strings, a `$ref` for a
    /// target within the schema, and any other value for its kind.
    fn keyword(
        &mut self,
        keyword: &str,
        value: &Value,
        expected: Expect,
        pointer: &mut String,
        depth: usize,
    ) {
        match expected {
            Expect::Any => {}
            Expect::Schema => self.schema(value, pointer, depth + 1),
            Expect::SchemaMap => self.schema_map(keyword, value, pointer, depth),
            Expect::SchemaList => match value {
                Value::Array(items) if !items.is_empty() => self.each(items, pointer, depth),
                _ => self.fault(
                    pointer,
                    wrong(keyword, value, "a non-empty array of schemas"),
                ),
            },
            Expect::SchemaOrList => match value {
                Value::Array(items) => self.each(items, pointer, depth),
                _ => self.schema(value, pointer, depth + 1),
            },
            Expect::Dependencies => self.dependencies(keyword, value, pointer, depth),
            Expect::StringListMap => self.dependent_required(keyword, value, pointer),
            Expect::StringList => self.required(keyword, value, pointer),
            Expect::Type => self.types(value, pointer),
            Expect::Ref => self.reference(keyword, value, pointer),
            Expect::List
            | Expect::AnyList
            | Expect::String
            | Expect::Bool
            | Expect::Number
            | Expect::Positive
            | Expect::Count
            | Expect::Exclusive => {
                if let Some(what) = unmet(expected, value, self.draft) {
                    self.fault(pointer, wrong(keyword, value, what));
                }
            }
        }
    }

    /// Runs `check` on each member of the object `map`, with `pointer` extended by the
    /// member's name for the time of the call (so a fault names the member's place).
    fn each_member(
        &mut self,
        map: &Map<String, Value>,
        pointer: &mut String,
        mut check: impl FnMut(&mut Self, &Value, &mut String),
    ) {
        for (name, child) in map {
            let len = pointer.len();
            push_token(pointer, name);
            check(self, child, pointer);
            pointer.truncate(len);
        }
    }

    /// `properties`, `patternProperties`, `definitions`, `$defs`, `dependentSchemas`: an object
    /// whose every value is a schema.
    fn schema_map(&mut self, keyword: &str, value: &Value, pointer: &mut String, depth: usize) {
        match value {
            Value::Object(children) => self.each_member(children, pointer, |checker, child, at| {
                checker.schema(child, at, depth + 1);
            }),
            _ => self.fault(
                pointer,
                wrong(keyword, value, "a JSON object whose values are schemas"),
            ),
        }
    }

    /// `dependencies` (which 2019-09 split into `dependentRequired` and `dependentSchemas`): an
    /// object whose every value is either a list of distinct field names or a schema.
    fn dependencies(&mut self, keyword: &str, value: &Value, pointer: &mut String, depth: usize) {
        match value {
            Value::Object(children) => {
                self.each_member(children, pointer, |checker, child, at| match child {
                    Value::Array(_) => checker.string_list(child, "each dependency", at),
                    _ => checker.schema(child, at, depth + 1),
                });
            }
            _ => self.fault(pointer, wrong(keyword, value, "a JSON object")),
        }
    }

    /// `dependentRequired`: an object whose every value is a list of distinct field names.
    fn dependent_required(&mut self, keyword: &str, value: &Value, pointer: &mut String) {
        match value {
            Value::Object(children) => self.each_member(children, pointer, |checker, child, at| {
                checker.string_list(child, "each dependency", at);
            }),
            _ => self.fault(
                pointer,
                wrong(keyword, value, "a JSON object of arrays of field names"),
            ),
        }
    }

    /// `required`: a list of distinct field names, which draft-04 also wants non-empty.
    fn required(&mut self, keyword: &str, value: &Value, pointer: &str) {
        if self.draft == Draft::D4 && value.as_array().is_some_and(Vec::is_empty) {
            self.fault(
                pointer,
                wrong(keyword, value, "a non-empty array of field names"),
            );
        } else {
            self.string_list(value, &format!("`{keyword}`"), pointer);
        }
    }

    /// `$ref`, `$dynamicRef`: a string naming a place within the schema
    /// (`super::walk::resolve_ref`): the providers resolve no reference, and a dangling one
    /// would be explained later with a wrong reason.
    fn reference(&mut self, keyword: &str, value: &Value, pointer: &str) {
        match value {
            Value::String(r) if resolve_ref(self.root, r).is_some() => {}
            Value::String(r) if r.starts_with('#') => self.fault(
                pointer,
                format!(
                    "`{keyword}` `{}` points to nothing in this schema",
                    quoted(r)
                ),
            ),
            Value::String(r) => self.fault(
                pointer,
                format!(
                    "`{keyword}` `{}` points outside this schema; toolgate resolves only \
                     references within it (`#`, `#/…`, `#name`), and the providers resolve \
                     none",
                    quoted(r)
                ),
            ),
            _ => self.fault(pointer, wrong(keyword, value, "a string")),
        }
    }

    /// Checks each item of a list of subschemas (`anyOf`, `prefixItems`, …) as a schema, at its
    /// index.
    fn each(&mut self, items: &[Value], pointer: &mut String, depth: usize) {
        for (i, item) in items.iter().enumerate() {
            let len = pointer.len();
            pointer.push('/');
            pointer.push_str(&i.to_string());
            self.schema(item, pointer, depth + 1);
            pointer.truncate(len);
        }
    }

    /// `value` must be an array of distinct strings (`what` names it in a fault).
    fn string_list(&mut self, value: &Value, what: &str, pointer: &str) {
        let Value::Array(items) = value else {
            return self.fault(
                pointer,
                format!(
                    "{what} must be an array of field names, found {}",
                    shown(value)
                ),
            );
        };
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if items[..i].contains(item) => {
                    return self.fault(pointer, format!("{what} lists `{}` twice", quoted(s)));
                }
                Value::String(_) => {}
                other => {
                    return self.fault(
                        pointer,
                        format!(
                            "{what} must be an array of field names, found {} in it",
                            shown(other)
                        ),
                    );
                }
            }
        }
    }

    fn types(&mut self, value: &Value, pointer: &str) {
        let named = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t));
        let known = TYPES
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", ");
        match value {
            Value::String(_) if named(value) => {}
            Value::Array(ts) if !ts.is_empty() => {
                for (i, t) in ts.iter().enumerate() {
                    if !named(t) {
                        return self.fault(
                            pointer,
                            format!("{} is not a JSON Schema type (one of {known})", shown(t)),
                        );
                    }
                    if ts[..i].contains(t) {
                        return self.fault(pointer, format!("`type` lists {} twice", shown(t)));
                    }
                }
            }
            Value::Array(_) => self.fault(pointer, "`type` must not be an empty array".into()),
            other => self.fault(
                pointer,
                format!(
                    "{} is not a JSON Schema type (one of {known})",
                    shown(other)
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn faults(schema: Value) -> Vec<(String, String)> {
        check(&schema)
            .1
            .into_iter()
            .map(|f| (f.pointer, f.reason))
            .collect()
    }

    fn one(pointer: &str, reason: &str) -> Vec<(String, String)> {
        vec![(pointer.to_owned(), reason.to_owned())]
    }

    #[test]
    fn names_the_keyword_and_why() {
        assert_eq!(
            faults(json!({"type": "object", "properties": {"unit": {"type": "strin"}}})),
            one(
                "/properties/unit/type",
                "the string \"strin\" is not a JSON Schema type (one of `array`, `boolean`, \
                 `integer`, `null`, `number`, `object`, `string`)"
            )
        );
        assert_eq!(
            faults(json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}})),
            one(
                "/properties/a/$ref",
                "`$ref` `#/$defs/Missing` points to nothing in this schema"
            )
        );
        assert_eq!(
            faults(
                json!({"type": "object", "required": ["a", "a"], "minLength": -1,
                          "anyOf": [], "properties": {"x~y/z": 3}})
            ),
            vec![
                (
                    "/required".to_owned(),
                    "`required` lists `a` twice".to_owned()
                ),
                (
                    "/minLength".to_owned(),
                    "`minLength` must be a non-negative integer, found the number -1".to_owned()
                ),
                (
                    "/anyOf".to_owned(),
                    "`anyOf` must be a non-empty array of schemas, found an array".to_owned()
                ),
                (
                    "/properties/x~0y~1z".to_owned(),
                    "a schema must be a JSON object or a boolean, found the number 3".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn follows_the_draft_the_schema_names() {
        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"p": {"type": "array", "items": [{"type": "string"}],
                                 "exclusiveMinimum": true}},
            "definitions": {"d": {"type": "integer"}}
        });
        assert_eq!(
            faults(draft7),
            one(
                "/properties/p/exclusiveMinimum",
                "`exclusiveMinimum` must be a number, found the boolean true"
            )
        );
        let draft4 = json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
                           "b": true}
        });
        assert_eq!(
            faults(draft4),
            one(
                "/properties/b",
                "a schema must be a JSON object, found the boolean true"
            )
        );
        assert_eq!(
            faults(json!({"$schema": "https://example.com/my-schema"})),
            one(
                "/$schema",
                "unknown `$schema` `https://example.com/my-schema`; toolgate knows JSON Schema \
                 2020-12, 2019-09, draft-07, draft-06 and draft-04"
            )
        );
        // Keywords a draft does not define are annotations.
        assert_eq!(
            faults(
                json!({"x-note": 1, "prefixItems": 3, "$schema": "http://json-schema.org/draft-07/schema"})
            ),
            vec![]
        );
    }
}
