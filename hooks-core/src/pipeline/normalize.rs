//! Step 1 of a call (ARCHITECTURE.md, "The life of one call"): the `tool_use` input normalized
//! (`""` and `null` mean `{}`, a string holding a JSON object is parsed once) and held to the input
//! bounds of [`Limits`].

use serde_json::{Map, Value};

use crate::content::de::kind_of;
use crate::content::message::ToolUse;
use crate::pipeline::limits::Limits;
use crate::texts;

/// A `tool_use` block after normalization: the block itself when its input was already an
/// object (no copy), or a boxed copy with the normalized input (a small value either way, since
/// it lives in every call future).
#[derive(Debug)]
pub(crate) enum Normalized<'a> {
    Borrowed(&'a ToolUse),
    Owned(Box<ToolUse>),
}

impl std::ops::Deref for Normalized<'_> {
    type Target = ToolUse;
    fn deref(&self) -> &ToolUse {
        match self {
            Normalized::Borrowed(t) => t,
            Normalized::Owned(t) => t,
        }
    }
}

/// Why an input was refused before validation; the text is written for the model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refused(pub(crate) String);

impl Refused {
    /// An input that is valid JSON but not an object.
    pub(crate) fn not_object(input: &Value) -> Refused {
        Refused(texts::not_an_object(kind_of(input)))
    }
}

/// Normalizes a `tool_use` input (ARCHITECTURE.md, "The life of one call", step 1): an object stays
/// as is (borrowed, no copy); `null` and `""` mean `{}`; a string holding a JSON object is parsed
/// once. Anything else, or an input over the limits, is refused.
pub(crate) fn normalize<'a>(call: &'a ToolUse, limits: &Limits) -> Result<Normalized<'a>, Refused> {
    let owned = |input: Value| Normalized::Owned(Box::new(call.with_input(input)));
    let normalized = match &call.input {
        Value::Object(_) => Normalized::Borrowed(call),
        Value::Null => owned(Value::Object(Map::new())),
        Value::String(s) if s.trim().is_empty() => owned(Value::Object(Map::new())),
        Value::String(s) => {
            if s.len() > limits.max_input_bytes {
                return Err(too_large(s.len(), limits));
            }
            match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => owned(v),
                Ok(other) => return Err(Refused(texts::string_not_an_object(kind_of(&other)))),
                Err(e) => return Err(Refused(texts::string_not_json(e))),
            }
        }
        other => return Err(Refused::not_object(other)),
    };
    check_bounds(&normalized.input, limits)?;
    Ok(normalized)
}

fn too_large(bytes: usize, limits: &Limits) -> Refused {
    Refused(texts::too_large(bytes, limits.max_input_bytes))
}

/// Checks size and depth in one walk that allocates nothing and stops at the first excess.
pub(crate) fn check_bounds(input: &Value, limits: &Limits) -> Result<(), Refused> {
    let mut bytes = 0usize;
    match walk(input, 1, limits, &mut bytes) {
        Ok(()) => Ok(()),
        Err(Excess::Depth) => Err(Refused(texts::too_deep(limits.max_input_depth))),
        Err(Excess::Bytes) => Err(too_large(bytes, limits)),
    }
}

enum Excess {
    Depth,
    Bytes,
}

fn walk(v: &Value, depth: usize, limits: &Limits, bytes: &mut usize) -> Result<(), Excess> {
    let add = |bytes: &mut usize, n: usize| {
        *bytes = bytes.saturating_add(n);
        if *bytes > limits.max_input_bytes {
            Err(Excess::Bytes)
        } else {
            Ok(())
        }
    };
    match v {
        Value::Null => add(bytes, 4),
        Value::Bool(b) => add(bytes, if *b { 4 } else { 5 }),
        Value::Number(n) => add(bytes, number_len(n)),
        Value::String(s) => add(bytes, s.len() + 2),
        Value::Array(items) => {
            if depth > limits.max_input_depth {
                return Err(Excess::Depth);
            }
            add(bytes, 2 + items.len().saturating_sub(1))?;
            for item in items {
                walk(item, depth + 1, limits, bytes)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            if depth > limits.max_input_depth {
                return Err(Excess::Depth);
            }
            add(bytes, 2 + map.len().saturating_sub(1))?;
            for (k, item) in map {
                add(bytes, k.len() + 3)?;
                walk(item, depth + 1, limits, bytes)?;
            }
            Ok(())
        }
    }
}

fn number_len(n: &serde_json::Number) -> usize {
    fn digits(mut x: u64) -> usize {
        let mut d = 1;
        while x >= 10 {
            x /= 10;
            d += 1;
        }
        d
    }
    if let Some(u) = n.as_u64() {
        digits(u)
    } else if let Some(i) = n.as_i64() {
        1 + digits(i.unsigned_abs())
    } else {
        // A float: at most 24 characters in serde_json's shortest form.
        24
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(input: Value) -> ToolUse {
        ToolUse::new("toolu_1", "t", input)
    }

    #[test]
    fn normalizes_empty_and_string_inputs() {
        let l = Limits::default();
        assert_eq!(normalize(&call(json!(null)), &l).unwrap().input, json!({}));
        assert_eq!(normalize(&call(json!("")), &l).unwrap().input, json!({}));
        assert_eq!(
            normalize(&call(json!("{\"a\": 1}")), &l).unwrap().input,
            json!({"a": 1})
        );
        assert!(matches!(
            normalize(&call(json!({"a": 1})), &l).unwrap(),
            Normalized::Borrowed(_)
        ));
        assert_eq!(
            normalize(&call(json!([1])), &l).unwrap_err().0,
            "the input must be a JSON object, found a JSON array"
        );
        assert_eq!(
            normalize(&call(json!("[1]")), &l).unwrap_err().0,
            "the input must be a JSON object, but it is a string holding a JSON array"
        );
    }

    #[test]
    fn measures_compact_json_size() {
        let v = json!({"a": [1, true, null], "bc": "xyz", "n": -12, "f": 1.5});
        let compact =
            serde_json::to_string(&json!({"a": [1, true, null], "bc": "xyz", "n": -12})).unwrap();
        let exact = Limits::default().max_input_bytes(compact.len());
        assert!(
            check_bounds(
                &json!({"a": [1, true, null], "bc": "xyz", "n": -12}),
                &exact
            )
            .is_ok()
        );
        let one_less = Limits::default().max_input_bytes(compact.len() - 1);
        assert!(
            check_bounds(
                &json!({"a": [1, true, null], "bc": "xyz", "n": -12}),
                &one_less
            )
            .is_err()
        );
        assert!(check_bounds(&v, &Limits::default()).is_ok());
    }

    #[test]
    fn refuses_deep_input() {
        let mut v = json!({});
        for _ in 0..32 {
            v = json!({ "a": v });
        }
        let l = Limits::default();
        assert_eq!(
            check_bounds(&v, &l).unwrap_err().0,
            "the input is nested more than 32 levels deep; flatten it"
        );
        assert!(check_bounds(&v, &l.max_input_depth(33)).is_ok());
    }
}
