//! [`InputDigest`]: what the answer memory remembers a `tool_use`'s input by: the documented
//! SHA-256 of its JSON text for a host's store, a keyed hash for the session's own.

use std::fmt;
use std::hash::{BuildHasher, RandomState};

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::base::local::with_reused;

/// The SHA-256 of a `tool_use` input's JSON text, as serde_json writes it (compact, keys in the
/// order the model sent them: `preserve_order`). Two calls with one id and equal digests are the
/// same call; a retry of the same message has the same digest.
///
/// An input nested deeper than the dispatcher's `max_input_depth`
/// ([`Limits`](crate::dispatch::Limits)) is not serialized (its walk would be unbounded): its
/// digest is that of the text `[input deeper than N levels]`. Such an input is `invalid_input`
/// anyway, so two of them sharing a digest only replays one refusal for the other.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct InputDigest(pub [u8; 32]);

impl InputDigest {
    /// The digest of `input`, serialized compact; deeper than `max_depth` levels (`{}` is one
    /// level), the digest of `[input deeper than {max_depth} levels]`.
    ///
    /// ```
    /// use toolgate_core::store::InputDigest;
    ///
    /// let d = InputDigest::of(&serde_json::json!({"order_id": "o_1"}), 32);
    /// // `printf '%s' '{"order_id":"o_1"}' | sha256sum`
    /// assert_eq!(d.to_string(),
    ///     "e4c68ac5347457f594c087719e4a93825e3db41f6054070f1d7c4c7f6ffefd8a");
    /// ```
    pub fn of(input: &Value, max_depth: usize) -> InputDigest {
        let bounded = Bounded {
            value: input,
            levels_left: max_depth,
        };
        // The text goes into a reused per-thread buffer, then to the hasher in one piece (a
        // hasher fed token by token costs more than the copy).
        let digest = with_text(|buf| {
            serde_json::to_writer(&mut *buf, &bounded).map(|()| Sha256::digest(&*buf))
        });
        match digest {
            Ok(d) => InputDigest(d.into()),
            // Only the depth bound fails the walk (writing to a `Vec` cannot fail).
            Err(_) => InputDigest(
                Sha256::digest(format!("[input deeper than {max_depth} levels]")).into(),
            ),
        }
    }
}

impl InputDigest {
    /// The key the session's own default store remembers an input by: SipHash-1-3 (std's
    /// `RandomState`, keyed at random per session) of the input's structure (each value's kind,
    /// text, numbers as serde_json holds them, keys in the order sent), in the first 8 bytes,
    /// the rest zero; deeper than `max_depth` levels, the key of that depth alone. Equal inputs
    /// (equal JSON texts) get equal keys; two different inputs collide with a chance of about
    /// 2^-64 that an attacker cannot steer (the keys are random and never leave the process).
    ///
    /// Not the documented digest: used only where the key never leaves the session (its
    /// default [`MemoryAnswerStore`], which nobody else can read). It costs a few hundred
    /// instructions where [`of`](Self::of) serializes the input and hashes it with SHA-256
    /// (several thousand without the CPU's SHA instructions).
    pub(crate) fn keyed(input: &Value, max_depth: usize, keys: &RandomState) -> InputDigest {
        // The structure is encoded into a reused per-thread buffer, then hashed in one piece:
        // SipHash fed token by token spends most of its work on the small writes.
        let key = with_text(|buf| {
            if encode(input, max_depth, buf).is_err() {
                buf.clear();
                buf.push(0xfe);
                buf.extend_from_slice(&(max_depth as u64).to_le_bytes());
            }
            keys.hash_one(&buf[..])
        });
        let mut out = [0u8; 32];
        out[..8].copy_from_slice(&key.to_le_bytes());
        InputDigest(out)
    }
}

/// An input nested deeper than the bound.
struct TooDeep;

/// Writes `value`'s structure to `out`, each part self-delimiting so that two different values
/// cannot write the same bytes: a tag per kind, then its content; a string's or key's length
/// (8 bytes) before its bytes, an array's or object's count before its items; a number by its
/// kind (`u64`, negative `i64`, `f64`: serde_json's own `Hash` feeds `-1` and `u64::MAX` the
/// same bytes, which a unit test caught) and 8 bytes. Fails past `levels_left` levels of arrays
/// and objects, as [`Bounded`] does.
fn encode(value: &Value, levels_left: usize, out: &mut Vec<u8>) -> Result<(), TooDeep> {
    fn text(s: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    match value {
        Value::Null => out.push(0),
        Value::Bool(b) => out.push(1 + u8::from(*b)),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => {
                out.push(3);
                out.extend_from_slice(&u.to_le_bytes());
            }
            (None, Some(i), _) => {
                out.push(7);
                out.extend_from_slice(&i.to_le_bytes());
            }
            (None, None, f) => {
                out.push(8);
                out.extend_from_slice(&f.unwrap_or(f64::NAN).to_bits().to_le_bytes());
            }
        },
        Value::String(s) => {
            out.push(4);
            text(s, out);
        }
        Value::Array(_) | Value::Object(_) if levels_left == 0 => return Err(TooDeep),
        Value::Array(items) => {
            out.push(5);
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for v in items {
                encode(v, levels_left - 1, out)?;
            }
        }
        Value::Object(map) => {
            out.push(6);
            out.extend_from_slice(&(map.len() as u64).to_le_bytes());
            for (k, v) in map {
                text(k, out);
                encode(v, levels_left - 1, out)?;
            }
        }
    }
    Ok(())
}

impl fmt::Display for InputDigest {
    /// Lowercase hex, 64 characters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for InputDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InputDigest({self})")
    }
}

thread_local! {
    /// The bytes of the input being digested (its JSON text, or its encoded structure).
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's digest buffer, empty (a fresh one when a caller further up the
/// stack holds it, or when the buffer is already gone: a call dropped by another thread-local's
/// destructor at thread exit); a buffer grown past 64 KiB is given back afterwards.
fn with_text<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    with_reused(&TEXT, |buf| {
        buf.clear();
        let out = f(buf);
        if buf.capacity() > 64 << 10 {
            *buf = Vec::new();
        }
        out
    })
}

/// A `Value` serialized exactly as `Value`'s own `Serialize` does, failing past a depth.
struct Bounded<'a> {
    value: &'a Value,
    levels_left: usize,
}

impl Serialize for Bounded<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let nested = |value| Bounded {
            value,
            levels_left: self.levels_left - 1,
        };
        match self.value {
            Value::Array(_) | Value::Object(_) if self.levels_left == 0 => {
                Err(serde::ser::Error::custom("too deep"))
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(&nested(v))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    m.serialize_entry(k, &nested(v))?;
                }
                m.end()
            }
            leaf => leaf.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::hash::RandomState;

    use serde_json::{Value, json};

    use super::InputDigest;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_keyed_digest_tells_inputs_apart_exactly_as_their_json_texts_do() {
        let keys = RandomState::new();
        let texts = [
            r#"{"a":1,"b":[true,null,"x"]}"#,
            r#"{"b":[true,null,"x"],"a":1}"#,
            r#"{"a":1.0,"b":[true,null,"x"]}"#,
            r#"{"a":"1","b":[true,null,"x"]}"#,
            r#"{"a":1,"b":[true,null,"x",""]}"#,
            r#"{"a":1,"b":[[true],null,"x"]}"#,
            r#"{"a":1,"b":[true,null,"x"],"c":null}"#,
            r#"{"a":1,"b":["ab","c"]}"#,
            r#"{"a":1,"b":["a","bc"]}"#,
            r#"{"ab":1}"#,
            r#"{"a":-1}"#,
            r#"{"a":18446744073709551615}"#,
            r#"{"a":-1.0}"#,
            r#"{"a":0.0}"#,
            r#"{"a":-0.0}"#,
            r#"{"a":0}"#,
            r#"{"a":1e300}"#,
            r#"{"a":false}"#,
            r#"{"a":true}"#,
            r#"{"a":null}"#,
            r#"{"a":{}}"#,
            r#"{"a":[]}"#,
            r#"{"a":{"b":1}}"#,
            r#"{"a":[{"b":1}]}"#,
            r#"{}"#,
        ];
        for (i, a) in texts.iter().enumerate() {
            for (j, b) in texts.iter().enumerate() {
                let (ka, kb) = (
                    InputDigest::keyed(&parse(a), 32, &keys),
                    InputDigest::keyed(&parse(b), 32, &keys),
                );
                assert_eq!(ka == kb, i == j, "{a} against {b}");
                assert_eq!(ka.0[8..], [0; 24]);
            }
        }
        // The keys are the session's own: another session keys the same input differently.
        let x = parse(texts[0]);
        assert_ne!(
            InputDigest::keyed(&x, 32, &keys),
            InputDigest::keyed(&x, 32, &RandomState::new())
        );
    }

    #[test]
    fn past_the_depth_bound_the_keyed_digest_is_that_of_the_bound() {
        let keys = RandomState::new();
        let deep = json!({"a": {"b": {"c": {}}}});
        let deeper = json!({"a": {"b": {"c": {"d": 1}}}});
        let key = |v: &Value, depth| InputDigest::keyed(v, depth, &keys);
        assert_eq!(key(&deep, 3), key(&deeper, 3));
        assert_eq!(key(&json!([[[[]]]]), 3), key(&deep, 3));
        assert_ne!(key(&deep, 3), key(&deep, 2));
        assert_ne!(key(&deep, 4), key(&deeper, 4));
        assert_ne!(key(&deep, 4), key(&deep, 3));
    }
}
