//! tower (feature `tower`): a session as a [`Service<ToolUse>`](Service) ([`SessionService`]),
//! a `Clone` tower service as a [`ToolCaller`] ([`ServiceCaller`]), and a [`Layer`] that puts a
//! dispatcher's hooks in front of any such service ([`HooksLayer`]), so tower's own layers
//! (timeouts, concurrency limits, retries, rate limits) stack inside or outside toolgate's.
//!
//! Only `tower-service` and `tower-layer` are built (two small crates, no dependencies); the
//! layers themselves come from `tower`, which the host depends on.
//!
//! ```text
//! ServiceBuilder::new()
//!     .timeout(30 s)            // outside: drops the call future → audit line `cancelled`
//!     .layer(hooks_layer)       // normalize → look up → validate → PreToolUse chain → … → audit
//!     .concurrency_limit(4)     // inside: waited for after the chain allowed the call
//!     .timeout(5 s)             // inside: its error is the call's `tool_error`
//!     .service(tool_service)    // answers `tool_use` blocks: Service<ToolUse>
//! ```
//!
//! # Deadlines and outcomes
//!
//! | where tower's `Timeout` sits | what happens past it | what the model reads | the audit line |
//! |---|---|---|---|
//! | outside toolgate's layer | the call future is dropped (the host gave up), and tower returns its `Elapsed` error | nothing: the caller of the stack gets an error, not a `tool_result` | one line, outcome `cancelled` (ARCHITECTURE.md, "Contracts": "Outcomes", `cancelled`) |
//! | inside, between the layer and the tool service | the inner service answers `Err(Elapsed)` | [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE), `is_error: true` | outcome `tool_error`, `detail` `"request timed out"` (the error's `Display` and `source()` chain) |
//! | toolgate's own tool deadline ([`DispatcherBuilder::tool_timeout`](crate::dispatch::DispatcherBuilder::tool_timeout), 60 s by default) | the wrapped service's future is dropped | a message naming the deadline | outcome `tool_timeout` |
//!
//! Toolgate's tool deadline covers the whole inner stack (waiting for readiness included), so
//! the shorter of it and an inner tower timeout wins; to get `tool_timeout` rather than
//! `tool_error`, set the deadline on the dispatcher instead of an inner `Timeout`. PreToolUse
//! hooks keep their own deadlines (10 s by default, `hook_timeout`) whatever tower does: an
//! outer timeout that fires while a hook runs drops the call (`cancelled`, the tool never ran).
//!
//! # Backpressure
//!
//! [`SessionService::poll_ready`] is always ready: a session takes any number of calls at once,
//! and which tool a call needs is known only from the call. The wrapped service's readiness is
//! awaited inside the call, after the PreToolUse chain allowed it: a denied or invalid call
//! never waits for capacity, and a call that waits counts the wait against the tool deadline.
//! Put a concurrency limit or a rate limit inside the layer to bound the tool service, outside
//! it to bound everything (hooks and audit included; a call that waits there has not started,
//! so nothing is recorded until it does).

use std::future::poll_fn;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use serde_json::Value;
use tower_layer::Layer;
use tower_service::Service;

use crate::audit::outcome::Outcome;
use crate::base::future::BoxFuture;
use crate::content::message::{ContentBlock, Message, ToolResult, ToolUse};
use crate::dispatch::builder::{BuildError, DispatcherBuilder};
use crate::error::{CallError, Halt, ToolError};
use crate::hook::answer::CallAnswer;
use crate::hook::caller::ToolCaller;
use crate::hook::context::HookContext;
use crate::session::Session;
use crate::texts;

/// An error of a tower service, as tower's own layers return it (`tower::BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One session as a tower [`Service<ToolUse>`](Service): each `tool_use` goes through the
/// session's whole pipeline (normalize, look up, validate, the PreToolUse chain, the tool, the
/// PostToolUse observers and the audit log), exactly as [`Session::call`] runs it.
///
/// - `Response`: the [`CallAnswer`] (the `tool_result` and its outcome, the hook at fault, the
///   operator detail), so a layer outside can record what happened.
/// - `Error`: [`CallError`], as from [`Session::call`]: a PreToolUse hook could not decide
///   ([`CallError::Halt`]), or the session's answer memory refused the id (empty, in progress,
///   reused with another input, used by a whole turn of the session; a retry of an answered id
///   is answered from memory, with its remembered outcome).
/// - `Future`: `'static` and `Send` (it holds the session in an `Arc`), as tower's layers and
///   spawned tasks need.
/// - [`poll_ready`](Service::poll_ready): always ready (see the module docs, "Backpressure").
///
/// Clones share the session. The session's Stop hooks run when the last clone is dropped, or
/// at [`Session::end`] through [`session`](Self::session).
#[derive(Clone, Debug)]
pub struct SessionService {
    session: Arc<Session>,
}

impl SessionService {
    /// A service over `session`.
    pub fn new(session: Session) -> Self {
        SessionService {
            session: Arc::new(session),
        }
    }

    /// A service over a session already shared.
    pub fn from_arc(session: Arc<Session>) -> Self {
        SessionService { session }
    }

    /// The session every call runs in: its [`summary_so_far`](Session::summary_so_far), its
    /// [`end`](Session::end).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }
}

impl Service<ToolUse> for SessionService {
    type Response = CallAnswer;
    type Error = CallError;
    type Future = BoxFuture<'static, Result<CallAnswer, CallError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ToolUse) -> Self::Future {
        let session = Arc::clone(&self.session);
        Box::pin(async move { session.call_answer(&call).await })
    }
}

/// A `Clone` tower service that answers `tool_use` blocks, as a [`ToolCaller`] a dispatcher can
/// own ([`DispatcherBuilder::wrap`]), with the definitions of the tools it serves.
///
/// The service answers a [`ToolUse`] (its input already validated by the wrapping dispatcher) with
/// anything that converts into a [`CallAnswer`]: a `CallAnswer`, or a [`ToolResult`] (outcome `ok`,
/// or `tool_error` when it says `is_error`). Each call clones the service (the clone is taken under
/// a lock, so the service need not be `Sync`; tower's concurrency limit is not), waits for
/// [`poll_ready`](Service::poll_ready), then calls it. An error, from `poll_ready` or from the
/// call, is internal: the model reads
/// [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE), the outcome is `tool_error`,
/// and the `detail` is the error's `Display` and `source()` chain (`"request timed out"` for
/// tower's `Elapsed`; `"the service was not ready: …"` for a `poll_ready` error). A panic in it is
/// caught like a tool's (`panicked`).
///
/// `definitions` are Anthropic `tools` entries (`{"name", "description", "input_schema"}`),
/// checked at `build()` like any caller's (see [`ToolCaller`]).
pub struct ServiceCaller<S> {
    definitions: Vec<Value>,
    service: Mutex<S>,
}

impl<S> ServiceCaller<S> {
    /// A caller over `service`, answering the tools in `definitions`.
    pub fn new(definitions: Vec<Value>, service: S) -> Self {
        ServiceCaller {
            definitions,
            service: Mutex::new(service),
        }
    }
}

impl<S> ToolCaller for ServiceCaller<S>
where
    S: Service<ToolUse> + Clone + Send + 'static,
    S::Response: Into<CallAnswer>,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    fn tool_definitions(&self) -> Vec<Value> {
        self.definitions.clone()
    }

    fn call_tool<'a>(
        &'a self,
        _context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<CallAnswer, Halt>> {
        // A poisoned lock only means a clone panicked: the service value itself is intact.
        let mut service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Box::pin(async move {
            if let Err(e) = poll_fn(|cx| service.poll_ready(cx)).await {
                return Ok(inner_error(&call.id, NotReady(e.into()).into()));
            }
            Ok(match service.call(call.clone()).await {
                Ok(answer) => answer.into(),
                Err(e) => inner_error(&call.id, e.into()),
            })
        })
    }
}

/// A `poll_ready` error, named as such in the detail.
#[derive(Debug, thiserror::Error)]
#[error("the service was not ready")]
struct NotReady(#[source] BoxError);

/// An inner service's error as the call's answer: internal, so the model reads the generic text.
fn inner_error(id: &str, error: BoxError) -> CallAnswer {
    let error = ToolError::internal(error);
    CallAnswer {
        detail: error.detail(),
        ..CallAnswer::new(
            ToolResult::error(id.to_owned(), error.message()),
            Outcome::ToolError,
        )
    }
}

/// A tower [`Layer`] that puts a dispatcher's hooks in front of a tool service: `layer(inner)`
/// builds a dispatcher that owns `inner` (as a [`ServiceCaller`] serving `definitions`) and
/// opens one session on it with `context`, and returns that session as a [`SessionService`].
///
/// `make` gives the dispatcher's builder without the service (its hooks, observers, audit log,
/// deadlines): it runs once in [`new`](Self::new), for a trial build with a stand-in for the
/// service, so a policy that does not build fails at start-up with its [`BuildError`], and once
/// per [`layer`](Layer::layer). Write it so it builds the same way each time (open an
/// [`AuditLog`](crate::audit::AuditLog) outside it and clone it in: clones share the files). Were a
/// later build to fail all the same, that service answers every call with a [`Halt`]
/// ([`CallError::Halt`])
/// (`hook_failed`, hook `toolgate::tower::HooksLayer`, the build error as `detail`): fail closed.
///
/// Hooks match the service's tools by name: a hand-built
/// [`PreHookDef`](crate::dispatch::PreHookDef) with `.tools(["name"])`, or a hook with no tool
/// list.
#[derive(Clone)]
pub struct HooksLayer {
    definitions: Arc<[Value]>,
    context: HookContext,
    make: Arc<dyn Fn() -> DispatcherBuilder + Send + Sync>,
}

impl HooksLayer {
    /// The path the halts of a layer whose later build failed name as their hook.
    pub const PATH: &'static str = "toolgate::tower::HooksLayer";

    /// A layer for the tools in `definitions` (Anthropic `tools` entries), one session per
    /// layered service with `context`, and the hooks of the builder `make` returns.
    ///
    /// # Errors
    /// The [`BuildError`] of the trial build: every problem of the policy and of the
    /// definitions at once.
    pub fn new(
        definitions: Vec<Value>,
        context: HookContext,
        make: impl Fn() -> DispatcherBuilder + Send + Sync + 'static,
    ) -> Result<Self, BuildError> {
        make()
            .wrap(ServiceCaller::new(definitions.clone(), StandIn))
            .build()?;
        Ok(HooksLayer {
            definitions: definitions.into(),
            context,
            make: Arc::new(make),
        })
    }
}

impl std::fmt::Debug for HooksLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HooksLayer")
            .field("definitions", &self.definitions)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl<S> Layer<S> for HooksLayer
where
    S: Service<ToolUse> + Clone + Send + 'static,
    S::Response: Into<CallAnswer>,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    type Service = Hooked;

    fn layer(&self, inner: S) -> Hooked {
        let built = (self.make)()
            .wrap(ServiceCaller::new(self.definitions.to_vec(), inner))
            .build();
        match built {
            Ok(dispatcher) => Hooked(Ok(SessionService::new(
                dispatcher.session(self.context.clone()),
            ))),
            Err(e) => Hooked(Err(Arc::new(e))),
        }
    }
}

/// The service a [`HooksLayer`] makes: a [`SessionService`] (or, if the dispatcher did not
/// build after all, a service that halts every call).
#[derive(Clone, Debug)]
pub struct Hooked(Result<SessionService, Arc<BuildError>>);

impl Hooked {
    /// The session service, or the build error that left the layer without one.
    pub fn service(&self) -> Result<&SessionService, &BuildError> {
        self.0.as_ref().map_err(|e| &**e)
    }
}

impl Service<ToolUse> for Hooked {
    type Response = CallAnswer;
    type Error = CallError;
    type Future = BoxFuture<'static, Result<CallAnswer, CallError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        match &mut self.0 {
            Ok(service) => service.poll_ready(cx),
            Err(_) => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, call: ToolUse) -> Self::Future {
        match &mut self.0 {
            Ok(service) => service.call(call),
            Err(e) => {
                let halt = unbuilt(&call, e);
                Box::pin(std::future::ready(Err(CallError::Halt(halt))))
            }
        }
    }
}

/// The halt of a layer whose dispatcher did not build.
fn unbuilt(call: &ToolUse, error: &BuildError) -> Halt {
    let result = ToolResult::error(call.id.clone(), texts::HALT_MESSAGE);
    Halt {
        outcome: Outcome::HookFailed,
        hook: HooksLayer::PATH.to_owned(),
        tool_use_id: call.id.clone(),
        detail: format!("the dispatcher of the tower layer did not build: {error}"),
        answer: Box::new(Message::user(vec![ContentBlock::ToolResult(result)])),
        index: 0,
        ran_after: None,
    }
}

/// The service a trial build wraps: never called.
#[derive(Clone)]
struct StandIn;

impl Service<ToolUse> for StandIn {
    type Response = CallAnswer;
    type Error = BoxError;
    type Future = std::future::Ready<Result<CallAnswer, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ToolUse) -> Self::Future {
        std::future::ready(Ok(CallAnswer::new(
            ToolResult::error(call.id, texts::HALT_MESSAGE),
            Outcome::ToolError,
        )))
    }
}
