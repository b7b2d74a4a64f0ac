//! Type erasure: every tool and hook, whatever its argument type and whether it is sync or
//! async, behind one shape the pipeline calls. A sync one answers with [`Invoke::Ready`]
//! (called directly, no boxed future); an async one with [`Invoke::Pending`].

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::audit::outcome::{CallRecord, SessionSummary};
use crate::base::future::{BoxFuture, Invoke};
use crate::content::message::{ToolResultContent, ToolUse};
use crate::content::output::ToolOutput;
use crate::error::{HookError, ToolError};
use crate::hook::decision::Decision;
use crate::hook::state::Env;

/// Validated arguments, erased (the tool downcasts them back).
pub(crate) type Args = Box<dyn Any + Send>;

/// A tool with its argument type erased.
pub(crate) trait ErasedTool: Send + Sync {
    /// Deserializes `input` into the argument type (plainly, fast); on failure, serde's message
    /// (the schema walk of `schema::explain` names the path).
    fn validate(&self, input: &Value) -> Result<Args, String>;
    /// Runs the tool; its answer is the `content` of the result (a `String` output is moved
    /// into `ToolResultContent::Text`, nothing more).
    fn invoke<'a>(
        &'a self,
        env: Env<'a>,
        args: Args,
    ) -> Invoke<'a, Result<ToolResultContent, ToolError>>;
}

/// A sync tool `f` taking arguments `A` and answering with `O`.
pub(crate) struct SyncTool<A, O, F> {
    f: F,
    _args: PhantomData<fn(A) -> O>,
}

/// An async tool `f` taking arguments `A` and answering with `O`.
pub(crate) struct AsyncTool<A, O, F> {
    f: F,
    _args: PhantomData<fn(A) -> O>,
}

impl<A, O, F> SyncTool<A, O, F> {
    pub(crate) fn new(f: F) -> Self {
        SyncTool {
            f,
            _args: PhantomData,
        }
    }
}

impl<A, O, F> AsyncTool<A, O, F> {
    pub(crate) fn new(f: F) -> Self {
        AsyncTool {
            f,
            _args: PhantomData,
        }
    }
}

fn validate<A: DeserializeOwned + Send + 'static>(input: &Value) -> Result<Args, String> {
    match A::deserialize(input) {
        Ok(a) => Ok(Box::new(a)),
        Err(e) => Err(e.to_string()),
    }
}

fn downcast<A: 'static>(args: Args) -> Result<A, ToolError> {
    args.downcast::<A>()
        .map(|b| *b)
        .map_err(|_| ToolError::internal("toolgate: validated arguments had an unexpected type"))
}

impl<A, O, F> ErasedTool for SyncTool<A, O, F>
where
    A: DeserializeOwned + Send + 'static,
    O: ToolOutput,
    F: Fn(Env<'_>, A) -> Result<O, ToolError> + Send + Sync + 'static,
{
    fn validate(&self, input: &Value) -> Result<Args, String> {
        validate::<A>(input)
    }
    fn invoke<'a>(
        &'a self,
        env: Env<'a>,
        args: Args,
    ) -> Invoke<'a, Result<ToolResultContent, ToolError>> {
        Invoke::Ready(downcast::<A>(args).and_then(|a| (self.f)(env, a).map(O::into_content)))
    }
}

impl<A, O, F> ErasedTool for AsyncTool<A, O, F>
where
    A: DeserializeOwned + Send + 'static,
    O: ToolOutput,
    F: for<'a> Fn(Env<'a>, A) -> BoxFuture<'a, Result<O, ToolError>> + Send + Sync + 'static,
{
    fn validate(&self, input: &Value) -> Result<Args, String> {
        validate::<A>(input)
    }
    fn invoke<'a>(
        &'a self,
        env: Env<'a>,
        args: Args,
    ) -> Invoke<'a, Result<ToolResultContent, ToolError>> {
        match downcast::<A>(args) {
            Ok(a) => Invoke::Pending(O::erase_future((self.f)(env, a))),
            Err(e) => Invoke::Ready(Err(e)),
        }
    }
}

/// A hook's function, erased: `Sync` answers inline, `Async` returns a boxed future. `S` and `A`
/// are the `dyn Fn` shapes of one kind of hook (below).
pub(crate) enum HookFn<S: ?Sized, A: ?Sized> {
    Sync(Arc<S>),
    Async(Arc<A>),
}

impl<S: ?Sized, A: ?Sized> Clone for HookFn<S, A> {
    fn clone(&self) -> Self {
        match self {
            HookFn::Sync(f) => HookFn::Sync(Arc::clone(f)),
            HookFn::Async(f) => HookFn::Async(Arc::clone(f)),
        }
    }
}

impl<S: ?Sized, A: ?Sized> HookFn<S, A> {
    /// Whether the hook answers inline (it can then run from `drop`).
    #[inline]
    pub(crate) fn is_sync(&self) -> bool {
        matches!(self, HookFn::Sync(_))
    }
}

/// The validated arguments a PreToolUse hook is shown, erased: a typed hook downcasts them to its
/// `&T`; a hook that takes `&ToolUse` ignores them.
pub(crate) type ArgsRef<'a> = &'a (dyn Any + Send);

/// A sync PreToolUse hook.
pub(crate) type PreSync =
    dyn Fn(Env<'_>, &ToolUse, ArgsRef<'_>) -> Result<Decision, HookError> + Send + Sync;
/// An async PreToolUse hook.
pub(crate) type PreAsync = dyn for<'a> Fn(Env<'a>, &'a ToolUse, ArgsRef<'a>) -> BoxFuture<'a, Result<Decision, HookError>>
    + Send
    + Sync;

/// `f` as a [`PreSync`] (the bound makes the closure's signature higher-ranked).
pub(crate) fn pre_sync<F>(f: F) -> F
where
    F: Fn(Env<'_>, &ToolUse, ArgsRef<'_>) -> Result<Decision, HookError> + Send + Sync + 'static,
{
    f
}

/// `f` as a [`PreAsync`].
pub(crate) fn pre_async<F>(f: F) -> F
where
    F: for<'a> Fn(Env<'a>, &'a ToolUse, ArgsRef<'a>) -> BoxFuture<'a, Result<Decision, HookError>>
        + Send
        + Sync
        + 'static,
{
    f
}

/// A typed hook's `&T`: the validated arguments downcast (they are the tool's input type, which
/// `build()` checked). `Err` only if that check was bypassed.
pub(crate) fn typed_args<T: 'static>(args: ArgsRef<'_>) -> Result<&T, HookError> {
    args.downcast_ref::<T>().ok_or_else(|| {
        HookError::new(format!(
            "toolgate: the hook takes `&{}`, which is not the tool's input type",
            std::any::type_name::<T>()
        ))
    })
}

/// A typed hook's `Decision<T>` as the chain's: a rewrite's `T` serialized back to the input
/// object. A `T` that cannot be serialized is the hook's failure (the agent halts).
pub(crate) fn untyped<T: serde::Serialize>(
    decided: Result<Decision<T>, HookError>,
) -> Result<Decision, HookError> {
    decided?.try_map_rewrite(|t| {
        serde_json::to_value(&t).map_err(|e| {
            HookError::new(format!(
                "toolgate: the hook's rewrite could not be serialized to the input: {e}"
            ))
        })
    })
}
/// A PreToolUse hook, erased.
pub(crate) type PreHookFn = HookFn<PreSync, PreAsync>;

impl PreHookFn {
    /// Asks the hook about `call`, whose validated arguments are `args`.
    #[inline]
    pub(crate) fn run<'a>(
        &'a self,
        env: Env<'a>,
        call: &'a ToolUse,
        args: ArgsRef<'a>,
    ) -> Invoke<'a, Result<Decision, HookError>> {
        match self {
            HookFn::Sync(f) => Invoke::Ready(f(env, call, args)),
            HookFn::Async(f) => Invoke::Pending(f(env, call, args)),
        }
    }
}

/// A sync PostToolUse observer.
pub(crate) type PostSync = dyn Fn(Env<'_>, &CallRecord<'_>) -> Result<(), HookError> + Send + Sync;
/// An async PostToolUse observer.
pub(crate) type PostAsync = dyn for<'a> Fn(Env<'a>, &'a CallRecord<'a>) -> BoxFuture<'a, Result<(), HookError>>
    + Send
    + Sync;
/// A PostToolUse observer, erased.
pub(crate) type PostHookFn = HookFn<PostSync, PostAsync>;

impl PostHookFn {
    /// Shows the observer `record`.
    #[inline]
    pub(crate) fn run<'a>(
        &'a self,
        env: Env<'a>,
        record: &'a CallRecord<'a>,
    ) -> Invoke<'a, Result<(), HookError>> {
        match self {
            HookFn::Sync(f) => Invoke::Ready(f(env, record)),
            HookFn::Async(f) => Invoke::Pending(f(env, record)),
        }
    }
}

/// A Stop hook (sync only: it must be able to run from `drop`).
pub(crate) type StopFn = dyn Fn(Env<'_>, &SessionSummary) -> Result<(), HookError> + Send + Sync;
