//! Typed PreToolUse hooks: a hook that takes the tool's input type `&T` (no second
//! deserialization), applies to the tools that take `T` (narrowed by `tools`), and rewrites with
//! a `T`, which is serialized back and authorized again.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::json;
use toolgate::{
    Decision, Dispatcher, HookContext, ToolUse,
    audit::Outcome,
    dispatch::{BuildProblem, PreHookDef, ToolDef, sync_caller},
};

/// Arguments of `search` and `search_archive`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
    /// How many results.
    limit: u32,
}

/// Arguments of `refund`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
}

fn search_tool(name: &'static str) -> ToolDef {
    ToolDef::sync(name, "Searches.", |_env, s: Search| {
        Ok(format!("{} results for {}", s.limit, s.query))
    })
    .path(format!("app::{name}"))
}

fn refund_tool() -> ToolDef {
    ToolDef::sync("refund", "Refunds.", |_env, r: Refund| {
        Ok(format!("refunded {}", r.order_id))
    })
    .path("app::refund")
}

fn cap(
    _env: toolgate::dispatch::Env<'_>,
    _call: &ToolUse,
    s: &Search,
) -> Result<Decision<Search>, toolgate::dispatch::HookError> {
    Ok(if s.limit > 5 {
        Decision::Rewrite(Search {
            query: s.query.clone(),
            limit: 5,
        })
    } else {
        Decision::Allow
    })
}

fn session_call(dispatcher: &Dispatcher, input: serde_json::Value) -> toolgate::ToolResult {
    let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
    let call = ToolUse::new("toolu_1", "search", input);
    toolgate::block_on(session.call(&call)).expect("no halt")
}

#[test]
fn a_typed_hook_applies_to_the_tools_that_take_its_type() {
    let dispatcher = Dispatcher::builder()
        .tool(search_tool("search"))
        .tool(search_tool("search_archive"))
        .tool(refund_tool())
        .pre_hook(PreHookDef::typed("app::cap", 10, cap))
        .build()
        .expect("builds");
    assert_eq!(dispatcher.pre_hook_chain("search"), Some(vec!["app::cap"]));
    assert_eq!(
        dispatcher.pre_hook_chain("search_archive"),
        Some(vec!["app::cap"])
    );
    assert_eq!(dispatcher.pre_hook_chain("refund"), Some(vec![]));
}

#[test]
fn tools_narrow_a_typed_hook() {
    let dispatcher = Dispatcher::builder()
        .tool(search_tool("search"))
        .tool(search_tool("search_archive"))
        .pre_hook(PreHookDef::typed("app::cap", 10, cap).tools(["search_archive"]))
        .build()
        .expect("builds");
    assert_eq!(dispatcher.pre_hook_chain("search"), Some(vec![]));
    assert_eq!(
        dispatcher.pre_hook_chain("search_archive"),
        Some(vec!["app::cap"])
    );
}

#[test]
fn a_typed_rewrite_is_serialized_validated_and_authorized_again() {
    let seen: Arc<Mutex<Vec<Search>>> = Arc::default();
    let log = Arc::clone(&seen);
    let dispatcher = Dispatcher::builder()
        .tool(search_tool("search"))
        .pre_hook(PreHookDef::typed("app::cap", 10, cap))
        .pre_hook(PreHookDef::typed(
            "app::watch",
            20,
            move |_env, _call, s: &Search| {
                log.lock().unwrap().push(s.clone());
                Ok(Decision::<Search>::Allow)
            },
        ))
        .build()
        .expect("builds");
    let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
    let call = ToolUse::new(
        "toolu_1",
        "search",
        json!({"query": "refunds", "limit": 50}),
    );
    let result = toolgate::block_on(session.call(&call)).expect("no halt");
    assert_eq!(result.content_text(), "5 results for refunds");
    // The chain ran again after the rewrite: the later hook saw only the rewritten input.
    assert_eq!(
        *seen.lock().unwrap(),
        [Search {
            query: "refunds".into(),
            limit: 5
        }]
    );

    let asked = toolgate::block_on(
        dispatcher.pre_tool_use(&HookContext::builder("u_1", "sess_1").build(), &call),
    );
    assert_eq!(
        asked,
        toolgate::dispatch::ChainVerdict::Allow {
            input: json!({"query": "refunds", "limit": 5}),
            rewritten_by: vec!["app::cap".into()],
        }
    );
}

#[test]
fn a_typed_hook_reads_the_input_an_untyped_rewrite_made() {
    let seen: Arc<Mutex<Vec<Search>>> = Arc::default();
    let log = Arc::clone(&seen);
    let dispatcher = Dispatcher::builder()
        .tool(search_tool("search"))
        .pre_hook(PreHookDef::sync("app::lowercase", 5, |_env, call| {
            let query = call.input["query"].as_str().unwrap_or_default();
            Ok(Decision::Rewrite(
                json!({"query": query.to_lowercase(), "limit": call.input["limit"]}),
            ))
        }))
        .pre_hook(PreHookDef::typed(
            "app::watch",
            20,
            move |_env, _call, s: &Search| {
                log.lock().unwrap().push(s.clone());
                Ok(Decision::<Search>::Allow)
            },
        ))
        .build()
        .expect("builds");
    let result = session_call(&dispatcher, json!({"query": "REFUNDS", "limit": 2}));
    assert_eq!(result.content_text(), "2 results for refunds");
    assert_eq!(
        *seen.lock().unwrap(),
        [Search {
            query: "refunds".into(),
            limit: 2
        }]
    );
}

/// A typed hook that logs the input it sees under `name`, then allows it.
fn watcher(
    seen: &Arc<Mutex<Vec<(&'static str, u32)>>>,
    name: &'static str,
    order: i64,
) -> PreHookDef {
    let log = Arc::clone(seen);
    PreHookDef::typed(
        format!("app::{name}"),
        order,
        move |_env, _call, s: &Search| {
            log.lock().unwrap().push((name, s.limit));
            Ok(Decision::<Search>::Allow)
        },
    )
}

#[test]
fn a_typed_rewrite_that_changes_the_input_every_time_applies_once() {
    // `raise` adds 5 to the limit whenever it runs, so it never allows what it sees: it is not
    // asked about the input it produced, the hook before it decides again on that input, the
    // hook after it sees only that input.
    let seen: Arc<Mutex<Vec<(&'static str, u32)>>> = Arc::default();
    let dir = crate::support::TempDir::new("typed-raise");
    let dispatcher = Dispatcher::builder()
        .tool(search_tool("search"))
        .pre_hook(watcher(&seen, "before", 5))
        .pre_hook(PreHookDef::typed(
            "app::raise",
            10,
            |_env, _call, s: &Search| {
                Ok(Decision::Rewrite(Search {
                    query: s.query.clone(),
                    limit: s.limit + 5,
                }))
            },
        ))
        .pre_hook(watcher(&seen, "after", 20))
        .audit_log(toolgate::audit::AuditLog::open(&dir).unwrap())
        .build()
        .expect("builds");
    let result = session_call(&dispatcher, json!({"query": "refunds", "limit": 10}));
    assert_eq!(result.content_text(), "15 results for refunds");
    assert_eq!(
        std::mem::take(&mut *seen.lock().unwrap()),
        [("before", 10), ("before", 15), ("after", 15)]
    );
    let mut line = crate::support::json_lines(&dir.join("audit_log.jsonl")).remove(0);
    crate::support::zero_durations(&mut line);
    assert_eq!(line["rewritten_by"], json!(["app::raise"]));
    assert_eq!(
        line["effective_input"],
        json!({"query": "refunds", "limit": 15})
    );
    assert_eq!(
        line["hooks"],
        json!([
            {"hook": "app::before", "decision": "allow", "duration_us": 0},
            {"hook": "app::raise", "decision": "rewrite", "duration_us": 0},
            {"hook": "app::before", "decision": "allow", "duration_us": 0},
            {"hook": "app::after", "decision": "allow", "duration_us": 0},
        ])
    );

    // The chain asked alone settles on the same input.
    let call = ToolUse::new(
        "toolu_2",
        "search",
        json!({"query": "refunds", "limit": 10}),
    );
    let asked = toolgate::block_on(
        dispatcher.pre_tool_use(&HookContext::builder("u_1", "sess_1").build(), &call),
    );
    assert_eq!(
        asked,
        toolgate::dispatch::ChainVerdict::Allow {
            input: json!({"query": "refunds", "limit": 15}),
            rewritten_by: vec!["app::raise".into()],
        }
    );
}

fn deny_large<'a>(
    _env: toolgate::dispatch::Env<'a>,
    _call: &'a ToolUse,
    s: &'a Search,
) -> toolgate::dispatch::BoxFuture<'a, Result<Decision<Search>, toolgate::dispatch::HookError>> {
    let limit = s.limit;
    Box::pin(async move {
        Ok(if limit > 100 {
            Decision::deny("at most 100 results.")
        } else {
            Decision::Allow
        })
    })
}

#[test]
fn an_async_typed_hook_decides() {
    let dispatcher = Dispatcher::builder()
        .tool(search_tool("search"))
        .pre_hook(PreHookDef::typed_async("app::deny_large", 10, deny_large))
        .build()
        .expect("builds");
    let result = session_call(&dispatcher, json!({"query": "a", "limit": 101}));
    assert_eq!(
        (result.is_error, result.content_text().as_ref()),
        (true, "BLOCKED: at most 100 results.")
    );
    let result = session_call(&dispatcher, json!({"query": "a", "limit": 100}));
    assert_eq!(result.content_text(), "100 results for a");
}

/// An input whose `Serialize` fails.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Unwritable {
    /// A field that cannot be written back.
    #[serde(serialize_with = "refuse")]
    value: u32,
}

fn refuse<S: Serializer>(_: &u32, _: S) -> Result<S::Ok, S::Error> {
    Err(serde::ser::Error::custom("this field cannot be serialized"))
}

#[test]
fn a_typed_rewrite_that_cannot_be_serialized_halts() {
    let dispatcher = Dispatcher::builder()
        .tool(ToolDef::sync("store", "Stores.", |_env, u: Unwritable| {
            Ok(u.value.to_string())
        }))
        .pre_hook(PreHookDef::typed(
            "app::bump",
            10,
            |_env, _call, u: &Unwritable| Ok(Decision::Rewrite(Unwritable { value: u.value + 1 })),
        ))
        .build()
        .expect("builds");
    let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
    let call = ToolUse::new("toolu_1", "store", json!({"value": 1}));
    let halt = toolgate::block_on(session.call(&call))
        .expect_err("the hook failed")
        .into_halt()
        .expect("a halt");
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(halt.hook, "app::bump");
    assert_eq!(
        halt.detail,
        "toolgate: the hook's rewrite could not be serialized to the input: this field cannot be \
         serialized"
    );
}

#[test]
fn a_typed_hook_whose_type_no_tool_takes_is_a_build_error() {
    let err = Dispatcher::builder()
        .tool(refund_tool())
        .pre_hook(PreHookDef::typed("app::cap", 10, cap))
        .build()
        .expect_err("no tool takes Search");
    let input = std::any::type_name::<Search>();
    assert_eq!(
        err.problems,
        vec![BuildProblem::NoToolTakesHookInput {
            hook: "app::cap".into(),
            input: input.into(),
        }]
    );
    assert_eq!(
        err.problems[0].to_string(),
        format!(
            "hook `app::cap` takes `&{input}`, but no tool of this builder takes `{input}` as its \
             input, so it would guard nothing: take the input type of the tool you mean (a flat \
             tool names its input with #[tool(input = Name)]), or add that tool"
        )
    );
}

#[test]
fn a_typed_hook_naming_a_tool_of_another_input_type_is_a_build_error() {
    let legacy = sync_caller(
        vec![
            json!({"name": "legacy_search", "description": "Searches the old index.",
                    "input_schema": {"type": "object", "properties": {}}}),
        ],
        |_, _| Ok("none".into()),
    );
    let err = Dispatcher::builder()
        .tool(search_tool("search"))
        .tool(refund_tool())
        .wrap(legacy)
        .pre_hook(PreHookDef::typed("app::cap", 10, cap).tools([
            "search",
            "refund",
            "legacy_search",
        ]))
        .build()
        .expect_err("refund and legacy_search do not take Search");
    let (input, refund) = (
        std::any::type_name::<Search>(),
        std::any::type_name::<Refund>(),
    );
    assert_eq!(
        err.problems,
        vec![
            BuildProblem::HookInputMismatch {
                hook: "app::cap".into(),
                tool: "refund".into(),
                input: input.into(),
                tool_input: format!("`{refund}`"),
            },
            BuildProblem::HookInputMismatch {
                hook: "app::cap".into(),
                tool: "legacy_search".into(),
                input: input.into(),
                tool_input: "JSON (a wrapped caller's tool)".into(),
            },
        ]
    );
    assert_eq!(
        err.problems[0].to_string(),
        format!(
            "hook `app::cap` takes `&{input}`, but its tool `refund` takes `{refund}`: name only \
             tools whose input is `{input}`, or take `&ToolUse` to read any tool's input"
        )
    );
}

/// Tools and typed hooks written with the macros.
mod declared {
    use toolgate::{Decision, HookContext, pre_hook, tool};

    /// Searches the help centre.
    #[tool(input = HelpQuery)]
    pub(super) fn help(
        /// What to look for.
        query: String,
        /// How many entries.
        limit: Option<u32>,
    ) -> String {
        format!("{} entries for {query}", limit.unwrap_or(3))
    }

    /// Caps the limit at 5.
    #[pre_hook(order = 10)]
    pub(super) fn cap_help(input: &HelpQuery) -> Decision<HelpQuery> {
        match input.limit {
            Some(n) if n > 5 => Decision::Rewrite(HelpQuery {
                query: input.query.clone(),
                limit: Some(5),
            }),
            _ => Decision::Allow,
        }
    }

    /// Only signed-in premium users search for "refund" (async, typed, with the context).
    #[pre_hook(order = 20, tools = [help])]
    pub(super) async fn premium_refund_questions(
        ctx: &HookContext,
        input: &HelpQuery,
    ) -> Result<Decision<HelpQuery>, String> {
        if input.query.contains("refund") && ctx.tier() != Some("premium") {
            return Ok(Decision::deny("refund questions are for premium users."));
        }
        Ok(Decision::Allow)
    }
}

#[test]
fn the_macros_name_a_flat_tools_input_and_type_its_hooks() {
    let path = concat!(module_path!(), "::declared");
    let dispatcher = Dispatcher::builder()
        .registered_under(path)
        .build()
        .expect("builds");
    assert_eq!(
        dispatcher.pre_hook_chain("help"),
        Some(vec![
            format!("{path}::cap_help").as_str(),
            format!("{path}::premium_refund_questions").as_str()
        ])
    );
    // The named struct's schema is the flat tool's.
    assert_eq!(
        dispatcher.tool_definitions()[0]["input_schema"],
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {
                    "description": "How many entries.",
                    "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}],
                },
            },
            "required": ["query"],
            "additionalProperties": false,
        })
    );
    let premium = dispatcher.session(HookContext::builder("u_1", "s").tier("premium").build());
    let call = ToolUse::new(
        "toolu_1",
        "help",
        json!({"query": "refund window", "limit": 9}),
    );
    let result = toolgate::block_on(premium.call(&call)).expect("no halt");
    assert_eq!(result.content_text(), "5 entries for refund window");
    let free = dispatcher.session(HookContext::builder("u_2", "s").tier("free").build());
    let result = toolgate::block_on(free.call(&call)).expect("no halt");
    assert_eq!(
        result.content_text(),
        "BLOCKED: refund questions are for premium users."
    );
    // The struct is an ordinary one of this module.
    let q = declared::HelpQuery {
        query: "x".into(),
        limit: None,
    };
    assert_eq!(
        serde_json::to_value(&q).unwrap(),
        json!({"query": "x", "limit": null})
    );
}
