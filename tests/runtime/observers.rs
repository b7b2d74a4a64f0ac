//! PostToolUse matchers: an observer narrowed with `tools([...])` sees exactly the calls of
//! those tools (never an unknown tool's); an observer without one sees every call. Checked on
//! the all-sync path, on the path with an async observer, and for a call dropped unfinished.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolgate::{
    Dispatcher, HookContext, ToolError, ToolUse,
    audit::CallRecord,
    dispatch::{BoxFuture, Env, HookError, PostHookDef, ToolDef},
};

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

type Log = Arc<Mutex<Vec<String>>>;

fn observer(log: &Log, path: &'static str) -> PostHookDef {
    let log = log.clone();
    PostHookDef::sync(path, move |_env, record| {
        log.lock().unwrap().push(format!(
            "{path} {} {}",
            record.call.id,
            record.outcome.as_str()
        ));
        Ok(())
    })
}

/// The async observer's calls (a `fn` item cannot capture a log).
static ASYNC_SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn async_observer<'a>(
    _env: Env<'a>,
    record: &'a CallRecord<'a>,
) -> BoxFuture<'a, Result<(), HookError>> {
    Box::pin(async move {
        ASYNC_SEEN
            .lock()
            .unwrap()
            .push(format!("tests::async_b {}", record.call.id));
        Ok(())
    })
}

/// A tool that never finishes, for a call dropped unfinished.
fn never<'a>(_env: Env<'a>, _args: NoArgs) -> BoxFuture<'a, Result<String, ToolError>> {
    Box::pin(std::future::pending())
}

fn tools() -> [ToolDef; 3] {
    [
        ToolDef::sync("a", "Tool a.", |_env, _: NoArgs| Ok("a done".to_owned())),
        ToolDef::sync("b", "Tool b.", |_env, _: NoArgs| Ok("b done".to_owned())),
        ToolDef::new_async("hangs", "Never finishes.", never),
    ]
}

fn calls(d: &Dispatcher) {
    let s = d.session(HookContext::builder("u_1", "sess_obs").build());
    for (id, name) in [("t1", "a"), ("t2", "b"), ("t3", "no_such_tool")] {
        toolgate::block_on(s.call(&ToolUse::new(id, name, json!({})))).unwrap();
    }
    // A call of `hangs` polled once, then dropped: a `cancelled` record.
    let call = ToolUse::new("t4", "hangs", json!({}));
    {
        let mut fut = pin!(s.call(&call));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Pending));
    }
}

#[test]
fn narrowed_observers_see_only_their_tools_and_never_an_unknown_one() {
    let log = Log::default();
    let mut b = Dispatcher::builder();
    for t in tools() {
        b = b.tool(t);
    }
    let d = b
        .post_hook(observer(&log, "tests::all"))
        .post_hook(observer(&log, "tests::only_a").tools(["a"]))
        .post_hook(observer(&log, "tests::b_and_hangs").tools(["b", "hangs"]))
        .build()
        .unwrap();
    calls(&d);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "tests::all t1 ok",
            "tests::only_a t1 ok",
            "tests::all t2 ok",
            "tests::b_and_hangs t2 ok",
            "tests::all t3 unknown_tool",
            "tests::all t4 cancelled",
            "tests::b_and_hangs t4 cancelled",
        ]
    );
}

#[test]
fn narrowed_observers_with_an_async_one_among_them() {
    let log = Log::default();
    let mut b = Dispatcher::builder();
    for t in tools() {
        b = b.tool(t);
    }
    let d = b
        .post_hook(PostHookDef::new_async("tests::async_b", async_observer).tools(["b"]))
        .post_hook(observer(&log, "tests::only_a").tools(["a"]))
        .post_hook(observer(&log, "tests::z_all"))
        .build()
        .unwrap();
    calls(&d);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "tests::only_a t1 ok",
            "tests::z_all t1 ok",
            "tests::z_all t2 ok",
            "tests::z_all t3 unknown_tool",
            // Dropped before its observers ran: the sync ones that match see it.
            "tests::z_all t4 cancelled",
        ]
    );
    assert_eq!(*ASYNC_SEEN.lock().unwrap(), ["tests::async_b t2"]);
}
