//! PreToolUse chain semantics: order, first deny wins, Allow never short-circuits, rewrites,
//! ties broken by path, matchers and filtering.

use std::sync::{Arc, Mutex};

use crate::support;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    AuditLog, BuildProblem, Decision, Dispatcher, HookContext, PreHookDef, ToolDef, ToolResult,
    ToolUse,
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
fn a_rewrite_is_seen_by_later_hooks_and_the_tool_and_recorded() {
    let log = Log::default();
    let dir = support::TempDir::new("chain-rewrite");
    let d = Dispatcher::builder()
        .tool(search_tool(&log))
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
    assert_eq!(
        entries(&log),
        [
            r#"app::cap_limit:{"query":"refunds","limit":50}"#,
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

#[test]
fn a_hook_whose_tools_are_all_filtered_out_is_not_part_of_the_dispatcher() {
    let log = Log::default();
    let other = ToolDef::sync(
        "other",
        "Another tool.",
        |_env, _: Search| Ok(String::new()),
    );
    let build = |only: &[&str]| {
        Dispatcher::builder()
            .tool(search_tool(&log))
            .tool(other.clone())
            .pre_hook(hook(&log, "app::only_other", 1, Decision::deny("no")).tools(["other"]))
            .pre_hook(hook(&log, "app::everyone", 2, Decision::Allow))
            .only_tools(only.iter().copied())
            .build()
            .unwrap()
    };
    let d = build(&["search"]);
    assert_eq!(d.tool_names().collect::<Vec<_>>(), ["search"]);
    assert_eq!(d.pre_hook_chain("search").unwrap(), ["app::everyone"]);
    assert!(!format!("{d:?}").contains("only_other"));
    let both = build(&["search", "other"]);
    assert_eq!(
        both.pre_hook_chain("other").unwrap(),
        ["app::only_other", "app::everyone"]
    );
    assert_eq!(both.pre_hook_chain("search").unwrap(), ["app::everyone"]);
    assert!(format!("{both:?}").contains("only_other"));
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
