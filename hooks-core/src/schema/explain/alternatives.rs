//! `anyOf` and `oneOf`: whether a value matches the alternatives as required, and when it matches
//! none, which alternative's problems explain it best (a documented unit enum's values, a tag
//! value none has, the closest alternative, a field every one requires).

use serde_json::{Map, Value};

use super::numbers::json_equal;
use super::{Sink, Step, Walker, found, list_values};
use crate::schema::walk::{OBJECT, kinds, resolve_ref};

/// Which alternatives must match: at least one (`anyOf`) or exactly one (`oneOf`).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Alternatives {
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
    /// `anyOf` (`which`: at least one alternative must match) or `oneOf` (exactly one):
    /// nothing when `v` matches as required, else one explanation: a documented unit enum's
    /// values, the alternatives `v` matches too many of, or why it matches none
    /// ([`Self::explain_no_match`]).
    pub(super) fn alternatives<'v>(
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
}
