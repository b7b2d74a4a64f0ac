//! The MCP guard's hop (BENCHMARKS.md, "The MCP guard's hop"), feature `mcp-http`.
//!
//! `cargo bench --bench mcp_guard --features mcp-http` serves a plain rmcp server (one tool,
//! `lookup_user`, answering the text of `common::EXPECTED`; no toolgate in it) with rmcp's
//! streamable HTTP service (its default configuration: MCP sessions kept, answers as server-sent
//! events) on hyper at `http://127.0.0.1:<port>/mcp`, and calls it over loopback three ways, the
//! clients and the server on one current-thread tokio runtime in this process:
//!
//! - `direct`: rmcp's own client (`StreamableHttpClientTransport`, reqwest), `tools/call`;
//! - `guard`: a dispatcher wrapping `McpGuard::streamable_http` (the same rmcp client inside)
//!   with one PreToolUse hook that allows: `Session::call` of a `tool_use` with a new id each
//!   time, in a default session (the answer memory on, no audit log) with the default timer
//!   (the tool's 60 s deadline on `futures-timer`'s helper thread);
//! - `guard_tokio_timer`: the same dispatcher with `.timer(TokioTimer)`.
//!
//! Sides interleaved round by round (each round starts with the next side), medians of the
//! rounds. It prints `us_per_call_SIDE`, `mcp_guard_http_over_direct` (the guard as built by
//! default ÷ direct; target ≤ 1.3), `mcp_guard_http_tokio_timer_over_direct`, and
//! `http_connections_per_call` (rmcp's client opens a new loopback connection for a call whose
//! answer it reads as events, on every side alike). `--profile SIDE N` runs one side N times and
//! stops (for `perf` or callgrind). Under `cargo test --all-targets --all-features` (no `--bench`
//! argument) it does one small round and checks only that every side answers the same text,
//! never a time.

mod common;

use std::convert::Infallible;
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use toolgate::mcp::McpGuard;
use toolgate::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use toolgate::mcp::rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use toolgate::mcp::rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use toolgate::mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use toolgate::mcp::rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use toolgate::mcp::rmcp::{ErrorData, ServerHandler, ServiceExt};

use toolgate::dispatch::{DispatcherBuilder, PreHookDef, TokioTimer};
use toolgate::{Decision, Dispatcher, Session};
use tower::ServiceExt as _;

use common::{EXPECTED, FreshIds, context, figure, median, median_ratio};

/// The remote server: rmcp alone, one tool whose answer is a constant text.
#[derive(Clone)]
struct Remote;

impl ServerHandler for Remote {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool: Tool = serde_json::from_value(json!({
            "name": "lookup_user",
            "description": "Looks a customer up by id.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "user_id": {"type": "string"},
                    "include_orders": {"type": "boolean"}
                },
                "required": ["user_id", "include_orders"]
            },
            "annotations": {"readOnlyHint": true}
        }))
        .expect("a valid tool");
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(EXPECTED),
        ])))
    }
}

/// Serves [`Remote`] with rmcp's default streamable HTTP configuration (MCP sessions kept,
/// loopback `Host` only) on `listener`, one hyper HTTP/1 connection task per client.
async fn serve(listener: tokio::net::TcpListener) {
    let service: StreamableHttpService<Remote, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Remote),
        Default::default(),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        ACCEPTED.fetch_add(1, Ordering::Relaxed);
        let service = service.clone();
        let routed = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let service = service.clone();
            async move {
                let response: Result<hyper::Response<BoxBody<Bytes, Infallible>>, Infallible> =
                    service.oneshot(request).await;
                response
            }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), routed)
                .await;
        });
    }
}

/// The connections the server accepted.
static ACCEPTED: AtomicUsize = AtomicUsize::new(0);

/// One side's `n` calls; the time per call (µs).
async fn time_calls(n: usize, mut call: impl AsyncFnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        call().await;
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// The direct side's call: rmcp's client, `tools/call`; the result's text.
async fn direct_call(client: &RunningService<RoleClient, ()>) -> String {
    let Value::Object(arguments) = common::input() else {
        unreachable!("the input is an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new("lookup_user").with_arguments(arguments))
        .await
        .expect("tools/call answers");
    match result.content.as_slice() {
        [one] => one.as_text().expect("a text item").text.clone(),
        other => panic!("one text item, not {other:?}"),
    }
}

/// The guard side's call: the dispatcher's `Session::call`; the result's text.
async fn guard_call(session: &Session, ids: &mut FreshIds) -> String {
    let result = session.call(ids.next()).await.expect("answered");
    assert!(!result.is_error, "the guarded call failed: {result:?}");
    result.content_text().into_owned()
}

/// A dispatcher around a guard connected to `url`, with one PreToolUse hook that allows; `setup`
/// adds to the builder (a timer).
async fn guarded(url: &str, setup: fn(DispatcherBuilder) -> DispatcherBuilder) -> Dispatcher {
    let guard = McpGuard::streamable_http(StreamableHttpClientTransportConfig::with_uri(url))
        .await
        .expect("the guard's initialize and tools/list");
    setup(Dispatcher::builder())
        .wrap(guard)
        .pre_hook(PreHookDef::sync("bench::allow", 1, |_env, _call| {
            Ok(Decision::Allow)
        }))
        .build()
        .expect("the guard's dispatcher builds")
}

/// The sides, in the order of their figures.
const SIDES: [&str; 3] = ["direct", "guard", "guard_tokio_timer"];

fn main() {
    let bench = common::bench_mode();
    let (rounds, batch) = if bench {
        (41, Duration::from_millis(40))
    } else {
        (1, Duration::from_millis(1))
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
        let server = tokio::spawn(serve(listener));

        // reqwest with rustls and no provider of its own panics without a process default.
        toolgate::mcp::install_tls_provider();
        let mut client = ()
            .serve(StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()),
            ))
            .await
            .expect("the direct client's initialize");
        let by_default = guarded(&url, |b| b).await;
        let on_tokio = guarded(&url, |b| b.timer(TokioTimer)).await;
        let sessions = [
            by_default.session(context("sess_guard")),
            on_tokio.session(context("sess_guard_tokio_timer")),
        ];
        let mut ids = FreshIds::new();
        // One call of side `i`: its text.
        let mut call = async |i: usize| match i {
            0 => direct_call(&client).await,
            _ => guard_call(&sessions[i - 1], &mut ids).await,
        };

        // Every side answers the same text.
        for (i, side) in SIDES.iter().enumerate() {
            assert_eq!(call(i).await, EXPECTED, "{side}");
        }

        let args: Vec<String> = std::env::args().collect();
        if let Some(at) = args.iter().position(|a| a == "--profile") {
            let name = args.get(at + 1).map_or("guard", String::as_str);
            let i = SIDES
                .iter()
                .position(|s| *s == name)
                .unwrap_or_else(|| panic!("no side named {name}"));
            let n: usize = args
                .get(at + 2)
                .and_then(|n| n.parse().ok())
                .unwrap_or(10_000);
            figure(
                "us_per_call",
                time_calls(n, async || drop(call(i).await)).await,
            );
            return;
        }

        // Calls per batch: about `batch` of the direct side's time.
        let probe = time_calls(20, async || drop(call(0).await)).await;
        let n = ((batch.as_secs_f64() * 1e6 / probe) as usize).max(1);
        let accepted = ACCEPTED.load(Ordering::Relaxed);
        let mut us = vec![Vec::with_capacity(rounds); SIDES.len()];
        for round in 0..rounds {
            for k in 0..SIDES.len() {
                let i = (round + k) % SIDES.len();
                us[i].push(time_calls(n, async || drop(call(i).await)).await);
            }
        }
        let calls = rounds * n * SIDES.len();
        for (side, us) in SIDES.iter().zip(&us) {
            figure(&format!("us_per_call_{side}"), median(us));
        }
        figure("mcp_guard_http_over_direct", median_ratio(&us[1], &us[0]));
        figure(
            "mcp_guard_http_tokio_timer_over_direct",
            median_ratio(&us[2], &us[0]),
        );
        figure(
            "http_connections_per_call",
            (ACCEPTED.load(Ordering::Relaxed) - accepted) as f64 / calls as f64,
        );
        figure("calls_per_side_and_round", n as f64);

        for session in &sessions {
            session.end();
        }
        client.close().await.expect("the direct client closes");
        server.abort();
    });
    if let Some(load) = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
    {
        figure("loadavg_1min", load);
    }
}
