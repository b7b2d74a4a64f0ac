//! MCP over streamable HTTP (feature `mcp-http`): an [`McpServer`] mounted as rmcp's
//! [`StreamableHttpService`] (a tower service the host serves with hyper or axum, behind its own
//! auth layer), the caller's HTTP request for the identity function
//! ([`McpCaller::http_request`]), and a guard in front of a remote server over HTTP(S)
//! ([`McpGuard::streamable_http`]).
//!
//! Documents: the Model Context Protocol specification, revision 2025-06-18, "Transports":
//! "Streamable HTTP" (one endpoint taking `POST` of JSON-RPC messages; "Session Management": the
//! server may assign an `Mcp-Session-Id` in the `initialize` response, which the client sends on
//! every later request), and rmcp 3.11.0's `StreamableHttpService` (it puts each request's
//! `http::request::Parts` in the rmcp request context's extensions) and
//! `StreamableHttpClientTransport`.

use std::sync::Arc;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::guard::{McpGuard, McpGuardError};
use super::server::{McpCaller, McpServer, http_request};

impl McpCaller<'_> {
    /// The HTTP request of this call (method, URI, headers, and the `extensions` the host's
    /// tower layers filled in) when it came over rmcp's streamable HTTP service; `None` over
    /// stdio or an in-memory pipe.
    ///
    /// The identity of an HTTP call is what the host's auth layer, a tower layer in front of
    /// [`McpServer::streamable_http_service`], checked and put in the request's extensions
    /// (never a header the identity function reads and trusts on its own):
    ///
    /// ```no_run
    /// # fn run(dispatcher: toolgate_core::Dispatcher) -> Result<(), Box<dyn std::error::Error>> {
    /// use toolgate_core::HookContext;
    /// use toolgate_core::mcp::McpServer;
    ///
    /// /// What the host's auth layer inserts after it verified the caller's token.
    /// #[derive(Clone)]
    /// struct User {
    ///     id: String,
    ///     tier: String,
    /// }
    ///
    /// let server = McpServer::new(dispatcher, |caller| {
    ///     let user = caller.http_request()?.extensions.get::<User>()?;
    ///     Some(
    ///         HookContext::builder(user.id.as_str(), caller.mcp_session_id)
    ///             .tier(user.tier.as_str())
    ///             .build(),
    ///     )
    /// })?;
    /// # Ok(()) }
    /// ```
    ///
    /// No `User` (the layer let an anonymous request through): the function answers `None` and
    /// the call is refused with [`NO_IDENTITY_MESSAGE`](super::NO_IDENTITY_MESSAGE).
    pub fn http_request(&self) -> Option<&http::request::Parts> {
        http_request(self.request)
    }
}

impl McpServer {
    /// This server as rmcp's streamable HTTP service: a tower
    /// `Service<http::Request<B>>` (`B` any `http_body::Body`) answering MCP's single endpoint,
    /// which the host mounts at a path of its choice (`/mcp`) in hyper or axum, behind the auth
    /// layer that puts the caller in the request's extensions (see
    /// [`McpCaller::http_request`]). `config` is rmcp's: its defaults accept only loopback
    /// `Host` headers (set `allowed_hosts` for a public name), keep sessions
    /// (`legacy_session_mode: true`) and answer with server-sent events.
    ///
    /// How requests map to toolgate sessions:
    ///
    /// - **Sessions** (`legacy_session_mode: true`, the default): rmcp asks for one server per MCP
    ///   session, at `initialize`; this value's [`new_connection`](Self::new_connection) makes
    ///   it. The MCP session id of its calls (the stem of their `tool_use` ids, what the
    ///   identity function sees as [`McpCaller::mcp_session_id`]) is the `Mcp-Session-Id` rmcp
    ///   assigned and the client sends, so the audit lines and the client's session agree: a
    ///   server that answered `initialize` takes the id from the header of its first
    ///   `tools/call` (rmcp routes a request to a session's server only when its header names
    ///   that session, so the header is rmcp's id, not the client's choice). Within the MCP
    ///   session, calls are keyed by (user, context session id) as over stdio: two users on one
    ///   MCP session get two toolgate sessions. The sessions end (Stop hooks, the audit log's
    ///   summary line) when the MCP session does: the client's `DELETE`, or the service's
    ///   cancellation token.
    /// - **Stateless** (`legacy_session_mode: false`, and every request that negotiates MCP
    ///   2026-07-28, which rmcp always serves without a session): rmcp makes one server per HTTP
    ///   request. Each request is then one toolgate session of its own: its `tool_use` id is
    ///   `<made id>/1` (the id made as [`new`](Self::new) makes one, unique per request in the
    ///   process), and its session ends when the request is answered and rmcp drops the
    ///   server: the Stop hooks run once per request and the summary line counts one call. A
    ///   per-request session is the rule because nothing in a stateless request ties it to an
    ///   earlier one that the server has checked: a client-sent `Mcp-Session-Id` is not used,
    ///   and a conversation id the host puts in the [`HookContext`](crate::HookContext) names
    ///   the audit lines' session but does not join sessions (the answer memory and the Stop
    ///   hooks stay per request).
    ///
    /// In both modes a `tool_use` id is unique per call across requests and connections, so a
    /// client's JSON-RPC ids, which repeat, never reach a session's answer memory.
    ///
    /// ```no_run
    /// # async fn run(server: toolgate_core::mcp::McpServer) -> Result<(), Box<dyn std::error::Error>> {
    /// use toolgate_core::mcp::rmcp::transport::StreamableHttpServerConfig;
    ///
    /// let service = server.streamable_http_service(StreamableHttpServerConfig::default());
    /// // hyper: `hyper_util::service::TowerToHyperService::new(auth_layer.layer(service))`
    /// // served on each accepted connection; axum: `Router::new().nest_service("/mcp", …)`.
    /// # let _ = service;
    /// # Ok(()) }
    /// ```
    pub fn streamable_http_service(
        self,
        config: StreamableHttpServerConfig,
    ) -> StreamableHttpService<McpServer, LocalSessionManager> {
        StreamableHttpService::new(
            move || Ok(self.new_connection()),
            Arc::new(LocalSessionManager::default()),
            config,
        )
    }
}

impl McpGuard {
    /// Connects to a remote MCP server over streamable HTTP with rmcp's reqwest client, runs
    /// `initialize` and reads the server's tools, as [`connect`](Self::connect) does. `config`
    /// is rmcp's: the URL, and the guard's own credentials (the operator's, never the model's):
    /// `auth_header(token)` sends `Authorization: Bearer <token>` on every request,
    /// `custom_headers` any other header.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use toolgate_core::Dispatcher;
    /// use toolgate_core::mcp::McpGuard;
    /// use toolgate_core::mcp::rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    ///
    /// let config = StreamableHttpClientTransportConfig::with_uri("https://tools.example.com/mcp")
    ///     .auth_header(std::env::var("TOOLS_TOKEN")?);
    /// let guard = McpGuard::streamable_http(config).await?;
    /// let dispatcher = Dispatcher::builder().wrap(guard).build()?;
    /// # Ok(()) }
    /// ```
    ///
    /// `https` URLs use rustls on *ring* with the system's trust roots (rustls' platform
    /// verifier); this calls [`install_tls_provider`] first. A server that stops answering
    /// later makes each call a `tool_error` with rmcp's error as the operator detail (see
    /// [`McpGuard`]).
    ///
    /// # Errors
    /// [`McpGuardError::Initialize`] when the server cannot be reached or the handshake fails
    /// (the error names the HTTP failure), [`McpGuardError::ListTools`] when `tools/list` fails.
    pub async fn streamable_http(
        config: StreamableHttpClientTransportConfig,
    ) -> Result<McpGuard, McpGuardError> {
        install_tls_provider();
        McpGuard::connect(StreamableHttpClientTransport::from_config(config)).await
    }
}

/// Installs rustls' *ring* crypto provider as the process default, unless one is installed
/// already (the host's choice is kept). Returns nothing and cannot fail.
///
/// Why: `mcp-http` builds reqwest with rustls and no provider of its own (so not aws-lc-rs, a
/// large C build; BENCHMARKS.md), and reqwest's rule is then that building a `reqwest::Client`
/// in a process with no default provider panics. [`McpGuard::streamable_http`] calls this
/// first; call it yourself before building any other reqwest client in a program built with
/// `mcp-http` (rmcp's `StreamableHttpClientTransport::from_uri` / `from_config`, or your own
/// `reqwest::Client::new()` when your reqwest has no TLS feature of its own).
pub fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err: another thread installed one in between, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
