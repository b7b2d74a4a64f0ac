//! The support agent's tools and rules served over MCP (feature `mcp`; the `mcp_server` binary,
//! `src/bin/mcp_server.rs`): over stdio as one signed-in customer, or over streamable HTTP
//! (feature `mcp-http`) as the customer each request's token names.
//!
//! ```text
//! cargo run -p toolgate-support-agent --bin mcp_server --features mcp -- --user u_001 --tier premium [--audit DIR]
//! cargo run -p toolgate-support-agent --bin mcp_server --features mcp-http -- --http 127.0.0.1:8765 [--audit DIR]
//! ```
//!
//! An MCP host starts the program and speaks JSON-RPC on its standard input and output
//! (`docs/mcp.md` shows a `mcpServers` entry). Every `tools/call` runs through the refunds
//! specialist's dispatcher (the agent's own `#[tool]` functions and `#[pre_hook]` rules), with
//! the identity given on the command line as the trusted context: the client's arguments never choose the user. The audit log goes to
//! `--audit DIR` (default `mcp_audit`), one line per call and a summary line when the connection
//! closes. Results carry their outcome in `_meta` (`toolgate/outcome`, `toolgate/blocked_by`), so a
//! toolgate guard in front of this server records the inner outcome.
//!
//! With `--http ADDR` the server answers MCP's streamable HTTP transport at
//! `http://ADDR/mcp` (rmcp's `StreamableHttpService` on hyper, MCP sessions kept) instead of
//! stdio. Its identity comes from a **demo** auth layer, not a real one: a request whose
//! `Authorization` header is `Bearer demo-<user id>` for a customer of the shop's seed data
//! (`demo-u_001`, premium; `demo-u_004`, free; `demo-u_007`, premium) runs as that customer
//! with their tier; any other request reaches the server with no identity, and its calls are
//! refused (fail closed). A real host verifies a signed token or a session cookie in that
//! layer. The address must be 127.0.0.1 or ::1 (rmcp's default `Host` check; this demo has no
//! TLS and its tokens are guessable).
//!
//! Exit codes: 0 when the client closed the connection (over `--http`: at Ctrl-C or SIGTERM,
//! once the live MCP sessions ended), 2 for a bad command line (the usage on standard error), 1
//! when the server could not start (over `--http`: `cannot listen on ADDR: …`, a port in use).

use std::path::PathBuf;

use toolgate::mcp::McpServer;
use toolgate::{HookContext, audit::AuditLog};

use super::agent::Agent;
use super::specialist::Specialist;

/// The usage line printed for a bad command line.
pub const USAGE: &str = "usage: mcp_server --user USER_ID [--tier TIER] [--session \
     SESSION_ID] [--audit DIR]\n       mcp_server --http ADDR [--audit DIR]   (feature mcp-http)";

/// The command line.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// The signed-in customer (`--user`); required over stdio, refused with `--http`.
    pub user: Option<String>,
    /// Their tier (`--tier`), when the host knows it.
    pub tier: Option<String>,
    /// The MCP session id (`--session`): the session id of the audit lines, and the stem of the
    /// `tool_use` ids (`<session>/1`, `<session>/2`, …); default: the one the server makes.
    pub session: Option<String>,
    /// The audit folder (`--audit`).
    pub audit: PathBuf,
    /// Serve streamable HTTP on this loopback address (`--http`) instead of stdio.
    pub http: Option<std::net::SocketAddr>,
}

/// Reads the command line (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let (mut user, mut tier, mut session, mut audit, mut http) = (None, None, None, None, None);
    while let Some(flag) = args.next() {
        let slot = match flag.as_str() {
            "--user" => &mut user,
            "--tier" => &mut tier,
            "--session" => &mut session,
            "--audit" => &mut audit,
            "--http" => &mut http,
            other => return Err(format!("unknown option {other:?}")),
        };
        match args.next() {
            Some(value) if !value.is_empty() => *slot = Some(value),
            _ => return Err(format!("{flag} needs a value")),
        }
    }
    let http = match http {
        None if user.is_none() => return Err("--user is required".into()),
        None => None,
        Some(_) if user.is_some() || tier.is_some() || session.is_some() => {
            return Err(
                "--user, --tier and --session are for stdio; over --http each \
                        request's bearer token names the customer"
                    .into(),
            );
        }
        Some(addr) => {
            let addr: std::net::SocketAddr = addr
                .parse()
                .map_err(|e| format!("--http {addr:?} is not an IP address and port: {e}"))?;
            if !addr.ip().is_loopback() {
                return Err(format!(
                    "--http {addr} is not a loopback address; this demo serves 127.0.0.1 or ::1 \
                     only"
                ));
            }
            // rmcp's default `Host` check knows `127.0.0.1`, `::1` and `localhost` only: a server
            // on 127.0.0.2 would answer every request `403 Forbidden`.
            let ip = addr.ip();
            if ip != std::net::Ipv4Addr::LOCALHOST && ip != std::net::Ipv6Addr::LOCALHOST {
                return Err(format!(
                    "--http {addr}: this demo serves 127.0.0.1 or ::1 only (rmcp's Host check \
                     refuses every request to another address)"
                ));
            }
            Some(addr)
        }
    };
    Ok(Options {
        user,
        tier,
        session,
        audit: audit.map_or_else(|| PathBuf::from("mcp_audit"), PathBuf::from),
        http,
    })
}

/// The refunds specialist's dispatcher, its audit log in `options.audit`.
fn dispatcher(options: &Options) -> Result<toolgate::Dispatcher, String> {
    let audit = AuditLog::open(&options.audit)
        .map_err(|e| format!("cannot open the audit folder {:?}: {e}", options.audit))?;
    let agent = Agent::build(Specialist::Refunds, Some(&audit)).map_err(|e| e.to_string())?;
    Ok(agent.dispatcher)
}

/// The server of `options`: the refunds specialist with its audit log, every call as
/// `options.user` (and `options.tier`), outcomes in `_meta`.
pub fn server(options: &Options) -> Result<McpServer, String> {
    let user = options.user.clone().ok_or("--user is required")?;
    let tier = options.tier.clone();
    let server = McpServer::new(dispatcher(options)?, move |caller| {
        let context = HookContext::builder(user.as_str(), caller.mcp_session_id);
        Some(match &tier {
            Some(tier) => context.tier(tier.as_str()).build(),
            None => context.build(),
        })
    })
    .map_err(|e| e.to_string())?
    .outcomes_in_meta(true);
    Ok(match &options.session {
        Some(session) => server.mcp_session_id(session.as_str()),
        None => server,
    })
}

/// Streamable HTTP (feature `mcp-http`): the demo auth layer, the server whose identity comes
/// from it, and the accept loop.
#[cfg(feature = "mcp-http")]
pub mod http {
    use std::convert::Infallible;

    use http_body_util::combinators::BoxBody;
    use http_body_util::{BodyExt, Full};
    use hyper::body::{Bytes, Incoming};
    use hyper_util::rt::TokioIo;
    use toolgate::HookContext;
    use toolgate::mcp::{McpCaller, McpServer};
    use tower::util::MapRequestLayer;
    use tower::{Layer, ServiceExt};

    use super::Options;
    use crate::seed::CUSTOMERS;

    /// The MCP endpoint's path.
    pub const PATH: &str = "/mcp";

    /// The customer a request runs as, put in its extensions by [`demo_auth`].
    #[derive(Clone, Debug, PartialEq)]
    pub struct DemoUser {
        /// The customer's id (`u_001`).
        pub id: &'static str,
        /// Their tier in the seed data (`premium`, `free`).
        pub tier: &'static str,
    }

    /// The customer named by `Authorization: Bearer demo-<user id>`, if the seed data has them.
    /// A demo: a real layer verifies a signed token.
    pub fn demo_user(headers: &hyper::HeaderMap) -> Option<DemoUser> {
        let value = headers.get(hyper::header::AUTHORIZATION)?.to_str().ok()?;
        let id = value.strip_prefix("Bearer demo-")?;
        CUSTOMERS
            .iter()
            .find(|c| c.user_id == id)
            .map(|c| DemoUser {
                id: c.user_id,
                tier: c.tier,
            })
    }

    /// What [`demo_auth`] does to each request.
    pub type Authenticate = fn(hyper::Request<Incoming>) -> hyper::Request<Incoming>;

    /// The demo auth layer: puts the [`DemoUser`] of the request's bearer token in its
    /// extensions, and nothing when there is none (the server then refuses its calls). It
    /// removes a `DemoUser` nobody should have set first.
    pub fn demo_auth<S>(service: S) -> tower::util::MapRequest<S, Authenticate> {
        fn authenticate(mut request: hyper::Request<Incoming>) -> hyper::Request<Incoming> {
            let user = demo_user(request.headers());
            request.extensions_mut().remove::<DemoUser>();
            if let Some(user) = user {
                request.extensions_mut().insert(user);
            }
            request
        }
        MapRequestLayer::new(authenticate as Authenticate).layer(service)
    }

    /// The caller of a call: the customer the demo auth layer put in the request's extensions
    /// ([`DemoUser`]), with its tier; `None` (refused) when the layer let the request through
    /// without one or the call did not come over HTTP.
    pub fn identify(caller: &McpCaller<'_>) -> Option<HookContext> {
        let user = caller.http_request()?.extensions.get::<DemoUser>()?;
        Some(
            HookContext::builder(user.id, caller.mcp_session_id)
                .tier(user.tier)
                .build(),
        )
    }

    /// The refunds specialist over HTTP: each call runs as the request's [`DemoUser`] (none:
    /// refused), in the MCP session's own session; outcomes in `_meta`.
    pub fn server(options: &Options) -> Result<McpServer, String> {
        let server =
            McpServer::new(super::dispatcher(options)?, identify).map_err(|e| e.to_string())?;
        Ok(server.outcomes_in_meta(true))
    }

    /// Listens on `addr`: the listener and the endpoint's URL with the port it got
    /// (`http://127.0.0.1:41234/mcp` for `127.0.0.1:0`, the port the system chose).
    ///
    /// # Errors
    /// `cannot listen on <addr>: <the system's error>` (a port in use, an address not here).
    pub async fn bind(
        addr: std::net::SocketAddr,
    ) -> Result<(tokio::net::TcpListener, String), String> {
        let listening = match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => listener.local_addr().map(|local| (listener, local)),
            Err(e) => Err(e),
        };
        let (listener, local) = listening.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        Ok((listener, format!("http://{local}{PATH}")))
    }

    /// Serves `server` (rmcp's default config: MCP sessions kept, loopback `Host` only) with
    /// [`serve`] on `listener` until `stop` resolves, then cancels the service: rmcp ends every
    /// live MCP session, which drops its server and so ends its toolgate sessions (Stop hooks,
    /// summary lines), here or, for a session still finishing, when the runtime is dropped.
    ///
    /// # Errors
    /// The error of [`serve`] (accepting failed).
    pub async fn run(
        listener: tokio::net::TcpListener,
        server: McpServer,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<(), String> {
        let config = toolgate::mcp::rmcp::transport::StreamableHttpServerConfig::default();
        let token = config.cancellation_token.clone();
        let service = server.streamable_http_service(config);
        tokio::select! {
            served = serve(listener, service) => served,
            () = stop => {
                token.cancel();
                // Let the session workers see the cancellation and drop their servers.
                tokio::task::yield_now().await;
                Ok(())
            }
        }
    }

    /// Resolves at Ctrl-C (SIGINT) or, on Unix, SIGTERM (what a process manager sends); never
    /// when neither can be listened for.
    pub async fn stopped() {
        #[cfg(unix)]
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Serves `service` (an [`McpServer::streamable_http_service`], or one with more layers)
    /// behind [`demo_auth`] at [`PATH`] on every connection `listener`
    /// accepts (HTTP/1.1), until the future is dropped (which closes every connection) or
    /// accepting fails. Other paths get `404 Not Found`.
    pub async fn serve<S>(listener: tokio::net::TcpListener, service: S) -> Result<(), String>
    where
        S: tower::Service<
                hyper::Request<Incoming>,
                Response = hyper::Response<BoxBody<Bytes, Infallible>>,
                Error = Infallible,
            > + Clone
            + Send
            + 'static,
        S::Future: Send,
    {
        let service = demo_auth(service);
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let (stream, _) = listener
                .accept()
                .await
                .map_err(|e| format!("accept failed: {e}"))?;
            let service = service.clone();
            let routed = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let service = service.clone();
                async move {
                    if request.uri().path() == PATH {
                        service.oneshot(request).await
                    } else {
                        let body = Full::new(Bytes::from_static(b"Not Found")).boxed();
                        let mut response = hyper::Response::new(body);
                        *response.status_mut() = hyper::StatusCode::NOT_FOUND;
                        Ok(response)
                    }
                }
            });
            connections.spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), routed)
                    .await;
            });
            // Forget the connections that ended.
            while connections.try_join_next().is_some() {}
        }
    }
}
