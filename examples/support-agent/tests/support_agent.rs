//! The support agent (`cargo run -p toolgate-support-agent`), tested through its own library
//! (the tools, hooks and command line the binary runs) and its binary: every bundled transcript
//! replays with its expected outcomes, results and audit lines;
//! the command line's modes and exit codes; and each rule at its exact edges.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, Session, State, ToolUse,
    audit::{AuditLog, Outcome},
    dispatch::{Clock, Effect},
};

// What the workspace's tests share (tests/test-support/).
use toolgate_test_support::{self as support, TempDir, json_lines};

// `--live` against a Messages API on loopback (tests/support_agent_live/).
mod support_agent_live;

// `--otel-endpoint` against an OTLP/HTTP receiver on loopback (tests/support_agent_otlp/).
mod support_agent_otlp;

// Conversations of one customer on one store, on SQLite here and on PostgreSQL in
// `support_agent_postgres` (tests/support_agent_ledger/).
mod support_agent_ledger;

// `--database-url`: workers with their own out-dirs and one database (feature `postgres`,
// tests/support_agent_postgres/).
#[cfg(feature = "postgres")]
mod support_agent_postgres;

// The workspace's throwaway PostgreSQL server, for the ledger's PostgreSQL books.
#[cfg(feature = "postgres")]
use toolgate_test_support::postgres as pg_server;

use support_agent::agent::{self, Agent};
use support_agent::ledger::{IsoWeek, Ledger};
use support_agent::observer::CallLog;
use support_agent::policy::in_deploy_window;
use support_agent::specialist::Specialist;
use support_agent::{cli, exit};
use support_agent::{tools, transcript};

// ---------------------------------------------------------------- helpers

fn at(rfc3339: &str) -> SystemTime {
    let ts: jiff::Timestamp = rfc3339.parse().expect("a valid instant");
    SystemTime::try_from(ts).expect("in range")
}

fn hook(name: &str) -> String {
    format!("{}::policy::{name}", support_agent::AGENT_PATH)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("transcripts")
        .join(name)
}

/// Runs the example's command line; returns (exit code, stdout, stderr).
fn run(args: &[&OsString]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = cli::run(args.iter().map(|a| (*a).clone()), &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf-8 stdout"),
        String::from_utf8(err).expect("utf-8 stderr"),
    )
}

fn os(s: impl Into<OsString>) -> OsString {
    s.into()
}

/// The `toolgate` command's binary, built as the run that built this test resolved its crates
/// (every feature of this package on: the README's test command).
fn toolgate_command() -> PathBuf {
    support::cargo::toolgate_command(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        cfg!(all(
            feature = "postgres",
            feature = "mcp",
            feature = "mcp-http"
        )),
    )
}

/// Runs the `toolgate` command (`cli/`, which checks and draws the trail the agent writes) with
/// `args`; returns (exit code, stdout, stderr). Its exit codes: 0 done (the chain verifies), 1
/// the chain is broken or the output could not be written, 2 bad input.
fn run_toolgate(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let binary = toolgate_command();
    let out = std::process::Command::new(binary)
        .args(args)
        .output()
        .expect("the toolgate command runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}

/// A session of `specialist` for `user` at `now`, on a fresh agent (fresh ledger).
fn session(specialist: Specialist, user: &str, tier: &str, now: &str) -> (Agent, Session) {
    let agent = Agent::build(specialist, None).expect("the agent builds");
    let ctx = HookContext::builder(user, "sess_test")
        .tier(tier)
        .clock(Clock::fixed(at(now)))
        .build();
    let session = agent.dispatcher.session(ctx);
    (agent, session)
}

/// Calls one tool; returns (outcome, is_error, content) as the observer recorded them.
fn call(agent: &Agent, session: &Session, tool: &str, input: Value) -> (Outcome, bool, String) {
    // Each call its own id: a session answers an id once.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let use_ = ToolUse::new(format!("toolu_test_{n}"), tool, input);
    let result = toolgate::block_on(session.call(&use_)).expect("no hook failed");
    let mut lines = agent.calls.take();
    assert_eq!(lines.len(), 1, "one observer record per call");
    let line = lines.remove(0);
    assert_eq!(line.is_error, result.is_error);
    assert_eq!(line.content, result.content_text());
    (line.outcome, line.is_error, line.content)
}

// ---------------------------------------------------------------- the bundled transcripts

/// Outcome per tool_use id, as the fixtures' `expected_outcomes` say (written out here too, so
/// an edited fixture cannot make this test pass by accident).
const EXPECTED: &[(&str, &[(&str, &str)])] = &[
    (
        "01_premium_refund.json",
        &[
            ("toolu_01u8jzPde0IgxLd6GncfBAep", "ok"),
            ("toolu_01AjIhKtJ0RlgLKOmxgJTeKd", "ok"),
            ("toolu_014vUCsMehGAkWvj7FAc9QeW", "ok"),
            ("toolu_01UStPKR0CsTy4Qwb8DwkNhF", "ok"),
        ],
    ),
    (
        "02_free_tier_unusual_phrasing.json",
        &[
            ("toolu_01TAwR4y9ojfljoQoaF1Llqs", "ok"),
            ("toolu_01zzzgEOzdmenCkhvMdgaKjI", "blocked"),
            ("toolu_01EtfjgVvVqE1SkHbn88HxjS", "ok"),
        ],
    ),
    (
        "03_parallel_batch.json",
        &[
            ("toolu_01OoNZYW2mZp0zVZomHFwUbb", "blocked"),
            ("toolu_01YrEqmSM9wCZ7Uw9xfogoEm", "ok"),
            ("toolu_01vnEN5N1aE6PwZPf1Qh6yYT", "ok"),
        ],
    ),
    (
        "04_edges.json",
        &[
            ("toolu_01jL5DZPjN0MEQ7wjJJibaZU", "invalid_input"),
            ("toolu_011id6Vw5DQL05HA064GiIjH", "unknown_tool"),
            ("toolu_01YXg4JdpmrcXgGCJbW56eCu", "blocked"),
        ],
    ),
    (
        "05_capability_check.json",
        &[
            ("toolu_011CiAhzCueQpBenQtYh5Xj8", "tool_error"),
            ("toolu_01GzvAmwufUxbvJDCTbyvHNs", "ok"),
        ],
    ),
    (
        "10_weekly_refunds.json",
        &[
            ("toolu_01KdV8mQpR3sTz6WnY2bHc4F", "ok"),
            ("toolu_01Ha3JtLs7PqV5mXcR9wNe2D", "ok"),
            ("toolu_01Rw2ZkNt6HsM9qPbV4xJf7C", "ok"),
            ("toolu_01Tq5YhWm8VrK3nLsZ6cPg9B", "ok"),
            ("toolu_01Wn7CsPk4XtR8mVhL2zQd5J", "blocked"),
        ],
    ),
];

/// What the model is told for each tool_use of the bundled transcripts: (id, is_error, content).
const RESULTS: &[(&str, bool, &str)] = &[
    (
        "toolu_01u8jzPde0IgxLd6GncfBAep",
        false,
        r#"{"user_id":"u_001","tier":"premium","orders":["o_1001","o_1002"]}"#,
    ),
    (
        "toolu_01AjIhKtJ0RlgLKOmxgJTeKd",
        false,
        r#"{"order_id":"o_1001","user_id":"u_001","amount_cents":2599,"refunded_cents":0}"#,
    ),
    (
        "toolu_014vUCsMehGAkWvj7FAc9QeW",
        false,
        r#"{"case_id":"case_o_1001","user_id":"u_001","order_id":"o_1001","reason":"Item arrived with a cracked screen","evidence":["photo_front.jpg","photo_box.jpg"],"status":"open"}"#,
    ),
    (
        "toolu_01UStPKR0CsTy4Qwb8DwkNhF",
        false,
        r#"{"refund_id":"re_0001","order_id":"o_1001","amount_cents":2599,"refunded_total_cents":2599,"status":"issued"}"#,
    ),
    (
        "toolu_01TAwR4y9ojfljoQoaF1Llqs",
        false,
        r#"{"user_id":"u_004","tier":"free","orders":["o_2001"]}"#,
    ),
    (
        "toolu_01zzzgEOzdmenCkhvMdgaKjI",
        true,
        "BLOCKED: case files and refunds are for premium customers, and this customer's tier is \
         free. Answer from the refund policy (search_faq), or tell the customer that upgrading \
         to premium includes refunds handled by support.",
    ),
    (
        "toolu_01EtfjgVvVqE1SkHbn88HxjS",
        false,
        r#"[{"question":"Can shipping fees be credited back to my account?","answer":"Shipping fees are credited as account credit when an order arrives late or damaged; other shipping fees are not refundable."},{"question":"What does premium include?","answer":"Premium customers get case files, refunds handled by the support team, and free shipping on every order."}]"#,
    ),
    (
        "toolu_01OoNZYW2mZp0zVZomHFwUbb",
        true,
        "BLOCKED: this conversation can only use the signed-in customer's own account, and \
         u_999 is not it. Use the signed-in customer's id, u_001, or ask them what they need for \
         their own account.",
    ),
    (
        "toolu_01YrEqmSM9wCZ7Uw9xfogoEm",
        false,
        r#"{"order_id":"o_1002","user_id":"u_001","amount_cents":45000,"refunded_cents":0}"#,
    ),
    (
        "toolu_01vnEN5N1aE6PwZPf1Qh6yYT",
        false,
        r#"[{"question":"How long do I have to ask for a refund?","answer":"Refunds can be requested within 30 days of delivery; electronics within 14 days, unopened or with a fault reported in that window."},{"question":"My order arrived damaged. What do I do?","answer":"Send photos of the item and the box; premium customers get a case file and a refund or replacement, usually within 2 business days."},{"question":"My order never arrived.","answer":"If tracking shows no delivery 5 days after the estimate, contact support with the tracking page; we open a case and reship or refund."}]"#,
    ),
    (
        "toolu_01jL5DZPjN0MEQ7wjJJibaZU",
        true,
        "Error: invalid input for tool `issue_refund`: missing field `amount_cents`. Send an \
         input that matches the tool's input_schema.",
    ),
    (
        "toolu_011id6Vw5DQL05HA064GiIjH",
        true,
        "Error: unknown tool 'create_jira_ticket'. Available tools: get_order_details, \
         issue_refund, lookup_user, prepare_case_file, search_faq.",
    ),
    (
        "toolu_01YXg4JdpmrcXgGCJbW56eCu",
        true,
        "BLOCKED: case files cannot be opened during the weekly deploy window, Thursdays 02:00 \
         to 04:00 UTC. Tell the customer the case will be opened after 04:00 UTC today, and keep \
         the details they gave so you can call prepare_case_file then.",
    ),
    (
        "toolu_011CiAhzCueQpBenQtYh5Xj8",
        true,
        "A case file needs at least one piece of evidence (a photo, a screenshot, a tracking \
         page). Ask the customer for one, then call prepare_case_file again with it in \
         `evidence`.",
    ),
    (
        "toolu_01GzvAmwufUxbvJDCTbyvHNs",
        false,
        r#"{"case_id":"case_o_3001","user_id":"u_007","order_id":"o_3001","reason":"Never delivered","evidence":["tracking page screenshot"],"status":"open"}"#,
    ),
    (
        "toolu_01KdV8mQpR3sTz6WnY2bHc4F",
        false,
        r#"{"user_id":"u_007","tier":"premium","orders":["o_3001","o_3002"]}"#,
    ),
    (
        "toolu_01Ha3JtLs7PqV5mXcR9wNe2D",
        false,
        r#"{"refund_id":"re_0001","order_id":"o_3002","amount_cents":18000,"refunded_total_cents":18000,"status":"issued"}"#,
    ),
    (
        "toolu_01Rw2ZkNt6HsM9qPbV4xJf7C",
        false,
        r#"{"refund_id":"re_0002","order_id":"o_3001","amount_cents":9500,"refunded_total_cents":9500,"status":"issued"}"#,
    ),
    (
        "toolu_01Tq5YhWm8VrK3nLsZ6cPg9B",
        false,
        r#"{"refund_id":"re_0003","order_id":"o_3001","amount_cents":6000,"refunded_total_cents":15500,"status":"issued"}"#,
    ),
    (
        "toolu_01Wn7CsPk4XtR8mVhL2zQd5J",
        true,
        "BLOCKED: a refund of 20000 cents would bring this customer's refunds in ISO week \
         2026-W48 to 53500 cents, above the weekly limit of 50000 cents (33500 cents already \
         refunded this week). Refund at most 16500 cents now and tell the customer the rest \
         will be reviewed by a human agent.",
    ),
];

/// The readable line of each tool_use of the bundled transcripts, in order, as
/// `cargo run -p toolgate-support-agent` prints it (hook paths under `support_agent::policy`).
const READABLE_LINES: &[&str] = &[
    r#"   toolu_01u8jzPde0IgxLd6GncfBAep  lookup_user {"user_id":"u_001"} | allowed, ok | {"user_id":"u_001","tier":"premium","orders":["o_1001","o_1002"]}"#,
    r#"   toolu_01AjIhKtJ0RlgLKOmxgJTeKd  get_order_details {"order_id":"o_1001"} | allowed, ok | {"order_id":"o_1001","user_id":"u_001","amount_cents":2599,"refunded_cents":0}"#,
    r#"   toolu_014vUCsMehGAkWvj7FAc9QeW  prepare_case_file {"user_id":"u_001","order_id":"o_1001","reason":"Item arrived with a cracked screen","evid… | allowed, ok | {"case_id":"case_o_1001","user_id":"u_001","order_id":"o_1001","reason":"Item arrived with a cracked screen","…"#,
    r#"   toolu_01UStPKR0CsTy4Qwb8DwkNhF  issue_refund {"order_id":"o_1001","amount_cents":2599} | allowed, ok | {"refund_id":"re_0001","order_id":"o_1001","amount_cents":2599,"refunded_total_cents":2599,"status":"issued"}"#,
    r#"   toolu_01TAwR4y9ojfljoQoaF1Llqs  lookup_user {"user_id":"u_004"} | allowed, ok | {"user_id":"u_004","tier":"free","orders":["o_2001"]}"#,
    r#"   toolu_01zzzgEOzdmenCkhvMdgaKjI  prepare_case_file {"user_id":"u_004","order_id":"o_2001","reason":"Customer wants the shipping fee credited … | blocked by support_agent::policy::premium_only | BLOCKED: case files and refunds are for premium customers, and this customer's tier is free. Answer from the r…"#,
    r#"   toolu_01EtfjgVvVqE1SkHbn88HxjS  search_faq {"query":"account credit for shipping fees"} | allowed, ok | [{"question":"Can shipping fees be credited back to my account?","answer":"Shipping fees are credited as accou…"#,
    r#"   toolu_01OoNZYW2mZp0zVZomHFwUbb  lookup_user {"user_id":"u_999"} | blocked by support_agent::policy::own_records_only | BLOCKED: this conversation can only use the signed-in customer's own account, and u_999 is not it. Use the sig…"#,
    r#"   toolu_01YrEqmSM9wCZ7Uw9xfogoEm  get_order_details {"order_id":"o_1002"} | allowed, ok | {"order_id":"o_1002","user_id":"u_001","amount_cents":45000,"refunded_cents":0}"#,
    r#"   toolu_01vnEN5N1aE6PwZPf1Qh6yYT  search_faq {"query":"refund window for electronics","limit":50} | rewritten by support_agent::policy::cap_faq_limit to {"query":"refund window for electronics","limit":5}, allowed, ok | [{"question":"How long do I have to ask for a refund?","answer":"Refunds can be requested within 30 days of de…"#,
    r#"   toolu_01jL5DZPjN0MEQ7wjJJibaZU  issue_refund {"order_id":"o_3001"} | failed, invalid_input | Error: invalid input for tool `issue_refund`: missing field `amount_cents`. Send an input that matches the too…"#,
    r#"   toolu_011id6Vw5DQL05HA064GiIjH  create_jira_ticket {"summary":"Refund flow broken","description":"Customer cannot get a refund"} | failed, unknown_tool | Error: unknown tool 'create_jira_ticket'. Available tools: get_order_details, issue_refund, lookup_user, prepa…"#,
    r#"   toolu_01YXg4JdpmrcXgGCJbW56eCu  prepare_case_file {"user_id":"u_007","order_id":"o_3001","reason":"Never delivered","evidence":["tracking pa… | blocked by support_agent::policy::no_case_files_during_deploy | BLOCKED: case files cannot be opened during the weekly deploy window, Thursdays 02:00 to 04:00 UTC. Tell the c…"#,
    r#"   toolu_011CiAhzCueQpBenQtYh5Xj8  prepare_case_file {"user_id":"u_007","order_id":"o_3001","reason":"Never delivered","evidence":[]} | allowed, tool_error | A case file needs at least one piece of evidence (a photo, a screenshot, a tracking page). Ask the customer fo…"#,
    r#"   toolu_01GzvAmwufUxbvJDCTbyvHNs  prepare_case_file {"user_id":"u_007","order_id":"o_3001","reason":"Never delivered","evidence":["tracking pa… | allowed, ok | {"case_id":"case_o_3001","user_id":"u_007","order_id":"o_3001","reason":"Never delivered","evidence":["trackin…"#,
    r#"   toolu_01Hk2oZxQm7R4bVt9cYe3LsA  get_order_details {"order_id":"o_1002"} | allowed, ok | {"order_id":"o_1002","user_id":"u_001","amount_cents":45000,"refunded_cents":0}"#,
    r#"   toolu_01Jm4pAyRn8S5cWu0dZf4MtB  issue_refund {"order_id":"o_1002","amount_cents":30000} | asked by support_agent::policy::large_refund_needs_approval, awaiting approval | "#,
    r#"   toolu_01Jm4pAyRn8S5cWu0dZf4MtB  issue_refund {"order_id":"o_1002","amount_cents":30000} | asked by support_agent::policy::large_refund_needs_approval, approved by lead@shop.example, allowed, ok | {"refund_id":"re_0002","order_id":"o_1002","amount_cents":30000,"refunded_total_cents":30000,"status":"issued"…"#,
    r#"   toolu_01Kn5qBzSo9T6dXv1eAg5NuC  get_order_details {"order_id":"o_3002"} | allowed, ok | {"order_id":"o_3002","user_id":"u_007","amount_cents":30000,"refunded_cents":0}"#,
    r#"   toolu_01Lo6rCaTp0U7eYw2fBh6OvD  issue_refund {"order_id":"o_3002","amount_cents":30000} | asked by support_agent::policy::large_refund_needs_approval, awaiting approval | "#,
    r#"   toolu_01Lo6rCaTp0U7eYw2fBh6OvD  issue_refund {"order_id":"o_3002","amount_cents":30000} | asked by support_agent::policy::large_refund_needs_approval, denied by lead@shop.example, blocked | BLOCKED: a person declined this call: the items have not been returned yet; send the customer a return label f…"#,
    r#"   toolu_01Mp7sDbUq1V8fZx3gCi7PwE  get_order_details {"order_id":"o_1002"} | allowed, ok | {"order_id":"o_1002","user_id":"u_001","amount_cents":45000,"refunded_cents":30000}"#,
    r#"   toolu_01Nq8tEcVr2W9gAy4hDj8QxF  issue_refund {"order_id":"o_1002","amount_cents":25000} | asked by support_agent::policy::large_refund_needs_approval, awaiting approval | "#,
    r#"   toolu_01Or9uFdWs3X0hBz5iEk9RyG  issue_refund {"order_id":"o_3001","amount_cents":45000} | asked by support_agent::policy::large_refund_needs_approval, awaiting approval | "#,
    r#"   toolu_01KdV8mQpR3sTz6WnY2bHc4F  lookup_user {"user_id":"u_007"} | allowed, ok | {"user_id":"u_007","tier":"premium","orders":["o_3001","o_3002"]}"#,
    r#"   toolu_01Ha3JtLs7PqV5mXcR9wNe2D  issue_refund {"order_id":"o_3002","amount_cents":18000} | allowed, ok | {"refund_id":"re_0003","order_id":"o_3002","amount_cents":18000,"refunded_total_cents":18000,"status":"issued"…"#,
    r#"   toolu_01Rw2ZkNt6HsM9qPbV4xJf7C  issue_refund {"order_id":"o_3001","amount_cents":9500} | allowed, ok | {"refund_id":"re_0004","order_id":"o_3001","amount_cents":9500,"refunded_total_cents":9500,"status":"issued"}"#,
    r#"   toolu_01Tq5YhWm8VrK3nLsZ6cPg9B  issue_refund {"order_id":"o_3001","amount_cents":6000} | allowed, ok | {"refund_id":"re_0005","order_id":"o_3001","amount_cents":6000,"refunded_total_cents":15500,"status":"issued"}"#,
    r#"   toolu_01Wn7CsPk4XtR8mVhL2zQd5J  issue_refund {"order_id":"o_3001","amount_cents":20000} | blocked by support_agent::policy::weekly_refund_limit | BLOCKED: a refund of 20000 cents would bring this customer's refunds in ISO week 2026-W48 to 53500 cents, abov…"#,
];

/// `READABLE_LINES[range]` with the hook paths as this test's copy of the example names them.
fn readable_lines(range: std::ops::Range<usize>) -> Vec<String> {
    READABLE_LINES[range]
        .iter()
        .map(|l| {
            l.replace(
                "support_agent::policy::",
                &format!("{}::policy::", support_agent::AGENT_PATH),
            )
        })
        .collect()
}

#[test]
fn every_bundled_transcript_replays_with_its_expected_outcomes_results_and_audit_lines() {
    let transcripts = transcript::bundled().expect("the bundled transcripts are valid");
    let names: Vec<&str> = transcripts.iter().map(|t| t.source.as_str()).collect();
    // The transcripts whose turns wait for a person (06 to 09) are pinned by the approval tests
    // below; the others are listed in EXPECTED, in the bundle's order.
    let mut want: Vec<&str> = EXPECTED[..5].iter().map(|(n, _)| *n).collect();
    want.extend(APPROVAL_TRANSCRIPTS);
    want.extend(EXPECTED[5..].iter().map(|(n, _)| *n));
    assert_eq!(names, want);
    let transcripts: Vec<_> = transcripts
        .iter()
        .filter(|t| !APPROVAL_TRANSCRIPTS.contains(&t.source.as_str()))
        .collect();

    for (t, (_, expected)) in transcripts.into_iter().zip(EXPECTED) {
        let dir = TempDir::new("replay");
        let audit = AuditLog::open(dir.path()).unwrap();
        let replay = agent::replay(t, Some(&audit), &support_agent::state::State::memory())
            .expect("the agent builds");
        drop(audit);

        // The fixture's own expectations agree with the list above, and hold.
        let from_file: Vec<(&str, &str)> = t
            .tool_use_ids()
            .map(|id| (id, t.expected[id].as_str()))
            .collect();
        assert_eq!(&from_file, expected, "{}", t.source);
        assert_eq!(agent::mismatches(t, &replay), vec![], "{}", t.source);
        assert_eq!(replay.halted, None);

        // One answer per assistant message: one tool_result per tool_use, same ids, same order.
        assert_eq!(replay.messages.len(), t.messages.len());
        for (message, replayed) in t.messages.iter().zip(&replay.messages) {
            let answer = replayed
                .answer
                .as_ref()
                .expect("every fixture message has tool_use");
            let asked: Vec<&str> = message.tool_uses().map(|u| u.id.as_str()).collect();
            let answered: Vec<&str> = answer
                .tool_results()
                .map(|r| r.tool_use_id.as_str())
                .collect();
            assert_eq!(answered, asked);
            assert_eq!(answer.content.len(), asked.len(), "tool_result blocks only");
        }
        let outcomes: Vec<(&str, &str)> = replay
            .calls()
            .map(|c| (c.tool_use_id.as_str(), c.outcome.as_str()))
            .collect();
        assert_eq!(&outcomes, expected, "{}", t.source);

        // Exactly one audit line per call, in order, with that outcome; one summary line.
        let lines = json_lines(&dir.path().join("audit_log.jsonl"));
        let audited: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["tool_use_id"].as_str().unwrap(),
                    l["outcome"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(&audited, expected, "{}", t.source);
        let answered: Vec<(String, bool)> = replay
            .messages
            .iter()
            .flat_map(|m| m.answer.as_ref().unwrap().tool_results())
            .map(|r| (r.content_text().into_owned(), r.is_error))
            .collect();
        let logged: Vec<(String, bool)> = lines
            .iter()
            .map(|l| {
                (
                    l["content"].as_str().unwrap().to_owned(),
                    l["is_error"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            logged, answered,
            "the audit line holds what the model was told"
        );
        let told: Vec<(String, bool)> = expected
            .iter()
            .map(|(id, _)| {
                let (_, is_error, content) = RESULTS
                    .iter()
                    .find(|(r, _, _)| r == id)
                    .expect("every tool_use has its result above");
                ((*content).to_owned(), *is_error)
            })
            .collect();
        assert_eq!(answered, told, "{}", t.source);
        for l in &lines {
            assert_eq!(l["session_id"], t.context.session_id.as_str());
            assert_eq!(l["user_id"], t.context.user_id.as_str());
            assert_eq!(l["tier"], t.context.tier.as_str());
            assert_eq!(l["ts"], t.context.now_text.as_str());
        }
        // The files' hash chain verifies, every line counted.
        let (_, last) = support::chained_lines(&dir.path().join("audit_log.jsonl"), support::ZEROS);
        let verified = toolgate::audit::verify_audit_dir(dir.path()).unwrap();
        assert_eq!(
            verified.calls.status,
            toolgate::audit::ChainStatus::Ok {
                lines: expected.len() as u64,
                last_hash: last
            }
        );
        assert!(verified.sessions.status.is_ok());
        let summaries = json_lines(&dir.path().join("session_summaries.jsonl"));
        assert_eq!(summaries.len(), 1);
        assert_eq!(summaries[0]["calls"], json!(expected.len()));
        assert_eq!(summaries[0]["observer_errors"], json!(0));
    }
}

#[test]
fn the_bundled_transcripts_show_which_hook_decided() {
    let transcripts = transcript::bundled().unwrap();
    let mut decided = BTreeMap::new();
    for t in &transcripts {
        let replay = agent::replay(t, None, &support_agent::state::State::memory()).unwrap();
        for c in replay.calls() {
            decided.insert(
                c.tool_use_id.clone(),
                (
                    c.blocked_by.clone(),
                    c.rewritten_by.clone(),
                    c.content.clone(),
                ),
            );
        }
    }
    let (by, _, content) = &decided["toolu_01zzzgEOzdmenCkhvMdgaKjI"];
    assert_eq!(by.as_deref(), Some(hook("premium_only").as_str()));
    assert_eq!(
        content,
        "BLOCKED: case files and refunds are for premium customers, and this customer's tier is \
         free. Answer from the refund policy (search_faq), or tell the customer that upgrading \
         to premium includes refunds handled by support."
    );
    let (by, _, content) = &decided["toolu_01OoNZYW2mZp0zVZomHFwUbb"];
    assert_eq!(by.as_deref(), Some(hook("own_records_only").as_str()));
    assert_eq!(
        content,
        "BLOCKED: this conversation can only use the signed-in customer's own account, and \
         u_999 is not it. Use the signed-in customer's id, u_001, or ask them what they need for \
         their own account."
    );
    let (by, _, content) = &decided["toolu_01YXg4JdpmrcXgGCJbW56eCu"];
    assert_eq!(
        by.as_deref(),
        Some(hook("no_case_files_during_deploy").as_str())
    );
    assert_eq!(
        content,
        "BLOCKED: case files cannot be opened during the weekly deploy window, Thursdays 02:00 \
         to 04:00 UTC. Tell the customer the case will be opened after 04:00 UTC today, and keep \
         the details they gave so you can call prepare_case_file then."
    );
    let (by, rewritten, content) = &decided["toolu_01vnEN5N1aE6PwZPf1Qh6yYT"];
    assert_eq!(by, &None);
    assert_eq!(rewritten, &vec![hook("cap_faq_limit")]);
    let entries: Value = serde_json::from_str(content).unwrap();
    assert_eq!(
        entries[0]["question"],
        "How long do I have to ask for a refund?"
    );
    let (_, _, content) = &decided["toolu_011CiAhzCueQpBenQtYh5Xj8"];
    assert_eq!(
        content,
        "A case file needs at least one piece of evidence (a photo, a screenshot, a tracking \
         page). Ask the customer for one, then call prepare_case_file again with it in \
         `evidence`."
    );
    let (_, _, content) = &decided["toolu_01UStPKR0CsTy4Qwb8DwkNhF"];
    assert_eq!(
        content,
        r#"{"refund_id":"re_0001","order_id":"o_1001","amount_cents":2599,"refunded_total_cents":2599,"status":"issued"}"#
    );
}

#[test]
fn audit_lines_carry_blocked_by_rewritten_by_hooks_and_effective_input_only_when_they_apply() {
    let t = transcript::load(&fixture("03_parallel_batch.json")).unwrap();
    let dir = TempDir::new("audit-keys");
    let audit = AuditLog::open(dir.path()).unwrap();
    agent::replay(&t, Some(&audit), &support_agent::state::State::memory()).unwrap();
    // Exact lines: the context's tier after the user, the optional members only where they
    // apply, `prev` last (recomputed by `chained_lines`; `duration_us` set to 0).
    let (lines, _) = support::chained_lines(&dir.path().join("audit_log.jsonl"), support::ZEROS);
    let faq = r#"[{\"question\":\"How long do I have to ask for a refund?\",\"answer\":\"Refunds can be requested within 30 days of delivery; electronics within 14 days, unopened or with a fault reported in that window.\"},{\"question\":\"My order arrived damaged. What do I do?\",\"answer\":\"Send photos of the item and the box; premium customers get a case file and a refund or replacement, usually within 2 business days.\"},{\"question\":\"My order never arrived.\",\"answer\":\"If tracking shows no delivery 5 days after the estimate, contact support with the tracking page; we open a case and reship or refund.\"}]"#;
    let context = r#""ts":"2026-11-25T09:00:00Z","session_id":"sess_parallel_03","user_id":"u_001","tier":"premium""#;
    assert_eq!(
        lines,
        [
            format!(
                r#"{{{context},"tool_use_id":"toolu_01OoNZYW2mZp0zVZomHFwUbb","tool":"lookup_user","input":{{"user_id":"u_999"}},"outcome":"blocked","is_error":true,"content":"BLOCKED: this conversation can only use the signed-in customer's own account, and u_999 is not it. Use the signed-in customer's id, u_001, or ask them what they need for their own account.","duration_us":0,"blocked_by":"{own}","hooks":[{{"hook":"{own}","decision":"deny","duration_us":0}}],"prev":"…"}}"#,
                own = hook("own_records_only")
            ),
            format!(
                r#"{{{context},"tool_use_id":"toolu_01YrEqmSM9wCZ7Uw9xfogoEm","tool":"get_order_details","input":{{"order_id":"o_1002"}},"outcome":"ok","is_error":false,"content":"{{\"order_id\":\"o_1002\",\"user_id\":\"u_001\",\"amount_cents\":45000,\"refunded_cents\":0}}","duration_us":0,"hooks":[{{"hook":"{}","decision":"allow","duration_us":0}}],"prev":"…"}}"#,
                hook("own_records_only")
            ),
            format!(
                r#"{{{context},"tool_use_id":"toolu_01vnEN5N1aE6PwZPf1Qh6yYT","tool":"search_faq","input":{{"query":"refund window for electronics","limit":50}},"outcome":"ok","is_error":false,"content":"{faq}","duration_us":0,"rewritten_by":["{cap}"],"hooks":[{{"hook":"{cap}","decision":"rewrite","duration_us":0}}],"effective_input":{{"query":"refund window for electronics","limit":5}},"prev":"…"}}"#,
                cap = hook("cap_faq_limit")
            ),
        ]
    );
    let (summaries, _) =
        support::chained_lines(&dir.path().join("session_summaries.jsonl"), support::ZEROS);
    assert_eq!(
        summaries,
        [
            r#"{"ts":"2026-11-25T09:00:00Z","session_id":"sess_parallel_03","user_id":"u_001","started_at":"2026-11-25T09:00:00Z","ended_at":"2026-11-25T09:00:00Z","calls":3,"outcomes":{"ok":2,"blocked":1},"tools":{"get_order_details":1,"lookup_user":1,"search_faq":1},"observer_errors":0,"prev":"…"}"#
        ]
    );
}

/// The bundled transcripts with calls that need a person's approval, after the others.
const APPROVAL_TRANSCRIPTS: [&str; 4] = [
    "06_large_refund_approved.json",
    "07_large_refund_denied.json",
    "08_large_refund_paused.json",
    "09_large_refund_expired.json",
];

// ---------------------------------------------------------------- the command line

#[test]
fn readable_mode_prints_one_line_per_call_the_summaries_and_where_the_files_are() {
    let dir = TempDir::new("readable");
    let (code, out, err) = run(&[&os("--out-dir"), &os(dir.path())]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let call_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("toolu_"))
        .collect();
    assert_eq!(call_lines, readable_lines(0..29));
    let summaries: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("   summary: "))
        .collect();
    assert_eq!(summaries.len(), 10);
    assert_eq!(
        summaries[3],
        "   summary: calls 3; outcomes blocked 1, invalid_input 1, unknown_tool 1; tools \
         issue_refund 1, prepare_case_file 1; observer errors 0"
    );
    let ledger: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("   ledger: "))
        .collect();
    // After each transcript, its customer's book in the demo world: every conversation's
    // refunds of that customer, numbered in the store (01, 03, 06 and 08 are u_001's; 10 u_007's).
    let (u_001_a, u_001_b) = (
        "   ledger: re_0001 refunded 2599 cents on o_1001 (u_001, ISO week 2026-W48)",
        "   ledger: re_0002 refunded 30000 cents on o_1002 (u_001, ISO week 2026-W48)",
    );
    assert_eq!(
        ledger,
        [
            u_001_a,
            u_001_a,
            u_001_a,
            u_001_b,
            u_001_a,
            u_001_b,
            "   ledger: re_0003 refunded 18000 cents on o_3002 (u_007, ISO week 2026-W48)",
            "   ledger: re_0004 refunded 9500 cents on o_3001 (u_007, ISO week 2026-W48)",
            "   ledger: re_0005 refunded 6000 cents on o_3001 (u_007, ISO week 2026-W48)",
        ]
    );
    let notes: Vec<&str> = out.lines().filter(|l| l.starts_with("note: ")).collect();
    let pending = |session: &str, id: &str| {
        let file = pending_file(dir.path(), session);
        format!(
            "note: tool_use {id} awaits a person's approval; pending turn written to {f}; finish \
             it with --resume {f} --approve {id} [--by WHO] or --deny {id} --reason TEXT",
            f = file.display()
        )
    };
    assert_eq!(
        notes,
        [
            pending("sess_paused_08", "toolu_01Nq8tEcVr2W9gAy4hDj8QxF"),
            pending("sess_expired_09", "toolu_01Or9uFdWs3X0hBz5iEk9RyG"),
        ]
    );
    // The end: where the files are, then the trail checked and drawn by the `toolgate`
    // command's own code, each run under its command line; the hashes it prints are the files'
    // last lines' (computed here on their own).
    let mut tail: Vec<&str> = out.lines().rev().take(8).collect();
    tail.reverse();
    let (_, calls_hash) =
        support::chained_lines(&dir.path().join("audit_log.jsonl"), support::ZEROS);
    let (_, sessions_hash) =
        support::chained_lines(&dir.path().join("session_summaries.jsonl"), support::ZEROS);
    let shown = dir.path().display();
    assert_eq!(
        tail,
        [
            format!(
                "audit log: {shown}/audit_log.jsonl (29 lines appended, one per tool_use, and 4 \
                 not final for calls that waited for approval)"
            ),
            format!(
                "session summaries: {shown}/session_summaries.jsonl (10 lines appended, one per \
                 session)"
            ),
            format!("$ toolgate audit verify {shown}"),
            format!("audit_log.jsonl: ok, 29 lines, last hash {calls_hash}"),
            format!("session_summaries.jsonl: ok, 10 lines, last hash {sessions_hash}"),
            "keep the last hashes elsewhere: lines deleted from the end of a file can only be \
             caught against them"
                .to_owned(),
            format!(
                "$ toolgate audit report {shown} -o {shown}/report.html --count-tool issue_refund"
            ),
            format!("report: {shown}/report.html (25 calls, chain verifies)"),
        ]
    );
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        page.starts_with("<!doctype html>"),
        "{}",
        &page[..page.len().min(200)]
    );
    assert!(
        page.contains("issue_refund"),
        "the refunds counted per customer"
    );
    assert_eq!(json_lines(&dir.path().join("audit_log.jsonl")).len(), 29);
    assert_eq!(
        json_lines(&dir.path().join("session_summaries.jsonl")).len(),
        10
    );

    // Appended to, not replaced; and the second run in the folder shares the first one's state
    // (`state.sqlite`): every call the first one answered is a replay of that answer, nothing
    // runs again, the two turns still waiting pause again, and the ledger holds what it held.
    let refunds = || sqlite_rows(dir.path());
    let before = refunds();
    let issued = json_lines(&dir.path().join("audit_log.jsonl"))
        .iter()
        .filter(|l| l["tool"] == "issue_refund" && l["outcome"] == "ok")
        .count();
    assert_eq!((before.len(), issued), (5, 5));
    assert_eq!(
        before
            .iter()
            .map(|r| (r.id, r.world.as_str()))
            .collect::<Vec<_>>(),
        [
            (1, "demo"),
            (2, "demo"),
            (3, "demo"),
            (4, "demo"),
            (5, "demo")
        ]
    );
    let (code, out, _) = run(&[&os("--out-dir"), &os(dir.path())]);
    assert_eq!(code, exit::EXIT_OK);
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(lines.len(), 29 + 27);
    let second = &lines[29..];
    assert_eq!(
        second.iter().filter(|l| l["replay"] == json!(true)).count(),
        25
    );
    assert_eq!(
        second.iter().filter(|l| l["final"] == json!(false)).count(),
        2
    );
    assert_eq!(refunds(), before);
    assert!(out.contains(&format!(
        "audit log: {} (27 lines appended, one per tool_use, 25 of them answers replayed from the \
         answer memory, and 2 not final for calls that waited for approval)\n\
         session summaries: {} (10 lines appended, one per session)\n\
         $ toolgate audit verify {}\n\
         audit_log.jsonl: ok, 56 lines, last hash ",
        dir.path().join("audit_log.jsonl").display(),
        dir.path().join("session_summaries.jsonl").display(),
        dir.path().display()
    )));
    // The report counts calls, not answers replayed to retries: the same 25.
    assert!(
        out.ends_with(&format!(
            "report: {}/report.html (25 calls, chain verifies)\n",
            dir.path().display()
        )),
        "{out}"
    );
    assert_eq!(
        json_lines(&dir.path().join("session_summaries.jsonl")).len(),
        20
    );
}

#[test]
fn json_mode_prints_only_the_user_messages_one_json_line_each() {
    let dir = TempDir::new("json");
    let (code, out, err) = run(&[&os("--json"), &os("--out-dir"), &os(dir.path())]);
    // The paused turns have no answer: a note each on stderr, and where the pending turn is.
    let pending = |session: &str, id: &str| {
        let file = pending_file(dir.path(), session);
        format!(
            "note: no answer: paused: {id} awaiting approval\nnote: tool_use {id} awaits a \
             person's approval; pending turn written to {f}; finish it with --resume {f} \
             --approve {id} [--by WHO] or --deny {id} --reason TEXT\n",
            f = file.display()
        )
    };
    assert_eq!(
        (code, err),
        (
            exit::EXIT_OK,
            pending("sess_paused_08", "toolu_01Nq8tEcVr2W9gAy4hDj8QxF")
                + &pending("sess_expired_09", "toolu_01Or9uFdWs3X0hBz5iEk9RyG")
        )
    );
    let transcripts = transcript::bundled().unwrap();
    // Every message of the transcripts that do not stay paused (08 and 09, at 7 and 8) has its
    // answer.
    let messages: Vec<&toolgate::Message> = transcripts[..7]
        .iter()
        .chain(&transcripts[9..])
        .flat_map(|t| t.messages.iter())
        .collect();
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    assert_eq!(lines.len(), 22);
    assert_eq!(lines.len(), messages.len());
    for (line, message) in lines.iter().zip(&messages) {
        let obj = line.as_object().unwrap();
        assert_eq!(obj.keys().collect::<Vec<_>>(), ["role", "content"]);
        assert_eq!(line["role"], "user");
        let ids: Vec<&str> = line["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                assert_eq!(b["type"], "tool_result");
                b["tool_use_id"].as_str().unwrap()
            })
            .collect();
        let asked: Vec<&str> = message.tool_uses().map(|u| u.id.as_str()).collect();
        assert_eq!(ids, asked);
    }
    // The parallel batch: three results in tool_use order; only the blocked one is an error.
    assert_eq!(
        lines[7]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.get("is_error").cloned())
            .collect::<Vec<_>>(),
        [Some(json!(true)), None, None]
    );
    assert_eq!(json_lines(&dir.path().join("audit_log.jsonl")).len(), 29);
}

#[test]
fn one_transcript_file_in_json_mode() {
    let dir = TempDir::new("one");
    let file = fixture("02_free_tier_unusual_phrasing.json");
    let (code, out, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--json"),
        &os(format!("--out-dir={}", dir.path().display())),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(out.lines().count(), 3);
    let second: Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
    assert_eq!(
        second["content"][0]["tool_use_id"],
        "toolu_01zzzgEOzdmenCkhvMdgaKjI"
    );
    assert_eq!(second["content"][0]["is_error"], true);
    assert_eq!(json_lines(&dir.path().join("audit_log.jsonl")).len(), 3);
    assert_eq!(
        json_lines(&dir.path().join("session_summaries.jsonl"))[0]["session_id"],
        "sess_free_02"
    );
}

#[test]
fn a_bad_transcript_exits_2_with_one_line_before_anything_runs_or_is_written() {
    let fixture_text = std::fs::read_to_string(fixture("03_parallel_batch.json")).unwrap();
    let good: Value = serde_json::from_str(&fixture_text).unwrap();
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        edit(&mut v);
        v.to_string()
    };
    let cases: Vec<(String, &str)> = vec![
        (
            "{\"context\": 1".to_owned(),
            "is not JSON: EOF while parsing",
        ),
        (
            "[]".to_owned(),
            "must be a JSON object with `context` and `messages`, found an array",
        ),
        (
            edited(&|v| v["messages"] = json!({})),
            "`messages` must be an array of assistant messages, found an object",
        ),
        (
            edited(&|v| v["messages"] = json!([])),
            "`messages` is empty: nothing to replay",
        ),
        (edited(&|v| v["extra"] = json!(1)), "unknown key `extra`"),
        (
            edited(&|v| {
                v["context"].as_object_mut().unwrap().remove("user_id");
            }),
            "context: missing field `user_id`",
        ),
        (
            edited(&|v| v["context"]["now"] = json!("yesterday")),
            "context.now: `yesterday` is not an RFC 3339 instant",
        ),
        (
            edited(&|v| v["context"]["tier"] = json!("gold")),
            "context.tier: `gold` is not a tier",
        ),
        (
            edited(&|v| v["context"]["specialist"] = json!("billing")),
            "context.specialist: `billing` is not a specialist",
        ),
        (
            edited(&|v| v["messages"][0]["role"] = json!("user")),
            "messages[0]: role is `user`",
        ),
        (
            edited(&|v| {
                v["messages"][0]["content"][1]
                    .as_object_mut()
                    .unwrap()
                    .remove("id");
            }),
            "messages[0]: content[1]: missing field `id`",
        ),
        (
            edited(&|v| {
                v["messages"][0]["content"][2]["id"] = json!("toolu_01OoNZYW2mZp0zVZomHFwUbb")
            }),
            "tool_use id `toolu_01OoNZYW2mZp0zVZomHFwUbb` appears twice",
        ),
        (
            edited(&|v| v["expected_outcomes"]["toolu_nope"] = json!("ok")),
            "expected_outcomes: `toolu_nope` is not the id of a tool_use block",
        ),
        (
            edited(&|v| v["expected_outcomes"]["toolu_01YrEqmSM9wCZ7Uw9xfogoEm"] = json!("fine")),
            "expected_outcomes.toolu_01YrEqmSM9wCZ7Uw9xfogoEm: unknown variant `fine`",
        ),
        // One call decided twice (a JSON object keeps the last key): refused from the text.
        (
            edited(&|v| v["approvals"] = json!({})).replace(
                "\"approvals\":{}",
                "\"approvals\":{\"toolu_01YrEqmSM9wCZ7Uw9xfogoEm\":{\"decision\":\"deny\",\
                 \"by\":\"lead\"},\"toolu_01YrEqmSM9wCZ7Uw9xfogoEm\":{\"decision\":\
                 \"approve\",\"by\":\"lead\"}}",
            ),
            "approvals: tool_use \"toolu_01YrEqmSM9wCZ7Uw9xfogoEm\" has two decisions; decide \
             each waiting call once",
        ),
    ];
    for (text, problem) in cases {
        let dir = TempDir::new("bad");
        let file = dir.path().join("transcript.json");
        let out_dir = dir.path().join("out");
        std::fs::write(&file, &text).unwrap();
        for extra in [None, Some("--json")] {
            let mut args = vec![os("--transcript"), os(&file), os("--out-dir"), os(&out_dir)];
            args.extend(extra.map(os));
            let (code, out, err) = run(&args.iter().collect::<Vec<_>>());
            assert_eq!(code, exit::EXIT_BAD_INPUT, "{problem}");
            assert_eq!(out, "", "{problem}");
            let prefix = format!("error: {}: {problem}", file.display());
            assert!(
                err.starts_with(&prefix),
                "{err:?} should start with {prefix:?}"
            );
            assert_eq!(err.lines().count(), 1, "{err:?}");
            assert!(!out_dir.exists(), "nothing is written for a bad transcript");
        }
    }

    let dir = TempDir::new("missing");
    let missing = dir.path().join("nope.json");
    let out_dir = dir.path().join("out");
    let (code, _, err) = run(&[
        &os("--transcript"),
        &os(&missing),
        &os("--out-dir"),
        &os(&out_dir),
    ]);
    assert_eq!(code, exit::EXIT_BAD_INPUT);
    // The rest of the line is the operating system's text.
    assert!(err.starts_with(&format!("error: {}: cannot be read: ", missing.display())));
    assert!(!out_dir.exists());
}

#[test]
fn an_out_dir_that_is_a_file_exits_1_naming_it_and_writes_nothing() {
    let dir = TempDir::new("out-dir-file");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let (code, out, err) = run(&[&os("--out-dir"), &os(&file)]);
    assert_eq!(
        (code, out.as_str(), err),
        (
            exit::EXIT_FAILED,
            "",
            format!(
                "error: --out-dir: cannot use `{}` as the audit folder: it exists and is not a \
                 folder\n",
                file.display()
            )
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn an_outcome_other_than_expected_exits_1_after_finishing_the_replay() {
    let text = std::fs::read_to_string(fixture("03_parallel_batch.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["expected_outcomes"]["toolu_01OoNZYW2mZp0zVZomHFwUbb"] = json!("ok");
    let dir = TempDir::new("mismatch");
    let file = dir.path().with_extension("json");
    std::fs::write(&file, v.to_string()).unwrap();
    let (code, out, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, exit::EXIT_FAILED);
    assert_eq!(
        err,
        format!(
            "mismatch: {}: tool_use toolu_01OoNZYW2mZp0zVZomHFwUbb: expected ok, got blocked\n",
            file.display()
        )
    );
    let mut want = readable_lines(7..10);
    want[0].push_str("  [EXPECTED ok]");
    assert_eq!(
        out.lines()
            .filter(|l| l.trim_start().starts_with("toolu_"))
            .collect::<Vec<_>>(),
        want
    );
    assert_eq!(json_lines(&dir.path().join("audit_log.jsonl")).len(), 3);
}

#[test]
fn schemas_prints_each_specialists_tool_definitions_as_one_json_array() {
    let names = |out: &str| -> Vec<String> {
        let defs: Value = serde_json::from_str(out).expect("one JSON value");
        defs.as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (code, out, err) = run(&[&os("--schemas")]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(
        names(&out),
        [
            "get_order_details",
            "issue_refund",
            "lookup_user",
            "prepare_case_file",
            "search_faq"
        ]
    );
    let (code, out, _) = run(&[&os("--schemas"), &os("--specialist"), &os("triage")]);
    assert_eq!(code, exit::EXIT_OK);
    assert_eq!(
        names(&out),
        [
            "create_jira_ticket",
            "get_order_details",
            "lookup_user",
            "search_faq"
        ]
    );
    let defs: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        defs[3]["input_schema"],
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the customer asked, in their words."},
                "limit": {"description": "How many entries to return, at most 5 (default 3).",
                          "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    );
}

#[test]
fn schemas_prints_each_providers_definitions() {
    let search_faq = |provider: &str| -> Value {
        let (code, out, err) = run(&[
            &os("--schemas"),
            &os("--specialist"),
            &os("triage"),
            &os("--provider"),
            &os(provider),
        ]);
        assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""), "{provider}");
        let defs: Value = serde_json::from_str(&out).expect("one JSON array");
        assert_eq!(defs.as_array().unwrap().len(), 4, "{provider}");
        defs.as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "search_faq" || d["function"]["name"] == "search_faq")
            .cloned()
            .unwrap()
    };
    let query =
        json!({"type": "string", "description": "What the customer asked, in their words."});
    let limit_doc = "How many entries to return, at most 5 (default 3).";
    let openai = search_faq("openai");
    assert_eq!(openai["type"], "function");
    assert_eq!(openai["function"]["strict"], true);
    assert_eq!(
        openai["function"]["parameters"],
        json!({
            "type": "object",
            "properties": {
                "query": query,
                "limit": {"type": ["integer", "null"], "minimum": 0, "description": limit_doc}
            },
            "required": ["query", "limit"],
            "additionalProperties": false
        })
    );
    let responses = search_faq("openai-responses");
    assert_eq!(
        (responses["type"].as_str(), responses["strict"].as_bool()),
        (Some("function"), Some(true))
    );
    assert_eq!(responses["parameters"], openai["function"]["parameters"]);
    let gemini = search_faq("gemini");
    assert_eq!(
        gemini["parameters"],
        json!({
            "type": "object",
            "properties": {
                "query": query,
                "limit": {"type": "integer", "nullable": true, "description": limit_doc, "minimum": 0}
            },
            "required": ["query"]
        })
    );
    let mcp = search_faq("mcp");
    assert_eq!(mcp["inputSchema"], search_faq("anthropic")["input_schema"]);
    assert_eq!(search_faq("anthropic-strict")["strict"], true);
}

#[test]
fn bad_arguments_exit_2() {
    for (args, message) in [
        (
            vec!["--bogus"],
            "error: unknown argument `--bogus` (see --help)\n",
        ),
        (
            vec!["--out-dir"],
            "error: --out-dir needs a value (see --help)\n",
        ),
        (
            vec!["--json=yes"],
            "error: --json takes no value (see --help)\n",
        ),
        (
            vec!["--once"],
            "error: --once goes with --worker (see --help)\n",
        ),
        (
            vec!["--worker", "--json"],
            "error: --worker takes only --once, --out-dir, --store and --database-url (see \
             --help)\n",
        ),
        (
            vec!["--json", "--json"],
            "error: --json is given twice (see --help)\n",
        ),
        (
            vec!["--specialist", "triage"],
            "error: --specialist goes with --schemas or --live (a transcript names its own specialist) (see --help)\n",
        ),
        (
            vec!["--schemas", "--specialist", "billing"],
            "error: --specialist billing: expected refunds or triage (see --help)\n",
        ),
        (
            vec!["--schemas", "--provider", "bogus"],
            "error: --provider bogus: expected anthropic, anthropic-strict, openai, \
             openai-responses, gemini or mcp (see --help)\n",
        ),
        (
            vec!["--provider", "openai"],
            "error: --provider goes with --schemas (see --help)\n",
        ),
        (
            vec!["--schemas", "--json"],
            "error: --schemas prints one JSON array already; --json goes with a replay (see \
             --help)\n",
        ),
        (
            vec!["--schemas", "--transcript", "session.json"],
            "error: --schemas prints tool definitions and replays nothing: it takes no \
             --transcript or --out-dir (see --help)\n",
        ),
        (
            vec!["--out-dir=data", "--schemas"],
            "error: --schemas prints tool definitions and replays nothing: it takes no \
             --transcript or --out-dir (see --help)\n",
        ),
        // The audit trail is the `toolgate` command's to check and draw.
        (
            vec!["--verify-audit", "data"],
            "error: --verify-audit is the toolgate command's: toolgate audit verify DIR|URL \
             (see --help)\n",
        ),
        (
            vec!["--out-dir", "data", "--report=data"],
            "error: --report is the toolgate command's: toolgate audit report DIR|URL \
             --count-tool issue_refund (see --help)\n",
        ),
        (
            vec!["--what-if", "a.jsonl", "--json"],
            "error: --what-if FILE replays an audit log: it takes only --weekly-refund-limit \
             and --specialist (see --help)\n",
        ),
        (
            vec!["--what-if", "a.jsonl", "--weekly-refund-limit", "30k"],
            "error: --weekly-refund-limit 30k: expected a whole number of cents (see --help)\n",
        ),
        (
            vec!["--otel", "--schemas"],
            "error: --otel and --otel-endpoint go with a replay or --live (see --help)\n",
        ),
        (
            vec![
                "--otel-endpoint",
                "http://127.0.0.1:4318/v1/traces",
                "--what-if",
                "d",
            ],
            "error: --otel and --otel-endpoint go with a replay or --live (see --help)\n",
        ),
        (
            vec!["--otel-endpoint", "ftp://collector/v1/traces"],
            "error: --otel-endpoint ftp://collector/v1/traces: expected an http:// or https:// \
             URL (http://localhost:4318/v1/traces) (see --help)\n",
        ),
        (
            vec!["--otel-endpoint", "https:///v1/traces"],
            "error: --otel-endpoint https:///v1/traces: the URL names no host (see --help)\n",
        ),
        (
            vec!["--otel-endpoint=http://a", "--otel-endpoint=http://b"],
            "error: --otel-endpoint is given twice (see --help)\n",
        ),
        (
            vec!["--weekly-refund-limit", "30000"],
            "error: --weekly-refund-limit goes with --what-if (see --help)\n",
        ),
    ] {
        let args: Vec<OsString> = args.into_iter().map(os).collect();
        let (code, out, err) = run(&args.iter().collect::<Vec<_>>());
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (exit::EXIT_BAD_INPUT, "", message)
        );
    }
    let (code, out, err) = run(&[&os("--help")]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(
        out,
        "\
Replays customer-support transcripts (assistant messages as the Messages API returns them)
through the support agent's tools and hooks.

usage:
  support_agent [--transcript FILE]... [--json] [--out-dir DIR] [--store sqlite|memory]
                [--database-url URL] [--otel] [--otel-endpoint URL]
  support_agent --schemas [--specialist refunds|triage] [--provider NAME]
  support_agent --what-if FILE [--weekly-refund-limit CENTS] [--specialist refunds|triage]
  support_agent --resume FILE (--approve ID [--by WHO] | --deny ID --reason TEXT) [--now TIME]
                [--json] [--out-dir DIR] [--store sqlite|memory] [--database-url URL]
  support_agent --worker [--once] [--out-dir DIR] [--store sqlite] [--database-url URL]
  support_agent --live --user ID --tier free|premium [--say TEXT]... [--specialist NAME]
                [--model NAME] [--base-url URL] [--max-turns N] [--max-tokens N] [--by WHO]
                [--out-dir DIR] [--store sqlite|memory] [--database-url URL] [--otel]
                [--otel-endpoint URL]

  (no option)          replay every bundled transcript; one readable line per tool call
  --transcript FILE    replay that file only (repeatable: those files, in order, one process
                       serving several conversations)
  --json               print only the user message answering each assistant message, one JSON
                       line each
  --out-dir DIR        append audit_log.jsonl and session_summaries.jsonl there (default: data)
  --store NAME         where the answer memory, the paused turns and the refund ledger are
                       kept: sqlite (default: DIR/state.sqlite, shared by every run in DIR)
                       or memory (this run only; paused turns in their files)
  --database-url URL   keep all of it in PostgreSQL instead (built with --features postgres),
                       the audit trail included (its toolgate_audit table; check it with
                       `toolgate audit verify URL`): every worker given the same URL is one
                       agent, and a call or a resume done by one is never done again by another
  --otel               also print each call's OpenTelemetry spans (execute_tool with a
                       pre_tool_use child per hook run), with the SDK's stdout exporter
  --otel-endpoint URL  also send the spans to an OpenTelemetry collector over OTLP/HTTP
                       (protobuf): URL the collector's base address, /v1/traces appended
                       (http://localhost:4318), or a URL whose path ends in /v1/traces, used
                       as given; the spans' service.name is OTEL_SERVICE_NAME when set,
                       else the service.name of OTEL_RESOURCE_ATTRIBUTES, else support_agent
  --schemas            print the specialist's tool definitions as one JSON array and exit
  --specialist NAME    with --schemas: refunds (default) or triage
  --provider NAME      with --schemas: anthropic (default), anthropic-strict, openai (Chat
                       Completions), openai-responses, gemini (functionDeclarations entries), mcp
  --what-if FILE       replay a recorded audit_log.jsonl through today's PreToolUse rules
                       (never the tools) and print every call they decide differently: allowed
                       → blocked, blocked → allowed, another rewrite, another blocking hook
  --weekly-refund-limit CENTS
                       with --what-if: try this weekly refund limit instead of 50000 cents
  --resume FILE        finish a turn paused for a person's approval (a replay writes it to
                       OUT-DIR/pending/SESSION/TURN.json) with one decision:
  --approve ID         approve the waiting tool_use ID (its rules run again, then the tool)
  --by WHO             who decided (default: operator)
  --deny ID            decline the waiting tool_use ID, with --reason TEXT for the model
  --now TIME           the resuming session's clock, RFC 3339 (default: when the turn paused);
                       a turn older than 24 hours expires and its calls are answered blocked
  --worker             resume the turns people decided in the store's approval inbox, as they
                       become ready (each waiting call decided, or expired: the model is told
                       so); one worker of a fleet resumes each turn. Polls until stopped
  --once               with --worker: resume what is ready now, then exit
  --live               talk to the model over the Messages API (key from ANTHROPIC_API_KEY):
                       each call prints its line and writes its audit line, as in a replay;
                       the summary counts the tokens used
  --user ID            with --live: the signed-in customer (the hooks' trusted context)
  --tier free|premium  with --live: the customer's tier (trusted context)
  --say TEXT           with --live: what the customer says (repeatable, in order); without it,
                       the lines typed at the terminal
  --specialist NAME    with --live: refunds (default) or triage
  --model NAME         with --live: the model (default claude-sonnet-5)
  --base-url URL       with --live: the API's address (default https://api.anthropic.com)
  --max-turns N        with --live: requests per thing the customer says (default 10)
  --max-tokens N       with --live: max_tokens per request (default 1024; doubled, up to 8192,
                       after a response cut at max_tokens)
  --now TIME           with --live, for tests: a fixed clock (RFC 3339, 2026-11-24T10:15:00Z)
  --session-id ID      with --live, for tests: the session id (default live-<start in ms>)
  --by WHO             with --live: who answers at the terminal when a rule asks a person about
                       a call (y approves, n REASON declines; default: operator); without a
                       terminal the turn pauses and is written for --resume
  --help               this text

The audit trail a run writes (DIR's files, or the database of --database-url) is checked and
drawn by the `toolgate` command: toolgate audit verify DIR|URL, toolgate audit report DIR|URL
--count-tool issue_refund (docs/toolgate-command.md).

exit codes: 0 all outcomes as expected (or every --live message got a final answer); 1 an
outcome differed (or the agent halted, output failed, the API refused or could not be reached);
2 a bad argument or transcript, or no API key for --live (nothing was run or written)
"
    );
}

#[test]
fn toolgate_audit_verify_says_ok_with_the_counts_and_last_hashes_or_names_the_broken_line() {
    let dir = TempDir::new("verify-cli");
    let (code, _, err) = run(&[&os("--out-dir"), &os(dir.path())]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    // Two transcripts paused: 20 final lines and 4 that are not.
    let calls = dir.path().join("audit_log.jsonl");
    let (_, last) = support::chained_lines(&calls, support::ZEROS);
    let (_, last_summary) =
        support::chained_lines(&dir.path().join("session_summaries.jsonl"), support::ZEROS);
    let verify = || run_toolgate(&["audit".as_ref(), "verify".as_ref(), dir.path().as_os_str()]);
    assert_eq!(
        verify(),
        (
            0,
            format!(
                "audit_log.jsonl: ok, 29 lines, last hash {last}\n\
                 session_summaries.jsonl: ok, 10 lines, last hash {last_summary}\n\
                 keep the last hashes elsewhere: lines deleted from the end of a file can only \
                 be caught against them\n"
            ),
            String::new()
        )
    );

    // The host rotates; the next replay chains on from the rotated file.
    let log = AuditLog::open(dir.path()).unwrap();
    log.rotate().unwrap();
    drop(log);
    let transcript = fixture("02_free_tier_unusual_phrasing.json");
    let (code, _, _) = run(&[
        &os("--transcript"),
        &os(&transcript),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    assert_eq!(code, exit::EXIT_OK);
    let (_, last) = support::chained_lines(&calls, &last);
    let (_, last_summary) =
        support::chained_lines(&dir.path().join("session_summaries.jsonl"), &last_summary);
    assert_eq!(
        verify(),
        (
            0,
            format!(
                "audit_log.jsonl (2 files): ok, 32 lines, last hash {last}\n\
                 session_summaries.jsonl (2 files): ok, 11 lines, last hash {last_summary}\n\
                 keep the last hashes elsewhere: lines deleted from the end of a file can only \
                 be caught against them\n"
            ),
            String::new()
        )
    );

    // An edited line: the next one no longer follows it.
    let rotated = dir.path().join("audit_log.1.jsonl");
    let text = std::fs::read_to_string(&rotated).unwrap();
    let edited = text.replacen(r#""outcome":"blocked""#, r#""outcome":"ok""#, 1);
    assert_ne!(edited, text);
    let at = text[..text.find(r#""outcome":"blocked""#).unwrap()]
        .matches('\n')
        .count()
        + 1;
    std::fs::write(&rotated, edited).unwrap();
    assert_eq!(
        verify(),
        (
            1,
            format!(
                "audit_log.jsonl (2 files): broken: line {} does not follow line {at}: line {at} \
                 was edited, or lines were deleted between them in {}\n\
                 session_summaries.jsonl (2 files): ok, 11 lines, last hash {last_summary}\n",
                at + 1,
                rotated.display()
            ),
            String::new()
        )
    );

    // Not a folder: a bad argument.
    assert_eq!(
        run_toolgate(&["audit".as_ref(), "verify".as_ref(), calls.as_os_str()]),
        (
            2,
            String::new(),
            format!(
                "toolgate: error: `{}` is a file, not an audit folder: give the folder that \
                 holds it (`{}`)\n",
                calls.display(),
                dir.path().display()
            )
        )
    );
}

// ---------------------------------------------------------------- the specialists

#[test]
fn every_tool_declares_its_effect_and_every_write_has_a_rule_or_a_reason() {
    let refunds = Agent::build(Specialist::Refunds, None).unwrap().dispatcher;
    let triage = Agent::build(Specialist::Triage, None).unwrap().dispatcher;
    let read = Effect::read().open_world(false);
    for tool in ["lookup_user", "get_order_details", "search_faq"] {
        assert_eq!(refunds.tool_effect(tool), Some(read), "{tool}");
        assert_eq!(triage.tool_effect(tool), Some(read), "{tool}");
    }
    assert_eq!(
        refunds.tool_effect("issue_refund"),
        Some(
            Effect::write()
                .destructive(true)
                .idempotent(false)
                .open_world(true)
        )
    );
    assert_eq!(
        refunds.tool_effect("prepare_case_file"),
        Some(
            Effect::write()
                .destructive(false)
                .idempotent(true)
                .open_world(false)
        )
    );
    assert_eq!(
        triage.tool_effect("create_jira_ticket"),
        Some(
            Effect::write()
                .destructive(false)
                .idempotent(false)
                .open_world(false)
        )
    );
    assert_eq!(
        triage.unguarded_reason("create_jira_ticket"),
        Some(
            "a ticket files into engineering's own queue: it moves no money, shows no \
             customer's data, and triage closes duplicates"
        )
    );
    assert_eq!(refunds.unguarded_reason("issue_refund"), None);
}

#[test]
fn the_refunds_specialist_without_the_rules_on_issue_refund_does_not_build() {
    let path = |item: &str| format!("{}::{item}", support_agent::AGENT_PATH);
    // The refunds specialist's items, less every hook whose tools include `issue_refund`
    // (`premium_only`, `own_records_only`, `weekly_refund_limit`).
    let err = Dispatcher::builder()
        .items([
            path("tools::lookup_user"),
            path("tools::get_order_details"),
            path("tools::search_faq"),
            path("tools::prepare_case_file"),
            path("tools::issue_refund"),
            path("policy::no_case_files_during_deploy"),
            path("policy::cap_faq_limit"),
            path("observer::record_call"),
        ])
        .undeclared_effects_are_writes()
        .state(Ledger::default())
        .state(support_agent::ledger::WeeklyRefundLimit::default())
        .state(CallLog::default())
        .build()
        .expect_err("issue_refund has no rule left");
    assert_eq!(
        err.problems,
        vec![toolgate::dispatch::BuildProblem::UnguardedWrite {
            tool: "issue_refund".into(),
            path: path("tools::issue_refund"),
            declared: true,
            only_rewritten_by: vec![],
        }]
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the dispatcher cannot be built (1 problem):\n- tool `issue_refund` ({}) writes \
             (`effect = \"write\"`), but no PreToolUse hook of this dispatcher guards it: add a \
             #[pre_hook] that returns `Decision` and whose `tools` names it, or say why it needs \
             none with #[tool(effect = \"write\", unguarded = \"…\")] (ToolDef::unguarded)",
            path("tools::issue_refund")
        )
    );
    // One rule back is enough.
    Dispatcher::builder()
        .items([
            path("tools::issue_refund"),
            path("policy::weekly_refund_limit"),
        ])
        .state(Ledger::default())
        .state(support_agent::policy::WeeklyRefundLimit::default())
        .build()
        .expect("issue_refund with its weekly limit builds");
}

#[test]
fn both_specialists_come_from_one_registry_with_their_own_tools_and_hook_chains() {
    let refunds = Agent::build(Specialist::Refunds, None).unwrap().dispatcher;
    let triage = Agent::build(Specialist::Triage, None).unwrap().dispatcher;
    let chain = |d: &Dispatcher, tool: &str| -> Vec<String> {
        d.pre_hook_chain(tool)
            .unwrap()
            .into_iter()
            .map(|p| p.rsplit("::").next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        chain(&refunds, "issue_refund"),
        [
            "premium_only",
            "own_records_only",
            "large_refund_needs_approval",
            "weekly_refund_limit"
        ]
    );
    assert_eq!(
        chain(&refunds, "prepare_case_file"),
        [
            "premium_only",
            "no_case_files_during_deploy",
            "own_records_only"
        ]
    );
    assert_eq!(chain(&refunds, "lookup_user"), ["own_records_only"]);
    assert_eq!(chain(&refunds, "get_order_details"), ["own_records_only"]);
    assert_eq!(chain(&refunds, "search_faq"), ["cap_faq_limit"]);
    assert_eq!(chain(&triage, "lookup_user"), ["own_records_only"]);
    assert_eq!(chain(&triage, "create_jira_ticket"), Vec::<String>::new());
    assert_eq!(triage.pre_hook_chain("issue_refund"), None);
    assert_eq!(
        refunds.tool_path("lookup_user"),
        triage.tool_path("lookup_user")
    );
    assert_eq!(
        refunds.tool_path("lookup_user"),
        Some(format!("{}::tools::lookup_user", support_agent::AGENT_PATH).as_str())
    );

    let (agent, s) = session(
        Specialist::Triage,
        "u_001",
        "premium",
        "2026-11-24T10:15:00Z",
    );
    let (outcome, _, content) = call(
        &agent,
        &s,
        "create_jira_ticket",
        json!({"summary": "Refund button 500s", "description": "Since 09:00 UTC"}),
    );
    assert_eq!(outcome, Outcome::Ok);
    assert_eq!(
        content,
        r#"{"ticket":"SUP-1","summary":"Refund button 500s","description_chars":15,"status":"open"}"#
    );
    let (outcome, _, content) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_1001", "amount_cents": 1}),
    );
    assert_eq!(outcome, Outcome::UnknownTool);
    assert_eq!(
        content,
        "Error: unknown tool 'issue_refund'. Available tools: create_jira_ticket, \
         get_order_details, lookup_user, search_faq."
    );
}

// ---------------------------------------------------------------- the rules at their edges

#[test]
fn the_deploy_window_is_thursday_from_0200_inclusive_to_0400_exclusive_utc() {
    for (instant, inside) in [
        ("2026-11-26T01:59:59.999999999Z", false),
        ("2026-11-26T02:00:00Z", true),
        ("2026-11-26T03:10:00Z", true),
        ("2026-11-26T03:59:59.999999999Z", true),
        ("2026-11-26T04:00:00Z", false),
        ("2026-11-25T02:30:00Z", false),      // a Wednesday
        ("2026-11-27T02:30:00Z", false),      // a Friday
        ("2026-12-03T02:00:00Z", true),       // the next Thursday
        ("2026-11-26T03:30:00+02:00", false), // 01:30 UTC
        ("2026-11-25T21:30:00-05:00", true),  // Thursday 02:30 UTC
    ] {
        assert_eq!(in_deploy_window(at(instant)), Ok(inside), "{instant}");
    }
    // Through the dispatcher: 04:00 sharp is open again.
    let input = json!({"user_id": "u_007", "order_id": "o_3001", "reason": "Never delivered",
                       "evidence": ["tracking page screenshot"]});
    let (agent, s) = session(
        Specialist::Refunds,
        "u_007",
        "premium",
        "2026-11-26T02:00:00Z",
    );
    assert_eq!(
        call(&agent, &s, "prepare_case_file", input.clone()).0,
        Outcome::Blocked
    );
    let (agent, s) = session(
        Specialist::Refunds,
        "u_007",
        "premium",
        "2026-11-26T04:00:00Z",
    );
    assert_eq!(call(&agent, &s, "prepare_case_file", input).0, Outcome::Ok);
}

#[test]
fn iso_weeks_start_on_monday_utc_and_cross_years() {
    for (instant, year, week, shown) in [
        ("2026-11-24T10:15:00Z", 2026, 48, "2026-W48"),
        ("2026-11-29T23:59:59Z", 2026, 48, "2026-W48"), // Sunday
        ("2026-11-30T00:00:00Z", 2026, 49, "2026-W49"), // Monday
        ("2026-11-30T00:30:00+01:00", 2026, 48, "2026-W48"), // Sunday 23:30 UTC
        ("2027-01-01T12:00:00Z", 2026, 53, "2026-W53"),
        ("2027-01-04T00:00:00Z", 2027, 1, "2027-W01"),
        ("2024-12-30T00:00:00Z", 2025, 1, "2025-W01"),
    ] {
        let w = IsoWeek::of(at(instant)).unwrap();
        assert_eq!(
            (w.year, w.week, w.to_string().as_str()),
            (year, week, shown),
            "{instant}"
        );
    }
}

/// Approves every call a rule asks about, as `lead@shop.example`.
struct ApproveAll;

impl toolgate::approval::Approver for ApproveAll {
    fn approve<'a>(
        &'a self,
        _request: toolgate::approval::ApprovalRequest<'a>,
    ) -> toolgate::dispatch::BoxFuture<'a, toolgate::approval::Approval> {
        Box::pin(async { toolgate::approval::Approval::approve("lead@shop.example") })
    }
}

/// [`session`] on an agent whose approver approves every refund that needs a person, so the
/// other rules decide.
fn approved_session(user: &str, now: &str) -> (Agent, Session) {
    let agent = Agent::build_with(Specialist::Refunds, None, |b| b.approver(ApproveAll))
        .expect("the agent builds");
    let ctx = HookContext::builder(user, "sess_test")
        .tier("premium")
        .clock(Clock::fixed(at(now)))
        .build();
    let session = agent.dispatcher.session(ctx);
    (agent, session)
}

#[test]
fn the_weekly_refund_limit_counts_the_owners_refunds_in_the_iso_week_of_now() {
    let limit_hook = hook("weekly_refund_limit");
    // 30000 + 20000 = 50000 exactly is allowed; one cent more is not. (A person approves the
    // refunds above 20000 cents: this test is about the weekly limit.)
    let (agent, s) = approved_session("u_007", "2026-11-26T11:30:00Z");
    assert_eq!(
        call(
            &agent,
            &s,
            "issue_refund",
            json!({"order_id": "o_3002", "amount_cents": 30000})
        )
        .0,
        Outcome::Ok
    );
    assert_eq!(
        call(
            &agent,
            &s,
            "issue_refund",
            json!({"order_id": "o_3001", "amount_cents": 20000})
        )
        .0,
        Outcome::Ok
    );
    let use_ = ToolUse::new(
        "toolu_x",
        "issue_refund",
        json!({"order_id": "o_3001", "amount_cents": 1}),
    );
    let result = toolgate::block_on(s.call(&use_)).unwrap();
    assert!(result.is_error);
    assert_eq!(
        result.content_text(),
        "BLOCKED: a refund of 1 cents would bring this customer's refunds in ISO week 2026-W48 \
         to 50001 cents, above the weekly limit of 50000 cents (50000 cents already refunded \
         this week). No more refunds can be issued to this customer this week; tell them the \
         rest will be reviewed by a human agent."
    );
    assert_eq!(
        agent.calls.take()[0].blocked_by.as_deref(),
        Some(limit_hook.as_str())
    );

    // One refund above the limit, with nothing refunded yet: the hook says how much fits.
    let (agent, s) = session(
        Specialist::Refunds,
        "u_007",
        "premium",
        "2026-11-26T11:30:00Z",
    );
    let (outcome, _, content) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_3001", "amount_cents": 52000}),
    );
    assert_eq!(outcome, Outcome::Blocked);
    assert_eq!(
        content,
        "BLOCKED: a refund of 52000 cents would bring this customer's refunds in ISO week \
         2026-W48 to 52000 cents, above the weekly limit of 50000 cents (0 cents already \
         refunded this week). Refund at most 50000 cents now and tell the customer the rest will \
         be reviewed by a human agent."
    );
    // An amount that would overflow is denied, not a panic.
    let (outcome, _, content) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_3001", "amount_cents": u64::MAX}),
    );
    assert_eq!(outcome, Outcome::Blocked);
    assert_eq!(
        content,
        "BLOCKED: a refund of 18446744073709551615 cents would bring this customer's refunds in \
         ISO week 2026-W48 to 18446744073709551615 cents, above the weekly limit of 50000 cents \
         (0 cents already refunded this week). Refund at most 50000 cents now and tell the \
         customer the rest will be reviewed by a human agent."
    );

    // The week turns on Monday 00:00 UTC: Sunday's refunds no longer count.
    let agent = Agent::build_with(Specialist::Refunds, None, |b| b.approver(ApproveAll)).unwrap();
    let open = |now: &str| {
        agent.dispatcher.session(
            HookContext::builder("u_007", "sess_week")
                .tier("premium")
                .clock(Clock::fixed(at(now)))
                .build(),
        )
    };
    let sunday = open("2026-11-29T23:59:59Z");
    assert_eq!(
        call(
            &agent,
            &sunday,
            "issue_refund",
            json!({"order_id": "o_3002", "amount_cents": 30000})
        )
        .0,
        Outcome::Ok
    );
    let monday = open("2026-11-30T00:00:00Z");
    assert_eq!(
        call(
            &agent,
            &monday,
            "issue_refund",
            json!({"order_id": "o_3001", "amount_cents": 30000})
        )
        .0,
        Outcome::Ok
    );
    assert_eq!(
        call(
            &agent,
            &monday,
            "issue_refund",
            json!({"order_id": "o_3001", "amount_cents": 20001})
        )
        .0,
        Outcome::Blocked
    );
    let weeks: Vec<String> = toolgate::block_on(agent.ledger.refunds_of("u_007"))
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.refund_id, r.order_id, r.amount_cents, r.week
            )
        })
        .collect();
    assert_eq!(
        weeks,
        [
            "re_0001 o_3002 30000 2026-W48",
            "re_0002 o_3001 30000 2026-W49"
        ]
    );
}

#[test]
fn the_refund_tool_refuses_zero_and_more_than_is_left_on_the_order() {
    let (agent, s) = session(
        Specialist::Refunds,
        "u_001",
        "premium",
        "2026-11-24T10:15:00Z",
    );
    let (outcome, _, content) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_1001", "amount_cents": 0}),
    );
    assert_eq!(outcome, Outcome::ToolError);
    assert_eq!(
        content,
        "amount_cents must be at least 1: give the amount to refund in cents."
    );
    let (outcome, _, content) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_1001", "amount_cents": 2600}),
    );
    assert_eq!(outcome, Outcome::ToolError);
    assert_eq!(
        content,
        "Refund refused: 2600 cents is more than order o_1001 has left to refund (2599 cents \
         paid, 0 cents already refunded, 2599 cents left). Refund at most 2599 cents."
    );
    assert_eq!(
        call(
            &agent,
            &s,
            "issue_refund",
            json!({"order_id": "o_1001", "amount_cents": 2000})
        )
        .0,
        Outcome::Ok
    );
    let (outcome, _, content) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_1001", "amount_cents": 600}),
    );
    assert_eq!(outcome, Outcome::ToolError);
    assert_eq!(
        content,
        "Refund refused: 600 cents is more than order o_1001 has left to refund (2599 cents \
         paid, 2000 cents already refunded, 599 cents left). Refund at most 599 cents."
    );
    let (_, _, content) = call(
        &agent,
        &s,
        "get_order_details",
        json!({"order_id": "o_1001"}),
    );
    assert_eq!(
        content,
        r#"{"order_id":"o_1001","user_id":"u_001","amount_cents":2599,"refunded_cents":2000}"#
    );
}

#[test]
fn the_ownership_rule_answers_alike_for_another_customers_order_and_a_missing_one() {
    let (agent, s) = session(
        Specialist::Refunds,
        "u_001",
        "premium",
        "2026-11-24T10:15:00Z",
    );
    let (o1, _, theirs) = call(
        &agent,
        &s,
        "get_order_details",
        json!({"order_id": "o_3001"}),
    );
    let (o2, _, missing) = call(
        &agent,
        &s,
        "get_order_details",
        json!({"order_id": "o_9999"}),
    );
    assert_eq!((o1, o2), (Outcome::Blocked, Outcome::Blocked));
    assert_eq!(
        theirs,
        "BLOCKED: order o_3001 is not one of the signed-in customer's orders. Ask the customer \
         to check the order number (lookup_user lists their orders)."
    );
    assert_eq!(missing, theirs.replace("o_3001", "o_9999"));
    // The same on the refund and case-file paths.
    let (o, _, refund) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_3001", "amount_cents": 100}),
    );
    assert_eq!((o, refund.as_str()), (Outcome::Blocked, theirs.as_str()));
    let (o, _, _) = call(
        &agent,
        &s,
        "prepare_case_file",
        json!({"user_id": "u_001", "order_id": "o_2001", "reason": "x", "evidence": ["y"]}),
    );
    assert_eq!(o, Outcome::Blocked);
    // Own order: allowed.
    assert_eq!(
        call(
            &agent,
            &s,
            "get_order_details",
            json!({"order_id": "o_1002"})
        )
        .0,
        Outcome::Ok
    );
}

#[test]
fn the_tools_refuse_a_missing_order_themselves_when_no_ownership_hook_ran() {
    // In the agent `own_records_only` denies a missing order before any tool runs; the tools
    // check anyway, since they are callable directly or by a dispatcher with other hooks.
    let missing = "No order has the id o_9999; check the order number with the customer.";
    let ledger = || State::from_arc(Arc::new(Ledger::default()));
    let ctx = || {
        HookContext::builder("u_001", "sess_test")
            .tier("premium")
            .clock(Clock::fixed(at("2026-11-24T10:15:00Z")))
            .build()
    };
    let err = toolgate::block_on(tools::get_order_details("o_9999".to_owned(), ledger()))
        .expect_err("no such order");
    assert_eq!(err.message(), missing);
    let err = tools::prepare_case_file(
        "u_001".to_owned(),
        "o_9999".to_owned(),
        "Never delivered".to_owned(),
        vec!["tracking page screenshot".to_owned()],
    )
    .expect_err("no such order");
    assert_eq!(err.message(), missing);
    let err = toolgate::block_on(tools::issue_refund(
        "o_9999".to_owned(),
        100,
        &ctx(),
        ledger(),
        State::from_arc(Arc::new(support_agent::ledger::WeeklyRefundLimit::default())),
    ))
    .expect_err("no such order");
    assert_eq!(err.message(), missing);

    // Who owns the order is the hooks' business: called directly, the tool opens the case.
    let case = tools::prepare_case_file(
        "u_001".to_owned(),
        "o_3001".to_owned(),
        "Never delivered".to_owned(),
        vec!["tracking page screenshot".to_owned()],
    )
    .expect("o_3001 exists");
    assert_eq!(
        case,
        json!({"case_id": "case_o_3001", "user_id": "u_001", "order_id": "o_3001",
               "reason": "Never delivered", "evidence": ["tracking page screenshot"],
               "status": "open"})
    );

    // A dispatcher with the refund tool and the weekly limit only: the limit has no refunds to
    // count for a missing order and allows the call; the tool refuses it.
    let calls = Arc::new(CallLog::default());
    let dispatcher = Dispatcher::builder()
        .items([
            format!("{}::tools::issue_refund", support_agent::AGENT_PATH),
            format!("{}::policy::weekly_refund_limit", support_agent::AGENT_PATH),
            format!("{}::observer::record_call", support_agent::AGENT_PATH),
        ])
        .state(Ledger::default())
        .state(support_agent::policy::WeeklyRefundLimit::default())
        .state_arc(Arc::clone(&calls))
        .build()
        .expect("the dispatcher builds");
    assert_eq!(
        dispatcher.pre_hook_chain("issue_refund"),
        Some(vec![hook("weekly_refund_limit").as_str()])
    );
    let session = dispatcher.session(ctx());
    let use_ = ToolUse::new(
        "toolu_missing",
        "issue_refund",
        json!({"order_id": "o_9999", "amount_cents": 100}),
    );
    let result = toolgate::block_on(session.call(&use_)).expect("no hook failed");
    assert_eq!(
        (result.is_error, result.content_text().as_ref()),
        (true, missing)
    );
    let lines = calls.take();
    assert_eq!(
        lines
            .iter()
            .map(|l| (l.outcome, l.blocked_by.as_deref()))
            .collect::<Vec<_>>(),
        [(Outcome::ToolError, None)]
    );
}

#[test]
fn the_refund_tool_shows_the_ledgers_refusal_and_keeps_its_internal_errors_from_the_model() {
    // A dispatcher with the refund tool alone (no weekly limit, which reads the calendar too and
    // would halt first) and the audit log. A write tool needs a guard: one that allows every
    // call stands in for the rules here.
    let dir = TempDir::new("support-internal");
    let dispatcher = Dispatcher::builder()
        .items([format!(
            "{}::tools::issue_refund",
            support_agent::AGENT_PATH
        )])
        .pre_hook(
            toolgate::dispatch::PreHookDef::sync("test::allow_every_refund", 0, |_, _| {
                Ok(toolgate::Decision::Allow)
            })
            .tools(["issue_refund"]),
        )
        .state(Ledger::default())
        .state(support_agent::ledger::WeeklyRefundLimit::default())
        .audit_log(AuditLog::open(&dir).expect("the audit log opens"))
        .build()
        .expect("the dispatcher builds");
    let run = |now: SystemTime, amount_cents: u64| {
        let ctx = HookContext::builder("u_001", "sess_internal")
            .clock(Clock::fixed(now))
            .build();
        let session = dispatcher.session(ctx);
        let use_ = ToolUse::new(
            "toolu_refund",
            "issue_refund",
            json!({"order_id": "o_1001", "amount_cents": amount_cents}),
        );
        let result = toolgate::block_on(session.call(&use_)).expect("no hook failed");
        serde_json::to_value(result).unwrap()
    };
    // A clock past the calendar's range (year 12000): `IsoWeek::of` fails, forwarded with `?`.
    let far = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(316_000_000_000);
    assert_eq!(
        run(far, 100),
        json!({"type": "tool_result", "tool_use_id": "toolu_refund", "is_error": true,
               "content": toolgate::content::INTERNAL_ERROR_MESSAGE})
    );
    // The ledger's refusal is written for the model and opted in with `ToolError::for_model`.
    assert_eq!(
        run(at("2026-11-24T10:15:00Z"), 2600),
        json!({"type": "tool_result", "tool_use_id": "toolu_refund", "is_error": true,
               "content": "Refund refused: 2600 cents is more than order o_1001 has left to \
                           refund (2599 cents paid, 0 cents already refunded, 2599 cents left). \
                           Refund at most 2599 cents."})
    );
    let lines: Vec<Value> = json_lines(&dir.join(toolgate::audit::AUDIT_LOG_FILE))
        .iter()
        .map(|l| json!([l["outcome"], l["content"], l.get("detail")]))
        .collect();
    assert_eq!(
        lines,
        [
            json!([
                "tool_error",
                toolgate::content::INTERNAL_ERROR_MESSAGE,
                "the context's clock reads an instant outside the calendar's range"
            ]),
            json!([
                "tool_error",
                "Refund refused: 2600 cents is more than order o_1001 has left to refund (2599 \
                 cents paid, 0 cents already refunded, 2599 cents left). Refund at most 2599 \
                 cents.",
                null
            ]),
        ]
    );
}

#[test]
fn free_tier_refunds_are_denied_with_an_alternative_and_faq_limits_at_or_under_5_pass_unchanged() {
    let (agent, s) = session(Specialist::Refunds, "u_004", "free", "2026-11-24T15:40:00Z");
    let (outcome, is_error, content) = call(
        &agent,
        &s,
        "issue_refund",
        json!({"order_id": "o_2001", "amount_cents": 1299}),
    );
    assert_eq!((outcome, is_error), (Outcome::Blocked, true));
    assert_eq!(
        content,
        "BLOCKED: case files and refunds are for premium customers, and this customer's tier is \
         free. Answer from the refund policy (search_faq), or tell the customer that upgrading \
         to premium includes refunds handled by support."
    );
    // A limit over 5 is rewritten once: the chain runs again with 5 without the cap, which is
    // not asked about the input it produced.
    for (limit, rewritten, entries) in [
        (5, false, 5),
        (6, true, 5),
        (50, true, 5),
        (1, false, 1),
        (0, false, 0),
    ] {
        let use_ = ToolUse::new(
            format!("toolu_faq_{limit}"),
            "search_faq",
            json!({"query": "refund order damaged shipping premium delivery", "limit": limit}),
        );
        let result = toolgate::block_on(s.call(&use_)).unwrap();
        let line = agent.calls.take().remove(0);
        let want: Vec<String> = if rewritten {
            vec![hook("cap_faq_limit")]
        } else {
            Vec::new()
        };
        assert_eq!(line.rewritten_by, want, "limit {limit}");
        let got: Value = serde_json::from_str(&result.content_text()).unwrap();
        assert_eq!(got.as_array().unwrap().len(), entries, "limit {limit}");
    }
}

#[test]
fn a_hook_that_cannot_decide_halts_the_agent_and_answers_every_block() {
    // A policy whose backing store is down: it errors instead of deciding (fail closed).
    let broken = || {
        toolgate::dispatch::PreHookDef::sync("test::broken_policy", 5, |_env, _call| {
            Err(toolgate::dispatch::HookError::new(
                "policy store unreachable",
            ))
        })
    };
    let t = transcript::load(&fixture("03_parallel_batch.json")).unwrap();
    let dir = TempDir::new("halt");
    let audit = AuditLog::open(dir.path()).unwrap();
    let agent =
        Agent::build_with(Specialist::Refunds, Some(&audit), |b| b.pre_hook(broken())).unwrap();
    let replay = agent::replay_on(&agent, &t);
    drop((agent, audit));

    assert_eq!(
        replay.halted.as_deref(),
        Some(
            "agent halted: PreToolUse hook `test::broken_policy` failed on tool_use \
             `toolu_01OoNZYW2mZp0zVZomHFwUbb`: policy store unreachable"
        )
    );
    let answer = replay.messages[0].answer.as_ref().unwrap();
    let results: Vec<(&str, bool, String)> = answer
        .tool_results()
        .map(|r| {
            (
                r.tool_use_id.as_str(),
                r.is_error,
                r.content_text().into_owned(),
            )
        })
        .collect();
    let not_run = "Not run: an earlier call in this message was stopped because a policy check \
                   could not be completed.";
    assert_eq!(
        results,
        [
            (
                "toolu_01OoNZYW2mZp0zVZomHFwUbb",
                true,
                "BLOCKED: this call was not run because a policy check could not be completed. \
                 Do not retry it; tell the user this action is unavailable right now."
                    .to_owned()
            ),
            ("toolu_01YrEqmSM9wCZ7Uw9xfogoEm", true, not_run.to_owned()),
            ("toolu_01vnEN5N1aE6PwZPf1Qh6yYT", true, not_run.to_owned()),
        ]
    );
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    let outcomes: Vec<&str> = lines
        .iter()
        .map(|l| l["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["hook_failed", "not_run", "not_run"]);
    assert_eq!(lines[0]["blocked_by"], "test::broken_policy");
    assert_eq!(lines[0]["detail"], "policy store unreachable");
    assert!(
        !lines[0]["content"]
            .as_str()
            .unwrap()
            .contains("unreachable"),
        "the detail is operator-only"
    );
    assert_eq!(
        agent::mismatches(&t, &replay)
            .iter()
            .map(|m| (m.tool_use_id.as_str(), m.expected, m.actual))
            .collect::<Vec<_>>(),
        [
            (
                "toolu_01OoNZYW2mZp0zVZomHFwUbb",
                Outcome::Blocked,
                Some(Outcome::HookFailed)
            ),
            (
                "toolu_01YrEqmSM9wCZ7Uw9xfogoEm",
                Outcome::Ok,
                Some(Outcome::NotRun)
            ),
            (
                "toolu_01vnEN5N1aE6PwZPf1Qh6yYT",
                Outcome::Ok,
                Some(Outcome::NotRun)
            ),
        ]
    );
}

#[test]
fn control_characters_from_the_model_are_escaped_in_readable_lines() {
    let text = std::fs::read_to_string(fixture("03_parallel_batch.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["messages"][0]["content"][1]["name"] = json!("look\u{1b}[31mup\nfake line");
    v["expected_outcomes"] = json!({});
    let dir = TempDir::new("control");
    let file = dir.path().with_extension("json");
    std::fs::write(&file, v.to_string()).unwrap();
    let (code, out, _) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, exit::EXIT_OK);
    assert!(
        !out.contains('\u{1b}'),
        "no escape character reaches the terminal"
    );
    assert!(
        out.lines().any(|l| l
            .trim_start()
            .starts_with(r"toolu_01OoNZYW2mZp0zVZomHFwUbb  look\u{1b}[31mup\u{a}fake line {")),
        "{out}"
    );
    assert!(!out.lines().any(|l| l.starts_with("fake line")));
}

#[test]
fn line_breaks_and_escapes_from_the_model_stay_inside_one_line_of_every_output() {
    // Every character that ends a line for one reader or another, and an ANSI escape sequence,
    // in a tool name, an input value, and a deny reason that quotes the input.
    const HOSTILE: &str = "a\rb\nc\r\nd\u{85}e\u{2028}f\u{2029}g\u{1b}[31mred\u{1b}[0m";
    const SHOWN: &str = r"a\u{d}b\u{a}c\u{d}\u{a}d\u{85}e\u{2028}f\u{2029}g\u{1b}[31mred\u{1b}[0m";
    let text = std::fs::read_to_string(fixture("03_parallel_batch.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let blocks = &mut v["messages"][0]["content"];
    blocks[1]["input"]["user_id"] = json!(format!("u_9{HOSTILE}"));
    blocks[2]["name"] = json!(format!("get{HOSTILE}"));
    blocks[3]["input"]["query"] = json!(HOSTILE);
    v["expected_outcomes"] = json!({});
    let dir = TempDir::new("line-breaks");
    let file = dir.path().with_extension("json");
    std::fs::write(&file, v.to_string()).unwrap();
    let raw = [
        '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}', '\u{1b}',
    ];

    let (code, out, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    for c in raw {
        assert!(!out.contains(c), "{c:?} raw in {out:?}");
    }
    let calls: Vec<&str> = out
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("toolu_"))
        .collect();
    // Each call one line: the input as JSON text and the answer, the model's characters
    // escaped (`\r` by JSON, the rest by `printable`), cut at the line's widths.
    assert_eq!(
        calls,
        [
            format!(
                r#"toolu_01OoNZYW2mZp0zVZomHFwUbb  lookup_user {{"user_id":"u_9a\rb\nc\r\nd\u{{85}}e\u{{2028}}f\u{{2029}}g\u001b[31mred\u001b[0m"}} | blocked by {} | BLOCKED: this conversation can only use the signed-in customer's own account, and u_9a\u{{d}}b\u{{a}}c\u{{d}}\u{{a}}d\…"#,
                hook("own_records_only")
            ),
            format!(
                r#"toolu_01YrEqmSM9wCZ7Uw9xfogoEm  geta\u{{d}}b\u{{a}}c\u{{d}}\u{{a}}d\u{{85}}e\u{{2028}}f\u{{2029}}g\u{{1b}}[31mre… {{"order_id":"o_1002"}} | failed, unknown_tool | Error: unknown tool 'get{SHOWN}'. Available to…"#
            ),
            format!(
                r#"toolu_01vnEN5N1aE6PwZPf1Qh6yYT  search_faq {{"query":"a\rb\nc\r\nd\u{{85}}e\u{{2028}}f\u{{2029}}g\u001b[31mred\u001b[0m","limit":50}} | rewritten by {} to {{"query":"a\rb\nc\r\nd\u{{85}}e\u{{2028}}f\u{{2029}}g\u001b[31mred\u001b[0m","limit":5…, allowed, ok | []"#,
                hook("cap_faq_limit")
            ),
        ],
        "{out}"
    );
    // The deny reason quoting the input, whole, in the audit line's answer.
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(
        lines[0]["content"],
        format!(
            "BLOCKED: this conversation can only use the signed-in customer's own account, and \
             u_9{HOSTILE} is not it. Use the signed-in customer's id, u_001, or ask them what \
             they need for their own account."
        )
    );

    // --json: one JSON line per answer, the same value, nothing raw.
    let json_dir = TempDir::new("line-breaks-json");
    let (code, out, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--json"),
        &os("--out-dir"),
        &os(json_dir.path()),
    ]);
    let _ = std::fs::remove_file(&file);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    for c in raw {
        assert!(!out.contains(c), "{c:?} raw in {out:?}");
    }
    let answers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 1);
    let results = answers[0]["content"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["content"], lines[0]["content"]);

    // The audit file: one line per call for Rust, Python and JavaScript readers alike.
    let path = dir.path().join("audit_log.jsonl");
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["tool"], format!("get{HOSTILE}"));
    assert_eq!(lines[2]["input"]["query"], HOSTILE);
    for reader in support::LineReader::ALL {
        assert_eq!(reader.read(&path), lines, "{reader:?}");
    }
}

#[test]
fn a_message_cut_at_max_tokens_prints_no_answer_but_a_note_in_json_mode() {
    let text = std::fs::read_to_string(fixture("01_premium_refund.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["messages"][0]["stop_reason"] = json!("max_tokens");
    v["expected_outcomes"] = json!({});
    let dir = TempDir::new("max-tokens");
    let file = dir.path().with_extension("json");
    std::fs::write(&file, v.to_string()).unwrap();
    let (code, out, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--json"),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, exit::EXIT_OK);
    // Messages 2 to 4 are answered; the first one, cut off, is not.
    assert_eq!(out.lines().count(), 3);
    assert_eq!(
        err,
        "note: no answer: the assistant message stopped at max_tokens, so its 1 tool_use \
         block(s) may be cut off and none was run; request the turn again with a larger \
         max_tokens\n"
    );
    let audit = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(audit[0]["outcome"], "not_run");
}

#[test]
fn the_weekly_limit_reads_the_typed_request_it_is_given() {
    // The hook takes `&RefundRequest`, the struct `issue_refund` deserializes into: an input
    // without its fields never reaches it (the dispatcher answers `invalid_input` first), so it
    // has no missing-field case. Called directly, it decides on the fields as typed.
    let now = at("2026-11-26T11:30:00Z");
    let ctx = HookContext::builder("u_007", "sess_direct")
        .tier("premium")
        .clock(Clock::fixed(now))
        .build();
    let week = IsoWeek::of(now).expect("in range");
    let decide = |amount_cents: u64| {
        let request = tools::RefundRequest {
            order_id: "o_3001".into(),
            amount_cents,
        };
        match toolgate::block_on(support_agent::policy::weekly_refund_limit(
            &ctx,
            &request,
            State::from_arc(Arc::new(Ledger::default())),
            State::from_arc(Arc::new(support_agent::policy::WeeklyRefundLimit::default())),
        )) {
            Ok(toolgate::Decision::Allow) => None,
            Ok(toolgate::Decision::Deny { reason, instead }) => Some((reason, instead)),
            Ok(_) => panic!("the weekly limit never rewrites nor asks"),
            Err(e) => panic!("the weekly limit failed: {e}"),
        }
    };
    assert_eq!(decide(50_000), None);
    assert_eq!(
        decide(50_001),
        Some((
            format!(
                "a refund of 50001 cents would bring this customer's refunds in ISO week {week} \
                 to 50001 cents, above the weekly limit of 50000 cents (0 cents already refunded \
                 this week)."
            ),
            Some(
                "Refund at most 50000 cents now and tell the customer the rest will be reviewed \
                 by a human agent."
                    .to_owned()
            )
        ))
    );
}

// ---------------------------------------------------------------- approvals

const APPROVAL_HOOK_REASON_30000: &str =
    "a refund of 30000 cents is above 20000 cents and needs a person's approval";

/// The audit lines of `dir`, exact text (`prev` as `…`, `duration_us` as 0), with the hook
/// paths as the example names them.
fn audit_text(dir: &Path) -> Vec<String> {
    let (lines, _) = support::chained_lines(&dir.join("audit_log.jsonl"), support::ZEROS);
    lines
        .into_iter()
        .map(|l| {
            l.replace(
                &format!("{}::policy::", support_agent::AGENT_PATH),
                "support_agent::policy::",
            )
        })
        .collect()
}

#[test]
fn a_transcripts_decisions_resume_its_paused_turns_approved_and_denied() {
    let dir = TempDir::new("approvals");
    for name in [
        "06_large_refund_approved.json",
        "07_large_refund_denied.json",
    ] {
        let (code, _, err) = run(&[
            &os("--transcript"),
            &os(fixture(name)),
            &os("--out-dir"),
            &os(dir.path()),
        ]);
        assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""), "{name}");
    }
    let asked = format!(
        r#""asked_by":[{{"hook":"support_agent::policy::large_refund_needs_approval","reason":"{APPROVAL_HOOK_REASON_30000}"}}]"#
    );
    // The hook runs each line lists (`hooks`): a lookup passes the ownership rule; a refund runs
    // the chain, in which the approval rule asks (at resume too: a person approved that input).
    let r = |hook: &str, decision: &str| {
        format!(
            r#"{{"hook":"support_agent::policy::{hook}","decision":"{decision}","duration_us":0}}"#
        )
    };
    let lookup_runs = format!(r#""hooks":[{}]"#, r("own_records_only", "allow"));
    let refund_runs = format!(
        r#""hooks":[{},{},{},{}]"#,
        r("premium_only", "allow"),
        r("own_records_only", "allow"),
        r("large_refund_needs_approval", "ask"),
        r("weekly_refund_limit", "allow")
    );
    let c06 = r#""ts":"2026-11-25T09:30:00Z","session_id":"sess_approve_06","user_id":"u_001","tier":"premium""#;
    let c07 = r#""ts":"2026-11-25T11:00:00Z","session_id":"sess_deny_07","user_id":"u_007","tier":"premium""#;
    assert_eq!(
        audit_text(dir.path()),
        [
            format!(
                r#"{{{c06},"tool_use_id":"toolu_01Hk2oZxQm7R4bVt9cYe3LsA","tool":"get_order_details","input":{{"order_id":"o_1002"}},"outcome":"ok","is_error":false,"content":"{{\"order_id\":\"o_1002\",\"user_id\":\"u_001\",\"amount_cents\":45000,\"refunded_cents\":0}}","duration_us":0,{lookup_runs},"prev":"…"}}"#
            ),
            format!(
                r#"{{{c06},"tool_use_id":"toolu_01Jm4pAyRn8S5cWu0dZf4MtB","tool":"issue_refund","input":{{"order_id":"o_1002","amount_cents":30000}},"outcome":"awaiting_approval","is_error":false,"content":"","duration_us":0,{refund_runs},{asked},"final":false,"prev":"…"}}"#
            ),
            format!(
                r#"{{{c06},"tool_use_id":"toolu_01Jm4pAyRn8S5cWu0dZf4MtB","tool":"issue_refund","input":{{"order_id":"o_1002","amount_cents":30000}},"outcome":"ok","is_error":false,"content":"{{\"refund_id\":\"re_0001\",\"order_id\":\"o_1002\",\"amount_cents\":30000,\"refunded_total_cents\":30000,\"status\":\"issued\"}}","duration_us":0,{refund_runs},{asked},"approved_by":"lead@shop.example","prev":"…"}}"#
            ),
            format!(
                r#"{{{c07},"tool_use_id":"toolu_01Kn5qBzSo9T6dXv1eAg5NuC","tool":"get_order_details","input":{{"order_id":"o_3002"}},"outcome":"ok","is_error":false,"content":"{{\"order_id\":\"o_3002\",\"user_id\":\"u_007\",\"amount_cents\":30000,\"refunded_cents\":0}}","duration_us":0,{lookup_runs},"prev":"…"}}"#
            ),
            format!(
                r#"{{{c07},"tool_use_id":"toolu_01Lo6rCaTp0U7eYw2fBh6OvD","tool":"issue_refund","input":{{"order_id":"o_3002","amount_cents":30000}},"outcome":"awaiting_approval","is_error":false,"content":"","duration_us":0,{refund_runs},{asked},"final":false,"prev":"…"}}"#
            ),
            format!(
                r#"{{{c07},"tool_use_id":"toolu_01Lo6rCaTp0U7eYw2fBh6OvD","tool":"issue_refund","input":{{"order_id":"o_3002","amount_cents":30000}},"outcome":"blocked","is_error":true,"content":"BLOCKED: a person declined this call: the items have not been returned yet; send the customer a return label first.","duration_us":0,"detail":"a person declined the call (asked by `support_agent::policy::large_refund_needs_approval`: {APPROVAL_HOOK_REASON_30000})",{asked},"denied_by":"lead@shop.example","prev":"…"}}"#
            ),
        ]
    );
    // The summaries count final lines only: two calls each.
    let summaries = json_lines(&dir.path().join("session_summaries.jsonl"));
    assert_eq!(
        summaries
            .iter()
            .map(|s| (s["calls"].clone(), s["outcomes"].clone()))
            .collect::<Vec<_>>(),
        [
            (json!(2), json!({"ok": 2})),
            (json!(2), json!({"ok": 1, "blocked": 1}))
        ]
    );
    // Nothing is left pending.
    assert!(!dir.path().join("pending").exists());
}

/// The pending turn a replay of `08_large_refund_paused.json` writes, as JSON.
fn paused_08_pending() -> Value {
    let fingerprint = Agent::build(Specialist::Refunds, None)
        .unwrap()
        .dispatcher
        .fingerprint();
    json!({
        "format": 2, "turn_format": "anthropic_messages",
        "turn_id": "msg_01Be8qNh1CgXrZ5wPu2lTdEe", "turn": "msg_01Be8qNh1CgXrZ5wPu2lTdEe",
        "session_id": "sess_paused_08", "user_id": "u_001",
        "fingerprint": fingerprint, "created_at": "2026-12-01T14:00:00Z",
        "pending_ttl_ms": 86_400_000,
        "blocks": [
            {"state": "answered", "result": {
                "type": "tool_result", "tool_use_id": "toolu_01Mp7sDbUq1V8fZx3gCi7PwE",
                "content": "{\"order_id\":\"o_1002\",\"user_id\":\"u_001\",\"amount_cents\":45000,\"refunded_cents\":0}"}},
            {"state": "awaiting_approval", "tool_use_id": "toolu_01Nq8tEcVr2W9gAy4hDj8QxF",
             "tool": "issue_refund",
             "input": {"order_id": "o_1002", "amount_cents": 25000},
             "effective_input": {"order_id": "o_1002", "amount_cents": 25000},
             "input_digest": support::sha256_hex(br#"{"order_id":"o_1002","amount_cents":25000}"#),
             "asked_by": [{"hook": hook("large_refund_needs_approval"),
                           "reason": "a refund of 25000 cents is above 20000 cents and needs a person's approval"}]},
        ]
    })
}

#[test]
fn a_paused_turn_is_written_then_resumed_by_a_later_run_with_approve_or_deny() {
    for deny in [false, true] {
        let dir = TempDir::new("paused");
        let (code, _, err) = run(&[
            &os("--transcript"),
            &os(fixture("08_large_refund_paused.json")),
            &os("--out-dir"),
            &os(dir.path()),
        ]);
        assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
        let file = dir
            .path()
            .join("pending/sess_paused_08/msg_01Be8qNh1CgXrZ5wPu2lTdEe.json");
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written, paused_08_pending());

        let id = "toolu_01Nq8tEcVr2W9gAy4hDj8QxF";
        let decision: Vec<OsString> = if deny {
            [
                "--deny",
                id,
                "--reason",
                "refund the 250 as store credit instead.",
            ]
            .map(os)
            .to_vec()
        } else {
            ["--approve", id, "--by", "lead@shop.example"]
                .map(os)
                .to_vec()
        };
        let mut args = vec![os("--resume"), os(&file), os("--out-dir"), os(dir.path())];
        args.extend(decision);
        let (code, out, err) = run(&args.iter().collect::<Vec<_>>());
        assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
        let path = hook("large_refund_needs_approval");
        let line = if deny {
            format!(
                r#"   {id}  issue_refund {{"order_id":"o_1002","amount_cents":25000}} | asked by {path}, denied by operator, blocked | BLOCKED: a person declined this call: refund the 250 as store credit instead."#
            )
        } else {
            format!(
                r#"   {id}  issue_refund {{"order_id":"o_1002","amount_cents":25000}} | asked by {path}, approved by lead@shop.example, allowed, ok | {{"refund_id":"re_0001","order_id":"o_1002","amount_cents":25000,"refunded_total_cents":25000,"status":"issued"…"#
            )
        };
        let summary = if deny {
            "calls 1; outcomes blocked 1; tools issue_refund 1; observer errors 0"
        } else {
            "calls 1; outcomes ok 1; tools issue_refund 1; observer errors 0"
        };
        assert_eq!(
            out,
            format!(
                "== {}\n   session sess_paused_08, user u_001 (premium), specialist refunds\n{line}\n   summary: {summary}\n",
                file.display()
            )
        );
        // Answered: the file is gone, and the final audit line says who decided.
        assert!(!file.exists());
        let last = json_lines(&dir.path().join("audit_log.jsonl"))
            .pop()
            .unwrap();
        assert_eq!(last["tool_use_id"], id);
        assert_eq!(last["outcome"], if deny { "blocked" } else { "ok" });
        assert_eq!(
            (
                last.get("approved_by").cloned(),
                last.get("denied_by").cloned()
            ),
            if deny {
                (None, Some(json!("operator")))
            } else {
                (Some(json!("lead@shop.example")), None)
            }
        );
        assert_eq!(last.get("final"), None);

        // Resuming again finds no file.
        let (code, _, err) = run(&args.iter().collect::<Vec<_>>());
        assert_eq!(code, exit::EXIT_BAD_INPUT);
        assert!(err.starts_with(&format!("error: {}: cannot be read: ", file.display())));
    }
}

#[test]
fn a_worker_resumes_the_turns_people_decided_in_the_inbox_of_its_store_once() {
    use toolgate::approval::inbox::{
        Action, Choice, DecisionRequest, Identity, Inbox, MemoryDecisionLog, Policy, Query,
    };
    use toolgate::store::sqlite::SqliteStore;
    let dir = TempDir::new("worker");
    let (code, _, err) = run(&[
        &os("--transcript"),
        &os(fixture("08_large_refund_paused.json")),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let worker = [
        os("--worker"),
        os("--once"),
        os("--out-dir"),
        os(dir.path()),
    ];
    let worker: Vec<&OsString> = worker.iter().collect();
    // Nothing is ready while the refund waits for a person.
    assert_eq!(run(&worker), (exit::EXIT_OK, String::new(), String::new()));
    let store = Arc::new(SqliteStore::open(dir.join("state.sqlite")).unwrap());
    let inbox = Inbox::builder(store)
        .policy(Policy::new().allow("lead@shop.example", &[Action::Approve], &["issue_refund"]))
        .decision_log(Arc::new(MemoryDecisionLog::new()))
        .build()
        .unwrap();
    let call = toolgate::block_on(inbox.list(&Query::waiting()))
        .unwrap()
        .calls
        .remove(0);
    assert_eq!(
        (
            call.session_id.as_str(),
            call.name.as_str(),
            call.summary.as_str()
        ),
        (
            "sess_paused_08",
            "issue_refund",
            r#"order_id="o_1002", amount_cents=25000"#
        ),
        "the paused refund is in the inbox of the agent's store"
    );
    let request = DecisionRequest::new(
        &call.session_id,
        &call.turn_id,
        &call.tool_use_id,
        &call.input_digest,
        Choice::Approve,
    );
    toolgate::block_on(inbox.decide(&Identity::new("lead@shop.example"), request)).unwrap();
    let (code, out, err) = run(&worker);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let (id, path) = (
        "toolu_01Nq8tEcVr2W9gAy4hDj8QxF",
        hook("large_refund_needs_approval"),
    );
    assert_eq!(
        out,
        format!(
            "== resumed turn msg_01Be8qNh1CgXrZ5wPu2lTdEe of session sess_paused_08\n   user \
             u_001 (premium), specialist refunds\n   {id}  issue_refund \
             {{\"order_id\":\"o_1002\",\"amount_cents\":25000}} | asked by {path}, approved by \
             lead@shop.example, allowed, ok | {{\"refund_id\":\"re_0001\",\"order_id\":\"o_1002\",\
             \"amount_cents\":25000,\"refunded_total_cents\":25000,\"status\":\"issued\"…\n   \
             summary: calls 1; outcomes ok 1; tools issue_refund 1; observer errors 0\n"
        )
    );
    assert_eq!(refunds_of(dir.path(), id), 1);
    // Resumed once: a second worker finds nothing.
    assert_eq!(run(&worker), (exit::EXIT_OK, String::new(), String::new()));
    assert_eq!(refunds_of(dir.path(), id), 1);
    let memory = [os("--worker"), os("--store"), os("memory")];
    let (code, _, err) = run(&memory.iter().collect::<Vec<_>>());
    assert_eq!(code, exit::EXIT_BAD_INPUT);
    assert!(
        err.starts_with("error: --worker resumes turns kept in a store"),
        "{err}"
    );
}

/// The `ok` refund lines of an audit log for `id`.
fn refunds_of(dir: &Path, id: &str) -> usize {
    json_lines(&dir.join("audit_log.jsonl"))
        .iter()
        .filter(|l| l["tool_use_id"] == id && l["outcome"] == "ok" && l.get("replay").is_none())
        .count()
}

#[test]
fn a_copy_of_a_pending_file_resumed_again_or_a_second_run_pays_nothing_twice() {
    // The default store keeps the turn in `state.sqlite`: a resume takes it once. A copy of its
    // file (a retry after a crash, a second operator, another worker on the same folder) gets
    // the first resume's answer, and nothing runs again.
    let dir = TempDir::new("copy-resume");
    let (code, _, err) = run(&[
        &os("--transcript"),
        &os(fixture("08_large_refund_paused.json")),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let file = dir
        .path()
        .join("pending/sess_paused_08/msg_01Be8qNh1CgXrZ5wPu2lTdEe.json");
    let copy = dir.path().join("copy.json");
    std::fs::copy(&file, &copy).unwrap();
    let id = "toolu_01Nq8tEcVr2W9gAy4hDj8QxF";
    let resume = |f: &Path| {
        run(&[
            &os("--resume"),
            &os(f),
            &os("--approve"),
            &os(id),
            &os("--out-dir"),
            &os(dir.path()),
        ])
    };
    let (code, _, err) = resume(&file);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(refunds_of(dir.path(), id), 1);
    let (code, out, err) = resume(&copy);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(
        out,
        format!(
            "== {}\n   session sess_paused_08, user u_001 (premium), specialist refunds\n   \
             already resumed: this is the answer kept then; nothing ran again\n   summary: calls \
             0; outcomes none; tools none; observer errors 0\n",
            copy.display()
        )
    );
    assert!(!copy.exists());
    // A second replay of the transcript: the paused call was answered, so it is a replay now.
    let (code, _, err) = run(&[
        &os("--transcript"),
        &os(fixture("08_large_refund_paused.json")),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(refunds_of(dir.path(), id), 1);
    assert!(!file.exists(), "nothing paused again");

    // `--store memory` is one process's memory: a turn it paused is not in the state file, and
    // resuming it there says how.
    let memory = TempDir::new("memory-resume");
    let (code, _, _) = run(&[
        &os("--transcript"),
        &os(fixture("08_large_refund_paused.json")),
        &os("--out-dir"),
        &os(memory.path()),
        &os("--store"),
        &os("memory"),
    ]);
    assert_eq!(code, exit::EXIT_OK);
    assert!(!memory.path().join("state.sqlite").exists());
    let paused = memory
        .path()
        .join("pending/sess_paused_08/msg_01Be8qNh1CgXrZ5wPu2lTdEe.json");
    let (code, _, err) = run(&[
        &os("--resume"),
        &os(&paused),
        &os("--approve"),
        &os(id),
        &os("--out-dir"),
        &os(memory.path()),
    ]);
    assert_eq!(
        (code, err),
        (
            exit::EXIT_BAD_INPUT,
            format!(
                "error: {}: this turn is not kept in {} (a run with --store memory paused it: \
                 resume it with --store memory)\n",
                paused.display(),
                memory.path().join("state.sqlite").display()
            )
        )
    );
    let (code, _, err) = run(&[
        &os("--resume"),
        &os(&paused),
        &os("--approve"),
        &os(id),
        &os("--out-dir"),
        &os(memory.path()),
        &os("--store"),
        &os("memory"),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(refunds_of(memory.path(), id), 1);
}

#[test]
fn an_expired_pending_turn_is_answered_blocked_and_bad_resumes_are_refused() {
    let dir = TempDir::new("expired");
    let (code, _, _) = run(&[
        &os("--transcript"),
        &os(fixture("09_large_refund_expired.json")),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    assert_eq!(code, exit::EXIT_OK);
    let file = dir
        .path()
        .join("pending/sess_expired_09/msg_01Cf9rOi2DhYsA6xQv3mUeFf.json");
    let id = "toolu_01Or9uFdWs3X0hBz5iEk9RyG";
    let resume = |more: &[&str]| {
        let mut args = vec![os("--resume"), os(&file), os("--out-dir"), os(dir.path())];
        args.extend(more.iter().map(|a| os(*a)));
        run(&args.iter().collect::<Vec<_>>())
    };
    // A decision for an id that is not waiting: refused, nothing run, the file kept.
    assert_eq!(
        resume(&["--approve", "toolu_nope"]),
        (
            exit::EXIT_BAD_INPUT,
            String::new(),
            format!(
                "error: {}: tool_use \"toolu_nope\" is not waiting for approval in this pending \
                 turn\n",
                file.display()
            )
        )
    );
    // Bad arguments.
    for (args, message) in [
        (
            vec!["--resume", "f.json"],
            "--resume needs --approve ID or --deny ID",
        ),
        (
            vec!["--resume", "f.json", "--deny", "x"],
            "--deny ID needs --reason TEXT",
        ),
        (
            vec!["--resume", "f.json", "--approve", "x", "--deny", "y"],
            "--approve and --deny exclude each other",
        ),
        (
            vec!["--resume", "f.json", "--approve", "x", "--now", "tomorrow"],
            "--now tomorrow: expected an RFC 3339 instant like 2026-11-25T10:15:00Z",
        ),
        (
            vec!["--approve", "x"],
            "--approve, --deny, --reason, --by and --now go with --resume",
        ),
    ] {
        let args: Vec<OsString> = args.into_iter().map(os).collect();
        assert_eq!(
            run(&args.iter().collect::<Vec<_>>()),
            (
                exit::EXIT_BAD_INPUT,
                String::new(),
                format!("error: {message} (see --help)\n")
            )
        );
    }
    // More than 24 hours after it paused: answered blocked, whatever the decision.
    let (code, out, err) = resume(&["--approve", id, "--now", "2026-12-03T16:00:01Z", "--json"]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let text = "BLOCKED: this call waited for a person's approval longer than 86400 s and \
                expired; it was not done. Ask the user whether to try it again.";
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": true}
        ]})
    );
    let last = audit_text(dir.path()).pop().unwrap();
    assert_eq!(
        last,
        format!(
            r#"{{"ts":"2026-12-03T16:00:01Z","session_id":"sess_expired_09","user_id":"u_007","tier":"premium","tool_use_id":"{id}","tool":"issue_refund","input":{{"order_id":"o_3001","amount_cents":45000}},"outcome":"blocked","is_error":true,"content":"{text}","duration_us":0,"blocked_by":"support_agent::policy::large_refund_needs_approval","detail":"the pending turn expired: it waited longer than its time to live of 86400 s (asked by `support_agent::policy::large_refund_needs_approval`: a refund of 45000 cents is above 20000 cents and needs a person's approval)","asked_by":[{{"hook":"support_agent::policy::large_refund_needs_approval","reason":"a refund of 45000 cents is above 20000 cents and needs a person's approval"}}],"prev":"…"}}"#
        )
    );
    assert!(!file.exists());
}

// ---------------------------------------------------------------- what-if replay

#[test]
fn what_if_a_lower_weekly_limit_flips_exactly_the_refunds_past_it() {
    // Record the bundled replays, as a deployment's log would hold them.
    let dir = TempDir::new("what-if");
    let (code, _, err) = run(&[&os("--out-dir"), &os(dir.path())]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let log = dir.path().join("audit_log.jsonl");

    // Today's rules decide every recorded call as it was decided.
    let (code, out, err) = run(&[&os("--what-if"), &os(&log)]);
    assert_eq!(
        (code, out, err),
        (
            exit::EXIT_OK,
            format!(
                "what-if over {}: today's rules, unchanged\n\
                 25 calls replayed, 4 skipped; 0 flips, 0 undecidable\n",
                log.display()
            ),
            String::new()
        )
    );

    // A weekly limit of 30000 cents: u_007's refunds of 18000 and 9500 stay under it; the 6000
    // after them (33500 in the week, the ledger rebuilt from the log's own refund lines) would
    // have been blocked; the 20000 after that was blocked by the same rule already. u_001's
    // 30000 that a person approved (transcript 06) comes after its 2599 of the same week
    // (32599): blocked too, before anyone would be asked.
    let (code, out, err) = run(&[
        &os("--what-if"),
        &os(&log),
        &os("--weekly-refund-limit"),
        &os("30000"),
    ]);
    assert_eq!(
        (code, out, err),
        (
            exit::EXIT_OK,
            format!(
                "what-if over {}: weekly refund limit 30000 cents (today 50000)\n\
                 25 calls replayed, 4 skipped; 2 flips, 0 undecidable\n\
                 line 18: 2026-11-25T09:30:00Z sess_approve_06 toolu_01Jm4pAyRn8S5cWu0dZf4MtB \
                 issue_refund {{\"order_id\":\"o_1002\",\"amount_cents\":30000}}: allowed → \
                 blocked (ok → blocked), by {}\n\
                 line 28: 2026-11-27T14:00:00Z sess_weekly_06 toolu_01Tq5YhWm8VrK3nLsZ6cPg9B \
                 issue_refund {{\"order_id\":\"o_3001\",\"amount_cents\":6000}}: allowed → \
                 blocked (ok → blocked), by {}\n",
                log.display(),
                hook("weekly_refund_limit"),
                hook("weekly_refund_limit")
            ),
            String::new()
        )
    );

    // 20000 cents: u_001's approved 30000 (line 18) crosses it alone; so does u_007's 30000 that
    // a person declined (line 21: blocked then by the approval rule, now by the weekly limit);
    // u_007's second refund of the week already crosses it (18000 + 9500), and so does the
    // third.
    let found = support_agent::what_if::replay_file(
        &log,
        Specialist::Refunds,
        support_agent::what_if::RuleChanges {
            weekly_refund_limit: Some(20_000),
        },
    )
    .unwrap();
    let flipped: Vec<(usize, &str)> = found
        .changed
        .iter()
        .map(|(line, record, _)| (*line, record.tool_use_id.as_str()))
        .collect();
    assert_eq!(
        flipped,
        [
            (18, "toolu_01Jm4pAyRn8S5cWu0dZf4MtB"),
            (21, "toolu_01Lo6rCaTp0U7eYw2fBh6OvD"),
            (27, "toolu_01Rw2ZkNt6HsM9qPbV4xJf7C"),
            (28, "toolu_01Tq5YhWm8VrK3nLsZ6cPg9B")
        ]
    );
}

#[test]
fn what_if_reports_a_file_that_is_not_an_audit_log() {
    let dir = TempDir::new("what-if-bad");
    let file = dir.path().join("audit_log.jsonl");
    std::fs::write(&file, "{\"ts\":\"2026-11-24T10:15:00Z\"}\n").unwrap();
    let (code, out, err) = run(&[&os("--what-if"), &os(&file)]);
    assert_eq!(
        (code, out.as_str(), err),
        (
            exit::EXIT_BAD_INPUT,
            "",
            format!(
                "error: --what-if: `{}` line 1: not an audit line: missing field `session_id` at \
                 line 1 column 29\n",
                file.display()
            )
        )
    );
    let missing = dir.path().join("nothing.jsonl");
    let (code, _, err) = run(&[&os("--what-if"), &os(&missing)]);
    assert_eq!(code, exit::EXIT_FAILED);
    assert_eq!(
        err,
        format!(
            "error: --what-if: cannot read `{}`: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}

#[test]
fn otel_replays_as_usual_while_the_spans_go_to_the_stdout_exporter() {
    // The spans themselves are pinned in tests/runtime/otel_spans.rs (in-memory exporter); here
    // the flag leaves the replay, its output and its audit lines as they are.
    let dir = TempDir::new("otel");
    let plain = TempDir::new("otel-plain");
    let transcript = fixture("03_parallel_batch.json");
    let (code, out, err) = run(&[
        &os("--otel"),
        &os("--transcript"),
        &os(&transcript),
        &os("--out-dir"),
        &os(dir.path()),
    ]);
    let (_, expected, _) = run(&[
        &os("--transcript"),
        &os(&transcript),
        &os("--out-dir"),
        &os(plain.path()),
    ]);
    assert_eq!(
        (code, hashes_hidden(&out), err),
        (
            exit::EXIT_OK,
            hashes_hidden(&expected.replace(
                &plain.path().display().to_string(),
                &dir.path().display().to_string()
            )),
            String::new()
        )
    );
    assert_eq!(json_lines(&dir.path().join("audit_log.jsonl")).len(), 3);
}

/// A trail edited between two runs in one folder: the second run appends to it as usual, and its
/// check, the `toolgate` command's, names the edited line and fails the run (exit 1), while the
/// page is not written over a trail that does not verify.
#[test]
fn a_trail_edited_between_runs_fails_the_next_run_naming_the_line() {
    let dir = TempDir::new("edited-trail");
    let transcript = fixture("03_parallel_batch.json");
    let args = [
        &os("--transcript"),
        &os(&transcript),
        &os("--out-dir"),
        &os(dir.path()),
    ];
    let (code, _, _) = run(&args);
    assert_eq!(code, exit::EXIT_OK);
    let file = dir.path().join("audit_log.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = text.replacen("\"u_999\"", "\"u_001\"", 1);
    assert_ne!(edited, text, "the blocked lookup's input was edited");
    std::fs::write(&file, edited).unwrap();
    std::fs::remove_file(dir.path().join("report.html")).unwrap();
    let (code, out, _) = run(&args);
    assert_eq!(code, exit::EXIT_FAILED);
    let shown = dir.path().display();
    assert!(
        out.ends_with(&format!(
            "$ toolgate audit verify {shown}\n\
             audit_log.jsonl: broken: line 2 does not follow line 1: line 1 was edited, or lines \
             were deleted between them in {shown}/audit_log.jsonl\n\
             session_summaries.jsonl: ok, 2 lines, last hash {}\n",
            support::chained_lines(&dir.path().join("session_summaries.jsonl"), support::ZEROS).1
        )),
        "{out}"
    );
    assert!(
        !dir.path().join("report.html").exists(),
        "no page for a broken trail"
    );
}

/// `out` with each `last hash HEX` the trail's check prints as `last hash (…)`: two runs'
/// lines differ in their times, so their hashes do, and nothing else of the output may.
fn hashes_hidden(out: &str) -> String {
    out.lines()
        .map(|line| match line.split_once(", last hash ") {
            Some((head, hash)) if hash.len() == 64 => format!("{head}, last hash (…)\n"),
            _ => format!("{line}\n"),
        })
        .collect()
}

// ---------------------------------------------------------------- the report

/// Every `data-k="KEY">VALUE<` of a page, in order.
fn page_figures(page: &str) -> Vec<(String, String)> {
    page.split("data-k=\"")
        .skip(1)
        .map(|rest| {
            let (key, rest) = rest.split_once('"').unwrap();
            let value = rest.split_once('>').unwrap().1.split_once('<').unwrap().0;
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

#[test]
fn the_report_page_shows_the_logs_own_numbers() {
    // The bundled replays, then transcript 03 on an agent whose extra policy cannot decide: a
    // halt with its detail.
    let dir = TempDir::new("report");
    let (code, _, err) = run(&[&os("--out-dir"), &os(dir.path())]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let audit = AuditLog::open(dir.path()).unwrap();
    let broken = toolgate::dispatch::PreHookDef::sync("test::broken_policy", 5, |_env, _call| {
        Err(toolgate::dispatch::HookError::new(
            "policy store unreachable",
        ))
    });
    let agent =
        Agent::build_with(Specialist::Refunds, Some(&audit), |b| b.pre_hook(broken)).unwrap();
    let t = transcript::load(&fixture("03_parallel_batch.json")).unwrap();
    agent::replay_on(&agent, &t);
    drop((agent, audit));

    // The page the `toolgate` command draws from the agent's folder, its refunds counted per
    // customer.
    let page_path = dir.path().join("report.html");
    let (code, out, err) = run_toolgate(&[
        "audit".as_ref(),
        "report".as_ref(),
        dir.path().as_os_str(),
        "-o".as_ref(),
        page_path.as_os_str(),
        "--count-tool".as_ref(),
        "issue_refund".as_ref(),
    ]);
    assert_eq!(
        (code, out, err),
        (
            0,
            format!(
                "report: {} (28 calls, chain verifies)\n",
                page_path.display()
            ),
            String::new()
        )
    );
    let page = std::fs::read_to_string(&page_path).unwrap();
    // Self-contained: no script, nothing fetched at view time.
    for absent in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(absent), "{absent}");
    }

    // The numbers, recomputed here from the log's own lines.
    // A paused call's line (`"final": false`) is left out: its final line comes at resume.
    let all = json_lines(&dir.path().join("audit_log.jsonl"));
    let lines: Vec<Value> = all
        .iter()
        .filter(|l| l.get("final") != Some(&json!(false)))
        .cloned()
        .collect();
    assert_eq!(all.len() - lines.len(), 4);
    let mut want: Vec<(String, String)> = vec![
        ("calls".into(), lines.len().to_string()),
        ("sessions".into(), "11".into()),
        ("left_out".into(), "4".into()),
        ("chain".into(), "verifies".into()),
    ];
    let count = |keep: &dyn Fn(&Value) -> bool| lines.iter().filter(|l| keep(l)).count();
    let mut outcomes: Vec<&str> = lines
        .iter()
        .map(|l| l["outcome"].as_str().unwrap())
        .collect();
    outcomes.sort();
    outcomes.dedup();
    let mut days: Vec<&str> = lines
        .iter()
        .map(|l| &l["ts"].as_str().unwrap()[..10])
        .collect();
    days.sort();
    days.dedup();
    for day in &days {
        for o in &outcomes {
            let n = count(&|l| &l["ts"].as_str().unwrap()[..10] == *day && l["outcome"] == *o);
            want.push((format!("day:{day}:{o}"), n.to_string()));
        }
    }
    for o in &outcomes {
        want.push((
            format!("outcome:{o}"),
            count(&|l| l["outcome"] == *o).to_string(),
        ));
    }
    // Rules, most denials first, then by name.
    let runs = |l: &Value| l["hooks"].as_array().cloned().unwrap_or_default();
    let mut rules: Vec<(String, usize, usize)> = Vec::new();
    for l in &lines {
        for run in runs(l) {
            let hook = run["hook"].as_str().unwrap().to_owned();
            let denied = usize::from(run["decision"] == "deny");
            match rules.iter_mut().find(|r| r.0 == hook) {
                Some(r) => {
                    r.1 += 1;
                    r.2 += denied;
                }
                None => rules.push((hook, 1, denied)),
            }
        }
        // Blocked with no hook run on the line and a hook at fault (a paused call that expired
        // at resume): a denial of that hook. A call a person declined names no hook: the
        // person's decline is no rule's denial.
        if l["outcome"] == "blocked"
            && runs(l).is_empty()
            && let Some(hook) = l["blocked_by"].as_str()
        {
            let hook = hook.to_owned();
            match rules.iter_mut().find(|r| r.0 == hook) {
                Some(r) => {
                    r.1 += 1;
                    r.2 += 1;
                }
                None => rules.push((hook, 1, 1)),
            }
        }
    }
    rules.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    for (hook, n, denied) in &rules {
        want.push((format!("rule_runs:{hook}"), n.to_string()));
        want.push((format!("rule_denials:{hook}"), denied.to_string()));
    }
    let mut tools: Vec<&str> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    tools.sort();
    tools.dedup();
    for tool in &tools {
        want.push((
            format!("tool_calls:{tool}"),
            count(&|l| l["tool"] == *tool).to_string(),
        ));
        want.push((
            format!("tool_blocked:{tool}"),
            count(&|l| l["tool"] == *tool && l["outcome"] == "blocked").to_string(),
        ));
    }
    want.push((
        "halts".into(),
        count(&|l| l["outcome"] == "hook_failed").to_string(),
    ));
    want.push(("tokens".into(), "none recorded: the host writes no ".into()));
    let shown: Vec<(String, String)> = page_figures(&page)
        .into_iter()
        .filter(|(k, _)| {
            // The families recomputed here; the rest (people, customers, latency) are checked
            // key by key against the log by the `toolgate` command's report tests.
            let family = k.split(':').next().unwrap_or_default();
            [
                "calls",
                "sessions",
                "left_out",
                "chain",
                "day",
                "outcome",
                "rule_runs",
                "rule_denials",
                "tool_calls",
                "tool_blocked",
                "halts",
                "tokens",
            ]
            .contains(&family)
        })
        .collect();
    // The page lists rules most denials first, then by name (as recomputed above).
    assert_eq!(shown, want);
    // The halt's row: when, session, tool, outcome, hook and the operator's detail.
    assert!(page.contains(
        "<tr><td data-label=\"when (UTC)\">2026-11-25<wbr>T09:00:00Z</td>\
         <td data-label=\"session\">sess_parallel_03</td><td data-label=\"tool\">lookup_user</td>\
         <td data-label=\"outcome\">hook_failed</td>\
         <td data-label=\"hook\"><code>test::broken_policy</code></td>\
         <td data-label=\"detail\">policy store unreachable</td></tr>"
    ));
}

/// The paused transcript of `08_large_refund_paused.json`, in session `session_id`, with its
/// message id and tool_use ids given `suffix` (another turn of the same conversation when it is
/// not empty).
fn paused_in(session_id: &str, suffix: &str) -> String {
    let text = std::fs::read_to_string(fixture("08_large_refund_paused.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["context"]["session_id"] = json!(session_id);
    let mut text = v.to_string();
    for id in [
        "msg_01Be8qNh1CgXrZ5wPu2lTdEe",
        "toolu_01Mp7sDbUq1V8fZx3gCi7PwE",
        "toolu_01Nq8tEcVr2W9gAy4hDj8QxF",
    ] {
        text = text.replace(id, &format!("{id}{suffix}"));
    }
    text
}

/// Replays `text` as a transcript into `out_dir`; the exit code.
fn replay_text(dir: &Path, name: &str, text: &str, out_dir: &Path) -> u8 {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let (code, _, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--out-dir"),
        &os(out_dir),
    ]);
    assert_eq!(err, "");
    code
}

#[test]
fn no_paused_turn_overwrites_another() {
    let dir = TempDir::new("no-overwrite");
    let out = dir.path().join("out");
    // Two sessions whose ids an escaping to `_` would merge: two files, each its own turn.
    assert_eq!(
        replay_text(dir.path(), "a.json", &paused_in("shop/a", ""), &out),
        exit::EXIT_OK
    );
    assert_eq!(
        replay_text(dir.path(), "b.json", &paused_in("shop_a", ""), &out),
        exit::EXIT_OK
    );
    let turn = "msg_01Be8qNh1CgXrZ5wPu2lTdEe.json";
    let read = |p: PathBuf| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        )
        .unwrap()
    };
    let slash = read(out.join("pending/shop%2Fa").join(turn));
    let underscore = read(out.join("pending/shop_a").join(turn));
    assert_eq!(slash["session_id"], "shop/a");
    assert_eq!(underscore["session_id"], "shop_a");
    // A second turn paused in one session before the first was resumed: both kept.
    assert_eq!(
        replay_text(dir.path(), "c.json", &paused_in("shop_a", "_2"), &out),
        exit::EXIT_OK
    );
    let second = read(out.join("pending/shop_a/msg_01Be8qNh1CgXrZ5wPu2lTdEe_2.json"));
    assert_eq!(second["turn_id"], "msg_01Be8qNh1CgXrZ5wPu2lTdEe_2");
    assert_eq!(read(out.join("pending/shop_a").join(turn)), underscore);
    // The same turn paused again (a second run of the same message): its file is kept as it
    // was first written, so the time it first paused (its expiry) does not move.
    let later = paused_in("shop_a", "").replace("2026-12-01T14:00:00Z", "2026-12-02T09:00:00Z");
    assert_eq!(
        replay_text(dir.path(), "d.json", &later, &out),
        exit::EXIT_OK
    );
    assert_eq!(read(out.join("pending/shop_a").join(turn)), underscore);
    assert_eq!(underscore["created_at"], "2026-12-01T14:00:00Z");
    let mut files: Vec<String> = std::fs::read_dir(out.join("pending"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| {
            let p = f.unwrap().path();
            let session = p
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            format!("{session}/{}", p.file_name().unwrap().to_string_lossy())
        })
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "shop%2Fa/msg_01Be8qNh1CgXrZ5wPu2lTdEe.json",
            "shop_a/msg_01Be8qNh1CgXrZ5wPu2lTdEe.json",
            "shop_a/msg_01Be8qNh1CgXrZ5wPu2lTdEe_2.json",
        ]
    );
}

#[test]
fn a_pending_file_name_is_one_to_one() {
    use support_agent::approval::file_name;
    let ids = [
        "shop/a",
        "shop_a",
        "shop%2Fa",
        "shop%a",
        "",
        "%",
        "..",
        ".",
        "a.b",
        "a-b",
        "A",
        "a",
        "é",
        "\u{0}",
        "~sha256-x",
        "sess_1",
    ];
    let names: Vec<String> = ids.iter().map(|id| file_name(id)).collect();
    assert_eq!(
        names,
        [
            "shop%2Fa",
            "shop_a",
            "shop%252Fa",
            "shop%25a",
            "%",
            "%25",
            "%2E%2E",
            "%2E",
            "a%2Eb",
            "a-b",
            "A",
            "a",
            "%C3%A9",
            "%00",
            "%7Esha256-x",
            "sess_1",
        ]
    );
    let long = "x/".repeat(50);
    let hashed = file_name(&long);
    assert_eq!(hashed.len(), "~sha256-".len() + 64);
    assert!(hashed.starts_with("~sha256-"));
    assert_ne!(hashed, file_name(&"x/".repeat(51)));
    // Every name is one path segment of the allowed bytes.
    for name in names.iter().chain([&hashed]) {
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-%~".contains(&b)),
            "{name}"
        );
    }
}

/// The one pending turn a run wrote for `session` under `out_dir`: `pending/<session>/<turn>.json`.
pub(crate) fn pending_file(out_dir: &Path, session: &str) -> PathBuf {
    let folder = out_dir
        .join("pending")
        .join(support_agent::approval::file_name(session));
    let files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

#[test]
fn the_sqlite_ledger_is_one_per_file_its_totals_the_customers_and_the_orders() {
    use support_agent::ledger::{Books, EnterError, RefundError};
    let dir = TempDir::new("ledger-sqlite");
    let file = dir.path().join("state.sqlite");
    let order = support_agent::seed::order("o_3001").unwrap();
    let other_order = support_agent::seed::order("o_3002").unwrap();
    let week = IsoWeek {
        year: 2026,
        week: 48,
    };
    // Two connections to one file are one ledger.
    let (one, two) = (Books::sqlite(&file).unwrap(), Books::sqlite(&file).unwrap());
    let a = one.ledger("shop");
    let b = two.ledger("shop");
    let elsewhere = two.ledger("another world");
    let first = toolgate::block_on(a.record_refund(order, 9_500, week, u64::MAX)).unwrap();
    assert_eq!(
        (first.refund.refund_id.as_str(), first.order_refunded_cents),
        ("re_0001", 9_500)
    );
    // Another connection sees it; another world does not.
    assert_eq!(
        toolgate::block_on(b.refunded_for_order("o_3001")),
        Ok(9_500)
    );
    assert_eq!(
        toolgate::block_on(b.refunded_in_week(order.owner, week)),
        Ok(9_500)
    );
    assert_eq!(
        toolgate::block_on(elsewhere.refunded_for_order("o_3001")),
        Ok(0)
    );
    let left = order.amount_cents - 9_500;
    match toolgate::block_on(b.record_refund(order, left + 1, week, u64::MAX)) {
        Err(RefundError::Refused(r)) => assert_eq!(r.refunded_cents, 9_500),
        other => panic!("{other:?}"),
    }
    // The weekly limit is the customer's: another order of theirs counts in it (9500 + 501 is
    // over a limit of 10000), and is checked again where the refund is recorded (a rule that
    // read the ledger before another worker's refund landed cannot let one past it).
    match toolgate::block_on(b.record_refund(other_order, 501, week, 10_000)) {
        Err(RefundError::OverWeeklyLimit(over)) => assert_eq!(
            over.to_string(),
            "Refund refused: another refund to this customer was recorded meanwhile, and 501 \
             cents would bring their refunds in ISO week 2026-W48 to 10001 cents, above the \
             weekly limit of 10000 cents. At most 500 cents can be refunded now; tell the \
             customer the rest will be reviewed by a human agent."
        ),
        other => panic!("{other:?}"),
    }
    // 500 cents fit; the other order's total is its own.
    let second = toolgate::block_on(b.record_refund(other_order, 500, week, 10_000)).unwrap();
    assert_eq!(
        (
            second.refund.refund_id.as_str(),
            second.order_refunded_cents
        ),
        ("re_0002", 500)
    );
    // Another week of the same owner is not counted; a refund in another world is numbered
    // in the same store.
    let next = IsoWeek {
        year: 2026,
        week: 49,
    };
    let third = toolgate::block_on(b.record_refund(order, 501, next, 501)).unwrap();
    assert_eq!(third.refund.refund_id, "re_0003");
    let apart = toolgate::block_on(elsewhere.record_refund(order, 700, week, 700)).unwrap();
    assert_eq!(
        (apart.refund.refund_id.as_str(), apart.order_refunded_cents),
        ("re_0004", 700)
    );
    // Eight connections at once, each refunding all the order has left: the check and the
    // insert are one transaction, so exactly one passes, and it gets the next id.
    let left = left - 501;
    let won: Vec<Option<String>> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..8)
            .map(|_| {
                let file = file.clone();
                s.spawn(move || {
                    let ledger = Books::sqlite(&file).unwrap().ledger("shop");
                    toolgate::block_on(ledger.record_refund(order, left, week, u64::MAX))
                        .ok()
                        .map(|r| r.refund.refund_id)
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(
        won.into_iter().flatten().collect::<Vec<_>>(),
        ["re_0005".to_owned()]
    );
    let book = toolgate::block_on(a.refunds_of("u_007")).unwrap();
    assert_eq!(
        book.iter()
            .map(|r| (r.refund_id.as_str(), r.order_id.as_str(), r.amount_cents))
            .collect::<Vec<_>>(),
        [
            ("re_0001", "o_3001", 9_500),
            ("re_0002", "o_3002", 500),
            ("re_0003", "o_3001", 501),
            ("re_0005", "o_3001", left),
        ]
    );
    assert_eq!(toolgate::block_on(a.refunds_of("u_001")), Ok(Vec::new()));
    // A session stays in the world it entered first, whichever connection asks.
    assert_eq!(one.enter("sess_a", "shop"), Ok(()));
    assert_eq!(two.enter("sess_a", "shop"), Ok(()));
    match two.enter("sess_a", "demo") {
        Err(EnterError::OtherWorld(e)) => assert_eq!(
            e.to_string(),
            "session sess_a was replayed in world `shop` before, not `demo`: a conversation's \
             refunds stay in one world; give the transcript another session_id, or `\"world\": \
             \"shop\"` in its context"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(two.world_of("sess_a"), Ok(Some("shop".to_owned())));
    assert_eq!(one.world_of("sess_b"), Ok(None));
    // A file that cannot be a database: the ledger's error, not a panic.
    let not_a_db = dir.path().join("not.sqlite");
    std::fs::write(&not_a_db, "this is not a database, it is text").unwrap();
    let err = Books::sqlite(&not_a_db).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the refund ledger failed: file is not a database"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn a_refund_the_postgres_ledger_refuses_leaves_the_customer_unlocked() {
    // The check runs inside the transaction that holds the customer's advisory lock; a refusal
    // rolls it back at once (a dropped transaction only queues its ROLLBACK, and the lock would
    // stay held, every other worker paying this customer waiting, until this connection's next
    // statement).
    use support_agent::ledger::{Books, RefundError};
    let db = pg_server::database();
    let url = pg_server::server().url(&db.name, "pw");
    let ledger = Books::postgres(&url).unwrap().ledger("shop");
    let order = support_agent::seed::order("o_3001").unwrap();
    let week = IsoWeek {
        year: 2026,
        week: 48,
    };
    let sql = pg_server::Sql::connect(&db.settings);
    let free = || {
        sql.rows(
            "SELECT pg_try_advisory_xact_lock(hashtext('support_agent_ledger:' || 'shop'), \
             hashtext('u_007'))::text",
        )
    };
    let yes = vec![vec![Some("true".to_owned())]];
    match toolgate::block_on(ledger.record_refund(order, order.amount_cents + 1, week, u64::MAX)) {
        Err(RefundError::Refused(r)) => assert_eq!(r.refunded_cents, 0),
        other => panic!("{other:?}"),
    }
    assert_eq!(free(), yes);
    match toolgate::block_on(ledger.record_refund(order, 100, week, 50)) {
        Err(RefundError::OverWeeklyLimit(over)) => {
            assert_eq!((over.already_cents, over.limit_cents), (0, 50));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(free(), yes);
    let recorded = toolgate::block_on(ledger.record_refund(order, 100, week, u64::MAX)).unwrap();
    assert_eq!(
        (
            recorded.refund.refund_id.as_str(),
            recorded.refund.amount_cents,
            recorded.order_refunded_cents
        ),
        ("re_0001", 100, 100)
    );
    assert_eq!(free(), yes);
    // The customer's lock is what a refund waits for: held elsewhere, a refund of this
    // customer waits, one of another customer does not.
    let holder = pg_server::Sql::connect(&db.settings);
    holder.run("BEGIN");
    holder.run(
        "SELECT pg_advisory_xact_lock(hashtext('support_agent_ledger:' || 'shop'), \
         hashtext('u_007'))",
    );
    let other = support_agent::seed::order("o_1002").unwrap();
    let paid = toolgate::block_on(ledger.record_refund(other, 100, week, u64::MAX)).unwrap();
    assert_eq!(paid.refund.refund_id, "re_0002");
    let (done, waiting) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let r = toolgate::block_on(ledger.record_refund(order, 100, week, u64::MAX));
            done.send(r.map(|r| r.refund.refund_id)).unwrap();
        });
        // The refund's connection waits for the lock (bounded, so a broken test cannot hang).
        let waits = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
        for _ in 0..2000 {
            if sql.int(waits) == 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            sql.int(waits),
            1,
            "the refund waits for the customer's lock"
        );
        assert!(waiting.try_recv().is_err());
        holder.run("COMMIT");
        assert_eq!(
            waiting.recv_timeout(std::time::Duration::from_secs(10)),
            Ok(Ok("re_0003".to_owned()))
        );
    });
}

// ---------------------------------------------------------------- one customer, many conversations

/// The SQLite store of `out_dir`: every worker on that folder, and the rows of its ledger.
fn sqlite_rows(out_dir: &Path) -> Vec<support_agent_ledger::Row> {
    let db = rusqlite::Connection::open(out_dir.join("state.sqlite")).unwrap();
    let mut q = db
        .prepare(
            "SELECT id, world, owner, order_id, amount_cents FROM support_agent_ledger ORDER BY id",
        )
        .unwrap();
    q.query_map([], |r| {
        Ok(support_agent_ledger::Row {
            id: r.get(0)?,
            world: r.get(1)?,
            owner: r.get(2)?,
            order_id: r.get(3)?,
            cents: r.get(4)?,
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Runs `test` on a fresh `--out-dir` that every worker shares.
fn on_one_out_dir(name: &str, test: impl FnOnce(&support_agent_ledger::Store<'_>, &Path)) {
    let dir = TempDir::new(name);
    let out_dir = dir.path().join("out");
    let args = |_worker: usize| vec![os("--out-dir"), os(&out_dir)];
    let rows = || sqlite_rows(&out_dir);
    let store = support_agent_ledger::Store {
        args: &args,
        rows: &rows,
    };
    test(&store, &dir.path().join("transcripts"));
}

#[test]
fn conversations_of_one_customer_one_after_another_on_one_out_dir_share_its_totals() {
    on_one_out_dir("conversations-seq", support_agent_ledger::one_after_another);
}

#[test]
fn two_and_three_conversations_of_one_customer_at_once_on_one_out_dir_keep_its_limits() {
    for n in [2, 3] {
        on_one_out_dir(&format!("conversations-at-once-{n}"), |store, dir| {
            support_agent_ledger::all_at_once(store, dir, n);
        });
    }
}

#[test]
fn a_fleet_of_four_workers_on_one_out_dir_pays_each_customer_exactly_what_its_rules_allow() {
    on_one_out_dir("conversations-fleet", support_agent_ledger::fleet_of_four);
}

#[test]
fn conversations_in_one_run_on_the_memory_store_share_one_ledger() {
    // The memory store is one run's: every conversation of that run shares its ledger.
    let dir = TempDir::new("conversations-memory");
    let order = support_agent_ledger::order_conversations("memory", 3);
    let mut args = vec![
        os("--json"),
        os("--store"),
        os("memory"),
        os("--out-dir"),
        os(dir.path().join("out")),
    ];
    for c in &order {
        args.push(os("--transcript"));
        args.push(os(c.write(&dir.path().join("transcripts"))));
    }
    let answers = |out: &str| -> Vec<(bool, String)> {
        out.lines()
            .map(|l| {
                let m: Value = serde_json::from_str(l).unwrap();
                let block = &m["content"][0];
                (
                    block.get("is_error") == Some(&json!(true)),
                    block["content"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let (code, out, err) = run(&args.iter().collect::<Vec<_>>());
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let first = answers(&out);
    assert_eq!(
        first,
        [
            (
                false,
                r#"{"refund_id":"re_0001","order_id":"o_1002","amount_cents":16000,"refunded_total_cents":16000,"status":"issued"}"#.to_owned()
            ),
            (
                false,
                r#"{"refund_id":"re_0002","order_id":"o_1002","amount_cents":16000,"refunded_total_cents":32000,"status":"issued"}"#.to_owned()
            ),
            (
                true,
                "Refund refused: 16000 cents is more than order o_1002 has left to refund (45000 \
                 cents paid, 32000 cents already refunded, 13000 cents left). Refund at most \
                 13000 cents."
                    .to_owned()
            ),
        ]
    );
    // Nothing outlives the run: a second run starts from an empty ledger, and pays the same.
    let (code, out, err) = run(&args.iter().collect::<Vec<_>>());
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(answers(&out), first);
}

#[test]
fn the_demo_replays_the_same_whatever_else_the_store_paid_and_its_customers_rules_hold_across_it() {
    let dir = TempDir::new("demo-world");
    let out_dir = dir.path().join("out");
    // A conversation in the shared world first: u_001 is refunded 16000 on o_1002 there.
    let elsewhere = support_agent_ledger::order_conversations("elsewhere", 1);
    let file = elsewhere[0].write(&dir.path().join("transcripts"));
    let (code, _, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--out-dir"),
        &os(&out_dir),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    // The bundled transcripts declare the demo world: they replay as in a fresh folder, but
    // for the refund ids, which are the store's (the one refund before them took re_0001).
    let (code, out, err) = run(&[&os("--out-dir"), &os(&out_dir)]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    let call_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("toolu_"))
        .collect();
    let shifted: Vec<String> = readable_lines(0..29)
        .into_iter()
        .map(|l| {
            (1..=5).rev().fold(l, |l, n| {
                l.replace(&format!("\"re_000{n}\""), &format!("\"re_000{}\"", n + 1))
            })
        })
        .collect();
    assert_eq!(call_lines, shifted);
    // In the demo world 06 refunded 30000 of o_1002's 45000: approving 08's 25000 on the same
    // order (another conversation, the week after) is refused by the refund tool, with what is
    // left.
    let pending = pending_file(&out_dir, "sess_paused_08");
    let (code, out, err) = run(&[
        &os("--resume"),
        &os(&pending),
        &os("--approve"),
        &os("toolu_01Nq8tEcVr2W9gAy4hDj8QxF"),
        &os("--by"),
        &os("lead@shop.example"),
        &os("--out-dir"),
        &os(&out_dir),
        &os("--json"),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "toolu_01Mp7sDbUq1V8fZx3gCi7PwE",
            "content": r#"{"order_id":"o_1002","user_id":"u_001","amount_cents":45000,"refunded_cents":30000}"#
        }, {
            "type": "tool_result", "tool_use_id": "toolu_01Nq8tEcVr2W9gAy4hDj8QxF",
            "content": "Refund refused: 25000 cents is more than order o_1002 has left to refund \
                        (45000 cents paid, 30000 cents already refunded, 15000 cents left). Refund \
                        at most 15000 cents.",
            "is_error": true
        }]})
    );
    let rows: Vec<(String, String, i64)> = sqlite_rows(&out_dir)
        .into_iter()
        .filter(|r| r.order_id == "o_1002")
        .map(|r| (r.world, r.owner, r.cents))
        .collect();
    assert_eq!(
        rows,
        [
            ("shop".to_owned(), "u_001".to_owned(), 16_000),
            ("demo".to_owned(), "u_001".to_owned(), 30_000)
        ]
    );
    // A session stays in its world: a transcript that reuses the session id of 08 without
    // declaring the demo world is refused before it runs.
    let mut moved: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("08_large_refund_paused.json")).unwrap(),
    )
    .unwrap();
    moved["context"].as_object_mut().unwrap().remove("world");
    let file = dir.path().join("moved.json");
    std::fs::write(&file, moved.to_string()).unwrap();
    let (code, out, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--out-dir"),
        &os(&out_dir),
    ]);
    assert_eq!(
        (code, out.as_str(), err),
        (
            exit::EXIT_FAILED,
            "",
            format!(
                "error: {}: session sess_paused_08 was replayed in world `demo` before, not \
                 `shop`: a conversation's refunds stay in one world; give the transcript another \
                 session_id, or `\"world\": \"demo\"` in its context\n",
                file.display()
            )
        )
    );
    // An empty world is no world: the transcript is refused, naming the key.
    moved["context"]["world"] = json!("");
    std::fs::write(&file, moved.to_string()).unwrap();
    let (code, _, err) = run(&[
        &os("--transcript"),
        &os(&file),
        &os("--out-dir"),
        &os(&out_dir),
    ]);
    assert_eq!(
        (code, err),
        (
            exit::EXIT_BAD_INPUT,
            format!(
                "error: {}: context.world: empty (name the world, or leave `world` out for the \
                 shared one, `shop`)\n",
                file.display()
            )
        )
    );
}
