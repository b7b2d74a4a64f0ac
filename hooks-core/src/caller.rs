//! Wrapping by ownership: [`ToolCaller`], anything that answers `tool_use` blocks, and
//! [`SyncCaller`], a plain closure adapted to it.
//!
//! A dispatcher built around a caller ([`DispatcherBuilder::wrap`](crate::DispatcherBuilder::wrap))
//! takes it by value and owns it, as a `tower` layer owns its inner service: the only way to
//! reach the caller is through the dispatcher's pipeline, and nothing can be rebound to point
//! back at the wrapper, so the self-recursion of a monkey-patched `call_tool` cannot be written.

use serde_json::Value;

use crate::content::{ToolResult, ToolUse};
use crate::context::HookContext;
use crate::error::{Halt, ToolError};
use crate::future::BoxFuture;

/// Something that answers `tool_use` blocks: a [`Dispatcher`](crate::Dispatcher), an MCP client,
/// a remote tool server.
///
/// A caller's answer is final for its call: `Ok(result)` is the `tool_result` (with `is_error`
/// when it failed; outcome `tool_error` in the wrapping dispatcher's audit line), `Err(halt)`
/// means its own policy could not decide (the wrapping dispatcher then halts too: fail
/// closed).
///
/// Its definitions are checked by [`DispatcherBuilder::build`](crate::DispatcherBuilder::build)
/// like a `#[tool]`'s: an entry without a valid `name` is
/// [`BuildProblem::InvalidToolName`](crate::BuildProblem::InvalidToolName), one without an
/// object `input_schema` is [`BuildProblem::RootNotObject`](crate::BuildProblem::RootNotObject).
/// The `input_schema` is used as given (it is not canonicalized): inputs are validated against
/// it, and unknown fields are refused only where it says `additionalProperties: false`. An
/// entry's `input_examples` are kept in the wrapping dispatcher's Anthropic entries and checked
/// against that schema like a [`ToolDef`](crate::ToolDef)'s; an invalid example, or a value
/// there that is not an array, is
/// [`BuildProblem::InvalidInputExample`](crate::BuildProblem::InvalidInputExample).
pub trait ToolCaller: Send + Sync + 'static {
    /// The tools this caller answers, as Anthropic `tools` entries: `{"name": …,
    /// "description": …, "input_schema": {…}}`. Read once, when the wrapping dispatcher is built.
    fn tool_definitions(&self) -> Vec<Value>;

    /// Answers one `tool_use` block (its input already validated by the wrapping dispatcher)
    /// for the session described by `context`.
    fn call_tool<'a>(
        &'a self,
        context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<ToolResult, Halt>>;
}

/// A plain synchronous closure as a [`ToolCaller`]: `Ok(text)` becomes a result, `Err(e)` an
/// `is_error` result with `e`'s [`message`](ToolError::message): the text of a
/// [`ToolError::new`] or [`ToolError::for_model`], and the generic
/// [`INTERNAL_ERROR_MESSAGE`](crate::INTERNAL_ERROR_MESSAGE) for an internal error (a library
/// error forwarded with `?`, or [`ToolError::internal`]). Made with [`sync_caller`].
///
/// A [`ToolCaller`] answers with a `tool_result` only, so the operator-only
/// [`detail`](ToolError::detail) (an internal error's `Display` and source chain, a
/// `for_model` error's source chain) cannot reach the wrapping dispatcher's audit line; it goes
/// to `tracing` instead (target `toolgate::caller`, level `warn`, fields `tool_use_id`, `tool`,
/// `detail`).
pub struct SyncCaller<F> {
    definitions: Vec<Value>,
    f: F,
}

/// Adapts `f` to a [`ToolCaller`] that answers the tools in `definitions` (Anthropic `tools`
/// entries).
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{sync_caller, Dispatcher, ToolError};
///
/// let legacy = sync_caller(
///     vec![json!({"name": "ping", "description": "Answers pong.",
///                 "input_schema": {"type": "object", "properties": {}}})],
///     |_ctx, call| if call.name == "ping" { Ok("pong".into()) } else { Err(ToolError::new("no")) },
/// );
/// let dispatcher = Dispatcher::builder().wrap(legacy).build().unwrap();
/// assert_eq!(dispatcher.tool_definitions()[0]["name"], "ping");
/// ```
pub fn sync_caller<F>(definitions: Vec<Value>, f: F) -> SyncCaller<F>
where
    F: Fn(&HookContext, &ToolUse) -> Result<String, ToolError> + Send + Sync + 'static,
{
    SyncCaller { definitions, f }
}

impl<F> ToolCaller for SyncCaller<F>
where
    F: Fn(&HookContext, &ToolUse) -> Result<String, ToolError> + Send + Sync + 'static,
{
    fn tool_definitions(&self) -> Vec<Value> {
        self.definitions.clone()
    }

    fn call_tool<'a>(
        &'a self,
        context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<ToolResult, Halt>> {
        let result = match (self.f)(context, call) {
            Ok(text) => ToolResult::text(call.id.clone(), text),
            Err(e) => {
                if let Some(detail) = e.detail() {
                    tracing::warn!(target: "toolgate::caller", tool_use_id = %call.id,
                        tool = %call.name, detail = %detail, "wrapped tool failed");
                }
                ToolResult::error(call.id.clone(), e.message())
            }
        };
        Box::pin(std::future::ready(Ok(result)))
    }
}
