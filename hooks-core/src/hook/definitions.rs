//! What a dispatcher is built from: tool definitions ([`ToolDef`]) and hooks ([`PreHookDef`],
//! [`PostHookDef`], [`StopHookDef`]), each narrowed to tools by a [`Matcher`].
//!
//! Everything here can be built by hand (the runtime is usable without the macros); the macros
//! generate exactly these calls. Sync tools and hooks are called directly, with no boxed future;
//! async ones return a boxed `Send` future (see `erased.rs`).

use std::any::TypeId;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::audit::outcome::{CallRecord, SessionSummary};
use crate::base::future::BoxFuture;
use crate::content::message::ToolUse;
use crate::content::output::ToolOutput;
use crate::error::{HookError, ToolError};
use crate::hook::decision::Decision;
use crate::hook::effect::Effect;
use crate::hook::erased::{
    AsyncTool, ErasedTool, HookFn, PostHookFn, PreHookFn, StopFn, SyncTool, pre_async, pre_sync,
    typed_args, untyped,
};
use crate::hook::state::{Env, StateKey};

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
/// use toolgate_core::dispatch::ToolDef;
/// use toolgate_core::Dispatcher;
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
    /// `Some(true)`: always strict in strict targets; `Some(false)`: never; `None`: where it can.
    pub(crate) strict: Option<bool>,
    pub(crate) input_examples: Vec<Value>,
    /// The schema of the tool's output (its `Ok` type) as generated, when it has one.
    pub(crate) output_schema: Option<Value>,
    /// What the tool does to the world, when declared.
    pub(crate) effect: Option<Effect>,
    /// Why a write tool needs no PreToolUse hook, when it says so.
    pub(crate) unguarded: Option<Cow<'static, str>>,
    /// The argument type: what a typed PreToolUse hook must take to match the tool.
    pub(crate) input: InputType,
    pub(crate) imp: Arc<dyn ErasedTool>,
}

/// A Rust type a tool deserializes its input into, or a typed hook takes: its `TypeId`, and its
/// name for build errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputType {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
}

impl InputType {
    pub(crate) fn of<T: 'static>() -> Self {
        InputType {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }
}

impl ToolDef {
    fn with<A: JsonSchema + 'static>(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        imp: Arc<dyn ErasedTool>,
    ) -> Self {
        Self::with_schema(
            name.into(),
            description.into(),
            crate::schema::generate::<A>(),
            InputType::of::<A>(),
            imp,
        )
    }

    /// The non-generic rest of [`ToolDef::with`], compiled once instead of once per tool.
    fn with_schema(
        name: Cow<'static, str>,
        description: Cow<'static, str>,
        schema: Value,
        input: InputType,
        imp: Arc<dyn ErasedTool>,
    ) -> Self {
        ToolDef {
            input,
            path: name.clone(),
            name,
            description,
            schema,
            additional_properties: false,
            states: Vec::new(),
            timeout: None,
            strict: None,
            input_examples: Vec::new(),
            output_schema: None,
            effect: None,
            unguarded: None,
            imp,
        }
    }

    /// A synchronous tool: `f` gets the [`Env`] (context and states) and the validated arguments,
    /// and returns what the model reads, `O` (a `String`, the text; a
    /// [`Content`](crate::content::Content), content blocks; see [`ToolOutput`]), or a
    /// [`ToolError`]. A library error forwarded with `?` is internal (the model reads the generic
    /// message; see [`ToolError`]). Called directly: no future is allocated. `O` is inferred from
    /// what `f` returns, so write `Ok(String::from("pong"))` or `Ok(text.to_string())`, not
    /// `Ok("pong".into())`, which names no type.
    pub fn sync<A, O, F>(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolOutput,
        F: Fn(Env<'_>, A) -> Result<O, ToolError> + Send + Sync + 'static,
    {
        Self::with::<A>(name, description, Arc::new(SyncTool::new(f)))
    }

    /// An async tool: `f` returns a boxed `Send` future of what the model reads (`O`, as for
    /// [`ToolDef::sync`]) or a [`ToolError`]. Write `f` as a `fn` item (closures cannot name the
    /// higher-ranked lifetime). A future of `String` or [`Content`](crate::content::Content) is
    /// boxed once more per call to convert its answer; one of
    /// [`ToolResultContent`](crate::content::ToolResultContent) (what `#[tool]` generates) is not.
    pub fn new_async<A, O, F>(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: ToolOutput,
        F: for<'a> Fn(Env<'a>, A) -> BoxFuture<'a, Result<O, ToolError>> + Send + Sync + 'static,
    {
        Self::with::<A>(name, description, Arc::new(AsyncTool::new(f)))
    }

    /// An external tool: a tool that runs in the host (Claude Code's `Bash`, `Edit`, `Write`,
    /// `Read`, an MCP server's `mcp__<server>__<tool>`), declared by name and input type so
    /// PreToolUse hooks can match it and see its input validated, as they do a `#[tool]`'s
    /// (`#[tool(external)]` declares one from a signature). Its schema is open (unknown fields
    /// are allowed, as [`allow_unknown_fields`](Self::allow_unknown_fields)), so a host update
    /// that adds a field does not refuse every call.
    ///
    /// The dispatcher never runs it: asked through [`Session::call`](crate::Session::call), it
    /// answers `tool_error` with [`EXTERNAL_TOOL_MESSAGE`](crate::content::EXTERNAL_TOOL_MESSAGE);
    /// hosts ask [`Dispatcher::pre_tool_use`](crate::Dispatcher::pre_tool_use) (the Claude Code
    /// hook does) and run the tool themselves.
    pub fn external<A>(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
    {
        Self::sync(name, description, |_env, _args: A| {
            Err::<String, _>(ToolError::new(crate::texts::EXTERNAL_TOOL_MESSAGE))
        })
        .allow_unknown_fields()
    }

    /// Declares `T` as the type of the tool's output, for MCP: when `T`'s JSON Schema is an
    /// object (`"type": "object"` at its root, as for a struct or a map), the tool's `tools/list`
    /// entry carries it as `outputSchema` and its results carry `structuredContent` (see
    /// [`provider::mcp`](crate::provider::mcp)); any other schema (a string, a number, an array,
    /// an enum of several shapes) is ignored, since MCP requires an object root. `#[tool]`
    /// declares its `Ok` type by itself when that type implements `JsonSchema`.
    ///
    /// The tool must then answer with `T`'s compact JSON text (what
    /// [`output_text`](crate::content::output_text) makes of a `T`): MCP's `structuredContent` is
    /// that text parsed back.
    pub fn output_type<T: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(crate::schema::generate::<T>());
        self
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

    /// Sets the deadline of an async tool (the outcome past it is `tool_timeout`), instead of the
    /// dispatcher's
    /// ([`DispatcherBuilder::tool_timeout`](crate::dispatch::DispatcherBuilder::tool_timeout), 60 s
    /// by default). No runtime is needed: every dispatcher has a timer. A sync tool cannot be cut
    /// short: it runs to its end whatever its deadline.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// Sets the tool's strict mode in the strict targets (`anthropic-strict`, `openai`,
    /// `openai-responses`; the others have none), which otherwise emit a tool strict when its
    /// schema fits the target's subset and its limits ([`provider`](crate::provider) module
    /// docs, "Strict limits"):
    ///
    /// - `strict(false)`: the tool is always emitted non-strict, and
    ///   [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools) lists it with the
    ///   reason ``the tool is marked `strict = false` ``. It counts toward no strict limit.
    /// - `strict(true)`: the tool is always emitted strict, and is admitted before every tool not
    ///   marked, so it is never the one demoted past a limit. `build()` fails with
    ///   [`BuildProblem::CannotBeStrict`](crate::dispatch::BuildProblem::CannotBeStrict) when a
    ///   strict target cannot take its schema strict (a map, a recursive type for Anthropic, past
    ///   an OpenAI limit on one schema, …), and with
    ///   [`BuildProblem::StrictLimit`](crate::dispatch::BuildProblem::StrictLimit) when the tools
    ///   marked `strict(true)` are over a request limit together.
    ///
    /// `#[tool(strict = true)]` and `#[tool(strict = false)]` generate this call.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }

    /// Sets the tool's input examples: Anthropic's `input_examples` ("Define tools", "Providing
    /// tool use examples"), an array of input objects written after the `input_schema` of the
    /// Anthropic entries (default and strict; no other target has the field):
    /// `"input_examples": [{"location": "San Francisco, CA", "unit": "fahrenheit"}, {"location":
    /// "New York, NY"}]`. Replaces any examples set before.
    ///
    /// The API answers 400 when an example does not match the `input_schema`, so `build()` checks
    /// each one as the dispatcher checks a call's input (unknown fields, the schema sent, then the
    /// argument type's `Deserialize`) and fails with
    /// [`BuildProblem::InvalidInputExample`](crate::dispatch::BuildProblem::InvalidInputExample)
    /// naming the tool, the example's index and the problem. `#[tool(input_examples = path)]`
    /// generates this call.
    pub fn input_examples<I: IntoIterator<Item = Value>>(mut self, examples: I) -> Self {
        self.input_examples = examples.into_iter().collect();
        self
    }

    /// Declares what the tool does to the world ([`Effect`]): `Effect::read()` for a lookup,
    /// `Effect::write()` for anything that changes state, with MCP's optional hints. A `write` tool
    /// must be guarded: `build()` fails with
    /// [`BuildProblem::UnguardedWrite`](crate::dispatch::BuildProblem::UnguardedWrite) when no
    /// PreToolUse hook of the dispatcher matches it, unless it says why it needs none
    /// ([`unguarded`](Self::unguarded)). `#[tool(effect = "…")]` generates this call.
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = Some(effect);
        self
    }

    /// Says why this `write` tool needs no PreToolUse hook (``"files into the team's own queue;
    /// triage closes duplicates"``): `build()` then accepts it without one, and
    /// [`Dispatcher::unguarded_reason`](crate::Dispatcher::unguarded_reason) answers the reason. An
    /// empty reason (blank after trimming) is
    /// [`BuildProblem::UnguardedWithoutReason`](crate::dispatch::BuildProblem::UnguardedWithoutReason).
    /// `#[tool(effect = "write", unguarded = "…")]` generates this call and appends the reason to
    /// the function's documentation.
    pub fn unguarded(mut self, reason: impl Into<Cow<'static, str>>) -> Self {
        self.unguarded = Some(reason.into());
        self
    }

    /// The effect the tool declares, if any.
    pub fn declared_effect(&self) -> Option<Effect> {
        self.effect
    }

    /// Why the tool needs no guard, when it says so.
    pub fn unguarded_reason(&self) -> Option<&str> {
        self.unguarded.as_deref()
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

/// The methods the hook definitions share, written once: `tools` (for the two with a matcher),
/// `needs_state`, `full_path`, and a `Debug` that shows the path and the named fields. `$who`
/// names the item in the docs.
macro_rules! hook_def_shared {
    ($def:ident, $who:literal, debug($($field:ident),*) $(, tools = $tools_doc:literal)?) => {
        impl $def {
            $(
                #[doc = $tools_doc]
                pub fn tools<I, S>(mut self, names: I) -> Self
                where
                    I: IntoIterator<Item = S>,
                    S: Into<Cow<'static, str>>,
                {
                    self.matcher = Matcher::Tools(names.into_iter().map(Into::into).collect());
                    self
                }
            )?

            #[doc = concat!("Declares that the ", $who, " takes a `State<T>`.")]
            pub fn needs_state(mut self, key: StateKey) -> Self {
                self.states.push(key);
                self
            }

            #[doc = concat!("The ", $who, "'s full path.")]
            pub fn full_path(&self) -> &str {
                &self.path
            }
        }

        impl fmt::Debug for $def {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($def))
                    .field("path", &self.path)
                    $(.field(stringify!($field), &self.$field))*
                    .finish_non_exhaustive()
            }
        }
    };
}

/// A PreToolUse hook: decides about each call of the tools it matches, before the tool runs.
/// Built by `#[pre_hook(order = N, tools = [...])]`, or by hand.
///
/// Hooks run sorted by `(order, path)`, lowest first; put the cheap, decisive checks first.
///
/// An async hook has a deadline (its own [`timeout`](Self::timeout), else the dispatcher's, 10 s
/// by default): past it the agent halts with `hook_timeout`. A sync hook cannot be cut short:
/// it runs to its end, so a hook that waits on the network should be async.
#[derive(Clone)]
pub struct PreHookDef {
    pub(crate) path: Cow<'static, str>,
    pub(crate) order: i64,
    pub(crate) matcher: Matcher,
    pub(crate) states: Vec<StateKey>,
    pub(crate) timeout: Option<Duration>,
    /// A typed hook's input type (`None`: the hook takes `&ToolUse` only).
    pub(crate) input: Option<InputType>,
    /// Whether the hook can deny or ask, and so guard a write tool (`false`: it only rewrites,
    /// [`rewrites_only`](Self::rewrites_only)).
    pub(crate) refuses: bool,
    pub(crate) imp: PreHookFn,
}

hook_def_shared!(
    PreHookDef,
    "hook",
    debug(order, matcher),
    tools = "Narrows the hook to these tools. `build()` fails when a name is registered nowhere, \
             when the list is empty (the hook would guard nothing), and, for a hook given to the \
             builder explicitly, when none of the tools is part of the dispatcher."
);

impl PreHookDef {
    fn new(path: Cow<'static, str>, order: i64, imp: PreHookFn) -> Self {
        PreHookDef {
            path,
            order,
            matcher: Matcher::All,
            states: Vec::new(),
            timeout: None,
            input: None,
            refuses: true,
            imp,
        }
    }

    /// A synchronous hook at `path` (its full Rust path, the tie-break and audit name) with
    /// `order`; matches every tool until [`tools`](Self::tools) narrows it.
    pub fn sync<F>(path: impl Into<Cow<'static, str>>, order: i64, f: F) -> Self
    where
        F: Fn(Env<'_>, &ToolUse) -> Result<Decision, HookError> + Send + Sync + 'static,
    {
        let f = pre_sync(move |env, call, _args| f(env, call));
        Self::new(path.into(), order, HookFn::Sync(Arc::new(f)))
    }

    /// An async hook; write `f` as a `fn` item returning a boxed future.
    pub fn new_async<F>(path: impl Into<Cow<'static, str>>, order: i64, f: F) -> Self
    where
        F: for<'a> Fn(Env<'a>, &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>>
            + Send
            + Sync
            + 'static,
    {
        let f = pre_async(move |env, call, _args| f(env, call));
        Self::new(path.into(), order, HookFn::Async(Arc::new(f)))
    }

    /// A synchronous **typed** hook: `f` gets the call's validated arguments as the tool's input
    /// type `T` (the struct the tool deserializes into; no second deserialization), and answers
    /// a `Decision<T>`, so a rewrite is a `T` (serialized back to the input object, then
    /// authorized again like any rewrite: the `&T` a hook sees always matches the input the
    /// tool would run with).
    ///
    /// The tools it applies to follow from `T`: every tool of the dispatcher whose input type is
    /// `T`, narrowed by [`tools`](Self::tools) when given. `build()` fails with
    /// [`BuildProblem::NoToolTakesHookInput`](crate::dispatch::BuildProblem::NoToolTakesHookInput)
    /// when no tool of the builder's sources takes `T`, and with
    /// [`BuildProblem::HookInputMismatch`](crate::dispatch::BuildProblem::HookInputMismatch) when
    /// `tools` names a tool whose input is another type. A `T` that fails to serialize halts the
    /// agent (the hook failed).
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    /// use serde_json::json;
    /// use toolgate_core::dispatch::{PreHookDef, ToolDef};
    /// use toolgate_core::{Decision, Dispatcher, HookContext, ToolUse};
    ///
    /// /// Arguments of `search`.
    /// #[derive(Deserialize, Serialize, JsonSchema)]
    /// struct Search {
    ///     /// What to look for.
    ///     query: String,
    ///     /// How many results, at most 5.
    ///     limit: u32,
    /// }
    ///
    /// let dispatcher = Dispatcher::builder()
    ///     .tool(ToolDef::sync("search", "Searches the help centre.",
    ///         |_env, s: Search| Ok(format!("{} results for {}", s.limit, s.query))))
    ///     .pre_hook(PreHookDef::typed("app::cap_limit", 10, |_env, _call, s: &Search| {
    ///         Ok(if s.limit > 5 {
    ///             Decision::Rewrite(Search { query: s.query.clone(), limit: 5 })
    ///         } else {
    ///             Decision::Allow
    ///         })
    ///     }))
    ///     .build()?;
    /// assert_eq!(dispatcher.pre_hook_chain("search"), Some(vec!["app::cap_limit"]));
    ///
    /// let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
    /// let call = ToolUse::new("toolu_1", "search", json!({"query": "refunds", "limit": 50}));
    /// let result = toolgate_core::block_on(session.call(&call)).unwrap();
    /// assert_eq!(result.content_text(), "5 results for refunds");
    /// # Ok::<(), toolgate_core::BuildError>(())
    /// ```
    pub fn typed<T, F>(path: impl Into<Cow<'static, str>>, order: i64, f: F) -> Self
    where
        T: Serialize + Send + Sync + 'static,
        F: Fn(Env<'_>, &ToolUse, &T) -> Result<Decision<T>, HookError> + Send + Sync + 'static,
    {
        let f = pre_sync(move |env, call, args| {
            untyped(typed_args::<T>(args).and_then(|t| f(env, call, t)))
        });
        PreHookDef {
            input: Some(InputType::of::<T>()),
            ..Self::new(path.into(), order, HookFn::Sync(Arc::new(f)))
        }
    }

    /// An async typed hook (see [`typed`](Self::typed)); write `f` as a `fn` item returning a
    /// boxed future. Its answer is boxed once more, to serialize a rewrite.
    pub fn typed_async<T, F>(path: impl Into<Cow<'static, str>>, order: i64, f: F) -> Self
    where
        T: Serialize + Send + Sync + 'static,
        F: for<'a> Fn(Env<'a>, &'a ToolUse, &'a T) -> BoxFuture<'a, Result<Decision<T>, HookError>>
            + Send
            + Sync
            + 'static,
    {
        let f = pre_async(move |env, call, args| match typed_args::<T>(args) {
            Ok(t) => {
                let decided = f(env, call, t);
                Box::pin(async move { untyped(decided.await) })
            }
            Err(e) => Box::pin(std::future::ready(Err(e))),
        });
        PreHookDef {
            input: Some(InputType::of::<T>()),
            ..Self::new(path.into(), order, HookFn::Async(Arc::new(f)))
        }
    }

    /// Sets the deadline of an async hook, instead of the dispatcher's
    /// ([`DispatcherBuilder::hook_timeout`](crate::dispatch::DispatcherBuilder::hook_timeout), 10 s
    /// by default); past it the call is not run and the agent halts with `hook_timeout`. No runtime
    /// is needed: every dispatcher has a timer. A sync hook cannot be cut short: it runs to its end
    /// whatever its deadline.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// Declares that the hook only rewrites: it never denies or asks (a label normalizer, a
    /// default filled in). Such a hook guards no write tool: `build()` does not count it as
    /// the PreToolUse hook every `write` tool needs, and names the tool
    /// ([`BuildProblem::UnguardedWrite`](crate::dispatch::BuildProblem::UnguardedWrite)) when it
    /// is the only hook that matches. A `#[pre_hook]` that returns
    /// [`Rewrite`](crate::Rewrite) is declared so by the macro; by hand, return
    /// `Ok(rewrite.into())` and call this. (Should the hook deny or ask all the same, the chain
    /// obeys it: the declaration only keeps it from counting as a guard.)
    pub fn rewrites_only(mut self) -> Self {
        self.refuses = false;
        self
    }

    /// Whether the hook can deny or ask, and so guard a write tool: `false` after
    /// [`rewrites_only`](Self::rewrites_only).
    pub fn can_refuse(&self) -> bool {
        self.refuses
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
    pub(crate) imp: PostHookFn,
}

hook_def_shared!(
    PostHookDef,
    "observer",
    debug(matcher),
    tools = "Narrows the observer to these tools (it then sees no `unknown_tool` calls). `build()` \
             fails as for a PreToolUse hook: an unknown name, an empty list, or, for an observer \
             given explicitly, no tool of the dispatcher."
);

impl PostHookDef {
    fn new(path: Cow<'static, str>, imp: PostHookFn) -> Self {
        PostHookDef {
            path,
            matcher: Matcher::All,
            states: Vec::new(),
            imp,
        }
    }

    /// A synchronous observer at `path`.
    pub fn sync<F>(path: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        F: Fn(Env<'_>, &CallRecord<'_>) -> Result<(), HookError> + Send + Sync + 'static,
    {
        Self::new(path.into(), HookFn::Sync(Arc::new(f)))
    }

    /// An async observer; write `f` as a `fn` item returning a boxed future.
    pub fn new_async<F>(path: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        F: for<'a> Fn(Env<'a>, &'a CallRecord<'a>) -> BoxFuture<'a, Result<(), HookError>>
            + Send
            + Sync
            + 'static,
    {
        Self::new(path.into(), HookFn::Async(Arc::new(f)))
    }
}

/// A Stop hook: runs once per session, when it ends (or is dropped), with the session's
/// [`SessionSummary`]. Synchronous, because it must be able to run from `drop`. Its errors are
/// reported to `tracing` and counted in `observer_errors`, never raised.
#[derive(Clone)]
pub struct StopHookDef {
    pub(crate) path: Cow<'static, str>,
    pub(crate) states: Vec<StateKey>,
    pub(crate) imp: Arc<StopFn>,
}

hook_def_shared!(StopHookDef, "hook", debug());

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
}
