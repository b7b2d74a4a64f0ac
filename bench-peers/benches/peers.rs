//! toolgate against rmcp and rig, measured side by side in one process run.
//!
//! `cargo bench --manifest-path bench-peers/Cargo.toml` prints one `NAME VALUE` line per figure
//! (sides interleaved round by round, the median of the rounds): `rmcp_over_limit`,
//! `rmcp_json_over_limit`, `rmcp_quickstart_over_limit`, `rig_over_limit`, `toolgate_over_rmcp`,
//! `toolgate_over_rmcp_json`, `toolgate_over_rig`,
//! `toolgate_4hooks_over_limit`, and allocations per call of each side.
//!
//! Every side answers the same `tool_use` (`lookup_user` among 20 registered tools), held by
//! reference (name, id, `&serde_json::Value` input), and produces the same JSON text; every
//! future finishes on its first poll and is polled once with a no-op waker.
//! - LIMIT: `Args::deserialize(&value)`, the function, `serde_json::to_string`.
//! - toolgate: `Session::call`, 4 sync PreToolUse hooks that allow + 1 observer.
//! - rmcp: `ServerHandler::call_tool` of a `#[tool_router]` server whose router is kept in a
//!   struct field (`#[tool_handler(router = self.tool_router)]`), in process, no transport. The
//!   arguments must be an owned `JsonObject` and the name a `Cow<'static, str>`, so both are
//!   copied from the borrowed block, as a host holding the block by reference must.
//! - rmcp structured form (`rmcp_json`): `lookup_user` as an async method returning
//!   `Json<User>`, rmcp's documented form for structured output.
//! - rmcp quick-start form: the same, but the router is built per call (`Self::tool_router()`,
//!   what `#[tool_handler]` without `router = …` generates).
//! - rig: `rig_agent::tool::ToolSet::execute(name, args, &mut ToolContext)`; rig takes the
//!   arguments as a JSON string, so the input is written to one (as rig's agent loop does).

#[path = "../../benches/common/mod.rs"]
mod common;

use std::borrow::Cow;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use rig_agent::tool::{ToolContext, ToolSet};
use rig_core::tool::PortableTool;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, Json, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use common::{
    EXPECTED, Side, call, context, count_allocs, figure, interleave, keep, limit, median,
    median_ratio, poll_ready, result_text,
};

// ---------------------------------------------------------------------------------------------
// rmcp: 20 tools on one server.

/// `lookup_user`'s parameters.
#[derive(Deserialize, JsonSchema)]
struct LookupUserParams {
    /// The customer's id, e.g. u_001.
    user_id: String,
    /// Whether to count the customer's open orders.
    include_orders: bool,
}

/// The fillers' parameters.
#[derive(Deserialize, JsonSchema)]
struct FillerParams {
    /// What to look for.
    query: String,
    /// How many results to return at most.
    limit: Option<u32>,
}

#[derive(Clone)]
struct RmcpServer {
    tool_router: ToolRouter<RmcpServer>,
}

fn filler_text(p: FillerParams) -> String {
    format!("{} {}", p.query, p.limit.unwrap_or(10))
}

fn json_text(user: &common::User) -> Result<CallToolResult, ErrorData> {
    let text =
        serde_json::to_string(user).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

#[tool_router]
impl RmcpServer {
    fn new() -> Self {
        RmcpServer {
            tool_router: Self::tool_router(),
        }
    }

    /// Looks up a customer by id; with `include_orders`, counts their open orders.
    #[tool]
    fn lookup_user(
        &self,
        Parameters(p): Parameters<LookupUserParams>,
    ) -> Result<CallToolResult, ErrorData> {
        json_text(&common::tools::lookup_user(p.user_id, p.include_orders))
    }

    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_01(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_02(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_03(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_04(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_05(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_06(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_07(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_08(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_09(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_10(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_11(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_12(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_13(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_14(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_15(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_16(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_17(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// A filler tool (one of 19): echoes the query.
    #[tool]
    fn filler_18(&self, Parameters(p): Parameters<FillerParams>) -> String {
        filler_text(p)
    }
    /// `lookup_user` in rmcp's structured-output form: an async method returning `Json<T>`
    /// (rmcp answers with `structuredContent` and the same JSON as text). It takes the place
    /// of a 19th filler, so the router still holds 20 tools.
    #[tool]
    async fn lookup_user_json(
        &self,
        Parameters(p): Parameters<LookupUserParams>,
    ) -> Result<Json<common::User>, ErrorData> {
        Ok(Json(common::tools::lookup_user(
            p.user_id,
            p.include_orders,
        )))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RmcpServer {}

/// rmcp makes a `Peer` only for a running service: serve the server once over an in-memory
/// duplex pipe (set-up only; the timed calls never touch the transport).
fn rmcp_peer(rt: &tokio::runtime::Runtime, server: &RmcpServer) -> Peer<RoleServer> {
    rt.block_on(async {
        let (ours, _theirs) = tokio::io::duplex(4096);
        let running = rmcp::service::serve_directly(server.clone(), ours, None);
        let peer = running.peer().clone();
        // Keep the service (and the other end of the pipe) alive for the whole run.
        std::mem::forget(running);
        std::mem::forget(_theirs);
        peer
    })
}

fn rmcp_params(name: &str, input: &Value) -> CallToolRequestParams {
    let args = match input {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    CallToolRequestParams::new(Cow::Owned(name.to_owned())).with_arguments(args)
}

fn rmcp_text(r: Result<CallToolResponse, ErrorData>) -> String {
    match r.expect("the rmcp call succeeds") {
        CallToolResponse::Complete(result) => {
            assert_ne!(result.is_error, Some(true), "the rmcp call failed");
            result.content[0]
                .as_text()
                .expect("text content")
                .text
                .clone()
        }
        _ => panic!("the rmcp call did not complete"),
    }
}

// ---------------------------------------------------------------------------------------------
// rig: 20 tools in one ToolSet.

#[derive(Debug)]
struct NoError;

impl std::fmt::Display for NoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no error")
    }
}

impl std::error::Error for NoError {}

struct RigLookupUser;

impl PortableTool for RigLookupUser {
    const NAME: &'static str = "lookup_user";
    type Args = LookupUserParams;
    type Output = String;
    type Error = NoError;

    fn description(&self) -> String {
        "Looks up a customer by id; with `include_orders`, counts their open orders.".into()
    }

    fn parameters(&self) -> Value {
        serde_json::to_value(schemars::schema_for!(LookupUserParams)).unwrap_or_default()
    }

    fn call(
        &self,
        p: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send {
        let user = common::tools::lookup_user(p.user_id, p.include_orders);
        std::future::ready(serde_json::to_string(&user).map_err(|_| NoError))
    }
}

macro_rules! rig_fillers {
    ($($ty:ident = $name:literal),* $(,)?) => {$(
        struct $ty;

        impl PortableTool for $ty {
            const NAME: &'static str = $name;
            type Args = FillerParams;
            type Output = String;
            type Error = Infallible;

            fn description(&self) -> String {
                "A filler tool (one of 19): echoes the query.".into()
            }

            fn parameters(&self) -> Value {
                serde_json::to_value(schemars::schema_for!(FillerParams)).unwrap_or_default()
            }

            fn call(
                &self,
                p: Self::Args,
            ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send {
                std::future::ready(Ok(filler_text(p)))
            }
        }
    )*};
}

rig_fillers!(
    F01 = "filler_01",
    F02 = "filler_02",
    F03 = "filler_03",
    F04 = "filler_04",
    F05 = "filler_05",
    F06 = "filler_06",
    F07 = "filler_07",
    F08 = "filler_08",
    F09 = "filler_09",
    F10 = "filler_10",
    F11 = "filler_11",
    F12 = "filler_12",
    F13 = "filler_13",
    F14 = "filler_14",
    F15 = "filler_15",
    F16 = "filler_16",
    F17 = "filler_17",
    F18 = "filler_18",
    F19 = "filler_19",
);

fn rig_toolset() -> ToolSet {
    let mut set = ToolSet::default();
    set.add_tool(RigLookupUser);
    set.add_tool(F01);
    set.add_tool(F02);
    set.add_tool(F03);
    set.add_tool(F04);
    set.add_tool(F05);
    set.add_tool(F06);
    set.add_tool(F07);
    set.add_tool(F08);
    set.add_tool(F09);
    set.add_tool(F10);
    set.add_tool(F11);
    set.add_tool(F12);
    set.add_tool(F13);
    set.add_tool(F14);
    set.add_tool(F15);
    set.add_tool(F16);
    set.add_tool(F17);
    set.add_tool(F18);
    set.add_tool(F19);
    assert_eq!(set.len(), 20);
    set
}

fn rig_text(r: &rig_core::tool::ToolResult) -> String {
    assert!(r.is_success(), "the rig call failed: {:?}", r.error());
    r.output().as_text().expect("text output").to_owned()
}

// ---------------------------------------------------------------------------------------------

fn main() {
    let bench = common::bench_mode();
    let (rounds, batch, alloc_calls) = if bench {
        (301, Duration::from_micros(500), 10_000)
    } else {
        (1, Duration::from_micros(500), 10)
    };
    let started = Instant::now();

    let call = call();
    let hooks = common::dispatcher_hooks();
    let session = hooks.session(context("sess_peers"));
    // Every toolgate call gets a new id: a session answers an id once and replays it after
    // that (no hook, no tool), so one id over and over would measure replays.
    let mut ids = common::FreshIds::new();

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime for set-up");
    let server = RmcpServer::new();
    let peer = rmcp_peer(&rt, &server);
    let rmcp_call = |s: &RmcpServer| {
        let ctx = RequestContext::new(rmcp::model::NumberOrString::Number(1), peer.clone());
        poll_ready(s.call_tool(rmcp_params(&call.name, &call.input), ctx))
    };
    let rmcp_json = |s: &RmcpServer| {
        let ctx = RequestContext::new(rmcp::model::NumberOrString::Number(1), peer.clone());
        poll_ready(s.call_tool(rmcp_params("lookup_user_json", &call.input), ctx))
    };
    let rmcp_quickstart = |s: &RmcpServer| {
        let ctx = RequestContext::new(rmcp::model::NumberOrString::Number(1), peer.clone());
        let tcc = ToolCallContext::new(s, rmcp_params(&call.name, &call.input), ctx);
        poll_ready(RmcpServer::tool_router().call(tcc))
    };

    let toolset = rig_toolset();
    let mut rig_ctx = ToolContext::default();
    let rig_call = |ctx: &mut ToolContext| {
        poll_ready(toolset.execute(&call.name, call.input.to_string(), ctx))
    };

    // Every side answers the same text.
    assert_eq!(limit(&call.input), common::EXPECTED);
    assert_eq!(result_text(poll_ready(session.call(&call))), EXPECTED);
    assert_eq!(rmcp_text(rmcp_call(&server)), EXPECTED);
    assert_eq!(rmcp_text(rmcp_quickstart(&server)), EXPECTED);
    assert_eq!(rmcp_text(rmcp_json(&server)), EXPECTED);
    assert_eq!(rig_text(&rig_call(&mut rig_ctx)), EXPECTED);

    {
        let mut sides = [
            Side::new("limit", || keep(limit(&call.input))),
            Side::new("toolgate", || keep(poll_ready(session.call(ids.next())))),
            Side::new("rmcp", || keep(rmcp_call(&server))),
            Side::new("rmcp_quickstart", || keep(rmcp_quickstart(&server))),
            Side::new("rig", || keep(rig_call(&mut rig_ctx))),
            Side::new("rmcp_json", || keep(rmcp_json(&server))),
        ];
        let ns = interleave(&mut sides, rounds, batch);
        for (s, v) in sides.iter().zip(&ns) {
            figure(&format!("ns_per_call_{}", s.name), median(v));
        }
        figure("toolgate_4hooks_over_limit", median_ratio(&ns[1], &ns[0]));
        figure("rmcp_over_limit", median_ratio(&ns[2], &ns[0]));
        figure("rmcp_quickstart_over_limit", median_ratio(&ns[3], &ns[0]));
        figure("rig_over_limit", median_ratio(&ns[4], &ns[0]));
        figure("toolgate_over_rmcp", median_ratio(&ns[1], &ns[2]));
        figure("toolgate_over_rig", median_ratio(&ns[1], &ns[4]));
        figure("rmcp_json_over_limit", median_ratio(&ns[5], &ns[0]));
        figure("toolgate_over_rmcp_json", median_ratio(&ns[1], &ns[5]));
    }

    let allocs = [
        (
            "limit",
            count_allocs(alloc_calls, || keep(limit(&call.input))).0,
        ),
        (
            "toolgate",
            count_allocs(alloc_calls, || keep(poll_ready(session.call(ids.next())))).0,
        ),
        (
            "rmcp",
            count_allocs(alloc_calls, || keep(rmcp_call(&server))).0,
        ),
        (
            "rmcp_quickstart",
            count_allocs(alloc_calls, || keep(rmcp_quickstart(&server))).0,
        ),
        (
            "rig",
            count_allocs(alloc_calls, || keep(rig_call(&mut rig_ctx))).0,
        ),
        (
            "rmcp_json",
            count_allocs(alloc_calls, || keep(rmcp_json(&server))).0,
        ),
    ];
    for (name, a) in allocs {
        figure(&format!("allocs_per_call_{name}"), a);
    }
    // The hook runs the measured session's calls carried, per call: 4 when every call ran its
    // rules (none was a replay).
    let (observed_calls, hook_runs) = common::hooks::observed();
    figure(
        "toolgate_hook_runs_per_call",
        hook_runs as f64 / observed_calls.max(1) as f64,
    );
    figure("bench_seconds", started.elapsed().as_secs_f64());
}
