//! Why an input does not match a tool's schema: the path of the first mismatch, in the input's
//! own order, and what was expected there.
//!
//! For a `#[tool]` (or a [`ToolDef`](crate::ToolDef)), acceptance is the argument type's to
//! decide (plain serde deserialization), and this walk runs only once deserialization has
//! failed, to tell the model *where* and *what*. A wrapped [`ToolCaller`](crate::ToolCaller)
//! has no Rust argument type: for its tools this walk is the validator, run on every call
//! against the schema the caller gave. It checks
//! what serde enforces structurally (JSON kinds, integer ranges from schemars' `format`,
//! `minimum`/`maximum`, enum values, required properties, tuple lengths) against the raw
//! schemars schema of the argument type. It is one generic function for every tool, so no
//! tool compiles a second, path-aware deserializer (which cost about a quarter of a tool's
//! generated code). When the walk finds nothing (a custom `Deserialize`, a string format the
//! type parses itself), the caller falls back to serde's own message without a path.

use serde_json::{Map, Value};

use super::check::{Seg, render_path};
use crate::content::kind_of;

/// The first mismatch: where (`options.filters[2]`, empty at the top level) and what, written
/// for the model (`expected an integer from 0 to 4294967295, found the string "ten"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// Walks `input` against `schema` (whose `$ref`s point into its own `$defs`).
pub(crate) fn explain(schema: &Value, input: &Value) -> Option<Mismatch> {
    let walker = Walker { root: schema };
    walker
        .check(schema, input, 0)
        .err()
        .map(|(mut path, message)| {
            path.reverse();
            Mismatch {
                path: render_path(&path),
                message,
            }
        })
}

/// A mismatch while walking: the path in reverse (innermost first) and the message.
type Found = (Vec<Seg>, String);

struct Walker<'s> {
    root: &'s Value,
}

const MAX_DEPTH: usize = 64;

impl<'s> Walker<'s> {
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let name = reference
            .strip_prefix("#/$defs/")
            .or_else(|| reference.strip_prefix("#/definitions/"))?;
        self.root
            .get("$defs")
            .or_else(|| self.root.get("definitions"))?
            .get(name)
    }

    fn check(&self, schema: &'s Value, v: &Value, depth: usize) -> Result<(), Found> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        let Value::Object(s) = schema else {
            return match schema {
                Value::Bool(false) => Err(here("no value is allowed here".into())),
                _ => Ok(()),
            };
        };
        if let Some(Value::String(r)) = s.get("$ref")
            && let Some(target) = self.resolve(r)
        {
            self.check(target, v, depth + 1)?;
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            for branch in all {
                self.check(branch, v, depth + 1)?;
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = s.get(key) {
                self.check_alternatives(branches, v, depth)?;
            }
        }
        if let Some(Value::Array(allowed)) = s.get("enum")
            && !allowed.contains(v)
        {
            return Err(here(format!(
                "expected one of {}, found {}",
                list_values(allowed),
                found(v)
            )));
        }
        if let Some(c) = s.get("const")
            && c != v
        {
            return Err(here(format!("expected {}, found {}", show(c), found(v))));
        }
        if let Some(types) = s.get("type") {
            let allowed: Vec<&str> = match types {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !allowed.is_empty() && !allowed.iter().any(|t| is_kind(t, v)) {
                let expected: Vec<String> = allowed.iter().map(|t| describe(t, s)).collect();
                return Err(here(format!(
                    "expected {}, found {}",
                    expected.join(" or "),
                    found(v)
                )));
            }
        }
        match v {
            Value::Number(_) => self.check_number(s, v),
            Value::Array(items) => self.check_array(s, items, depth),
            Value::Object(obj) => self.check_object(s, obj, depth),
            _ => Ok(()),
        }
    }

    fn check_alternatives(
        &self,
        branches: &'s [Value],
        v: &Value,
        depth: usize,
    ) -> Result<(), Found> {
        if branches.is_empty() {
            return Ok(());
        }
        // A unit enum whose variants are documented: one `const` per branch.
        if branches.iter().all(|b| b.get("const").is_some()) {
            let values: Vec<Value> = branches
                .iter()
                .filter_map(|b| b.get("const").cloned())
                .collect();
            if values.contains(v) {
                return Ok(());
            }
            return Err(here(format!(
                "expected one of {}, found {}",
                list_values(&values),
                found(v)
            )));
        }
        let mut errors = Vec::new();
        for branch in branches {
            match self.check(branch, v, depth + 1) {
                Ok(()) => return Ok(()),
                Err(e) => errors.push((branch, e)),
            }
        }
        // `Option<T>`: T's own mismatch says more than "not null".
        let non_null: Vec<&Found> = errors
            .iter()
            .filter(|(b, _)| b.get("type").and_then(Value::as_str) != Some("null"))
            .map(|(_, e)| e)
            .collect();
        if non_null.len() == 1 && !v.is_null() {
            return Err(non_null[0].clone());
        }
        Err(here(format!(
            "{} does not match any of the {} allowed shapes",
            found(v),
            branches.len()
        )))
    }

    fn check_number(&self, s: &Map<String, Value>, v: &Value) -> Result<(), Found> {
        let (min, max) = bounds(s);
        let Some(value) = Num::from_json(v) else {
            return Ok(());
        };
        let out_of_range =
            min.is_some_and(|m| value.less_than(m)) || max.is_some_and(|m| m.less_than(value));
        if out_of_range {
            return Err(here(format!(
                "expected {}, found {}",
                describe(s.get("type").and_then(Value::as_str).unwrap_or("number"), s),
                found(v)
            )));
        }
        Ok(())
    }

    fn check_array(
        &self,
        s: &'s Map<String, Value>,
        items: &[Value],
        depth: usize,
    ) -> Result<(), Found> {
        let count = |key: &str| s.get(key).and_then(Value::as_u64);
        if let Some(min) = count("minItems")
            && (items.len() as u64) < min
        {
            return Err(here(format!(
                "expected at least {min} item{}, found {}",
                if min == 1 { "" } else { "s" },
                items.len()
            )));
        }
        if let Some(max) = count("maxItems")
            && (items.len() as u64) > max
        {
            return Err(here(format!(
                "expected at most {max} item{}, found {}",
                if max == 1 { "" } else { "s" },
                items.len()
            )));
        }
        let prefix: &[Value] = match s.get("prefixItems") {
            Some(Value::Array(p)) => p,
            _ => &[],
        };
        for (i, item) in items.iter().enumerate() {
            let item_schema = match prefix.get(i) {
                Some(p) => p,
                None => match s.get("items") {
                    Some(schema) => schema,
                    None => continue,
                },
            };
            self.check(item_schema, item, depth + 1).map_err(|mut e| {
                e.0.push(Seg::Index(i));
                e
            })?;
        }
        Ok(())
    }

    fn check_object(
        &self,
        s: &'s Map<String, Value>,
        obj: &Map<String, Value>,
        depth: usize,
    ) -> Result<(), Found> {
        let props = s.get("properties").and_then(Value::as_object);
        for (key, value) in obj {
            let schema = props
                .and_then(|p| p.get(key))
                .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()));
            if let Some(schema) = schema {
                self.check(schema, value, depth + 1).map_err(|mut e| {
                    e.0.push(Seg::Key(key.clone()));
                    e
                })?;
            }
        }
        if let Some(Value::Array(required)) = s.get("required") {
            for r in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    return Err(here(format!("missing field `{r}`")));
                }
            }
        }
        Ok(())
    }
}

fn here(message: String) -> Found {
    (Vec::new(), message)
}

/// Whether `v` is of the JSON Schema type `t`. An integer must be written as one (`2`, not
/// `2.0`), as serde_json deserializes integers.
fn is_kind(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        _ => true,
    }
}

/// A bound or a value: integers compared exactly (an `i64` bound is not rounded through `f64`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn from_json(v: &Value) -> Option<Num> {
        match (v.as_i64(), v.as_u64(), v.as_f64()) {
            (Some(i), _, _) => Some(Num::Int(i128::from(i))),
            (_, Some(u), _) => Some(Num::Int(i128::from(u))),
            (_, _, Some(f)) => Some(Num::Float(f)),
            _ => None,
        }
    }

    fn less_than(self, other: Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a < b,
            (a, b) => a.as_f64() < b.as_f64(),
        }
    }

    fn max(self, other: Num) -> Num {
        if self.less_than(other) { other } else { self }
    }

    fn min(self, other: Num) -> Num {
        if other.less_than(self) { other } else { self }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::Float(x) if x.fract() == 0.0 && x.abs() < 1e15 => write!(f, "{}", *x as i64),
            Num::Float(x) => write!(f, "{x}"),
        }
    }
}

/// The range of a number schema: `minimum`/`maximum`, narrowed by schemars' integer `format`.
fn bounds(s: &Map<String, Value>) -> (Option<Num>, Option<Num>) {
    let int = |lo: i128, hi: i128| Some((Num::Int(lo), Num::Int(hi)));
    let format_range = match s.get("format").and_then(Value::as_str) {
        Some("uint8") => int(0, u8::MAX.into()),
        Some("uint16") => int(0, u16::MAX.into()),
        Some("uint32") => int(0, u32::MAX.into()),
        Some("uint64") | Some("uint") => int(0, u64::MAX.into()),
        Some("int8") => int(i8::MIN.into(), i8::MAX.into()),
        Some("int16") => int(i16::MIN.into(), i16::MAX.into()),
        Some("int32") => int(i32::MIN.into(), i32::MAX.into()),
        Some("int64") | Some("int") => int(i64::MIN.into(), i64::MAX.into()),
        _ => None,
    };
    let get = |k: &str| s.get(k).and_then(Num::from_json);
    let mut min = get("minimum");
    let mut max = get("maximum");
    if let Some((lo, hi)) = format_range {
        min = Some(min.map_or(lo, |m| m.max(lo)));
        max = Some(max.map_or(hi, |m| m.min(hi)));
    }
    (min, max)
}

/// What a type means for the model: `a string`, `an integer from 0 to 255`.
fn describe(t: &str, s: &Map<String, Value>) -> String {
    match t {
        "integer" | "number" => {
            let noun = if t == "integer" {
                "an integer"
            } else {
                "a number"
            };
            // No JSON integer serde_json reads as one is above u64::MAX: that bound says nothing.
            let (lo, hi) = bounds(s);
            let hi = hi.filter(|h| *h != Num::Int(u64::MAX.into()));
            match (lo, hi) {
                (Some(lo), Some(hi)) => format!("{noun} from {lo} to {hi}"),
                (Some(lo), None) => format!("{noun} ≥ {lo}"),
                (None, Some(hi)) => format!("{noun} ≤ {hi}"),
                (None, None) => noun.to_owned(),
            }
        }
        "string" => "a string".into(),
        "boolean" => "true or false".into(),
        "array" => "an array".into(),
        "object" => "an object".into(),
        "null" => "null".into(),
        other => format!("a value of type `{other}`"),
    }
}

/// An allowed value, for the model: strings in backticks, anything else as JSON.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`{s}`"),
        other => other.to_string(),
    }
}

fn list_values(values: &[Value]) -> String {
    let shown: Vec<String> = values.iter().filter(|v| !v.is_null()).map(show).collect();
    let mut text = shown.join(", ");
    if values.iter().any(Value::is_null) {
        text.push_str(" (or null)");
    }
    text
}

/// The value found, for the model: its kind, and the value itself when short.
fn found(v: &Value) -> String {
    let kind = kind_of(v);
    match v {
        Value::Array(_) | Value::Object(_) => format!("an {kind}"),
        Value::Null => "null".into(),
        other => {
            let text = other.to_string();
            if text.chars().count() > 40 {
                let cut: String = text.chars().take(40).collect();
                format!("the {kind} {cut}…")
            } else {
                format!("the {kind} {text}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(schema: &Value, input: Value) -> Option<(String, String)> {
        explain(schema, &input).map(|m| (m.path, m.message))
    }

    fn some(path: &str, message: &str) -> Option<(String, String)> {
        Some((path.to_owned(), message.to_owned()))
    }

    #[test]
    fn names_the_first_mismatch_in_input_order() {
        let schema = json!({
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "amount_cents": {"type": "integer", "format": "uint64", "minimum": 0},
                "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", null]},
                "evidence": {"type": "array", "items": {"type": "string"}},
                "small": {"type": "integer", "format": "uint8", "minimum": 0}
            },
            "required": ["order_id", "amount_cents"]
        });
        assert_eq!(
            at(&schema, json!({"order_id": "o_1", "amount_cents": "ten"})),
            some(
                "amount_cents",
                "expected an integer ≥ 0, found the string \"ten\""
            )
        );
        assert_eq!(
            at(&schema, json!({"amount_cents": -1, "order_id": 5})),
            some(
                "amount_cents",
                "expected an integer ≥ 0, found the number -1"
            )
        );
        assert_eq!(
            at(&schema, json!({"order_id": "o_1", "amount_cents": 1.5})),
            some(
                "amount_cents",
                "expected an integer ≥ 0, found the number 1.5"
            )
        );
        assert_eq!(
            at(&schema, json!({"order_id": "o_1"})),
            some("", "missing field `amount_cents`")
        );
        assert_eq!(
            at(
                &schema,
                json!({"order_id": "o_1", "amount_cents": 1, "unit": "Celsius"})
            ),
            some(
                "unit",
                "expected one of `celsius`, `fahrenheit` (or null), found the string \"Celsius\""
            )
        );
        assert_eq!(
            at(
                &schema,
                json!({"order_id": "o_1", "amount_cents": 1, "evidence": ["a", 7]})
            ),
            some("evidence[1]", "expected a string, found the number 7")
        );
        assert_eq!(
            at(
                &schema,
                json!({"order_id": "o_1", "amount_cents": 1, "small": 256})
            ),
            some(
                "small",
                "expected an integer from 0 to 255, found the number 256"
            )
        );
        assert_eq!(
            at(
                &schema,
                json!({"order_id": "o_1", "amount_cents": 1, "unit": null})
            ),
            None
        );
    }

    #[test]
    fn follows_refs_options_and_documented_enums() {
        let schema = json!({
            "type": "object",
            "properties": {
                "node": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
                "pace": {"oneOf": [
                    {"const": "relaxed", "type": "string", "description": "One a day."},
                    {"const": "packed", "type": "string"}
                ]}
            },
            "$defs": {"Node": {
                "type": "object",
                "properties": {"value": {"type": "boolean"}, "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                "required": ["value"]
            }}
        });
        assert_eq!(
            at(
                &schema,
                json!({"node": {"value": true, "next": {"value": "yes"}}})
            ),
            some(
                "node.next.value",
                "expected true or false, found the string \"yes\""
            )
        );
        assert_eq!(
            at(&schema, json!({"node": {"next": null}})),
            some("node", "missing field `value`")
        );
        assert_eq!(
            at(&schema, json!({"pace": "lazy"})),
            some(
                "pace",
                "expected one of `relaxed`, `packed`, found the string \"lazy\""
            )
        );
        assert_eq!(at(&schema, json!({"pace": "packed", "node": null})), None);
    }

    #[test]
    fn checks_tuples_and_maps_and_cuts_long_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
                "labels": {"type": "object", "additionalProperties": {"type": "integer"}}
            }
        });
        assert_eq!(
            at(&schema, json!({"pair": ["a"]})),
            some("pair", "expected at least 2 items, found 1")
        );
        assert_eq!(
            at(&schema, json!({"pair": ["a", "b"]})),
            some("pair[1]", "expected an integer, found the string \"b\"")
        );
        assert_eq!(
            at(&schema, json!({"labels": {"x": 1, "y": true}})),
            some("labels.y", "expected an integer, found the boolean true")
        );
        let long = "z".repeat(100);
        assert_eq!(
            at(&schema, json!({"labels": {"x": long}})),
            some(
                "labels.x",
                &format!(
                    "expected an integer, found the string \"{}…",
                    "z".repeat(39)
                )
            )
        );
    }
}
