//! MCP (feature `mcp`): a [`Dispatcher`](crate::Dispatcher) served as an MCP server
//! ([`McpServer`]), and the hooks put in front of a remote MCP server ([`McpGuard`]), with the
//! official Rust SDK, [`rmcp`] (3.11.0, re-exported), doing the protocol.
//!
//! Documents: the Model Context Protocol specification, revisions 2025-06-18 and 2025-11-25
//! ("Tools": `tools/list`, `tools/call`, "Error Handling": a tool's failure is a result with
//! `isError: true`, not a JSON-RPC error; "Lifecycle"; "Transports": stdio and, with the
//! `mcp-http` feature, streamable HTTP), and rmcp's `ServerHandler` and client (`serve_client`,
//! `TokioChildProcess`, `StreamableHttpService`, `StreamableHttpClientTransport`).
//!
//! Over streamable HTTP (feature `mcp-http`): `McpServer::streamable_http_service` mounts a
//! server in hyper or axum behind the host's auth layer, `McpCaller::http_request` gives the
//! identity function the request that layer marked, and `McpGuard::streamable_http` guards a
//! remote server over HTTP(S); the sessions' rule for both of rmcp's modes is on
//! `streamable_http_service`.
//!
//! Serving a dispatcher over stdio, as the user the process was started for (the support
//! agent's `mcp_server` program, `examples/support-agent/src/bin/mcp_server.rs`, does this with
//! its tools and rules):
//!
//! ```no_run
//! # async fn run(dispatcher: toolgate_core::Dispatcher) -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate_core::HookContext;
//! use toolgate_core::mcp::McpServer;
//! use toolgate_core::mcp::rmcp::ServiceExt;
//!
//! let server = McpServer::new(dispatcher, |caller| {
//!     Some(HookContext::builder("u_001", caller.mcp_session_id).tier("premium").build())
//! })?;
//! server.serve(toolgate_core::mcp::rmcp::transport::stdio()).await?.waiting().await?;
//! # Ok(()) }
//! ```
//!
//! The outcome of a call crosses the protocol in the result's `_meta` when the server is asked
//! to put it there ([`McpServer::outcomes_in_meta`]): [`META_OUTCOME`] and [`META_BLOCKED_BY`].

mod guard;
#[cfg(feature = "mcp-http")]
mod http;
mod server;

pub use guard::{McpGuard, McpGuardError};
#[cfg(feature = "mcp-http")]
pub use http::install_tls_provider;
pub use rmcp;
pub use server::{HALTED_SESSION_MESSAGE, McpCaller, McpServer, NO_IDENTITY_MESSAGE};

/// The `_meta` key of a call's [`Outcome`](crate::audit::Outcome) (`"blocked"`, `"ok"`, …) in a
/// `CallToolResult` of an [`McpServer`] with [`outcomes_in_meta`](McpServer::outcomes_in_meta).
pub const META_OUTCOME: &str = "toolgate/outcome";

/// The `_meta` key of the full path of the PreToolUse hook that denied the call or could not
/// decide (present only then).
pub const META_BLOCKED_BY: &str = "toolgate/blocked_by";
