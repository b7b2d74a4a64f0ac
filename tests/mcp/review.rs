//! Issue 15 tried as an attacker would (review): an identity function that panics, a remote
//! server that hangs, sends a schema that is not one, or answers `isError`, seen through a
//! guard; each as a real client or server over an in-memory pipe.
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use toolgate::mcp::rmcp::service::{RequestContext, RoleServer};
use toolgate::mcp::rmcp::{self, ErrorData, ServiceExt};
use toolgate::mcp::{McpGuard, McpServer, NO_IDENTITY_MESSAGE};
use toolgate::{AuditLog, Decision, Dispatcher, HookContext, PreHookDef, ToolUse};

use super::example::support_agent::agent::{Agent, Specialist};
use super::support::TempDir;
use super::{audit_lines, call, connect, runtime};

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
            let header: Option<&str> = None;
            let user = header.expect("the host's auth header");
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
        client.cancel().await.unwrap();
        let _ = served.await;
    });
    assert_eq!(audit_lines(&audit), Vec::<Value>::new());
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

/// Serves `remote` over an in-memory pipe and connects a guard to it.
async fn guard(remote: Remote) -> (McpGuard, tokio::task::JoinHandle<()>) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let served = tokio::spawn(async move {
        let running = remote.serve(theirs).await.expect("the remote starts");
        let _ = running.waiting().await;
    });
    let guard = McpGuard::connect(ours)
        .await
        .expect("initialize and tools/list");
    (guard, served)
}

/// A rule of the gateway that lets every call through.
fn allow_all() -> PreHookDef {
    PreHookDef::sync("gateway::allow_all", 1, |_env, _call| Ok(Decision::Allow))
}

/// A remote tool that hangs past the gateway's deadline is the gateway's `tool_timeout`, with
/// the Messages API text; a remote `isError` result is a `tool_error` whose text the model
/// reads as the remote wrote it. One audit line each.
#[test]
fn a_remote_that_hangs_is_a_timeout_and_a_remote_is_error_a_tool_error() {
    let audit = TempDir::new("mcp-review-remote");
    let texts = runtime().block_on(async {
        let (slow, slow_served) = guard(Remote {
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
        let timed_out = session
            .call(&ToolUse::new("toolu_1", "wipe", json!({})))
            .await
            .unwrap();
        session.end();
        slow_served.abort();

        let (failing, failing_served) = guard(Remote {
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
        let failed = session
            .call(&ToolUse::new("toolu_2", "wipe", json!({})))
            .await
            .unwrap();
        session.end();
        failing_served.abort();
        (
            (timed_out.is_error, timed_out.content_text().into_owned()),
            (failed.is_error, failed.content_text().into_owned()),
        )
    });
    assert_eq!(
        texts,
        (
            (
                true,
                "Error: the tool did not finish within its deadline of 200 ms and was stopped. \
                 Try again later, or with a smaller request."
                    .to_owned()
            ),
            (true, "no such account".to_owned())
        )
    );
    let outcomes: Vec<(Value, Value)> = audit_lines(&audit)
        .into_iter()
        .map(|l| (l["tool_use_id"].clone(), l["outcome"].clone()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (json!("toolu_1"), json!("tool_timeout")),
            (json!("toolu_2"), json!("tool_error"))
        ]
    );
}

/// A remote schema that fails its meta-schema check (`"type": 5`) stops the gateway's build
/// with an error naming the tool: no call can reach a tool whose input cannot be checked.
#[test]
fn a_remote_schema_that_is_not_a_schema_stops_the_gateways_build() {
    let error = runtime().block_on(async {
        let (remote, served) = guard(Remote {
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
