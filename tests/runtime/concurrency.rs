//! Concurrency: two threads run many sessions on one shared dispatcher and one shared audit
//! log. No audit line is lost, torn or interleaved (lines of 10 KiB and more, larger than a
//! pipe's atomic write), each session's lines come in its call order, and the summaries'
//! totals equal the calls made. Also one session shared by two threads.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use crate::support::{INJECTED, TempDir, json_lines, quiet_injected_panics};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolError, ToolUse,
    audit::{AuditLog, Outcome},
    dispatch::{PreHookDef, ToolDef},
};

const THREADS: usize = 2;
const SESSIONS_PER_THREAD: usize = 60;
const BIG: usize = 10 * 1024;

/// Arguments of `work`.
#[derive(Deserialize, JsonSchema)]
struct Work {
    /// What to do: `ok`, `big`, `fail`, `panic` or `deny`.
    mode: String,
}

/// Counts the tool's runs.
#[derive(Default)]
struct Runs(AtomicU64);

fn dispatcher(log: &AuditLog, runs: &Arc<Runs>) -> Dispatcher {
    let runs = Arc::clone(runs);
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "work",
            "Does some work.",
            move |_env, w: Work| {
                runs.0.fetch_add(1, Ordering::SeqCst);
                match w.mode.as_str() {
                    "big" => Ok("b".repeat(BIG)),
                    "fail" => Err(ToolError::new("the work failed.")),
                    "panic" => panic!("{INJECTED}: work panicked"),
                    _ => Ok("done".into()),
                }
            },
        ))
        .pre_hook(PreHookDef::sync("tests::deny_mode", 1, |_env, call| {
            Ok(match call.input["mode"].as_str() {
                Some("deny") => Decision::deny("not allowed."),
                _ => Decision::Allow,
            })
        }))
        .audit_log(log.clone())
        .build()
        .unwrap()
}

/// The calls of one session and the outcome each must have.
fn script(n: usize) -> Vec<(ToolUse, Outcome)> {
    let kinds = [
        ("work", json!({"mode": "ok"}), Outcome::Ok),
        ("work", json!({"mode": "big"}), Outcome::Ok),
        ("work", json!({"mode": "fail"}), Outcome::ToolError),
        ("work", json!({"mode": "panic"}), Outcome::Panicked),
        ("work", json!({"mode": "deny"}), Outcome::Blocked),
        ("work", json!({"mode": 7}), Outcome::InvalidInput),
        ("nope", json!({}), Outcome::UnknownTool),
        ("work", json!({"mode": "big"}), Outcome::Ok),
    ];
    (0..kinds.len())
        .map(|i| {
            let (name, input, outcome) = &kinds[(i + n) % kinds.len()];
            (
                ToolUse::new(format!("toolu_{i}"), *name, input.clone()),
                *outcome,
            )
        })
        .collect()
}

#[test]
fn two_threads_many_sessions_one_dispatcher_one_audit_log() {
    quiet_injected_panics();
    let dir = TempDir::new("concurrency");
    let log = AuditLog::open(dir.path()).unwrap();
    let runs = Arc::new(Runs::default());
    let d = dispatcher(&log, &runs);
    let barrier = Barrier::new(THREADS);
    let expected_runs = AtomicU64::new(0);

    let summaries: Vec<toolgate::audit::SessionSummary> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (d, barrier, expected_runs) = (&d, &barrier, &expected_runs);
                scope.spawn(move || {
                    barrier.wait();
                    let mut out = Vec::new();
                    for n in 0..SESSIONS_PER_THREAD {
                        let ctx =
                            HookContext::builder(format!("u_{t}"), format!("sess_{t}_{n}")).build();
                        let s = d.session(ctx);
                        for (call, outcome) in script(n) {
                            let r = toolgate::block_on(s.call(&call)).unwrap();
                            assert_eq!(r.tool_use_id, call.id);
                            assert_eq!(r.is_error, outcome != Outcome::Ok);
                            if matches!(
                                outcome,
                                Outcome::Ok | Outcome::ToolError | Outcome::Panicked
                            ) {
                                expected_runs.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        out.push(s.end());
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });

    let calls_per_session = script(0).len();
    let total = THREADS * SESSIONS_PER_THREAD * calls_per_session;
    assert_eq!(
        runs.0.load(Ordering::SeqCst),
        expected_runs.load(Ordering::SeqCst)
    );

    // Every line parses (a torn or interleaved line would not), none is lost.
    let lines = json_lines(&log.audit_log_path().unwrap());
    assert_eq!(lines.len(), total);
    let mut per_session: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for line in &lines {
        per_session
            .entry(line["session_id"].as_str().unwrap().to_owned())
            .or_default()
            .push(line);
    }
    assert_eq!(per_session.len(), THREADS * SESSIONS_PER_THREAD);
    for (session, lines) in &per_session {
        let (t, n) = session
            .strip_prefix("sess_")
            .and_then(|r| r.split_once('_'))
            .unwrap();
        let expected = script(n.parse().unwrap());
        assert_eq!(lines.len(), expected.len(), "{session}");
        for (line, (call, outcome)) in lines.iter().zip(&expected) {
            assert_eq!(line["user_id"], format!("u_{t}"));
            assert_eq!(
                line["tool_use_id"],
                call.id.as_str(),
                "{session}: in call order"
            );
            assert_eq!(line["outcome"], outcome.as_str());
            if call.input["mode"] == "big" {
                assert_eq!(line["content"].as_str().unwrap().len(), BIG);
            }
        }
    }

    // The summaries: one line per session, totals equal the calls made.
    let summary_lines = json_lines(&log.session_summaries_path().unwrap());
    assert_eq!(summary_lines.len(), THREADS * SESSIONS_PER_THREAD);
    let line_calls: u64 = summary_lines
        .iter()
        .map(|l| l["calls"].as_u64().unwrap())
        .sum();
    let returned_calls: u64 = summaries.iter().map(|s| s.calls).sum();
    assert_eq!(line_calls, total as u64);
    assert_eq!(returned_calls, total as u64);
    let mut by_outcome: BTreeMap<String, u64> = BTreeMap::new();
    for l in &summary_lines {
        for (k, v) in l["outcomes"].as_object().unwrap() {
            *by_outcome.entry(k.clone()).or_default() += v.as_u64().unwrap();
        }
        let session = l["session_id"].as_str().unwrap();
        assert_eq!(l["calls"], per_session[session].len());
    }
    let mut from_lines: BTreeMap<String, u64> = BTreeMap::new();
    for l in &lines {
        *from_lines
            .entry(l["outcome"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(by_outcome, from_lines);
    for s in &summaries {
        assert_eq!(s.observer_errors, 0);
    }
}

#[test]
fn one_session_shared_by_two_threads_counts_every_call() {
    const CALLS: usize = 300;
    let dir = TempDir::new("concurrency-shared");
    let log = AuditLog::open(dir.path()).unwrap();
    let runs = Arc::new(Runs::default());
    let d = dispatcher(&log, &runs);
    let s = d.session(HookContext::builder("u_1", "sess_shared").build());
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let s = &s;
            scope.spawn(move || {
                for i in 0..CALLS {
                    let mode = if i % 3 == 0 { "deny" } else { "big" };
                    let call =
                        ToolUse::new(format!("toolu_{t}_{i}"), "work", json!({"mode": mode}));
                    toolgate::block_on(s.call(&call)).unwrap();
                }
            });
        }
    });
    let summary = s.end();
    assert_eq!(summary.calls, (THREADS * CALLS) as u64);
    assert_eq!(
        summary.outcomes.get(&Outcome::Blocked),
        Some(&(THREADS as u64 * 100))
    );
    assert_eq!(
        summary.outcomes.get(&Outcome::Ok),
        Some(&(THREADS as u64 * 200))
    );
    assert_eq!(summary.tools.get("work"), Some(&((THREADS * CALLS) as u64)));
    assert_eq!(runs.0.load(Ordering::SeqCst), THREADS as u64 * 200);
    let lines = json_lines(&log.audit_log_path().unwrap());
    assert_eq!(lines.len(), THREADS * CALLS);
    for t in 0..THREADS {
        let ids: Vec<&str> = lines
            .iter()
            .map(|l| l["tool_use_id"].as_str().unwrap())
            .filter(|id| id.starts_with(&format!("toolu_{t}_")))
            .collect();
        let want: Vec<String> = (0..CALLS).map(|i| format!("toolu_{t}_{i}")).collect();
        assert_eq!(ids, want, "thread {t}'s lines in its call order");
    }
}
