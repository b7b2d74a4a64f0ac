//! tower (feature `tower`): toolgate's layer stacked with tower's own (a concurrency limit and a
//! timeout, inside and outside), with `tower::ServiceBuilder`. Outcomes and audit lines are
//! exactly those of the same calls through a dispatcher without tower; a timeout inside is the
//! call's `tool_error`, one outside drops the call (`cancelled`).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolgate::tower::{BoxError, HooksLayer, ServiceCaller, SessionService};
use toolgate::{
    CallError, Decision, Dispatcher, HookContext, ToolError, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    content::INTERNAL_ERROR_MESSAGE,
    dispatch::{CallAnswer, Clock, DispatcherBuilder, HookError, PreHookDef, sync_caller},
};
use tower::{Service, ServiceBuilder, ServiceExt};

use crate::support::{HALT_TEXT, TempDir, chained_lines};

/// The tools the tool service serves: `lookup` (its answer names `q`), `broken` (its database is
/// down), `slow` (never answers), `hold` (answers after a short sleep, counting how many run at
/// once).
fn definitions() -> Vec<Value> {
    let q = json!({"type": "object", "properties": {"q": {"type": "string"}},
                   "required": ["q"], "additionalProperties": false});
    let empty = json!({"type": "object", "properties": {}, "additionalProperties": false});
    vec![
        json!({"name": "lookup", "description": "Looks a word up.", "input_schema": q}),
        json!({"name": "broken", "description": "Reads the database.", "input_schema": empty}),
        json!({"name": "slow", "description": "Never answers.", "input_schema": empty}),
        json!({"name": "hold", "description": "Answers after a while.", "input_schema": empty}),
    ]
}

/// The answers of `lookup` and `broken`, shared by the tower service and the plain caller.
fn answer(call: &ToolUse) -> Result<String, ToolError> {
    match call.name.as_str() {
        "lookup" => Ok(format!("found {}", call.input["q"].as_str().unwrap_or(""))),
        _ => Err(ToolError::internal(std::io::Error::other(
            "postgres://app:s3cr3t@db/words: connection refused",
        ))),
    }
}

/// How many `hold` calls run at once, and the most that ever did.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// The tool service: a `Clone` `Service<ToolUse>` answering `ToolResult`s, its errors boxed.
fn tool_service(
    in_flight: Arc<InFlight>,
) -> impl Service<
    ToolUse,
    Response = ToolResult,
    Error = BoxError,
    Future = impl Future<Output = Result<ToolResult, BoxError>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |call: ToolUse| {
        let in_flight = in_flight.clone();
        async move {
            match call.name.as_str() {
                "slow" => std::future::pending().await,
                "hold" => {
                    let now = in_flight.now.fetch_add(1, Ordering::SeqCst) + 1;
                    in_flight.most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    in_flight.now.fetch_sub(1, Ordering::SeqCst);
                    Ok(ToolResult::text(call.id, "held"))
                }
                _ => match answer(&call) {
                    Ok(text) => Ok(ToolResult::text(call.id, text)),
                    // As a library's error reaches a service: a boxed error, not a ToolError.
                    Err(e) => Err(BoxError::from(e.detail().unwrap_or_default())),
                },
            }
        }
    })
}

/// The policy: `lookup` of `secret` is denied; `explode` errors (the hook cannot decide).
fn policy() -> DispatcherBuilder {
    Dispatcher::builder().pre_hook(
        PreHookDef::sync(
            "app::policy::no_secrets",
            10,
            |_env, call: &ToolUse| match call.input["q"].as_str() {
                Some("secret") => Ok(Decision::deny("secret words are not looked up.")),
                Some("explode") => Err(HookError::new("the policy service is down")),
                _ => Ok(Decision::Allow),
            },
        )
        .tools(["lookup"]),
    )
}

fn ctx() -> HookContext {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_600_000);
    HookContext::builder("u_1", "sess_tower")
        .clock(Clock::fixed(at))
        .build()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// The calls both stacks answer: ok, blocked, invalid_input, unknown_tool, tool_error.
fn calls() -> Vec<ToolUse> {
    vec![
        ToolUse::new("toolu_1", "lookup", json!({"q": "apple"})),
        ToolUse::new("toolu_2", "lookup", json!({"q": "secret"})),
        ToolUse::new("toolu_3", "lookup", json!({"word": "apple"})),
        ToolUse::new("toolu_4", "define", json!({"q": "apple"})),
        ToolUse::new("toolu_5", "broken", json!({})),
    ]
}

/// The audit lines of both stacks for [`calls`], exact but for `duration_us` (0) and `prev`.
fn expected_lines() -> Vec<String> {
    let head = r#"{"ts":"2025-12-01T14:40:00Z","session_id":"sess_tower","user_id":"u_1","#;
    let unknown = "Error: unknown tool 'define'. Available tools: broken, hold, lookup, slow.";
    vec![
        format!(
            r#"{head}"tool_use_id":"toolu_1","tool":"lookup","input":{{"q":"apple"}},"outcome":"ok","is_error":false,"content":"found apple","duration_us":0,"hooks":[{{"hook":"app::policy::no_secrets","decision":"allow","duration_us":0}}],"prev":"…"}}"#
        ),
        format!(
            r#"{head}"tool_use_id":"toolu_2","tool":"lookup","input":{{"q":"secret"}},"outcome":"blocked","is_error":true,"content":"BLOCKED: secret words are not looked up.","duration_us":0,"blocked_by":"app::policy::no_secrets","hooks":[{{"hook":"app::policy::no_secrets","decision":"deny","duration_us":0}}],"prev":"…"}}"#
        ),
        format!(
            r#"{head}"tool_use_id":"toolu_3","tool":"lookup","input":{{"word":"apple"}},"outcome":"invalid_input","is_error":true,"content":"{}","duration_us":0,"prev":"…"}}"#,
            INVALID_TEXT
        ),
        format!(
            r#"{head}"tool_use_id":"toolu_4","tool":"define","input":{{"q":"apple"}},"outcome":"unknown_tool","is_error":true,"content":"{unknown}","duration_us":0,"prev":"…"}}"#
        ),
        format!(
            r#"{head}"tool_use_id":"toolu_5","tool":"broken","input":{{}},"outcome":"tool_error","is_error":true,"content":"{INTERNAL_ERROR_MESSAGE}","duration_us":0,"detail":"postgres://app:s3cr3t@db/words: connection refused","prev":"…"}}"#
        ),
    ]
}

/// What the model reads for `{"word": "apple"}`, JSON-escaped as in the audit line (every
/// problem listed, one a line).
const INVALID_TEXT: &str = "Error: invalid input for tool `lookup` (2 problems):\\n- unknown field \
     `word`, expected one of `q`\\n- missing field `q`\\nSend an input that matches the tool's \
     input_schema.";

#[test]
fn a_stack_with_a_concurrency_limit_and_a_timeout_answers_and_audits_as_without_tower() {
    let rt = runtime();

    // Without tower: the same answers from a plain caller the dispatcher owns.
    let plain_dir = TempDir::new("tower-plain");
    let plain = policy()
        .wrap(sync_caller(definitions(), |_ctx, call| answer(call)))
        .audit_log(AuditLog::open(plain_dir.path()).unwrap())
        .build()
        .unwrap();
    let plain = plain.session(ctx());
    let plain_answers: Vec<ToolResult> = calls()
        .iter()
        .map(|c| toolgate::block_on(plain.call(c)).unwrap())
        .collect();

    // With tower: limits and timeouts outside and inside toolgate's layer.
    let dir = TempDir::new("tower-stack");
    let log = AuditLog::open(dir.path()).unwrap();
    let layer = HooksLayer::new(definitions(), ctx(), move || {
        policy().audit_log(log.clone())
    })
    .unwrap();
    let stack = ServiceBuilder::new()
        .concurrency_limit(4)
        .timeout(Duration::from_secs(30))
        .layer(layer)
        .concurrency_limit(2)
        .timeout(Duration::from_secs(30))
        .service(tool_service(Arc::default()));
    let answers: Vec<CallAnswer> = rt.block_on(async {
        let mut out = Vec::new();
        for call in calls() {
            out.push(stack.clone().oneshot(call).await.unwrap());
        }
        out
    });
    let outcomes: Vec<Outcome> = answers.iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Ok,
            Outcome::Blocked,
            Outcome::InvalidInput,
            Outcome::UnknownTool,
            Outcome::ToolError
        ]
    );
    let results: Vec<ToolResult> = answers.into_iter().map(|a| a.result).collect();
    assert_eq!(results, plain_answers);
    drop(stack);
    drop(plain);

    let (tower_lines, _) =
        chained_lines(&dir.path().join("audit_log.jsonl"), crate::support::ZEROS);
    let (plain_lines, _) = chained_lines(
        &plain_dir.path().join("audit_log.jsonl"),
        crate::support::ZEROS,
    );
    assert_eq!(tower_lines, plain_lines);
    assert_eq!(tower_lines, expected_lines());
}

/// A layer over the tool service with the policy, its audit log in `dir`.
fn layer(dir: &TempDir) -> HooksLayer {
    let log = AuditLog::open(dir.path()).unwrap();
    HooksLayer::new(definitions(), ctx(), move || {
        policy().audit_log(log.clone())
    })
    .unwrap()
}

#[test]
fn a_timeout_inside_the_layer_is_the_calls_tool_error_with_its_detail() {
    let dir = TempDir::new("tower-inner-timeout");
    let stack = ServiceBuilder::new()
        .layer(layer(&dir))
        .timeout(Duration::from_millis(50))
        .service(tool_service(Arc::default()));
    let call = ToolUse::new("toolu_1", "slow", json!({}));
    let answer = runtime().block_on(stack.clone().oneshot(call)).unwrap();
    assert_eq!(
        answer,
        CallAnswer::new(
            ToolResult::error("toolu_1", INTERNAL_ERROR_MESSAGE),
            Outcome::ToolError
        )
        .with_detail("request timed out")
    );
    drop(stack);
    let (lines, _) = chained_lines(&dir.path().join("audit_log.jsonl"), crate::support::ZEROS);
    assert_eq!(
        lines,
        [format!(
            r#"{{"ts":"2025-12-01T14:40:00Z","session_id":"sess_tower","user_id":"u_1","tool_use_id":"toolu_1","tool":"slow","input":{{}},"outcome":"tool_error","is_error":true,"content":"{INTERNAL_ERROR_MESSAGE}","duration_us":0,"detail":"request timed out","prev":"…"}}"#
        )]
    );
}

#[test]
fn a_timeout_outside_the_layer_drops_the_call_which_is_audited_cancelled() {
    let dir = TempDir::new("tower-outer-timeout");
    let stack = ServiceBuilder::new()
        .timeout(Duration::from_millis(50))
        .layer(layer(&dir))
        .service(tool_service(Arc::default()));
    let call = ToolUse::new("toolu_1", "slow", json!({}));
    let error = runtime().block_on(stack.clone().oneshot(call)).unwrap_err();
    assert!(error.is::<tower::timeout::error::Elapsed>(), "{error}");
    drop(stack);
    let (lines, _) = chained_lines(&dir.path().join("audit_log.jsonl"), crate::support::ZEROS);
    assert_eq!(
        lines,
        [
            r#"{"ts":"2025-12-01T14:40:00Z","session_id":"sess_tower","user_id":"u_1","tool_use_id":"toolu_1","tool":"slow","input":{},"outcome":"cancelled","is_error":false,"content":"","duration_us":0,"detail":"the host dropped the call before it finished (while the tool ran)","prev":"…"}"#
        ]
    );
}

/// Runs three `hold` calls at once through `stack` on one thread and returns their outcomes.
fn three_at_once<S>(stack: S) -> Vec<Outcome>
where
    S: Service<ToolUse, Response = CallAnswer> + Clone + Send + 'static,
    S::Error: std::fmt::Debug + Send,
    S::Future: Send,
{
    runtime().block_on(async move {
        let tasks: Vec<_> = (1..=3)
            .map(|i| {
                let call = ToolUse::new(format!("toolu_{i}"), "hold", json!({}));
                tokio::spawn(stack.clone().oneshot(call))
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap().unwrap().outcome);
        }
        outcomes
    })
}

#[test]
fn a_concurrency_limit_inside_or_outside_the_layer_runs_one_call_at_a_time() {
    // Without a limit, the three calls overlap (so the two checks below can fail).
    let dir = TempDir::new("tower-no-limit");
    let in_flight = Arc::new(InFlight::default());
    let unlimited = ServiceBuilder::new()
        .layer(layer(&dir))
        .service(tool_service(in_flight.clone()));
    assert_eq!(three_at_once(unlimited), [Outcome::Ok; 3]);
    assert_eq!(in_flight.most.load(Ordering::SeqCst), 3);

    for inside in [true, false] {
        let dir = TempDir::new("tower-limit");
        let in_flight = Arc::new(InFlight::default());
        let outcomes = if inside {
            three_at_once(
                ServiceBuilder::new()
                    .layer(layer(&dir))
                    .concurrency_limit(1)
                    .service(tool_service(in_flight.clone())),
            )
        } else {
            three_at_once(
                ServiceBuilder::new()
                    .concurrency_limit(1)
                    .layer(layer(&dir))
                    .service(tool_service(in_flight.clone())),
            )
        };
        assert_eq!(outcomes, [Outcome::Ok; 3], "inside: {inside}");
        assert_eq!(in_flight.most.load(Ordering::SeqCst), 1, "inside: {inside}");
        let (lines, _) = chained_lines(&dir.path().join("audit_log.jsonl"), crate::support::ZEROS);
        let mut ids: Vec<String> = lines
            .iter()
            .map(|l| {
                assert!(
                    l.contains(r#""outcome":"ok","is_error":false,"content":"held""#),
                    "{l}"
                );
                serde_json::from_str::<Value>(&l.replace('…', "")).unwrap()["tool_use_id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        ids.sort();
        assert_eq!(ids, ["toolu_1", "toolu_2", "toolu_3"], "inside: {inside}");
    }
}

#[test]
fn a_hook_that_cannot_decide_is_the_services_halt_and_the_tool_service_is_not_called() {
    let dir = TempDir::new("tower-halt");
    let calls_seen = Arc::new(AtomicUsize::new(0));
    let seen = calls_seen.clone();
    let counting = tower::service_fn(move |call: ToolUse| {
        seen.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok::<_, Infallible>(ToolResult::text(call.id, "ran")))
    });
    let mut service = ServiceBuilder::new().layer(layer(&dir)).service(counting);
    let call = ToolUse::new("toolu_1", "lookup", json!({"q": "explode"}));
    let halt = runtime()
        .block_on(async { service.ready().await.unwrap().call(call).await })
        .unwrap_err()
        .into_halt()
        .expect("a halt");
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(halt.hook, "app::policy::no_secrets");
    assert_eq!(halt.detail, "the policy service is down");
    assert_eq!(
        halt.result(),
        Some(&ToolResult::error("toolu_1", HALT_TEXT))
    );
    assert_eq!(calls_seen.load(Ordering::SeqCst), 0);
    // The session behind the service: one call, halted.
    let summary = service.service().unwrap().session().summary_so_far();
    assert_eq!(summary.calls, 1);
    assert_eq!(summary.outcomes.get(&Outcome::HookFailed), Some(&1));
}

#[test]
fn a_session_service_answers_call_answers_and_is_always_ready() {
    let dispatcher = policy()
        .wrap(ServiceCaller::new(
            definitions(),
            tool_service(Arc::default()),
        ))
        .build()
        .unwrap();
    let mut service = SessionService::new(dispatcher.session(ctx()));
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(matches!(
        service.poll_ready(&mut cx),
        std::task::Poll::Ready(Ok(()))
    ));
    let call = ToolUse::new("toolu_1", "lookup", json!({"q": "secret"}));
    let answer = runtime().block_on(service.call(call.clone())).unwrap();
    let denied = ToolResult::error("toolu_1", "BLOCKED: secret words are not looked up.");
    assert_eq!(
        answer,
        CallAnswer::new(denied.clone(), Outcome::Blocked)
            .with_blocked_by("app::policy::no_secrets")
    );
    // A retry of the id is answered from the session's memory, as `Session::call` answers it.
    let again = runtime().block_on(service.call(call)).unwrap();
    assert_eq!(
        again,
        CallAnswer::new(denied, Outcome::Blocked).with_detail(
            "replayed from the session's memory: this tool_use id was answered before, so \
             nothing ran again"
        )
    );
    let empty = ToolUse::new("", "lookup", json!({"q": "a"}));
    let error = runtime().block_on(service.call(empty)).unwrap_err();
    assert!(matches!(error, CallError::EmptyId), "{error:?}");
}

#[test]
fn a_policy_that_does_not_build_fails_the_layer_at_start_up() {
    let error = HooksLayer::new(definitions(), ctx(), || {
        Dispatcher::builder().pre_hook(
            PreHookDef::sync("app::policy::typo", 1, |_env, _call| Ok(Decision::Allow))
                .tools(["lookpu"]),
        )
    })
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the dispatcher cannot be built (1 problem):\n- hook `app::policy::typo` matches tool \
         `lookpu`, which is registered nowhere"
    );
}
