//! [`McpGuard`]: an rmcp client connection to a remote MCP server as a [`ToolCaller`], so a
//! dispatcher built around it puts its hooks in front of every tool of that server.

use std::fmt;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock as Item, Tool};
use rmcp::service::{ClientInitializeError, Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::{IntoTransport, TokioChildProcess};
use serde_json::{Map, Value, json};

use crate::audit::outcome::Outcome;
use crate::base::future::BoxFuture;
use crate::content::message::{
    ContentBlock, Message, TextBlock, ToolResult, ToolResultContent, ToolUse,
};
use crate::content::output::Image;
use crate::error::Halt;
use crate::hook::answer::CallAnswer;
use crate::hook::caller::ToolCaller;
use crate::hook::context::HookContext;
use crate::texts;

use super::{META_BLOCKED_BY, META_OUTCOME};

/// A connection to a remote MCP server (rmcp's client), as a [`ToolCaller`]: wrap it in a
/// dispatcher ([`DispatcherBuilder::wrap`](crate::dispatch::DispatcherBuilder::wrap)) and every
/// `tools/call` to that server passes the dispatcher's PreToolUse chain, observers and audit log.
///
/// - Its tools are read once, at [`connect`](Self::connect) (`tools/list`, every page), since
///   [`ToolCaller::tool_definitions`] is read when the wrapping dispatcher is built and is not
///   async: a server whose list changes later needs a new guard. Each remote `Tool` becomes the
///   entry `{"name": …, "description": …, "input_schema": <inputSchema>, "annotations": …}`
///   (`description` `""` when absent; `annotations` as the server sent them, so its `readOnlyHint`
///   declares the tool's [`Effect`](crate::dispatch::Effect)). The wrapping dispatcher's build
///   checks those schemas as any wrapped caller's: each against its draft's meta-schema, and the
///   inputs against every keyword with the `full-validation` feature (see [`ToolCaller`]).
/// - A call sends `tools/call` with the (validated) input as `arguments`. The remote
///   `CallToolResult` becomes the `tool_result`: one `text` item is the result's text, several
///   items are blocks (`text` as text, `image` as a base64 image block, any other item a text
///   saying it was left out), none is an empty result.
/// - The answer's outcome: `ok` for a result without `isError`; for an `isError` one,
///   `tool_error`, unless the result's `_meta` holds a toolgate outcome (a server run by
///   [`McpServer::outcomes_in_meta`](super::McpServer::outcomes_in_meta)): `blocked` (with the
///   inner hook's path), `invalid_input`, `unknown_tool`, `panicked`, `tool_timeout` are kept,
///   and `hook_failed` / `hook_timeout` are a [`Halt`] of the guard too (fail closed). A
///   `_meta` outcome on a result without `isError` is ignored (`ok`).
/// - A broken connection (the server exited, the transport failed, an answer that is not a
///   `CallToolResult`) is a `tool_error` whose text says the server did not answer, with rmcp's
///   error as the operator detail (on the audit line, never shown to the model).
///
/// Needs a tokio runtime (rmcp's transports run on it). Its calls are async, so each one runs
/// against the dispatcher's tool deadline; give that dispatcher `.timer(TokioTimer)` (feature
/// `tokio`, `toolgate_core::dispatch::TokioTimer`) so the deadline is a sleep on the same
/// runtime. The default timer's helper thread is woken twice per call (when the sleep is made
/// and when it is dropped), which over a loopback HTTP hop is about half or more of what the
/// guard adds to the call (BENCHMARKS.md, "The MCP guard's hop").
pub struct McpGuard {
    peer: Peer<RoleClient>,
    definitions: Vec<Value>,
    /// Keeps the connection open; dropping it closes it (and ends a child process).
    _service: RunningService<RoleClient, ()>,
}

/// Why [`McpGuard::connect`], [`McpGuard::child_process`] or `McpGuard::streamable_http`
/// (feature `mcp-http`) made no guard.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpGuardError {
    /// The child process could not be started.
    #[error("the MCP server process could not be started: {0}")]
    Spawn(#[source] std::io::Error),
    /// The `initialize` handshake failed.
    #[error("the MCP server did not complete initialize: {0}")]
    Initialize(#[source] Box<ClientInitializeError>),
    /// `tools/list` failed.
    #[error("the MCP server did not answer tools/list: {0}")]
    ListTools(#[source] Box<ServiceError>),
}

impl McpGuard {
    /// Connects over `transport` (anything rmcp's client takes: a `TokioChildProcess`, a
    /// `tokio::io::duplex` end, a streamable HTTP client transport), runs `initialize`, and reads
    /// the server's tools.
    ///
    /// # Errors
    /// [`McpGuardError::Initialize`] when the handshake fails, [`McpGuardError::ListTools`] when
    /// `tools/list` does.
    pub async fn connect<T, E, A>(transport: T) -> Result<McpGuard, McpGuardError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = rmcp::service::serve_client((), transport)
            .await
            .map_err(|e| McpGuardError::Initialize(Box::new(e)))?;
        let peer = service.peer().clone();
        let tools = peer
            .list_all_tools()
            .await
            .map_err(|e| McpGuardError::ListTools(Box::new(e)))?;
        Ok(McpGuard {
            peer,
            definitions: tools.iter().map(definition).collect(),
            _service: service,
        })
    }

    /// Starts `command` as a child process speaking MCP over its standard input and output,
    /// and [`connect`](Self::connect)s to it. The child ends when the guard is dropped.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use toolgate_core::Dispatcher;
    /// use toolgate_core::mcp::McpGuard;
    ///
    /// let mut command = tokio::process::Command::new("npx");
    /// command.args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]);
    /// let guard = McpGuard::child_process(command).await?;
    /// let dispatcher = Dispatcher::builder().wrap(guard).build()?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`McpGuardError::Spawn`] when the process does not start; then as
    /// [`connect`](Self::connect).
    pub async fn child_process(
        command: tokio::process::Command,
    ) -> Result<McpGuard, McpGuardError> {
        let transport = TokioChildProcess::new(command).map_err(McpGuardError::Spawn)?;
        McpGuard::connect(transport).await
    }

    /// The remote tools as this guard lists them (Anthropic `tools` entries, see above).
    pub fn definitions(&self) -> &[Value] {
        &self.definitions
    }
}

/// A remote `Tool` as an Anthropic `tools` entry, its annotations kept.
fn definition(tool: &Tool) -> Value {
    let mut entry = json!({
        "name": tool.name,
        "description": tool.description.as_deref().unwrap_or(""),
        "input_schema": Value::Object((*tool.input_schema).clone()),
    });
    if let (Some(annotations), Value::Object(map)) = (&tool.annotations, &mut entry)
        && let Ok(value) = serde_json::to_value(annotations)
    {
        map.insert("annotations".into(), value);
    }
    entry
}

impl ToolCaller for McpGuard {
    fn tool_definitions(&self) -> Vec<Value> {
        self.definitions.clone()
    }

    fn call_tool<'a>(
        &'a self,
        _context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<CallAnswer, Halt>> {
        Box::pin(async move {
            let arguments = match &call.input {
                Value::Object(map) => map.clone(),
                _ => Map::new(),
            };
            let params = CallToolRequestParams::new(call.name.clone()).with_arguments(arguments);
            match self.peer.call_tool(params).await {
                Ok(result) => answer(call, &result),
                Err(e) => Ok(CallAnswer::new(
                    ToolResult::error(call.id.clone(), texts::MCP_REMOTE_FAILED),
                    Outcome::ToolError,
                )
                .with_detail(format!(
                    "the MCP server did not answer tools/call {:?}: {e}",
                    call.name
                ))),
            }
        })
    }
}

/// The answer of a remote `CallToolResult` (see [`McpGuard`] for the outcome).
fn answer(call: &ToolUse, remote: &CallToolResult) -> Result<CallAnswer, Halt> {
    let is_error = remote.is_error == Some(true);
    let result = ToolResult {
        tool_use_id: call.id.clone(),
        content: content(remote),
        is_error,
        extra: Map::new(),
    };
    if !is_error {
        return Ok(CallAnswer::new(result, Outcome::Ok));
    }
    let meta = remote.meta.as_ref();
    let field = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
    let blocked_by = field(META_BLOCKED_BY);
    let sent = field(META_OUTCOME).and_then(|s| Outcome::ALL.into_iter().find(|o| o.as_str() == s));
    let outcome = match sent {
        Some(
            o @ (Outcome::Blocked
            | Outcome::InvalidInput
            | Outcome::UnknownTool
            | Outcome::Panicked
            | Outcome::ToolTimeout),
        ) => o,
        Some(outcome @ (Outcome::HookFailed | Outcome::HookTimeout)) => {
            return Err(Halt {
                outcome,
                hook: blocked_by.unwrap_or("remote MCP server").to_owned(),
                tool_use_id: call.id.clone(),
                detail: "a PreToolUse hook of the remote MCP server could not decide".into(),
                answer: Box::new(Message::user(vec![ContentBlock::ToolResult(result)])),
                index: 0,
                ran_after: None,
            });
        }
        _ => Outcome::ToolError,
    };
    let answer = CallAnswer::new(result, outcome);
    Ok(match (outcome, blocked_by) {
        (Outcome::Blocked, Some(hook)) => answer.with_blocked_by(hook),
        _ => answer,
    })
}

/// The `tool_result` content of a remote result's items.
fn content(remote: &CallToolResult) -> Option<ToolResultContent> {
    match remote.content.as_slice() {
        [] => None,
        [Item::Text(one)] => Some(ToolResultContent::Text(one.text.clone())),
        items => Some(ToolResultContent::Blocks(items.iter().map(block).collect())),
    }
}

/// One remote content item as a `tool_result` block: text as text, an image as a base64 image
/// block, anything else a text saying it was left out.
fn block(item: &Item) -> ContentBlock {
    let text_block = |text: String| {
        ContentBlock::Text(TextBlock {
            text,
            ..TextBlock::default()
        })
    };
    let kind = match item {
        Item::Text(text) => return text_block(text.text.clone()),
        Item::Image(image) => {
            return Image::base64(&image.mime_type, image.data.clone()).into_block();
        }
        Item::Audio(_) => "audio",
        Item::Resource(_) => "resource",
        Item::ResourceLink(_) => "resource_link",
        _ => "unknown",
    };
    text_block(texts::left_out(
        &format!("a {kind} item"),
        "this guard carries text and images only",
    ))
}

impl fmt::Debug for McpGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpGuard")
            .field("tools", &self.definitions.len())
            .finish_non_exhaustive()
    }
}
