//! The audit log: line formats, concurrency, and write errors that never change a result.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::support;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, ToolResult, ToolUse,
    audit::{AuditLog, AuditRecord, Outcome, SummaryRecord},
    dispatch::Clock,
};

mod tools {
    use toolgate::tool;

    /// Adds two numbers.
    #[tool]
    pub(crate) fn add(
        /// The first number.
        a: i64,
        /// The second number.
        b: i64,
    ) -> i64 {
        a + b
    }
}

fn dispatcher(log: AuditLog) -> Dispatcher {
    Dispatcher::builder()
        .registered_under(format!("{}::tools", module_path!()))
        .audit_log(log)
        .build()
        .unwrap()
}

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

/// A clock that moves one second forward at every read, starting at `start`: each timestamp
/// the dispatcher writes is distinct, so a field read at the wrong moment (or two fields
/// swapped) shows.
fn ticking(start: u64) -> Clock {
    let reads = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Clock::Custom(Arc::new(move || {
        at(start + reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst))
    }))
}

#[test]
fn lines_have_the_documented_fields() {
    let dir = support::TempDir::new("audit-format");
    let d = dispatcher(AuditLog::open(dir.join("nested/created")).unwrap());
    // Reads, in order: the session's start (10:15:00), one per audit line (:01, :02), the
    // summary's `ended_at` (:03), the summary line's `ts` (:04).
    let ctx = HookContext::builder("u_001", "sess_fmt")
        .clock(ticking(1_795_515_300))
        .build();
    let s = d.session(ctx);
    let r = toolgate::block_on(s.call(&ToolUse::new(
        "toolu_1",
        "add",
        json!("{\"a\": 2, \"b\": 3}"),
    )))
    .unwrap();
    assert_eq!(r, ToolResult::text("toolu_1", "5"));
    let r = toolgate::block_on(s.call(&ToolUse::new("toolu_2", "add", json!({"a": 1, "b": 1}))))
        .unwrap();
    assert_eq!(r, ToolResult::text("toolu_2", "2"));
    s.end();
    // Exact text, member order included; `prev` is recomputed by `chained_lines`.
    let (lines, _) =
        support::chained_lines(&dir.join("nested/created/audit_log.jsonl"), support::ZEROS);
    assert_eq!(
        lines,
        [
            r#"{"ts":"2026-11-24T10:15:01Z","session_id":"sess_fmt","user_id":"u_001","tool_use_id":"toolu_1","tool":"add","input":{"a":2,"b":3},"outcome":"ok","is_error":false,"content":"5","duration_us":0,"prev":"…"}"#,
            r#"{"ts":"2026-11-24T10:15:02Z","session_id":"sess_fmt","user_id":"u_001","tool_use_id":"toolu_2","tool":"add","input":{"a":1,"b":1},"outcome":"ok","is_error":false,"content":"2","duration_us":0,"prev":"…"}"#,
        ]
    );
    let (summaries, _) = support::chained_lines(
        &dir.join("nested/created/session_summaries.jsonl"),
        support::ZEROS,
    );
    assert_eq!(
        summaries,
        [
            r#"{"ts":"2026-11-24T10:15:04Z","session_id":"sess_fmt","user_id":"u_001","started_at":"2026-11-24T10:15:00Z","ended_at":"2026-11-24T10:15:03Z","calls":2,"outcomes":{"ok":2},"tools":{"add":2},"observer_errors":0,"prev":"…"}"#
        ]
    );
}

/// A trusted fact a rule decides on: the user's role in the project.
#[derive(serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Role {
    Maintainer,
}

/// Another: where the user is, with a structure of its own.
#[derive(serde::Serialize)]
struct Region {
    code: &'static str,
    eu: bool,
}

/// A fact the host keeps in the context and does not record.
struct ApiToken(#[allow(dead_code)] &'static str);

#[test]
fn the_context_extensions_the_log_records_are_on_the_line_by_name_and_only_those() {
    let dir = support::TempDir::new("audit-extensions");
    let log = AuditLog::builder()
        .dir(&dir)
        .record_extension::<Role>("role")
        .record_extension::<Region>("region")
        .build()
        .unwrap();
    let d = dispatcher(log);
    // One thread: the log refills one record per thread, so a session without the facts after
    // one with them shows whether they are cleared.
    let sessions = [
        ("sess_all", true, true),
        ("sess_none", false, false),
        ("sess_region", false, true),
    ];
    for (session, role, region) in sessions {
        let mut ctx = HookContext::builder("octocat", session)
            .tier("premium")
            .clock(Clock::fixed(at(1_795_515_300)))
            .extension(ApiToken("ghp_secret"));
        if role {
            ctx = ctx.extension(Role::Maintainer);
        }
        if region {
            ctx = ctx.extension(Region {
                code: "de",
                eu: true,
            });
        }
        let s = d.session(ctx.build());
        toolgate::block_on(s.call(&ToolUse::new("toolu_1", "add", json!({"a": 1, "b": 2}))))
            .unwrap();
        s.end();
    }
    let (lines, _) = support::chained_lines(&dir.join("audit_log.jsonl"), support::ZEROS);
    let line = |session: &str, extensions: &str| {
        format!(
            r#"{{"ts":"2026-11-24T10:15:00Z","session_id":"{session}","user_id":"octocat","tier":"premium",{extensions}"tool_use_id":"toolu_1","tool":"add","input":{{"a":1,"b":2}},"outcome":"ok","is_error":false,"content":"3","duration_us":0,"prev":"…"}}"#
        )
    };
    assert_eq!(
        lines,
        [
            line(
                "sess_all",
                r#""extensions":{"role":"maintainer","region":{"code":"de","eu":true}},"#
            ),
            line("sess_none", ""),
            line(
                "sess_region",
                r#""extensions":{"region":{"code":"de","eu":true}},"#
            ),
        ]
    );
    // Read back as records: the same facts, by name.
    let records: Vec<AuditRecord> = support::json_lines(&dir.join("audit_log.jsonl"))
        .into_iter()
        .map(|l| serde_json::from_value(l).unwrap())
        .collect();
    assert_eq!(records[0].extensions["role"], "maintainer");
    assert!(records[1].extensions.is_empty());
}

#[test]
fn the_context_tier_is_on_the_line_after_the_user_and_absent_without_one() {
    let dir = support::TempDir::new("audit-tier");
    let d = dispatcher(AuditLog::open(&dir).unwrap());
    for (session, tier) in [("sess_premium", Some("premium")), ("sess_none", None)] {
        let mut ctx = HookContext::builder("u_001", session).clock(ticking(1_795_515_300));
        if let Some(tier) = tier {
            ctx = ctx.tier(tier);
        }
        let s = d.session(ctx.build());
        toolgate::block_on(s.call(&ToolUse::new("toolu_1", "add", json!({"a": 1, "b": 2}))))
            .unwrap();
        s.end();
    }
    let (lines, _) = support::chained_lines(&dir.join("audit_log.jsonl"), support::ZEROS);
    assert_eq!(
        lines,
        [
            r#"{"ts":"2026-11-24T10:15:01Z","session_id":"sess_premium","user_id":"u_001","tier":"premium","tool_use_id":"toolu_1","tool":"add","input":{"a":1,"b":2},"outcome":"ok","is_error":false,"content":"3","duration_us":0,"prev":"…"}"#,
            r#"{"ts":"2026-11-24T10:15:01Z","session_id":"sess_none","user_id":"u_001","tool_use_id":"toolu_1","tool":"add","input":{"a":1,"b":2},"outcome":"ok","is_error":false,"content":"3","duration_us":0,"prev":"…"}"#,
        ]
    );
}

#[test]
fn a_line_reads_back_into_the_record_every_sink_receives() {
    let dir = support::TempDir::new("audit-read-back");
    let d = dispatcher(AuditLog::open(&dir).unwrap());
    let ctx = HookContext::builder("u_001", "sess_back")
        .tier("free")
        .clock(ticking(1_795_515_300))
        .build();
    let s = d.session(ctx);
    toolgate::block_on(s.call(&ToolUse::new("toolu_1", "add", json!({"a": 1, "b": "x"})))).unwrap();
    s.end();
    let text = std::fs::read_to_string(dir.join("audit_log.jsonl")).unwrap();
    let record: AuditRecord = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(record.ts, at(1_795_515_301));
    assert_eq!(record.tier.as_deref(), Some("free"));
    assert_eq!(record.outcome, Outcome::InvalidInput);
    // Written again, a record is its line without `prev`.
    let mut again: Value = serde_json::to_value(&record).unwrap();
    again["duration_us"] = json!(0);
    let mut line: Value = serde_json::from_str(&text).unwrap();
    line["duration_us"] = json!(0);
    line.as_object_mut().unwrap().remove("prev");
    assert_eq!(again, line);
    let summary_text = std::fs::read_to_string(dir.join("session_summaries.jsonl")).unwrap();
    let summary: SummaryRecord = serde_json::from_str(&summary_text).unwrap();
    assert_eq!(summary.ts, at(1_795_515_303));
    assert_eq!(summary.summary.started_at, at(1_795_515_300));
    assert_eq!(
        summary.summary.outcomes.get(&Outcome::InvalidInput),
        Some(&1)
    );
}

#[test]
fn eight_threads_of_a_thousand_calls_lose_and_interleave_nothing_and_keep_one_chain() {
    let dir = support::TempDir::new("audit-threads");
    let d = Arc::new(dispatcher(AuditLog::open(&dir).unwrap()));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                let s =
                    d.session(HookContext::builder(format!("u_{t}"), format!("sess_{t}")).build());
                for i in 0..1000 {
                    let call =
                        ToolUse::new(format!("toolu_{t}_{i}"), "add", json!({"a": t, "b": i}));
                    let r = toolgate::block_on(s.call(&call)).unwrap();
                    assert_eq!(r.content_text(), (t + i).to_string());
                }
                s.end()
            })
        })
        .collect();
    let summaries: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(summaries.iter().all(|s| s.calls == 1000));

    let text = std::fs::read_to_string(dir.join("audit_log.jsonl")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("every line parses on its own");
        let id = v["tool_use_id"].as_str().unwrap().to_owned();
        let (t, i) = id.trim_start_matches("toolu_").split_once('_').unwrap();
        assert_eq!(v["session_id"], format!("sess_{t}"));
        assert_eq!(
            v["content"],
            (t.parse::<i64>().unwrap() + i.parse::<i64>().unwrap()).to_string()
        );
        assert!(seen.insert(id), "no line twice");
    }
    assert_eq!(seen.len(), 8000, "none lost");
    assert_eq!(text.lines().count(), 8000);
    assert_eq!(
        support::json_lines(&dir.join("session_summaries.jsonl")).len(),
        8
    );
    // One chain through the 8 000 lines, whatever order the threads took: each line's `prev`
    // is the hash of the line before it (recomputed here), and the verifier agrees.
    let (_, last) = support::chained_lines(&dir.join("audit_log.jsonl"), support::ZEROS);
    let (_, last_summary) =
        support::chained_lines(&dir.join("session_summaries.jsonl"), support::ZEROS);
    let verified = toolgate::audit::verify_audit_dir(&dir).unwrap();
    assert_eq!(
        verified.calls.status,
        toolgate::audit::ChainStatus::Ok {
            lines: 8000,
            last_hash: last
        }
    );
    assert_eq!(
        verified.sessions.status,
        toolgate::audit::ChainStatus::Ok {
            lines: 8,
            last_hash: last_summary
        }
    );
}

#[test]
fn a_write_error_goes_to_the_observer_channel_and_the_result_is_unchanged() {
    let dir = support::TempDir::new("audit-full");
    // Every write to /dev/full fails with ENOSPC.
    std::os::unix::fs::symlink("/dev/full", dir.join("audit_log.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/full", dir.join("session_summaries.jsonl")).unwrap();
    let d = dispatcher(AuditLog::open(&dir).unwrap());
    let s = d.session(HookContext::builder("u_001", "sess_full").build());
    let r = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "add", json!({"a": 1, "b": 1}))))
        .unwrap();
    assert_eq!(r, ToolResult::text("toolu_1", "2"));
    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::Ok), Some(&1));
    assert_eq!(
        summary.observer_errors, 2,
        "the call line and the summary line both failed"
    );
}

#[test]
fn opening_a_file_as_the_audit_folder_names_the_path() {
    let dir = support::TempDir::new("audit-not-a-folder");
    let file = dir.join("plain-file");
    std::fs::write(&file, "not a folder").unwrap();
    let err = AuditLog::open(&file).expect_err("a file is not a folder");
    assert_eq!(err.kind(), std::io::ErrorKind::NotADirectory);
    assert_eq!(
        err.to_string(),
        format!(
            "cannot use `{}` as the audit folder: it exists and is not a folder",
            file.display()
        )
    );
    // A folder that cannot be created because a parent is a file names the folder.
    let below = file.join("below");
    let err = AuditLog::open(&below).expect_err("a parent is a file");
    assert!(
        err.to_string().starts_with(&format!(
            "cannot create the audit folder `{}`: ",
            below.display()
        )),
        "{err}"
    );
    // The file is untouched.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
    let _ = std::fs::remove_dir_all(&dir);
}
