//! What a dispatcher is built from: tool definitions ([`ToolDef`]), hooks ([`PreHookDef`],
//! [`PostHookDef`], [`StopHookDef`]) and the compile-time registry the macros fill
//! ([`Registration`], collected with `inventory`).
//!
//! Everything here can be built by hand (the runtime is usable without the macros); the macros
//! generate exactly these calls. Sync tools and hooks are called directly, with no boxed future;
//! async ones return a boxed `Send` future.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::content::ToolUse;
use crate::decision::Decision;
use crate::error::{HookError, ToolError};
use crate::future::{BoxFuture, Invoke};
use crate::outcome::{CallRecord, SessionSummary};
use crate::state::{Env, StateKey};

/// Validated arguments, erased (the tool downcasts them back).
pub(crate) type Args = Box<dyn Any + Send>;

pub(crate) trait ErasedTool: Send + Sync {
    /// Deserializes `input` into the argument type (plainly, fast); on failure, serde's message
    /// (the schema walk of `schema::explain` names the path).
    fn validate(&self, input: &Value) -> Result<Args, String>;
    fn invoke<'a>(&'a self, env: Env<'a>, args: Args) -> Invoke<'a, Result<String, ToolError>>;
}

struct SyncTool<A, F> {
    f: F,
    _args: PhantomData<fn() -> A>,
}

struct AsyncTool<A, F> {
    f: F,
    _args: PhantomData<fn() -> A>,
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

impl<A, F> ErasedTool for SyncTool<A, F>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(Env<'_>, A) -> Result<String, ToolError> + Send + Sync + 'static,
{
    fn validate(&self, input: &Value) -> Result<Args, String> {
        validate::<A>(input)
    }
    fn invoke<'a>(&'a self, env: Env<'a>, args: Args) -> Invoke<'a, Result<String, ToolError>> {
        Invoke::Ready(downcast::<A>(args).and_then(|a| (self.f)(env, a)))
    }
}

impl<A, F> ErasedTool for AsyncTool<A, F>
where
    A: DeserializeOwned + Send + 'static,
    F: for<'a> Fn(Env<'a>, A) -> BoxFuture<'a, Result<String, ToolError>> + Send + Sync + 'static,
{
    fn validate(&self, input: &Value) -> Result<Args, String> {
        validate::<A>(input)
    }
    fn invoke<'a>(&'a self, env: Env<'a>, args: Args) -> Invoke<'a, Result<String, ToolError>> {
        match downcast::<A>(args) {
            Ok(a) => Invoke::Pending((self.f)(env, a)),
            Err(e) => Invoke::Ready(Err(e)),
        }
    }
}

/// Turns a tool's return value into the text the model reads: a value that serializes to a JSON
/// string becomes that string itself (no quotes); `()` becomes the empty text; anything else
/// becomes its compact JSON text (`{"id":"o_1","amount_cents":2599}`).
///
/// # Errors
/// A value that cannot be serialized (a map with non-string keys, a failing `Serialize` impl)
/// is an internal [`ToolError`].
pub fn output_text<T: Serialize + 'static>(value: T) -> Result<String, ToolError> {
    let mut slot = Some(value);
    let any: &mut dyn Any = &mut slot;
    if let Some(s) = any.downcast_mut::<Option<String>>() {
        return Ok(s.take().unwrap_or_default());
    }
    if let Some(s) = any.downcast_mut::<Option<&'static str>>() {
        return Ok(s.take().unwrap_or_default().to_owned());
    }
    if any.is::<Option<()>>() {
        return Ok(String::new());
    }
    match slot.take() {
        Some(value) => json_text(serde_json::to_string(&value)),
        None => json_text(Err(serde::ser::Error::custom(
            "toolgate: output taken twice",
        ))),
    }
}

/// The non-generic rest of [`output_text`] (compiled once, not once per output type): a JSON
/// string becomes its text, anything else stays JSON; errors are internal.
fn json_text(text: Result<String, serde_json::Error>) -> Result<String, ToolError> {
    let text = text.map_err(ToolError::internal)?;
    if text.starts_with('"') {
        return serde_json::from_str::<String>(&text).map_err(ToolError::internal);
    }
    Ok(text)
}

/// One tool: its name, description, input schema (from the argument type) and a type-erased
/// call. Built by `#[tool]`, or by hand with [`ToolDef::sync`] / [`ToolDef::new_async`].
///
/// The argument type `A` is the tool's input: the model's `input` object is deserialized into it
/// (that is the validation) and its `JsonSchema` is the `input_schema`. It must be a struct with
/// named fields (its schema's root must be an object; `build()` checks).
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use toolgate_core::{Dispatcher, ToolDef};
///
/// /// Arguments of `get_time`.
/// #[derive(Deserialize, JsonSchema)]
/// struct GetTime {
///     /// The timezone, e.g. America/New_York
///     timezone: String,
/// }
///
/// let tool = ToolDef::sync("get_time", "Get the current time in a given timezone",
///     |_env, args: GetTime| Ok(format!("09:15 in {}", args.timezone)));
/// let dispatcher = Dispatcher::builder().tool(tool).build().unwrap();
/// assert_eq!(dispatcher.tool_definitions()[0]["name"], "get_time");
/// ```
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) name: Cow<'static, str>,
    pub(crate) description: Cow<'static, str>,
    pub(crate) path: Cow<'static, str>,
    pub(crate) schema: Value,
    pub(crate) additional_properties: bool,
    pub(crate) states: Vec<StateKey>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) imp: Arc<dyn ErasedTool>,
}

impl ToolDef {
    fn with<A: JsonSchema>(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        imp: Arc<dyn ErasedTool>,
    ) -> Self {
        Self::with_schema(
            name.into(),
            description.into(),
            crate::schema::generate::<A>(),
            imp,
        )
    }

    /// The non-generic rest of [`ToolDef::with`], compiled once instead of once per tool.
    fn with_schema(
        name: Cow<'static, str>,
        description: Cow<'static, str>,
        schema: Value,
        imp: Arc<dyn ErasedTool>,
    ) -> Self {
        ToolDef {
            path: name.clone(),
            name,
            description,
            schema,
            additional_properties: false,
            states: Vec::new(),
            timeout: None,
            imp,
        }
    }

    /// A synchronous tool: `f` gets the [`Env`] (context and states) and the validated
    /// arguments, and returns the text the model reads (see [`output_text`]) or a
    /// [`ToolError`]. Called directly: no future is allocated.
    pub fn sync<A, F>(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Env<'_>, A) -> Result<String, ToolError> + Send + Sync + 'static,
    {
        Self::with::<A>(
            name,
            description,
            Arc::new(SyncTool {
                f,
                _args: PhantomData,
            }),
        )
    }

    /// An async tool: `f` returns a boxed `Send` future of the text or a [`ToolError`]. Write `f`
    /// as a `fn` item (closures cannot name the higher-ranked lifetime).
    pub fn new_async<A, F>(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: for<'a> Fn(Env<'a>, A) -> BoxFuture<'a, Result<String, ToolError>>
            + Send
            + Sync
            + 'static,
    {
        Self::with::<A>(
            name,
            description,
            Arc::new(AsyncTool {
                f,
                _args: PhantomData,
            }),
        )
    }

    /// Sets the full Rust path (`my_crate::tools::lookup_user`), used in build errors, module
    /// filtering and explicit lists. Defaults to the name.
    pub fn path(mut self, path: impl Into<Cow<'static, str>>) -> Self {
        self.path = path.into();
        self
    }

    /// Opts out of `additionalProperties: false`: unknown input fields are then accepted (and
    /// ignored by the argument type) instead of being `invalid_input`.
    pub fn allow_unknown_fields(mut self) -> Self {
        self.additional_properties = true;
        self
    }

    /// Declares that the tool takes a `State<T>`, so `build()` checks the builder was given one.
    pub fn needs_state(mut self, key: StateKey) -> Self {
        self.states.push(key);
        self
    }

    /// Sets a deadline for an async tool (the outcome is `tool_timeout`). Needs a timer on the
    /// dispatcher ([`DispatcherBuilder::timer`](crate::DispatcherBuilder::timer)): without one,
    /// `build()` fails with [`BuildProblem::DeadlineWithoutTimer`](crate::BuildProblem). Sync
    /// code cannot be cut.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// The tool's name (`^[a-zA-Z0-9_-]{1,64}$`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The tool's full Rust path.
    pub fn full_path(&self) -> &str {
        &self.path
    }

    /// The schema as generated from the argument type (before any target's transform).
    pub fn raw_schema(&self) -> &Value {
        &self.schema
    }
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

pub(crate) trait ErasedPreHook: Send + Sync {
    fn run<'a>(
        &'a self,
        env: Env<'a>,
        call: &'a ToolUse,
    ) -> Invoke<'a, Result<Decision, HookError>>;
}

struct SyncPre<F>(F);
struct AsyncPre<F>(F);

impl<F> ErasedPreHook for SyncPre<F>
where
    F: Fn(Env<'_>, &ToolUse) -> Result<Decision, HookError> + Send + Sync + 'static,
{
    fn run<'a>(
        &'a self,
        env: Env<'a>,
        call: &'a ToolUse,
    ) -> Invoke<'a, Result<Decision, HookError>> {
        Invoke::Ready((self.0)(env, call))
    }
}

impl<F> ErasedPreHook for AsyncPre<F>
where
    F: for<'a> Fn(Env<'a>, &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>>
        + Send
        + Sync
        + 'static,
{
    fn run<'a>(
        &'a self,
        env: Env<'a>,
        call: &'a ToolUse,
    ) -> Invoke<'a, Result<Decision, HookError>> {
        Invoke::Pending((self.0)(env, call))
    }
}

/// Which tools a hook applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    /// Every tool of the dispatcher.
    All,
    /// The tools of these names.
    Tools(Vec<Cow<'static, str>>),
}

impl Matcher {
    pub(crate) fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Tools(names) => names.iter().any(|n| n == tool),
        }
    }
}

/// A PreToolUse hook: decides about each call of the tools it matches, before the tool runs.
/// Built by `#[pre_hook(order = N, tools = [...])]`, or by hand.
///
/// Hooks run sorted by `(order, path)`, lowest first; put the cheap, decisive checks first.
#[derive(Clone)]
pub struct PreHookDef {
    pub(crate) path: Cow<'static, str>,
    pub(crate) order: i64,
    pub(crate) matcher: Matcher,
    pub(crate) states: Vec<StateKey>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) imp: Arc<dyn ErasedPreHook>,
}

impl PreHookDef {
    /// A synchronous hook at `path` (its full Rust path, the tie-break and audit name) with
    /// `order`; matches every tool until [`tools`](Self::tools) narrows it.
    pub fn sync<F>(path: impl Into<Cow<'static, str>>, order: i64, f: F) -> Self
    where
        F: Fn(Env<'_>, &ToolUse) -> Result<Decision, HookError> + Send + Sync + 'static,
    {
        PreHookDef {
            path: path.into(),
            order,
            matcher: Matcher::All,
            states: Vec::new(),
            timeout: None,
            imp: Arc::new(SyncPre(f)),
        }
    }

    /// An async hook; write `f` as a `fn` item returning a boxed future.
    pub fn new_async<F>(path: impl Into<Cow<'static, str>>, order: i64, f: F) -> Self
    where
        F: for<'a> Fn(Env<'a>, &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>>
            + Send
            + Sync
            + 'static,
    {
        PreHookDef {
            path: path.into(),
            order,
            matcher: Matcher::All,
            states: Vec::new(),
            timeout: None,
            imp: Arc::new(AsyncPre(f)),
        }
    }

    /// Narrows the hook to these tools. `build()` fails when a name is registered nowhere.
    pub fn tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Cow<'static, str>>,
    {
        self.matcher = Matcher::Tools(names.into_iter().map(Into::into).collect());
        self
    }

    /// Declares that the hook takes a `State<T>`.
    pub fn needs_state(mut self, key: StateKey) -> Self {
        self.states.push(key);
        self
    }

    /// Sets a deadline for an async hook; past it the agent halts with `hook_timeout`. Needs a
    /// timer on the dispatcher ([`DispatcherBuilder::timer`](crate::DispatcherBuilder::timer)):
    /// without one, `build()` fails with
    /// [`BuildProblem::DeadlineWithoutTimer`](crate::BuildProblem). Sync code cannot be cut.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// The hook's full path.
    pub fn full_path(&self) -> &str {
        &self.path
    }

    /// The hook's order.
    pub fn order(&self) -> i64 {
        self.order
    }

    /// The tools the hook applies to.
    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }
}

impl fmt::Debug for PreHookDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreHookDef")
            .field("path", &self.path)
            .field("order", &self.order)
            .field("matcher", &self.matcher)
            .finish_non_exhaustive()
    }
}

pub(crate) trait ErasedPostHook: Send + Sync {
    fn run<'a>(
        &'a self,
        env: Env<'a>,
        record: &'a CallRecord<'a>,
    ) -> Invoke<'a, Result<(), HookError>>;
    fn is_sync(&self) -> bool;
}

struct SyncPost<F>(F);
struct AsyncPost<F>(F);

impl<F> ErasedPostHook for SyncPost<F>
where
    F: Fn(Env<'_>, &CallRecord<'_>) -> Result<(), HookError> + Send + Sync + 'static,
{
    fn run<'a>(
        &'a self,
        env: Env<'a>,
        record: &'a CallRecord<'a>,
    ) -> Invoke<'a, Result<(), HookError>> {
        Invoke::Ready((self.0)(env, record))
    }
    fn is_sync(&self) -> bool {
        true
    }
}

impl<F> ErasedPostHook for AsyncPost<F>
where
    F: for<'a> Fn(Env<'a>, &'a CallRecord<'a>) -> BoxFuture<'a, Result<(), HookError>>
        + Send
        + Sync
        + 'static,
{
    fn run<'a>(
        &'a self,
        env: Env<'a>,
        record: &'a CallRecord<'a>,
    ) -> Invoke<'a, Result<(), HookError>> {
        Invoke::Pending((self.0)(env, record))
    }
    fn is_sync(&self) -> bool {
        false
    }
}

/// A PostToolUse observer: sees every `tool_use` block's [`CallRecord`] once its result is fixed
/// (audit, metrics, alerts). It cannot change the result; its errors and panics go to `tracing`
/// (target `toolgate::observer`) and are counted in the session's `observer_errors`.
///
/// Observers run in path order, the built-in `AuditLog` last. When the host drops a call
/// unfinished, only sync observers run (from `drop`, with outcome `cancelled`).
#[derive(Clone)]
pub struct PostHookDef {
    pub(crate) path: Cow<'static, str>,
    pub(crate) matcher: Matcher,
    pub(crate) states: Vec<StateKey>,
    pub(crate) imp: Arc<dyn ErasedPostHook>,
}

impl PostHookDef {
    /// A synchronous observer at `path`.
    pub fn sync<F>(path: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        F: Fn(Env<'_>, &CallRecord<'_>) -> Result<(), HookError> + Send + Sync + 'static,
    {
        PostHookDef {
            path: path.into(),
            matcher: Matcher::All,
            states: Vec::new(),
            imp: Arc::new(SyncPost(f)),
        }
    }

    /// An async observer; write `f` as a `fn` item returning a boxed future.
    pub fn new_async<F>(path: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        F: for<'a> Fn(Env<'a>, &'a CallRecord<'a>) -> BoxFuture<'a, Result<(), HookError>>
            + Send
            + Sync
            + 'static,
    {
        PostHookDef {
            path: path.into(),
            matcher: Matcher::All,
            states: Vec::new(),
            imp: Arc::new(AsyncPost(f)),
        }
    }

    /// Narrows the observer to these tools (it then sees no `unknown_tool` calls).
    pub fn tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Cow<'static, str>>,
    {
        self.matcher = Matcher::Tools(names.into_iter().map(Into::into).collect());
        self
    }

    /// Declares that the observer takes a `State<T>`.
    pub fn needs_state(mut self, key: StateKey) -> Self {
        self.states.push(key);
        self
    }

    /// The observer's full path.
    pub fn full_path(&self) -> &str {
        &self.path
    }
}

impl fmt::Debug for PostHookDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostHookDef")
            .field("path", &self.path)
            .field("matcher", &self.matcher)
            .finish_non_exhaustive()
    }
}

type StopFn = dyn Fn(Env<'_>, &SessionSummary) -> Result<(), HookError> + Send + Sync;

/// A Stop hook: runs once per session, when it ends (or is dropped), with the session's
/// [`SessionSummary`]. Synchronous, because it must be able to run from `drop`. Its errors are
/// reported to `tracing` and counted in `observer_errors`, never raised.
#[derive(Clone)]
pub struct StopHookDef {
    pub(crate) path: Cow<'static, str>,
    pub(crate) states: Vec<StateKey>,
    pub(crate) imp: Arc<StopFn>,
}

impl StopHookDef {
    /// A Stop hook at `path`.
    pub fn new<F>(path: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        F: Fn(Env<'_>, &SessionSummary) -> Result<(), HookError> + Send + Sync + 'static,
    {
        StopHookDef {
            path: path.into(),
            states: Vec::new(),
            imp: Arc::new(f),
        }
    }

    /// Declares that the hook takes a `State<T>`.
    pub fn needs_state(mut self, key: StateKey) -> Self {
        self.states.push(key);
        self
    }

    /// The hook's full path.
    pub fn full_path(&self) -> &str {
        &self.path
    }
}

impl fmt::Debug for StopHookDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopHookDef")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// One item registered at compile time by a toolgate macro. Not public API: the macros submit
/// these with `inventory`; [`DispatcherBuilder`](crate::DispatcherBuilder) collects them.
#[doc(hidden)]
pub struct Registration {
    /// The item's full Rust path (`module_path!()` + `::` + the function's name).
    pub path: &'static str,
    /// What it is, and how to make it.
    pub kind: RegistrationKind,
}

/// What a [`Registration`] makes. Not public API.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum RegistrationKind {
    /// A `#[tool]`: its name (for matcher checks without building it) and its maker.
    Tool {
        /// The tool's name.
        name: &'static str,
        /// Builds the definition.
        make: fn() -> ToolDef,
    },
    /// A `#[pre_hook]`.
    PreHook(fn() -> PreHookDef),
    /// A `#[post_hook]`.
    PostHook(fn() -> PostHookDef),
    /// A `#[stop_hook]`.
    StopHook(fn() -> StopHookDef),
}

inventory::collect!(Registration);

/// Every item registered with the macros in the linked crates.
pub(crate) fn registered() -> impl Iterator<Item = &'static Registration> {
    inventory::iter::<Registration>.into_iter()
}

/// Names a `#[tool]` function's tool, so hook matchers can refer to the function by its Rust
/// path and a misspelling is a compile error. `#[tool]` emits one as a hidden constant named
/// `__toolgate_tool_<fn name>` beside the function. Not public API.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ToolRef {
    /// The tool's name.
    pub name: &'static str,
}
