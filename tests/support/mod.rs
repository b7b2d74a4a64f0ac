//! Test support, one module for every test binary (`mod support;` beside a binary's root file,
//! `#[path = "../support/mod.rs"] mod support;` in a binary's folder):
//!
//! - what every test of the workspace shares, from the `toolgate-test-support` crate
//!   (`tests/test-support/`): the texts the model reads for a halt, a panic, a call not run and
//!   a tool timeout, scratch folders and audit-log readers;
//! - assistant messages and fixtures;
//! - the six published tools as `#[tool]` functions ([`official`]);
//! - a paused call whose input has fields the audit log hides, for every store's sealed-input
//!   tests ([`sealed`]);
//! - an example's runnable binary, built in the test run's target folder ([`example_binary`]);
//! - for the reliability tests (properties, deadlines, limits, concurrency, trusted context):
//!   test timers that need no runtime, a quiet panic hook for injected faults, a one-poll
//!   driver for cancellation tests, and JSON strategies for property tests.
// Each test binary uses part of this module.
#![allow(dead_code, unused_imports)]

pub(crate) mod leases;
pub(crate) mod official;
pub(crate) mod sealed;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;
use toolgate::dispatch::{BoxFuture, Timer};

pub(crate) use toolgate_test_support::{
    HALT_TEXT, LineReader, NOT_RUN_HALT, NOT_RUN_MAX_TOKENS, PANIC_TEXT, TempDir, ZEROS,
    chained_lines, json_lines, sha256_hex, tool_timeout_text, zero_durations,
};

// ================================================================ messages, fixtures
/// The `Halt` a call must end in (a test fails on any other answer).
pub(crate) fn halt_of(r: Result<toolgate::ToolResult, toolgate::CallError>) -> toolgate::Halt {
    match r {
        Err(toolgate::CallError::Halt(h)) => h,
        other => panic!("expected a halt, got {other:?}"),
    }
}

/// The user message of a `Reply::Answer` (a test fails on any other reply).
pub(crate) fn answer_of(r: toolgate::Reply) -> toolgate::Message {
    match r {
        toolgate::Reply::Answer(m) => m,
        other => panic!("expected an answer, got {other:?}"),
    }
}

/// An assistant message with these content blocks and this `stop_reason`.
pub(crate) fn assistant(blocks: Value, stop_reason: &str) -> toolgate::Message {
    serde_json::from_value(serde_json::json!({
        "role": "assistant", "content": blocks, "stop_reason": stop_reason
    }))
    .unwrap()
}

/// An assistant message as the Messages API returns it: with the response's `id` (`msg_…`),
/// which a resend of the same response carries too.
pub(crate) fn assistant_with_id(id: &str, blocks: Value, stop_reason: &str) -> toolgate::Message {
    serde_json::from_value(serde_json::json!({
        "id": id, "role": "assistant", "content": blocks, "stop_reason": stop_reason
    }))
    .unwrap()
}

/// Reads a fixture under `tests/fixtures/`.
pub(crate) fn fixture(rel: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A published `input_schema` as toolgate writes the same tool with an `Option<T>` for each
/// optional field: every property left out of `required` also accepts `null`
/// (`{"description": …, "anyOf": [X, {"type": "null"}]}`), as the argument type does. The
/// deliberate difference from the published definitions (besides `additionalProperties:
/// false`): the schema sent accepts every input the argument type accepts.
pub(crate) fn optional_fields_nullable(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        let required: Vec<Value> = map
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                let inner = optional_fields_nullable(prop.take());
                *prop = if required.contains(&Value::String(name.clone())) {
                    inner
                } else {
                    let mut branch = inner;
                    let mut outer = serde_json::Map::new();
                    if let Some(d) = branch.as_object_mut().and_then(|m| m.remove("description")) {
                        outer.insert("description".into(), d);
                    }
                    outer.insert(
                        "anyOf".into(),
                        Value::Array(vec![branch, serde_json::json!({"type": "null"})]),
                    );
                    Value::Object(outer)
                };
            }
        }
    }
    schema
}

// ================================================================ examples as child processes

/// The root package's features, each with whether this test binary was built with it. The
/// list is checked against `Cargo.toml`'s `[features]` by [`example_binary`].
const FEATURES: [(&str, bool); 15] = [
    ("tokio", cfg!(feature = "tokio")),
    ("full-validation", cfg!(feature = "full-validation")),
    ("tower", cfg!(feature = "tower")),
    ("claude-code", cfg!(feature = "claude-code")),
    ("audit-verify", cfg!(feature = "audit-verify")),
    ("audit-report", cfg!(feature = "audit-report")),
    ("openai", cfg!(feature = "openai")),
    ("gemini", cfg!(feature = "gemini")),
    ("mcp", cfg!(feature = "mcp")),
    ("mcp-http", cfg!(feature = "mcp-http")),
    ("seal", cfg!(feature = "seal")),
    ("inbox", cfg!(feature = "inbox")),
    ("inbox-http", cfg!(feature = "inbox-http")),
    ("sqlite", cfg!(feature = "sqlite")),
    ("postgres", cfg!(feature = "postgres")),
];

/// The names of `Cargo.toml`'s `[features]` table.
fn declared_features() -> Vec<String> {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .expect("Cargo.toml reads");
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[features]")
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| line.split_once(" = ").map(|(name, _)| name.trim()))
        .filter(|name| !name.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The runnable binary of example `name`, built once per test binary, for the tests that run
/// an example as its host does (a child process, standard input and output).
///
/// `cargo test --all-targets` builds examples with the test harness (their `main` is not
/// what runs), and cargo gives tests the path of a `[[bin]]` only, so this runs `cargo build
/// --example name` with the cargo that runs the tests ([`toolgate_test_support::cargo::build`]:
/// the test run's own target folder and profile), resolved as the run that built this binary
/// resolved its crates, so that only the example is compiled and linked (other features, or a
/// folder of its own, would build every dependency a second time): with every feature of the
/// root package on, as the README's test command builds it, the whole workspace with every
/// feature (`toolgate_test_support::cargo::WORKSPACE_RUN`); else the root package alone with
/// this binary's features. The binary's path is the one cargo reports.
pub(crate) fn example_binary(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    let known: Vec<&str> = FEATURES.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        declared_features(),
        known,
        "tests/support/mod.rs: FEATURES lists the root package's features, in order"
    );
    let features: Vec<&str> = FEATURES
        .iter()
        .filter(|(_, on)| *on)
        .map(|(f, _)| *f)
        .collect();
    let features = format!("--features={}", features.join(","));
    let workspace = toolgate_test_support::cargo::WORKSPACE_RUN;
    let args: Vec<&str> = if FEATURES.iter().all(|(_, on)| *on) {
        ["build", workspace[0], workspace[1], "--example", name].to_vec()
    } else {
        [
            "build",
            "-p",
            "toolgate",
            "--example",
            name,
            "--no-default-features",
            &features,
        ]
        .to_vec()
    };
    let messages =
        toolgate_test_support::cargo::build(&args, Path::new(env!("CARGO_TARGET_TMPDIR")));
    let path = toolgate_test_support::cargo::executable(&messages, name, "example")
        .unwrap_or_else(|| panic!("cargo reported no executable for example {name}"));
    built.push((name.to_owned(), path.clone()));
    path
}

// ================================================================ reliability

/// Every panic a test injects on purpose starts with this text; [`quiet_injected_panics`] keeps
/// them off stderr.
pub(crate) const INJECTED: &str = "injected fault";

/// Installs, once per test binary, a panic hook that stays silent for panics whose message starts
/// with [`INJECTED`] or whose payload is an [`InjectedPayload`] (and for tokio's "no runtime"
/// panic, which a test provokes on purpose) and hands every other panic to the hook that was
/// installed before (the default one prints it). It is never removed: tests of one binary run in
/// parallel, so restoring the previous hook from one test could silence or unsilence another
/// mid-run; the filter keeps every real panic visible instead.
pub(crate) fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if text.is_some_and(|t| t.starts_with(INJECTED) || t.contains("Tokio 1.x runtime"))
                || payload.is::<InjectedPayload>()
            {
                return;
            }
            previous(info);
        }));
    });
}

/// A panic payload that is not a string, injected on purpose (so [`quiet_injected_panics`]
/// keeps it quiet too). Dropping it panics as well, with an [`INJECTED`] message: whoever
/// catches the panic must survive the drop of its payload.
pub(crate) struct InjectedPayload;

impl Drop for InjectedPayload {
    fn drop(&mut self) {
        panic!("{INJECTED}: the payload's drop panicked");
    }
}

/// A timer that sleeps on a thread of its own per sleep: real time, no runtime needed, so
/// deadline tests run under `toolgate::block_on` in every CI run.
pub(crate) struct ThreadTimer;

impl Timer for ThreadTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let state = Arc::new(Mutex::new((false, None::<Waker>)));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            std::thread::sleep(duration);
            let mut s = shared.lock().unwrap();
            s.0 = true;
            if let Some(w) = s.1.take() {
                w.wake();
            }
        });
        Box::pin(std::future::poll_fn(move |cx| {
            let mut s = state.lock().unwrap();
            if s.0 {
                Poll::Ready(())
            } else {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }))
    }
}

/// A timer whose every deadline has already passed: a future that does not finish on its first
/// poll loses. Deterministic (no clock), for property tests.
pub(crate) struct ExpiredTimer;

impl Timer for ExpiredTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// A timer whose deadlines never pass: the test decides, not the machine's speed, that no
/// deadline is met (a hook or tool that hangs then hangs the test instead).
pub(crate) struct NeverTimer;

impl Timer for NeverTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

/// A broken timer: panics when asked for a sleep.
pub(crate) struct PanickingTimer;

impl Timer for PanickingTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        panic!("{INJECTED}: the timer is broken")
    }
}

/// A future that never finishes and never wakes (a hung backend).
pub(crate) fn hang<T: Send + 'static>() -> BoxFuture<'static, T> {
    Box::pin(std::future::pending())
}

/// Returns `Pending` once (waking itself), then `Ready(())`: an `.await` that really yields.
pub(crate) fn yield_once() -> impl Future<Output = ()> + Send {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
}

/// Polls `fut` once with a no-op waker; `Some` when it finished.
pub(crate) fn poll_once<F: Future>(fut: Pin<&mut F>) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match fut.poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// A short string mixing plain letters with the characters JSON and UTF-8 make hard: quotes,
/// backslashes, control characters, multi-byte characters.
pub(crate) fn short_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    const CHARS: &[char] = &[
        'a', 'b', 'n', 's', 'z', ' ', '"', '\\', '\n', '\t', '\u{0}', '\u{7f}', 'é', '€', '🦀',
    ];
    prop::collection::vec(prop::sample::select(CHARS), 0..12).prop_map(String::from_iter)
}

/// Any JSON value, small (at most a few dozen nodes and well under a kilobyte). `words` are
/// the strings a test's tools and hooks care about (field names, tiers, user ids): they appear
/// as string leaves and as object keys, next to arbitrary ones.
pub(crate) fn any_json(
    words: &'static [&'static str],
) -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let word = prop::sample::select(words);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        short_text().prop_map(Value::String),
        "[a-z_]{0,12}".prop_map(Value::String),
        word.clone().prop_map(Value::from),
        Just(Value::from(5)),
    ];
    leaf.prop_recursive(4, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![word.clone().prop_map(str::to_owned), "[a-z_]{1,8}"],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
