//! The batch figures: one message of several `tool_use` blocks whose tools each await 20 ms of I/O
//! (a `futures-timer` `Delay`, the dispatcher's own default timer: one helper thread, no runtime),
//! answered by `Session::respond` driven by `toolgate::block_on`.
//!
//! - `batch4_reads_over_one_call`: 4 read tools in one message ÷ one such call alone
//!   (`Session::call`). Sequential, that is about 4; concurrent reads, about 1.
//! - `batch_mixed_over_sum`: 2 reads then 2 writes in one message ÷ the same message on a
//!   dispatcher built with `max_concurrent_reads(1)` (every block one after another: the sum of
//!   its calls). Reads together, writes alone: about 3 waits of 4, 0.75.
//!
//! The sides alternate round by round; each figure is the median of the rounds' ratios.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, Message, Reply, Session, ToolError, ToolUse,
    dispatch::{BoxFuture, DispatcherBuilder, Effect, Env, ToolDef},
};

use crate::common::{context, figure, median};

/// The I/O every tool of these figures waits for.
const IO: Duration = Duration::from_millis(20);

/// Arguments of the batch tools.
#[derive(Deserialize, JsonSchema)]
struct Key {
    /// What to look up or change.
    key: String,
}

fn wait_then(answer: &'static str, k: Key) -> BoxFuture<'static, Result<String, ToolError>> {
    Box::pin(async move {
        futures_timer::Delay::new(IO).await;
        Ok(format!("{answer} {}", k.key))
    })
}

fn read(_env: Env<'_>, k: Key) -> BoxFuture<'_, Result<String, ToolError>> {
    wait_then("read", k)
}

fn write(_env: Env<'_>, k: Key) -> BoxFuture<'_, Result<String, ToolError>> {
    wait_then("wrote", k)
}

/// `fetch` (a read) and `store` (a write) on a dispatcher with `max` reads at once.
fn dispatcher(max: usize) -> Dispatcher {
    Dispatcher::builder()
        .tool(ToolDef::new_async("fetch", "Fetches a key.", read).effect(Effect::read()))
        .tool(
            ToolDef::new_async("store", "Stores a key.", write)
                .effect(Effect::write())
                .unguarded("a benchmark tool: it changes nothing"),
        )
        .max_concurrent_reads(max)
        .build()
        .expect("the batch dispatcher builds")
}

/// An assistant message of `tools` blocks, with ids unique to `round`.
fn message(round: usize, tools: &[&str]) -> Message {
    let blocks: Vec<Value> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"type": "tool_use", "id": format!("toolu_{round}_{i}"), "name": t,
                   "input": {"key": format!("k{i}")}})
        })
        .collect();
    serde_json::from_value(
        json!({"role": "assistant", "content": blocks, "stop_reason": "tool_use"}),
    )
    .expect("a valid message")
}

/// Answers `m` and checks every block was answered without error; the wall time.
fn timed_respond(s: &Session, m: &Message) -> f64 {
    let start = Instant::now();
    let reply = toolgate::block_on(s.respond(m)).expect("the batch message is answered");
    let elapsed = start.elapsed().as_secs_f64();
    let Reply::Answer(answer) = reply else {
        panic!("the batch message was not answered: {reply:?}")
    };
    let results: Vec<_> = answer.tool_results().collect();
    assert_eq!(results.len(), m.tool_uses().count());
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    elapsed
}

/// Prints the two batch figures after `rounds` rounds.
pub(crate) fn figures(rounds: usize) {
    let concurrent = dispatcher(DispatcherBuilder::DEFAULT_MAX_CONCURRENT_READS);
    let sequential = dispatcher(1);
    let s = concurrent.session(context("sess_batch"));
    let s1 = sequential.session(context("sess_batch_sequential"));
    let (mut reads4, mut mixed) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let one = ToolUse::new(format!("toolu_{round}_one"), "fetch", json!({"key": "k"}));
        let start = Instant::now();
        let r = toolgate::block_on(s.call(&one)).expect("one call is answered");
        let one_s = start.elapsed().as_secs_f64();
        assert_eq!(r.content_text(), "read k");
        let four = timed_respond(&s, &message(round, &["fetch"; 4]));
        reads4.push(four / one_s);
        let m = message(round + rounds, &["fetch", "fetch", "store", "store"]);
        let (together, summed) = if round % 2 == 0 {
            let t = timed_respond(&s, &m);
            (t, timed_respond(&s1, &m))
        } else {
            let summed = timed_respond(&s1, &m);
            (timed_respond(&s, &m), summed)
        };
        mixed.push(together / summed);
    }
    figure("batch4_reads_over_one_call", median(&reads4));
    figure("batch_mixed_over_sum", median(&mixed));
}
