//! [`McpServer`]: an rmcp `ServerHandler` over a [`Dispatcher`]; every `tools/call` goes
//! through a [`Session`], so the PreToolUse chain, the observers, the audit log and the Stop
//! hooks apply as in a Messages API loop.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::Poll;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value};

use crate::audit::outcome::Outcome;
use crate::content::message::{ToolResult, ToolUse};
use crate::dispatch::dispatcher::Dispatcher;
use crate::error::CallError;
use crate::hook::context::HookContext;
use crate::provider::{Provider, SchemaError, mcp as wire};
use crate::session::Session;
use crate::texts;

use super::{META_BLOCKED_BY, META_OUTCOME};

/// Who is calling, as the host's identity function ([`McpServer::new`]) sees one `tools/call`.
///
/// `request` is rmcp's request context: its `extensions` hold what the transport and the host's
/// auth layer put there (over streamable HTTP, the request's `http::request::Parts`); over stdio
/// there is nothing in it about the caller, so the identity is the one the server was started
/// with (over HTTP, read it with `McpCaller::http_request`, feature `mcp-http`).
/// `mcp_session_id` is the MCP session the call belongs to (one per [`McpServer`] value,
/// that is per connection; see [`McpServer::session_id`]): a host usually makes it the
/// [`HookContext`]'s session id, so the audit lines of one connection share one session.
#[non_exhaustive]
pub struct McpCaller<'a> {
    /// rmcp's context of the request (id, `_meta`, extensions, peer).
    pub request: &'a RequestContext<RoleServer>,
    /// The MCP session of the connection.
    pub mcp_session_id: &'a str,
}

/// The host's identity function: the trusted [`HookContext`] of a call, or `None` when the
/// caller is unknown (the call is then refused: fail closed).
type Identify = dyn Fn(&McpCaller<'_>) -> Option<HookContext> + Send + Sync;

/// An MCP server over a [`Dispatcher`], for rmcp: serve it with `rmcp::ServiceExt::serve` on a
/// transport (`rmcp::transport::stdio()`, an in-memory `tokio::io::duplex` pipe), or over
/// streamable HTTP as `McpServer::streamable_http_service` (feature `mcp-http`). One value
/// serves one connection, that is one MCP session; make one per connection (the dispatcher is
/// shared, so that is cheap).
///
/// - `initialize`: the server's name and version (`toolgate` and this crate's version unless
///   [`server_info`](Self::server_info) says otherwise) and the `tools` capability.
/// - `tools/list`: the dispatcher's MCP entries
///   ([`Dispatcher::tool_definitions_for(Provider::Mcp)`](Dispatcher::tool_definitions_for),
///   `inputSchema`, `outputSchema` when the tool's output has an object schema), each with
///   `annotations` from the tool's declared [`Effect`](crate::dispatch::Effect) when it has one
///   (`{"readOnlyHint": true}`, `{"readOnlyHint": false, "destructiveHint": true}`; see
///   [`Effect::mcp_annotations`](crate::dispatch::Effect::mcp_annotations)). The list is the same
///   for every caller, and one page.
/// - `tools/call`: the host's identity function builds the trusted [`HookContext`] from the
///   request ([`McpCaller`]), never from the call's `arguments`. The call then runs in the
///   [`Session`] of (MCP session, user id, session id): a session's context is frozen, so a
///   caller whose identity differs from an earlier one's gets a session of its own. The
///   `tool_use` id is made here, `<mcp session id>/<n>` with `n` counting this connection's
///   calls from 1: unique per call, so a client's JSON-RPC ids (which repeat across
///   connections) never reach a session's answer memory, and a call is never answered from
///   another one's replay. A missing `arguments` is `{}`.
///
/// What the client reads, always a `CallToolResult` (never a JSON-RPC error, which the client's
/// model cannot read), built by
/// [`provider::mcp::call_tool_result`](crate::provider::mcp::call_tool_result):
///
/// | the call | `CallToolResult` |
/// |---|---|
/// | allowed and run | the tool's content (`structuredContent` too when the tool has an `outputSchema`), `isError: false` |
/// | blocked, invalid input, unknown tool, tool error, panic, deadline | `isError: true` with the very text a Messages API `tool_result` gets (`BLOCKED: …`, `Invalid input for …`, …) |
/// | a rule asked for a person ([`Decision::Ask`](crate::Decision::Ask)) | the builder's [`Approver`](crate::approval::Approver) decides inline; with none the call is blocked with the reason (`isError: true`): fail closed |
/// | a PreToolUse hook could not decide (a [`Halt`](crate::Halt)) | `isError: true` with the halt's `BLOCKED:` text; that session ends (its Stop hooks run) and every later call of the same caller on this connection gets [`HALTED_SESSION_MESSAGE`]; other sessions go on |
/// | no identity (the function answered `None`, or panicked) | `isError: true` with [`NO_IDENTITY_MESSAGE`]; nothing ran and nothing is audited (an audit line needs a user) |
/// | cancelled: the client's `notifications/cancelled` for it, or the connection closing while it runs | the call is dropped unfinished (the tool stops) and audited as `cancelled`; rmcp sends no answer to a cancelled request (a closing connection may still carry an `isError` result saying the call was cancelled) |
///
/// With [`outcomes_in_meta`](Self::outcomes_in_meta), every result also carries
/// `"_meta": {"toolgate/outcome": "blocked", "toolgate/blocked_by": "app::policy::premium_only"}`
/// (`toolgate/blocked_by` only when a hook is at fault; the two refusals above, no identity and
/// a halted session, are `{"toolgate/outcome": "blocked"}`), which [`McpGuard`](super::McpGuard)
/// reads so that a guard's audit line records the inner outcome and hook.
///
/// The sessions end (their Stop hooks run, the audit log's summary line is written) when the
/// value is dropped: when the connection closes and rmcp drops its handler, or at
/// [`end_sessions`](Self::end_sessions).
pub struct McpServer {
    dispatcher: Dispatcher,
    identify: Arc<Identify>,
    tools: Arc<[Tool]>,
    mcp_session_id: String,
    /// The `Mcp-Session-Id` rmcp's streamable HTTP service assigned to this value's session,
    /// once a call after `initialize` carried it (feature `mcp-http`).
    http_session_id: OnceLock<String>,
    /// This value answered `initialize` (so it serves a whole MCP session, not one stateless
    /// HTTP request).
    initialized: AtomicBool,
    calls: AtomicU64,
    sessions: Mutex<HashMap<SessionKey, Slot>>,
    outcomes_in_meta: bool,
    server_info: Implementation,
}

/// (user id, the context's session id): the key of a session within the connection.
type SessionKey = (String, String);

/// A live session, or the mark of one ended by a halt.
enum Slot {
    Live(Arc<Session>),
    Halted,
}

/// The text of a call refused because the host's identity function knew no caller (it answered
/// `None` or panicked): the only content item of an `isError: true` result.
pub const NO_IDENTITY_MESSAGE: &str = texts::MCP_NO_IDENTITY;

/// The text of a call made after its session was halted (a policy check could not decide).
pub const HALTED_SESSION_MESSAGE: &str = texts::MCP_HALTED_SESSION;

/// A process-wide counter of connections, for the MCP session ids made here.
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

impl McpServer {
    /// A server over `dispatcher`, whose callers are identified by `identify` (see
    /// [`McpCaller`]); a stdio server started for one user answers the same context every time:
    ///
    /// ```no_run
    /// # async fn run(dispatcher: toolgate_core::Dispatcher) -> Result<(), Box<dyn std::error::Error>> {
    /// use rmcp::ServiceExt;
    /// use toolgate_core::HookContext;
    /// use toolgate_core::mcp::McpServer;
    ///
    /// let server = McpServer::new(dispatcher, |caller| {
    ///     Some(HookContext::builder("u_001", caller.mcp_session_id).tier("premium").build())
    /// })?;
    /// server.serve(rmcp::transport::stdio()).await?.waiting().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// The MCP session id is made here: `mcp-<process id>-<now, ns, hex>-<n>` (`n` counts this
    /// process's servers), so two runs of a stdio server never share one in the audit log;
    /// [`mcp_session_id`](Self::mcp_session_id) sets another. Each further connection gets a
    /// value of its own from [`new_connection`](Self::new_connection).
    ///
    /// # Errors
    /// The [`SchemaError`] of
    /// [`tool_definitions_for(Provider::Mcp)`](Dispatcher::tool_definitions_for) (today never:
    /// MCP takes every schema toolgate builds).
    pub fn new<F>(dispatcher: Dispatcher, identify: F) -> Result<McpServer, SchemaError>
    where
        F: Fn(&McpCaller<'_>) -> Option<HookContext> + Send + Sync + 'static,
    {
        let tools = list(&dispatcher)?.into();
        Ok(McpServer::connection(
            dispatcher,
            Arc::new(identify),
            tools,
            false,
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        ))
    }

    /// A server with these settings for a new connection: a new MCP session id, no calls and
    /// no sessions yet.
    fn connection(
        dispatcher: Dispatcher,
        identify: Arc<Identify>,
        tools: Arc<[Tool]>,
        outcomes_in_meta: bool,
        server_info: Implementation,
    ) -> McpServer {
        McpServer {
            dispatcher,
            identify,
            tools,
            mcp_session_id: made_session_id(),
            http_session_id: OnceLock::new(),
            initialized: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            sessions: Mutex::new(HashMap::new()),
            outcomes_in_meta,
            server_info,
        }
    }

    /// A server for another connection: the same dispatcher, identity function and settings,
    /// a new MCP session id (made as [`new`](Self::new) makes one) and no sessions yet. What a
    /// host's per-connection factory calls: rmcp's streamable HTTP service asks for one service
    /// per MCP session, and in its stateless mode one per request, whose sessions then end
    /// (Stop hooks, summary line) when the request is answered and the value dropped
    /// (`McpServer::streamable_http_service`, feature `mcp-http`, is that factory).
    pub fn new_connection(&self) -> McpServer {
        McpServer::connection(
            self.dispatcher.clone(),
            Arc::clone(&self.identify),
            Arc::clone(&self.tools),
            self.outcomes_in_meta,
            self.server_info.clone(),
        )
    }

    /// Sets the MCP session id of this connection (a host that has its own, e.g. a conversation
    /// id it started the stdio server for). Give each connection its own: the `tool_use` ids
    /// are made from it.
    pub fn mcp_session_id(mut self, id: impl Into<String>) -> Self {
        self.mcp_session_id = id.into();
        self
    }

    /// Puts each call's outcome (and the hook at fault) in the result's `_meta`:
    /// `{"toolgate/outcome": "blocked", "toolgate/blocked_by": "<hook path>"}`, so a guard in
    /// front of this server ([`McpGuard`](super::McpGuard)) records the truth. Off by default:
    /// a hook's path is the operator's, and some clients show `_meta` to their model.
    pub fn outcomes_in_meta(mut self, on: bool) -> Self {
        self.outcomes_in_meta = on;
        self
    }

    /// The `serverInfo` of the `initialize` answer (default: `toolgate`, this crate's version).
    pub fn server_info(mut self, info: Implementation) -> Self {
        self.server_info = info;
        self
    }

    /// The MCP session id of this connection (what [`McpCaller::mcp_session_id`] holds): the
    /// one made at [`new`](Self::new) or set by [`mcp_session_id`](Self::mcp_session_id), and
    /// over rmcp's streamable HTTP sessions the `Mcp-Session-Id` rmcp assigned, from the first
    /// `tools/call` on (see `McpServer::streamable_http_service`, feature `mcp-http`).
    pub fn session_id(&self) -> &str {
        self.http_session_id.get().unwrap_or(&self.mcp_session_id)
    }

    /// The MCP session id of a call: [`session_id`](Self::session_id), after taking the
    /// `Mcp-Session-Id` of the first call of an HTTP session.
    fn call_session_id(&self, request: &RequestContext<RoleServer>) -> &str {
        if let Some(id) = self.http_session_id.get() {
            return id;
        }
        #[cfg(feature = "mcp-http")]
        if self.initialized.load(Ordering::Acquire)
            && let Some(id) = header_session_id(request)
        {
            return self.http_session_id.get_or_init(|| id.to_owned());
        }
        #[cfg(not(feature = "mcp-http"))]
        let _ = request;
        &self.mcp_session_id
    }

    /// Ends every session of this connection now (their Stop hooks run once; the audit log
    /// writes their summary lines). A later call opens a new session.
    pub fn end_sessions(&self) {
        let sessions: Vec<Slot> = {
            let mut map = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            map.drain().map(|(_, slot)| slot).collect()
        };
        for slot in sessions {
            if let Slot::Live(session) = slot {
                session.end();
            }
        }
    }

    /// Answers one `tools/call` (see the table on [`McpServer`]): the caller identified by the
    /// host, its session found or opened, the call run through it.
    async fn call(
        &self,
        params: CallToolRequestParams,
        request: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let mcp_session_id = self.call_session_id(request);
        let caller = McpCaller {
            request,
            mcp_session_id,
        };
        let Some(context) = self.identify(&caller, &params.name) else {
            return self.refused(NO_IDENTITY_MESSAGE, Outcome::Blocked);
        };
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("{mcp_session_id}/{n}");
        let input = Value::Object(params.arguments.unwrap_or_default());
        let call = ToolUse::new(id, params.name.as_ref(), input);
        let key = (
            context.user_id().to_owned(),
            context.session_id().to_owned(),
        );
        let Some(session) = self.session_for(&key, context) else {
            return self.refused(HALTED_SESSION_MESSAGE, Outcome::Blocked);
        };
        match session.call_answer(&call).await {
            Ok(answer) => self.result(
                &answer.result,
                &call.name,
                answer.outcome,
                answer.blocked_by.as_deref(),
            ),
            Err(CallError::Halt(halt)) => {
                self.halt_session(key);
                let result = halt
                    .result()
                    .cloned()
                    .unwrap_or_else(|| ToolResult::error(call.id.clone(), texts::HALT_MESSAGE));
                self.result(&result, &call.name, halt.outcome, Some(&halt.hook))
            }
            // The ids are made here, unique, never empty, and the memory is in-process: these
            // cannot happen; answered as an internal error all the same.
            Err(e) => {
                tracing::error!(target: "toolgate::mcp", tool_use_id = %call.id, error = %e,
                    "tools/call not run");
                error_result(texts::INTERNAL_ERROR_MESSAGE)
            }
        }
    }

    /// The trusted context of `caller` by the host's identity function; `None` when it knows
    /// no caller or panics. A panic of the host's function (parsing what the caller sent) would
    /// kill rmcp's handler task and leave the client waiting for an answer, so it is refused as
    /// `None` is.
    fn identify(&self, caller: &McpCaller<'_>, tool: &str) -> Option<HookContext> {
        let mcp_session_id = caller.mcp_session_id;
        let identified =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.identify)(caller)));
        match identified {
            Ok(Some(context)) => Some(context),
            Ok(None) => {
                tracing::warn!(target: "toolgate::mcp", mcp_session_id = %mcp_session_id,
                    tool = %tool,
                    "tools/call refused: the host's identity function knew no caller");
                None
            }
            Err(_) => {
                tracing::error!(target: "toolgate::mcp", mcp_session_id = %mcp_session_id,
                    tool = %tool,
                    "tools/call refused: the host's identity function panicked");
                None
            }
        }
    }

    /// The live session of `key` (user id, MCP session id), opened with `context` when there is
    /// none; `None` when it halted (its later calls are refused).
    fn session_for(&self, key: &(String, String), context: HookContext) -> Option<Arc<Session>> {
        let mut map = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        match map.get(key) {
            Some(Slot::Live(session)) => Some(Arc::clone(session)),
            Some(Slot::Halted) => None,
            None => {
                let session = Arc::new(self.dispatcher.session(context));
                map.insert(key.clone(), Slot::Live(Arc::clone(&session)));
                Some(session)
            }
        }
    }

    /// A call of `key`'s session halted: the session is ended (its Stop hooks run once) and
    /// marked halted, so its later calls are refused while other sessions go on.
    fn halt_session(&self, key: (String, String)) {
        let slot = {
            let mut map = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            map.insert(key, Slot::Halted)
        };
        if let Some(Slot::Live(session)) = slot {
            session.end();
        }
    }

    /// The `isError` result of a call no session answered: refused before one ran it (no
    /// identity, a halted session: `blocked`, no hook at fault, so a guard in front records
    /// `blocked`, not `tool_error`), or dropped because rmcp cancelled its request
    /// ([`texts::MCP_CANCELLED`], `cancelled`; rmcp sends it only while a closing connection
    /// drains). `text` is its one item; `outcome` goes in `_meta` when asked.
    fn refused(&self, text: &str, outcome: Outcome) -> CallToolResult {
        let mut result = error_result(text);
        result.meta = self.meta(outcome, None);
        result
    }

    /// The result's `_meta` with [`outcomes_in_meta`](Self::outcomes_in_meta):
    /// `{"toolgate/outcome": <outcome>}`, and `"toolgate/blocked_by": <hook path>` when a hook
    /// is at fault; `None` otherwise.
    fn meta(&self, outcome: Outcome, blocked_by: Option<&str>) -> Option<rmcp::model::MetaObject> {
        if !self.outcomes_in_meta {
            return None;
        }
        let mut meta = Map::new();
        meta.insert(META_OUTCOME.into(), Value::from(outcome.as_str()));
        if let Some(hook) = blocked_by {
            meta.insert(META_BLOCKED_BY.into(), Value::from(hook));
        }
        Some(rmcp::model::MetaObject(meta))
    }

    /// The `CallToolResult` of a `tool_result`, with the outcome in `_meta` when asked.
    fn result(
        &self,
        result: &ToolResult,
        tool: &str,
        outcome: Outcome,
        blocked_by: Option<&str>,
    ) -> CallToolResult {
        let value = wire::call_tool_result(result, self.dispatcher.output_schema(tool));
        let mut result: CallToolResult = serde_json::from_value(value).unwrap_or_else(|e| {
            tracing::error!(target: "toolgate::mcp", error = %e,
                "a tool result did not convert to an MCP CallToolResult");
            error_result(texts::INTERNAL_ERROR_MESSAGE)
        });
        result.meta = self.meta(outcome, blocked_by);
        result
    }
}

/// A new MCP session id: `mcp-<process id>-<now, ns since the epoch, hex>-<n>`, `n` counting
/// this process's servers from 1.
fn made_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = CONNECTIONS.fetch_add(1, Ordering::Relaxed) + 1;
    format!("mcp-{}-{now:x}-{n}", std::process::id())
}

/// The `tools/list` entries of `dispatcher`, with `annotations` from each tool's effect.
fn list(dispatcher: &Dispatcher) -> Result<Vec<Tool>, SchemaError> {
    let entries = dispatcher.tool_definitions_for(Provider::Mcp)?;
    Ok(entries
        .iter()
        .filter_map(|entry| {
            let mut entry = entry.clone();
            let name = entry.get("name").and_then(Value::as_str)?.to_owned();
            if let (Some(effect), Value::Object(map)) = (dispatcher.tool_effect(&name), &mut entry)
            {
                map.insert(
                    "annotations".into(),
                    Value::Object(effect.mcp_annotations()),
                );
            }
            match serde_json::from_value::<Tool>(entry) {
                Ok(tool) => Some(tool),
                Err(e) => {
                    tracing::error!(target: "toolgate::mcp", tool = %name, error = %e,
                        "a tools/list entry did not convert to rmcp's Tool; left out");
                    None
                }
            }
        })
        .collect())
}

/// An `isError` result with one text item.
fn error_result(text: &str) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(text)])
}

impl rmcp::ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.server_info.clone())
    }

    /// rmcp's own answer (the client's info kept, the protocol version negotiated), noting that
    /// this value serves a whole MCP session.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.initialized.store(true, Ordering::Release);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    /// `McpServer::call`, dropped unfinished when rmcp cancels the request (the client's
    /// `notifications/cancelled`, or the connection closing): the call is then audited as
    /// `cancelled`, never as an answer nobody received.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = {
            let mut call = std::pin::pin!(self.call(request, &context));
            let mut cancelled = std::pin::pin!(context.ct.cancelled());
            std::future::poll_fn(|cx| {
                if let Poll::Ready(result) = call.as_mut().poll(cx) {
                    return Poll::Ready(Some(result));
                }
                cancelled.as_mut().poll(cx).map(|()| None)
            })
            .await
        };
        Ok(CallToolResponse::Complete(result.unwrap_or_else(|| {
            self.refused(texts::MCP_CANCELLED, Outcome::Cancelled)
        })))
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("mcp_session_id", &self.session_id())
            .field("tools", &self.tools.len())
            .field("outcomes_in_meta", &self.outcomes_in_meta)
            .finish_non_exhaustive()
    }
}

/// The header that carries the MCP session id (streamable HTTP, "Session Management"); `http`
/// header names are matched without regard to case.
#[cfg(feature = "mcp-http")]
const MCP_SESSION_ID: &str = "mcp-session-id";

/// The HTTP request rmcp's streamable HTTP service put in `request`'s extensions.
#[cfg(feature = "mcp-http")]
pub(super) fn http_request(request: &RequestContext<RoleServer>) -> Option<&http::request::Parts> {
    request.extensions.get::<http::request::Parts>()
}

/// The `Mcp-Session-Id` of `request`'s HTTP request, when it has one that is text.
#[cfg(feature = "mcp-http")]
fn header_session_id(request: &RequestContext<RoleServer>) -> Option<&str> {
    http_request(request)?
        .headers
        .get(MCP_SESSION_ID)?
        .to_str()
        .ok()
        .filter(|id| !id.is_empty())
}
