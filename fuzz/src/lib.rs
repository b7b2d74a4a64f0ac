//! The fuzz harnesses, as plain functions: `fuzz_targets/*.rs` hand them libFuzzer's bytes.
//!
//! - [`respond`]: bytes → a Messages API `Message` (JSON) → [`Session::respond`] on a dispatcher
//!   with the fixtures' tools, hooks that deny, rewrite (once, to the same input, or in a loop),
//!   error, panic or wait past the default deadline (chosen by words in the input), an audit log
//!   and observers → the answer's invariants, among them that a tool runs only with an input
//!   every hook of its chain either saw last or produced; then the same message again, which must
//!   run nothing twice.
//! - [`validate`]: bytes → a `tool_use` input (the bytes as JSON, and the bytes as a string) →
//!   normalization, bounds and validation against tools with rich argument types.
//!
//! Every panic that is not injected on purpose aborts the process, even when the dispatcher
//! would have caught it, so a panic inside toolgate's own code is a finding rather than a
//! `panicked` outcome.
#![forbid(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::{LazyLock, Once};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    CallError, Decision, Dispatcher, HookContext, Message, Reply, RespondError, ToolError,
    ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    content::{ContentBlock, IdRule, Role},
    dispatch::{BoxFuture, Env, HookError, PostHookDef, PreHookDef, StopHookDef, Timer, ToolDef},
};

/// Every panic a harness injects on purpose starts with this text.
pub const INJECTED: &str = "injected fault";

/// The longest result text: the default limit plus the cut marker.
const MAX_RESULT: usize = (256 << 10) + 64;

/// Replaces libFuzzer's panic hook: injected panics are silent, any other panic aborts.
fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if text.is_some_and(|t| t.starts_with(INJECTED)) {
                return;
            }
            eprintln!("{info}");
            std::process::abort();
        }));
    });
}

/// A timer whose deadlines have all passed: an async hook or tool that yields loses.
struct Expired;

impl Timer for Expired {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

fn yield_once() -> impl std::future::Future<Output = ()> + Send {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
}

thread_local! {
    static RUNS: Cell<usize> = const { Cell::new(0) };
    /// The main argument each PreToolUse hook saw last, or produced by its last rewrite
    /// (`fuzz::a_policy`, `fuzz::b_slow_check`).
    static LAST_SEEN: RefCell<[Option<String>; 2]> = const { RefCell::new([None, None]) };
    static STOPS: Cell<usize> = const { Cell::new(0) };
    /// What the recording observer saw: id, outcome, result, replay.
    static RECORDS: RefCell<Vec<(String, Outcome, Option<ToolResult>, bool)>> =
        const { RefCell::new(Vec::new()) };
}

/// An audit folder whose two files are links to `/dev/null`: the audit lines are serialized
/// and written in full, at no disk cost.
fn null_audit_log() -> AuditLog {
    let dir = std::env::temp_dir().join(format!("toolgate-fuzz-audit-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for name in [
        toolgate::audit::AUDIT_LOG_FILE,
        toolgate::audit::SESSION_SUMMARIES_FILE,
    ] {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_err() {
            std::os::unix::fs::symlink("/dev/null", &path).expect("link to /dev/null");
        }
    }
    AuditLog::open(&dir).expect("open the audit log")
}

// ---- respond ----

/// `get_stock_price`.
#[derive(Deserialize, JsonSchema)]
struct Stock {
    /// The ticker.
    ticker: String,
}

/// `get_weather`'s unit.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Celsius.
    Celsius,
    /// Fahrenheit.
    Fahrenheit,
}

/// `get_weather`.
#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The place.
    location: String,
    /// The unit.
    #[allow(dead_code)]
    unit: Option<Unit>,
}

/// `get_time`.
#[derive(Deserialize, JsonSchema)]
struct Time {
    /// The timezone.
    timezone: String,
}

/// `get_order_details`.
#[derive(Deserialize, JsonSchema)]
struct Order {
    /// The order.
    order_id: String,
}

/// Rewrites are re-authorized: a tool runs only with an input every hook of its chain either saw
/// last (and allowed) or produced (the rewriter is not asked about its own input; every other
/// hook decides on it). Calls run one after another, so the last input a hook of this tool's
/// chain saw or produced is this call's.
fn check_chain_saw(tool: &str, arg: &str) {
    LAST_SEEN.with(|seen| {
        let seen = seen.borrow();
        assert_eq!(
            seen[0].as_deref(),
            Some(arg),
            "{tool} ran with an input the policy did not last see"
        );
        if matches!(tool, "get_weather" | "get_time") {
            assert_eq!(
                seen[1].as_deref(),
                Some(arg),
                "{tool} ran with an input the slow check did not last see"
            );
        }
    });
}

/// What a tool does, chosen by words in its main argument.
fn act(tool: &str, arg: &str) -> Result<String, ToolError> {
    check_chain_saw(tool, arg);
    RUNS.with(|r| r.set(r.get() + 1));
    if arg.contains("boom") {
        panic!("{INJECTED}: {tool} exploded");
    }
    if arg.contains("fail") {
        return Err(ToolError::new(format!("{tool} failed for {arg:?}")));
    }
    if arg.contains("internal") {
        return Err(ToolError::internal(std::io::Error::other("backend down")));
    }
    if arg.contains("big") {
        return Ok("b".repeat(300_000));
    }
    Ok(format!("{tool}: {arg}"))
}

fn get_time(_env: Env<'_>, t: Time) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move {
        if t.timezone.contains("slow") {
            check_chain_saw("get_time", &t.timezone);
            RUNS.with(|r| r.set(r.get() + 1));
            yield_once().await;
            return Ok("too late".to_owned());
        }
        act("get_time", &t.timezone)
    })
}

/// The main argument of a call, whatever the tool.
fn main_arg(call: &ToolUse) -> &str {
    ["ticker", "location", "order_id", "timezone"]
        .iter()
        .find_map(|k| call.input.get(k).and_then(Value::as_str))
        .unwrap_or("")
}

/// `call` with its main argument replaced by `to`.
fn with_main_arg(call: &ToolUse, to: &str) -> Value {
    let mut input = call.input.clone();
    for k in ["ticker", "location", "order_id", "timezone"] {
        if let Some(v) = input.get_mut(k) {
            *v = json!(to);
        }
    }
    input
}

/// A rewrite to `input` by hook `hook` of the chain, kept as the input it produced.
fn produced(hook: usize, input: Value) -> Decision {
    let arg = ["ticker", "location", "order_id", "timezone"]
        .iter()
        .find_map(|k| input.get(k).and_then(Value::as_str))
        .unwrap_or("")
        .to_owned();
    LAST_SEEN.with(|seen| seen.borrow_mut()[hook] = Some(arg));
    Decision::Rewrite(input)
}

fn policy(_env: Env<'_>, call: &ToolUse) -> Result<Decision, HookError> {
    let arg = main_arg(call);
    LAST_SEEN.with(|seen| seen.borrow_mut()[0] = Some(arg.to_owned()));
    if arg.contains("deny") {
        return Ok(Decision::deny_instead("policy says no.", "Ask a human."));
    }
    if arg.contains("halt") {
        return Err(HookError::new("the policy backend is down"));
    }
    if arg.contains("hookpanic") {
        panic!("{INJECTED}: policy");
    }
    if arg.contains("badrewrite") {
        return Ok(Decision::Rewrite(json!({"zzz": [1, 2]})));
    }
    if arg.contains("rewrite") {
        // The chain's next pass, without this hook, sees "rewritten".
        return Ok(produced(0, with_main_arg(call, "rewritten")));
    }
    if arg.contains("ping") {
        // The slow check turns "pong" back into "ping": a loop, which halts.
        return Ok(produced(0, with_main_arg(call, &arg.replace("ping", "pong"))));
    }
    if arg.contains("same") {
        // A rewrite equal to the input counts as Allow.
        return Ok(Decision::Rewrite(call.input.clone()));
    }
    Ok(Decision::Allow)
}

fn slow_check<'a>(_env: Env<'a>, call: &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>> {
    Box::pin(async move {
        let arg = main_arg(call);
        LAST_SEEN.with(|seen| seen.borrow_mut()[1] = Some(arg.to_owned()));
        if arg.contains("wait") {
            yield_once().await;
        }
        if arg.contains("pong") {
            return Ok(produced(1, with_main_arg(call, &arg.replace("pong", "ping"))));
        }
        Ok(Decision::Allow)
    })
}

static RESPOND: LazyLock<Dispatcher> = LazyLock::new(|| {
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "get_stock_price",
            "Gets a stock's price.",
            |_env, s: Stock| act("get_stock_price", &s.ticker),
        ))
        .tool(ToolDef::sync(
            "get_weather",
            "Gets the weather.",
            |_env, w: Weather| act("get_weather", &w.location),
        ))
        .tool(ToolDef::sync(
            "get_order_details",
            "Gets an order.",
            |_env, o: Order| act("get_order_details", &o.order_id),
        ))
        .tool(ToolDef::new_async("get_time", "Gets the time.", get_time))
        .pre_hook(PreHookDef::sync("fuzz::a_policy", 1, policy))
        .pre_hook(
            PreHookDef::new_async("fuzz::b_slow_check", 2, slow_check)
                .tools(["get_weather", "get_time"]),
        )
        .post_hook(PostHookDef::sync("fuzz::a_flaky", |_env, r| {
            if r.call.id.contains("obspanic") {
                panic!("{INJECTED}: observer");
            }
            if r.call.id.contains("obsfail") {
                return Err(HookError::new("observer failed"));
            }
            Ok(())
        }))
        .post_hook(PostHookDef::sync("fuzz::b_record", |_env, r| {
            RECORDS.with(|v| {
                v.borrow_mut()
                    .push((r.call.id.clone(), r.outcome, r.result.cloned(), r.replay))
            });
            Ok(())
        }))
        .stop_hook(StopHookDef::new("fuzz::stops", |_env, _s| {
            STOPS.with(|s| s.set(s.get() + 1));
            Ok(())
        }))
        .audit_log(null_audit_log())
        // Every deadline has passed; the hook and tool deadlines are the defaults (10 s, 60 s),
        // which the dispatcher applies without being told.
        .timer(Expired)
        .build()
        .expect("the respond dispatcher builds")
});

/// Fuzzes the message-to-results path.
pub fn respond(data: &[u8]) {
    init();
    let Ok(message) = serde_json::from_slice::<Message>(data) else {
        return;
    };
    // What this crate writes, it reads back.
    let text = serde_json::to_string(&message).expect("a parsed message serializes");
    let again: Message = serde_json::from_str(&text).expect("a serialized message parses");
    assert_eq!(again.content.len(), message.content.len());
    assert_eq!(again.role, message.role);

    let uses: Vec<&ToolUse> = message.tool_uses().collect();
    RUNS.with(|r| r.set(0));
    STOPS.with(|s| s.set(0));
    RECORDS.with(|r| r.borrow_mut().clear());
    let session = RESPOND.session(HookContext::builder("u_fuzz", "sess_fuzz").build());
    let first = attempt(&session, &message, &uses);
    let records = RECORDS.with(|r| r.borrow_mut().split_off(0));
    assert!(
        records.iter().all(|r| !r.3),
        "nothing is a replay on a first attempt"
    );
    let ran = RUNS.with(Cell::get);
    assert_eq!(
        ran,
        reached_a_tool(&records),
        "side effects only for calls that reached a tool"
    );

    // The host retries the same message: what was answered is replayed, nothing runs twice.
    let second = attempt(&session, &message, &uses);
    let again = RECORDS.with(|r| r.borrow_mut().split_off(0));
    let answered: Vec<&str> = records
        .iter()
        .filter(|r| answers(r.1))
        .map(|r| r.0.as_str())
        .collect();
    // Exactly the answered ids are replayed: a block that halted, or was not run after a halt,
    // was not answered, so the retry runs it (and halts the same way).
    for rec in &again {
        assert_eq!(
            rec.3,
            answered.contains(&rec.0.as_str()),
            "an answered id is replayed, not run again; an unanswered one runs"
        );
    }
    if let (Attempt::Answered(a), Attempt::Answered(b)) = (&first, &second) {
        assert_eq!(a, b, "a retry gets the same answer");
    }
    let replays = again.iter().filter(|r| r.3).count();
    let new_runs = RUNS.with(Cell::get) - ran;
    assert_eq!(new_runs, reached_a_tool(&again), "a replay runs no tool");

    let summary = session.end();
    assert_eq!(
        summary.calls,
        (records.len() + again.len() - replays) as u64,
        "counts leave replays out"
    );
    drop(session);
    assert_eq!(STOPS.with(Cell::get), 1, "Stop exactly once");
}

/// What one `respond` gave.
#[derive(Debug, PartialEq)]
enum Attempt {
    Answered(Message),
    Other,
}

/// Whether an outcome is an answer the session remembers.
fn answers(o: Outcome) -> bool {
    !matches!(
        o,
        Outcome::HookFailed | Outcome::HookTimeout | Outcome::NotRun | Outcome::Cancelled
    )
}

/// The non-replayed records whose call reached a tool.
fn reached_a_tool(records: &[(String, Outcome, Option<ToolResult>, bool)]) -> usize {
    records
        .iter()
        .filter(|r| {
            !r.3 && matches!(
                r.1,
                Outcome::Ok | Outcome::ToolError | Outcome::Panicked | Outcome::ToolTimeout
            )
        })
        .count()
}

/// The Messages API's id rules, written apart from toolgate's: the first bad block (from 1).
fn bad_id(uses: &[&ToolUse]) -> Option<(usize, IdRule)> {
    uses.iter().enumerate().find_map(|(i, u)| {
        let rule = if u.id.is_empty() {
            IdRule::Empty
        } else if !u
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            IdRule::Pattern
        } else if uses[..i].iter().any(|e| e.id == u.id) {
            IdRule::Repeated
        } else {
            return None;
        };
        Some((i + 1, rule))
    })
}

/// One `respond`, checked: one `tool_result` per `tool_use` (or a refusal that ran nothing).
fn attempt(session: &toolgate::Session, message: &Message, uses: &[&ToolUse]) -> Attempt {
    let runs_before = RUNS.with(Cell::get);
    let seen_before = RECORDS.with(|r| r.borrow().len());
    let got = toolgate::block_on(session.respond(message));
    let records: Vec<_> = RECORDS.with(|r| r.borrow()[seen_before..].to_vec());
    let mut ran_nothing = false;
    let answer = match got {
        Ok(Reply::Answer(m)) => Some(m),
        Ok(Reply::NothingToRun { stop_reason }) => {
            assert!(uses.is_empty(), "NothingToRun only without tool_use");
            assert_eq!(stop_reason, message.stop_reason);
            ran_nothing = true;
            None
        }
        Ok(other) => panic!("unexpected reply {other:?}"),
        Err(RespondError::Call(CallError::Halt(h))) => {
            match h.outcome {
                Outcome::HookTimeout => {
                    assert_eq!(h.hook, "fuzz::b_slow_check");
                    assert_eq!(h.detail, "the hook ran past its deadline of 10000 ms");
                }
                Outcome::HookFailed => {}
                other => panic!("a halt with outcome {other}"),
            }
            if h.detail.starts_with("the PreToolUse chain") {
                // Only the ping/pong rewriters loop; they never rewrite 9 times.
                assert!(
                    h.detail.starts_with("the PreToolUse chain looped: "),
                    "{}",
                    h.detail
                );
            }
            let r = h.result().expect("the halted block's result");
            assert!(r.is_error && r.content_text().starts_with("BLOCKED: "));
            Some(h.into_answer())
        }
        Err(RespondError::MaxTokens { tool_uses }) => {
            assert_eq!(message.stop_reason.as_deref(), Some("max_tokens"));
            assert_eq!(tool_uses, uses.len());
            assert!(records.iter().all(|r| r.1 == Outcome::NotRun));
            ran_nothing = true;
            None
        }
        Err(RespondError::Id(e)) => {
            assert_eq!(bad_id(uses), Some((e.block, e.rule)), "{e}");
            assert!(records.iter().all(|r| r.1 == Outcome::NotRun));
            ran_nothing = true;
            None
        }
        Err(RespondError::NotAssistant) => {
            assert_eq!(message.role, Role::User);
            ran_nothing = true;
            None
        }
        Err(other) => panic!("unexpected error {other}"),
    };
    if ran_nothing {
        assert_eq!(
            RUNS.with(Cell::get),
            runs_before,
            "a refused message runs nothing"
        );
    } else {
        assert_eq!(bad_id(uses), None, "a message with a bad id ran");
    }
    if message.role == Role::User || uses.is_empty() {
        assert!(records.is_empty());
    } else {
        assert_eq!(records.len(), uses.len(), "one record per tool_use");
    }
    for (rec, call) in records.iter().zip(uses) {
        assert_eq!(rec.0, call.id);
        if rec.1 == Outcome::ToolTimeout {
            let text = rec.2.as_ref().expect("a result").content_text();
            assert!(
                text.starts_with("Error: the tool did not finish within its deadline of 60000 ms"),
                "the default tool deadline: {text}"
            );
        }
    }
    let Some(answer) = answer else {
        return Attempt::Other;
    };
    assert_eq!(answer.role, Role::User);
    assert_eq!(
        answer.content.len(),
        uses.len(),
        "one tool_result per tool_use"
    );
    assert!(!answer.content.is_empty(), "never an empty user message");
    for ((block, call), rec) in answer.content.iter().zip(uses).zip(&records) {
        let ContentBlock::ToolResult(r) = block else {
            panic!("only tool_result blocks in the answer");
        };
        assert_eq!(r.tool_use_id, call.id, "ids in order");
        assert!(
            r.content_text().len() <= MAX_RESULT,
            "a result over the limit"
        );
        assert_eq!(
            rec.2.as_ref(),
            Some(r),
            "observers saw the result the host got"
        );
    }
    let text = serde_json::to_string(&answer).expect("the answer serializes");
    let back: Message = serde_json::from_str(&text).expect("the answer parses");
    assert_eq!(back.content.len(), uses.len());
    Attempt::Answered(answer)
}

// ---- validate ----

/// A small recursive structure.
#[derive(Deserialize, JsonSchema)]
struct Nested {
    /// Its level.
    #[allow(dead_code)]
    level: u8,
    /// What it holds.
    #[allow(dead_code)]
    inner: Option<Box<Nested>>,
}

/// A tagged choice.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Choice {
    /// First.
    A {
        /// A number.
        #[allow(dead_code)]
        x: i32,
    },
    /// Second.
    B {
        /// A text.
        #[allow(dead_code)]
        y: String,
    },
}

/// Many kinds of field.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Rich {
    /// An id.
    id: u32,
    /// A name.
    name: String,
    /// Tags.
    tags: Vec<String>,
    /// A nested value.
    nested: Nested,
    /// A choice.
    choice: Choice,
    /// A ratio.
    ratio: Option<f64>,
    /// A flag.
    flag: bool,
    /// Counts by name.
    counts: BTreeMap<String, i64>,
    /// A letter.
    letter: Option<char>,
}

/// One integer.
#[derive(Deserialize, JsonSchema)]
struct Flat {
    /// A number.
    #[allow(dead_code)]
    a: i64,
}

/// Anything, ignored.
#[derive(Deserialize, JsonSchema)]
struct Open {
    /// A note.
    #[allow(dead_code)]
    a: Option<String>,
}

fn ran(_: impl Sized) -> Result<String, ToolError> {
    RUNS.with(|r| r.set(r.get() + 1));
    Ok("ran".to_owned())
}

static VALIDATE: LazyLock<Dispatcher> = LazyLock::new(|| {
    Dispatcher::builder()
        .tool(ToolDef::sync("rich", "Many fields.", |_env, a: Rich| {
            ran(a)
        }))
        .tool(ToolDef::sync("flat", "One integer.", |_env, a: Flat| {
            ran(a)
        }))
        .tool(ToolDef::sync("open", "Anything.", |_env, a: Open| ran(a)).allow_unknown_fields())
        .build()
        .expect("the validate dispatcher builds")
});

fn container_depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(container_depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(container_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Fuzzes normalization, bounds and validation.
pub fn validate(data: &[u8]) {
    init();
    let mut inputs = vec![Value::String(String::from_utf8_lossy(data).into_owned())];
    let parsed = serde_json::from_slice::<Value>(data).ok();
    if let Some(v) = &parsed {
        inputs.push(v.clone());
    }
    let session = VALIDATE.session(HookContext::builder("u_fuzz", "sess_fuzz").build());
    for (i, input) in inputs.into_iter().enumerate() {
        for tool in ["rich", "flat", "open"] {
            let before = RUNS.with(Cell::get);
            // Each call its own id: a session answers an id once.
            let call = ToolUse::new(format!("toolu_fuzz_{i}_{tool}"), tool, input.clone());
            let r = toolgate::block_on(session.call(&call)).expect("no hooks, no halt");
            let ran = RUNS.with(Cell::get) - before;
            let text = r.content_text();
            assert!(text.len() <= MAX_RESULT);
            if r.is_error {
                assert_eq!(ran, 0, "an invalid input reached the tool");
                assert!(
                    text.starts_with(&format!("Error: invalid input for tool `{tool}`")),
                    "{text}"
                );
            } else {
                assert_eq!((ran, text.as_ref()), (1, "ran"));
            }
            // An independent oracle for `flat` and `open` on object inputs.
            if let Value::Object(m) = &input
                && container_depth(&input) <= 32
                && data.len() < 1 << 19
            {
                let want_ok = match tool {
                    "flat" => m.len() == 1 && m.get("a").and_then(Value::as_i64).is_some(),
                    "open" => matches!(m.get("a"), None | Some(Value::Null | Value::String(_))),
                    _ => continue,
                };
                assert_eq!(!r.is_error, want_ok, "{tool} on {input}: {text}");
            }
        }
    }
    let summary = session.end();
    let invalid = summary
        .outcomes
        .get(&Outcome::InvalidInput)
        .copied()
        .unwrap_or(0);
    let ok = summary.outcomes.get(&Outcome::Ok).copied().unwrap_or(0);
    assert_eq!(invalid + ok, summary.calls, "only ok or invalid_input");
}
