//! PreToolUse chain semantics: order, first deny wins, Allow never short-circuits, rewrites
//! re-authorized (every hook but the rewriter decides on the new input, the hooks before it
//! again; a rewrite applies once; loops and runaway rewriting halt), ties broken by path,
//! matchers and filtering.

use std::sync::{Arc, Mutex};

use crate::support;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    dispatch::{BuildProblem, PreHookDef, ToolDef},
};

/// Arguments of the test tool.
#[derive(Deserialize, JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
    /// How many results.
    limit: Option<u32>,
}

type Log = Arc<Mutex<Vec<String>>>;

fn search_tool(log: &Log) -> ToolDef {
    let log = log.clone();
    ToolDef::sync("search", "Searches the FAQ.", move |_env, args: Search| {
        log.lock()
            .unwrap()
            .push(format!("tool:{}:{:?}", args.query, args.limit));
        Ok(format!(
            "{} results for {}",
            args.limit.unwrap_or(3),
            args.query
        ))
    })
}

fn hook(log: &Log, path: &'static str, order: i64, decision: Decision) -> PreHookDef {
    let log = log.clone();
    PreHookDef::sync(path, order, move |_env, call| {
        log.lock().unwrap().push(format!("{path}:{}", call.input));
        Ok(decision.clone())
    })
}

fn run(d: &Dispatcher, input: Value) -> ToolResult {
    let s = d.session(HookContext::builder("u_1", "sess_chain").build());
    toolgate::block_on(s.call(&ToolUse::new("toolu_1", "search", input))).unwrap()
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[test]
fn the_first_deny_wins_and_later_hooks_do_not_run() {
    let log = Log::default();
    let d = Dispatcher::builder()
        .tool(search_tool(&log))
        .pre_hook(hook(&log, "app::c_last", 30, Decision::Allow))
        .pre_hook(hook(
            &log,
            "app::b_deny",
            20,
            Decision::deny("second says no."),
        ))
        .pre_hook(hook(&log, "app::a_first", 10, Decision::Allow))
        .pre_hook(hook(
            &log,
            "app::b_deny_too",
            25,
            Decision::deny("third says no."),
        ))
        .build()
        .unwrap();
    let r = run(&d, json!({"query": "refunds"}));
    assert_eq!(r, ToolResult::error("toolu_1", "BLOCKED: second says no."));
    assert_eq!(
        entries(&log),
        [
            r#"app::a_first:{"query":"refunds"}"#,
            r#"app::b_deny:{"query":"refunds"}"#
        ]
    );
}

#[test]
fn a_denial_is_blocked_reason_then_instead_with_no_trailing_space() {
    let cases = [
        (Decision::deny("not today."), "BLOCKED: not today."),
        (
            Decision::deny_instead("not today.", ""),
            "BLOCKED: not today.",
        ),
        (
            Decision::deny_instead("not today.", "Try tomorrow."),
            "BLOCKED: not today. Try tomorrow.",
        ),
    ];
    for (decision, text) in cases {
        let log = Log::default();
        let d = Dispatcher::builder()
            .tool(search_tool(&log))
            .pre_hook(hook(&log, "app::deny", 1, decision))
            .build()
            .unwrap();
        let r = run(&d, json!({"query": "refunds"}));
        assert_eq!(r, ToolResult::error("toolu_1", text));
        assert_eq!(entries(&log), [r#"app::deny:{"query":"refunds"}"#]);
    }
}

#[test]
fn allow_never_short_circuits() {
    let log = Log::default();
    let d = Dispatcher::builder()
        .tool(search_tool(&log))
        .pre_hook(hook(&log, "app::one", 1, Decision::Allow))
        .pre_hook(hook(&log, "app::two", 2, Decision::Allow))
        .pre_hook(hook(&log, "app::three", 3, Decision::Allow))
        .build()
        .unwrap();
    let r = run(&d, json!({"query": "refunds"}));
    assert_eq!(r, ToolResult::text("toolu_1", "3 results for refunds"));
    assert_eq!(
        entries(&log),
        [
            r#"app::one:{"query":"refunds"}"#,
            r#"app::two:{"query":"refunds"}"#,
            r#"app::three:{"query":"refunds"}"#,
            "tool:refunds:None"
        ]
    );
}

#[test]
fn the_hooks_before_a_rewriter_decide_again_and_an_equal_rewrite_counts_as_allow() {
    let log = Log::default();
    let dir = support::TempDir::new("chain-rewrite");
    let d = Dispatcher::builder()
        .tool(search_tool(&log))
        .pre_hook(hook(&log, "app::before", 5, Decision::Allow))
        .pre_hook(hook(
            &log,
            "app::cap_limit",
            10,
            Decision::Rewrite(json!({"query": "refunds", "limit": 5})),
        ))
        .pre_hook(hook(&log, "app::after", 20, Decision::Allow))
        .audit_log(AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let r = run(&d, json!({"query": "refunds", "limit": 50}));
    assert_eq!(r, ToolResult::text("toolu_1", "5 results for refunds"));
    // The first pass stops at the rewrite; the second sees the new input from the first hook,
    // without the rewriter, which is not asked about the input it produced.
    assert_eq!(
        entries(&log),
        [
            r#"app::before:{"query":"refunds","limit":50}"#,
            r#"app::cap_limit:{"query":"refunds","limit":50}"#,
            r#"app::before:{"query":"refunds","limit":5}"#,
            r#"app::after:{"query":"refunds","limit":5}"#,
            "tool:refunds:Some(5)"
        ]
    );
    let line = &support::json_lines(&dir.join("audit_log.jsonl"))[0];
    assert_eq!(
        line["outcome"], "ok",
        "a rewrite does not change the outcome"
    );
    assert_eq!(line["rewritten_by"], json!(["app::cap_limit"]));
    assert_eq!(line["input"], json!({"query": "refunds", "limit": 50}));
    assert_eq!(
        line["effective_input"],
        json!({"query": "refunds", "limit": 5})
    );

    // An input already capped: the rewrite equals it, so nothing was rewritten.
    log.lock().unwrap().clear();
    let r = run(&d, json!({"query": "refunds", "limit": 5}));
    assert_eq!(r, ToolResult::text("toolu_1", "5 results for refunds"));
    assert_eq!(entries(&log).len(), 4);
    let line = &support::json_lines(&dir.join("audit_log.jsonl"))[1];
    assert_eq!(line.get("rewritten_by"), None);
    assert_eq!(line.get("effective_input"), None);
}

/// Arguments of `refund`.
#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// The order to refund.
    order_id: String,
}

#[test]
fn a_normalizer_cannot_slip_another_customers_order_past_the_ownership_check() {
    // Rewrites are re-authorized: the ownership hook (order 10) allows O-1001; a normalizing hook
    // (order 20) rewrites it to O-2002, another customer's order. The hooks before the rewriter
    // decide again: the ownership hook sees O-2002 and denies: the tool never runs.
    let log = Log::default();
    let dir = support::TempDir::new("chain-ownership");
    let refunds = log.clone();
    let seen = log.clone();
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            move |_env, args: Refund| {
                refunds
                    .lock()
                    .unwrap()
                    .push(format!("tool:{}", args.order_id));
                Ok(format!("refunded {}", args.order_id))
            },
        ))
        .pre_hook(PreHookDef::sync("app::own_orders", 10, move |env, call| {
            let order = call.input["order_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            seen.lock().unwrap().push(format!("own_orders:{order}"));
            let owner = match order.as_str() {
                "O-1001" => "u_001",
                _ => "u_002",
            };
            Ok(if owner == env.context().user_id() {
                Decision::Allow
            } else {
                Decision::deny("that order is not this customer's.")
            })
        }))
        .pre_hook(PreHookDef::sync("app::normalize", 20, |_env, call| {
            // A buggy normalizer: maps every order to the "canonical" O-2002.
            Ok(Decision::Rewrite(
                json!({"order_id": call.input["order_id"].as_str().map(|_| "O-2002")}),
            ))
        }))
        .audit_log(AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_001", "sess_chain").build());
    let call = ToolUse::new("toolu_1", "refund", json!({"order_id": "O-1001"}));
    let r = toolgate::block_on(s.call(&call)).unwrap();
    assert_eq!(
        r,
        ToolResult::error("toolu_1", "BLOCKED: that order is not this customer's.")
    );
    assert_eq!(entries(&log), ["own_orders:O-1001", "own_orders:O-2002"]);
    let mut line = support::json_lines(&dir.join("audit_log.jsonl")).remove(0);
    let m = line.as_object_mut().unwrap();
    m.remove("ts");
    m.remove("duration_us");
    m.remove("prev");
    crate::support::zero_durations(&mut line);
    assert_eq!(
        line,
        json!({"session_id": "sess_chain", "user_id": "u_001", "tool_use_id": "toolu_1",
               "tool": "refund", "input": {"order_id": "O-1001"}, "outcome": "blocked",
               "is_error": true, "content": "BLOCKED: that order is not this customer's.",
               "blocked_by": "app::own_orders", "rewritten_by": ["app::normalize"],
               "effective_input": {"order_id": "O-2002"},
               // Every run, in order: after the rewrite, the hook before it ran again.
               "hooks": [
                   {"hook": "app::own_orders", "decision": "allow", "duration_us": 0},
                   {"hook": "app::normalize", "decision": "rewrite", "duration_us": 0},
                   {"hook": "app::own_orders", "decision": "deny", "duration_us": 0}]})
    );
}

/// A hook that rewrites `limit` with `f` (`None`: allow), logging what it saw.
fn limit_hook(
    log: &Log,
    path: &'static str,
    order: i64,
    f: impl Fn(u64) -> Option<u64> + Send + Sync + 'static,
) -> PreHookDef {
    let log = log.clone();
    PreHookDef::sync(path, order, move |_env, call| {
        let limit = call.input["limit"].as_u64().unwrap_or(0);
        log.lock().unwrap().push(format!("{path}:{limit}"));
        Ok(match f(limit) {
            Some(new) => Decision::Rewrite(json!({"query": "q", "limit": new})),
            None => Decision::Allow,
        })
    })
}

/// Runs `search` with `limit` through a dispatcher with `hooks` and an audit log; returns the
/// answer and the audit line.
fn run_logged(
    hooks: Vec<PreHookDef>,
    log: &Log,
    limit: u64,
) -> (Result<ToolResult, toolgate::Halt>, Value) {
    let dir = support::TempDir::new("chain-loop");
    let mut b = Dispatcher::builder()
        .tool(search_tool(log))
        .audit_log(AuditLog::open(&dir).unwrap());
    for h in hooks {
        b = b.pre_hook(h);
    }
    let d = b.build().unwrap();
    let s = d.session(HookContext::builder("u_1", "sess_chain").build());
    let call = ToolUse::new("toolu_1", "search", json!({"query": "q", "limit": limit}));
    let r = toolgate::block_on(s.call(&call)).map_err(|e| e.into_halt().expect("a halt"));
    s.end();
    let line = support::json_lines(&dir.join("audit_log.jsonl")).remove(0);
    (r, line)
}

#[test]
fn ping_pong_rewriters_halt_as_hook_failed_naming_the_hooks() {
    let log = Log::default();
    // `a` turns 1 into 2, `b` (not `a`, which produced it) decides on 2 and turns it back into
    // 1: the second rewrite returns to the input the call came with.
    let (r, line) = run_logged(
        vec![
            limit_hook(&log, "app::a_up", 10, |l| (l == 1).then_some(2)),
            limit_hook(&log, "app::b_down", 20, |l| (l == 2).then_some(1)),
        ],
        &log,
        1,
    );
    let halt = r.unwrap_err();
    let detail = "the PreToolUse chain looped: the rewrites of `app::a_up` and `app::b_down` \
                  undo each other (`app::b_down` rewrote the input back to an earlier one; \
                  rewrites in order: `app::a_up`, `app::b_down`)";
    assert_eq!(
        (halt.outcome, halt.hook.as_str(), halt.detail.as_str()),
        (Outcome::HookFailed, "app::b_down", detail)
    );
    assert_eq!(halt.result().unwrap().content_text(), support::HALT_TEXT);
    assert_eq!(
        entries(&log),
        ["app::a_up:1", "app::b_down:2"],
        "the tool never ran"
    );
    assert_eq!(line["outcome"], "hook_failed");
    assert_eq!(line["blocked_by"], "app::b_down");
    assert_eq!(line["rewritten_by"], json!(["app::a_up", "app::b_down"]));
    assert_eq!(line["effective_input"], json!({"query": "q", "limit": 2}));
    assert_eq!(line["detail"], detail);

    // A loop back to an earlier rewrite (not the call's own input) is caught too: 1 → 2 → 3,
    // then `a` sends 3 back to 2; the loop is `b`'s rewrite and `a`'s second one.
    let log = Log::default();
    let (r, line) = run_logged(
        vec![
            limit_hook(&log, "app::a_mod", 10, |l| match l {
                1 => Some(2),
                3 => Some(2),
                _ => None,
            }),
            limit_hook(&log, "app::b_inc", 20, |l| (l == 2).then_some(3)),
        ],
        &log,
        1,
    );
    let halt = r.unwrap_err();
    assert_eq!(
        halt.detail,
        "the PreToolUse chain looped: the rewrites of `app::b_inc` and `app::a_mod` undo each \
         other (`app::a_mod` rewrote the input back to an earlier one; rewrites in order: \
         `app::a_mod`, `app::b_inc`, `app::a_mod`)"
    );
    assert_eq!(
        line["rewritten_by"],
        json!(["app::a_mod", "app::b_inc", "app::a_mod"])
    );
    assert_eq!(
        entries(&log),
        ["app::a_mod:1", "app::b_inc:2", "app::a_mod:3"]
    );
}

#[test]
fn more_than_eight_rewrites_halt_and_eight_settle() {
    // Two counters that add one until `limit` reaches `stop`: each decides on the other's
    // input, so from 0 they take turns, `stop` rewrites in all.
    let counters = |log: &Log, stop: u64| {
        let counter = |path: &'static str, order: i64| {
            limit_hook(log, path, order, move |l| (l < stop).then_some(l + 1))
        };
        vec![counter("app::a_counter", 10), counter("app::b_counter", 20)]
    };
    let turns = |n: usize| -> Vec<&str> {
        (0..n)
            .map(|i| ["app::a_counter", "app::b_counter"][i % 2])
            .collect()
    };
    let log = Log::default();
    let (r, line) = run_logged(counters(&log, 8), &log, 0);
    assert_eq!(r.unwrap(), ToolResult::text("toolu_1", "8 results for q"));
    assert_eq!(line["outcome"], "ok");
    assert_eq!(line["rewritten_by"], json!(turns(8)));

    let log = Log::default();
    let (r, line) = run_logged(counters(&log, 9), &log, 0);
    let halt = r.unwrap_err();
    let detail = format!(
        "the PreToolUse chain did not settle: more than 8 rewrites for one call (rewrites in \
         order: {})",
        turns(9)
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(
        (halt.outcome, halt.hook.as_str(), halt.detail.as_str()),
        (Outcome::HookFailed, "app::a_counter", detail.as_str())
    );
    assert_eq!(line["outcome"], "hook_failed");
    assert_eq!(line["rewritten_by"], json!(turns(9)));
    assert_eq!(line["detail"], detail);
    assert_eq!(line["effective_input"], json!({"query": "q", "limit": 8}));
    assert!(
        !entries(&log).iter().any(|e| e.starts_with("tool:")),
        "the tool never ran"
    );
}

#[test]
fn a_three_hook_cycle_halts_naming_all_three() {
    // 1 → 2 (`a`), 2 → 3 (`b`, with `a` skipped: it produced 2), `a` allows 3, then `c` sends 3
    // back to the call's own 1.
    let log = Log::default();
    let (r, mut line) = run_logged(
        vec![
            limit_hook(&log, "app::a", 10, |l| (l == 1).then_some(2)),
            limit_hook(&log, "app::b", 20, |l| (l == 2).then_some(3)),
            limit_hook(&log, "app::c", 30, |l| (l == 3).then_some(1)),
        ],
        &log,
        1,
    );
    support::zero_durations(&mut line);
    let halt = r.unwrap_err();
    let detail = "the PreToolUse chain looped: the rewrites of `app::a`, `app::b` and `app::c` \
                  undo each other (`app::c` rewrote the input back to an earlier one; rewrites \
                  in order: `app::a`, `app::b`, `app::c`)";
    assert_eq!(
        (halt.outcome, halt.hook.as_str(), halt.detail.as_str()),
        (Outcome::HookFailed, "app::c", detail)
    );
    assert_eq!(
        entries(&log),
        ["app::a:1", "app::b:2", "app::a:3", "app::c:3"],
        "the tool never ran"
    );
    assert_eq!(line["outcome"], "hook_failed");
    assert_eq!(line["blocked_by"], "app::c");
    assert_eq!(line["rewritten_by"], json!(["app::a", "app::b", "app::c"]));
    assert_eq!(line["effective_input"], json!({"query": "q", "limit": 3}));
    assert_eq!(line["detail"], detail);
    assert_eq!(
        line["hooks"],
        hook_runs(&[
            ("app::a", "rewrite"),
            ("app::b", "rewrite"),
            ("app::a", "allow"),
            ("app::c", "rewrite")
        ])
    );
}

/// Arguments of `delegate`: a task handed to a subagent.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Delegate {
    /// What the subagent is asked to do.
    prompt: String,
    /// The fields its report has.
    fields: Vec<String>,
    /// Labels of the task.
    tags: Vec<String>,
    /// How many turns it may take.
    max_turns: u32,
}

fn delegate_input() -> Value {
    json!({"prompt": "find the flaky test", "fields": ["file"], "tags": ["ci"], "max_turns": 10})
}

/// `delegate_input()` changed by `f`.
fn delegated(f: impl FnOnce(&mut Value)) -> Value {
    let mut v = delegate_input();
    f(&mut v);
    v
}

/// A rule that rewrites the input with `f` every time it runs: it never allows what it sees.
fn rewriter(path: &'static str, order: i64, f: fn(&mut Value)) -> PreHookDef {
    PreHookDef::sync(path, order, move |_env, call| {
        let mut input = call.input.clone();
        f(&mut input);
        Ok(Decision::Rewrite(input))
    })
}

/// Subagents run read-only: `[read-only] ` before the prompt.
fn read_only(v: &mut Value) {
    v["prompt"] = json!(format!("[read-only] {}", v["prompt"].as_str().unwrap()));
}

/// Every report has an `id`.
fn default_field(v: &mut Value) {
    v["fields"].as_array_mut().unwrap().push(json!("id"));
}

/// Every delegated task is tagged `subagent`.
fn tag_subagent(v: &mut Value) {
    v["tags"].as_array_mut().unwrap().push(json!("subagent"));
}

/// Five turns more than asked.
fn more_turns(v: &mut Value) {
    v["max_turns"] = json!(v["max_turns"].as_u64().unwrap() + 5);
}

/// `(hook, decision)` as the audit line's `hooks`, durations 0.
fn hook_runs(runs: &[(&str, &str)]) -> Value {
    runs.iter()
        .map(|(hook, decision)| json!({"hook": hook, "decision": decision, "duration_us": 0}))
        .collect()
}

/// How a `delegate` call went: its answer, the arguments the tool ran with (`None`: it did not
/// run), and its audit line (durations 0).
struct Delegated {
    answer: Result<ToolResult, toolgate::Halt>,
    ran_with: Option<Value>,
    line: Value,
}

/// Runs `delegate` with `input` through a dispatcher with `hooks` and an audit log.
fn delegate(hooks: Vec<PreHookDef>, input: Value) -> Delegated {
    let dir = support::TempDir::new("chain-delegate");
    let ran: Arc<Mutex<Option<Value>>> = Arc::default();
    let seen = Arc::clone(&ran);
    let mut b = Dispatcher::builder()
        .tool(ToolDef::sync(
            "delegate",
            "Hands a task to a subagent.",
            move |_env, args: Delegate| {
                *seen.lock().unwrap() = Some(serde_json::to_value(&args).unwrap());
                Ok("delegated".to_owned())
            },
        ))
        .audit_log(AuditLog::open(&dir).unwrap());
    for h in hooks {
        b = b.pre_hook(h);
    }
    let d = b.build().unwrap();
    let s = d.session(HookContext::builder("u_1", "sess_chain").build());
    let call = ToolUse::new("toolu_1", "delegate", input);
    let answer = toolgate::block_on(s.call(&call)).map_err(|e| e.into_halt().expect("a halt"));
    s.end();
    let mut line = support::json_lines(&dir.join("audit_log.jsonl")).remove(0);
    support::zero_durations(&mut line);
    let ran_with = ran.lock().unwrap().take();
    Delegated {
        answer,
        ran_with,
        line,
    }
}

/// `got` ran the tool with `input`, rewritten by `by`, the hooks having run as `runs`.
fn assert_ran(got: &Delegated, input: &Value, by: &[&str], runs: &[(&str, &str)]) {
    assert_eq!(
        got.answer.as_ref().unwrap(),
        &ToolResult::text("toolu_1", "delegated")
    );
    assert_eq!(got.ran_with.as_ref(), Some(input));
    assert_eq!(got.line["outcome"], "ok");
    assert_eq!(got.line["rewritten_by"], json!(by));
    assert_eq!(&got.line["effective_input"], input);
    assert_eq!(got.line["hooks"], hook_runs(runs));
}

#[test]
fn a_subagents_prompt_is_prefixed_read_only_once() {
    let got = delegate(
        vec![rewriter("app::read_only", 10, read_only)],
        delegate_input(),
    );
    let want = delegated(|v| v["prompt"] = json!("[read-only] find the flaky test"));
    // The rewriter is not asked about the input it produced: nothing else decides.
    assert_ran(
        &got,
        &want,
        &["app::read_only"],
        &[("app::read_only", "rewrite")],
    );
}

#[test]
fn a_default_field_is_appended_once() {
    let got = delegate(
        vec![rewriter("app::report_id", 10, default_field)],
        delegate_input(),
    );
    let want = delegated(|v| v["fields"] = json!(["file", "id"]));
    assert_ran(
        &got,
        &want,
        &["app::report_id"],
        &[("app::report_id", "rewrite")],
    );
}

#[test]
fn a_tag_is_added_to_the_list_once() {
    let got = delegate(
        vec![rewriter("app::tag", 10, tag_subagent)],
        delegate_input(),
    );
    let want = delegated(|v| v["tags"] = json!(["ci", "subagent"]));
    assert_ran(&got, &want, &["app::tag"], &[("app::tag", "rewrite")]);
}

#[test]
fn a_limit_is_raised_by_one_step() {
    let got = delegate(
        vec![rewriter("app::more_turns", 10, more_turns)],
        delegate_input(),
    );
    let want = delegated(|v| v["max_turns"] = json!(15));
    assert_ran(
        &got,
        &want,
        &["app::more_turns"],
        &[("app::more_turns", "rewrite")],
    );
}

#[test]
fn the_prefixer_after_an_allow_all_hook_applies_once() {
    let log = Log::default();
    let got = delegate(
        vec![
            hook(&log, "app::everyone", 10, Decision::Allow),
            rewriter("app::read_only", 20, read_only),
        ],
        delegate_input(),
    );
    let want = delegated(|v| v["prompt"] = json!("[read-only] find the flaky test"));
    // The hook before the rewriter decides again, on the new input; the rewriter does not.
    assert_ran(
        &got,
        &want,
        &["app::read_only"],
        &[
            ("app::everyone", "allow"),
            ("app::read_only", "rewrite"),
            ("app::everyone", "allow"),
        ],
    );
    assert_eq!(
        entries(&log),
        [
            format!("app::everyone:{}", delegate_input()),
            format!("app::everyone:{want}"),
        ]
    );
}

/// At most 20 turns: rewrites a larger `max_turns` to 20, allows the rest.
fn cap_turns(order: i64) -> PreHookDef {
    PreHookDef::sync("app::cap_turns", order, |_env, call| {
        Ok(match call.input["max_turns"].as_u64() {
            Some(n) if n > 20 => {
                let mut input = call.input.clone();
                input["max_turns"] = json!(20);
                Decision::Rewrite(input)
            }
            _ => Decision::Allow,
        })
    })
}

#[test]
fn two_rewriters_apply_once_each_when_each_allows_the_others_input() {
    // The cap rewrites 50 to 20; the prefixer, after it, rewrites the capped input; the cap
    // decides again on the prefixed one and allows it (20 turns); the prefixer produced it.
    let input = delegated(|v| v["max_turns"] = json!(50));
    let got = delegate(
        vec![cap_turns(10), rewriter("app::read_only", 20, read_only)],
        input,
    );
    let want = delegated(|v| {
        v["prompt"] = json!("[read-only] find the flaky test");
        v["max_turns"] = json!(20);
    });
    assert_ran(
        &got,
        &want,
        &["app::cap_turns", "app::read_only"],
        &[
            ("app::cap_turns", "rewrite"),
            ("app::read_only", "rewrite"),
            ("app::cap_turns", "allow"),
        ],
    );
}

#[test]
fn a_rewriter_decides_again_on_the_input_a_later_rewriter_made() {
    // The prefixer, then the cap after it: the cap rewrites the prefixed input, so the
    // prefixer, before it, must decide on the capped one (an earlier authorization is never
    // skipped); as it prefixes whatever it sees, it prefixes again, and the cap allows that.
    let input = delegated(|v| v["max_turns"] = json!(50));
    let got = delegate(
        vec![rewriter("app::read_only", 10, read_only), cap_turns(20)],
        input,
    );
    let want = delegated(|v| {
        v["prompt"] = json!("[read-only] [read-only] find the flaky test");
        v["max_turns"] = json!(20);
    });
    assert_ran(
        &got,
        &want,
        &["app::read_only", "app::cap_turns", "app::read_only"],
        &[
            ("app::read_only", "rewrite"),
            ("app::cap_turns", "rewrite"),
            ("app::read_only", "rewrite"),
            ("app::cap_turns", "allow"),
        ],
    );

    // Two rules that change the input every time they run, the prefixer and a default field
    // appended after it: no input is one that each either allowed or produced, so they take
    // turns until the ninth rewrite halts the call (fail closed).
    let got = delegate(
        vec![
            rewriter("app::read_only", 10, read_only),
            rewriter("app::report_id", 20, default_field),
        ],
        delegate_input(),
    );
    let halt = got.answer.unwrap_err();
    let turns: Vec<&str> = (0..9)
        .map(|i| ["app::read_only", "app::report_id"][i % 2])
        .collect();
    let listed: Vec<String> = turns.iter().map(|p| format!("`{p}`")).collect();
    let detail = format!(
        "the PreToolUse chain did not settle: more than 8 rewrites for one call (rewrites in \
         order: {})",
        listed.join(", ")
    );
    assert_eq!(
        (halt.outcome, halt.hook.as_str(), halt.detail.as_str()),
        (Outcome::HookFailed, "app::read_only", detail.as_str())
    );
    assert_eq!(got.ran_with, None);
    assert_eq!(got.line["rewritten_by"], json!(turns));
}

#[test]
fn a_rewrite_an_earlier_rule_forbids_is_blocked_by_that_rule() {
    // At most 12 turns, checked first; a later rule adds five: 10 passes, 15 does not.
    let at_most_12 = PreHookDef::sync("app::at_most_12", 10, |_env, call| {
        Ok(match call.input["max_turns"].as_u64() {
            Some(n) if n > 12 => Decision::deny("at most 12 turns."),
            _ => Decision::Allow,
        })
    });
    let got = delegate(
        vec![at_most_12, rewriter("app::more_turns", 20, more_turns)],
        delegate_input(),
    );
    assert_eq!(
        got.answer.unwrap(),
        ToolResult::error("toolu_1", "BLOCKED: at most 12 turns.")
    );
    assert_eq!(got.ran_with, None);
    assert_eq!(got.line["outcome"], "blocked");
    assert_eq!(got.line["blocked_by"], "app::at_most_12");
    assert_eq!(got.line["rewritten_by"], json!(["app::more_turns"]));
    assert_eq!(
        got.line["effective_input"],
        delegated(|v| v["max_turns"] = json!(15))
    );
    assert_eq!(
        got.line["hooks"],
        hook_runs(&[
            ("app::at_most_12", "allow"),
            ("app::more_turns", "rewrite"),
            ("app::at_most_12", "deny"),
        ])
    );
}

#[test]
fn a_rewrite_that_fails_validation_is_invalid_input_and_the_tool_does_not_run() {
    let log = Log::default();
    let dir = support::TempDir::new("chain-bad-rewrite");
    let d = Dispatcher::builder()
        .tool(search_tool(&log))
        .pre_hook(hook(
            &log,
            "app::broken_rewrite",
            10,
            Decision::Rewrite(json!({"query": 7})),
        ))
        .pre_hook(hook(&log, "app::never", 20, Decision::Allow))
        .audit_log(AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let r = run(&d, json!({"query": "refunds"}));
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `search`: a policy rewrite of this call produced an input \
         that is invalid at `query` (expected a string, found the number 7). This is a \
         problem on our side; do not retry the same call."
    );
    assert_eq!(
        entries(&log),
        [r#"app::broken_rewrite:{"query":"refunds"}"#]
    );
    let line = &support::json_lines(&dir.join("audit_log.jsonl"))[0];
    assert_eq!(line["outcome"], "invalid_input");
    assert_eq!(line["rewritten_by"], json!(["app::broken_rewrite"]));
    assert_eq!(
        line["detail"],
        "PreToolUse hook `app::broken_rewrite` rewrote the input into an invalid one at `query`: \
         expected a string, found the number 7"
    );
}

#[test]
fn equal_orders_break_by_path_stably() {
    for _ in 0..3 {
        let log = Log::default();
        let d = Dispatcher::builder()
            .tool(search_tool(&log))
            .pre_hook(hook(&log, "app::zeta", 5, Decision::Allow))
            .pre_hook(hook(&log, "app::alpha", 5, Decision::Allow))
            .pre_hook(hook(&log, "app::first", -1, Decision::Allow))
            .pre_hook(hook(&log, "app::mid", 5, Decision::Allow))
            .build()
            .unwrap();
        assert_eq!(
            d.pre_hook_chain("search").unwrap(),
            ["app::first", "app::alpha", "app::mid", "app::zeta"]
        );
        run(&d, json!({"query": "q"}));
        let order: Vec<String> = entries(&log)
            .iter()
            .map(|e| e.split(':').take(3).collect::<Vec<_>>().join(":"))
            .collect();
        assert_eq!(
            order,
            [
                "app::first",
                "app::alpha",
                "app::mid",
                "app::zeta",
                "tool:q:None"
            ]
        );
    }
}

mod specialist {
    //! Registered items for the filtering test: a refund tool guarded by its own hook, an FAQ
    //! tool, and a hook for every tool.
    use toolgate::{Decision, pre_hook, tool};

    /// Searches the FAQ.
    #[tool]
    pub(crate) fn faq(
        /// What to look for.
        query: String,
    ) -> String {
        format!("faq: {query}")
    }

    /// Refunds an order.
    #[tool]
    pub(crate) fn refund(
        /// The order.
        order_id: String,
    ) -> String {
        format!("refunded {order_id}")
    }

    /// Refunds need a human.
    #[pre_hook(order = 1, tools = [refund])]
    pub(crate) fn refunds_need_a_human() -> Decision {
        Decision::deny("refunds need a human.")
    }

    /// Every call is allowed.
    #[pre_hook(order = 2)]
    pub(crate) fn everyone() -> Decision {
        Decision::Allow
    }
}

#[test]
fn a_registered_hook_whose_tools_are_filtered_out_is_left_out_an_explicit_one_fails_build() {
    let under = format!("{}::specialist", module_path!());
    let path = |item: &str| format!("{under}::{item}");
    // A specialist without `refund`: the refund hook is registered, so it is simply not part of
    // this dispatcher (ARCHITECTURE.md, "Contracts": "Failing closed").
    let faq_only = Dispatcher::builder()
        .registered_under(&under)
        .only_tools(["faq"])
        .build()
        .unwrap();
    assert_eq!(faq_only.tool_names().collect::<Vec<_>>(), ["faq"]);
    assert_eq!(faq_only.pre_hook_chain("faq").unwrap(), [path("everyone")]);
    assert!(!format!("{faq_only:?}").contains("refunds_need_a_human"));
    let both = Dispatcher::builder()
        .registered_under(&under)
        .build()
        .unwrap();
    assert_eq!(
        both.pre_hook_chain("refund").unwrap(),
        [path("refunds_need_a_human"), path("everyone")]
    );

    // The same hook given explicitly was meant to guard this dispatcher: a build error.
    let log = Log::default();
    let err = Dispatcher::builder()
        .registered_under(&under)
        .pre_hook(hook(&log, "app::refund_cap", 1, Decision::deny("no")).tools(["refund"]))
        .only_tools(["faq"])
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::MatchesNoKeptTool {
            hook: "app::refund_cap".into(),
            tools: vec!["refund".into()]
        }]
    );
}

#[test]
fn a_matcher_naming_an_unregistered_tool_fails_build() {
    let log = Log::default();
    let err = Dispatcher::builder()
        .tool(search_tool(&log))
        .pre_hook(hook(&log, "app::typo", 1, Decision::Allow).tools(["serach"]))
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::UnknownMatcherTool {
            hook: "app::typo".into(),
            tool: "serach".into()
        }]
    );
    assert_eq!(
        err.to_string(),
        "the dispatcher cannot be built (1 problem):\n- hook `app::typo` matches tool `serach`, \
         which is registered nowhere"
    );
}
