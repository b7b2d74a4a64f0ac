//! The one rule for showing a person text that came from the model (a tool name, a user id, a
//! deny reason, an input): every character that could end the line, move the cursor or reorder
//! what is shown is written as a visible escape, so one record stays one line and reads as
//! written. [`printable`] writes lines of text, [`printable_json`] writes JSON text; both
//! escape the characters of [`is_hidden`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is escaped where a person reads it: a control character (C0, DEL and C1, U+0085
/// NEXT LINE among them: line ends and terminal escape sequences), a line or paragraph
/// separator (U+2028, U+2029), or a bidirectional formatting character (U+061C, U+200E,
/// U+200F, U+202A to U+202E, U+2066 to U+2069), which reorders the text shown around it
/// (Unicode Standard Annex 9, and the "Trojan Source" attack, CVE-2021-42574).
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` as a person is shown it on one line of a terminal, a table or a page: every control
/// character, line or paragraph separator and bidirectional formatting character written as
/// Rust writes a char's escape, `\u{` and lowercase hex and `}` (ESC is `\u{1b}`, LF `\u{a}`,
/// U+2028 `\u{2028}`); everything else as is. Borrowed when there is nothing to escape.
///
/// `toolgate audit tail` and `stats`, the HTML report and the support agent show model text
/// through it. A backslash is not escaped, so text that spells `\u{a}` reads the same as an
/// escaped line feed; what cannot happen is a second line, a moved cursor or a reordered line.
///
/// ```
/// use toolgate_core::audit::printable;
///
/// assert_eq!(printable("search_faq"), "search_faq");
/// assert_eq!(
///     printable("a\nb\u{2028}c\u{85}d\u{1b}[31m\u{202e}e"),
///     r"a\u{a}b\u{2028}c\u{85}d\u{1b}[31m\u{202e}e"
/// );
/// ```
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_hidden(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `json`, one JSON text (an audit line, a value serde_json wrote compactly), with the
/// characters [`printable`] escapes written as JSON escapes (`\u2028`, `\u001b`, lowercase
/// hex): the same JSON value, on one line, with nothing that drives a terminal. Inside a
/// string every such character is escaped; between tokens, where JSON allows only spaces, tabs,
/// line feeds and carriage returns, a tab, line feed or carriage return becomes a space and any
/// other such character (text that is not JSON) is escaped too. Borrowed when there is nothing
/// to change.
///
/// `toolgate audit tail --json` and `stats --json` and the support agent's `--json` lines print
/// through it.
///
/// ```
/// use toolgate_core::audit::printable_json;
///
/// // Valid JSON: U+2028 and C1 (U+009B, a terminal's CSI) may stand raw in a string.
/// let line = "{\"tool\":\"look\u{2028}up\u{9b}2J\",\n\"n\":1}";
/// let shown = printable_json(line);
/// assert_eq!(shown, r#"{"tool":"look\u2028up\u009b2J", "n":1}"#);
/// let value: serde_json::Value = serde_json::from_str(&shown)?;
/// assert_eq!(value, serde_json::from_str::<serde_json::Value>(line)?);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn printable_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_hidden) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if is_hidden(c) {
            if !in_string && matches!(c, '\t' | '\n' | '\r') {
                out.push(' ');
            } else {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            escaped = false;
            continue;
        }
        out.push(c);
        if escaped {
            escaped = false;
        } else if in_string && c == '\\' {
            escaped = true;
        } else if c == '"' {
            in_string = !in_string;
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_separators_and_bidi_formatting_and_nothing_else() {
        let hidden: Vec<u32> = (0..=0x10ffff)
            .filter_map(char::from_u32)
            .filter(|c| is_hidden(*c))
            .map(u32::from)
            .collect();
        let expected: Vec<u32> = (0..0x20)
            .chain(0x7f..0xa0)
            .chain([0x061c, 0x200e, 0x200f])
            .chain(0x2028..0x202f)
            .chain(0x2066..0x206a)
            .collect();
        assert_eq!(hidden, expected);
    }

    #[test]
    fn printable_writes_each_hidden_character_as_its_escape() {
        assert_eq!(
            printable("\r\n\u{b}\u{c}\u{7f}\u{9b}2J\u{200f}\u{2066}x\u{2069}"),
            r"\u{d}\u{a}\u{b}\u{c}\u{7f}\u{9b}2J\u{200f}\u{2066}x\u{2069}"
        );
        assert!(matches!(printable("é — 😀 \\u{a}"), Cow::Borrowed(_)));
    }

    #[test]
    fn printable_json_keeps_the_value_and_escapes_inside_strings_only() {
        // A `"` escaped inside a string does not end it; `\\` before `"` does not escape it.
        let json = "{\"a\\\"\u{85}\":\"\\\\\",\t\"b\":[\"\u{2029}\"],\r\"c\":\"\u{202e}\"}";
        let shown = printable_json(json);
        assert_eq!(shown, r#"{"a\"\u0085":"\\", "b":["\u2029"], "c":"\u202e"}"#);
        let read: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(
            read,
            serde_json::from_str::<serde_json::Value>(json).unwrap()
        );
        assert!(matches!(printable_json("{\"a\":\"é\"}"), Cow::Borrowed(_)));
    }
}
