//! Numbers: their keywords (`minimum`, `maximum`, the exclusive bounds, schemars' integer
//! `format`s, `multipleOf`), integers compared exactly, JSON equality by value, and a type's
//! description for the model (`an integer from 0 to 255`).

use serde_json::{Map, Value};

use super::{Sink, Step, Walker, found};
use crate::schema::meta::Draft;

impl<'s> Walker<'s> {
    pub(super) fn check_number(
        &self,
        s: &Map<String, Value>,
        v: &Value,
        at: &[Step<'_>],
        sink: &mut Sink,
    ) {
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
}

/// JSON equality as JSON Schema means it: numbers by value (`1` equals `1.0`).
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
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

/// A bound or a value: integers compared exactly (an `i64` bound is not rounded through `f64`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub(super) fn from_json(v: &Value) -> Option<Num> {
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
pub(super) fn describe(t: &str, s: &Map<String, Value>, draft: Draft) -> String {
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
