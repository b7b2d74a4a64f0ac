//! [`Dispatcher`] and [`DispatcherBuilder`]: which tools and hooks an agent gets, checked once at
//! start-up ([`BuildError`] lists every problem at once).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::audit::AuditLog;
use crate::caller::ToolCaller;
use crate::content::{ToolResult, ToolUse};
use crate::context::HookContext;
use crate::error::Halt;
use crate::limits::Limits;
use crate::provider::Provider;
use crate::registry::{
    BoxFuture, ErasedTool, Matcher, PostHookDef, PreHookDef, RegistrationKind, StopHookDef,
    ToolDef, registered,
};
use crate::schema::check::{FieldCheck, open_properties, root_problem};
use crate::schema::targets::{NonStrictTool, Rendered, SchemaError, render};
use crate::schema::{anthropic_input_schema, canonicalize, is_valid_tool_name, unwrap_doc};
use crate::session::Session;
use crate::state::{StateKey, StateMap};
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
    pub(crate) backend: Backend,
    pub(crate) canonical: Value,
    /// The schema as generated (schemars' own form, with integer `format`s), for explaining an
    /// invalid input.
    pub(crate) raw_schema: Value,
    pub(crate) fields: FieldCheck,
    /// Indices into `Inner::pre_hooks` of the hooks that match this tool, in chain order.
    pub(crate) chain: Box<[usize]>,
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

    /// The definitions for `provider`, rendered once from the canonical schemas (the
    /// descriptions are the Anthropic definitions', which are in tool order).
    fn rendered(&self, provider: Provider) -> &Result<Rendered, SchemaError> {
        self.rendered[provider.index()].get_or_init(|| {
            let tools = self.tools.iter().zip(&self.definitions).map(|(t, d)| {
                let description = d.get("description").and_then(Value::as_str);
                (
                    t.name.as_ref(),
                    description.unwrap_or_default(),
                    &t.canonical,
                )
            });
            render(provider, tools)
        })
    }
}

/// Tool names → indices in `tools`: an open-addressing table (linear probing, at most half
/// full). It is fixed at `build()`, so a name sent by the model can only be looked up, never
/// steer an insertion; a fast word-at-a-time hash is enough.
pub(crate) struct NameIndex {
    /// `EMPTY` or an index into `tools`; the length is a power of two.
    slots: Box<[u32]>,
}

impl NameIndex {
    const EMPTY: u32 = u32::MAX;

    fn new<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> Self {
        let len = (names.len() * 2).next_power_of_two().max(8);
        let mut slots = vec![Self::EMPTY; len].into_boxed_slice();
        for (i, name) in names.enumerate() {
            let mut at = word_hash(name) as usize & (len - 1);
            while slots[at] != Self::EMPTY {
                at = (at + 1) & (len - 1);
            }
            slots[at] = u32::try_from(i).unwrap_or(Self::EMPTY);
        }
        NameIndex { slots }
    }

    fn find<'a>(&self, name: &str, name_of: impl Fn(usize) -> &'a str) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut at = word_hash(name) as usize & mask;
        loop {
            let slot = *self.slots.get(at)?;
            if slot == Self::EMPTY {
                return None;
            }
            if name_of(slot as usize) == name {
                return Some(slot as usize);
            }
            at = (at + 1) & mask;
        }
    }
}

/// rustc's `FxHasher` step (multiply, rotate), fed 8 bytes at a time: a tool name of up to 64
/// bytes takes at most 8 rounds.
fn word_hash(name: &str) -> u64 {
    let mut h = name.len() as u64;
    let mut add = |word: u64| h = (h.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    let mut chunks = name.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        add(u64::from_le_bytes(word));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        add(u64::from_le_bytes(word));
    }
    // The multiply leaves its best bits high; the slot comes from the low ones.
    h.rotate_left(26)
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

    /// The full Rust path of a tool (`my_app::tools::lookup_user`), for logs and build errors.
    pub fn tool_path(&self, tool: &str) -> Option<&str> {
        self.inner
            .find(tool)
            .map(|i| self.inner.tools[i].path.as_ref())
    }

    /// The canonical schema of a tool (the form every target's transform starts from).
    pub fn canonical_schema(&self, tool: &str) -> Option<&Value> {
        self.inner
            .find(tool)
            .map(|i| &self.inner.tools[i].canonical)
    }

    /// The PreToolUse chain of a tool: the full paths of its hooks, in the order they run.
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

enum Source {
    All,
    Under(String),
    Item(String),
}

/// Builds a [`Dispatcher`]: where its tools and hooks come from, which tools it keeps, the states
/// it hands out, its audit log, limits and deadlines.
///
/// Sources add up: every registered item ([`registered`](Self::registered)), the items under a
/// module path ([`registered_under`](Self::registered_under), a specialist), single items by full
/// path ([`item`](Self::item)), hand-built definitions ([`tool`](Self::tool),
/// [`pre_hook`](Self::pre_hook), …) and wrapped callers ([`wrap`](Self::wrap)). Then
/// [`only_tools`](Self::only_tools) / [`without_tools`](Self::without_tools) filter the tools: a
/// filtered tool is gone from the definitions and from the callable surface alike, and a hook
/// whose matched tools are all gone is not part of the dispatcher.
#[derive(Default)]
#[must_use = "call .build() to get the Dispatcher"]
pub struct DispatcherBuilder {
    sources: Vec<Source>,
    tools: Vec<ToolDef>,
    pre_hooks: Vec<PreHookDef>,
    post_hooks: Vec<PostHookDef>,
    stop_hooks: Vec<StopHookDef>,
    callers: Vec<Arc<dyn ToolCaller>>,
    only: Option<Vec<String>>,
    without: Vec<String>,
    states: StateMap,
    audit: Option<AuditLog>,
    limits: Limits,
    timer: Option<Arc<dyn Timer>>,
    hook_timeout: Option<Duration>,
    tool_timeout: Option<Duration>,
}

impl DispatcherBuilder {
    /// Adds every item registered with the macros in the linked crates. A library crate's items
    /// are only linked when the binary uses the crate: write `use my_tools as _;` if nothing
    /// else names it. Tests should prefer [`registered_under`](Self::registered_under): one
    /// test binary shares one registry.
    pub fn registered(mut self) -> Self {
        self.sources.push(Source::All);
        self
    }

    /// Adds the registered items whose full path is under `module_path` (`"my_app::refunds"`
    /// takes `my_app::refunds::issue_refund` and `my_app::refunds::policy::deny_free`). Pass
    /// `module_path!()` for the current module. `build()` fails when nothing is registered there.
    pub fn registered_under(mut self, module_path: impl Into<String>) -> Self {
        self.sources.push(Source::Under(module_path.into()));
        self
    }

    /// Adds one registered item by its full path (`"my_app::tools::lookup_user"`). `build()`
    /// fails when no item has that path.
    pub fn item(mut self, path: impl Into<String>) -> Self {
        self.sources.push(Source::Item(path.into()));
        self
    }

    /// Adds several registered items by full path.
    pub fn items<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for p in paths {
            self.sources.push(Source::Item(p.into()));
        }
        self
    }

    /// Adds a hand-built tool.
    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a hand-built PreToolUse hook.
    pub fn pre_hook(mut self, hook: PreHookDef) -> Self {
        self.pre_hooks.push(hook);
        self
    }

    /// Adds a hand-built PostToolUse observer.
    pub fn post_hook(mut self, hook: PostHookDef) -> Self {
        self.post_hooks.push(hook);
        self
    }

    /// Adds a hand-built Stop hook.
    pub fn stop_hook(mut self, hook: StopHookDef) -> Self {
        self.stop_hooks.push(hook);
        self
    }

    /// Wraps a caller: the dispatcher takes it by value and owns it; its tools become this
    /// dispatcher's, reached only through this dispatcher's hooks.
    pub fn wrap(mut self, caller: impl ToolCaller) -> Self {
        self.callers.push(Arc::new(caller));
        self
    }

    /// Keeps only these tools (a specialist). `build()` fails on a name no source provides.
    pub fn only_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.only = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Removes these tools. `build()` fails on a name no source provides.
    pub fn without_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.without.extend(names.into_iter().map(Into::into));
        self
    }

    /// Gives the dispatcher a `State<T>` for the tools and hooks that ask for it. A second value
    /// of one type replaces the first.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states.insert(Arc::new(value));
        self
    }

    /// Gives the dispatcher a `State<T>` already in an `Arc`.
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.states.insert(value);
        self
    }

    /// Adds the built-in [`AuditLog`]: its observer runs after every other observer and its
    /// summary line after every other Stop hook.
    pub fn audit_log(mut self, log: AuditLog) -> Self {
        self.audit = Some(log);
        self
    }

    /// Sets the input and result bounds (default: [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Gives the dispatcher a timer, needed by any deadline.
    pub fn timer(mut self, timer: impl Timer) -> Self {
        self.timer = Some(Arc::new(timer));
        self
    }

    /// A default deadline for async PreToolUse hooks without their own `timeout_ms`.
    pub fn hook_timeout(mut self, deadline: Duration) -> Self {
        self.hook_timeout = Some(deadline);
        self
    }

    /// A default deadline for async tools without their own `timeout_ms`.
    pub fn tool_timeout(mut self, deadline: Duration) -> Self {
        self.tool_timeout = Some(deadline);
        self
    }

    /// Checks everything and builds the dispatcher.
    ///
    /// # Errors
    /// A [`BuildError`] listing every problem found (see [`BuildProblem`]): two tools with one
    /// name; an invalid tool name or an empty description; a schema whose root is not an object;
    /// a property whose schema is a bare `true` or `{}`; a hook matcher naming a tool registered
    /// nowhere; an item asking for a `State<T>` the builder was not given; a source or filter
    /// naming nothing; a deadline without a timer.
    pub fn build(self) -> Result<Dispatcher, BuildError> {
        let mut problems = Vec::new();

        // 1. Registered items from the sources.
        let mut tools: Vec<ToolDef> = Vec::new();
        let mut pre: Vec<PreHookDef> = Vec::new();
        let mut post: Vec<PostHookDef> = Vec::new();
        let mut stop: Vec<StopHookDef> = Vec::new();
        let mut known_tools: BTreeSet<String> = BTreeSet::new();
        let mut taken: BTreeSet<&'static str> = BTreeSet::new();
        // Sorted by path: inventory's order is the link order, which varies between builds.
        let mut all: Vec<_> = registered().collect();
        all.sort_by_key(|r| r.path);
        for reg in &all {
            if let RegistrationKind::Tool { name, .. } = reg.kind {
                known_tools.insert(name.to_owned());
            }
        }
        for source in &self.sources {
            let selected: Vec<_> = all
                .iter()
                .filter(|r| match source {
                    Source::All => true,
                    Source::Under(prefix) => under(r.path, prefix),
                    Source::Item(path) => r.path == path,
                })
                .collect();
            if selected.is_empty() {
                problems.push(match source {
                    Source::All => continue,
                    Source::Under(prefix) => BuildProblem::NothingUnder(prefix.clone()),
                    Source::Item(path) => BuildProblem::NoSuchItem(path.clone()),
                });
            }
            for reg in selected {
                if !taken.insert(reg.path) {
                    continue;
                }
                match reg.kind {
                    RegistrationKind::Tool { make, .. } => tools.push(make()),
                    RegistrationKind::PreHook(make) => pre.push(make()),
                    RegistrationKind::PostHook(make) => post.push(make()),
                    RegistrationKind::StopHook(make) => stop.push(make()),
                }
            }
        }
        tools.extend(self.tools);
        pre.extend(self.pre_hooks);
        post.extend(self.post_hooks);
        stop.extend(self.stop_hooks);
        for t in &tools {
            known_tools.insert(t.name.to_string());
        }

        // 2. Tools, from definitions and callers.
        struct Candidate {
            name: Cow<'static, str>,
            path: Cow<'static, str>,
            description: Cow<'static, str>,
            schema: Value,
            raw: Value,
            backend: Backend,
            states: Vec<StateKey>,
            timeout: Option<Duration>,
        }
        let mut candidates: Vec<Candidate> = tools
            .into_iter()
            .map(|t| Candidate {
                schema: canonicalize(&t.schema, !t.additional_properties),
                raw: t.schema,
                name: t.name,
                path: t.path,
                description: t.description,
                backend: Backend::Local(t.imp),
                states: t.states,
                timeout: t.timeout,
            })
            .collect();
        for (ci, caller) in self.callers.iter().enumerate() {
            for def in caller.tool_definitions() {
                let name = def
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let description = def
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let schema = def.get("input_schema").cloned().unwrap_or(Value::Null);
                known_tools.insert(name.clone());
                candidates.push(Candidate {
                    path: Cow::Owned(format!("<wrapped caller #{ci}>::{name}")),
                    name: Cow::Owned(name),
                    description: Cow::Owned(description),
                    raw: schema.clone(),
                    schema,
                    backend: Backend::Caller {
                        caller: Arc::clone(caller),
                    },
                    states: Vec::new(),
                    timeout: None,
                });
            }
        }

        // 3. Filters.
        let provided: BTreeSet<String> = candidates.iter().map(|c| c.name.to_string()).collect();
        if let Some(only) = &self.only {
            for n in only {
                if !provided.contains(n) {
                    problems.push(BuildProblem::UnknownFilterTool(n.clone()));
                }
            }
            candidates.retain(|c| only.iter().any(|n| *n == c.name));
        }
        for n in &self.without {
            if !provided.contains(n) {
                problems.push(BuildProblem::UnknownFilterTool(n.clone()));
            }
        }
        candidates.retain(|c| !self.without.iter().any(|n| *n == c.name));

        // 4. Each tool on its own, then duplicates.
        let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in &candidates {
            by_name
                .entry(c.name.to_string())
                .or_default()
                .push(c.path.to_string());
            if !is_valid_tool_name(&c.name) {
                problems.push(BuildProblem::InvalidToolName {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                });
            }
            if c.description.trim().is_empty() {
                problems.push(BuildProblem::NoDescription {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                });
            }
            if let Some(found) = root_problem(&c.schema) {
                problems.push(BuildProblem::RootNotObject {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                    found,
                });
            }
            for property in open_properties(&c.schema) {
                problems.push(BuildProblem::OpenProperty {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                    property,
                });
            }
            for key in &c.states {
                if !self.states.contains(key) {
                    problems.push(BuildProblem::MissingState {
                        item: c.path.to_string(),
                        type_name: key.type_name(),
                    });
                }
            }
            if c.timeout.is_some() && self.timer.is_none() {
                problems.push(BuildProblem::DeadlineWithoutTimer {
                    item: c.path.to_string(),
                });
            }
        }
        for (name, paths) in &mut by_name {
            if paths.len() > 1 {
                paths.sort();
                problems.push(BuildProblem::DuplicateTool {
                    tool: name.clone(),
                    paths: paths.clone(),
                });
            }
        }
        let kept: BTreeSet<&str> = candidates.iter().map(|c| c.name.as_ref()).collect();

        // 5. Hooks: matchers, then which hooks this dispatcher keeps.
        let check_matcher = |path: &str, matcher: &Matcher, problems: &mut Vec<BuildProblem>| {
            if let Matcher::Tools(names) = matcher {
                for n in names {
                    if !known_tools.contains(n.as_ref()) {
                        problems.push(BuildProblem::UnknownMatcherTool {
                            hook: path.to_owned(),
                            tool: n.to_string(),
                        });
                    }
                }
            }
        };
        for h in &pre {
            check_matcher(&h.path, &h.matcher, &mut problems);
        }
        for h in &post {
            check_matcher(&h.path, &h.matcher, &mut problems);
        }
        let keeps = |m: &Matcher| match m {
            Matcher::All => true,
            Matcher::Tools(names) => names.iter().any(|n| kept.contains(n.as_ref())),
        };
        pre.retain(|h| keeps(&h.matcher));
        post.retain(|h| keeps(&h.matcher));
        let need_state = |item: &str, states: &[StateKey], problems: &mut Vec<BuildProblem>| {
            for key in states {
                if !self.states.contains(key) {
                    problems.push(BuildProblem::MissingState {
                        item: item.to_owned(),
                        type_name: key.type_name(),
                    });
                }
            }
        };
        for h in &pre {
            need_state(&h.path, &h.states, &mut problems);
            if h.timeout.is_some() && self.timer.is_none() {
                problems.push(BuildProblem::DeadlineWithoutTimer {
                    item: h.path.to_string(),
                });
            }
        }
        for h in &post {
            need_state(&h.path, &h.states, &mut problems);
        }
        for h in &stop {
            need_state(&h.path, &h.states, &mut problems);
        }
        for (what, set) in [
            ("hook_timeout", self.hook_timeout),
            ("tool_timeout", self.tool_timeout),
        ] {
            if set.is_some() && self.timer.is_none() {
                problems.push(BuildProblem::DeadlineWithoutTimer {
                    item: format!("DispatcherBuilder::{what}"),
                });
            }
        }

        if !problems.is_empty() {
            return Err(BuildError { problems });
        }

        // 6. Assemble.
        pre.sort_by(|a, b| (a.order, a.path.as_ref()).cmp(&(b.order, b.path.as_ref())));
        post.sort_by(|a, b| a.path.cmp(&b.path));
        stop.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(log) = &self.audit {
            post.push(log.observer());
            stop.push(log.stop_hook());
        }
        candidates.sort_by(|a, b| a.name.cmp(&b.name));
        let mut entries = Vec::with_capacity(candidates.len());
        let mut definitions = Vec::with_capacity(candidates.len());
        for c in candidates {
            let chain: Box<[usize]> = pre
                .iter()
                .enumerate()
                .filter(|(_, h)| h.matcher.matches(&c.name))
                .map(|(i, _)| i)
                .collect();
            definitions.push(json!({
                "name": c.name,
                "description": unwrap_doc(&c.description),
                "input_schema": anthropic_input_schema(&c.schema),
            }));
            entries.push(ToolEntry {
                fields: FieldCheck::from_schema(&c.schema),
                canonical: c.schema,
                raw_schema: c.raw,
                name: c.name,
                path: c.path,
                backend: c.backend,
                chain,
                timeout: c.timeout,
            });
        }
        let available = entries
            .iter()
            .map(|t| t.name.as_ref())
            .collect::<Vec<_>>()
            .join(", ");
        let by_name = NameIndex::new(entries.iter().map(|t| t.name.as_ref()));
        Ok(Dispatcher {
            inner: Arc::new(Inner {
                by_name,
                tools: entries,
                definitions,
                pre_hooks: pre,
                observers_sync: post.iter().all(|o| o.imp.is_sync()),
                observers: post,
                stop_hooks: stop,
                states: self.states,
                limits: self.limits,
                timer: self.timer,
                hook_timeout: self.hook_timeout,
                tool_timeout: self.tool_timeout,
                available,
                rendered: Default::default(),
            }),
        })
    }
}

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// One problem found by [`DispatcherBuilder::build`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Two or more tools share a name (a model could not tell them apart).
    #[error("two tools are named `{tool}`: {}; rename one with #[tool(name = \"…\")] or filter one out", paths.join(" and "))]
    DuplicateTool {
        /// The shared name.
        tool: String,
        /// The full paths of the tools.
        paths: Vec<String>,
    },
    /// A name outside `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("tool `{tool}` ({path}) has an invalid name: use 1 to 64 letters, digits, `_` or `-`")]
    InvalidToolName {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// An empty description.
    #[error("tool `{tool}` ({path}) has no description: the model needs one to choose the tool")]
    NoDescription {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// The input schema's root is not an object with properties.
    #[error(
        "tool `{tool}` ({path}) has an input schema whose root is {found}; a tool's input must be a struct with named fields, whose schema is `{{\"type\": \"object\", …}}`"
    )]
    RootNotObject {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// What the root is.
        found: String,
    },
    /// A property's schema is a bare `true` or `{}`.
    #[error(
        "tool `{tool}` ({path}): property `{property}` accepts any JSON (its schema is `true` or `{{}}`, as for serde_json::Value); give it an explicit schema with #[schemars(schema_with = \"…\")] on the parameter or field, or use a typed struct"
    )]
    OpenProperty {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The property's path (`options.extra`).
        property: String,
    },
    /// A hook's matcher names a tool that no source registers.
    #[error("hook `{hook}` matches tool `{tool}`, which is registered nowhere")]
    UnknownMatcherTool {
        /// The hook's full path.
        hook: String,
        /// The unknown tool name.
        tool: String,
    },
    /// An item takes a `State<T>` the builder was not given.
    #[error(
        "`{item}` takes State<{type_name}>, but the builder was not given one: add .state(…) with a {type_name}"
    )]
    MissingState {
        /// The item's full path.
        item: String,
        /// The state's type.
        type_name: &'static str,
    },
    /// `registered_under` found nothing.
    #[error(
        "nothing is registered under module path `{0}` (is the crate linked? add `use my_crate as _;`)"
    )]
    NothingUnder(String),
    /// `item` found nothing.
    #[error("no registered item has the path `{0}`")]
    NoSuchItem(String),
    /// `only_tools` or `without_tools` names a tool no source provides.
    #[error("the tool filter names `{0}`, which no source of this builder provides")]
    UnknownFilterTool(String),
    /// A deadline was set but there is no timer.
    #[error(
        "`{item}` has a deadline but the dispatcher has no timer: add .timer(…) (the `tokio` feature provides TokioTimer)"
    )]
    DeadlineWithoutTimer {
        /// The item (or builder setting) with the deadline.
        item: String,
    },
}

/// Every problem [`DispatcherBuilder::build`] found, reported together; `Display` writes one per
/// line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    /// The problems, in the order found.
    pub problems: Vec<BuildProblem>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the dispatcher cannot be built ({} problem{}):",
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            write!(f, "\n- {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_index_finds_every_name_and_nothing_else() {
        let names: Vec<String> = (0..100)
            .map(|i| format!("tool_{i}"))
            .chain(["a".into(), "exact_08".into(), "x".repeat(64)])
            .collect();
        let index = NameIndex::new(names.iter().map(String::as_str));
        let name_of = |i: usize| names[i].as_str();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.find(n, name_of), Some(i), "{n}");
        }
        for missing in [
            "",
            "tool_",
            "tool_100",
            "tool_1 ",
            "b",
            "exact_0",
            &"x".repeat(65),
        ] {
            assert_eq!(index.find(missing, name_of), None, "{missing:?}");
        }
        let empty = NameIndex::new(std::iter::empty());
        assert_eq!(empty.find("tool_1", |_| ""), None);
    }
}
