//! Deadlines, cancellation and Stop: async hooks and tools past their deadline (`hook_timeout`
//! halts and is never a denial, `tool_timeout`), deadlines on by default (10 s, 60 s) and off
//! only by a named call, the default timer that needs no runtime, sync code that cannot be cut,
//! timers that fail, `TokioTimer` on a real runtime, call futures dropped unfinished
//! (`cancelled`), and Stop exactly once. No outcome depends on the machine's speed: a hook or
//! tool meant to be cut hangs forever, one meant to finish finishes on its first polls, and
//! tests of the default deadlines use a timer the test controls.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{
    HALT_TEXT, NOT_RUN_HALT, PanickingTimer, TempDir, ThreadTimer, assistant, halt_of, hang,
    json_lines, poll_once, quiet_injected_panics, tool_timeout_text, yield_once,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolgate::{
    CallError, Decision, Dispatcher, HookContext, RespondError, ToolError, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    content::INTERNAL_ERROR_MESSAGE,
    dispatch::{
        BoxFuture, DispatcherBuilder, Env, HookError, PostHookDef, PreHookDef, StopHookDef, ToolDef,
    },
};

/// Arguments of the test tools.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// Any text.
    #[allow(dead_code)]
    text: Option<String>,
}

/// What the tools and hooks did, shared through `State<Journal>`.
#[derive(Default)]
struct Journal {
    /// Tool bodies entered.
    started: AtomicUsize,
    /// Tool bodies that reached their end.
    finished: AtomicUsize,
    /// Tool futures dropped before their end (cut at a deadline or cancelled).
    dropped: AtomicUsize,
    /// Stop hook runs.
    stops: AtomicUsize,
    /// Sync observer calls with outcome `cancelled`.
    cancelled_seen: AtomicUsize,
}

/// Counts a tool future dropped before it finished.
struct DropFlag<'a>(&'a Journal, bool);
impl Drop for DropFlag<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn journal(env: &Env<'_>) -> Arc<Journal> {
    env.state::<Journal>().unwrap().into_arc()
}

/// A sync tool that records that it ran.
fn quick(env: Env<'_>, _args: Args) -> Result<String, ToolError> {
    let j = journal(&env);
    j.started.fetch_add(1, Ordering::SeqCst);
    j.finished.fetch_add(1, Ordering::SeqCst);
    Ok("done".into())
}

/// An async tool that never finishes.
fn hung_tool(env: Env<'_>, _args: Args) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move {
        let j = journal(&env);
        j.started.fetch_add(1, Ordering::SeqCst);
        let mut flag = DropFlag(&j, false);
        hang::<()>().await;
        flag.1 = true;
        j.finished.fetch_add(1, Ordering::SeqCst);
        Ok("never".into())
    })
}

/// An async tool that yields once and finishes.
fn yielding_tool(env: Env<'_>, _args: Args) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move {
        let j = journal(&env);
        j.started.fetch_add(1, Ordering::SeqCst);
        yield_once().await;
        j.finished.fetch_add(1, Ordering::SeqCst);
        Ok("yielded".into())
    })
}

/// An "async" tool that blocks its thread for 30 ms without an `.await` that yields.
fn blocking_async_tool(env: Env<'_>, _args: Args) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move {
        let j = journal(&env);
        j.started.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(30));
        j.finished.fetch_add(1, Ordering::SeqCst);
        Ok("blocked the thread".into())
    })
}

fn hung_hook<'a>(_env: Env<'a>, _call: &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>> {
    Box::pin(async {
        hang::<()>().await;
        Ok(Decision::Allow)
    })
}

fn yielding_deny<'a>(
    _env: Env<'a>,
    _call: &'a ToolUse,
) -> BoxFuture<'a, Result<Decision, HookError>> {
    Box::pin(async {
        yield_once().await;
        Ok(Decision::deny("not today."))
    })
}

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef::sync("quick", "Answers at once.", quick),
        ToolDef::new_async("hung", "Never answers.", hung_tool),
        ToolDef::new_async("yielding", "Yields once, then answers.", yielding_tool),
        ToolDef::new_async("blocking", "Blocks its thread.", blocking_async_tool),
    ]
}

fn builder(j: &Arc<Journal>) -> DispatcherBuilder {
    let mut b = Dispatcher::builder().state_arc(Arc::clone(j));
    for t in tools() {
        b = b.tool(t);
    }
    let counter = Arc::clone(j);
    b.stop_hook(StopHookDef::new("tests::count_stops", move |_env, _s| {
        counter.stops.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }))
}

fn ctx() -> HookContext {
    HookContext::builder("u_001", "sess_deadlines").build()
}

fn use_of(id: &str, tool: &str) -> ToolUse {
    ToolUse::new(id, tool, json!({}))
}

#[test]
fn async_hook_past_its_deadline_halts_as_hook_timeout_not_as_a_denial() {
    let j = Arc::new(Journal::default());
    let dir = TempDir::new("hook-timeout");
    let d = builder(&j)
        .pre_hook(
            PreHookDef::new_async("tests::slow_policy", 1, hung_hook)
                .timeout(Duration::from_millis(20)),
        )
        .timer(ThreadTimer)
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let s = d.session(ctx());

    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_1", "quick"))));
    assert_eq!(halt.outcome, Outcome::HookTimeout);
    assert_eq!(halt.hook, "tests::slow_policy");
    assert_eq!(halt.detail, "the hook ran past its deadline of 20 ms");
    assert_eq!(
        halt.to_string(),
        "agent halted: PreToolUse hook `tests::slow_policy` timed out on tool_use `toolu_1`: \
         the hook ran past its deadline of 20 ms"
    );
    let answer = halt.result().unwrap();
    assert!(answer.is_error);
    assert_eq!(answer.content_text(), HALT_TEXT);
    assert_eq!(j.started.load(Ordering::SeqCst), 0, "the tool must not run");

    // Through `respond`: the halt answers every block; the later one is not run.
    let message = assistant(
        json!([
            {"type": "tool_use", "id": "toolu_2", "name": "quick", "input": {}},
            {"type": "tool_use", "id": "toolu_3", "name": "quick", "input": {}}
        ]),
        "tool_use",
    );
    let Err(RespondError::Call(CallError::Halt(halt))) = toolgate::block_on(s.respond(&message))
    else {
        panic!("a timed-out hook must halt the agent");
    };
    assert_eq!(halt.outcome, Outcome::HookTimeout);
    let results: Vec<_> = halt.answer().tool_results().collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].tool_use_id, "toolu_2");
    assert_eq!(results[0].content_text(), HALT_TEXT);
    assert_eq!(results[1].tool_use_id, "toolu_3");
    assert!(results[1].is_error);
    assert_eq!(results[1].content_text(), NOT_RUN_HALT);
    assert_eq!(j.started.load(Ordering::SeqCst), 0);

    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::HookTimeout), Some(&2));
    assert_eq!(summary.outcomes.get(&Outcome::NotRun), Some(&1));
    assert_eq!(summary.outcomes.get(&Outcome::Blocked), None);
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    let outcomes: Vec<&str> = lines
        .iter()
        .map(|l| l["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["hook_timeout", "hook_timeout", "not_run"]);
    assert_eq!(lines[0]["blocked_by"], "tests::slow_policy");
    assert_eq!(
        lines[0]["detail"],
        "the hook ran past its deadline of 20 ms"
    );
    assert_eq!(lines[0]["is_error"], true);
}

#[test]
fn the_dispatcher_default_hook_deadline_applies_and_a_hook_deadline_overrides_it() {
    let j = Arc::new(Journal::default());
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::a_default", 1, hung_hook).tools(["quick"]))
        .pre_hook(
            PreHookDef::new_async("tests::b_own", 1, hung_hook)
                .tools(["yielding"])
                .timeout(Duration::from_millis(15)),
        )
        .timer(ThreadTimer)
        .hook_timeout(Duration::from_millis(25))
        .build()
        .unwrap();
    let s = d.session(ctx());
    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_1", "quick"))));
    assert_eq!(
        (halt.outcome, halt.hook.as_str()),
        (Outcome::HookTimeout, "tests::a_default")
    );
    assert_eq!(halt.detail, "the hook ran past its deadline of 25 ms");
    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_2", "yielding"))));
    assert_eq!(
        (halt.outcome, halt.hook.as_str()),
        (Outcome::HookTimeout, "tests::b_own")
    );
    assert_eq!(halt.detail, "the hook ran past its deadline of 15 ms");
    assert_eq!(j.started.load(Ordering::SeqCst), 0);
}

#[test]
fn a_hook_that_decides_in_time_is_obeyed_a_denial_stays_blocked() {
    let j = Arc::new(Journal::default());
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::deny_later", 1, yielding_deny).tools(["quick"]))
        .timer(ThreadTimer)
        .hook_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let s = d.session(ctx());
    let r = toolgate::block_on(s.call(&use_of("toolu_1", "quick"))).unwrap();
    assert!(r.is_error);
    assert_eq!(r.content_text(), "BLOCKED: not today.");
    // The race against a 30 s deadline is won by the tool, which yields first.
    let r = toolgate::block_on(s.call(&use_of("toolu_2", "yielding"))).unwrap();
    assert_eq!((r.is_error, r.content_text().as_ref()), (false, "yielded"));
    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::Blocked), Some(&1));
    assert_eq!(summary.outcomes.get(&Outcome::Ok), Some(&1));
    assert_eq!(summary.outcomes.get(&Outcome::HookTimeout), None);
}

#[test]
fn sync_code_cannot_be_cut() {
    let j = Arc::new(Journal::default());
    let d = builder(&j)
        .pre_hook(PreHookDef::sync(
            "tests::slow_sync_hook",
            1,
            |_env, _call| {
                std::thread::sleep(Duration::from_millis(30));
                Ok(Decision::Allow)
            },
        ))
        .timer(ThreadTimer)
        .hook_timeout(Duration::from_millis(1))
        .tool_timeout(Duration::from_millis(1))
        .build()
        .unwrap();
    let s = d.session(ctx());
    // A sync hook and an async tool that blocks its thread both run to their end: the deadline
    // only acts at an `.await` that yields, and neither has one.
    let r = toolgate::block_on(s.call(&use_of("toolu_1", "blocking"))).unwrap();
    assert_eq!(
        (r.is_error, r.content_text().as_ref()),
        (false, "blocked the thread")
    );
    assert_eq!(j.finished.load(Ordering::SeqCst), 1);
    assert_eq!(s.end().outcomes.get(&Outcome::Ok), Some(&1));
}

#[test]
fn async_tool_past_its_deadline_is_tool_timeout_and_is_dropped() {
    let j = Arc::new(Journal::default());
    let dir = TempDir::new("tool-timeout");
    let d = builder(&j)
        .tool(
            ToolDef::new_async("hung_own", "Never answers; own deadline.", hung_tool)
                .timeout(Duration::from_millis(15)),
        )
        .timer(ThreadTimer)
        .tool_timeout(Duration::from_millis(20))
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let s = d.session(ctx());
    let r = toolgate::block_on(s.call(&use_of("toolu_1", "hung"))).unwrap();
    assert_eq!(r, ToolResult::error("toolu_1", tool_timeout_text(20)));
    let r = toolgate::block_on(s.call(&use_of("toolu_2", "hung_own"))).unwrap();
    assert_eq!(r, ToolResult::error("toolu_2", tool_timeout_text(15)));
    assert_eq!(j.started.load(Ordering::SeqCst), 2);
    assert_eq!(j.finished.load(Ordering::SeqCst), 0);
    assert_eq!(
        j.dropped.load(Ordering::SeqCst),
        2,
        "a cut tool's future is dropped"
    );
    // A sync tool is not raced at all.
    let r = toolgate::block_on(s.call(&use_of("toolu_3", "quick"))).unwrap();
    assert_eq!(r.content_text(), "done");
    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::ToolTimeout), Some(&2));
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(lines[0]["outcome"], "tool_timeout");
    assert_eq!(
        lines[0]["detail"],
        "the tool ran past its deadline of 20 ms"
    );
    assert_eq!(
        lines[1]["detail"],
        "the tool ran past its deadline of 15 ms"
    );
    assert_eq!(lines[2]["outcome"], "ok");
}

/// A timer that records every sleep it is asked for and whose deadlines have all passed.
#[derive(Default)]
struct RecordingTimer(Arc<std::sync::Mutex<Vec<Duration>>>);

impl toolgate::dispatch::Timer for RecordingTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.0.lock().unwrap().push(duration);
        Box::pin(std::future::ready(()))
    }
}

#[test]
fn async_hooks_and_tools_have_a_deadline_by_default_10_s_and_60_s() {
    assert_eq!(
        DispatcherBuilder::DEFAULT_HOOK_TIMEOUT,
        Duration::from_secs(10)
    );
    assert_eq!(
        DispatcherBuilder::DEFAULT_TOOL_TIMEOUT,
        Duration::from_secs(60)
    );
    let j = Arc::new(Journal::default());
    let asked = RecordingTimer::default();
    let sleeps = Arc::clone(&asked.0);
    let dir = TempDir::new("default-deadlines");
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::slow_policy", 1, hung_hook).tools(["quick"]))
        .pre_hook(PreHookDef::sync("tests::sync_policy", 2, |_env, _call| {
            Ok(Decision::Allow)
        }))
        .timer(asked)
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let s = d.session(ctx());
    // No deadline was configured: the hung hook is cut at the default 10 s (the test's timer
    // says every deadline has passed), and the call halts without running the tool.
    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_1", "quick"))));
    assert_eq!(halt.outcome, Outcome::HookTimeout);
    assert_eq!(halt.hook, "tests::slow_policy");
    assert_eq!(halt.detail, "the hook ran past its deadline of 10000 ms");
    assert_eq!(halt.result().unwrap().content_text(), HALT_TEXT);
    assert_eq!(j.started.load(Ordering::SeqCst), 0, "the tool must not run");
    // The hung tool is cut at the default 60 s.
    let r = toolgate::block_on(s.call(&use_of("toolu_2", "hung"))).unwrap();
    assert_eq!(r, ToolResult::error("toolu_2", tool_timeout_text(60_000)));
    assert_eq!(j.dropped.load(Ordering::SeqCst), 1);
    // Sync hooks and tools ask for no sleep: only the async hook and the async tool did.
    assert_eq!(
        *sleeps.lock().unwrap(),
        [Duration::from_secs(10), Duration::from_secs(60)]
    );
    s.end();
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(
        lines
            .iter()
            .map(|l| (
                l["outcome"].as_str().unwrap(),
                l["detail"].as_str().unwrap()
            ))
            .collect::<Vec<_>>(),
        [
            ("hook_timeout", "the hook ran past its deadline of 10000 ms"),
            ("tool_timeout", "the tool ran past its deadline of 60000 ms"),
        ]
    );
}

#[test]
fn turning_the_default_deadlines_off_takes_the_loudly_named_calls() {
    let j = Arc::new(Journal::default());
    let asked = RecordingTimer::default();
    let sleeps = Arc::clone(&asked.0);
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::a_slow_policy", 1, hung_hook).tools(["quick"]))
        .pre_hook(
            PreHookDef::new_async("tests::b_own_deadline", 1, hung_hook)
                .tools(["yielding"])
                .timeout(Duration::from_millis(15)),
        )
        .tool(
            ToolDef::new_async("hung_own", "Never answers; own deadline.", hung_tool)
                .timeout(Duration::from_millis(25)),
        )
        .timer(asked)
        .allow_hanging_hooks()
        .allow_hanging_tools()
        .build()
        .unwrap();
    let s = d.session(ctx());
    // The hook without a deadline of its own now has none: the call waits (polled twice, still
    // pending), and no sleep was asked for.
    {
        let call = use_of("toolu_1", "quick");
        let mut fut = pin!(s.call(&call));
        assert!(poll_once(fut.as_mut()).is_none());
        assert!(poll_once(fut.as_mut()).is_none());
    }
    assert_eq!(*sleeps.lock().unwrap(), []);
    // So does the tool without one.
    {
        let call = use_of("toolu_2", "hung");
        let mut fut = pin!(s.call(&call));
        assert!(poll_once(fut.as_mut()).is_none());
        assert!(poll_once(fut.as_mut()).is_none());
    }
    assert_eq!(*sleeps.lock().unwrap(), []);
    // A hook's or tool's own deadline still applies.
    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_3", "yielding"))));
    assert_eq!(halt.detail, "the hook ran past its deadline of 15 ms");
    let r = toolgate::block_on(s.call(&use_of("toolu_4", "hung_own"))).unwrap();
    assert_eq!(r, ToolResult::error("toolu_4", tool_timeout_text(25)));
    assert_eq!(
        *sleeps.lock().unwrap(),
        [Duration::from_millis(15), Duration::from_millis(25)]
    );

    // A later setting turns the deadline back on.
    let asked = RecordingTimer::default();
    let sleeps = Arc::clone(&asked.0);
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::a_slow_policy", 1, hung_hook).tools(["quick"]))
        .timer(asked)
        .allow_hanging_hooks()
        .hook_timeout(Duration::from_millis(40))
        .build()
        .unwrap();
    let halt = halt_of(toolgate::block_on(
        d.session(ctx()).call(&use_of("toolu_5", "quick")),
    ));
    assert_eq!(halt.detail, "the hook ran past its deadline of 40 ms");
    assert_eq!(*sleeps.lock().unwrap(), [Duration::from_millis(40)]);
}

#[test]
fn the_default_timer_needs_no_runtime_and_no_setting() {
    // No `.timer(…)`: the dispatcher's own timer (one helper thread) cuts a hung hook and a
    // hung tool under `block_on`. Both hang forever, so the outcome does not depend on speed.
    let j = Arc::new(Journal::default());
    let d = builder(&j)
        .pre_hook(
            PreHookDef::new_async("tests::slow_policy", 1, hung_hook)
                .tools(["quick"])
                .timeout(Duration::from_millis(20)),
        )
        .tool_timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    let s = d.session(ctx());
    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_1", "quick"))));
    assert_eq!(
        (halt.outcome, halt.detail.as_str()),
        (
            Outcome::HookTimeout,
            "the hook ran past its deadline of 20 ms"
        )
    );
    let r = toolgate::block_on(s.call(&use_of("toolu_2", "hung"))).unwrap();
    assert_eq!(r, ToolResult::error("toolu_2", tool_timeout_text(20)));
    assert_eq!(j.started.load(Ordering::SeqCst), 1);
    assert_eq!(j.dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panicking_timer_fails_closed() {
    quiet_injected_panics();
    let j = Arc::new(Journal::default());
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::slow_policy", 1, hung_hook).tools(["quick"]))
        .timer(PanickingTimer)
        .hook_timeout(Duration::from_millis(5))
        .tool_timeout(Duration::from_millis(5))
        .build()
        .unwrap();
    let s = d.session(ctx());
    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_1", "quick"))));
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(
        halt.detail,
        "the dispatcher's timer panicked: injected fault: the timer is broken"
    );
    assert_eq!(j.started.load(Ordering::SeqCst), 0);
    let r = toolgate::block_on(s.call(&use_of("toolu_2", "hung"))).unwrap();
    assert!(r.is_error);
    assert_eq!(r.content_text(), INTERNAL_ERROR_MESSAGE);
    assert_eq!(s.end().outcomes.get(&Outcome::ToolError), Some(&1));
}

mod with_macros {
    //! `#[pre_hook(timeout_ms = N)]` and `#[tool(timeout_ms = N)]`.
    use toolgate::{Decision, pre_hook, tool};

    /// Looks up an order in a backend that never answers.
    #[tool(timeout_ms = 20)]
    pub(crate) async fn slow_lookup(
        /// The order id.
        order_id: String,
    ) -> String {
        super::hang::<()>().await;
        order_id
    }

    /// Returns the order id at once.
    #[tool]
    pub(crate) async fn fast_lookup(
        /// The order id.
        order_id: String,
    ) -> String {
        order_id
    }

    /// A fraud check that never answers.
    #[pre_hook(order = 1, tools = [fast_lookup], timeout_ms = 20)]
    pub(crate) async fn fraud_check() -> Decision {
        super::hang::<()>().await;
        Decision::Allow
    }
}

#[test]
fn macro_deadlines_are_enforced() {
    let d = Dispatcher::builder()
        .registered_under(format!("{}::with_macros", module_path!()))
        .timer(ThreadTimer)
        .build()
        .unwrap();
    let s = d.session(ctx());
    let call = ToolUse::new("toolu_1", "slow_lookup", json!({"order_id": "o_1"}));
    let r = toolgate::block_on(s.call(&call)).unwrap();
    assert_eq!(r, ToolResult::error("toolu_1", tool_timeout_text(20)));
    let call = ToolUse::new("toolu_2", "fast_lookup", json!({"order_id": "o_1"}));
    let halt = halt_of(toolgate::block_on(s.call(&call)));
    assert_eq!(halt.outcome, Outcome::HookTimeout);
    assert_eq!(halt.hook, "runtime::deadlines::with_macros::fraud_check");
    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::ToolTimeout), Some(&1));
    assert_eq!(summary.outcomes.get(&Outcome::HookTimeout), Some(&1));

    // The same items with the default timer: no `.timer(…)` needed for `timeout_ms`.
    let d = Dispatcher::builder()
        .registered_under(format!("{}::with_macros", module_path!()))
        .build()
        .unwrap();
    let s = d.session(ctx());
    let call = ToolUse::new("toolu_3", "slow_lookup", json!({"order_id": "o_1"}));
    let r = toolgate::block_on(s.call(&call)).unwrap();
    assert_eq!(r, ToolResult::error("toolu_3", tool_timeout_text(20)));
    let call = ToolUse::new("toolu_4", "fast_lookup", json!({"order_id": "o_1"}));
    let halt = halt_of(toolgate::block_on(s.call(&call)));
    assert_eq!(halt.detail, "the hook ran past its deadline of 20 ms");
}

#[test]
fn tokio_timer_cuts_hooks_and_tools_on_a_tokio_runtime() {
    let j = Arc::new(Journal::default());
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::slow_policy", 1, hung_hook).tools(["quick"]))
        .timer(toolgate::dispatch::TokioTimer)
        .hook_timeout(Duration::from_millis(20))
        .tool_timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let s = d.session(ctx());
    let halt = halt_of(rt.block_on(s.call(&use_of("toolu_1", "quick"))));
    assert_eq!(halt.outcome, Outcome::HookTimeout);
    let r = rt.block_on(s.call(&use_of("toolu_2", "hung"))).unwrap();
    assert_eq!(r, ToolResult::error("toolu_2", tool_timeout_text(20)));
    let r = rt.block_on(s.call(&use_of("toolu_3", "yielding"))).unwrap();
    assert_eq!(r.content_text(), "yielded");
    assert_eq!(j.dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn tokio_timer_outside_a_runtime_fails_closed_instead_of_panicking() {
    quiet_injected_panics();
    let j = Arc::new(Journal::default());
    let d = builder(&j)
        .pre_hook(PreHookDef::new_async("tests::slow_policy", 1, hung_hook).tools(["quick"]))
        .timer(toolgate::dispatch::TokioTimer)
        .hook_timeout(Duration::from_millis(20))
        .build()
        .unwrap();
    let s = d.session(ctx());
    let halt = halt_of(toolgate::block_on(s.call(&use_of("toolu_1", "quick"))));
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(halt.result().unwrap().content_text(), HALT_TEXT);
    // The rest of the detail is tokio's own panic text, worded by tokio (not by toolgate) and
    // free to change between its releases: only its stable part is checked.
    assert!(
        halt.detail.starts_with("the dispatcher's timer panicked: ")
            && halt.detail.contains("Tokio 1.x runtime"),
        "{}",
        halt.detail
    );
    assert_eq!(j.started.load(Ordering::SeqCst), 0);
}

// ---- cancellation and Stop ----

fn cancel_builder(j: &Arc<Journal>, dir: &TempDir) -> DispatcherBuilder {
    let seen = Arc::clone(j);
    builder(j)
        .pre_hook(PreHookDef::new_async("tests::waits", 1, hung_hook).tools(["yielding"]))
        .post_hook(PostHookDef::sync("tests::watch", move |_env, record| {
            if record.outcome == Outcome::Cancelled {
                assert!(record.result.is_none());
                seen.cancelled_seen.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        }))
        .audit_log(AuditLog::open(dir.path()).unwrap())
}

#[test]
fn a_call_dropped_while_a_hook_runs_leaves_one_cancelled_line_and_stop_runs_once() {
    let j = Arc::new(Journal::default());
    let dir = TempDir::new("cancel-hook");
    let d = cancel_builder(&j, &dir).build().unwrap();
    let s = d.session(ctx());
    let call = ToolUse::new("toolu_1", "yielding", json!(""));
    {
        let mut fut = pin!(s.call(&call));
        assert!(poll_once(fut.as_mut()).is_none());
    } // dropped unfinished
    assert_eq!(j.started.load(Ordering::SeqCst), 0);
    assert_eq!(j.cancelled_seen.load(Ordering::SeqCst), 1);
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["tool_use_id"], "toolu_1");
    assert_eq!(lines[0]["outcome"], "cancelled");
    assert_eq!(lines[0]["is_error"], false);
    assert_eq!(lines[0]["content"], "");
    assert_eq!(
        lines[0]["input"],
        json!({}),
        "the input after normalization"
    );
    assert_eq!(
        lines[0]["detail"],
        "the host dropped the call before it finished (before the tool ran)"
    );
    assert_eq!(
        s.summary_so_far().outcomes.get(&Outcome::Cancelled),
        Some(&1)
    );
    drop(s); // never ended: Stop runs from drop, once
    assert_eq!(j.stops.load(Ordering::SeqCst), 1);
    let summaries = json_lines(&dir.path().join("session_summaries.jsonl"));
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0]["calls"], 1);
    assert_eq!(summaries[0]["outcomes"], json!({"cancelled": 1}));
}

#[test]
fn a_call_dropped_while_the_tool_runs_is_cancelled_and_the_tool_future_dropped() {
    let j = Arc::new(Journal::default());
    let dir = TempDir::new("cancel-tool");
    let d = cancel_builder(&j, &dir).build().unwrap();
    let s = d.session(ctx());
    let call = use_of("toolu_1", "hung");
    {
        let mut fut = pin!(s.call(&call));
        assert!(poll_once(fut.as_mut()).is_none());
        assert!(poll_once(fut.as_mut()).is_none());
    }
    assert_eq!(j.started.load(Ordering::SeqCst), 1);
    assert_eq!(j.dropped.load(Ordering::SeqCst), 1);
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(lines.len(), 1);
    assert_eq!(
        lines[0]["detail"],
        "the host dropped the call before it finished (while the tool ran)"
    );
    let first = s.end();
    let again = s.end();
    assert_eq!(first, again);
    drop(s);
    assert_eq!(
        j.stops.load(Ordering::SeqCst),
        1,
        "end twice and drop: Stop once"
    );
    assert_eq!(
        json_lines(&dir.path().join("session_summaries.jsonl")).len(),
        1
    );
}

#[test]
fn a_respond_dropped_mid_message_gives_every_block_one_line_in_order() {
    let j = Arc::new(Journal::default());
    let dir = TempDir::new("cancel-respond");
    let d = cancel_builder(&j, &dir).build().unwrap();
    let s = d.session(ctx());
    let message = assistant(
        json!([
            {"type": "text", "text": "Three calls."},
            {"type": "tool_use", "id": "toolu_1", "name": "quick", "input": {}},
            {"type": "tool_use", "id": "toolu_2", "name": "hung", "input": {}},
            {"type": "tool_use", "id": "toolu_3", "name": "quick", "input": {}},
            {"type": "tool_use", "id": "toolu_4", "name": "nope", "input": {}}
        ]),
        "tool_use",
    );
    {
        let mut fut = pin!(s.respond(&message));
        assert!(poll_once(fut.as_mut()).is_none());
    }
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    let got: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["tool_use_id"].as_str().unwrap(),
                l["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("toolu_1", "ok"),
            ("toolu_2", "cancelled"),
            ("toolu_3", "cancelled"),
            ("toolu_4", "cancelled")
        ]
    );
    assert_eq!(
        lines[2]["detail"],
        "the host dropped the call before it finished (before it started, while an earlier \
         block of its message ran)"
    );
    assert_eq!(j.finished.load(Ordering::SeqCst), 1, "toolu_3 never ran");
    assert_eq!(j.cancelled_seen.load(Ordering::SeqCst), 3);
    let summary = s.end();
    assert_eq!(summary.calls, 4);
    assert_eq!(summary.outcomes.get(&Outcome::Cancelled), Some(&3));
    assert_eq!(summary.tools.get("quick"), Some(&2));
    assert_eq!(j.stops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_call_future_never_polled_did_nothing_and_records_nothing() {
    let j = Arc::new(Journal::default());
    let dir = TempDir::new("cancel-unpolled");
    let d = cancel_builder(&j, &dir).build().unwrap();
    let s = d.session(ctx());
    let call = use_of("toolu_1", "quick");
    drop(s.call(&call));
    assert_eq!(s.end().calls, 0);
    assert!(json_lines(&dir.path().join("audit_log.jsonl")).is_empty());
    assert_eq!(j.started.load(Ordering::SeqCst), 0);
}

fn hung_observer<'a>(
    _env: Env<'a>,
    _record: &'a toolgate::audit::CallRecord<'a>,
) -> BoxFuture<'a, Result<(), HookError>> {
    hang()
}

#[test]
fn a_call_dropped_while_an_async_observer_runs_is_seen_once_by_every_later_sync_observer() {
    let j = Arc::new(Journal::default());
    let dir = TempDir::new("cancel-observer");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (before, after) = (Arc::clone(&seen), Arc::clone(&seen));
    let d = builder(&j)
        .post_hook(PostHookDef::sync("tests::a_before", move |_env, r| {
            before.lock().unwrap().push(("a_before", r.outcome));
            Ok(())
        }))
        .post_hook(PostHookDef::new_async("tests::b_hangs", hung_observer))
        .post_hook(PostHookDef::sync("tests::c_after", move |_env, r| {
            after.lock().unwrap().push(("c_after", r.outcome));
            Ok(())
        }))
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let s = d.session(ctx());
    let call = use_of("toolu_1", "quick");
    {
        let mut fut = pin!(s.call(&call));
        assert!(poll_once(fut.as_mut()).is_none());
    }
    // The tool ran; the observer before the hung one saw the result, the one after it saw
    // the call once, as cancelled; the audit log has one line.
    assert_eq!(j.finished.load(Ordering::SeqCst), 1);
    assert_eq!(
        *seen.lock().unwrap(),
        [("a_before", Outcome::Ok), ("c_after", Outcome::Cancelled)]
    );
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(lines.len(), 1);
    assert_eq!(
        lines[0]["detail"],
        "the host dropped the call before it finished (while the observers ran)"
    );
    assert_eq!(s.end().outcomes.get(&Outcome::Cancelled), Some(&1));
}
