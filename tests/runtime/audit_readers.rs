//! One record, one line, for every reader: text from the model holding CR, LF, CRLF, U+0085,
//! U+2028, U+2029 and ANSI escape sequences, in a tool name, a deny reason and input values
//! (keys and strings), is written into the audit files escaped, so Rust's `str::lines`, Python's
//! `str.splitlines`, Node's `readline` and a JavaScript reader splitting on ECMAScript's line
//! terminators each read one line per record, and the same values. A chain holding lines
//! written before the escapes (raw U+2028 in them) goes on and still verifies.

use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, ToolUse,
    audit::{AUDIT_LOG_FILE, AuditLog, AuditRecord, CHAIN_START, SESSION_SUMMARIES_FILE},
    audit::{ChainStatus, verify_audit_dir},
};

use crate::support::{self, LineReader, json_lines, sha256_hex};

/// Every character that ends a line for one reader or another, and an ANSI escape sequence.
const HOSTILE: &str = "a\rb\nc\r\nd\u{85}e\u{2028}f\u{2029}g\u{1b}[31mred\u{1b}[0m";

mod items {
    use toolgate::{Decision, ToolUse, pre_hook, tool};

    /// Keeps a note.
    #[tool]
    pub(crate) fn note(
        /// The note.
        text: String,
    ) -> String {
        format!("noted: {text}")
    }

    /// Denies a note that holds a secret, quoting it in the reason.
    #[pre_hook(order = 1, tools = [note])]
    pub(crate) fn no_secrets(call: &ToolUse) -> Decision {
        match call.input["text"].as_str() {
            Some(text) if text.contains("secret") => {
                Decision::deny(format!("this note holds a secret: {text}"))
            }
            _ => Decision::Allow,
        }
    }
}

/// Four calls carrying [`HOSTILE`] (allowed, denied with it in the reason, an unknown tool of
/// that name, an input with it as a key), then the session's end: four call lines and one
/// summary line in `dir`. The user id carries it too (the host's text, on every line and on the
/// summary, which counts only known tools).
fn write_hostile_trail(dir: &std::path::Path) {
    let d = Dispatcher::builder()
        .registered_under(format!("{}::items", module_path!()))
        .audit_log(AuditLog::open(dir).unwrap())
        .build()
        .unwrap();
    let s = d.session(HookContext::builder(format!("u_1{HOSTILE}"), "sess_readers").build());
    for (id, tool, input) in [
        ("toolu_1", "note".to_owned(), json!({ "text": HOSTILE })),
        (
            "toolu_2",
            "note".to_owned(),
            json!({ "text": format!("secret {HOSTILE}") }),
        ),
        (
            "toolu_3",
            format!("look{HOSTILE}up"),
            json!({ "q": HOSTILE }),
        ),
        (
            "toolu_4",
            "note".to_owned(),
            json!({ "text": "x", HOSTILE: [HOSTILE] }),
        ),
    ] {
        let _ = toolgate::block_on(s.call(&ToolUse::new(id, tool, input)));
    }
    // The JSONL files are written as each record comes: ended, the summary is on the disk.
    s.end();
}

#[test]
fn model_text_with_every_line_break_is_one_line_per_record_for_every_reader() {
    let dir = support::TempDir::new("audit-readers");
    write_hostile_trail(&dir);
    let calls = dir.join(AUDIT_LOG_FILE);
    let sessions = dir.join(SESSION_SUMMARIES_FILE);

    // Rust's `str::lines`: four call lines, one summary line, the values as the model sent them.
    let lines = json_lines(&calls);
    let shown: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["tool"].as_str().unwrap(), l["outcome"].as_str().unwrap()))
        .collect();
    let unknown = format!("look{HOSTILE}up");
    assert_eq!(
        shown,
        [
            ("note", "ok"),
            ("note", "blocked"),
            (unknown.as_str(), "unknown_tool"),
            ("note", "invalid_input"),
        ]
    );
    assert_eq!(lines[0]["input"]["text"], HOSTILE);
    assert_eq!(lines[0]["content"], format!("noted: {HOSTILE}"));
    assert_eq!(
        lines[1]["content"],
        format!("BLOCKED: this note holds a secret: secret {HOSTILE}")
    );
    assert_eq!(lines[2]["input"]["q"], HOSTILE);
    assert_eq!(lines[3]["input"][HOSTILE], json!([HOSTILE]));
    let summaries = json_lines(&sessions);
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0]["user_id"], format!("u_1{HOSTILE}"));
    assert_eq!(summaries[0]["tools"], json!({"note": 3}));
    assert!(
        lines
            .iter()
            .all(|l| l["user_id"] == summaries[0]["user_id"])
    );

    // The other readers: the same records, line for line.
    for reader in LineReader::ALL {
        assert_eq!(reader.read(&calls), lines, "{reader:?}");
        assert_eq!(reader.read(&sessions), summaries, "{reader:?}");
    }
    // The bytes: no character any reader ends a line at but each line's `\n`, no raw ESC.
    for path in [&calls, &sessions] {
        let text = std::fs::read_to_string(path).unwrap();
        for c in [
            '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}', '\u{1b}',
        ] {
            assert!(!text.contains(c), "{c:?} raw in {}", path.display());
        }
        assert!(text.contains(r"d\u0085e\u2028f\u2029g\u001b[31m"));
    }
}

#[test]
fn a_chain_of_lines_written_before_the_escapes_goes_on_and_verifies() {
    let dir = support::TempDir::new("audit-readers-old");
    // A line as serde_json writes it (U+2028 raw), chained as the files chain it.
    let record: AuditRecord = serde_json::from_value(json!({
        "ts": "2026-11-24T10:15:00Z", "session_id": "sess_old", "user_id": "u_1",
        "tool_use_id": "toolu_old", "tool": "note", "input": {"text": "one\u{2028}two"},
        "outcome": "ok", "is_error": false, "content": "\"noted\"", "duration_us": 7
    }))
    .unwrap();
    let object = serde_json::to_string(&record).unwrap();
    assert!(object.contains('\u{2028}'));
    let old_line = format!(
        "{},\"prev\":\"{CHAIN_START}\"}}\n",
        object.strip_suffix('}').unwrap()
    );
    std::fs::write(dir.join(AUDIT_LOG_FILE), &old_line).unwrap();

    write_hostile_trail(&dir);
    let verified = verify_audit_dir(&dir).unwrap();
    let text = std::fs::read_to_string(dir.join(AUDIT_LOG_FILE)).unwrap();
    let last = text.lines().last().unwrap();
    assert_eq!(
        verified.calls.status,
        ChainStatus::Ok {
            lines: 5,
            last_hash: sha256_hex(format!("{last}\n").as_bytes()),
        }
    );
    // The old line as it was written; the new ones escaped, the first chained to it.
    assert!(text.starts_with(&old_line));
    let second: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(second["prev"], sha256_hex(old_line.as_bytes()));
    assert_eq!(text.matches('\u{2028}').count(), 1);
}
