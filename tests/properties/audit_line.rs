//! The audit line written by hand (`AuditRecord::write_json`) is serde_json's bytes for the same
//! record, but with the C1 controls, U+2028 and U+2029 written as JSON escapes: random records
//! with every member present or absent, strings made of every control character, `"`, `\`, DEL,
//! C1, U+2028/2029 and their neighbours, non-ASCII and ASCII (and arbitrary Unicode), inputs of
//! every JSON shape with integers and floats of every size, timestamps before and after the epoch
//! with and without a fraction. Every line is one line for Rust's `str::lines`, Python's
//! `str::splitlines` and ECMAScript's line terminators.
//!
//! `cases(3000)` cases in CI (`PROPTEST_CASES` overrides).

use std::time::{Duration, UNIX_EPOCH};

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate::audit::{AuditRecord, HookOutcome, Outcome, Rfc3339};

/// Characters JSON escapes or that a naive escaper gets wrong, and plain ones.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        (0u8..0x20).prop_map(char::from),
        Just('"'),
        Just('\\'),
        Just('\u{7f}'),
        Just('\u{2028}'),
        Just('\u{2029}'),
        (0x80u8..0xa0).prop_map(char::from),
        Just('\u{85}'),
        // The neighbours of the line's own escapes: `C2 A0`, `E2 80 A7`, `E2 80 AA`, `E2 80 94`.
        Just('\u{a0}'),
        Just('\u{2027}'),
        Just('\u{202a}'),
        Just('—'),
        Just('é'),
        Just('😀'),
        Just('/'),
        // The neighbours of the escaped bytes (a mask with a carry across bytes trips here).
        Just(' '),
        Just('!'),
        Just('#'),
        Just('['),
        Just(']'),
        proptest::char::range('a', 'z'),
        proptest::char::range('a', 'z'),
        proptest::char::range('a', 'z'),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(tricky_char(), 0..40).prop_map(String::from_iter),
        any::<String>(),
        // Long clean runs with the odd escape: the word-at-a-time path.
        (proptest::collection::vec(tricky_char(), 0..4), 0usize..70).prop_map(|(odd, n)| {
            let mut s = vec!['x'; n];
            for (i, c) in odd.into_iter().enumerate() {
                s.insert((i * 13) % (s.len() + 1), c);
            }
            String::from_iter(s)
        }),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..1000).prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(json!(0.1)),
        Just(json!(1e21)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((text(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

const DECISIONS: [HookOutcome; 6] = [
    HookOutcome::Allow,
    HookOutcome::Deny,
    HookOutcome::Rewrite,
    HookOutcome::Failed,
    HookOutcome::Timeout,
    HookOutcome::Ask,
];

/// A record's JSON as a sink could read it back: every member, optional ones present or not.
fn record() -> impl Strategy<Value = Value> {
    let instant = (
        any::<bool>(),
        0u64..20_000_000_000,
        0u32..1_000_000_000,
        0u32..4,
    )
        .prop_map(|(before, secs, nanos, round)| {
            // A fraction of 0, of whole milliseconds, of whole microseconds, or any.
            let nanos = match round {
                0 => 0,
                1 => nanos / 1_000_000 * 1_000_000,
                2 => nanos / 1_000 * 1_000,
                _ => nanos,
            };
            let d = Duration::new(secs, nanos);
            let at = if before {
                UNIX_EPOCH - d
            } else {
                UNIX_EPOCH + d
            };
            Rfc3339(at).to_string()
        });
    let head = (
        instant,
        text(),
        text(),
        proptest::option::of(text()),
        text(),
        text(),
        value(),
        proptest::sample::select(Outcome::ALL.to_vec()),
        any::<bool>(),
        text(),
        any::<u64>(),
    );
    let hook = (
        text(),
        proptest::sample::select(DECISIONS.to_vec()),
        any::<u64>(),
    );
    let tail = (
        proptest::option::of(text()),
        proptest::collection::vec(text(), 0..3),
        proptest::collection::vec(hook, 0..5),
        proptest::option::of(value()),
        proptest::option::of(text()),
        proptest::option::of(any::<u64>()),
        any::<bool>(),
        proptest::collection::vec((text(), text()), 0..3),
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::option::of((any::<u64>(), any::<u64>(), any::<u64>(), 0u64..2)),
        any::<bool>(),
    );
    (head, tail).prop_map(|(head, tail)| {
        let (
            ts,
            session_id,
            user_id,
            tier,
            tool_use_id,
            tool,
            input,
            outcome,
            is_error,
            content,
            duration_us,
        ) = head;
        let (
            blocked_by,
            rewritten_by,
            hooks,
            effective_input,
            detail,
            content_bytes,
            replay,
            asked_by,
            approved_by,
            denied_by,
            lease,
            is_final,
        ) = tail;
        let mut m = Map::new();
        m.insert("ts".into(), json!(ts));
        m.insert("session_id".into(), json!(session_id));
        m.insert("user_id".into(), json!(user_id));
        if let Some(tier) = tier {
            m.insert("tier".into(), json!(tier));
        }
        m.insert("tool_use_id".into(), json!(tool_use_id));
        m.insert("tool".into(), json!(tool));
        m.insert("input".into(), input);
        m.insert("outcome".into(), json!(outcome.as_str()));
        m.insert("is_error".into(), json!(is_error));
        m.insert("content".into(), json!(content));
        m.insert("duration_us".into(), json!(duration_us));
        if let Some(by) = blocked_by {
            m.insert("blocked_by".into(), json!(by));
        }
        m.insert("rewritten_by".into(), json!(rewritten_by));
        let hooks: Vec<Value> = hooks
            .into_iter()
            .map(|(hook, decision, us)| {
                json!({"hook": hook, "decision": decision.as_str(), "duration_us": us})
            })
            .collect();
        m.insert("hooks".into(), Value::Array(hooks));
        if let Some(input) = effective_input {
            m.insert("effective_input".into(), input);
        }
        if let Some(detail) = detail {
            m.insert("detail".into(), json!(detail));
        }
        if let Some(n) = content_bytes {
            m.insert("content_bytes".into(), json!(n));
        }
        m.insert("replay".into(), json!(replay));
        let asked: Vec<Value> = asked_by
            .into_iter()
            .map(|(hook, reason)| json!({"hook": hook, "reason": reason}))
            .collect();
        m.insert("asked_by".into(), Value::Array(asked));
        if let Some(by) = approved_by {
            m.insert("approved_by".into(), json!(by));
        }
        if let Some(by) = denied_by {
            m.insert("denied_by".into(), json!(by));
        }
        if let Some((lease_ms, renew_every_ms, renewals, renewals_failed)) = lease {
            m.insert(
                "lease".into(),
                json!({"lease_ms": lease_ms, "renew_every_ms": renew_every_ms,
                       "renewals": renewals, "renewals_failed": renewals_failed}),
            );
        }
        m.insert("final".into(), json!(is_final));
        Value::Object(m)
    })
}

/// serde_json's text with the line's own escapes: each C1 control, U+2028 and U+2029 (which
/// serde_json writes raw, and only inside strings) as `\u` and four lowercase hex digits.
fn with_line_escapes(serde: &str) -> String {
    let mut out = String::with_capacity(serde.len());
    for c in serde.chars() {
        match u32::from(c) {
            n @ (0x80..=0x9f | 0x2028 | 0x2029) => out.push_str(&format!("\\u{n:04x}")),
            _ => out.push(c),
        }
    }
    out
}

/// Whether `c` ends a line for Python's `str.splitlines` (`\n`, `\r`, `\v`, `\f`, `\x1c` to
/// `\x1e`, `\x85`, U+2028, U+2029; ECMAScript's line terminators, `\n`, `\r`, U+2028 and
/// U+2029, are among them).
fn breaks_a_line(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

#[test]
fn the_hand_written_audit_line_is_serde_jsons_with_the_line_breaks_escaped() {
    proptest::test_runner::TestRunner::new(crate::runner_config(3000))
        .run(&record(), |json| {
            let record: AuditRecord =
                serde_json::from_value(json.clone()).expect("a record's JSON");
            let serde = serde_json::to_string(&record).expect("serde_json writes it");
            let expected = with_line_escapes(&serde);
            // Every generated member reached the record (`Deserialize` skips unknown keys, so a
            // misspelt one would drop out of both sides unseen): the line read back is the
            // generated object, less the members written only when not their default.
            let mut sent = json;
            let read: Value = serde_json::from_str(&expected).expect("JSON");
            // The escapes change the text, never the value.
            prop_assert_eq!(&read, &serde_json::from_str::<Value>(&serde).expect("JSON"));
            if let Value::Object(sent) = &mut sent {
                sent.retain(|key, value| {
                    let default = match key.as_str() {
                        "rewritten_by" | "hooks" | "asked_by" => value == &json!([]),
                        "replay" => value == &json!(false),
                        "final" => value == &json!(true),
                        // `null` reads as `None` (no rewrite), which is not written.
                        "effective_input" => value.is_null(),
                        _ => false,
                    };
                    !default
                });
            }
            // Both sides read from a text: serde_json's default float parsing is not exact, so
            // the generated value is put through a text too.
            let sent: Value = serde_json::from_str(&sent.to_string()).expect("JSON");
            prop_assert_eq!(&read, &sent);
            // Written into a buffer that already holds a line: appended, never cleared.
            let mut out = b"{}\n".to_vec();
            record.write_json(&mut out);
            let out = String::from_utf8(out).expect("UTF-8");
            prop_assert_eq!(&out, &format!("{{}}\n{expected}"));
            // One line for every reader: nothing in it that any of them splits on.
            prop_assert!(!out["{}\n".len()..].contains(breaks_a_line), "{}", out);
            Ok(())
        })
        .unwrap();
}
