//! The audit line's JSON, written by hand: [`AuditRecord::write_json`] gives byte for byte what
//! `serde_json::to_writer(record)` gives (member order, escapes, numbers), at a fraction of the
//! cost. serde_json escapes a string one byte at a time through a table; the escaper here finds
//! the next byte to escape eight bytes at a time and copies the clean run before it in one go
//! (the `content` member is JSON text: every quote escaped). The `ts` member's second is
//! computed once a second per thread ([`Rfc3339::write_cached`]).
//!
//! Byte identity with serde_json is a property test (`tests/properties/audit_line.rs`: random
//! records, every control character, `"`, `\`, U+2028/2029, non-ASCII, floats).

use std::cell::Cell;
use std::io::Write as _;

use serde_json::Value;

use crate::approval::ask::Asked;
use crate::audit::hook_run::HookRun;
use crate::audit::record::AuditRecord;
use crate::base::decimal::decimal;
use crate::base::time::{Rfc3339, SecondText};

impl AuditRecord {
    /// Appends the record's JSON to `out`: exactly the bytes `serde_json::to_writer(out,
    /// record)` appends (one object, members in the order of [`AuditRecord`]'s table, no
    /// newline), several times faster. The JSONL files write their lines with it; a sink that
    /// writes JSON lines of its own can too.
    ///
    /// ```
    /// use toolgate_core::audit::AuditRecord;
    ///
    /// let line = r#"{"ts":"2026-11-24T10:15:00.25Z","session_id":"sess_1","user_id":"u_001","tool_use_id":"toolu_01","tool":"search_faq","input":{"query":"a \"quoted\" word"},"outcome":"ok","is_error":false,"content":"[\"refunds\"]","duration_us":41}"#;
    /// let record: AuditRecord = serde_json::from_str(line)?;
    /// let mut out = Vec::new();
    /// record.write_json(&mut out);
    /// assert_eq!(String::from_utf8(out)?, line);
    /// assert_eq!(serde_json::to_string(&record)?, line);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"ts\":\"");
        write_ts(Rfc3339(self.ts), out);
        out.extend_from_slice(b"\",\"session_id\":");
        write_str(out, &self.session_id);
        out.extend_from_slice(b",\"user_id\":");
        write_str(out, &self.user_id);
        if let Some(tier) = &self.tier {
            out.extend_from_slice(b",\"tier\":");
            write_str(out, tier);
        }
        out.extend_from_slice(b",\"tool_use_id\":");
        write_str(out, &self.tool_use_id);
        out.extend_from_slice(b",\"tool\":");
        write_str(out, &self.tool);
        out.extend_from_slice(b",\"input\":");
        write_value(out, &self.input);
        out.extend_from_slice(b",\"outcome\":\"");
        out.extend_from_slice(self.outcome.as_str().as_bytes());
        out.extend_from_slice(if self.is_error {
            b"\",\"is_error\":true,\"content\":"
        } else {
            b"\",\"is_error\":false,\"content\":"
        });
        write_str(out, &self.content);
        out.extend_from_slice(b",\"duration_us\":");
        write_u64(out, self.duration_us);
        if let Some(by) = &self.blocked_by {
            out.extend_from_slice(b",\"blocked_by\":");
            write_str(out, by);
        }
        if !self.rewritten_by.is_empty() {
            out.extend_from_slice(b",\"rewritten_by\":");
            write_list(out, &self.rewritten_by, |out, s| write_str(out, s));
        }
        if !self.hooks.is_empty() {
            out.extend_from_slice(b",\"hooks\":");
            write_list(out, &self.hooks, write_hook_run);
        }
        if let Some(input) = &self.effective_input {
            out.extend_from_slice(b",\"effective_input\":");
            write_value(out, input);
        }
        if let Some(detail) = &self.detail {
            out.extend_from_slice(b",\"detail\":");
            write_str(out, detail);
        }
        if let Some(n) = self.content_bytes {
            out.extend_from_slice(b",\"content_bytes\":");
            write_u64(out, n);
        }
        if self.replay {
            out.extend_from_slice(b",\"replay\":true");
        }
        if !self.asked_by.is_empty() {
            out.extend_from_slice(b",\"asked_by\":");
            write_list(out, &self.asked_by, write_asked);
        }
        if let Some(by) = &self.approved_by {
            out.extend_from_slice(b",\"approved_by\":");
            write_str(out, by);
        }
        if let Some(by) = &self.denied_by {
            out.extend_from_slice(b",\"denied_by\":");
            write_str(out, by);
        }
        if !self.is_final {
            out.extend_from_slice(b",\"final\":false");
        }
        out.push(b'}');
    }
}

thread_local! {
    /// Per thread: the text of the last second an audit line was stamped in.
    static SECOND: Cell<SecondText> = const { Cell::new(SecondText::new()) };
}

/// `at` as [`Rfc3339`] writes it, the second's text cached per thread.
fn write_ts(at: Rfc3339, out: &mut Vec<u8>) {
    let mut cache = SECOND.try_with(Cell::get).unwrap_or(SecondText::new());
    at.write_cached(&mut cache, out);
    let _ = SECOND.try_with(|c| c.set(cache));
}

/// `[a,b,…]`.
fn write_list<T>(out: &mut Vec<u8>, items: &[T], mut write: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// `{"hook":…,"decision":…,"duration_us":…}`, as [`HookRun`]'s `Serialize`.
fn write_hook_run(out: &mut Vec<u8>, run: &HookRun<'_>) {
    out.extend_from_slice(b"{\"hook\":");
    write_str(out, &run.hook);
    out.extend_from_slice(b",\"decision\":\"");
    out.extend_from_slice(run.outcome.as_str().as_bytes());
    out.extend_from_slice(b"\",\"duration_us\":");
    write_u64(out, run.duration_us);
    out.push(b'}');
}

/// `{"hook":…,"reason":…}`, as [`Asked`]'s `Serialize`.
fn write_asked(out: &mut Vec<u8>, asked: &Asked) {
    out.extend_from_slice(b"{\"hook\":");
    write_str(out, &asked.hook);
    out.extend_from_slice(b",\"reason\":");
    write_str(out, &asked.reason);
    out.push(b'}');
}

/// A JSON value as serde_json writes it compactly (objects in their map's order).
fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                write_u64(out, u);
            } else if let Some(i) = n.as_i64() {
                out.push(b'-');
                write_u64(out, i.unsigned_abs());
            } else {
                // A float: serde_json's `Display` of a number is its serialization (ryu's
                // shortest form); writing to a `Vec` cannot fail.
                let _ = write!(out, "{n}");
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => write_list(out, items, write_value),
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, value);
            }
            out.push(b'}');
        }
    }
}

/// `n` in decimal.
fn write_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(decimal(n, &mut [0; 20]));
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` (read little-endian) that JSON requires escaped: below
/// 0x20, `"` or `\\`. Exact for every byte (no carry crosses bytes: each byte's low seven bits
/// are added to at most 0x7f), so [`write_str`] takes the flagged bytes one after another.
#[inline]
fn escape_mask(word: u64) -> u64 {
    // High bit set: the byte is 0x20 or more.
    let printable = ((word & LOWS) + ONES * 0x60) | word;
    let quote = word ^ (ONES * u64::from(b'"'));
    // High bit set: the byte is not `"`.
    let not_quote = ((quote & LOWS) + LOWS) | quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let not_backslash = ((backslash & LOWS) + LOWS) | backslash;
    !(printable & not_quote & not_backslash) & HIGHS
}

/// `s` as a JSON string, with serde_json's escapes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
/// and `\u00XX` (lowercase hex) for the other control characters; everything else (U+2028,
/// U+2029, DEL, non-ASCII) as is.
fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // `bytes[start..]` is not yet copied; bytes before `at` are looked at.
    let mut start = 0;
    let mut at = 0;
    while let Some(word) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let mut mask = escape_mask(u64::from_le_bytes(*word));
        while mask != 0 {
            let dirty = at + (mask.trailing_zeros() / 8) as usize;
            out.extend_from_slice(&bytes[start..dirty]);
            push_escape(out, bytes[dirty]);
            start = dirty + 1;
            mask &= mask - 1;
        }
        at += 8;
    }
    for (i, &b) in bytes.iter().enumerate().skip(at) {
        if needs_escape(b) {
            out.extend_from_slice(&bytes[start..i]);
            push_escape(out, b);
            start = i + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The escape of one byte [`needs_escape`] flags: `"` and `\\` (most of them, in JSON text)
/// inline, control characters out of line.
#[inline]
fn push_escape(out: &mut Vec<u8>, b: u8) {
    if b == b'"' || b == b'\\' {
        out.extend_from_slice(&[b'\\', b]);
    } else {
        push_control_escape(out, b);
    }
}

/// The escape of a control character.
#[cold]
fn push_control_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match b {
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_as_serde_json_at_every_position_of_a_word() {
        // Every byte that needs escaping, at every offset of two words and in the tail.
        let specials: Vec<char> = (0u8..0x20)
            .map(char::from)
            .chain(['"', '\\', '\u{7f}', '\u{2028}', '\u{2029}', 'é', '😀'])
            // The neighbours of the escaped bytes: 0x20, 0x21, 0x23, 0x5b, 0x5d, 0xa2, 0xdc.
            .chain([' ', '!', '#', '[', ']', '\u{a2}', '\u{dc}'])
            .collect();
        for special in specials {
            for len in 0..20 {
                for pos in 0..len {
                    let s: String = (0..len)
                        .map(|i| if i == pos { special } else { 'a' })
                        .collect();
                    assert_eq!(json(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn writes_the_short_escapes_and_lowercase_hex() {
        assert_eq!(
            json("a\"b\\c\u{8}\u{c}\n\r\t\u{0}\u{1f}\u{1b}"),
            r#""a\"b\\c\b\f\n\r\t\u0000\u001f\u001b""#
        );
        assert_eq!(
            json(r#"{"user_id":"u_001","open_orders":2}"#),
            r#""{\"user_id\":\"u_001\",\"open_orders\":2}""#
        );
        assert_eq!(json(""), r#""""#);
    }

    #[test]
    fn writes_numbers_as_serde_json() {
        for n in [
            serde_json::json!(0),
            serde_json::json!(u64::MAX),
            serde_json::json!(i64::MIN),
            serde_json::json!(-1),
            serde_json::json!(0.1),
            serde_json::json!(-2.5e-300),
            serde_json::json!(1e21),
            serde_json::json!(123456789.0),
        ] {
            let mut out = Vec::new();
            write_value(&mut out, &n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }
}
