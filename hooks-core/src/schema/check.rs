//! Build-time schema checks, and the unknown-field check the dispatcher runs on every input.

use serde_json::Value;

use super::walk::{ALL_KINDS, kind_bit, kinds, split_nullable};

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
/// `true` or `{}`, each once (a merged object lists its alternatives' properties too).
pub(crate) fn open_properties(canonical: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk_open(canonical, "", &mut found, 0);
    let mut unique: Vec<String> = Vec::with_capacity(found.len());
    for path in found {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    unique
}

/// Follows only what a property path names (`properties`, `items`, combinator branches), not
/// every subschema ([`super::walk::for_each_subschema_mut`]): an open value under `$defs` or a map's
/// `additionalProperties` is not a property the build refuses.
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

/// The unknown-field check derived from a canonical schema. What it refuses, and where:
///
/// - an object with `properties` and `additionalProperties: false`: a key it does not list
///   ([`UnknownField`] naming the listed keys); each listed key's value is checked in turn;
/// - an array's `items`: every element;
/// - a map (`additionalProperties: <schema>` without `properties`, as for
///   `HashMap<String, T>`): every value;
/// - `anyOf`/`oneOf` branches (a data-carrying or untagged enum; the nullable `anyOf: [X,
///   {"type": "null"}]` is split first and checks X): see [`FieldCheck::AnyOf`].
///
/// Not checked: anything past a `$ref` (a recursive type is checked down to its first `$ref`,
/// which is never resolved), `allOf` (its branches constrain the same value together, so a key
/// unknown to one branch may be declared by another; schemars does not emit it for tool inputs),
/// `patternProperties` (an object with them refuses no key), and the keys an object with
/// `properties` allows beyond them when its `additionalProperties` is a schema (a
/// `#[serde(flatten)]` map). A merged object (a `#[serde(flatten)]` enum) lists its
/// alternatives' properties in the canonical form, so they are known keys here.
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
    /// A map (an object without `properties`) whose every value is checked.
    Map(Box<FieldCheck>),
    /// Alternatives (`anyOf`/`oneOf` branches): an input passes if a branch whose JSON kinds
    /// include the input's passes, and also when no branch has the input's kind (that is the
    /// deserializer's to reject), so a valid input is never refused. When every such branch
    /// refuses it, the error is that of the branch whose properties name the most of the
    /// input object's keys (an externally tagged variant's name, an internally tagged enum's
    /// fields); on a tie, the first such branch.
    AnyOf(Vec<Branch>),
}

/// One `anyOf`/`oneOf` branch: the JSON kinds it accepts ([`kinds`] bits) and its check.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Branch {
    kinds: u8,
    check: FieldCheck,
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
            // A key `patternProperties` matches is not unknown; whether one does is a regular
            // expression's to say, so such an object refuses no key here.
            let closed = map.get("additionalProperties") == Some(&Value::Bool(false))
                && !map.contains_key("patternProperties");
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
        if let Some(values @ Value::Object(_)) = map.get("additionalProperties") {
            return match Self::build(values, depth + 1) {
                FieldCheck::Any => FieldCheck::Any,
                inner => FieldCheck::Map(Box::new(inner)),
            };
        }
        if let Some(Value::Array(branches)) = map.get("anyOf").or_else(|| map.get("oneOf")) {
            let branches: Vec<Branch> = branches
                .iter()
                .map(|b| Branch {
                    kinds: kinds(b),
                    check: Self::build(b, depth + 1),
                })
                .collect();
            // A branch that accepts every value unchecked makes the whole check pass.
            if branches
                .iter()
                .any(|b| b.kinds == ALL_KINDS && b.check == FieldCheck::Any)
                || branches.iter().all(|b| b.check == FieldCheck::Any)
            {
                return FieldCheck::Any;
            }
            return FieldCheck::AnyOf(branches);
        }
        FieldCheck::Any
    }

    /// Checks `input`; allocates nothing unless a field is unknown.
    pub(crate) fn check(&self, input: &Value) -> Result<(), UnknownField> {
        match self.visit(input, true) {
            Ok(()) => Ok(()),
            Err(Some(e)) => Err(e),
            // `visit` with `report` always says what is wrong.
            Err(None) => {
                debug_assert!(false, "an unknown field without a report");
                Ok(())
            }
        }
    }

    /// The check: `Err(None)` for a refusal when `report` is false (nothing allocated, used to
    /// try `anyOf` branches), `Err(Some(_))` when it is true.
    fn visit(&self, input: &Value, report: bool) -> Result<(), Option<UnknownField>> {
        let within = |seg: Seg| {
            move |e: Option<UnknownField>| {
                e.map(|mut e| {
                    e.path.insert(0, seg);
                    e
                })
            }
        };
        match (self, input) {
            (FieldCheck::Any, _) => Ok(()),
            (FieldCheck::Object { props, closed }, Value::Object(obj)) => {
                for (key, value) in obj {
                    // A linear scan: argument structs have a handful of fields.
                    match props.iter().find(|(k, _)| k == key) {
                        // The common case (a scalar or open property): no call.
                        Some((_, FieldCheck::Any)) => {}
                        Some((_, inner)) => inner
                            .visit(value, report)
                            .map_err(within(Seg::Key(key.clone())))?,
                        None if *closed => {
                            return Err(report.then(|| UnknownField {
                                path: Vec::new(),
                                field: key.clone(),
                                expected: props.iter().map(|(k, _)| k.clone()).collect(),
                            }));
                        }
                        None => {}
                    }
                }
                Ok(())
            }
            (FieldCheck::Array(inner), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    inner.visit(item, report).map_err(within(Seg::Index(i)))?;
                }
                Ok(())
            }
            (FieldCheck::Map(inner), Value::Object(obj)) => {
                for (key, value) in obj {
                    inner
                        .visit(value, report)
                        .map_err(within(Seg::Key(key.clone())))?;
                }
                Ok(())
            }
            (FieldCheck::AnyOf(branches), _) => {
                let kind = kind_bit(input);
                let applicable = || branches.iter().filter(|b| b.kinds & kind != 0);
                if applicable().next().is_none()
                    || applicable().any(|b| b.check.visit(input, false).is_ok())
                {
                    return Ok(());
                }
                if !report {
                    return Err(None);
                }
                // The first of the best-matching branches (`max_by_key` keeps the last).
                let best = applicable()
                    .rev()
                    .max_by_key(|b| b.check.known_keys(input))
                    .map(|b| b.check.visit(input, true));
                match best {
                    Some(Err(e)) => Err(e),
                    _ => Ok(()),
                }
            }
            // A value of another kind is the deserializer's to reject.
            _ => Ok(()),
        }
    }

    /// How many of `input`'s keys this check's object lists (0 when either is not an object).
    fn known_keys(&self, input: &Value) -> usize {
        match (self, input) {
            (FieldCheck::Object { props, .. }, Value::Object(obj)) => obj
                .keys()
                .filter(|key| props.iter().any(|(k, _)| k == *key))
                .count(),
            _ => 0,
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

    fn closed(props: Value) -> Value {
        json!({"type": "object", "properties": props, "additionalProperties": false})
    }

    fn unknown(path: Vec<Seg>, field: &str, expected: &[&str]) -> UnknownField {
        UnknownField {
            path,
            field: field.to_owned(),
            expected: expected.iter().map(|k| (*k).to_owned()).collect(),
        }
    }

    #[test]
    fn checks_every_value_of_a_map() {
        // `labels: HashMap<String, Label>`
        let label = closed(json!({"color": {"type": "string"}}));
        let schema = closed(json!({"labels": {
            "type": "object", "additionalProperties": label}}));
        let check = FieldCheck::from_schema(&schema);
        assert_eq!(
            check.check(&json!({"labels": {"a": {"color": "red"}, "b": {"color": "x"}}})),
            Ok(())
        );
        assert_eq!(
            check.check(&json!({"labels": {"a": {"color": "red"}, "b": {"colour": "x"}}})),
            Err(unknown(
                vec![Seg::Key("labels".into()), Seg::Key("b".into())],
                "colour",
                &["color"]
            ))
        );
        // A map of scalars checks nothing.
        let scalars = closed(json!({"m": {"type": "object",
                                           "additionalProperties": {"type": "integer"}}}));
        assert_eq!(
            FieldCheck::from_schema(&scalars),
            FieldCheck::Object {
                props: vec![("m".into(), FieldCheck::Any)],
                closed: true
            }
        );
    }

    /// `enum Shape { Circle { r: f64 }, Square { side: f64 }, Unit }`, externally tagged, as
    /// schemars writes it.
    fn shape() -> Value {
        json!({"oneOf": [
            {"type": "string", "const": "Unit"},
            {"type": "object", "properties": {"Circle": closed(json!({"r": {"type": "number"}}))},
             "required": ["Circle"], "additionalProperties": false},
            {"type": "object", "properties": {"Square": closed(json!({"side": {"type": "number"}}))},
             "required": ["Square"], "additionalProperties": false}
        ]})
    }

    #[test]
    fn checks_the_branches_of_a_data_carrying_enum() {
        let schema =
            closed(json!({"shape": shape(), "shapes": {"type": "array", "items": shape()}}));
        let check = FieldCheck::from_schema(&schema);
        for valid in [
            json!({"shape": "Unit"}),
            json!({"shape": {"Circle": {"r": 1.0}}}),
            json!({"shape": {"Square": {"side": 2.0}}}),
            json!({"shapes": ["Unit", {"Square": {"side": 2.0}}]}),
            // Of no branch's kind: the deserializer's to refuse.
            json!({"shape": 3}),
        ] {
            assert_eq!(check.check(&valid), Ok(()), "{valid}");
        }
        // The branch naming the variant reports, not the first object branch.
        assert_eq!(
            check.check(&json!({"shape": {"Square": {"side": 2.0, "r": 1.0}}})),
            Err(unknown(
                vec![Seg::Key("shape".into()), Seg::Key("Square".into())],
                "r",
                &["side"]
            ))
        );
        assert_eq!(
            check.check(&json!({"shapes": ["Unit", {"Circle": {"r": 1.0, "side": 2.0}}]})),
            Err(unknown(
                vec![
                    Seg::Key("shapes".into()),
                    Seg::Index(1),
                    Seg::Key("Circle".into())
                ],
                "side",
                &["r"]
            ))
        );
        // No branch names the key: the first object branch reports.
        assert_eq!(
            check.check(&json!({"shape": {"Triangle": {}}})),
            Err(unknown(
                vec![Seg::Key("shape".into())],
                "Triangle",
                &["Circle"]
            ))
        );
    }

    #[test]
    fn an_internally_tagged_enum_reports_the_branch_with_most_known_keys() {
        let schema = closed(json!({"shape": {"oneOf": [
            closed(json!({"kind": {"type": "string", "const": "circle"}, "r": {"type": "number"}})),
            closed(json!({"kind": {"type": "string", "const": "square"}, "side": {"type": "number"}}))
        ]}}));
        let check = FieldCheck::from_schema(&schema);
        assert_eq!(
            check.check(&json!({"shape": {"kind": "square", "side": 1, "sides": 4}})),
            Err(unknown(
                vec![Seg::Key("shape".into())],
                "sides",
                &["kind", "side"]
            ))
        );
    }

    #[test]
    fn a_branch_that_accepts_anything_unchecked_turns_the_check_off() {
        let schema = closed(json!({"v": {"anyOf": [
            {"description": "anything"},
            closed(json!({"a": {"type": "string"}}))
        ]}}));
        assert_eq!(
            FieldCheck::from_schema(&schema),
            FieldCheck::Object {
                props: vec![("v".into(), FieldCheck::Any)],
                closed: true
            }
        );
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
