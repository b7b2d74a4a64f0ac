//! The keywords of a string, an array and an object: lengths and counts, `uniqueItems`, each item
//! against the schema of its position, `contains`, each field against its schema (an unknown one
//! refused), `propertyNames`, `required` and the dependencies.

use std::ops::ControlFlow;

use serde_json::{Map, Value};

use super::numbers::Num;
use super::{Sink, Step, Walker};
use crate::schema::meta::Draft;
use crate::texts;

impl<'s> Walker<'s> {
    /// The keywords of an array: its length (`minItems`, `maxItems`), `uniqueItems`, each
    /// item against the schema of its position ([`positions`]), then `contains`.
    pub(super) fn check_array<'v>(
        &self,
        s: &'s Map<String, Value>,
        items: &'v [Value],
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        check_item_count(s, items, at, sink);
        check_unique_items(s, items, at, sink);
        let (prefix, rest) = positions(s, self.draft);
        if self
            .check_items(prefix, rest, items, at, sink, depth)
            .is_break()
        {
            return;
        }
        if let Some(contains) = s.get("contains") {
            self.check_contains(s, contains, items, at, sink, depth);
        }
    }

    /// Each item in order against the schema of its position (`prefix`, then `rest`), up to
    /// the first position without one; more items than a closed tuple's positions (`rest` is
    /// `false`) is a problem of the array. `Break` when the sink filled up: the walk of this
    /// array ends there.
    fn check_items<'v>(
        &self,
        prefix: &'s [Value],
        rest: Option<&'s Value>,
        items: &'v [Value],
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) -> ControlFlow<()> {
        if rest == Some(&Value::Bool(false)) && items.len() > prefix.len() {
            sink.push(
                at,
                None,
                format!(
                    "expected at most {}, found {}",
                    items_of(prefix.len() as u64),
                    items.len()
                ),
            );
        }
        for (i, item) in items.iter().enumerate() {
            let Some(item_schema) = prefix.get(i).or(rest) else {
                break;
            };
            if item_schema == &Value::Bool(false) {
                break;
            }
            at.push(Step::Index(i as u32));
            self.check(item_schema, item, at, sink, depth + 1);
            at.pop();
            if sink.full() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// `contains`: how many items pass its schema, against `minContains` (1 when absent) and
    /// `maxContains`.
    fn check_contains<'v>(
        &self,
        s: &'s Map<String, Value>,
        contains: &'s Value,
        items: &'v [Value],
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        let matching = items
            .iter()
            .enumerate()
            .filter(|(i, item)| {
                at.push(Step::Index(*i as u32));
                let ok = self.passes(contains, item, at, depth + 1);
                at.pop();
                ok
            })
            .count() as u64;
        let min = count_keyword(s, "minContains").unwrap_or(1);
        if matching < min {
            let message = format!(
                "expected at least {} of the kind this array must contain, found {matching}",
                items_of(min)
            );
            sink.push(at, None, message);
        }
        if let Some(max) = count_keyword(s, "maxContains")
            && matching > max
        {
            let message = format!(
                "expected at most {} of the kind this array may contain, found {matching}",
                items_of(max)
            );
            sink.push(at, None, message);
        }
    }

    /// The keywords of an object, `v` being the object `obj` (for the keywords that apply a
    /// schema to the whole object): each field against its schema, an unknown one refused
    /// ([`FieldRules`]); `propertyNames`; the fields it lacks (`required`, then those its
    /// fields require: `dependentRequired`, `dependencies`); `dependentSchemas`; its number
    /// of fields (`minProperties`, `maxProperties`).
    pub(super) fn check_object<'v>(
        &self,
        s: &'s Map<String, Value>,
        v: &'v Value,
        obj: &'v Map<String, Value>,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        if self.check_fields(s, obj, at, sink, depth).is_break() {
            return;
        }
        if let Some(names) = s.get("propertyNames") {
            self.check_property_names(names, obj, at, sink, depth);
        }
        check_required(s, obj, at, sink);
        self.check_dependencies(s, v, obj, at, sink, depth);
        self.check_dependent_schemas(s, v, obj, at, sink, depth);
        check_field_count(s, obj, at, sink);
    }

    /// Each field of `obj`, in the input's order, against the schema [`FieldRules`] gives it;
    /// an unknown field is a problem of the object at the field's key. `Break` when the sink
    /// filled up: the walk of this object ends there.
    fn check_fields<'v>(
        &self,
        s: &'s Map<String, Value>,
        obj: &'v Map<String, Value>,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) -> ControlFlow<()> {
        let rules = FieldRules::of(s);
        for (i, (key, value)) in obj.iter().enumerate() {
            let schema = match rules.schema_of(key) {
                FieldSchema::Checked(schema) => schema,
                FieldSchema::Unknown => {
                    let expected = rules.declared_names();
                    sink.push(at, Some(i as u32), texts::unknown_field(key, &expected));
                    continue;
                }
                FieldSchema::Unchecked => continue,
            };
            at.push(Step::Key(i as u32, key));
            self.check(schema, value, at, sink, depth + 1);
            at.pop();
            if sink.full() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// `propertyNames`: each field name of `obj`, as a string, must pass `names`; one that does
    /// not is a problem of the object at the name's key.
    fn check_property_names(
        &self,
        names: &'s Value,
        obj: &Map<String, Value>,
        at: &[Step<'_>],
        sink: &mut Sink,
        depth: usize,
    ) {
        for (i, key) in obj.keys().enumerate() {
            let name = Value::String(key.clone());
            if !self.passes(names, &name, &mut Vec::new(), depth + 1) {
                let message = format!(
                    "the field name `{}` is not allowed here",
                    texts::quoted(key)
                );
                sink.push(at, Some(i as u32), message);
            }
        }
    }

    /// `dependentRequired` and `dependencies`: for each field `obj` has, the fields it then
    /// requires (each one missing is a problem, after the object's keys) or the schema the
    /// object `v` must then match.
    fn check_dependencies<'v>(
        &self,
        s: &'s Map<String, Value>,
        v: &'v Value,
        obj: &'v Map<String, Value>,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        let missing_at = Some(obj.len() as u32);
        for key in ["dependentRequired", "dependencies"] {
            let Some(Value::Object(deps)) = s.get(key) else {
                continue;
            };
            for (present, needs) in deps {
                if !obj.contains_key(present) {
                    continue;
                }
                match needs {
                    Value::Array(names) => {
                        for r in names.iter().filter_map(Value::as_str) {
                            if !obj.contains_key(r) {
                                let message = format!(
                                    "missing field `{r}`, required when `{present}` is given"
                                );
                                sink.push(at, missing_at, message);
                            }
                        }
                    }
                    schema => self.check(schema, v, at, sink, depth + 1),
                }
            }
        }
    }

    /// `dependentSchemas`: for each field `obj` has, the schema the object `v` must then match.
    fn check_dependent_schemas<'v>(
        &self,
        s: &'s Map<String, Value>,
        v: &'v Value,
        obj: &'v Map<String, Value>,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        if let Some(Value::Object(deps)) = s.get("dependentSchemas") {
            for (present, schema) in deps {
                if obj.contains_key(present) {
                    self.check(schema, v, at, sink, depth + 1);
                }
            }
        }
    }
}

/// The keywords that give each field of an object the schema it is walked against.
struct FieldRules<'s> {
    /// `properties`: a declared field's schema.
    declared: Option<&'s Map<String, Value>>,
    /// Whether `patternProperties` has a pattern: its regular expressions are not evaluated
    /// here, so an undeclared field is then not unknown (and not walked).
    patterns: bool,
    /// `additionalProperties`: an undeclared field's schema (`false`: it is unknown).
    additional: Option<&'s Value>,
}

/// What [`FieldRules`] say of one field.
enum FieldSchema<'s> {
    /// The field is walked against this schema.
    Checked(&'s Value),
    /// The field is unknown (`additionalProperties: false`).
    Unknown,
    /// The field is not walked: a `patternProperties` pattern may cover it (not evaluated
    /// here), or nothing constrains it.
    Unchecked,
}

impl<'s> FieldRules<'s> {
    /// The rules of the object schema `s`.
    fn of(s: &'s Map<String, Value>) -> FieldRules<'s> {
        FieldRules {
            declared: s.get("properties").and_then(Value::as_object),
            patterns: s
                .get("patternProperties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty()),
            additional: s.get("additionalProperties"),
        }
    }

    /// The schema of the field `key`: its `properties` entry; else, unless a pattern may
    /// cover it, `additionalProperties`.
    fn schema_of(&self, key: &str) -> FieldSchema<'s> {
        match self.declared.and_then(|p| p.get(key)) {
            Some(schema) => FieldSchema::Checked(schema),
            // Not evaluated here (a regular expression); the key is not unknown.
            None if self.patterns => FieldSchema::Unchecked,
            None => match self.additional {
                Some(Value::Bool(false)) => FieldSchema::Unknown,
                Some(schema @ Value::Object(_)) => FieldSchema::Checked(schema),
                _ => FieldSchema::Unchecked,
            },
        }
    }

    /// The declared fields' names, for an unknown field's problem.
    fn declared_names(&self) -> Vec<&'s str> {
        self.declared
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// `required`: each field `obj` lacks, in the schema's order, a problem after the object's
/// keys.
fn check_required(
    s: &Map<String, Value>,
    obj: &Map<String, Value>,
    at: &[Step<'_>],
    sink: &mut Sink,
) {
    let Some(Value::Array(required)) = s.get("required") else {
        return;
    };
    for r in required.iter().filter_map(Value::as_str) {
        if !obj.contains_key(r) {
            sink.push(at, Some(obj.len() as u32), format!("missing field `{r}`"));
        }
    }
}

/// `minProperties`, `maxProperties`: the number of fields.
fn check_field_count(
    s: &Map<String, Value>,
    obj: &Map<String, Value>,
    at: &[Step<'_>],
    sink: &mut Sink,
) {
    let len = obj.len() as u64;
    if let Some(min) = count_keyword(s, "minProperties")
        && len < min
    {
        let message = format!("expected at least {}, found {len}", fields_of(min));
        sink.push(at, None, message);
    }
    if let Some(max) = count_keyword(s, "maxProperties")
        && len > max
    {
        let message = format!("expected at most {}, found {len}", fields_of(max));
        sink.push(at, None, message);
    }
}

pub(super) fn check_string(s: &Map<String, Value>, text: &str, at: &[Step<'_>], sink: &mut Sink) {
    let count = |key: &str| s.get(key).and_then(as_count);
    let (min, max) = (count("minLength"), count("maxLength"));
    if min.is_none() && max.is_none() {
        return;
    }
    let len = text.chars().count() as u64;
    if let Some(min) = min
        && len < min
    {
        sink.push(
            at,
            None,
            format!("expected at least {}, found {len}", chars_of(min)),
        );
    }
    if let Some(max) = max
        && len > max
    {
        sink.push(
            at,
            None,
            format!("expected at most {}, found {len}", chars_of(max)),
        );
    }
}

/// `minItems`, `maxItems`: the number of items.
fn check_item_count(s: &Map<String, Value>, items: &[Value], at: &[Step<'_>], sink: &mut Sink) {
    let len = items.len() as u64;
    if let Some(min) = count_keyword(s, "minItems")
        && len < min
    {
        sink.push(
            at,
            None,
            format!("expected at least {}, found {len}", items_of(min)),
        );
    }
    if let Some(max) = count_keyword(s, "maxItems")
        && len > max
    {
        sink.push(
            at,
            None,
            format!("expected at most {}, found {len}", items_of(max)),
        );
    }
}

/// `uniqueItems: true`: the first two equal items are the problem.
fn check_unique_items(s: &Map<String, Value>, items: &[Value], at: &[Step<'_>], sink: &mut Sink) {
    if s.get("uniqueItems") == Some(&Value::Bool(true))
        && let Some((i, j)) = first_repeat(items)
    {
        sink.push(
            at,
            None,
            format!("expected unique items, but items {i} and {j} are equal"),
        );
    }
}

/// The schemas of an array's positions: a tuple's, one per position, then the schema of every
/// position after them (`None`: any value). `prefixItems` then `items` in 2020-12; before it,
/// `items` as an array then `additionalItems` (or `items` as one schema for every position).
fn positions(s: &Map<String, Value>, draft: Draft) -> (&[Value], Option<&Value>) {
    match (s.get("prefixItems"), s.get("items")) {
        (Some(Value::Array(p)), rest) => (p, rest),
        (_, Some(Value::Array(p))) if !draft.has_prefix_items() => (p, s.get("additionalItems")),
        (_, rest) => (&[], rest),
    }
}

/// The value of the count keyword `key` of `s` (`minItems`, `maxContains`, …), when it is a
/// non-negative integer ([`as_count`]).
fn count_keyword(s: &Map<String, Value>, key: &str) -> Option<u64> {
    s.get(key).and_then(as_count)
}

/// A non-negative integer keyword's value (`minLength: 2`, also written `2.0`).
fn as_count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0)
            .map(|f| f as u64)
    })
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn items_of(n: u64) -> String {
    plural(n, "item", "items")
}

fn chars_of(n: u64) -> String {
    plural(n, "character", "characters")
}

fn fields_of(n: u64) -> String {
    plural(n, "field", "fields")
}

/// The first pair of equal items `(i, j)`, `i < j` (JSON equality: `1` equals `1.0`, key order
/// does not matter).
fn first_repeat(items: &[Value]) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        if let Some(i) = seen.insert(canonical_text(item), j) {
            return Some((i, j));
        }
    }
    None
}

/// A text equal for JSON-equal values: object keys sorted, integral numbers as integers.
fn canonical_text(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, String)> =
                map.iter().map(|(k, v)| (k, canonical_text(v))).collect();
            crate::base::sort::sort_by(&mut entries, |a, b| a.cmp(b));
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => {
            let body: Vec<String> = items.iter().map(canonical_text).collect();
            format!("[{}]", body.join(","))
        }
        Value::Number(_) => match Num::from_json(v) {
            Some(n) => n.to_string(),
            None => v.to_string(),
        },
        other => other.to_string(),
    }
}
