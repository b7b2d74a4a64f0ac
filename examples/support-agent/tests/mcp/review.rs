//! The MCP server and guard tried as an attacker would (a review): an identity function that
//! panics, a remote server that hangs, sends a schema that is not one, or answers `isError`, seen
//! through a guard; each as a real client or server over an in-memory pipe. The second review: two
//! calls in flight at once on one connection, a call the client cancels, a call without
//! `arguments`, huge and deep arguments, a remote tool named like a local one, and a remote image
//! through a guard. The third: two remote tools of one name (two servers, or one listing it twice),
//! and the failures of a tool that declares an `outputSchema`.
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use toolgate::mcp::rmcp::service::{RequestContext, RoleServer};
use toolgate::mcp::rmcp::{self, ErrorData};
use toolgate::mcp::{McpGuard, McpServer, NO_IDENTITY_MESSAGE};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolError, ToolUse,
    audit::AuditLog,
    dispatch::{PreHookDef, ToolDef},
};

use super::{
    allow_all, answer, assert_nothing_audited, audit_fields, call, close, connect, guard_over_pipe,
    runtime,
};
use support_agent::agent::Agent;
use support_agent::specialist::Specialist;
use toolgate_test_support::{PANIC_TEXT, TempDir, tool_timeout_text};

/// An identity function that panics (a host's header parsing gone wrong, on a request the
/// attacker shaped) refuses the call with the no-identity text, as `None` does: the client is
/// answered, nothing runs, nothing is audited, and the connection goes on serving.
#[test]
fn an_identity_function_that_panics_refuses_the_call_and_the_connection_goes_on() {
    let audit = TempDir::new("mcp-review-identity-panic");
    runtime().block_on(async {
        let agent = Agent::build(
            Specialist::Refunds,
            Some(&AuditLog::open(audit.path()).unwrap()),
        )
        .unwrap();
        let server = McpServer::new(agent.dispatcher, |caller| {
            // A host that trusts its transport to always say who is calling.
            let user = caller
                .request
                .extensions
                .get::<String>()
                .expect("the host's transport names the caller")
                .clone();
            Some(HookContext::builder(user, caller.mcp_session_id).build())
        })
        .unwrap();
        let (client, served) = connect(server).await;
        let refused =
            json!({"content": [{"type": "text", "text": NO_IDENTITY_MESSAGE}], "isError": true});
        for _ in 0..2 {
            let answer = tokio::time::timeout(
                Duration::from_secs(10),
                call(&client, "lookup_user", json!({"user_id": "u_001"})),
            )
            .await
            .expect("the client is answered");
            assert_eq!(answer, refused);
        }
        close(client, served).await;
    });
    assert_nothing_audited(&audit);
}

/// A remote MCP server of the tests' own: one tool, `wipe`, listed as `tool` says, whose call
/// sleeps `delay` and then answers `answer`.
struct Remote {
    tool: Value,
    delay: Duration,
    answer: Value,
}

impl rmcp::ServerHandler for Remote {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool: Tool = serde_json::from_value(self.tool.clone()).unwrap();
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        tokio::time::sleep(self.delay).await;
        let result: CallToolResult = serde_json::from_value(self.answer.clone()).unwrap();
        Ok(CallToolResponse::Complete(result))
    }
}

/// `wipe`'s `tools/list` entry with `annotations`.
fn wipe(annotations: Value) -> Value {
    json!({"name": "wipe", "description": "Deletes the account.",
           "inputSchema": {"type": "object", "properties": {}}, "annotations": annotations})
}

/// A remote tool that hangs past the gateway's deadline is the gateway's `tool_timeout`, with
/// the Messages API text; a remote `isError` result is a `tool_error` whose text the model
/// reads as the remote wrote it. One audit line each.
#[test]
fn a_remote_that_hangs_is_a_timeout_and_a_remote_is_error_a_tool_error() {
    let audit = TempDir::new("mcp-review-remote");
    let texts = runtime().block_on(async {
        let (slow, slow_served) = guard_over_pipe(Remote {
            tool: wipe(json!({"readOnlyHint": false})),
            delay: Duration::from_secs(30),
            answer: json!({"content": [{"type": "text", "text": "wiped"}]}),
        })
        .await;
        let outer = Dispatcher::builder()
            .wrap(slow)
            .pre_hook(allow_all())
            .tool_timeout(Duration::from_millis(200))
            .audit_log(AuditLog::open(audit.path()).unwrap())
            .build()
            .unwrap();
        let session = outer.session(HookContext::builder("gw_user", "s_gw").build());
        let timed_out = answer(&session, "toolu_1", "wipe", json!({})).await;
        session.end();
        slow_served.abort();

        let (failing, failing_served) = guard_over_pipe(Remote {
            tool: wipe(json!({"readOnlyHint": false})),
            delay: Duration::ZERO,
            answer: json!({"content": [{"type": "text", "text": "no such account"}],
                           "isError": true}),
        })
        .await;
        let outer = Dispatcher::builder()
            .wrap(failing)
            .pre_hook(allow_all())
            .audit_log(AuditLog::open(audit.path()).unwrap())
            .build()
            .unwrap();
        let session = outer.session(HookContext::builder("gw_user", "s_gw2").build());
        let failed = answer(&session, "toolu_2", "wipe", json!({})).await;
        session.end();
        failing_served.abort();
        (timed_out, failed)
    });
    assert_eq!(
        texts,
        (
            (true, tool_timeout_text(200)),
            (true, "no such account".to_owned())
        )
    );
    assert_eq!(
        audit_fields(&audit, &["tool_use_id", "outcome", "content", "detail"]),
        vec![
            json!([
                "toolu_1",
                "tool_timeout",
                tool_timeout_text(200),
                "the tool ran past its deadline of 200 ms"
            ]),
            json!(["toolu_2", "tool_error", "no such account", null])
        ]
    );
}

/// A remote schema that fails its meta-schema check (`"type": 5`) stops the gateway's build
/// with an error naming the tool: no call can reach a tool whose input cannot be checked.
#[test]
fn a_remote_schema_that_is_not_a_schema_stops_the_gateways_build() {
    let error = runtime().block_on(async {
        let (remote, served) = guard_over_pipe(Remote {
            tool: json!({"name": "wipe", "description": "Deletes the account.",
                         "inputSchema": {"type": "object",
                                         "properties": {"account": {"type": 5}}}}),
            delay: Duration::ZERO,
            answer: json!({"content": []}),
        })
        .await;
        let built = Dispatcher::builder()
            .wrap(remote)
            .pre_hook(allow_all())
            .build();
        served.abort();
        built.err().map(|e| e.to_string())
    });
    assert_eq!(
        error.as_deref(),
        Some(
            "the dispatcher cannot be built (1 problem):\n- tool `wipe` (<wrapped caller #0>::wipe) \
             has an input schema that is not valid JSON Schema 2020-12 at \
             `/properties/account/type`: the number 5 is not a JSON Schema type (one of `array`, \
             `boolean`, `integer`, `null`, `number`, `object`, `string`); fix the schema (its \
             #[schemars(schema_with = …)] function, or the wrapped caller's definition)"
        )
    );
}

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// `slow`: sleeps past any deadline the tests set.
fn slow<'a>(
    _env: toolgate::dispatch::Env<'a>,
    _args: NoArgs,
) -> toolgate::dispatch::BoxFuture<'a, Result<String, toolgate::ToolError>> {
    Box::pin(async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok("done".to_owned())
    })
}

/// An approver that answers every request with the same [`toolgate::approval::Approval`].
struct Always(toolgate::approval::Approval);

impl toolgate::approval::Approver for Always {
    fn approve<'a>(
        &'a self,
        _request: toolgate::approval::ApprovalRequest<'a>,
    ) -> toolgate::dispatch::BoxFuture<'a, toolgate::approval::Approval> {
        let approval = self.0.clone();
        Box::pin(async move { approval })
    }
}

/// A server whose tools fail in every way a tool can, with a secret in each failure: `leak`
/// (an internal error), `boom` (a panic), `slow` (past its 200 ms deadline), `pay` (a rule
/// asks; `approver` decides, when there is one).
fn failing_server(audit: &std::path::Path, approver: Option<Always>) -> McpServer {
    let mut builder = Dispatcher::builder()
        .tool(ToolDef::sync("leak", "Fails.", |_env, _a: NoArgs| {
            Err::<String, _>(ToolError::internal(std::io::Error::other(
                "connect postgres://admin:hunter2@db.internal:5432 refused",
            )))
        }))
        .tool(ToolDef::sync(
            "boom",
            "Panics.",
            |_env, _a: NoArgs| -> Result<String, ToolError> {
                panic!("token sk-live-123 rejected")
            },
        ))
        .tool(ToolDef::new_async("slow", "Sleeps.", slow))
        .tool(ToolDef::sync("pay", "Pays.", |_env, _a: NoArgs| {
            Ok("paid".to_owned())
        }))
        .pre_hook(
            PreHookDef::sync("app::policy::pay_needs_a_person", 1, |_env, _call| {
                Ok(Decision::ask("payments need a person"))
            })
            .tools(["pay"]),
        )
        .tool_timeout(Duration::from_millis(200))
        .audit_log(AuditLog::open(audit).unwrap());
    if let Some(approver) = approver {
        builder = builder.approver(approver);
    }
    McpServer::new(builder.build().unwrap(), |caller| {
        Some(HookContext::builder("u_001", caller.mcp_session_id).build())
    })
    .unwrap()
}

/// One text item, `isError: true`, no `_meta` (the server does not put outcomes there).
fn refused(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// Every failure reaches the client as an `isError` result with the Messages API text, never
/// a JSON-RPC error, never the secret or a hook path; the secret is on the audit line only.
/// An ask is decided by the approver (approved: the tool runs; denied: blocked with the
/// person's reason) and blocked with its reason when there is none.
#[test]
fn every_failure_is_an_is_error_result_without_secrets_and_an_ask_follows_the_approver() {
    let audit = TempDir::new("mcp-review-failures");
    let approved = TempDir::new("mcp-review-approved");
    let denied = TempDir::new("mcp-review-denied");
    let (answers, with_approver) = runtime().block_on(async {
        let (client, served) = connect(failing_server(audit.path(), None)).await;
        let mut answers = Vec::new();
        for tool in ["leak", "boom", "slow", "pay"] {
            answers.push(call(&client, tool, json!({})).await);
        }
        close(client, served).await;
        let mut with_approver = Vec::new();
        for (dir, approval) in [
            (
                &approved,
                toolgate::approval::Approval::approve("ops@example.com"),
            ),
            (
                &denied,
                toolgate::approval::Approval::deny("ops@example.com", "not this month"),
            ),
        ] {
            let server = failing_server(dir.path(), Some(Always(approval)));
            let (client, served) = connect(server).await;
            with_approver.push(call(&client, "pay", json!({})).await);
            close(client, served).await;
        }
        (answers, with_approver)
    });
    assert_eq!(
        answers,
        vec![
            refused(toolgate::content::INTERNAL_ERROR_MESSAGE),
            refused(PANIC_TEXT),
            refused(&tool_timeout_text(200)),
            refused(
                "BLOCKED: this call needs a person's approval, and none can be given here \
                 (payments need a person). Tell the user it was not done and that a person must \
                 approve it."
            ),
        ]
    );
    assert_eq!(
        with_approver,
        vec![
            json!({"content": [{"type": "text", "text": "paid"}], "isError": false}),
            refused("BLOCKED: a person declined this call: not this month"),
        ]
    );
    let decided = |dir: &TempDir| audit_fields(dir, &["outcome", "approved_by", "denied_by"]);
    assert_eq!(
        (decided(&approved), decided(&denied)),
        (
            vec![json!(["ok", "ops@example.com", null])],
            vec![json!(["blocked", null, "ops@example.com"])]
        )
    );
    let lines = audit_fields(&audit, &["outcome", "detail"]);
    assert_eq!(
        lines,
        vec![
            json!([
                "tool_error",
                "connect postgres://admin:hunter2@db.internal:5432 refused"
            ]),
            json!(["panicked", "the tool panicked: token sk-live-123 rejected"]),
            json!(["tool_timeout", "the tool ran past its deadline of 200 ms"]),
            json!([
                "blocked",
                "the call needs a person's approval (asked by \
                 `app::policy::pay_needs_a_person`: payments need a person) and this \
                 dispatcher has no approver; only Session::respond can pause for one"
            ]),
        ]
    );
}

/// A remote MCP server in `sh`: it answers `initialize` and `tools/list` (one tool, `wipe`),
/// answers the first `tools/call` with a line that is not JSON and then a result that is not a
/// `CallToolResult` (`42`), and exits at the second.
const GARBAGE_SERVER: &str = r#"
id() { printf '%s' "$1" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'; }
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"garbage","version":"0"}}}\n' "$(id "$line")"
read -r line
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"wipe","description":"Deletes the account.","inputSchema":{"type":"object","properties":{}}}]}}\n' "$(id "$line")"
read -r line
printf 'this is not JSON\n'
printf '{"jsonrpc":"2.0","id":%s,"result":42}\n' "$(id "$line")"
read -r line
exit 0
"#;

/// A remote that answers garbage, then disappears: each call is a `tool_error` with the
/// guard's text for the model and rmcp's error as the operator's detail, one audit line each.
#[test]
fn a_remote_that_answers_garbage_and_then_exits_is_a_tool_error_each_time() {
    let audit = TempDir::new("mcp-review-garbage");
    let texts = runtime().block_on(async {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", GARBAGE_SERVER]);
        let remote = McpGuard::child_process(command)
            .await
            .expect("initialize and tools/list");
        let outer = Dispatcher::builder()
            .wrap(remote)
            .pre_hook(allow_all())
            .tool_timeout(Duration::from_secs(10))
            .audit_log(AuditLog::open(audit.path()).unwrap())
            .build()
            .unwrap();
        let session = outer.session(HookContext::builder("gw_user", "s_gw").build());
        let mut texts = Vec::new();
        for id in ["toolu_1", "toolu_2"] {
            texts.push(answer(&session, id, "wipe", json!({})).await);
        }
        session.end();
        texts
    });
    let did_not_answer = super::REMOTE_FAILED;
    assert_eq!(
        texts,
        vec![
            (true, did_not_answer.to_owned()),
            (true, did_not_answer.to_owned())
        ]
    );
    let lines = audit_fields(&audit, &["tool_use_id", "outcome", "detail"]);
    assert_eq!(
        lines,
        vec![
            json!([
                "toolu_1",
                "tool_error",
                "the MCP server did not answer tools/call \"wipe\": Unexpected response type"
            ]),
            json!([
                "toolu_2",
                "tool_error",
                "the MCP server did not answer tools/call \"wipe\": Transport closed"
            ]),
        ]
    );
}

/// With outcomes in `_meta`, the two refusals made before any session runs the call (no
/// identity; a halted session is checked in `a_failing_rule_halts_one_session…`) say
/// `blocked` too, as the table on `McpServer` promises for every result: a guard in front then
/// records `blocked`, not `tool_error`.
#[test]
fn a_refusal_without_identity_carries_its_outcome_in_meta_and_a_guard_records_blocked() {
    let outer_audit = TempDir::new("mcp-review-refused-meta");
    let (direct, through_guard) = runtime().block_on(async {
        let agent = Agent::build(Specialist::Refunds, None).unwrap();
        let server = McpServer::new(agent.dispatcher, |_caller| None)
            .unwrap()
            .outcomes_in_meta(true);
        let (client, served) = connect(server.new_connection()).await;
        let direct = call(&client, "lookup_user", json!({"user_id": "u_001"})).await;
        close(client, served).await;

        let (remote, served) = guard_over_pipe(server).await;
        let outer = Dispatcher::builder()
            .wrap(remote)
            .pre_hook(allow_all())
            .audit_log(AuditLog::open(outer_audit.path()).unwrap())
            .build()
            .unwrap();
        let session = outer.session(HookContext::builder("gw_user", "s_gw").build());
        let through_guard = answer(
            &session,
            "toolu_1",
            "lookup_user",
            json!({"user_id": "u_001"}),
        )
        .await;
        session.end();
        served.abort();
        (direct, through_guard)
    });
    assert_eq!(
        direct,
        json!({"content": [{"type": "text", "text": NO_IDENTITY_MESSAGE}], "isError": true,
               "_meta": {"toolgate/outcome": "blocked"}})
    );
    assert_eq!(through_guard, (true, NO_IDENTITY_MESSAGE.to_owned()));
    assert_eq!(
        audit_fields(
            &outer_audit,
            &["tool_use_id", "outcome", "blocked_by", "content"]
        ),
        vec![json!(["toolu_1", "blocked", null, NO_IDENTITY_MESSAGE])]
    );
}

/// The example's stdio server runs every call as the user on its command line, whatever the
/// call says: neither `_meta` fields named like the context's (`user_id`, `tier`,
/// `session_id`) nor arguments naming another customer change who is calling: the call is
/// `u_001`'s, blocked by `own_records_only`, on `u_001`'s audit line and session.
#[test]
fn meta_and_arguments_named_like_context_fields_do_not_change_the_caller() {
    let audit = TempDir::new("mcp-review-meta-identity");
    let answer = runtime().block_on(async {
        let server =
            support_agent::mcp_server::server(&super::options("u_001", audit.path())).unwrap();
        let (client, served) = connect(server).await;
        let Value::Object(arguments) = json!({"user_id": "u_004"}) else {
            unreachable!()
        };
        let mut params =
            CallToolRequestParams::new("lookup_user".to_owned()).with_arguments(arguments);
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.insert("user_id".into(), Value::from("u_004"));
        meta.insert("tier".into(), Value::from("premium"));
        meta.insert("session_id".into(), Value::from("s_other"));
        params.meta = Some(meta);
        let answer = client.peer().call_tool(params).await.unwrap();
        close(client, served).await;
        serde_json::to_value(answer).unwrap()
    });
    assert_eq!(
        answer,
        json!({"content": [{"type": "text", "text":
                   "BLOCKED: this conversation can only use the signed-in customer's own \
                    account, and u_004 is not it. Use the signed-in customer's id, u_001, or ask \
                    them what they need for their own account."}],
               "isError": true,
               "_meta": {"toolgate/outcome": "blocked", "toolgate/blocked_by":
                         super::agent_item("policy::own_records_only")}})
    );
    assert_eq!(
        audit_fields(audit.path(), &["user_id", "session_id", "outcome"]),
        vec![json!(["u_001", "s_mcp", "blocked"])]
    );
}

// ============================================ second review: concurrency, inputs, guard

/// Met by the two concurrent calls of
/// `two_calls_in_flight_on_one_connection_are_both_answered_and_audited_once_each`.
static MEET: std::sync::LazyLock<tokio::sync::Barrier> =
    std::sync::LazyLock::new(|| tokio::sync::Barrier::new(2));

/// `meet`: waits (up to 5 s) until a second call of it runs at the same time.
fn meet<'a>(
    _env: toolgate::dispatch::Env<'a>,
    _args: NoArgs,
) -> toolgate::dispatch::BoxFuture<'a, Result<String, toolgate::ToolError>> {
    Box::pin(async {
        match tokio::time::timeout(Duration::from_secs(5), MEET.wait()).await {
            Ok(_) => Ok("met".to_owned()),
            Err(_) => Ok("alone".to_owned()),
        }
    })
}

/// Notified when `nap` has started.
static NAP_STARTED: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// Notified when `nap` is dropped unfinished.
static NAP_DROPPED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// `nap`: says it started, then waits for ever; says so when it is dropped unfinished.
fn nap<'a>(
    _env: toolgate::dispatch::Env<'a>,
    _args: NoArgs,
) -> toolgate::dispatch::BoxFuture<'a, Result<String, toolgate::ToolError>> {
    struct Dropped;
    impl Drop for Dropped {
        fn drop(&mut self) {
            NAP_DROPPED.notify_one();
        }
    }
    Box::pin(async {
        let _dropped = Dropped;
        NAP_STARTED.notify_one();
        std::future::pending::<()>().await;
        Ok("woke".to_owned())
    })
}

/// `order`'s input: one required field.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct OrderArgs {
    /// The order.
    order_id: String,
}

/// `keep`'s input: a text, `a`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TextArgs {
    /// A text.
    #[allow(dead_code)]
    a: String,
}

/// A server for the second review: `meet`, `nap`, `order` (one required field), `ping` (no
/// parameters), `keep` (one text field), every call allowed, as `u_001`.
fn second_server(audit: &std::path::Path) -> McpServer {
    let dispatcher = Dispatcher::builder()
        .tool(ToolDef::new_async("meet", "Meets.", meet))
        .tool(ToolDef::new_async("nap", "Naps.", nap))
        .tool(ToolDef::sync(
            "order",
            "Names an order.",
            |_env, a: OrderArgs| Ok(a.order_id),
        ))
        .tool(ToolDef::sync("ping", "Pings.", |_env, _a: NoArgs| {
            Ok("pong".to_owned())
        }))
        .tool(ToolDef::sync(
            "keep",
            "Keeps anything.",
            |_env, _a: TextArgs| Ok("kept".to_owned()),
        ))
        .pre_hook(allow_all())
        .audit_log(AuditLog::open(audit).unwrap())
        .build()
        .unwrap();
    McpServer::new(dispatcher, |caller| {
        Some(HookContext::builder("u_001", caller.mcp_session_id).build())
    })
    .unwrap()
    .mcp_session_id("m1")
}

/// Two `tools/call` requests of one user in flight at once on one connection (rmcp runs
/// requests concurrently): both run at the same time (each waits for the other at a barrier),
/// both are answered, and each has one audit line under its own `tool_use_id`.
#[test]
fn two_calls_in_flight_on_one_connection_are_both_answered_and_audited_once_each() {
    let audit = TempDir::new("mcp-review-concurrent");
    let answers = runtime().block_on(async {
        let (client, served) = connect(second_server(audit.path())).await;
        let both = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(
                call(&client, "meet", json!({})),
                call(&client, "meet", json!({}))
            )
        })
        .await
        .expect("both calls are answered");
        close(client, served).await;
        both
    });
    let met = json!({"content": [{"type": "text", "text": "met"}], "isError": false});
    assert_eq!(answers, (met.clone(), met));
    let mut lines = audit_fields(&audit, &["tool_use_id", "outcome", "content"]);
    lines.sort_by_key(|line| line[0].as_str().map(str::to_owned));
    assert_eq!(
        lines,
        vec![json!(["m1/1", "ok", "met"]), json!(["m1/2", "ok", "met"])]
    );
}

/// A `tools/call` without `arguments` (MCP allows leaving it out) is a call with `{}`: a tool
/// with a required field answers the invalid-input text, a tool without parameters runs; both
/// are results, never a JSON-RPC error, and the audit lines record the input `{}`.
#[test]
fn a_call_without_arguments_is_a_call_with_an_empty_object() {
    let audit = TempDir::new("mcp-review-no-arguments");
    let answers = runtime().block_on(async {
        let (client, served) = connect(second_server(audit.path())).await;
        let mut answers = Vec::new();
        for tool in ["order", "ping"] {
            let params = CallToolRequestParams::new(tool.to_owned());
            assert_eq!(params.arguments, None);
            let result = client
                .call_tool(params)
                .await
                .expect("a result, not a JSON-RPC error");
            answers.push(serde_json::to_value(result).unwrap());
        }
        close(client, served).await;
        answers
    });
    let missing = "Error: invalid input for tool `order`: missing field `order_id`. Send an input \
                   that matches the tool's input_schema.";
    assert_eq!(
        answers,
        vec![
            refused(missing),
            json!({"content": [{"type": "text", "text": "pong"}], "isError": false}),
        ]
    );
    assert_eq!(
        audit_fields(&audit, &["tool_use_id", "input", "outcome"]),
        vec![
            json!(["m1/1", {}, "invalid_input"]),
            json!(["m1/2", {}, "ok"])
        ]
    );
}

/// `depth` arrays around `0`.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| Value::Array(vec![inner]))
}

/// Arguments nested 100 deep and a 5 MiB string are `invalid_input` results with the depth
/// and size texts (no stack overflow, no panic). Arguments nested 200 deep never reach the
/// server: rmcp's reader drops a line serde_json will not parse (its recursion limit is 128)
/// without an answer, so the client's own timeout ends that request; the connection goes on.
#[test]
fn huge_or_deep_arguments_are_invalid_input_and_deeper_than_rmcp_reads_is_dropped() {
    let audit = TempDir::new("mcp-review-huge");
    let answers = runtime().block_on(async {
        let (client, served) = connect(second_server(audit.path())).await;
        let mut answers = vec![
            call(&client, "keep", json!({"a": nested(100)})).await,
            call(&client, "keep", json!({"a": "x".repeat(5 << 20)})).await,
        ];
        let Value::Object(deep) = json!({"a": nested(200)}) else {
            unreachable!()
        };
        let dropped = tokio::time::timeout(
            Duration::from_secs(2),
            client.call_tool(CallToolRequestParams::new("keep".to_owned()).with_arguments(deep)),
        )
        .await;
        assert!(dropped.is_err(), "no answer: {dropped:?}");
        answers.push(call(&client, "ping", json!({})).await);
        close(client, served).await;
        answers
    });
    let invalid = |why: &str| {
        format!(
            "Error: invalid input for tool `keep`: {why}. Send an input that matches the tool's \
             input_schema."
        )
    };
    let too_deep = invalid("the input is nested more than 32 levels deep; flatten it");
    let too_large = invalid(
        "the input is too large: 5242888 bytes or more, over the limit of 1048576 bytes; send a \
         smaller input",
    );
    assert_eq!(
        answers,
        vec![
            refused(&too_deep),
            refused(&too_large),
            json!({"content": [{"type": "text", "text": "pong"}], "isError": false}),
        ]
    );
    assert_eq!(
        audit_fields(&audit, &["tool_use_id", "outcome", "content"]),
        vec![
            json!(["m1/1", "invalid_input", too_deep]),
            json!(["m1/2", "invalid_input", too_large]),
            json!(["m1/3", "ok", "pong"]),
        ]
    );
}

/// A remote tool named like a local tool of the gateway stops the gateway's build (two tools
/// named `wipe`): the gateway never has to guess which one a call means.
#[test]
fn a_remote_tool_named_like_a_local_one_stops_the_gateways_build() {
    let error = runtime().block_on(async {
        let (remote, served) = guard_over_pipe(Remote {
            tool: wipe(json!({"readOnlyHint": false})),
            delay: Duration::ZERO,
            answer: json!({"content": []}),
        })
        .await;
        let built = Dispatcher::builder()
            .wrap(remote)
            .tool(ToolDef::sync(
                "wipe",
                "Wipes locally.",
                |_env, _a: NoArgs| Ok("local".to_owned()),
            ))
            .pre_hook(allow_all())
            .build();
        served.abort();
        built.err().map(|e| e.to_string())
    });
    assert_eq!(
        error.as_deref(),
        Some(
            "the dispatcher cannot be built (1 problem):\n- two tools are named `wipe`: \
             <wrapped caller #0>::wipe and wipe; rename one with #[tool(name = \"…\")] or filter \
             one out"
        )
    );
}

/// A remote result with a text and an image item reaches the model through the guard as two
/// `tool_result` blocks, the image as a base64 image block; the audit line keeps the text.
#[test]
fn a_remote_image_is_kept_as_a_base64_image_block() {
    let audit = TempDir::new("mcp-review-image");
    let result = runtime().block_on(async {
        let (remote, served) = guard_over_pipe(Remote {
            tool: wipe(json!({"readOnlyHint": true})),
            delay: Duration::ZERO,
            answer: json!({"content": [
                {"type": "text", "text": "the chart"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}),
        })
        .await;
        let outer = Dispatcher::builder()
            .wrap(remote)
            .pre_hook(allow_all())
            .audit_log(AuditLog::open(audit.path()).unwrap())
            .build()
            .unwrap();
        let session = outer.session(HookContext::builder("gw_user", "s_gw").build());
        let result = session
            .call(&ToolUse::new("toolu_1", "wipe", json!({})))
            .await
            .unwrap();
        session.end();
        served.abort();
        serde_json::to_value(&result).unwrap()
    });
    assert_eq!(
        result,
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "the chart"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}]})
    );
    assert_eq!(
        audit_fields(&audit, &["tool_use_id", "outcome", "content"]),
        vec![json!(["toolu_1", "ok", "the chart"])]
    );
}

/// A client that cancels an in-flight call (`notifications/cancelled`, rmcp's
/// `RequestHandle::cancel`) gets no answer (rmcp drops it), so the call is dropped too: the
/// tool stops, and its audit line says `cancelled` (not `ok`, for an answer nobody received).
/// The connection goes on serving.
#[test]
fn a_call_the_client_cancels_is_dropped_and_audited_as_cancelled() {
    let audit = TempDir::new("mcp-review-cancelled");
    let after = runtime().block_on(async {
        let (client, served) = connect(second_server(audit.path())).await;
        let request = rmcp::model::ClientRequest::CallToolRequest(
            rmcp::model::CallToolRequest::new(CallToolRequestParams::new("nap".to_owned())),
        );
        let handle = client
            .peer()
            .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
            .await
            .unwrap();
        NAP_STARTED.notified().await;
        handle
            .cancel(Some("the user pressed stop".into()))
            .await
            .unwrap();
        // A call that is not dropped would nap for ever (before the fix: to its end, `ok`).
        tokio::time::timeout(Duration::from_secs(10), NAP_DROPPED.notified())
            .await
            .expect("the cancelled call is dropped");
        let after = call(&client, "ping", json!({})).await;
        close(client, served).await;
        after
    });
    assert_eq!(
        after,
        json!({"content": [{"type": "text", "text": "pong"}], "isError": false})
    );
    assert_eq!(
        audit_fields(&audit, &["tool_use_id", "outcome", "content"]),
        vec![
            json!(["m1/1", "cancelled", ""]),
            json!(["m1/2", "ok", "pong"])
        ]
    );
}

/// A remote MCP server of the tests' own that lists the tools `tools` (entries as
/// `tools/list` sends them) and answers every call with an empty result.
struct Listing {
    tools: Vec<Value>,
}

impl rmcp::ServerHandler for Listing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Tool> = self
            .tools
            .iter()
            .map(|t| serde_json::from_value(t.clone()).unwrap())
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![])))
    }
}

/// Two remote servers that both expose `wipe`, behind one gateway, and one server that lists
/// `wipe` twice: each stops the gateway's build, naming both tools, so no call is ever routed to
/// whichever of the two a lookup happens to find first.
#[test]
fn two_remote_tools_of_one_name_stop_the_gateways_build_whichever_server_lists_them() {
    let errors = runtime().block_on(async {
        let (first, first_served) = guard_over_pipe(Listing {
            tools: vec![wipe(json!({"readOnlyHint": false}))],
        })
        .await;
        let (second, second_served) = guard_over_pipe(Listing {
            tools: vec![wipe(json!({"readOnlyHint": true}))],
        })
        .await;
        let two = Dispatcher::builder()
            .wrap(first)
            .wrap(second)
            .pre_hook(allow_all())
            .build()
            .err()
            .map(|e| e.to_string());
        let (twice, twice_served) = guard_over_pipe(Listing {
            tools: vec![
                wipe(json!({"readOnlyHint": false})),
                wipe(json!({"readOnlyHint": false})),
            ],
        })
        .await;
        let one = Dispatcher::builder()
            .wrap(twice)
            .pre_hook(allow_all())
            .build()
            .err()
            .map(|e| e.to_string());
        for served in [first_served, second_served, twice_served] {
            served.abort();
        }
        (two, one)
    });
    let refused = |paths: &str| {
        format!(
            "the dispatcher cannot be built (1 problem):\n- two tools are named `wipe`: {paths}; \
             rename one with #[tool(name = \"…\")] or filter one out"
        )
    };
    assert_eq!(
        errors,
        (
            Some(refused(
                "<wrapped caller #0>::wipe and <wrapped caller #1>::wipe"
            )),
            Some(refused(
                "<wrapped caller #0>::wipe and <wrapped caller #0>::wipe"
            )),
        )
    );
}

/// The weather a tool with an `outputSchema` returns.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Weather {
    /// Degrees Celsius.
    celsius: f64,
}

/// The arguments of `weather`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

/// A denial of a tool that declares an `outputSchema` is an `isError` result with the
/// `BLOCKED:` text and no `structuredContent`: nothing in it claims to match the schema, as the
/// MCP spec allows for an error. So is every other failure (invalid input, a person's approval
/// nobody can give); only the allowed call carries `structuredContent`, equal to its text.
#[test]
fn a_denied_call_of_a_tool_with_an_output_schema_carries_no_structured_content() {
    let audit = TempDir::new("mcp-review-output-schema");
    let answers = runtime().block_on(async {
        let rules = PreHookDef::sync("gateway::cities", 10, |_env, call: &ToolUse| {
            Ok(match call.input["city"].as_str() {
                Some("Atlantis") => Decision::deny("Atlantis is not a city we forecast."),
                Some("Rome") => Decision::ask("Rome needs a person's approval"),
                _ => Decision::Allow,
            })
        });
        let d = Dispatcher::builder()
            .tool(
                ToolDef::sync("weather", "The weather in a city.", |_env, c: City| {
                    let _ = c.city;
                    toolgate::content::output_text(Weather { celsius: 21.5 })
                })
                .output_type::<Weather>(),
            )
            .pre_hook(rules)
            .audit_log(AuditLog::open(audit.path()).unwrap())
            .build()
            .unwrap();
        assert!(d.output_schema("weather").is_some());
        let server = McpServer::new(d, |caller| {
            Some(HookContext::builder("u_001", caller.mcp_session_id).build())
        })
        .unwrap()
        .outcomes_in_meta(true);
        let (client, served) = connect(server).await;
        let mut answers = Vec::new();
        for args in [
            json!({"city": "Lisbon"}),
            json!({"city": "Atlantis"}),
            json!({"town": "Lisbon"}),
            json!({"city": "Rome"}),
        ] {
            answers.push(call(&client, "weather", args).await);
        }
        close(client, served).await;
        answers
    });
    assert_eq!(
        answers,
        [
            json!({"content": [{"type": "text", "text": "{\"celsius\":21.5}"}],
                   "structuredContent": {"celsius": 21.5}, "isError": false,
                   "_meta": {"toolgate/outcome": "ok"}}),
            json!({"content": [{"type": "text",
                                "text": "BLOCKED: Atlantis is not a city we forecast."}],
                   "isError": true,
                   "_meta": {"toolgate/outcome": "blocked",
                             "toolgate/blocked_by": "gateway::cities"}}),
            json!({"content": [{"type": "text",
                                "text": "Error: invalid input for tool `weather` (2 problems):\n- \
                                         unknown field `town`, expected one of `city`\n- missing \
                                         field `city`\nSend an input that matches the tool's \
                                         input_schema."}],
                   "isError": true, "_meta": {"toolgate/outcome": "invalid_input"}}),
            json!({"content": [{"type": "text",
                                "text": "BLOCKED: this call needs a person's approval, and none \
                                         can be given here (Rome needs a person's approval). \
                                         Tell the user it was not done and that a person must \
                                         approve it."}],
                   "isError": true,
                   "_meta": {"toolgate/outcome": "blocked",
                             "toolgate/blocked_by": "gateway::cities"}}),
        ]
    );
    assert_eq!(
        audit_fields(&audit, &["outcome"]),
        [
            json!(["ok"]),
            json!(["blocked"]),
            json!(["invalid_input"]),
            json!(["blocked"])
        ]
    );
}
