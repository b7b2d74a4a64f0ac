//! [`Redaction`]: what is masked in an audit record before any sink sees it, and two common
//! text maskers ([`mask_card_numbers`], [`mask_emails`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::audit::record::AuditRecord;

/// What a field rule puts in place of the value it masks (unless given a function).
pub const REDACTED: &str = "[redacted]";

type FieldFn = dyn Fn(&Value) -> Value + Send + Sync;
type TextFn = dyn for<'a> Fn(&'a str) -> Cow<'a, str> + Send + Sync;

#[derive(Clone)]
struct FieldRule {
    /// `None`: every tool.
    tool: Option<String>,
    pointer: String,
    with: Option<Arc<FieldFn>>,
}

/// Rules that mask parts of every [`AuditRecord`] before any sink (the JSONL files included)
/// sees it; the files' hash chain is over the redacted lines. Give it to
/// [`AuditLogBuilder::redaction`](crate::audit::AuditLogBuilder::redaction).
///
/// - Field rules, per tool: a JSON pointer (RFC 6901) into the call's `input` and
///   `effective_input`; the value there (when there is one) is replaced by `"[redacted]"`
///   ([`field`](Self::field)) or by what a function makes of it
///   ([`field_with`](Self::field_with)). An input that is not a JSON object (a JSON text cut
///   short, an array: the call is `invalid_input`) has no field to point at, but may hold the
///   field in its text: a rule of its tool masks it whole (`"[redacted]"`). Tool `"*"` means
///   every tool (no tool can be named `*`). A tool named in a rule must be registered somewhere: `build()` fails otherwise
///   ([`BuildProblem::UnknownRedactionTool`](crate::dispatch::BuildProblem::UnknownRedactionTool)).
/// - Text rules ([`text`](Self::text)): a function over `content` (what the model read) and
///   `detail` (operator-only text, which may hold a library error's message), every tool,
///   applied in the order given.
///
/// Nothing else is changed: ids, tool names, outcomes, hook paths and the context's facts are
/// kept as they are.
///
/// The field rules hold wherever a call's input is kept: a dispatcher with this audit log
/// writes a waiting call of a [`PendingTurn`](crate::approval::PendingTurn) as its audit line
/// shows it, the hidden values sealed under the host's key (`DispatcherBuilder::seal_keys`,
/// feature `seal`; without a key such a call is blocked instead of paused), and its spans
/// (`span_content`) likewise.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::audit::{Redaction, mask_card_numbers, mask_emails};
///
/// let rules = Redaction::new()
///     .field("pay", "/card/number")?
///     .field("*", "/email")?
///     .text(mask_card_numbers)
///     .text(mask_emails);
/// # let _ = rules;
/// # Ok::<(), toolgate_core::audit::InvalidPointer>(())
/// ```
#[derive(Clone, Default)]
pub struct Redaction {
    fields: Vec<FieldRule>,
    texts: Vec<Arc<TextFn>>,
}

impl Redaction {
    /// No rules: records go to the sinks as they are.
    pub fn new() -> Self {
        Redaction::default()
    }

    /// Replaces the value at `pointer` in the `input` and `effective_input` of calls of `tool`
    /// (`"*"`: every tool) with the string `"[redacted]"`. A pointer that leads nowhere in a
    /// given input changes nothing; `""` is the whole input.
    ///
    /// # Errors
    /// [`InvalidPointer`] when `pointer` is not an RFC 6901 JSON pointer: not empty and not
    /// starting with `/`, or a `~` not followed by `0` or `1`.
    pub fn field(
        self,
        tool: impl Into<String>,
        pointer: impl Into<String>,
    ) -> Result<Self, InvalidPointer> {
        self.push_field(tool.into(), pointer.into(), None)
    }

    /// Like [`field`](Self::field), with `f`'s answer in place of the value (e.g. a card number
    /// cut to its last four digits).
    ///
    /// # Errors
    /// As [`field`](Self::field).
    pub fn field_with<F>(
        self,
        tool: impl Into<String>,
        pointer: impl Into<String>,
        f: F,
    ) -> Result<Self, InvalidPointer>
    where
        F: Fn(&Value) -> Value + Send + Sync + 'static,
    {
        self.push_field(tool.into(), pointer.into(), Some(Arc::new(f)))
    }

    fn push_field(
        mut self,
        tool: String,
        pointer: String,
        with: Option<Arc<FieldFn>>,
    ) -> Result<Self, InvalidPointer> {
        check_pointer(&pointer)?;
        self.fields.push(FieldRule {
            tool: (tool != "*").then_some(tool),
            pointer,
            with,
        });
        Ok(self)
    }

    /// Runs `f` over every record's `content` and `detail` (after the rules given before it).
    /// Write `f` as a function `fn(&str) -> Cow<'_, str>`, returning `Cow::Borrowed` when
    /// nothing changes; [`mask_card_numbers`] and [`mask_emails`] are two.
    pub fn text<F>(mut self, f: F) -> Self
    where
        F: for<'a> Fn(&'a str) -> Cow<'a, str> + Send + Sync + 'static,
    {
        self.texts.push(Arc::new(f));
        self
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.texts.is_empty()
    }

    /// The tools the field rules name (not `"*"`), in the order given.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().filter_map(|r| r.tool.as_deref())
    }

    /// Applies every rule to `record`, in the order given (what an
    /// [`AuditLog`](crate::audit::AuditLog) does before its sinks see the record).
    pub fn apply(&self, record: &mut AuditRecord) {
        for rule in self.fields_of(&record.name) {
            rule.mask(&mut record.input);
            if let Some(effective) = &mut record.effective_input {
                rule.mask(effective);
            }
        }
        for f in &self.texts {
            if let Cow::Owned(masked) = f(&record.content) {
                record.content = masked;
            }
            if let Some(detail) = &mut record.detail
                && let Cow::Owned(masked) = f(detail)
            {
                *detail = masked;
            }
        }
    }

    /// The field rules that apply to calls of `tool`, in the order given.
    fn fields_of<'r>(&'r self, tool: &'r str) -> impl Iterator<Item = &'r FieldRule> {
        self.fields
            .iter()
            .filter(move |r| r.tool.as_deref().is_none_or(|t| t == tool))
    }

    /// Masks `input`, a call of `tool`, with the field rules of that tool, in the order given:
    /// the input as [`apply`](Self::apply) leaves a record's `input` or `effective_input` (what a
    /// paused turn shows, `approval/seal.rs`).
    pub(crate) fn mask_input(&self, tool: &str, input: &mut Value) {
        for rule in self.fields_of(tool) {
            rule.mask(input);
        }
    }

    /// Whether a field rule of `tool` reaches into `input`: its pointer leads to a value (even
    /// one equal to its mask), or the input is not an object and a rule would mask it whole.
    /// What a paused turn seals (`approval/seal.rs`): whenever a rule reaches, so a turn whose
    /// hidden fields lost their sealed value is told apart from one that had none to hide.
    pub(crate) fn reaches(&self, tool: &str, input: &Value) -> bool {
        self.fields_of(tool).any(|rule| rule.reaches(input))
    }
}

impl FieldRule {
    /// Whether [`mask`](Self::mask) changes something of `input`, or would were the value it
    /// reaches not its mask already.
    fn reaches(&self, input: &Value) -> bool {
        (!input.is_object() && !self.pointer.is_empty()) || input.pointer(&self.pointer).is_some()
    }

    fn mask(&self, input: &mut Value) {
        // An input that is not an object (a JSON text cut short, an array: refused as
        // `invalid_input`) has no field the pointer names, but may hold it in its text: masked
        // whole, so a field a rule hides never reaches a sink in another shape.
        if !input.is_object() && !self.pointer.is_empty() {
            *input = Value::String(REDACTED.to_owned());
            return;
        }
        if let Some(v) = input.pointer_mut(&self.pointer) {
            *v = match &self.with {
                Some(f) => f(v),
                None => Value::String(REDACTED.to_owned()),
            };
        }
    }
}

impl fmt::Debug for Redaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|r| format!("{} {}", r.tool.as_deref().unwrap_or("*"), r.pointer))
            .collect();
        f.debug_struct("Redaction")
            .field("fields", &fields)
            .field("texts", &self.texts.len())
            .finish()
    }
}

/// A JSON pointer that RFC 6901 does not allow, given to [`Redaction::field`].
///
/// `Display`: ``"`card` is not a JSON pointer (RFC 6901): it must be empty or start with `/`"``
/// or ``"`/a~2` is not a JSON pointer (RFC 6901): `~` must be followed by `0` or `1`"``.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pointer}` is not a JSON pointer (RFC 6901): {reason}")]
pub struct InvalidPointer {
    /// The pointer given.
    pub pointer: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

fn check_pointer(pointer: &str) -> Result<(), InvalidPointer> {
    let invalid = |reason| InvalidPointer {
        pointer: pointer.to_owned(),
        reason,
    };
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(invalid("it must be empty or start with `/`"));
    }
    let b = pointer.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'~' && !matches!(b.get(i + 1), Some(b'0' | b'1')) {
            return Err(invalid("`~` must be followed by `0` or `1`"));
        }
    }
    Ok(())
}

/// Masks payment card numbers: every run of 13 to 19 digits, with single spaces or `-` between
/// groups allowed, not touching a letter or another digit, whose check digit is right (Luhn),
/// keeps its last four digits and its separators; the other digits become `*`.
///
/// ```
/// use toolgate_core::audit::mask_card_numbers;
///
/// assert_eq!(mask_card_numbers("paid with 4242 4242 4242 4242."),
///            "paid with **** **** **** 4242.");
/// assert_eq!(mask_card_numbers("card 5555-5555-5555-4444, order o_1001"),
///            "card ****-****-****-4444, order o_1001");
/// // Not a card number: the check digit is wrong, or it is too short.
/// assert_eq!(mask_card_numbers("ref 4242424242424241, tel 0123456789"),
///            "ref 4242424242424241, tel 0123456789");
/// ```
pub fn mask_card_numbers(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        if !starts {
            i += 1;
            continue;
        }
        // The run: digits, with one separator at a time between digits.
        let mut end = i;
        let mut digits = 0;
        while end < b.len() {
            if b[end].is_ascii_digit() {
                digits += 1;
                end += 1;
            } else if matches!(b[end], b' ' | b'-')
                && b.get(end + 1).is_some_and(u8::is_ascii_digit)
            {
                end += 1;
            } else {
                break;
            }
        }
        let alone = end == b.len() || !b[end].is_ascii_alphanumeric();
        if alone && (13..=19).contains(&digits) && luhn(&b[i..end]) {
            let out = out.get_or_insert_with(|| b.to_vec());
            let mut keep = 4;
            for j in (i..end).rev() {
                if b[j].is_ascii_digit() {
                    if keep > 0 {
                        keep -= 1;
                    } else {
                        out[j] = b'*';
                    }
                }
            }
        }
        i = end.max(i + 1);
    }
    match out {
        // Only ASCII digits were replaced by an ASCII `*`: still UTF-8.
        Some(bytes) => Cow::Owned(String::from_utf8(bytes).unwrap_or_default()),
        None => Cow::Borrowed(text),
    }
}

/// The Luhn check over the digits of `run` (separators skipped).
fn luhn(run: &[u8]) -> bool {
    let mut sum = 0u32;
    for (n, d) in run
        .iter()
        .rev()
        .filter(|c| c.is_ascii_digit())
        .map(|c| u32::from(c - b'0'))
        .enumerate()
    {
        sum += if n % 2 == 1 {
            let twice = d * 2;
            if twice > 9 { twice - 9 } else { twice }
        } else {
            d
        };
    }
    sum.is_multiple_of(10)
}

/// Masks e-mail addresses: `local@domain` becomes `[email]`, where `local` is letters, digits
/// and `.!#$%&'*+/=?^_`{|}~-`, and `domain` is two or more labels of letters, digits and `-`
/// separated by dots (a trailing dot or `-` is not part of it).
///
/// ```
/// use toolgate_core::audit::mask_emails;
///
/// assert_eq!(mask_emails("write to ada.lovelace+billing@example.co.uk."),
///            "write to [email].");
/// assert_eq!(mask_emails("no address in @handle or user@localhost"),
///            "no address in @handle or user@localhost");
/// ```
pub fn mask_emails(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let local_char = |c: u8| c.is_ascii_alphanumeric() || b".!#$%&'*+/=?^_`{|}~-".contains(&c);
    let label_char = |c: u8| c.is_ascii_alphanumeric() || c == b'-';
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(offset) = b[at..].iter().position(|&c| c == b'@') {
        let pos = at + offset;
        at = pos + 1;
        let mut start = pos;
        while start > copied && local_char(b[start - 1]) {
            start -= 1;
        }
        // The domain: labels separated by single dots, at least two labels.
        let mut end = pos + 1;
        let mut last_good = None;
        let mut labels = 0;
        loop {
            let label_start = end;
            while end < b.len() && label_char(b[end]) {
                end += 1;
            }
            // A label may not end with `-`.
            let mut label_end = end;
            while label_end > label_start && b[label_end - 1] == b'-' {
                label_end -= 1;
            }
            if label_end == label_start {
                break;
            }
            labels += 1;
            if labels >= 2 {
                last_good = Some(label_end);
            }
            if label_end != end || end >= b.len() || b[end] != b'.' {
                break;
            }
            end += 1;
        }
        let Some(domain_end) = last_good else {
            continue;
        };
        if start == pos {
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str("[email]");
        copied = domain_end;
        at = domain_end;
    }
    if copied == 0 && out.is_empty() {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_numbers() {
        let cases = [
            ("4242424242424242", "************4242"),
            ("4242 4242 4242 4242", "**** **** **** 4242"),
            ("(4242-4242-4242-4242)", "(****-****-****-4242)"),
            // Amex, 15 digits; two cards in one text.
            (
                "378282246310005 and 6011111111111117",
                "***********0005 and ************1117",
            ),
            // Wrong check digit, too short, too long, touching letters, double separator.
            ("4242424242424241", "4242424242424241"),
            ("424242424242", "424242424242"),
            ("42424242424242424242", "42424242424242424242"),
            ("x4242424242424242", "x4242424242424242"),
            ("4242424242424242x", "4242424242424242x"),
            ("4242  4242 4242 4242", "4242  4242 4242 4242"),
            // A card number at the end of a sentence, after non-ASCII text.
            ("карта 4242424242424242.", "карта ************4242."),
            ("", ""),
        ];
        for (text, want) in cases {
            assert_eq!(mask_card_numbers(text), want, "{text:?}");
        }
        assert!(matches!(mask_card_numbers("o_1001"), Cow::Borrowed(_)));
    }

    #[test]
    fn emails() {
        let cases = [
            ("ada@example.com", "[email]"),
            ("<ada@example.com>", "<[email]>"),
            ("a@b.c d@e.f", "[email] [email]"),
            ("mail ada@example.com.", "mail [email]."),
            ("x@sub-domain.example-.com", "[email]-.com"),
            ("user@localhost", "user@localhost"),
            ("@example.com", "@example.com"),
            ("ada@", "ada@"),
            ("ada@.com", "ada@.com"),
            ("ünï ada@example.com ünï", "ünï [email] ünï"),
            ("a@b@c.d", "a@[email]"),
        ];
        for (text, want) in cases {
            assert_eq!(mask_emails(text), want, "{text:?}");
        }
        assert!(matches!(mask_emails("no at sign"), Cow::Borrowed(_)));
    }

    #[test]
    fn pointers_are_checked() {
        assert_eq!(
            Redaction::new().field("t", "card").unwrap_err().to_string(),
            "`card` is not a JSON pointer (RFC 6901): it must be empty or start with `/`"
        );
        assert_eq!(
            Redaction::new().field("t", "/a~2").unwrap_err().to_string(),
            "`/a~2` is not a JSON pointer (RFC 6901): `~` must be followed by `0` or `1`"
        );
        assert_eq!(
            Redaction::new().field("t", "/a~").unwrap_err().reason,
            "`~` must be followed by `0` or `1`"
        );
        assert!(Redaction::new().field("t", "").is_ok());
        assert!(Redaction::new().field("t", "/a~0b/~1c/0").is_ok());
    }
}
