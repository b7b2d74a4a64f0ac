//! MCP (feature `mcp`): the support agent served by `toolgate::mcp::McpServer`, driven by rmcp's
//! own client, in process over a `tokio::io::duplex` pipe and as a child process over stdio
//! (the `mcp_server` binary); the identity the host gives; a halt that ends one session only; and
//! `McpGuard`, a dispatcher of its own in front of the example server, with its outer and the
//! server's inner rules both applied and the inner outcome on the outer audit line. With
//! `mcp-http`, `http.rs` does the same over streamable HTTP on loopback.
#![cfg(feature = "mcp")]

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use toolgate::mcp::rmcp::model::{CallToolRequestParams, CallToolResult};
use toolgate::mcp::rmcp::service::{RoleClient, RunningService};
use toolgate::mcp::rmcp::{self, ServiceExt};
use toolgate::mcp::{HALTED_SESSION_MESSAGE, McpGuard, McpServer, NO_IDENTITY_MESSAGE};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolUse,
    audit::AuditLog,
    dispatch::{Clock, HookError, PreHookDef},
};

// What the workspace's tests share (tests/test-support/).
use toolgate_test_support as support;

// Streamable HTTP (feature `mcp-http`): the same server behind hyper on loopback.
#[cfg(feature = "mcp-http")]
mod http;

// The MCP server and guard tried as an attacker would.
mod review;

use support::{HALT_TEXT, TempDir, json_lines};

use support_agent::agent::Agent;
use support_agent::mcp_server;
use support_agent::specialist::Specialist;

/// The path of one of the support agent's items.
fn agent_item(item: &str) -> String {
    format!("{}::{item}", support_agent::AGENT_PATH)
}

/// The `Halt` a call must end in (a test fails on any other answer).
fn halt_of(r: Result<toolgate::ToolResult, toolgate::CallError>) -> toolgate::Halt {
    match r {
        Err(toolgate::CallError::Halt(h)) => h,
        other => panic!("expected a halt, got {other:?}"),
    }
}

/// A current-thread tokio runtime (rmcp's transports run on tokio).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The example's options: `user`, premium, session `s_mcp`, audit folder `audit`.
fn options(user: &str, audit: &Path) -> mcp_server::Options {
    mcp_server::Options {
        user: Some(user.into()),
        tier: Some("premium".into()),
        session: Some("s_mcp".into()),
        audit: audit.to_path_buf(),
        http: None,
    }
}

/// The text a guard answers when its remote server did not answer a call (the library's
/// `texts::MCP_REMOTE_FAILED`, pinned here as the model reads it).
const REMOTE_FAILED: &str = "Error: the tool server did not answer, so the call may not have \
     run. The details were logged for the operator.";

/// The `tools/list` golden file of the support agent's refunds specialist.
const GOLDEN_LIST: &str = "tests/golden/mcp/tools_list.json";

/// [`GOLDEN_LIST`], parsed.
fn golden_list() -> Value {
    serde_json::from_str(&std::fs::read_to_string(GOLDEN_LIST).unwrap()).unwrap()
}

type Client = RunningService<RoleClient, ()>;

/// Serves `server` over an in-memory pipe and connects rmcp's client to it.
async fn connect(server: McpServer) -> (Client, tokio::task::JoinHandle<()>) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let served = tokio::spawn(async move {
        let running = server.serve(theirs).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let client = ().serve(ours).await.expect("initialize succeeds");
    (client, served)
}

/// Serves `server` (toolgate's, or a remote of the tests' own) over an in-memory pipe and
/// connects a guard to it: the guard, and the server's task.
async fn guard_over_pipe<S>(server: S) -> (McpGuard, tokio::task::JoinHandle<()>)
where
    S: rmcp::ServerHandler + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let served = tokio::spawn(async move {
        let running = server.serve(theirs).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let guard = McpGuard::connect(ours)
        .await
        .expect("initialize and tools/list");
    (guard, served)
}

/// Closes the client's connection and waits for the server's task to end (a panic in it fails
/// the test).
async fn close(client: Client, served: tokio::task::JoinHandle<()>) {
    client.cancel().await.unwrap();
    served.await.unwrap();
}

/// Neither an audit line nor a summary line in `dir`.
fn assert_nothing_audited(dir: &Path) {
    assert_eq!(
        (audit_lines(dir), summaries(dir)),
        (Vec::<Value>::new(), Vec::<Value>::new())
    );
}

/// Calls `name` with `arguments` and returns the whole result as JSON.
async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .expect("tools/call answers a result, never a JSON-RPC error");
    serde_json::to_value(result).unwrap()
}

/// An `isError` result with one text item, and its outcome (and hook) in `_meta`.
fn error_result(text: &str, meta: Value) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true, "_meta": meta})
}

/// The audit lines of `dir`, each without its time stamp and hash (`ts`, `prev`) and with its
/// measured durations 0, so the rest compares exactly.
fn audit_lines(dir: &Path) -> Vec<Value> {
    json_lines(&dir.join("audit_log.jsonl"))
        .into_iter()
        .map(|mut line| {
            let map = line.as_object_mut().unwrap();
            map.remove("ts");
            map.remove("prev");
            support::zero_durations(&mut line);
            line
        })
        .collect()
}

/// A rule of the gateway that lets every call through.
fn allow_all() -> PreHookDef {
    PreHookDef::sync("gateway::allow_all", 1, |_env, _call| Ok(Decision::Allow))
}

/// Calls `tool` with `input` as the `tool_use` `id` in `session`: the result's `is_error` and
/// its text, what the model would read.
async fn answer(session: &toolgate::Session, id: &str, tool: &str, input: Value) -> (bool, String) {
    let result = session.call(&ToolUse::new(id, tool, input)).await.unwrap();
    (result.is_error, result.content_text().into_owned())
}

/// The named members of each audit line, in order, as one JSON array per line (an absent
/// member is `null`): what a test pins of the lines when the rest is asserted elsewhere.
fn audit_fields(dir: &Path, keys: &[&str]) -> Vec<Value> {
    audit_lines(dir)
        .into_iter()
        .map(|line| keys.iter().map(|key| line[key].clone()).collect())
        .collect()
}

/// The session summary lines of `dir`, reduced to what they count.
fn summaries(dir: &Path) -> Vec<Value> {
    json_lines(&dir.join("session_summaries.jsonl"))
        .into_iter()
        .map(|line| {
            json!({"session_id": line["session_id"], "user_id": line["user_id"],
                   "calls": line["calls"], "outcomes": line["outcomes"]})
        })
        .collect()
}

/// An audit line as the tests compare it (see [`audit_lines`]).
fn line(id: &str, tool: &str, input: Value, outcome: &str, content: &str, extra: Value) -> Value {
    let mut out: Map<String, Value> = serde_json::from_value(json!({
        "session_id": "s_mcp", "user_id": "u_001", "tier": "premium", "tool_use_id": id,
        "tool": tool, "input": input, "outcome": outcome, "is_error": outcome != "ok"}))
    .unwrap();
    out.insert("content".into(), Value::from(content));
    out.insert("duration_us".into(), Value::from(0));
    if let Value::Object(extra) = extra {
        out.extend(extra);
    }
    Value::Object(out)
}

const U001: &str = r#"{"user_id":"u_001","tier":"premium","orders":["o_1001","o_1002"]}"#;

/// Why `large_refund_needs_approval` asks about a refund of 25000 cents.
const ASK_REASON: &str =
    "a refund of 25000 cents is above 20000 cents and needs a person's approval";

/// A refund above 20000 cents asks for a person; this server has no approver.
const ASK_BLOCKED: &str = "BLOCKED: this call needs a person's approval, and none can be given \
     here (a refund of 25000 cents is above 20000 cents and needs a person's approval). Tell the \
     user it was not done and that a person must approve it.";

fn blocked_order(order: &str) -> String {
    format!(
        "BLOCKED: order {order} is not one of the signed-in customer's orders. Ask the customer \
         to check the order number (lookup_user lists their orders)."
    )
}

// ======================================================================= served in process

#[test]
fn initialize_and_tools_list_over_an_in_memory_pipe() {
    let audit = TempDir::new("mcp-list");
    runtime().block_on(async {
        let server = mcp_server::server(&options("u_001", &audit)).unwrap();
        let (client, served) = connect(server).await;
        let info = serde_json::to_value(client.peer_info().expect("initialized")).unwrap();
        assert_eq!(
            (&info["serverInfo"], &info["capabilities"]),
            (
                // toolgate's version: the workspace's, which this package shares.
                &json!({"name": "toolgate", "version": env!("CARGO_PKG_VERSION")}),
                &json!({"tools": {}})
            )
        );
        let tools = client.list_all_tools().await.unwrap();
        let listed = serde_json::to_value(&tools).unwrap();
        let golden = golden_list();
        assert_eq!(listed, golden);
        close(client, served).await;
    });
    // No call, no session: nothing audited.
    assert_nothing_audited(&audit);
}

/// The golden file is the dispatcher's own MCP entries with each tool's effect as annotations.
#[test]
fn the_golden_list_is_the_dispatchers_mcp_entries_with_annotations() {
    let agent = Agent::build(Specialist::Refunds, None).unwrap();
    let d = &agent.dispatcher;
    let entries: Vec<Value> = d
        .tool_definitions_for(toolgate::provider::Provider::Mcp)
        .unwrap()
        .iter()
        .map(|entry| {
            let mut entry = entry.clone();
            let name = entry["name"].as_str().unwrap().to_owned();
            let effect = d.tool_effect(&name).expect("every tool has an effect");
            entry["annotations"] = Value::Object(effect.mcp_annotations());
            entry
        })
        .collect();
    let entries = Value::Array(entries);
    // `TOOLGATE_BLESS=1` rewrites the file (as tests/providers does): review the diff.
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        let text = format!("{}\n", serde_json::to_string_pretty(&entries).unwrap());
        std::fs::write(GOLDEN_LIST, text).unwrap();
    }
    assert_eq!(entries, golden_list());
}

#[test]
fn calls_over_an_in_memory_pipe_get_the_messages_api_texts_and_one_audit_line_each() {
    let audit = TempDir::new("mcp-calls");
    runtime().block_on(async {
        let server = mcp_server::server(&options("u_001", &audit)).unwrap();
        let (client, served) = connect(server).await;

        // Allowed: the tool's content (its JSON as text; the tool's output has no object
        // schema, so no structuredContent).
        assert_eq!(
            call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
            json!({"content": [{"type": "text", "text": U001}], "isError": false,
                   "_meta": {"toolgate/outcome": "ok"}})
        );
        // Blocked by a rule: the `BLOCKED:` text, `isError`, the rule in `_meta`.
        assert_eq!(
            call(&client, "get_order_details", json!({"order_id": "o_2001"})).await,
            error_result(
                &blocked_order("o_2001"),
                json!({"toolgate/outcome": "blocked",
                       "toolgate/blocked_by": agent_item("policy::own_records_only")})
            )
        );
        // The client's arguments never choose the user: the context is the host's.
        assert_eq!(
            call(&client, "lookup_user", json!({"user_id": "u_004"})).await,
            error_result(
                "BLOCKED: this conversation can only use the signed-in customer's own account, \
                 and u_004 is not it. Use the signed-in customer's id, u_001, or ask them what \
                 they need for their own account.",
                json!({"toolgate/outcome": "blocked",
                       "toolgate/blocked_by": agent_item("policy::own_records_only")})
            )
        );
        // Invalid input.
        assert_eq!(
            call(&client, "lookup_user", json!({"user": "u_001"})).await,
            error_result(
                "Error: invalid input for tool `lookup_user` (2 problems):\n- unknown field `user`, \
                 expected one of `user_id`\n- missing field `user_id`\nSend an input that \
                 matches the tool's input_schema.",
                json!({"toolgate/outcome": "invalid_input"})
            )
        );
        // Unknown tool.
        assert_eq!(
            call(&client, "delete_account", json!({})).await,
            error_result(
                "Error: unknown tool 'delete_account'. Available tools: get_order_details, \
                 issue_refund, lookup_user, prepare_case_file, search_faq.",
                json!({"toolgate/outcome": "unknown_tool"})
            )
        );
        // A rule asks for a person, and this server has no approver: blocked with the reason.
        assert_eq!(
            call(
                &client,
                "issue_refund",
                json!({"order_id": "o_1001", "amount_cents": 25000})
            )
            .await,
            error_result(
                ASK_BLOCKED,
                json!({"toolgate/outcome": "blocked",
                       "toolgate/blocked_by": agent_item("policy::large_refund_needs_approval")})
            )
        );
        close(client, served).await;
    });
    let own = agent_item("policy::own_records_only");
    let ask = agent_item("policy::large_refund_needs_approval");
    let deny_run = |hook: &str| json!([{"hook": hook, "decision": "deny", "duration_us": 0}]);
    assert_eq!(
        audit_lines(&audit),
        vec![
            line(
                "s_mcp/1",
                "lookup_user",
                json!({"user_id": "u_001"}),
                "ok",
                U001,
                json!({"hooks": [{"hook": own, "decision": "allow", "duration_us": 0}]})
            ),
            line(
                "s_mcp/2",
                "get_order_details",
                json!({"order_id": "o_2001"}),
                "blocked",
                &blocked_order("o_2001"),
                json!({"blocked_by": own, "hooks": deny_run(&own)})
            ),
            line(
                "s_mcp/3",
                "lookup_user",
                json!({"user_id": "u_004"}),
                "blocked",
                "BLOCKED: this conversation can only use the signed-in customer's own account, \
                 and u_004 is not it. Use the signed-in customer's id, u_001, or ask them what \
                 they need for their own account.",
                json!({"blocked_by": own, "hooks": deny_run(&own)})
            ),
            line(
                "s_mcp/4",
                "lookup_user",
                json!({"user": "u_001"}),
                "invalid_input",
                "Error: invalid input for tool `lookup_user` (2 problems):\n- unknown field `user`, \
                 expected one of `user_id`\n- missing field `user_id`\nSend an input that \
                 matches the tool's input_schema.",
                json!({})
            ),
            line(
                "s_mcp/5",
                "delete_account",
                json!({}),
                "unknown_tool",
                "Error: unknown tool 'delete_account'. Available tools: get_order_details, \
                 issue_refund, lookup_user, prepare_case_file, search_faq.",
                json!({})
            ),
            line(
                "s_mcp/6",
                "issue_refund",
                json!({"order_id": "o_1001", "amount_cents": 25000}),
                "blocked",
                ASK_BLOCKED,
                json!({
                    "asked_by": [{"hook": ask, "reason": ASK_REASON}],
                    "blocked_by": ask,
                    "hooks": [
                        {"hook": agent_item("policy::premium_only"), "decision": "allow",
                         "duration_us": 0},
                        {"hook": own, "decision": "allow", "duration_us": 0},
                        {"hook": ask, "decision": "ask", "duration_us": 0},
                        {"hook": agent_item("policy::weekly_refund_limit"),
                         "decision": "allow", "duration_us": 0},
                    ],
                    "detail": format!("the call needs a person's approval (asked by `{ask}`: \
                        {ASK_REASON}) and this dispatcher has no approver; only \
                        Session::respond can pause for one"),
                })
            ),
        ]
    );
    // The connection closed: the session ended, its Stop hooks ran once.
    assert_eq!(
        summaries(&audit),
        vec![
            json!({"session_id": "s_mcp", "user_id": "u_001", "calls": 6,
            "outcomes": {"ok": 1, "blocked": 3, "invalid_input": 1, "unknown_tool": 1}})
        ]
    );
}

#[test]
fn tool_use_ids_are_made_per_connection_so_two_connections_never_share_an_answer() {
    let audit = TempDir::new("mcp-ids");
    let mut o = options("u_001", &audit);
    o.session = None;
    let first = mcp_server::server(&o).unwrap();
    let second = first.new_connection();
    let ids = [
        first.session_id().to_owned(),
        second.session_id().to_owned(),
    ];
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        let made = format!("mcp-{}-", std::process::id());
        assert!(id.starts_with(&made), "{id}");
    }
    runtime().block_on(async {
        for server in [first, second] {
            let (client, served) = connect(server).await;
            // Same JSON-RPC id (each client counts from 0), same input, two connections:
            // each call runs, each under an id of its own connection.
            assert_eq!(
                call(&client, "lookup_user", json!({"user_id": "u_001"})).await["content"],
                json!([{"type": "text", "text": U001}])
            );
            close(client, served).await;
        }
    });
    let lines = audit_fields(&audit, &["session_id", "tool_use_id", "replay"]);
    assert_eq!(
        lines,
        vec![
            json!([ids[0], format!("{}/1", ids[0]), null]),
            json!([ids[1], format!("{}/1", ids[1]), null]),
        ]
    );
}

#[test]
fn a_call_without_an_identity_is_refused_and_nothing_runs() {
    let audit = TempDir::new("mcp-anon");
    runtime().block_on(async {
        let log = AuditLog::open(audit.path()).unwrap();
        let agent = Agent::build(Specialist::Refunds, Some(&log)).unwrap();
        let server = McpServer::new(agent.dispatcher, |_caller| None).unwrap();
        let (client, served) = connect(server).await;
        assert_eq!(
            call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
            json!({"content": [{"type": "text", "text": NO_IDENTITY_MESSAGE}], "isError": true})
        );
        close(client, served).await;
    });
    assert_nothing_audited(&audit);
}

/// A rule that cannot decide (an `Err`) halts its session: the halt's text, the session ends
/// (its Stop hooks run), the same caller's next call is refused; another user on the same
/// connection goes on.
#[test]
fn a_failing_rule_halts_one_session_and_the_server_goes_on() {
    let audit = TempDir::new("mcp-halt");
    let fails_for_u007 = |extra: toolgate::dispatch::DispatcherBuilder| {
        extra.pre_hook(PreHookDef::sync("ops::customer_db", 1, |env, _call| {
            if env.context().user_id() == "u_007" {
                Err(HookError::new("the customer database is down"))
            } else {
                Ok(Decision::Allow)
            }
        }))
    };
    runtime().block_on(async {
        let log = AuditLog::open(audit.path()).unwrap();
        let agent = Agent::build_with(Specialist::Refunds, Some(&log), fails_for_u007).unwrap();
        // The user is read from the request's `_meta` here, standing in for a host's auth
        // layer: the identity comes from the request context, not from the arguments.
        let server = McpServer::new(agent.dispatcher, |caller| {
            let user = caller.request.meta.get("user")?.as_str()?.to_owned();
            Some(HookContext::builder(user, "s_halt").tier("premium").build())
        })
        .unwrap()
        .outcomes_in_meta(true);
        let (client, served) = connect(server).await;
        let as_user = |user: &str, name: &str, args: Value| {
            let Value::Object(args) = args else { panic!() };
            let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
            let mut meta = rmcp::model::RequestMetaObject::default();
            meta.insert("user".into(), Value::from(user));
            params.meta = Some(meta);
            let peer = client.peer().clone();
            async move { serde_json::to_value(peer.call_tool(params).await.unwrap()).unwrap() }
        };
        assert_eq!(
            as_user("u_007", "lookup_user", json!({"user_id": "u_007"})).await,
            error_result(
                HALT_TEXT,
                json!({"toolgate/outcome": "hook_failed", "toolgate/blocked_by": "ops::customer_db"})
            )
        );
        assert_eq!(
            as_user("u_007", "lookup_user", json!({"user_id": "u_007"})).await,
            error_result(HALTED_SESSION_MESSAGE, json!({"toolgate/outcome": "blocked"}))
        );
        assert_eq!(
            as_user("u_001", "lookup_user", json!({"user_id": "u_001"})).await["content"],
            json!([{"type": "text", "text": U001}])
        );
        close(client, served).await;
    });
    // The refused call after the halt ran nothing and has no line.
    assert_eq!(
        audit_fields(&audit, &["user_id", "outcome", "blocked_by"]),
        vec![
            json!(["u_007", "hook_failed", "ops::customer_db"]),
            json!(["u_001", "ok", null]),
        ]
    );
    // The halted session ended at its halt; u_001's when the connection closed.
    assert_eq!(
        summaries(&audit),
        vec![
            json!({"session_id": "s_halt", "user_id": "u_007", "calls": 1,
                   "outcomes": {"hook_failed": 1}}),
            json!({"session_id": "s_halt", "user_id": "u_001", "calls": 1,
                   "outcomes": {"ok": 1}}),
        ]
    );
}

// ============================================================ the example as a child process

/// The command that starts the example server as `u_001`, premium, session `s_mcp`.
fn example_command(audit: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp_server"));
    command
        .args([
            "--user",
            "u_001",
            "--tier",
            "premium",
            "--session",
            "s_mcp",
            "--audit",
        ])
        .arg(audit);
    command
}

#[test]
fn the_example_server_as_a_child_process_over_stdio() {
    let audit = TempDir::new("mcp-child");
    runtime().block_on(async {
        // Spawned here, not by rmcp's `TokioChildProcess` (which kills a child still running 3 s
        // after the client closes): the test waits for the child to exit on its own.
        let mut child = example_command(&audit)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = ().serve(transport).await.expect("initialize succeeds");
        let golden = golden_list();
        let tools = client.list_all_tools().await.unwrap();
        // The child registers its items under its own module path; the list has no paths.
        assert_eq!(serde_json::to_value(&tools).unwrap(), golden);
        assert_eq!(
            call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
            json!({"content": [{"type": "text", "text": U001}], "isError": false,
                   "_meta": {"toolgate/outcome": "ok"}})
        );
        assert_eq!(
            call(&client, "get_order_details", json!({"order_id": "o_3001"})).await,
            error_result(
                &blocked_order("o_3001"),
                json!({"toolgate/outcome": "blocked",
                       "toolgate/blocked_by": "support_agent::policy::own_records_only"})
            )
        );
        client.cancel().await.unwrap();
        // The child exits when its standard input closes, after writing its summary line.
        let exit = tokio::time::timeout(Duration::from_secs(60), child.wait())
            .await
            .expect("the child exits when its input closes")
            .unwrap();
        assert!(exit.success(), "{exit}");
    });
    let outcomes = audit_fields(&audit, &["tool_use_id", "outcome"]);
    assert_eq!(
        outcomes,
        vec![json!(["s_mcp/1", "ok"]), json!(["s_mcp/2", "blocked"])]
    );
    assert_eq!(
        summaries(&audit),
        vec![
            json!({"session_id": "s_mcp", "user_id": "u_001", "calls": 2,
                    "outcomes": {"ok": 1, "blocked": 1}})
        ]
    );
}

// ============================================================================ the guard

/// A dispatcher of its own in front of the example server (a child process): its rule (no FAQ
/// searches through this gateway) and the server's rules both apply; the outer audit line of a
/// call the server blocked says `blocked` with the server's hook.
#[test]
fn a_guard_in_front_of_the_example_server_applies_both_sets_of_rules() {
    let inner_audit = TempDir::new("mcp-guard-inner");
    let outer_audit = TempDir::new("mcp-guard-outer");
    let inner_own = "support_agent::policy::own_records_only";
    runtime().block_on(async {
        let guard = McpGuard::child_process(example_command(&inner_audit))
            .await
            .expect("the example server starts");
        let names: Vec<&str> = guard
            .definitions()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "get_order_details",
                "issue_refund",
                "lookup_user",
                "prepare_case_file",
                "search_faq"
            ]
        );
        let outer = Dispatcher::builder()
            .wrap(guard)
            .pre_hook(PreHookDef::sync("gateway::no_faq", 1, |_env, call| {
                Ok(if call.name == "search_faq" {
                    Decision::deny("the FAQ is not served through this gateway.")
                } else {
                    Decision::Allow
                })
            }))
            .audit_log(AuditLog::open(outer_audit.path()).unwrap())
            .build()
            .expect("the remote schemas pass the build's checks");
        let session = outer.session(
            HookContext::builder("gw_user", "s_gw")
                .clock(Clock::fixed(
                    SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_600_000),
                ))
                .build(),
        );
        // Outer rule.
        assert_eq!(
            answer(
                &session,
                "toolu_1",
                "search_faq",
                json!({"query": "refund"})
            )
            .await,
            (
                true,
                "BLOCKED: the FAQ is not served through this gateway.".to_owned()
            )
        );
        // Inner rule (the server runs as u_001).
        assert_eq!(
            answer(
                &session,
                "toolu_2",
                "get_order_details",
                json!({"order_id": "o_2001"})
            )
            .await,
            (true, blocked_order("o_2001"))
        );
        // Invalid for the remote schema: refused by the guard, the server never sees it.
        assert_eq!(
            answer(&session, "toolu_3", "lookup_user", json!({"user_id": 7})).await,
            (
                true,
                "Error: invalid input for tool `lookup_user` at `user_id`: expected a string, \
                 found the number 7. Send an input that matches the tool's input_schema."
                    .to_owned()
            )
        );
        // Allowed by both.
        assert_eq!(
            answer(
                &session,
                "toolu_4",
                "lookup_user",
                json!({"user_id": "u_001"})
            )
            .await,
            (false, U001.to_owned())
        );
        session.end();
    });
    let outer = audit_fields(&outer_audit, &["tool_use_id", "outcome", "blocked_by"]);
    assert_eq!(
        outer,
        vec![
            json!(["toolu_1", "blocked", "gateway::no_faq"]),
            json!(["toolu_2", "blocked", inner_own]),
            json!(["toolu_3", "invalid_input", null]),
            json!(["toolu_4", "ok", null]),
        ]
    );
    // Only the calls the gateway let through reached the server.
    let inner = audit_fields(&inner_audit, &["tool", "outcome"]);
    assert_eq!(
        inner,
        vec![
            json!(["get_order_details", "blocked"]),
            json!(["lookup_user", "ok"])
        ]
    );
}

/// The guard over an in-memory pipe to a server that does not report outcomes: its `isError`
/// results are `tool_error` on the guard's line; once the server is gone, a call is a
/// `tool_error` whose detail (rmcp's error) is for the operator only.
#[test]
fn a_guard_records_remote_errors_as_tool_errors_and_a_broken_connection_with_its_detail() {
    let outer_audit = TempDir::new("mcp-guard-broken");
    runtime().block_on(async {
        let agent = Agent::build(Specialist::Refunds, None).unwrap();
        let server = McpServer::new(agent.dispatcher, |caller| {
            Some(HookContext::builder("u_001", caller.mcp_session_id).build())
        })
        .unwrap();
        let (guard, served) = guard_over_pipe(server).await;
        let outer = Dispatcher::builder()
            .wrap(guard)
            .pre_hook(allow_all())
            .audit_log(AuditLog::open(outer_audit.path()).unwrap())
            .build()
            .unwrap();
        let session = outer.session(HookContext::builder("gw_user", "s_gw").build());
        assert_eq!(
            answer(
                &session,
                "toolu_1",
                "get_order_details",
                json!({"order_id": "o_2001"})
            )
            .await,
            (true, blocked_order("o_2001"))
        );
        served.abort();
        assert!(served.await.unwrap_err().is_cancelled());
        assert_eq!(
            answer(
                &session,
                "toolu_2",
                "lookup_user",
                json!({"user_id": "u_001"})
            )
            .await,
            (true, REMOTE_FAILED.to_owned())
        );
        session.end();
    });
    let lines = audit_fields(
        &outer_audit,
        &["tool_use_id", "outcome", "blocked_by", "detail"],
    );
    assert_eq!(
        lines,
        vec![
            json!(["toolu_1", "tool_error", null, null]),
            json!([
                "toolu_2",
                "tool_error",
                null,
                "the MCP server did not answer tools/call \"lookup_user\": Transport closed"
            ]),
        ]
    );
}

/// A rule of the server that cannot decide (its outcome `hook_failed` in `_meta`) halts the
/// guard's call too (fail closed), naming the server's hook.
#[test]
fn a_halt_inside_the_server_halts_the_guard_too() {
    runtime().block_on(async {
        let agent = Agent::build_with(Specialist::Refunds, None, |b| {
            b.pre_hook(PreHookDef::sync("ops::customer_db", 1, |_env, _call| {
                Err(HookError::new("the customer database is down"))
            }))
        })
        .unwrap();
        let server = McpServer::new(agent.dispatcher, |caller| {
            Some(HookContext::builder("u_001", caller.mcp_session_id).build())
        })
        .unwrap()
        .outcomes_in_meta(true);
        let (guard, _served) = guard_over_pipe(server).await;
        let outer = Dispatcher::builder()
            .wrap(guard)
            .pre_hook(allow_all())
            .build()
            .unwrap();
        let session = outer.session(HookContext::builder("gw_user", "s_gw").build());
        let halt = halt_of(
            session
                .call(&ToolUse::new(
                    "toolu_1",
                    "lookup_user",
                    json!({"user_id": "u_001"}),
                ))
                .await,
        );
        assert_eq!(
            (
                halt.outcome,
                halt.hook.as_str(),
                halt.tool_use_id.as_str(),
                halt.result()
                    .map(|r| (r.is_error, r.content_text().into_owned()))
            ),
            (
                toolgate::audit::Outcome::HookFailed,
                "ops::customer_db",
                "toolu_1",
                Some((true, HALT_TEXT.to_owned()))
            )
        );
    });
}
