//! What is wrong with an input, against a tool's schema: every problem found, each with its
//! path and what was expected, in a stable order ([`problems`]).
//!
//! For a `#[tool]` (or a [`ToolDef`](crate::dispatch::ToolDef)), acceptance is the argument type's
//! to decide (plain serde deserialization), and this walk runs only once that, or the unknown-field
//! check, has failed, to tell the model *where* and *what*: against the tool's *validation schema*,
//! the raw schemars schema with the closed objects of the canonical form (`super::closed_form`:
//! `additionalProperties: false`, the properties of a `#[serde(flatten)]` enum listed), so an
//! unknown field and a wrong type are found in one pass. The raw form keeps schemars' integer
//! `format`s, which give integer ranges. It is one generic function for every tool, so no tool
//! compiles a second, path-aware deserializer. When the walk finds nothing (a custom `Deserialize`,
//! a string format the type parses itself), the caller falls back to serde's own message without a
//! path.
//!
//! A wrapped [`ToolCaller`](crate::dispatch::ToolCaller) has no Rust argument type: for its tools
//! this walk is the validator, run on every call against the schema the caller gave (checked at
//! `build()` by `super::meta`). It applies JSON Schema's validation keywords (drafts 2020-12,
//! 2019-09, 07, 06 and 04, by the schema's `$schema`): `type`, `enum`, `const`, `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (a number, or draft 04's boolean),
//! `multipleOf`, `minLength`, `maxLength`, `minItems`, `maxItems`, `uniqueItems`, `prefixItems`,
//! `items` (a schema, or before 2020-12 an array with `additionalItems`), `contains` with
//! `minContains`/`maxContains`, `properties`, `additionalProperties` (an unknown field where it is
//! `false`), `required`, `dependentRequired`, `dependentSchemas`, `dependencies`, `minProperties`,
//! `maxProperties`, `propertyNames`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `$ref`
//! (within the schema; before 2019-09 its siblings are ignored, as the draft says). Not applied
//! here: `pattern` and `patternProperties` (regular expressions: an object with `patternProperties`
//! refuses no key as unknown), `format` (an annotation in 2020-12),
//! `unevaluatedProperties`/`unevaluatedItems` and `$dynamicRef`; with the `full-validation` feature
//! a real JSON Schema validator (`boon`) applies them after this walk (`super::full`).
//!
//! # The order of the problems
//!
//! Problems are listed in the input's order, depth first: a value's own mismatch (its type, an
//! enum value, a bound) before anything inside it; an object's keys in the order the input gives
//! them (an unknown key, or the problems inside the key's value), then the fields it lacks (in
//! the schema's `required` order); an array's items in order. A problem found twice (through two
//! subschemas that say the same) is listed once. Of alternatives (`anyOf`, `oneOf`) that all
//! fail, the problems of one are listed: the only one that is not `null`; else, for an object,
//! the one whose `const` properties match the input's values the most, then that declares the
//! most of the input's keys (an internally or externally tagged enum's variant; the first on a
//! tie); else one problem saying no alternative matched. The walk keeps at most
//! [`MAX_COLLECTED`] problems (an input with more is then reported as having at least that
//! many), and takes at most [`MAX_STEPS`] steps (a schema of many nested alternatives could take
//! more; the report then says it is incomplete).

use std::cell::Cell;
use std::ops::ControlFlow;

use serde_json::{Map, Value};

use super::meta::Draft;
use super::walk::{OBJECT, kinds, resolve_ref};
use crate::content::de::kind_of;
use crate::texts::{self, MAX_LISTED_PROBLEMS, MAX_QUOTED_CHARS, Problem, Problems};

/// The most problems one walk keeps.
pub(crate) const MAX_COLLECTED: usize = 1000;

/// The most subschema visits one walk makes.
pub(crate) const MAX_STEPS: usize = 1_000_000;

/// What the walk found: every problem (the first [`MAX_LISTED_PROBLEMS`] of them listed, in the
/// documented order), and whether the walk ran out of steps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Report {
    /// `more_at_least` when [`MAX_COLLECTED`] problems were found and the walk stopped.
    pub(crate) problems: Problems,
    /// [`MAX_STEPS`] ran out before the walk ended: an input without a problem found may still
    /// be invalid.
    pub(crate) incomplete: bool,
}

/// How the walk reads an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Integers {
    /// As JSON Schema does: a number with no fraction (`2.0` is an integer), for a wrapped
    /// caller's schema.
    JsonSchema,
    /// As serde_json does: written without a fraction (`2.0` is not), for explaining why a
    /// tool's argument type refused an input.
    Serde,
}

/// Walks `input` against `schema` (whose `$ref`s point within it) and reports every problem.
pub(crate) fn problems(schema: &Value, input: &Value, integers: Integers) -> Report {
    let walker = Walker {
        root: schema,
        draft: Draft::of(schema).unwrap_or_default(),
        integers,
        steps: Cell::new(MAX_STEPS),
    };
    let mut sink = Sink::new(MAX_COLLECTED);
    let mut at = Vec::new();
    walker.check(schema, input, &mut at, &mut sink, 0);
    let capped = sink.full();
    let mut hits = sink.hits;
    crate::base::sort::sort_by(&mut hits, |a, b| a.pos.cmp(&b.pos));
    let mut unique: Vec<Hit> = Vec::with_capacity(hits.len());
    for hit in hits {
        let seen = unique
            .iter()
            .rev()
            .take_while(|u| u.pos == hit.pos)
            .any(|u| u.path == hit.path && u.message == hit.message);
        if !seen {
            unique.push(hit);
        }
    }
    let more = unique.len().saturating_sub(MAX_LISTED_PROBLEMS);
    unique.truncate(MAX_LISTED_PROBLEMS);
    Report {
        problems: Problems {
            listed: unique
                .into_iter()
                .map(|h| Problem {
                    path: h.path,
                    message: h.message,
                })
                .collect(),
            more,
            more_at_least: capped,
        },
        incomplete: walker.steps.get() == 0,
    }
}

/// One step into the input: a key (its index in the object, its name) or an array index.
#[derive(Debug, Clone, Copy)]
enum Step<'v> {
    Key(u32, &'v str),
    Index(u32),
}

impl Step<'_> {
    fn pos(self) -> u32 {
        match self {
            Step::Key(i, _) | Step::Index(i) => i,
        }
    }
}

/// A problem while walking: its position (the indices of `at`, then one more for a key or a
/// missing field), its path as text and its message.
#[derive(Debug)]
struct Hit {
    pos: Vec<u32>,
    path: String,
    message: String,
}

/// Where the walk keeps what it finds; `cap` 1 for trying an alternative (stop at the first).
struct Sink {
    hits: Vec<Hit>,
    cap: usize,
}

impl Sink {
    fn new(cap: usize) -> Sink {
        Sink {
            hits: Vec::new(),
            cap,
        }
    }

    fn full(&self) -> bool {
        self.hits.len() >= self.cap
    }

    /// A problem of the value at `at` (`extra`: the index of a key or of a missing field of
    /// that value, when the problem is one).
    fn push(&mut self, at: &[Step<'_>], extra: Option<u32>, message: String) {
        if self.full() {
            return;
        }
        let mut pos: Vec<u32> = at.iter().map(|s| s.pos()).collect();
        pos.extend(extra);
        self.hits.push(Hit {
            pos,
            path: render(at),
            message,
        });
    }
}

/// `options.filters[2]`; empty at the top level.
fn render(at: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in at {
        match step {
            Step::Key(_, k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

struct Walker<'s> {
    root: &'s Value,
    draft: Draft,
    integers: Integers,
    steps: Cell<usize>,
}

const MAX_DEPTH: usize = 64;

/// Which alternatives must match: at least one (`anyOf`) or exactly one (`oneOf`).
#[derive(Clone, Copy, PartialEq)]
enum Alternatives {
    Any,
    One,
}

/// What the `const`s of a documented unit enum's alternatives decide about a value.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// The value is one of them (for `oneOf`, exactly one).
    Matches,
    /// The value is none of them: this problem.
    Fails(String),
    /// The constants do not decide: the alternatives are walked.
    Open,
}

/// A unit enum whose variants are documented, one `const` per alternative: `v` must be one
/// of the values (once, for `oneOf`). [`Verdict::Open`] when the alternatives are not all
/// constants, or when `v` equals several of a `oneOf`'s.
fn documented_enum(branches: &[Value], which: Alternatives, v: &Value) -> Verdict {
    if !branches.iter().all(|b| b.get("const").is_some()) {
        return Verdict::Open;
    }
    let values: Vec<Value> = branches
        .iter()
        .filter_map(|b| b.get("const").cloned())
        .collect();
    match values.iter().filter(|c| json_equal(c, v)).count() {
        0 => Verdict::Fails(format!(
            "expected one of {}, found {}",
            list_values(&values),
            found(v)
        )),
        1 => Verdict::Matches,
        _ if which == Alternatives::Any => Verdict::Matches,
        _ => Verdict::Open,
    }
}

impl<'s> Walker<'s> {
    /// Whether `v` matches `schema` (a walk that stops at the first problem).
    fn passes<'v>(
        &self,
        schema: &'s Value,
        v: &'v Value,
        at: &mut Vec<Step<'v>>,
        depth: usize,
    ) -> bool {
        let mut trial = Sink::new(1);
        self.check(schema, v, at, &mut trial, depth);
        trial.hits.is_empty()
    }

    /// Walks `v` against `schema`, every problem found going to `sink`: the schema's
    /// references, then the subschemas it applies to `v` in place, then `v`'s own value
    /// (`enum`, `const`, `type`), then the keywords of `v`'s kind. A mismatch of `v`'s own
    /// value ends the walk of this schema there: the keywords of its kind are not walked.
    fn check<'v>(
        &self,
        schema: &'s Value,
        v: &'v Value,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        if !self.take_step(depth, sink) {
            return;
        }
        let s = match schema {
            Value::Object(s) => s,
            Value::Bool(false) => return sink.push(at, None, "no value is allowed here".into()),
            _ => return,
        };
        if self.check_refs(s, v, at, sink, depth).is_break() {
            return;
        }
        self.check_in_place(s, v, at, sink, depth);
        if let Some(message) = self.value_mismatch(s, v) {
            return sink.push(at, None, message);
        }
        match v {
            Value::Number(_) => self.check_number(s, v, at, sink),
            Value::String(text) => check_string(s, text, at, sink),
            Value::Array(items) => self.check_array(s, items, at, sink, depth),
            Value::Object(obj) => self.check_object(s, v, obj, at, sink, depth),
            _ => {}
        }
    }

    /// Spends one of the walk's [`MAX_STEPS`] on a subschema visit: `false` (the visit does
    /// not happen) when none is left, when `depth` is past [`MAX_DEPTH`], or when `sink` holds
    /// all it may.
    fn take_step(&self, depth: usize, sink: &Sink) -> bool {
        let left = self.steps.get();
        if left == 0 || depth > MAX_DEPTH || sink.full() {
            return false;
        }
        self.steps.set(left - 1);
        true
    }

    /// `$ref` and `$dynamicRef`: `v` walked against each one's target (one that resolves
    /// nowhere in the schema is `super::meta`'s to refuse, not the walk's). `Break` when the
    /// draft then ignores the keywords beside the reference (before 2019-09).
    fn check_refs<'v>(
        &self,
        s: &'s Map<String, Value>,
        v: &'v Value,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) -> ControlFlow<()> {
        for key in ["$ref", "$dynamicRef"] {
            if let Some(Value::String(r)) = s.get(key)
                && let Some(target) = resolve_ref(self.root, r)
            {
                self.check(target, v, at, sink, depth + 1);
                if self.draft.ref_overrides_siblings() {
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// The keywords that apply subschemas to `v` itself: `allOf` (each of them), `anyOf` and
    /// `oneOf` ([`Self::alternatives`]), `not` (a problem when `v` passes it), `if` (then
    /// `then` or `else`, by whether `v` passes it).
    fn check_in_place<'v>(
        &self,
        s: &'s Map<String, Value>,
        v: &'v Value,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        if let Some(Value::Array(all)) = s.get("allOf") {
            for branch in all {
                self.check(branch, v, at, sink, depth + 1);
            }
        }
        if let Some(Value::Array(branches)) = s.get("anyOf") {
            self.alternatives(branches, Alternatives::Any, v, at, sink, depth);
        }
        if let Some(Value::Array(branches)) = s.get("oneOf") {
            self.alternatives(branches, Alternatives::One, v, at, sink, depth);
        }
        if let Some(not) = s.get("not")
            && self.passes(not, v, at, depth + 1)
        {
            sink.push(at, None, format!("{} is not allowed here", found(v)));
        }
        if let Some(cond) = s.get("if") {
            let branch = if self.passes(cond, v, at, depth + 1) {
                s.get("then")
            } else {
                s.get("else")
            };
            if let Some(branch) = branch {
                self.check(branch, v, at, sink, depth + 1);
            }
        }
    }

    /// What is wrong with `v`'s own value, if anything: the first of `enum` (`v` is none of
    /// its values), `const` (`v` is not its value) and `type` (`v` is of none of its types,
    /// an integer read as [`Integers`] says) that `v` fails.
    fn value_mismatch(&self, s: &Map<String, Value>, v: &Value) -> Option<String> {
        if let Some(Value::Array(allowed)) = s.get("enum")
            && !allowed.iter().any(|a| json_equal(a, v))
        {
            return Some(format!(
                "expected one of {}, found {}",
                list_values(allowed),
                found(v)
            ));
        }
        if let Some(c) = s.get("const")
            && !json_equal(c, v)
        {
            return Some(format!("expected {}, found {}", show(c), found(v)));
        }
        let allowed: Vec<&str> = match s.get("type")? {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| is_kind(t, v, self.integers)) {
            let expected: Vec<String> =
                allowed.iter().map(|t| describe(t, s, self.draft)).collect();
            return Some(format!(
                "expected {}, found {}",
                expected.join(" or "),
                found(v)
            ));
        }
        None
    }

    /// `anyOf` (`which`: at least one alternative must match) or `oneOf` (exactly one):
    /// nothing when `v` matches as required, else one explanation: a documented unit enum's
    /// values, the alternatives `v` matches too many of, or why it matches none
    /// ([`Self::explain_no_match`]).
    fn alternatives<'v>(
        &self,
        branches: &'s [Value],
        which: Alternatives,
        v: &'v Value,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        if branches.is_empty() {
            return;
        }
        match documented_enum(branches, which, v) {
            Verdict::Matches => return,
            Verdict::Fails(message) => return sink.push(at, None, message),
            Verdict::Open => {}
        }
        match self.count_passing(branches, which, v, at, depth) {
            0 => self.explain_no_match(branches, v, at, sink, depth),
            1 => {}
            _ if which == Alternatives::Any => {}
            _ => {
                let message = format!(
                    "{} matches more than one of the {} allowed shapes",
                    found(v),
                    branches.len()
                );
                sink.push(at, None, message);
            }
        }
    }

    /// How many of the alternatives `v` passes, counted only as far as `which` needs: to the
    /// first for `anyOf`, to the second for `oneOf`.
    fn count_passing<'v>(
        &self,
        branches: &'s [Value],
        which: Alternatives,
        v: &'v Value,
        at: &mut Vec<Step<'v>>,
        depth: usize,
    ) -> usize {
        let mut passing = 0;
        for branch in branches {
            if self.passes(branch, v, at, depth + 1) {
                passing += 1;
                if which == Alternatives::Any || passing > 1 {
                    break;
                }
            }
        }
        passing
    }

    /// Why `v` matches none of the alternatives, in the module docs' order: a tag value none
    /// of them has, said at the tag; else the problems of the alternative `v` is closest to
    /// ([`Self::closest_alternative`]); else a field every alternative requires and `v` lacks;
    /// else that it matches none.
    fn explain_no_match<'v>(
        &self,
        branches: &'s [Value],
        v: &'v Value,
        at: &mut Vec<Step<'v>>,
        sink: &mut Sink,
        depth: usize,
    ) {
        // A tagged enum with a tag value no alternative has: say so at the tag.
        if let Value::Object(obj) = v
            && let Some((i, key, tags)) = self.unknown_tag(branches, obj)
        {
            at.push(Step::Key(i as u32, key));
            let message = format!(
                "expected one of {}, found {}",
                list_values(&tags),
                found(&obj[key])
            );
            sink.push(at, None, message);
            at.pop();
            return;
        }
        if let Some(branch) = self.closest_alternative(branches, v) {
            return self.check(branch, v, at, sink, depth + 1);
        }
        // A field every alternative requires (a tag) is missing: that is the problem.
        if let Value::Object(obj) = v
            && let Some(field) = self.missing_everywhere(branches, obj)
        {
            return sink.push(
                at,
                Some(obj.len() as u32),
                format!("missing field `{field}`"),
            );
        }
        let message = format!(
            "{} does not match any of the {} allowed shapes",
            found(v),
            branches.len()
        );
        sink.push(at, None, message);
    }

    /// The alternative whose problems explain `v`'s best: the only one that is not `null`
    /// (`Option<T>`: T's own problems say more than "not null"); else, for an object, the one
    /// it is [closest](Self::closest) to; `None` when neither applies.
    fn closest_alternative(&self, branches: &'s [Value], v: &Value) -> Option<&'s Value> {
        let non_null: Vec<&'s Value> = branches
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        match (non_null.as_slice(), v) {
            ([only], _) if !v.is_null() => Some(*only),
            (_, Value::Object(obj)) => self.closest(branches, obj),
            _ => None,
        }
    }

    /// The tag of a tagged enum, when `obj`'s value for it is none of the alternatives': the
    /// first key of `obj` that every object alternative gives a `const` (or a one-value
    /// `enum`), with its index in `obj` and the values the alternatives allow.
    fn unknown_tag<'v>(
        &self,
        branches: &'s [Value],
        obj: &'v Map<String, Value>,
    ) -> Option<(usize, &'v str, Vec<Value>)> {
        let objects: Vec<&Map<String, Value>> = branches
            .iter()
            .map(|b| self.target(b))
            .filter(|b| kinds(b) & OBJECT != 0)
            .filter_map(Value::as_object)
            .collect();
        if objects.is_empty() {
            return None;
        }
        obj.iter().enumerate().find_map(|(i, (key, value))| {
            let tags: Option<Vec<Value>> = objects
                .iter()
                .map(|b| {
                    let p = b.get("properties")?.get(key)?;
                    p.get("const").cloned().or_else(|| match p.get("enum") {
                        Some(Value::Array(one)) if one.len() == 1 => one.first().cloned(),
                        _ => None,
                    })
                })
                .collect();
            let tags = tags?;
            (!tags.iter().any(|t| json_equal(t, value))).then_some((i, key.as_str(), tags))
        })
    }

    /// A field every object alternative requires and `obj` lacks (the first in the first
    /// alternative's `required` order).
    fn missing_everywhere(
        &self,
        branches: &'s [Value],
        obj: &Map<String, Value>,
    ) -> Option<&'s str> {
        let required = |b: &'s Value| -> Vec<&'s str> {
            b.get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        };
        let objects: Vec<&'s Value> = branches
            .iter()
            .map(|b| self.target(b))
            .filter(|b| kinds(b) & OBJECT != 0)
            .collect();
        let first = objects.first()?;
        required(first).into_iter().find(|field| {
            !obj.contains_key(*field) && objects.iter().all(|b| required(b).contains(field))
        })
    }

    /// The alternative an object is closest to: the most of its `const` properties matching
    /// the object's values, then the most of the object's keys declared; the first on a tie;
    /// `None` when no object alternative matches a `const` or declares a key.
    fn closest(&self, branches: &'s [Value], obj: &Map<String, Value>) -> Option<&'s Value> {
        let mut best: Option<(&'s Value, (usize, usize))> = None;
        for branch in branches {
            let target = self.target(branch);
            if kinds(target) & OBJECT == 0 {
                continue;
            }
            let Some(Value::Object(props)) = target.get("properties") else {
                continue;
            };
            let tags = props
                .iter()
                .filter(|(k, p)| {
                    let value = obj.get(k.as_str());
                    let c = p.get("const").or_else(|| match p.get("enum") {
                        Some(Value::Array(one)) if one.len() == 1 => one.first(),
                        _ => None,
                    });
                    matches!((value, c), (Some(v), Some(c)) if json_equal(v, c))
                })
                .count();
            let declared = obj.keys().filter(|k| props.contains_key(*k)).count();
            let score = (tags, declared);
            if score > (0, 0) && best.is_none_or(|(_, b)| score > b) {
                best = Some((branch, score));
            }
        }
        best.map(|(b, _)| b)
    }

    /// A schema with its `$ref` followed (for looking at an alternative's properties).
    fn target(&self, schema: &'s Value) -> &'s Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => resolve_ref(self.root, r).unwrap_or(schema),
            None => schema,
        }
    }

    fn check_number(&self, s: &Map<String, Value>, v: &Value, at: &[Step<'_>], sink: &mut Sink) {
        let Some(value) = Num::from_json(v) else {
            return;
        };
        let range = Range::of(s, self.draft);
        if !range.contains(value) {
            let ty = s.get("type").and_then(Value::as_str).unwrap_or("number");
            let message = format!(
                "expected {}, found {}",
                describe(ty, s, self.draft),
                found(v)
            );
            return sink.push(at, None, message);
        }
        if let Some(m) = s.get("multipleOf").and_then(Num::from_json)
            && !value.is_multiple_of(m)
        {
            sink.push(
                at,
                None,
                format!("expected a multiple of {m}, found {}", found(v)),
            );
        }
    }

    /// The keywords of an array: its length (`minItems`, `maxItems`), `uniqueItems`, each
    /// item against the schema of its position ([`positions`]), then `contains`.
    fn check_array<'v>(
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
    fn check_object<'v>(
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

fn check_string(s: &Map<String, Value>, text: &str, at: &[Step<'_>], sink: &mut Sink) {
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

/// JSON equality as JSON Schema means it: numbers by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => match (Num::from_json(a), Num::from_json(b)) {
            (Some(x), Some(y)) => !x.less_than(y) && !y.less_than(x),
            _ => a == b,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_equal(a, b)))
        }
        _ => a == b,
    }
}

/// Whether `v` is of the JSON Schema type `t`; an integer as `integers` says.
fn is_kind(t: &str, v: &Value, integers: Integers) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "number" => v.is_number(),
        "integer" => {
            v.is_i64()
                || v.is_u64()
                || (integers == Integers::JsonSchema
                    && v.as_f64()
                        .is_some_and(|f| f.is_finite() && f.fract() == 0.0))
        }
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

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Whether `self / m` is an integer (exactly for integers; for other numbers within a
    /// relative 1e-9, so that `0.3` is a multiple of `0.1`).
    fn is_multiple_of(self, m: Num) -> bool {
        match (self, m) {
            (_, Num::Int(0)) => true,
            (Num::Int(a), Num::Int(b)) => a % b == 0,
            (a, b) => {
                let q = a.as_f64() / b.as_f64();
                q.is_finite() && (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
            }
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

/// The range of a number schema: `minimum`/`maximum` (narrowed by schemars' integer `format`)
/// and `exclusiveMinimum`/`exclusiveMaximum` (a number; draft 04's boolean makes the
/// `minimum`/`maximum` beside it exclusive).
#[derive(Debug, Clone, Copy, Default)]
struct Range {
    min: Option<(Num, bool)>,
    max: Option<(Num, bool)>,
}

impl Range {
    fn of(s: &Map<String, Value>, draft: Draft) -> Range {
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
        let flag = |k: &str| s.get(k) == Some(&Value::Bool(true));
        let old = draft == Draft::D4;
        let mut min = get("minimum").map(|m| (m, old && flag("exclusiveMinimum")));
        let mut max = get("maximum").map(|m| (m, old && flag("exclusiveMaximum")));
        if !old {
            if let Some(x) = get("exclusiveMinimum")
                && min.is_none_or(|(m, _)| !x.less_than(m))
            {
                min = Some((x, true));
            }
            if let Some(x) = get("exclusiveMaximum")
                && max.is_none_or(|(m, _)| !m.less_than(x))
            {
                max = Some((x, true));
            }
        }
        if let Some((lo, hi)) = format_range {
            min = Some(match min {
                Some((m, ex)) if !m.less_than(lo) => (m, ex),
                _ => (lo, false),
            });
            max = Some(match max {
                Some((m, ex)) if !hi.less_than(m) => (m, ex),
                _ => (hi, false),
            });
        }
        Range { min, max }
    }

    fn contains(&self, v: Num) -> bool {
        let above = |(m, ex): (Num, bool)| if ex { m.less_than(v) } else { !v.less_than(m) };
        let below = |(m, ex): (Num, bool)| if ex { v.less_than(m) } else { !m.less_than(v) };
        self.min.is_none_or(above) && self.max.is_none_or(below)
    }
}

/// What a type means for the model: `a string`, `an integer from 0 to 255`, `a number > 0`.
fn describe(t: &str, s: &Map<String, Value>, draft: Draft) -> String {
    match t {
        "integer" | "number" => {
            let noun = if t == "integer" {
                "an integer"
            } else {
                "a number"
            };
            // No JSON integer serde_json reads as one is above u64::MAX: that bound says nothing.
            let Range { min, max } = Range::of(s, draft);
            let max = max.filter(|(h, _)| *h != Num::Int(u64::MAX.into()));
            match (min, max) {
                (Some((lo, false)), Some((hi, false))) => format!("{noun} from {lo} to {hi}"),
                (Some((lo, lx)), Some((hi, hx))) => format!(
                    "{noun} {} {lo} and {} {hi}",
                    if lx { ">" } else { "≥" },
                    if hx { "<" } else { "≤" }
                ),
                (Some((lo, lx)), None) => format!("{noun} {} {lo}", if lx { ">" } else { "≥" }),
                (None, Some((hi, hx))) => format!("{noun} {} {hi}", if hx { "<" } else { "≤" }),
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

/// The value found, for the model: its kind, and the value itself as JSON, cut to
/// [`MAX_QUOTED_CHARS`] characters (a long string is not written out whole first).
pub(crate) fn found(v: &Value) -> String {
    let kind = kind_of(v);
    match v {
        Value::Array(_) | Value::Object(_) => format!("an {kind}"),
        Value::Null => "null".into(),
        Value::String(s) => {
            // The JSON text of the first characters is the start of the whole JSON text.
            let head = match s.char_indices().nth(MAX_QUOTED_CHARS) {
                Some((end, _)) => &s[..end],
                None => s,
            };
            let text = Value::String(head.to_owned()).to_string();
            format!("the {kind} {}", texts::quoted(&text))
        }
        other => format!("the {kind} {}", texts::quoted(&other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The problems of `input` as `(path, message)`, the count of the others after them.
    fn all(schema: &Value, input: Value) -> (Vec<(String, String)>, usize) {
        let report = problems(schema, &input, Integers::Serde);
        let listed = report
            .problems
            .listed
            .into_iter()
            .map(|p| (p.path, p.message))
            .collect();
        (listed, report.problems.more)
    }

    /// The first problem, when there is one.
    fn at(schema: &Value, input: Value) -> Option<(String, String)> {
        all(schema, input).0.into_iter().next()
    }

    fn some(path: &str, message: &str) -> Option<(String, String)> {
        Some((path.to_owned(), message.to_owned()))
    }

    fn pair(path: &str, message: &str) -> (String, String) {
        (path.to_owned(), message.to_owned())
    }

    #[test]
    fn names_each_mismatch_in_input_order() {
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
        // Both, in the input's order.
        assert_eq!(
            all(&schema, json!({"amount_cents": -1, "order_id": 5})),
            (
                vec![
                    pair(
                        "amount_cents",
                        "expected an integer ≥ 0, found the number -1"
                    ),
                    pair("order_id", "expected a string, found the number 5"),
                ],
                0
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
        // A value is quoted to 64 characters of its JSON text (the opening quote is one).
        let long = "z".repeat(100);
        assert_eq!(
            at(&schema, json!({"labels": {"x": long}})),
            some(
                "labels.x",
                &format!(
                    "expected an integer, found the string \"{}…",
                    "z".repeat(63)
                )
            )
        );
    }

    #[test]
    fn unknown_fields_and_mismatches_come_in_one_list_in_input_order() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "object", "properties": {"c": {"type": "string"}},
                      "required": ["c"], "additionalProperties": false}
            },
            "required": ["a", "b", "d"],
            "additionalProperties": false
        });
        assert_eq!(
            all(&schema, json!({"x": 1, "b": {"y": 2}, "a": "one"})),
            (
                vec![
                    pair("", "unknown field `x`, expected one of `a`, `b`"),
                    pair("b", "unknown field `y`, expected one of `c`"),
                    pair("b", "missing field `c`"),
                    pair("a", "expected an integer, found the string \"one\""),
                    pair("", "missing field `d`"),
                ],
                0
            )
        );
    }

    #[test]
    fn more_than_five_problems_are_counted() {
        let schema = json!({"type": "array", "items": {"type": "string"}});
        let (listed, more) = all(&schema, json!([1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(listed.len(), 5);
        assert_eq!(
            listed[4],
            pair("[4]", "expected a string, found the number 5")
        );
        assert_eq!(more, 2);
        // Past MAX_COLLECTED, the count is a lower bound.
        let many: Vec<u32> = (0..2000).collect();
        let report = problems(&schema, &json!(many), Integers::Serde);
        assert_eq!(report.problems.more, MAX_COLLECTED - MAX_LISTED_PROBLEMS);
        assert!(report.problems.more_at_least);
    }

    #[test]
    fn the_tagged_alternative_reports() {
        // `#[serde(tag = "kind")] enum Shape { Circle { r: f64 }, Square { side: f64 } }`.
        let shape = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"type": "string", "const": "circle"},
                                              "r": {"type": "number"}},
             "required": ["kind", "r"], "additionalProperties": false},
            {"type": "object", "properties": {"kind": {"type": "string", "const": "square"},
                                              "side": {"type": "number"}},
             "required": ["kind", "side"], "additionalProperties": false}
        ]});
        assert_eq!(
            all(&shape, json!({"kind": "square", "r": 1})),
            (
                vec![
                    pair("", "unknown field `r`, expected one of `kind`, `side`"),
                    pair("", "missing field `side`"),
                ],
                0
            )
        );
        assert_eq!(
            all(&shape, json!({"kind": "triangle", "r": 1})),
            (
                vec![pair(
                    "kind",
                    "expected one of `circle`, `square`, found the string \"triangle\""
                )],
                0
            )
        );
        // Untagged, no alternative close.
        let untagged = json!({"anyOf": [
            {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]},
            {"type": "object", "properties": {"side": {"type": "number"}}, "required": ["side"]}
        ]});
        assert_eq!(
            at(&untagged, json!({"edge": 1})),
            some("", "an object does not match any of the 2 allowed shapes")
        );
        assert_eq!(
            at(&shape, json!("square")),
            some(
                "",
                "the string \"square\" does not match any of the 2 allowed shapes"
            )
        );
    }

    #[test]
    fn applies_the_validation_keywords_of_a_callers_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 4},
                "step": {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0},
                "tags": {"type": "array", "uniqueItems": true, "contains": {"const": "x"}},
                "n": {"type": "integer", "maximum": 9, "exclusiveMaximum": 5},
                "mode": {"not": {"const": "off"}},
                "opts": {"type": "object", "minProperties": 1, "propertyNames": {"maxLength": 3},
                         "dependentRequired": {"a": ["b"]}}
            }
        });
        let walk = |input: Value| -> Vec<(String, String)> {
            problems(&schema, &input, Integers::JsonSchema)
                .problems
                .listed
                .into_iter()
                .map(|p| (p.path, p.message))
                .collect()
        };
        assert_eq!(
            walk(json!({"name": "é", "step": 0.75, "tags": ["a", "a"], "n": 5.0})),
            vec![
                pair("name", "expected at least 2 characters, found 1"),
                pair("step", "expected a multiple of 0.5, found the number 0.75"),
                pair("tags", "expected unique items, but items 0 and 1 are equal"),
                pair(
                    "tags",
                    "expected at least 1 item of the kind this array must contain, found 0"
                ),
                pair("n", "expected an integer < 5, found the number 5.0"),
            ]
        );
        assert_eq!(
            walk(json!({"name": "abcde", "step": 0, "mode": "off", "opts": {}})),
            vec![
                pair("name", "expected at most 4 characters, found 5"),
                pair("step", "expected a number > 0, found the number 0"),
                pair("mode", "the string \"off\" is not allowed here"),
                pair("opts", "expected at least 1 field, found 0"),
            ]
        );
        assert_eq!(
            walk(json!({"opts": {"long": 1, "a": 2}, "step": 1.5, "tags": ["x"], "n": 4})),
            vec![
                pair("opts", "the field name `long` is not allowed here"),
                pair("opts", "missing field `b`, required when `a` is given"),
            ]
        );
    }

    #[test]
    fn draft_07_tuples_and_ref_siblings() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": false},
                "r": {"$ref": "#/definitions/S", "minLength": 10}
            },
            "definitions": {"S": {"type": "string"}}
        });
        let walk = |input: Value| {
            problems(&schema, &input, Integers::JsonSchema)
                .problems
                .listed
        };
        assert_eq!(
            walk(json!({"pair": ["a", "b"], "r": "short"})),
            vec![Problem {
                path: "pair".into(),
                message: "expected at most 1 item, found 2".into()
            }]
        );
    }
}
