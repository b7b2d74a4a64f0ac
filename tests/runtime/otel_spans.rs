//! The OpenTelemetry GenAI spans: one `execute_tool {tool}` span per call with a
//! `pre_tool_use {hook}` child per hook run, exported through `tracing-opentelemetry` into the
//! SDK's in-memory exporter; exact names, parents, attributes and status, for a call dropped
//! unfinished and a tool that panics too, and no content attribute unless the host opts in.

use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolgate::content::INTERNAL_ERROR_MESSAGE;
use toolgate::{
    Decision, Dispatcher, HookContext, ToolError, ToolUse,
    audit::{AuditLog, Redaction},
    dispatch::{BoxFuture, DispatcherBuilder, HookError, PreHookDef, ToolDef},
};
use tracing_subscriber::layer::SubscriberExt;

use crate::support;

/// Arguments of the test tool.
#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
    /// The card, when given.
    #[serde(default)]
    card: Option<String>,
}

/// `refund` behind three hooks: `app::cap` rewrites amounts above 5000 to 5000, `app::own`
/// denies `o_other`, `app::store` fails on `o_fail` (the agent halts).
fn builder() -> DispatcherBuilder {
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            |_env, a: Refund| {
                let _ = a.card;
                Ok(format!("refunded {} on {}", a.amount_cents, a.order_id))
            },
        ))
        .pre_hook(PreHookDef::sync("app::cap", 10, |_env, call: &ToolUse| {
            Ok(match call.input["amount_cents"].as_u64() {
                Some(n) if n > 5000 => {
                    let mut input = call.input.clone();
                    input["amount_cents"] = json!(5000);
                    Decision::rewrite(input)
                }
                _ => Decision::Allow,
            })
        }))
        .pre_hook(PreHookDef::sync("app::own", 20, |_env, call: &ToolUse| {
            Ok(match call.input["order_id"].as_str() {
                Some("o_other") => Decision::deny("not this customer's order."),
                _ => Decision::Allow,
            })
        }))
        .pre_hook(PreHookDef::sync(
            "app::store",
            30,
            |_env, call: &ToolUse| match call.input["order_id"].as_str() {
                Some("o_fail") => Err(HookError::new("the policy store is down")),
                _ => Ok(Decision::Allow),
            },
        ))
}

/// Runs `calls` (id, input) on `dispatcher` under an OpenTelemetry subscriber; the finished
/// spans.
fn traced(dispatcher: &Dispatcher, calls: &[(&str, serde_json::Value)]) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("toolgate-test")));
    tracing::subscriber::with_default(subscriber, || {
        // Tests of this binary install and drop subscribers on other threads at the same time;
        // a callsite's interest cached against another thread's subscriber would hide a span.
        tracing::callsite::rebuild_interest_cache();
        let session = dispatcher.session(HookContext::builder("u_1", "sess_otel").build());
        for (id, input) in calls {
            let _ = toolgate::block_on(session.call(&ToolUse::new(*id, "refund", input.clone())));
        }
    });
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

/// Each root span, then its children indented, in the order they ended: `name {attributes}
/// status`, attributes limited to the GenAI, toolgate and error ones, sorted by key.
fn tree(spans: &[SpanData]) -> Vec<String> {
    let show = |s: &SpanData| {
        let mut attrs: Vec<String> = s
            .attributes
            .iter()
            .filter(|kv| {
                let k = kv.key.as_str();
                k.starts_with("gen_ai.") || k.starts_with("toolgate.") || k == "error.type"
            })
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect();
        attrs.sort();
        let status = match &s.status {
            Status::Unset => "unset".to_owned(),
            Status::Ok => "ok".to_owned(),
            Status::Error { description } => format!("error({description})"),
        };
        format!(
            "{} {{{}}} {status} {:?}",
            s.name,
            attrs.join(", "),
            s.span_kind
        )
    };
    let mut out = Vec::new();
    for root in spans.iter().filter(|s| {
        !spans
            .iter()
            .any(|p| p.span_context.span_id() == s.parent_span_id)
    }) {
        out.push(show(root));
        for child in spans
            .iter()
            .filter(|c| c.parent_span_id == root.span_context.span_id())
        {
            out.push(format!("  {}", show(child)));
        }
    }
    out
}

#[test]
fn ok_blocked_rewritten_and_halted_calls_give_exact_spans() {
    support::quiet_injected_panics();
    let d = builder().build().unwrap();
    let spans = traced(
        &d,
        &[
            ("toolu_ok", json!({"order_id": "o_1", "amount_cents": 100})),
            (
                "toolu_blocked",
                json!({"order_id": "o_other", "amount_cents": 100}),
            ),
            (
                "toolu_rewrite",
                json!({"order_id": "o_1", "amount_cents": 9000}),
            ),
            (
                "toolu_halt",
                json!({"order_id": "o_fail", "amount_cents": 100}),
            ),
        ],
    );
    let common = |id: &str| {
        format!(
            "gen_ai.operation.name=execute_tool, gen_ai.tool.call.id={id}, \
             gen_ai.tool.name=refund, gen_ai.tool.type=function"
        )
    };
    let hook = |name: &str, decision: &str| {
        format!(
            "  pre_tool_use {name} {{toolgate.hook.decision={decision}, \
             toolgate.hook.name={name}}} unset Internal"
        )
    };
    assert_eq!(
        tree(&spans),
        [
            format!(
                "execute_tool refund {{{}, toolgate.outcome=ok, toolgate.session.id=sess_otel}} \
                 unset Internal",
                common("toolu_ok")
            ),
            hook("app::cap", "allow"),
            hook("app::own", "allow"),
            hook("app::store", "allow"),
            format!(
                "execute_tool refund {{error.type=blocked, {}, toolgate.blocked_by=app::own, \
                 toolgate.outcome=blocked, toolgate.session.id=sess_otel}} error() Internal",
                common("toolu_blocked")
            ),
            hook("app::cap", "allow"),
            hook("app::own", "deny"),
            format!(
                "execute_tool refund {{{}, toolgate.outcome=ok, toolgate.rewritten_by=app::cap, \
                 toolgate.session.id=sess_otel}} unset Internal",
                common("toolu_rewrite")
            ),
            // `cap` is first and produced the input: the next pass starts after it.
            hook("app::cap", "rewrite"),
            hook("app::own", "allow"),
            hook("app::store", "allow"),
            format!(
                "execute_tool refund {{error.type=hook_failed, {}, toolgate.blocked_by=app::store, \
                 toolgate.outcome=hook_failed, toolgate.session.id=sess_otel}} error() Internal",
                common("toolu_halt")
            ),
            hook("app::cap", "allow"),
            hook("app::own", "allow"),
            hook("app::store", "failed"),
        ]
    );
}

#[test]
fn arguments_and_results_only_when_the_host_opts_in_and_redacted_as_the_audit_log() {
    let call = [(
        "toolu_card",
        json!({"order_id": "o_1", "amount_cents": 100, "card": "4242 4242 4242 4242"}),
    )];
    let plain = builder().build().unwrap();
    let spans = traced(&plain, &call);
    let has_content = spans.iter().any(|s| {
        s.attributes
            .iter()
            .any(|kv| kv.key.as_str().starts_with("gen_ai.tool.call.a"))
    });
    assert!(!has_content, "no arguments without the opt-in");

    let dir = support::TempDir::new("otel-content");
    let log = AuditLog::builder()
        .dir(&dir)
        .redaction(Redaction::new().field("refund", "/card").unwrap())
        .build()
        .unwrap();
    let opted = builder().audit_log(log).span_content().build().unwrap();
    let spans = traced(&opted, &call);
    let root = spans
        .iter()
        .find(|s| s.name == "execute_tool refund")
        .unwrap();
    let content: Vec<String> = root
        .attributes
        .iter()
        .filter(|kv| {
            kv.key.as_str().starts_with("gen_ai.tool.call.")
                && kv.key.as_str() != "gen_ai.tool.call.id"
        })
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    assert_eq!(
        content,
        [
            r#"gen_ai.tool.call.arguments={"order_id":"o_1","amount_cents":100,"card":"[redacted]"}"#,
            "gen_ai.tool.call.result=refunded 100 on o_1",
        ]
    );
}

#[test]
fn a_call_span_nests_under_the_hosts_current_span() {
    let d = builder().build().unwrap();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("toolgate-test")));
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        let turn = tracing::info_span!("agent_turn");
        let _entered = turn.enter();
        let session = d.session(HookContext::builder("u_1", "sess_otel").build());
        let call = ToolUse::new(
            "toolu_1",
            "refund",
            json!({"order_id": "o_1", "amount_cents": 1}),
        );
        let _ = toolgate::block_on(session.call(&call));
    });
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let name_of = |id| {
        spans
            .iter()
            .find(|s| s.span_context.span_id() == id)
            .map(|s| s.name.to_string())
    };
    let parents: Vec<(String, Option<String>)> = spans
        .iter()
        .map(|s| (s.name.to_string(), name_of(s.parent_span_id)))
        .collect();
    assert_eq!(
        parents,
        [
            (
                "pre_tool_use app::cap".to_owned(),
                Some("execute_tool refund".to_owned())
            ),
            (
                "pre_tool_use app::own".to_owned(),
                Some("execute_tool refund".to_owned())
            ),
            (
                "pre_tool_use app::store".to_owned(),
                Some("execute_tool refund".to_owned())
            ),
            (
                "execute_tool refund".to_owned(),
                Some("agent_turn".to_owned())
            ),
            ("agent_turn".to_owned(), None),
        ]
    );
}

/// Arguments of the tools that end badly.
#[derive(Deserialize, JsonSchema)]
struct Card {
    /// The card number.
    card: String,
}

/// [`builder`] with three more tools, each ending badly: `hangs` never answers (the host drops
/// it), `boom` panics with the card in its message, `leaks` fails with an internal error that
/// names the card.
fn failing() -> DispatcherBuilder {
    fn hangs(
        _env: toolgate::dispatch::Env<'_>,
        _a: Card,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        support::hang()
    }
    builder()
        .tool(ToolDef::new_async("hangs", "Never answers.", hangs))
        .tool(ToolDef::sync(
            "boom",
            "Panics.",
            |_env, a: Card| -> Result<String, ToolError> {
                panic!("{}: card {} declined", support::INJECTED, a.card)
            },
        ))
        .tool(ToolDef::sync(
            "leaks",
            "Fails inside.",
            |_env, a: Card| -> Result<String, ToolError> {
                Err(ToolError::internal(format!(
                    "gateway refused card {}",
                    a.card
                )))
            },
        ))
}

/// Each call of `calls` (id, tool) with the input `{"card": CARD}` on `dispatcher`, under an
/// OpenTelemetry subscriber; `hangs` is polled once and dropped, as a host that gives up does.
fn traced_failures(dispatcher: &Dispatcher, calls: &[(&str, &str)]) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("toolgate-test")));
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        let session = dispatcher.session(HookContext::builder("u_1", "sess_otel").build());
        for (id, tool) in calls {
            let call = ToolUse::new(*id, *tool, json!({ "card": CARD }));
            if *tool == "hangs" {
                let mut fut = std::pin::pin!(session.call(&call));
                assert!(support::poll_once(fut.as_mut()).is_none());
            } else {
                let _ = toolgate::block_on(session.call(&call));
            }
        }
    });
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

/// A card number the tools of [`failing`] put in their failures.
const CARD: &str = "4242 4242 4242 4242";

/// The `gen_ai.tool.call.*` content attributes of a span (not its id).
fn content_of(span: &SpanData) -> Vec<String> {
    span.attributes
        .iter()
        .filter(|kv| {
            kv.key.as_str().starts_with("gen_ai.tool.call.")
                && kv.key.as_str() != "gen_ai.tool.call.id"
        })
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect()
}

/// A call the host drops before it finishes still ends its span with an outcome (`cancelled`,
/// an error), as its audit line says; a tool that panics and one that fails inside end theirs
/// `panicked` and `tool_error`. No span carries the input, the panic's text or the error chain by
/// default; opted in, the result is the text the model read (the generic one), never the card.
#[test]
fn a_dropped_call_and_a_failing_tool_end_their_spans_with_an_outcome_and_no_secret() {
    support::quiet_injected_panics();
    let calls = [
        ("toolu_drop", "hangs"),
        ("toolu_boom", "boom"),
        ("toolu_leak", "leaks"),
    ];
    let spans = traced_failures(&failing().build().unwrap(), &calls);
    let common = |id: &str, tool: &str| {
        format!(
            "gen_ai.operation.name=execute_tool, gen_ai.tool.call.id={id}, \
             gen_ai.tool.name={tool}, gen_ai.tool.type=function"
        )
    };
    let roots: Vec<String> = tree(&spans)
        .into_iter()
        .filter(|s| s.starts_with("execute_tool"))
        .collect();
    assert_eq!(
        roots,
        [
            format!(
                "execute_tool hangs {{error.type=cancelled, {}, toolgate.outcome=cancelled, \
                 toolgate.session.id=sess_otel}} error() Internal",
                common("toolu_drop", "hangs")
            ),
            format!(
                "execute_tool boom {{error.type=panicked, {}, toolgate.outcome=panicked, \
                 toolgate.session.id=sess_otel}} error() Internal",
                common("toolu_boom", "boom")
            ),
            format!(
                "execute_tool leaks {{error.type=tool_error, {}, toolgate.outcome=tool_error, \
                 toolgate.session.id=sess_otel}} error() Internal",
                common("toolu_leak", "leaks")
            ),
        ]
    );
    let everything: String = spans.iter().map(|s| format!("{s:?}")).collect();
    // The card, or two of its groups: a bare "4242" can turn up inside a span's nanosecond
    // timestamps or ids (seen: `988424205`), which would be a false alarm.
    assert!(
        !everything.contains(CARD) && !everything.contains("4242 4242"),
        "a span carries the card: {everything}"
    );

    let opted = failing().span_content().build().unwrap();
    let spans = traced_failures(&opted, &calls);
    let contents: Vec<Vec<String>> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool"))
        .map(content_of)
        .collect();
    let args = format!(r#"gen_ai.tool.call.arguments={{"card":"{CARD}"}}"#);
    assert_eq!(
        contents,
        [
            // Dropped before it ended: nothing recorded of it but its outcome.
            vec![],
            vec![
                args.clone(),
                format!("gen_ai.tool.call.result={}", support::PANIC_TEXT)
            ],
            vec![
                args,
                format!("gen_ai.tool.call.result={INTERNAL_ERROR_MESSAGE}")
            ],
        ]
    );
}
