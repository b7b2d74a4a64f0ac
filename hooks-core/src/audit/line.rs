//! The audit line's JSON. Both lines, a call's and a session's, are serde_json's compact JSON of
//! the record with one difference: the characters that end a line for some readers and that
//! serde_json writes raw, the C1 controls (U+0080 to U+009F, U+0085 NEXT LINE among them) and
//! U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR, are written as JSON escapes (`\u0085`,
//! `\u2028`, lowercase hex, as serde_json writes `\u001b`). The value read back is the same; a
//! reader that splits lines on Unicode's line breaks (Python's `str.splitlines`, a JavaScript
//! reader splitting on ECMAScript's line terminators) sees one line per record, as
//! `str::lines` does. Lines written before this rule keep their bytes, and the chain hashes the
//! bytes as written, so a chain of old and new lines verifies.
//!
//! A call's line is written by hand: [`AuditRecord::write_json`] at a fraction of serde_json's
//! cost. serde_json escapes a string one byte at a time through a table; the escaper here finds
//! the next byte to escape eight bytes at a time and copies the clean run before it in one go
//! (the `content` member is JSON text: every quote escaped). The `ts` member's second is
//! computed once a second per thread ([`Rfc3339::write_cached`]). A session's line
//! ([`SummaryRecord::write_json`]) is serde_json's serializer with the escapes above.
//!
//! That both are serde_json's bytes with those escapes is a property test
//! (`tests/properties/audit_line.rs`: random records, every control character, `"`, `\`, C1,
//! U+2028/2029 and their neighbours, non-ASCII, floats).

use std::cell::Cell;
use std::io::{self, Write as _};

use serde_json::Value;

use crate::approval::ask::Asked;
use crate::audit::hook_run::HookRun;
use crate::audit::outcome::LeaseRecord;
use crate::audit::record::{AuditRecord, SummaryRecord};
use crate::base::decimal::decimal;
use crate::base::time::{Rfc3339, SecondText};

impl AuditRecord {
    /// Appends the record's JSON to `out`: the bytes `serde_json::to_writer(out, record)`
    /// appends (one object, members in the order of [`AuditRecord`]'s table, no newline), but
    /// with C1 controls, U+2028 and U+2029 written as JSON escapes (`\u0085`, `\u2028`,
    /// `\u2029`), several times faster. The value is the same; the line is one line for every
    /// reader (Python's `str.splitlines` and JavaScript's line terminators split on those
    /// characters). The JSONL files and the PostgreSQL chain write their lines with it; a sink
    /// that writes JSON lines of its own can too.
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
    ///
    /// // A line separator from the model: escaped, where serde_json writes it raw.
    /// let mut record = record;
    /// record.name = "search\u{2028}faq".to_owned();
    /// let mut out = Vec::new();
    /// record.write_json(&mut out);
    /// let text = String::from_utf8(out)?;
    /// assert!(text.contains(r#""tool":"search\u2028faq""#));
    /// assert_eq!(serde_json::from_str::<AuditRecord>(&text)?.name, "search\u{2028}faq");
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
        if !self.extensions.is_empty() {
            out.extend_from_slice(b",\"extensions\":");
            write_extensions(out, &self.extensions);
        }
        out.extend_from_slice(b",\"tool_use_id\":");
        write_str(out, &self.tool_use_id);
        out.extend_from_slice(b",\"tool\":");
        write_str(out, &self.name);
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
        if let Some(lease) = &self.lease {
            write_lease(out, lease);
        }
        if !self.is_final {
            out.extend_from_slice(b",\"final\":false");
        }
        out.push(b'}');
    }
}

/// The `lease` member, with its comma: `,"lease":{"lease_ms":…,"renew_every_ms":…,
/// "renewals":…,"renewals_failed":…}` (serde_json's bytes: numbers only).
fn write_lease(out: &mut Vec<u8>, lease: &LeaseRecord) {
    out.extend_from_slice(b",\"lease\":{\"lease_ms\":");
    write_u64(out, lease.lease_ms);
    out.extend_from_slice(b",\"renew_every_ms\":");
    write_u64(out, lease.renew_every_ms);
    out.extend_from_slice(b",\"renewals\":");
    write_u64(out, lease.renewals);
    out.extend_from_slice(b",\"renewals_failed\":");
    write_u64(out, lease.renewals_failed);
    out.push(b'}');
}

/// The context's extensions the host marked for the line, as one JSON object in the order they
/// were marked: `{"role":"maintainer"}`.
fn write_extensions(out: &mut Vec<u8>, extensions: &serde_json::Map<String, Value>) {
    out.push(b'{');
    for (i, (name, value)) in extensions.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, name);
        out.push(b':');
        write_value(out, value);
    }
    out.push(b'}');
}

impl SummaryRecord {
    /// Appends the summary's JSON to `out`: the bytes `serde_json::to_writer(out, summary)`
    /// appends, with the escapes of [`AuditRecord::write_json`] (C1 controls, U+2028 and U+2029
    /// as `\u0085`, `\u2028`, `\u2029`): one line for every reader, the same value. The JSONL
    /// files and the PostgreSQL chain write their session lines with it.
    ///
    /// # Errors
    /// serde_json's, should the summary not serialize (it always does: every map's keys are
    /// strings); `out` may then hold part of the line.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let mut serializer = serde_json::Serializer::with_formatter(out, LineFormatter);
        serde::Serialize::serialize(self, &mut serializer)
    }
}

/// serde_json's compact formatter with the line's escapes: a string's runs of characters
/// serde_json does not escape are written with their C1 controls, U+2028 and U+2029 escaped.
struct LineFormatter;

impl serde_json::ser::Formatter for LineFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let bytes = fragment.as_bytes();
        let mut escaped = Vec::new();
        let mut start = 0;
        for at in 0..bytes.len() {
            if is_lead(bytes[at]) {
                start = escape_wide(&mut escaped, bytes, start, at);
            }
        }
        if escaped.is_empty() {
            return writer.write_all(bytes);
        }
        escaped.extend_from_slice(&bytes[start..]);
        writer.write_all(&escaped)
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

/// The high bit of each byte of `word` (read little-endian) that may start an escape: below
/// 0x20, `"` or `\\`, which JSON requires escaped, or 0xC2 or 0xE2, the first byte of a C1
/// control (`C2 80` to `C2 9F`) and of U+2028 and U+2029 (`E2 80 A8`, `E2 80 A9`), which
/// [`escape_wide`] confirms or lets pass. Exact for every byte (no carry crosses bytes: each
/// byte's low seven bits are added to at most 0x7f), so [`write_str`] takes the flagged bytes
/// one after another; a character's later bytes (0x80 to 0xBF) are never flagged.
#[inline]
fn escape_mask(word: u64) -> u64 {
    // High bit set: the byte is 0x20 or more.
    let printable = ((word & LOWS) + ONES * 0x60) | word;
    let quote = word ^ (ONES * u64::from(b'"'));
    // High bit set: the byte is not `"`.
    let not_quote = ((quote & LOWS) + LOWS) | quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let not_backslash = ((backslash & LOWS) + LOWS) | backslash;
    // 0xC2 and 0xE2 differ in bit 0x20 alone: with it cleared, both are 0xC2.
    let lead = (word & !(ONES * 0x20)) ^ (ONES * 0xc2);
    // High bit set: the byte is neither 0xC2 nor 0xE2.
    let not_lead = ((lead & LOWS) + LOWS) | lead;
    !(printable & not_quote & not_backslash & not_lead) & HIGHS
}

/// `s` as a JSON string, with serde_json's escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
/// and `\u00XX`, lowercase hex, for the other control characters below 0x20) and the line's own
/// (C1 controls, U+2028 and U+2029 as `\u0085`, `\u2028`, `\u2029`); everything else (DEL,
/// other non-ASCII) as is.
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
            let flagged = at + (mask.trailing_zeros() / 8) as usize;
            start = push_escape(out, bytes, start, flagged);
            mask &= mask - 1;
        }
        at += 8;
    }
    for flagged in at..bytes.len() {
        if needs_escape(bytes[flagged]) {
            start = push_escape(out, bytes, start, flagged);
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether [`escape_mask`] flags `b`.
#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || is_lead(b)
}

/// 0xC2 or 0xE2: the first byte of a C1 control, of U+2028 or of U+2029 (and of other
/// characters).
#[inline]
fn is_lead(b: u8) -> bool {
    b & !0x20 == 0xc2
}

/// Escapes the character at `bytes[at]`, a byte [`needs_escape`] flags, after copying
/// `bytes[start..at]`; the new start of what is not yet copied. `"` and `\\` (most of them, in
/// JSON text) inline, control characters and the line's own escapes out of line.
#[inline]
fn push_escape(out: &mut Vec<u8>, bytes: &[u8], start: usize, at: usize) -> usize {
    let b = bytes[at];
    if b == b'"' || b == b'\\' {
        out.extend_from_slice(&bytes[start..at]);
        out.extend_from_slice(&[b'\\', b]);
        at + 1
    } else if b < 0x20 {
        out.extend_from_slice(&bytes[start..at]);
        push_control_escape(out, b);
        at + 1
    } else {
        escape_wide(out, bytes, start, at)
    }
}

/// At `bytes[at]` (0xC2 or 0xE2): a C1 control, U+2028 or U+2029 is written as its `\u`
/// escape after `bytes[start..at]`, and the start after it returned; any other character is
/// left to be copied with its run (`start` returned as is).
fn escape_wide(out: &mut Vec<u8>, bytes: &[u8], start: usize, at: usize) -> usize {
    let (code, len) = match bytes[at..] {
        [0xc2, b @ 0x80..=0x9f, ..] => (u16::from(b), 2),
        [0xe2, 0x80, b @ 0xa8..=0xa9, ..] => (0x2000 + u16::from(b - 0x80), 3),
        _ => return start,
    };
    out.extend_from_slice(&bytes[start..at]);
    push_u_escape(out, code);
    at + len
}

/// The escape of a control character below 0x20.
#[cold]
fn push_control_escape(out: &mut Vec<u8>, b: u8) {
    let short = match b {
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => return push_u_escape(out, u16::from(b)),
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// `\u` and four lowercase hex digits, as serde_json writes it.
fn push_u_escape(out: &mut Vec<u8>, code: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let nibble = |shift: u16| HEX[usize::from((code >> shift) & 0xf)];
    out.extend_from_slice(&[b'\\', b'u', nibble(12), nibble(8), nibble(4), nibble(0)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    /// serde_json's string, with the line's own escapes (C1, U+2028, U+2029), written out
    /// here one by one.
    fn serde_with_line_escapes(s: &str) -> String {
        let mut expected = String::new();
        for c in serde_json::to_string(s).unwrap().chars() {
            match u32::from(c) {
                n @ (0x80..=0x9f | 0x2028 | 0x2029) => expected.push_str(&format!("\\u{n:04x}")),
                _ => expected.push(c),
            }
        }
        expected
    }

    #[test]
    fn escapes_as_serde_json_and_the_line_breaks_at_every_position_of_a_word() {
        // Every byte that needs escaping, at every offset of two words and in the tail.
        let specials: Vec<char> = (0u8..0x20)
            .map(char::from)
            .chain(['"', '\\', '\u{7f}', '\u{2028}', '\u{2029}', 'é', '😀'])
            .chain((0x80u8..0xa0).map(char::from))
            // The neighbours of the escaped bytes: 0x20, 0x21, 0x23, 0x5b, 0x5d, 0xa2, 0xdc; of
            // C1 (`C2 A0`, `C3 80`) and of U+2028/2029 (`E2 80 A7`, `E2 80 AA`, `E2 81 A8`,
            // `E3 80 A8`, `E2 80 94`, `C3 A2`: 0xE2 read as a character, not a byte).
            .chain([' ', '!', '#', '[', ']', '\u{a2}', '\u{dc}'])
            .chain([
                '\u{a0}', '\u{c0}', '\u{2027}', '\u{202a}', '\u{2068}', '\u{3028}',
            ])
            .chain(['—', '\u{e2}'])
            .collect();
        for special in specials {
            for len in 0..20 {
                for pos in 0..len {
                    let s: String = (0..len)
                        .map(|i| if i == pos { special } else { 'a' })
                        .collect();
                    assert_eq!(json(&s), serde_with_line_escapes(&s), "{s:?}");
                }
            }
        }
        // Two in a row, and one across a word's end.
        let s = "abcdef\u{2028}\u{85}\u{2029}xyz\u{2028}";
        assert_eq!(json(s), r#""abcdef\u2028\u0085\u2029xyz\u2028""#);
    }

    #[test]
    fn writes_the_line_breaks_as_escapes_that_read_back_as_the_same_text() {
        let s = "a\u{85}b\u{2028}c\u{2029}d\u{9b}e\u{80}\u{9f}\u{a0}—\u{7f}";
        let line = json(s);
        assert_eq!(
            line,
            "\"a\\u0085b\\u2028c\\u2029d\\u009be\\u0080\\u009f\u{a0}—\u{7f}\""
        );
        assert_eq!(serde_json::from_str::<String>(&line).unwrap(), s);
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
