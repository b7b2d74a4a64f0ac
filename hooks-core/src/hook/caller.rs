//! Wrapping by ownership: [`ToolCaller`], anything that answers `tool_use` blocks with a
//! [`CallAnswer`], and [`SyncCaller`], a plain closure adapted to it.
//!
//! A dispatcher built around a caller
//! ([`DispatcherBuilder::wrap`](crate::dispatch::DispatcherBuilder::wrap)) takes it by value and
//! owns it, as a `tower` layer owns its inner service: the only way to reach the caller is through
//! the dispatcher's pipeline, and nothing can be rebound to point back at the wrapper, so the
//! self-recursion of a monkey-patched `call_tool` cannot be written.

use serde_json::Value;

use crate::audit::outcome::Outcome;
use crate::base::future::BoxFuture;
use crate::content::message::{ToolResult, ToolUse};
use crate::error::{Halt, ToolError};
use crate::hook::answer::CallAnswer;
use crate::hook::context::HookContext;

/// Something that answers `tool_use` blocks: a [`Dispatcher`](crate::Dispatcher), an MCP client,
/// a remote tool server.
///
/// A caller's answer is final for its call: `Ok(answer)` is a [`CallAnswer`], the `tool_result`
/// with its outcome, the hook at fault and the operator detail, which the wrapping dispatcher's
/// audit line carries over (a denial inside a wrapped dispatcher is `blocked` with the inner
/// hook's path in the outer line too; see [`CallAnswer`] for each outcome). `Err(halt)` means
/// its own policy could not decide (the wrapping dispatcher then halts too: fail closed).
///
/// Its definitions are checked by
/// [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build) like a `#[tool]`'s: an
/// entry without a valid `name` is
/// [`BuildProblem::InvalidToolName`](crate::dispatch::BuildProblem::InvalidToolName), one without
/// an object `input_schema` is
/// [`BuildProblem::RootNotObject`](crate::dispatch::BuildProblem::RootNotObject), and an
/// `input_schema` that is not valid JSON Schema (against the meta-schema of the draft its `$schema`
/// names, 2020-12 when none; every `$ref` pointing within it) is
/// [`BuildProblem::InvalidSchema`](crate::dispatch::BuildProblem::InvalidSchema), one per fault,
/// naming the keyword: a remote server with a broken schema fails the build rather than being sent.
/// The `input_schema` is used as given (it is not canonicalized; only a root `anyOf`, `oneOf` or
/// `allOf`, which Anthropic refuses, is left out of the Anthropic and MCP definitions, its
/// alternatives' properties listed at the root instead): every input is validated against it before
/// the caller sees it, every validation keyword included but regular expressions and `format`
/// (those too with the `full-validation` feature), and unknown fields are refused only where it
/// says `additionalProperties: false`. An entry's `input_examples` are kept in the wrapping
/// dispatcher's Anthropic entries and checked against that schema like a
/// [`ToolDef`](crate::dispatch::ToolDef)'s; an invalid example, or a value there that is not an
/// array, is
/// [`BuildProblem::InvalidInputExample`](crate::dispatch::BuildProblem::InvalidInputExample).
///
/// An entry declares its tool's [`Effect`](crate::dispatch::Effect) in MCP's shape, an
/// `annotations` object (copy a remote server's `tools/list` annotations there): `"annotations":
/// {"readOnlyHint": false, "destructiveHint": true}` is a destructive `write` tool, which then
/// needs a PreToolUse hook of the wrapping dispatcher
/// ([`Effect::from_mcp_annotations`](crate::dispatch::Effect::from_mcp_annotations) reads it;
/// without `readOnlyHint` the effect is undeclared). A write tool that needs no guard says why in a
/// string `"unguarded": "…"` beside it. Neither key is sent to any model API.
pub trait ToolCaller: Send + Sync + 'static {
    /// The tools this caller answers, as Anthropic `tools` entries: `{"name": …,
    /// "description": …, "input_schema": {…}}`. Read once, when the wrapping dispatcher is built.
    fn tool_definitions(&self) -> Vec<Value>;

    /// Answers one `tool_use` block (its input already validated by the wrapping dispatcher)
    /// for the session described by `context`. A caller that knows only its `tool_result`
    /// answers [`CallAnswer::from_result`].
    fn call_tool<'a>(
        &'a self,
        context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<CallAnswer, Halt>>;
}

/// A plain synchronous closure as a [`ToolCaller`]: `Ok(text)` becomes a result with outcome `ok`,
/// `Err(e)` an `is_error` result with outcome `tool_error` and `e`'s
/// [`message`](ToolError::message): the text of a [`ToolError::new`] or [`ToolError::for_model`],
/// and the generic [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE) for an
/// internal error (a library error forwarded with `?`, or [`ToolError::internal`]). Made with
/// [`sync_caller`].
///
/// The operator-only [`detail`](ToolError::detail) (an internal error's `Display` and source
/// chain, a `for_model` error's source chain) is the answer's
/// [`CallAnswer::detail`], so it reaches the wrapping dispatcher's audit line (it no longer goes
/// to `tracing`).
pub struct SyncCaller<F> {
    definitions: Vec<Value>,
    f: F,
}

/// Adapts `f` to a [`ToolCaller`] that answers the tools in `definitions` (Anthropic `tools`
/// entries).
///
/// ```
/// use serde_json::json;
/// use toolgate_core::dispatch::sync_caller;
/// use toolgate_core::{Dispatcher, ToolError};
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
    ) -> BoxFuture<'a, Result<CallAnswer, Halt>> {
        let answer = match (self.f)(context, call) {
            Ok(text) => CallAnswer::new(ToolResult::text(call.id.clone(), text), Outcome::Ok),
            Err(e) => CallAnswer {
                detail: e.detail(),
                ..CallAnswer::new(
                    ToolResult::error(call.id.clone(), e.message()),
                    Outcome::ToolError,
                )
            },
        };
        Box::pin(std::future::ready(Ok(answer)))
    }
}
