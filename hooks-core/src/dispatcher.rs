//! [`Dispatcher`]: the built, shared, immutable set of tools and hooks every session runs on
//! (built by [`DispatcherBuilder`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::builder::DispatcherBuilder;
use crate::caller::ToolCaller;
use crate::content::{ToolResult, ToolUse};
use crate::context::HookContext;
use crate::definitions::{PostHookDef, PreHookDef, StopHookDef};
use crate::erased::ErasedTool;
use crate::error::Halt;
use crate::future::BoxFuture;
use crate::limits::Limits;
use crate::name_index::NameIndex;
use crate::provider::{NonStrictTool, Provider, Rendered, SchemaError, render};
use crate::schema::check::FieldCheck;
use crate::session::Session;
use crate::state::StateMap;
use crate::timer::Timer;

/// How a tool is reached.
pub(crate) enum Backend {
    /// A Rust function (registered or hand-built).
    Local(Arc<dyn ErasedTool>),
    /// A wrapped caller the dispatcher owns.
    Caller { caller: Arc<dyn ToolCaller> },
}

/// One tool of a built dispatcher.
pub(crate) struct ToolEntry {
    pub(crate) name: Cow<'static, str>,
    pub(crate) path: Cow<'static, str>,
    /// The description as every target shows it (unwrapped, see `schema::unwrap_doc`).
    pub(crate) description: String,
    pub(crate) backend: Backend,
    pub(crate) canonical: Value,
    /// The schema as generated (schemars' own form, with integer `format`s), for explaining an
    /// invalid input.
    pub(crate) raw_schema: Value,
    pub(crate) fields: FieldCheck,
    /// Indices into `Inner::pre_hooks` of the hooks that match this tool, in chain order.
    pub(crate) chain: Box<[usize]>,
    /// Indices into `Inner::observers` of the observers that see this tool's calls, in order.
    pub(crate) observers: Box<[usize]>,
    pub(crate) timeout: Option<Duration>,
}

/// The shared, immutable state of a dispatcher.
pub(crate) struct Inner {
    /// Sorted by name.
    pub(crate) tools: Vec<ToolEntry>,
    /// Tool name → index in `tools`, for [`Inner::find`].
    pub(crate) by_name: NameIndex,
    /// Anthropic `tools` entries, in `tools` order.
    pub(crate) definitions: Vec<Value>,
    /// Sorted by `(order, path)`.
    pub(crate) pre_hooks: Vec<PreHookDef>,
    /// Sorted by path; the audit log's observer last.
    pub(crate) observers: Vec<PostHookDef>,
    /// Sorted by path; the audit log's summary last.
    pub(crate) stop_hooks: Vec<StopHookDef>,
    /// Indices into `observers` of those that see calls of unknown tools (the ones without a
    /// tool matcher).
    pub(crate) observers_of_unknown: Box<[usize]>,
    /// Whether every observer is sync (they then run without a future).
    pub(crate) observers_sync: bool,
    pub(crate) states: StateMap,
    pub(crate) limits: Limits,
    pub(crate) timer: Option<Arc<dyn Timer>>,
    pub(crate) hook_timeout: Option<Duration>,
    pub(crate) tool_timeout: Option<Duration>,
    /// `"a, b, c"`, for unknown-tool messages.
    pub(crate) available: String,
    /// Definitions per target (by `Provider::index`), rendered on first use.
    pub(crate) rendered: [OnceLock<Result<Rendered, SchemaError>>; Provider::ALL.len()],
}

impl Inner {
    /// The index in `tools` of the tool named `name`: one hash of the name and, as a rule, one
    /// comparison (a binary search cost a string comparison per step).
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.by_name.find(name, |i| self.tools[i].name.as_ref())
    }

    /// The observers of a call of `tool` (an index into `tools`; `None` for an unknown name),
    /// as indices into `observers`, in the order they run.
    pub(crate) fn observers_for(&self, tool: Option<usize>) -> &[usize] {
        match tool.and_then(|i| self.tools.get(i)) {
            Some(t) => &t.observers,
            None => &self.observers_of_unknown,
        }
    }

    /// The definitions for `provider`, rendered once from the canonical schemas.
    fn rendered(&self, provider: Provider) -> &Result<Rendered, SchemaError> {
        self.rendered[provider.index()].get_or_init(|| {
            let tools = self
                .tools
                .iter()
                .map(|t| (t.name.as_ref(), t.description.as_str(), &t.canonical));
            render(provider, tools)
        })
    }
}

/// Turns `tool_use` blocks into `tool_result` blocks through the PreToolUse chain, the tool and
/// the PostToolUse observers, for many sessions at once.
///
/// Built once with [`Dispatcher::builder`], then shared: it is `Send + Sync` and cloning it
/// shares one `Arc`. Open a [`Session`] per conversation with [`Dispatcher::session`]. The
/// dispatcher is itself a [`ToolCaller`], so it can be wrapped by another dispatcher (each
/// inner call runs once; the inner one runs its own hooks without a session, so no Stop).
#[derive(Clone)]
pub struct Dispatcher {
    pub(crate) inner: Arc<Inner>,
}

impl Dispatcher {
    /// Starts an empty builder: add registered items ([`DispatcherBuilder::registered`],
    /// [`DispatcherBuilder::registered_under`], [`DispatcherBuilder::item`]) or hand-built ones.
    pub fn builder() -> DispatcherBuilder {
        DispatcherBuilder::default()
    }

    /// Opens a session (one conversation) with the host's trusted `context`.
    pub fn session(&self, context: HookContext) -> Session {
        Session::new(self.clone(), context)
    }

    /// The Anthropic Messages API `tools` entries, sorted by name: `[{"name": "get_weather",
    /// "description": "…", "input_schema": {"type": "object", "properties": {…}, "required":
    /// […], "additionalProperties": false}}, …]`. Built once, at `build()`.
    pub fn tool_definitions(&self) -> &[Value] {
        &self.inner.definitions
    }

    /// The `tools` entries for `provider`, sorted by name, each in that API's format (see
    /// [`schema::targets`](crate::schema::targets) for every target's rules):
    /// `anthropic` is [`tool_definitions`](Self::tool_definitions); `openai` gives
    /// `[{"type": "function", "function": {"name": …, "description": …, "parameters": {…},
    /// "strict": true}}, …]`; `gemini` gives the `functionDeclarations` entries `[{"name": …,
    /// "description": …, "parameters": {…}}, …]`; `mcp` the `tools/list` entries `[{"name": …,
    /// "description": …, "inputSchema": {…}}, …]`. Built on first use, then cached.
    ///
    /// # Errors
    /// A [`SchemaError`] naming every tool the target cannot express, with the reason (today only
    /// Gemini: a recursive type, a map, a tuple, …); the other targets are unaffected. A strict
    /// target never fails: it emits such a tool non-strict (see
    /// [`non_strict_tools`](Self::non_strict_tools)).
    pub fn tool_definitions_for(&self, provider: Provider) -> Result<&[Value], SchemaError> {
        if provider == Provider::Anthropic {
            return Ok(&self.inner.definitions);
        }
        match self.inner.rendered(provider) {
            Ok(r) => Ok(&r.definitions),
            Err(e) => Err(e.clone()),
        }
    }

    /// The tools a strict target (`anthropic-strict`, `openai`, `openai-responses`) had to
    /// emit non-strict, with the reason, for a host to log at start-up:
    /// `` `tag_items`: property `labels` is a map (`additionalProperties` is a schema, as for
    /// HashMap<String, T>) ``. Empty for every other target.
    pub fn non_strict_tools(&self, provider: Provider) -> &[NonStrictTool] {
        if !provider.is_strict() {
            return &[];
        }
        match self.inner.rendered(provider) {
            Ok(r) => &r.non_strict,
            Err(_) => &[],
        }
    }

    /// The names of this dispatcher's tools, sorted.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.inner.tools.iter().map(|t| t.name.as_ref())
    }

    /// The full Rust path of a tool (`my_app::tools::lookup_user`), for logs and build errors;
    /// `<wrapped caller #N>::name` for a tool of the N-th wrapped [`ToolCaller`] (from 0);
    /// `None` when this dispatcher has no tool named `tool`.
    pub fn tool_path(&self, tool: &str) -> Option<&str> {
        self.inner
            .find(tool)
            .map(|i| self.inner.tools[i].path.as_ref())
    }

    /// The canonical schema of a tool (the form every target's transform starts from; see
    /// [`schema`](crate::schema)): the `input_schema` before the Anthropic form collapses
    /// optional values, so an `Option<u32>` property reads `{"anyOf": [{"type": "integer",
    /// "minimum": 0}, {"type": "null"}]}`. `None` when this dispatcher has no tool named `tool`.
    pub fn canonical_schema(&self, tool: &str) -> Option<&Value> {
        self.inner
            .find(tool)
            .map(|i| &self.inner.tools[i].canonical)
    }

    /// The PreToolUse chain of a tool: the full paths of its hooks, in the order they run
    /// (`order`, then path). `None` when this dispatcher has no tool named `tool`.
    pub fn pre_hook_chain(&self, tool: &str) -> Option<Vec<&str>> {
        let i = self.inner.find(tool)?;
        Some(
            self.inner.tools[i]
                .chain
                .iter()
                .map(|&h| self.inner.pre_hooks[h].path.as_ref())
                .collect(),
        )
    }
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tools", &self.tool_names().collect::<Vec<_>>())
            .field(
                "pre_hooks",
                &self
                    .inner
                    .pre_hooks
                    .iter()
                    .map(|h| h.path.as_ref())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl ToolCaller for Dispatcher {
    fn tool_definitions(&self) -> Vec<Value> {
        self.inner.definitions.clone()
    }

    fn call_tool<'a>(
        &'a self,
        context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<ToolResult, Halt>> {
        Box::pin(self.inner.run_call(context, None, call))
    }
}
