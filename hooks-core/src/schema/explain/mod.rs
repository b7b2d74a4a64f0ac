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
//!
//! `anyOf`/`oneOf` are in `alternatives.rs`, the string, array and object keywords in
//! `keywords.rs`, numbers in `numbers.rs` (ARCHITECTURE.md, "Parts": `schema/`).

mod alternatives;
mod keywords;
mod numbers;
#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::ops::ControlFlow;

use serde_json::{Map, Value};

use super::meta::Draft;
use super::walk::resolve_ref;
use crate::content::de::kind_of;
use crate::texts::{self, MAX_LISTED_PROBLEMS, MAX_QUOTED_CHARS, Problem, Problems};

use alternatives::Alternatives;
use keywords::check_string;
use numbers::{describe, json_equal};

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
