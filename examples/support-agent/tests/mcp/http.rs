//! MCP over streamable HTTP (feature `mcp-http`): the support agent served by
//! `McpServer::streamable_http_service` on hyper at `http://127.0.0.1:<port>/mcp`, behind the
//! agent's demo auth layer (`src/mcp_server.rs`), driven by rmcp's own client over real
//! loopback HTTP: the identity from the request's extensions, the MCP session rmcp assigned as the
//! audit lines' session, the stateless mode's one session per request, and `McpGuard` in front of
//! the server over HTTP.
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::mcp::rmcp::ServiceExt;
use toolgate::mcp::rmcp::transport::StreamableHttpClientTransport;
use toolgate::mcp::rmcp::transport::StreamableHttpServerConfig;
use toolgate::mcp::rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use toolgate::mcp::{McpGuard, McpServer, NO_IDENTITY_MESSAGE};
use toolgate::{
    Decision, Dispatcher, HookContext,
    audit::AuditLog,
    dispatch::{PreHookDef, StopHookDef},
};
use tower::Layer;

use super::{
    Client, REMOTE_FAILED, U001, agent_item, allow_all, answer, assert_nothing_audited,
    audit_fields, audit_lines, blocked_order, call, error_result, runtime, summaries,
};
use support_agent::agent::Agent;
use support_agent::mcp_server::{self, http::DemoUser, http::demo_user};
use support_agent::specialist::Specialist;
use toolgate_test_support::TempDir;

/// The example's HTTP options: audit folder `audit`.
fn http_options(audit: &Path) -> mcp_server::Options {
    mcp_server::Options {
        user: None,
        tier: None,
        session: None,
        audit: audit.to_path_buf(),
        http: Some("127.0.0.1:0".parse().unwrap()),
    }
}

/// A server on `127.0.0.1:<port>`: its address, the `Mcp-Session-Id`s its answers assigned (in
/// order), and the task serving it (abort it to shut the server down).
struct Served {
    addr: SocketAddr,
    assigned: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// The endpoint's URL.
    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The session ids rmcp assigned so far.
    fn assigned(&self) -> Vec<String> {
        self.assigned.lock().unwrap().clone()
    }
}

/// Serves `server` with `config` behind the example's demo auth (the example's accept loop),
/// recording the `Mcp-Session-Id` of every answer that assigns one.
async fn serve(server: McpServer, config: StreamableHttpServerConfig) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let assigned = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&assigned);
    let service = tower::util::MapResponseLayer::new(
        move |response: hyper::Response<http_body_util::combinators::BoxBody<_, Infallible>>| {
            if let Some(id) = response.headers().get("mcp-session-id") {
                let id = id.to_str().unwrap().to_owned();
                let mut seen = record.lock().unwrap();
                if !seen.contains(&id) {
                    seen.push(id);
                }
            }
            response
        },
    )
    .layer(server.streamable_http_service(config));
    let task = tokio::spawn(async move {
        let _ = mcp_server::http::serve(listener, service).await;
    });
    Served {
        addr,
        assigned,
        task,
    }
}

/// rmcp's HTTP client on `url`, with `Authorization: Bearer <token>` when given.
async fn client(url: &str, token: Option<&str>) -> Client {
    // reqwest with rustls and no provider of its own panics without a process default.
    toolgate::mcp::install_tls_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize succeeds")
}

/// An allowed result with one text item.
fn ok_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false,
           "_meta": {"toolgate/outcome": "ok"}})
}

/// An audit line as the tests compare it (see [`audit_lines`](super::audit_lines)).
#[allow(clippy::too_many_arguments)]
fn line(
    session: &str,
    user: (&str, &str),
    id: &str,
    tool: &str,
    input: Value,
    outcome: &str,
    content: &str,
    extra: Value,
) -> Value {
    let mut out: Map<String, Value> = serde_json::from_value(json!({
        "session_id": session, "user_id": user.0, "tier": user.1, "tool_use_id": id,
        "tool": tool, "input": input, "outcome": outcome, "is_error": outcome != "ok"}))
    .unwrap();
    out.insert("content".into(), Value::from(content));
    out.insert("duration_us".into(), Value::from(0));
    if let Value::Object(extra) = extra {
        out.extend(extra);
    }
    Value::Object(out)
}

/// Waits (up to 30 s) until `done` holds, letting the runtime's other tasks run.
async fn wait_until(done: impl Fn() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the condition did not hold within 30 s");
}

const U004: &str = r#"{"user_id":"u_004","tier":"free","orders":["o_2001"]}"#;
const PREMIUM: (&str, &str) = ("u_001", "premium");
const FREE: (&str, &str) = ("u_004", "free");

// ================================================================= the demo auth, the options

#[test]
fn the_demo_auth_maps_a_seed_customers_token_and_nothing_else() {
    let headers = |value: &str| {
        let mut map = hyper::HeaderMap::new();
        map.insert(hyper::header::AUTHORIZATION, value.parse().unwrap());
        map
    };
    assert_eq!(
        demo_user(&headers("Bearer demo-u_001")),
        Some(DemoUser {
            id: "u_001",
            tier: "premium"
        })
    );
    assert_eq!(
        demo_user(&headers("Bearer demo-u_004")),
        Some(DemoUser {
            id: "u_004",
            tier: "free"
        })
    );
    for refused in [
        "Bearer demo-u_002",
        "Bearer u_001",
        "demo-u_001",
        "Basic demo-u_001",
    ] {
        assert_eq!(demo_user(&headers(refused)), None, "{refused}");
    }
    assert_eq!(demo_user(&hyper::HeaderMap::new()), None);
}

#[test]
fn the_http_flag_takes_a_loopback_address_and_no_stdio_identity() {
    let parse = |args: &[&str]| mcp_server::parse(args.iter().map(|a| (*a).to_owned()));
    assert_eq!(
        parse(&["--http", "127.0.0.1:8765", "--audit", "a"]),
        Ok(mcp_server::Options {
            user: None,
            tier: None,
            session: None,
            audit: "a".into(),
            http: Some("127.0.0.1:8765".parse().unwrap()),
        })
    );
    assert_eq!(
        parse(&["--http", "0.0.0.0:8765"]),
        Err(
            "--http 0.0.0.0:8765 is not a loopback address; this demo serves 127.0.0.1 or ::1 \
             only"
                .to_owned()
        )
    );
    assert_eq!(
        parse(&["--http", "localhost:8765"]),
        Err(
            "--http \"localhost:8765\" is not an IP address and port: invalid socket address \
             syntax"
                .to_owned()
        )
    );
    assert_eq!(
        parse(&["--http", "127.0.0.1:8765", "--user", "u_001"]),
        Err(
            "--user, --tier and --session are for stdio; over --http each request's bearer \
             token names the customer"
                .to_owned()
        )
    );
    assert_eq!(parse(&[]), Err("--user is required".to_owned()));
}

// ============================================================================= served

#[test]
fn initialize_and_tools_list_over_http_equal_the_golden_file() {
    let audit = TempDir::new("mcp-http-list");
    runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let served = serve(server, StreamableHttpServerConfig::default()).await;
        let client = client(&served.url(), Some("demo-u_001")).await;
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
        assert_eq!(serde_json::to_value(&tools).unwrap(), super::golden_list());
        client.cancel().await.unwrap();
        served.task.abort();
    });
    assert_nothing_audited(&audit);
}

/// The token's customer is the context; the audit lines' session is the `Mcp-Session-Id` rmcp
/// assigned at `initialize` (the `tool_use` ids are `<that id>/<n>`); the session ends, with its
/// summary line, when the client closes the MCP session.
#[test]
fn calls_over_http_run_as_the_tokens_customer_in_the_mcp_session_rmcp_assigned() {
    let audit = TempDir::new("mcp-http-calls");
    let own = agent_item("policy::own_records_only");
    let assigned = runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let served = serve(server, StreamableHttpServerConfig::default()).await;
        let client = client(&served.url(), Some("demo-u_001")).await;
        assert_eq!(
            call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
            ok_result(U001)
        );
        assert_eq!(
            call(&client, "get_order_details", json!({"order_id": "o_2001"})).await,
            error_result(
                &blocked_order("o_2001"),
                json!({"toolgate/outcome": "blocked", "toolgate/blocked_by": own})
            )
        );
        let assigned = served.assigned();
        client.cancel().await.unwrap();
        // The client's DELETE ends the MCP session: its server is dropped, its session ends.
        wait_until(|| summaries(&audit).len() == 1).await;
        served.task.abort();
        assigned
    });
    let [session] = assigned.as_slice() else {
        panic!("one MCP session: {assigned:?}")
    };
    assert_eq!(
        audit_lines(&audit),
        vec![
            line(
                session,
                PREMIUM,
                &format!("{session}/1"),
                "lookup_user",
                json!({"user_id": "u_001"}),
                "ok",
                U001,
                json!({"hooks": [{"hook": own, "decision": "allow", "duration_us": 0}]})
            ),
            line(
                session,
                PREMIUM,
                &format!("{session}/2"),
                "get_order_details",
                json!({"order_id": "o_2001"}),
                "blocked",
                &blocked_order("o_2001"),
                json!({"blocked_by": own,
                       "hooks": [{"hook": own, "decision": "deny", "duration_us": 0}]})
            ),
        ]
    );
    assert_eq!(
        summaries(&audit),
        vec![
            json!({"session_id": session, "user_id": "u_001", "calls": 2,
                    "outcomes": {"ok": 1, "blocked": 1}})
        ]
    );
}

/// A request the auth layer put no customer on (no token, a token it does not know): every
/// call is refused with the no-identity text, and nothing is audited. `tools/list` still
/// answers (it runs no tool).
#[test]
fn a_request_without_identity_is_refused_and_nothing_is_audited() {
    let audit = TempDir::new("mcp-http-anonymous");
    runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let served = serve(server, StreamableHttpServerConfig::default()).await;
        for token in [None, Some("demo-u_002"), Some("u_001")] {
            let client = client(&served.url(), token).await;
            let tools = client.list_all_tools().await.unwrap();
            assert_eq!(serde_json::to_value(&tools).unwrap(), super::golden_list());
            assert_eq!(
                call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
                json!({"content": [{"type": "text", "text": NO_IDENTITY_MESSAGE}],
                       "isError": true, "_meta": {"toolgate/outcome": "blocked"}}),
                "{token:?}"
            );
            client.cancel().await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        served.task.abort();
    });
    assert_nothing_audited(&audit);
}

/// Two customers on one server, each with a client of their own, at once: each call runs under
/// its caller's rules (a refund is premium-only) in its caller's MCP session; both clients'
/// JSON-RPC ids are equal, the `tool_use` ids never are.
#[test]
fn two_customers_on_one_server_get_their_own_rules_and_sessions() {
    let audit = TempDir::new("mcp-http-two");
    let premium_only = agent_item("policy::premium_only");
    let own = agent_item("policy::own_records_only");
    let weekly = agent_item("policy::weekly_refund_limit");
    let ask = agent_item("policy::large_refund_needs_approval");
    let not_premium = "BLOCKED: case files and refunds are for premium customers, and this \
         customer's tier is free. Answer from the refund policy (search_faq), or tell the \
         customer that upgrading to premium includes refunds handled by support.";
    // `re_0001`: the first refund of this server's ledger (one per agent).
    let refunded = r#"{"refund_id":"re_0001","order_id":"o_1001","amount_cents":1000,"refunded_total_cents":1000,"status":"issued"}"#;
    let assigned = runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let served = serve(server, StreamableHttpServerConfig::default()).await;
        let premium = client(&served.url(), Some("demo-u_001")).await;
        let free = client(&served.url(), Some("demo-u_004")).await;
        assert_eq!(
            call(&premium, "lookup_user", json!({"user_id": "u_001"})).await,
            ok_result(U001)
        );
        assert_eq!(
            call(&free, "lookup_user", json!({"user_id": "u_004"})).await,
            ok_result(U004)
        );
        assert_eq!(
            call(
                &premium,
                "issue_refund",
                json!({"order_id": "o_1001", "amount_cents": 1000})
            )
            .await,
            ok_result(refunded)
        );
        assert_eq!(
            call(
                &free,
                "issue_refund",
                json!({"order_id": "o_2001", "amount_cents": 1000})
            )
            .await,
            error_result(
                not_premium,
                json!({"toolgate/outcome": "blocked", "toolgate/blocked_by": premium_only})
            )
        );
        let assigned = served.assigned();
        premium.cancel().await.unwrap();
        free.cancel().await.unwrap();
        wait_until(|| summaries(&audit).len() == 2).await;
        served.task.abort();
        assigned
    });
    let [first, second] = assigned.as_slice() else {
        panic!("two MCP sessions: {assigned:?}")
    };
    assert_ne!(first, second);
    let allow = |hook: &str| json!({"hook": hook, "decision": "allow", "duration_us": 0});
    assert_eq!(
        audit_lines(&audit),
        vec![
            line(
                first,
                PREMIUM,
                &format!("{first}/1"),
                "lookup_user",
                json!({"user_id": "u_001"}),
                "ok",
                U001,
                json!({"hooks": [allow(&own)]})
            ),
            line(
                second,
                FREE,
                &format!("{second}/1"),
                "lookup_user",
                json!({"user_id": "u_004"}),
                "ok",
                U004,
                json!({"hooks": [allow(&own)]})
            ),
            line(
                first,
                PREMIUM,
                &format!("{first}/2"),
                "issue_refund",
                json!({"order_id": "o_1001", "amount_cents": 1000}),
                "ok",
                refunded,
                json!({"hooks": [allow(&premium_only), allow(&own), allow(&ask), allow(&weekly)]})
            ),
            line(
                second,
                FREE,
                &format!("{second}/2"),
                "issue_refund",
                json!({"order_id": "o_2001", "amount_cents": 1000}),
                "blocked",
                not_premium,
                json!({"blocked_by": premium_only,
                       "hooks": [{"hook": premium_only, "decision": "deny", "duration_us": 0}]})
            ),
        ]
    );
    let mut sums = summaries(&audit);
    sums.sort_by_key(|s| s["user_id"].as_str().map(str::to_owned));
    assert_eq!(
        sums,
        vec![
            json!({"session_id": first, "user_id": "u_001", "calls": 2,
                   "outcomes": {"ok": 2}}),
            json!({"session_id": second, "user_id": "u_004", "calls": 2,
                   "outcomes": {"ok": 1, "blocked": 1}}),
        ]
    );
}

/// Stateless mode: rmcp makes a server per HTTP request, so each request is one toolgate
/// session: its `tool_use` id `<made id>/1`, its Stop hooks run and its summary line is
/// written once the request is answered (a client-sent `Mcp-Session-Id`:
/// `stateless_mode_ignores_a_client_chosen_session_id`).
#[test]
fn stateless_mode_is_one_session_per_request_with_its_own_stop() {
    let audit = TempDir::new("mcp-http-stateless");
    let own = agent_item("policy::own_records_only");
    let stops: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let record = Arc::clone(&stops);
    runtime().block_on(async {
        let log = AuditLog::open(audit.path()).unwrap();
        let agent = Agent::build_with(Specialist::Refunds, Some(&log), |b| {
            b.stop_hook(StopHookDef::new("test::stop", move |_env, summary| {
                record
                    .lock()
                    .unwrap()
                    .push((summary.session_id.clone(), summary.calls));
                Ok(())
            }))
        })
        .unwrap();
        let server = McpServer::new(agent.dispatcher, mcp_server::http::identify).unwrap();
        let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false);
        let served = serve(server, config).await;
        let client = client(&served.url(), Some("demo-u_001")).await;
        for _ in 0..2 {
            assert_eq!(
                call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
                json!({"content": [{"type": "text", "text": U001}], "isError": false})
            );
        }
        // Each request's session ended when it was answered (not when the client closed).
        wait_until(|| summaries(&audit).len() == 2).await;
        assert_eq!(served.assigned(), Vec::<String>::new());
        client.cancel().await.unwrap();
        served.task.abort();
    });
    let lines = audit_lines(&audit);
    let sessions: Vec<String> = lines
        .iter()
        .map(|l| l["session_id"].as_str().unwrap().to_owned())
        .collect();
    assert_ne!(sessions[0], sessions[1]);
    for session in &sessions {
        let made = format!("mcp-{}-", std::process::id());
        assert!(session.starts_with(&made), "{session}");
    }
    let expected: Vec<Value> = sessions
        .iter()
        .map(|session| {
            line(
                session,
                PREMIUM,
                &format!("{session}/1"),
                "lookup_user",
                json!({"user_id": "u_001"}),
                "ok",
                U001,
                json!({"hooks": [{"hook": own, "decision": "allow", "duration_us": 0}]}),
            )
        })
        .collect();
    assert_eq!(lines, expected);
    assert_eq!(
        summaries(&audit),
        sessions
            .iter()
            .map(|s| json!({"session_id": s, "user_id": "u_001", "calls": 1,
                            "outcomes": {"ok": 1}}))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        *stops.lock().unwrap(),
        sessions.iter().map(|s| (s.clone(), 1)).collect::<Vec<_>>()
    );
}

/// One JSON-RPC message POSTed by hand (ureq, blocking, off the runtime's thread), as a client
/// that changes its `Authorization` mid-session would send it: the answer's status, its
/// `Mcp-Session-Id`, and the JSON-RPC messages of its body (JSON or server-sent events).
async fn post(
    url: &str,
    token: &str,
    session: Option<&str>,
    message: Value,
) -> (u16, Option<String>, Vec<Value>) {
    let (url, token, session) = (url.to_owned(), token.to_owned(), session.map(str::to_owned));
    tokio::task::spawn_blocking(move || {
        let mut request = ureq::post(&url)
            .header("authorization", &format!("Bearer {token}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = &session {
            request = request.header("mcp-session-id", session);
        }
        let mut response = request.send(message.to_string().as_bytes()).unwrap();
        let status = response.status().as_u16();
        let id = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.body_mut().read_to_string().unwrap();
        let messages = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:").map(str::trim).or(Some(l)))
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (status, id, messages)
    })
    .await
    .unwrap()
}

/// The `initialize` request of a hand-written client.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "by-hand", "version": "0"}}})
}

/// A `tools/call` of `lookup_user` with JSON-RPC id 2.
fn lookup(user: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "lookup_user", "arguments": {"user_id": user}}})
}

/// One MCP session whose requests carry two customers' tokens (the auth layer decides per
/// request): two toolgate sessions under the one `Mcp-Session-Id`, each with its own rules and
/// summary line; the equal JSON-RPC ids get distinct `tool_use` ids.
#[test]
fn two_customers_on_one_mcp_session_get_two_toolgate_sessions() {
    let audit = TempDir::new("mcp-http-shared");
    let own = agent_item("policy::own_records_only");
    let session = runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let served = serve(server, StreamableHttpServerConfig::default()).await;
        let url = served.url();
        let (status, session, _) = post(&url, "demo-u_001", None, initialize()).await;
        assert_eq!(status, 200);
        let session = session.expect("rmcp assigns a session");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = post(&url, "demo-u_001", Some(&session), initialized).await;
        assert_eq!(status, 202);
        let first = post(&url, "demo-u_001", Some(&session), lookup("u_001")).await;
        let second = post(&url, "demo-u_004", Some(&session), lookup("u_001")).await;
        assert_eq!(
            (first, second),
            (
                (
                    200,
                    None,
                    vec![json!({"jsonrpc": "2.0", "id": 2, "result": ok_result(U001)})]
                ),
                (
                    200,
                    None,
                    vec![json!({"jsonrpc": "2.0", "id": 2, "result": error_result(
                    "BLOCKED: this conversation can only use the signed-in customer's own \
                     account, and u_001 is not it. Use the signed-in customer's id, u_004, or \
                     ask them what they need for their own account.",
                    json!({"toolgate/outcome": "blocked", "toolgate/blocked_by": own}))})]
                )
            )
        );
        assert_eq!(served.assigned(), vec![session.clone()]);
        // The client ends the MCP session: both toolgate sessions end.
        let url2 = url.clone();
        let sid = session.clone();
        let status = tokio::task::spawn_blocking(move || {
            ureq::delete(&url2)
                .header("mcp-session-id", &sid)
                .call()
                .unwrap()
                .status()
                .as_u16()
        })
        .await
        .unwrap();
        assert_eq!(status, 202);
        wait_until(|| summaries(&audit).len() == 2).await;
        served.task.abort();
        session
    });
    let outcomes = audit_fields(&audit, &["session_id", "user_id", "tool_use_id", "outcome"]);
    assert_eq!(
        outcomes,
        vec![
            json!([session, "u_001", format!("{session}/1"), "ok"]),
            json!([session, "u_004", format!("{session}/2"), "blocked"]),
        ]
    );
    let mut sums = summaries(&audit);
    sums.sort_by_key(|s| s["user_id"].as_str().map(str::to_owned));
    assert_eq!(
        sums,
        vec![
            json!({"session_id": session, "user_id": "u_001", "calls": 1, "outcomes": {"ok": 1}}),
            json!({"session_id": session, "user_id": "u_004", "calls": 1,
                   "outcomes": {"blocked": 1}}),
        ]
    );
}

/// Stateless mode ignores an `Mcp-Session-Id` the client makes up: the call's `tool_use` id is
/// the server's own, so two requests naming one made-up session share nothing.
#[test]
fn stateless_mode_ignores_a_client_chosen_session_id() {
    let audit = TempDir::new("mcp-http-forged");
    runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true);
        let served = serve(server, config).await;
        for _ in 0..2 {
            let (status, session, answer) =
                post(&served.url(), "demo-u_001", Some("forged"), lookup("u_001")).await;
            assert_eq!(
                (status, session, answer),
                (
                    200,
                    None,
                    vec![json!({"jsonrpc": "2.0", "id": 2, "result": ok_result(U001)})]
                )
            );
        }
        wait_until(|| summaries(&audit).len() == 2).await;
        served.task.abort();
    });
    let ids: Vec<String> = audit_lines(&audit)
        .iter()
        .map(|l| l["tool_use_id"].as_str().unwrap().to_owned())
        .collect();
    let made = format!("mcp-{}-", std::process::id());
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        assert!(id.starts_with(&made) && id.ends_with("/1"), "{id}");
    }
}

// ============================================================================ the guard

/// A dispatcher of its own in front of the HTTP server, with the operator's token as its
/// credentials (the server runs the guard's calls as that customer): its rule (no FAQ
/// searches through this gateway) and the server's rules both apply.
#[test]
fn a_guard_over_http_applies_its_own_rule_and_the_servers() {
    let inner_audit = TempDir::new("mcp-http-guard-inner");
    let outer_audit = TempDir::new("mcp-http-guard-outer");
    let inner_own = agent_item("policy::own_records_only");
    let assigned = runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&inner_audit)).unwrap();
        let served = serve(server, StreamableHttpServerConfig::default()).await;
        let config =
            StreamableHttpClientTransportConfig::with_uri(served.url()).auth_header("demo-u_001");
        let guard = McpGuard::streamable_http(config)
            .await
            .expect("initialize and tools/list over HTTP");
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
        let session = outer.session(HookContext::builder("gw_user", "s_gw").build());
        let answers = [
            ("toolu_1", "search_faq", json!({"query": "refund"})),
            (
                "toolu_2",
                "get_order_details",
                json!({"order_id": "o_2001"}),
            ),
            ("toolu_3", "lookup_user", json!({"user_id": "u_001"})),
        ];
        let mut results = Vec::new();
        for (id, name, input) in answers {
            results.push(answer(&session, id, name, input).await);
        }
        assert_eq!(
            results,
            vec![
                (
                    true,
                    "BLOCKED: the FAQ is not served through this gateway.".to_owned()
                ),
                (true, blocked_order("o_2001")),
                (false, U001.to_owned()),
            ]
        );
        session.end();
        served.assigned()
    });
    let [inner_session] = assigned.as_slice() else {
        panic!("one MCP session: {assigned:?}")
    };
    let outer = audit_fields(&outer_audit, &["tool_use_id", "outcome", "blocked_by"]);
    assert_eq!(
        outer,
        vec![
            json!(["toolu_1", "blocked", "gateway::no_faq"]),
            json!(["toolu_2", "blocked", inner_own]),
            json!(["toolu_3", "ok", null]),
        ]
    );
    // Only the calls the gateway let through reached the server, as the token's customer, in
    // the guard's MCP session.
    let inner = audit_fields(&inner_audit, &["tool_use_id", "user_id", "tool", "outcome"]);
    assert_eq!(
        inner,
        vec![
            json!([
                format!("{inner_session}/1"),
                "u_001",
                "get_order_details",
                "blocked"
            ]),
            json!([format!("{inner_session}/2"), "u_001", "lookup_user", "ok"]),
        ]
    );
}

/// The server shut down under the guard: the call is a `tool_error` whose text says the server
/// did not answer, with rmcp's error as the operator detail on the audit line.
#[test]
fn a_guard_over_http_whose_server_shut_down_records_a_tool_error_with_detail() {
    let inner_audit = TempDir::new("mcp-http-broken-inner");
    let outer_audit = TempDir::new("mcp-http-broken-outer");
    let addr = runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&inner_audit)).unwrap();
        let config = StreamableHttpServerConfig::default();
        let shutdown = config.cancellation_token.clone();
        let served = serve(server, config).await;
        let config =
            StreamableHttpClientTransportConfig::with_uri(served.url()).auth_header("demo-u_001");
        let guard = McpGuard::streamable_http(config).await.unwrap();
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
                "lookup_user",
                json!({"user_id": "u_001"})
            )
            .await,
            (false, U001.to_owned())
        );
        shutdown.cancel();
        served.task.abort();
        let _ = served.task.await;
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
        served.addr
    });
    let lines = audit_fields(&outer_audit, &["tool_use_id", "outcome", "detail"]);
    assert_eq!(
        lines,
        vec![
            json!(["toolu_1", "ok", null]),
            json!([
                "toolu_2",
                "tool_error",
                format!(
                    "the MCP server did not answer tools/call \"lookup_user\": Transport send \
                     error: Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::\
                     streamable_http_client::StreamableHttpClientWorker<reqwest::async_impl::\
                     client::Client>>] error: Client error: error sending request for url \
                     (http://{addr}/mcp)"
                )
            ]),
        ]
    );
}

// ============================================================== review (tried as an attacker)

/// One HTTP request by hand (ureq, blocking, off the runtime's thread) whose status is read,
/// not turned into an error: `method` on `url` with the `Mcp-Session-Id` and the bearer token
/// when given, and `message` as the body when given. The status and the body's text.
async fn request(
    method: &'static str,
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    message: Option<Value>,
) -> (u16, String) {
    let (url, token, session) = (
        url.to_owned(),
        token.map(str::to_owned),
        session.map(str::to_owned),
    );
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(url.as_str())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(token) = &token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = &session {
            request = request.header("mcp-session-id", session.as_str());
        }
        let body = message.map(|m| m.to_string()).unwrap_or_default();
        let mut response = agent.run(request.body(body).unwrap()).unwrap();
        let status = response.status().as_u16();
        (status, response.body_mut().read_to_string().unwrap())
    })
    .await
    .unwrap()
}

/// A client that deleted its MCP session cannot call in it again: rmcp answers `404 Not
/// Found`, the call is not run and not audited, and the session's summary line was written
/// once, at the `DELETE`.
#[test]
fn a_deleted_mcp_session_cannot_be_reused_and_nothing_more_is_audited() {
    let audit = TempDir::new("mcp-http-deleted");
    let session = runtime().block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let served = serve(server, StreamableHttpServerConfig::default()).await;
        let url = served.url();
        let (_, session, _) = post(&url, "demo-u_001", None, initialize()).await;
        let session = session.expect("rmcp assigns a session");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = post(&url, "demo-u_001", Some(&session), initialized).await;
        assert_eq!(status, 202);
        let (status, _, first) = post(&url, "demo-u_001", Some(&session), lookup("u_001")).await;
        assert_eq!(status, 200);
        assert_eq!(
            first,
            vec![json!({"jsonrpc": "2.0", "id": 2, "result": ok_result(U001)})]
        );
        let deleted = request("DELETE", &url, Some("demo-u_001"), Some(&session), None).await;
        assert_eq!(deleted.0, 202);
        wait_until(|| summaries(&audit).len() == 1).await;
        let reused = request(
            "POST",
            &url,
            Some("demo-u_001"),
            Some(&session),
            Some(lookup("u_001")),
        )
        .await;
        assert_eq!(reused, (404, "Not Found: Session not found".to_owned()));
        served.task.abort();
        session
    });
    assert_eq!(
        audit_fields(
            &audit,
            &["session_id", "tool_use_id", "tool", "outcome", "content"]
        ),
        vec![json!([
            session,
            format!("{session}/1"),
            "lookup_user",
            "ok",
            U001
        ])]
    );
    assert_eq!(
        summaries(&audit),
        vec![
            json!({"session_id": session, "user_id": "u_001", "calls": 1,
                   "outcomes": {"ok": 1}})
        ]
    );
}

/// The example's `--http` takes 127.0.0.1 or ::1 only: another loopback address (127.0.0.2)
/// would start, and rmcp's default `Host` check would then answer every request `403`.
#[test]
fn the_http_flag_refuses_a_loopback_address_the_host_check_refuses() {
    let parse = |args: &[&str]| mcp_server::parse(args.iter().map(|a| (*a).to_owned()));
    assert_eq!(
        parse(&["--http", "127.0.0.2:8765"]),
        Err(
            "--http 127.0.0.2:8765: this demo serves 127.0.0.1 or ::1 only (rmcp's Host check \
             refuses every request to another address)"
                .to_owned()
        )
    );
    assert_eq!(
        parse(&["--http", "[::1]:8765"]).map(|o| o.http),
        Ok(Some("[::1]:8765".parse().unwrap()))
    );
    // What a server on 127.0.0.2 would answer (why the flag refuses it).
    let audit = TempDir::new("mcp-http-host");
    let answer = runtime().block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let service = server.streamable_http_service(StreamableHttpServerConfig::default());
        let task = tokio::spawn(mcp_server::http::serve(listener, service));
        let answer = request("POST", &url, Some("demo-u_001"), None, Some(initialize())).await;
        task.abort();
        answer.0
    });
    assert_eq!(answer, 403);
}

/// The example announces the port it got (`--http 127.0.0.1:0` is not `…:0/mcp`), and a port in
/// use is a clear error.
#[test]
fn the_example_binds_and_announces_its_real_port_and_a_taken_port_is_an_error() {
    runtime().block_on(async {
        let (listener, url) = mcp_server::http::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let local = listener.local_addr().unwrap();
        assert_ne!(local.port(), 0);
        assert_eq!(url, format!("http://127.0.0.1:{}/mcp", local.port()));
        let taken = mcp_server::http::bind(local).await.map(|(_, url)| url);
        assert_eq!(
            taken,
            Err(format!(
                "cannot listen on {local}: Address already in use (os error 98)"
            ))
        );
    });
}

/// A server shut down through its config's cancellation token ends the live MCP sessions: their
/// Stop hooks run once (the audit log's writes the one summary line; nothing is written after).
#[test]
fn cancelling_the_service_ends_the_live_sessions_once() {
    let audit = TempDir::new("mcp-http-cancelled");
    let rt = runtime();
    let session = rt.block_on(async {
        let server = mcp_server::http::server(&http_options(&audit)).unwrap();
        let config = StreamableHttpServerConfig::default();
        let token = config.cancellation_token.clone();
        let served = serve(server, config).await;
        let client = client(&served.url(), Some("demo-u_001")).await;
        assert_eq!(
            call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
            ok_result(U001)
        );
        token.cancel();
        wait_until(|| summaries(&audit).len() == 1).await;
        drop(client);
        served.task.abort();
        served.assigned()
    });
    // Nothing can write after the runtime is gone: the summary was written once.
    drop(rt);
    let [session] = session.as_slice() else {
        panic!("one MCP session: {session:?}")
    };
    assert_eq!(
        summaries(&audit),
        vec![
            json!({"session_id": session, "user_id": "u_001", "calls": 1,
                   "outcomes": {"ok": 1}})
        ]
    );
}

/// The example's `--http` run: stopped (its Ctrl-C / SIGTERM future resolved) with a live MCP
/// session, it returns, and by the time its runtime is dropped that session has ended once
/// (before, a stopped `--http` server never ran the Stop hooks of its live sessions).
#[test]
fn the_example_http_server_stopped_ends_its_live_sessions_once() {
    let audit = TempDir::new("mcp-http-stopped");
    let stops: Arc<Mutex<u32>> = Arc::default();
    let record = Arc::clone(&stops);
    let rt = runtime();
    let result = rt.block_on(async {
        let log = AuditLog::open(audit.path()).unwrap();
        let agent = Agent::build_with(Specialist::Refunds, Some(&log), |b| {
            b.stop_hook(StopHookDef::new("test::stop", move |_env, _summary| {
                *record.lock().unwrap() += 1;
                Ok(())
            }))
        })
        .unwrap();
        let server = McpServer::new(agent.dispatcher, mcp_server::http::identify).unwrap();
        let (listener, url) = mcp_server::http::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(mcp_server::http::run(listener, server, async {
            let _ = stopped.await;
        }));
        let client = client(&url, Some("demo-u_001")).await;
        assert_eq!(
            call(&client, "lookup_user", json!({"user_id": "u_001"})).await,
            json!({"content": [{"type": "text", "text": U001}], "isError": false})
        );
        stop.send(()).unwrap();
        let result = running.await.unwrap();
        drop(client);
        result
    });
    drop(rt);
    assert_eq!(result, Ok(()));
    assert_eq!(*stops.lock().unwrap(), 1);
    assert_eq!(
        summaries(&audit)
            .into_iter()
            .map(|s| (s["user_id"].clone(), s["calls"].clone()))
            .collect::<Vec<_>>(),
        vec![(json!("u_001"), json!(1))]
    );
}
