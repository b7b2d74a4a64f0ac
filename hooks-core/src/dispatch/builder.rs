//! [`DispatcherBuilder`]: where a dispatcher's tools and hooks come from, which it keeps, and
//! the checks that run once at start-up ([`BuildError`] lists every problem at once).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::approval::ask::Approver;
use crate::approval::seal::Sealing;
use crate::audit::AuditLog;
use crate::base::sort::{Names, sort_by};
use crate::base::timer::{DefaultTimer, Timer};
use crate::dispatch::dispatcher::Dispatcher;
use crate::dispatch::examples;
use crate::hook::caller::ToolCaller;
use crate::hook::definitions::{InputType, Matcher, PostHookDef, PreHookDef, StopHookDef, ToolDef};
use crate::hook::effect::Effect;
use crate::hook::registry::{RegistrationKind, registered};
use crate::hook::state::{StateKey, StateMap};
use crate::pipeline::inner::{Backend, Inner, ToolEntry};
use crate::pipeline::limits::Limits;
use crate::pipeline::name_index::NameIndex;
use crate::provider::anthropic::entry as anthropic_entry;
use crate::provider::{Provider, ToolSource, marked_strict_problems, mcp};
use crate::schema::check::{FieldCheck, open_properties, root_problem};
use crate::schema::meta;
use crate::schema::{canonicalize, closed_form, is_valid_tool_name, unwrap_doc};

enum Source {
    All,
    Under(String),
    Item(String),
}

/// Builds a [`Dispatcher`]: where its tools and hooks come from, which tools it keeps, the states
/// it hands out, its audit log, limits and deadlines.
///
/// Deadlines are on by default, with no runtime needed: an async PreToolUse hook gets
/// [`DEFAULT_HOOK_TIMEOUT`](Self::DEFAULT_HOOK_TIMEOUT) (10 s; past it the agent halts with
/// `hook_timeout`), an async tool [`DEFAULT_TOOL_TIMEOUT`](Self::DEFAULT_TOOL_TIMEOUT) (60 s;
/// `tool_timeout`), unless the item sets its own `timeout_ms` or the builder another default.
/// Turning a default off takes [`allow_hanging_hooks`](Self::allow_hanging_hooks) /
/// [`allow_hanging_tools`](Self::allow_hanging_tools). **Sync hooks and tools cannot be cut
/// short**: they run to their end whatever the deadline.
///
/// Sources add up: every registered item ([`registered`](Self::registered)), the items under a
/// module path ([`registered_under`](Self::registered_under), a specialist), single items by full
/// path ([`item`](Self::item)), hand-built definitions ([`tool`](Self::tool),
/// [`pre_hook`](Self::pre_hook), …) and wrapped callers ([`wrap`](Self::wrap)). Then
/// [`only_tools`](Self::only_tools) / [`without_tools`](Self::without_tools) filter the tools: a
/// filtered tool is gone from the definitions and from the callable surface alike, and a
/// registered hook whose matched tools are all gone is not part of the dispatcher. A guard is
/// never dropped silently otherwise: a hook with an empty tool list, or one given explicitly
/// ([`pre_hook`](Self::pre_hook), [`post_hook`](Self::post_hook)) whose tools are all gone, fails
/// the build.
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
    settings: Settings,
}

/// The builder's settings, as it was told them (a deadline left untouched keeps its default):
/// what [`DispatcherBuilder::build`] resolves into the dispatcher's.
#[derive(Default)]
struct Settings {
    hook_runs: bool,
    span_content: bool,
    limits: Limits,
    timer: Option<Arc<dyn Timer>>,
    hook_timeout: DefaultDeadline,
    tool_timeout: DefaultDeadline,
    undeclared_writes: bool,
    approver: Option<Arc<dyn Approver>>,
    approval_timeout: DefaultDeadline,
    pending_ttl: Option<Duration>,
    max_concurrent_reads: Option<usize>,
    claim_lease: Option<Duration>,
    #[cfg(feature = "seal")]
    seal_keys: Option<crate::approval::SealKeys>,
}

/// A dispatcher-wide deadline as the builder was told: untouched (the documented default), set,
/// or turned off by the loudly named call.
#[derive(Default, Clone, Copy)]
enum DefaultDeadline {
    #[default]
    Default,
    Set(Duration),
    Off,
}

impl DefaultDeadline {
    /// The deadline in force: `default` unless set or turned off.
    fn resolve(self, default: Duration) -> Option<Duration> {
        match self {
            DefaultDeadline::Default => Some(default),
            DefaultDeadline::Set(d) => Some(d),
            DefaultDeadline::Off => None,
        }
    }
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

    /// Adds a hand-built PreToolUse hook. It must guard this dispatcher: `build()` fails when
    /// its tool list is empty ([`BuildProblem::EmptyMatcher`]) or names only tools this
    /// dispatcher does not keep ([`BuildProblem::MatchesNoKeptTool`]).
    pub fn pre_hook(mut self, hook: PreHookDef) -> Self {
        self.pre_hooks.push(hook);
        self
    }

    /// Adds a hand-built PostToolUse observer. As for [`pre_hook`](Self::pre_hook), `build()`
    /// fails when its tool list is empty or names only tools this dispatcher does not keep.
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

    /// Fills [`CallRecord::hooks`](crate::audit::CallRecord::hooks) for every observer: each
    /// PreToolUse hook run of a call, with its decision and duration. On by itself with an
    /// [`audit_log`](Self::audit_log) (whose lines list the runs in `hooks`) and for a call
    /// whose `tracing` span is enabled; off otherwise, because timing each hook costs two
    /// clock reads and a `Vec` per call that nobody would read (BENCHMARKS.md, "Spans and hook runs").
    pub fn record_hook_runs(mut self) -> Self {
        self.settings.hook_runs = true;
        self
    }

    /// Records each call's arguments and result on its `tracing` span, as the OpenTelemetry GenAI
    /// attributes `gen_ai.tool.call.arguments` (the input the tool got, as JSON text) and
    /// `gen_ai.tool.call.result` (the text the model read), after the audit log's
    /// [`Redaction`](crate::audit::Redaction) when there is an [`audit_log`](Self::audit_log). Off
    /// by default: inputs and results may hold personal data, and a span pipeline is often kept
    /// less carefully than an audit trail. (Without a subscriber that wants the span, nothing is
    /// recorded either way.)
    pub fn span_content(mut self) -> Self {
        self.settings.span_content = true;
        self
    }

    /// Sets the input and result bounds (default: [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.settings.limits = limits;
        self
    }

    /// Puts the dispatcher's deadlines on `timer` instead of the default one (`futures-timer`'s
    /// global helper thread, which needs no runtime): `TokioTimer` (facade feature `tokio`) on a
    /// tokio server, or a timer the test controls. See [`Timer`].
    pub fn timer(mut self, timer: impl Timer) -> Self {
        self.settings.timer = Some(Arc::new(timer));
        self
    }

    /// The deadline an async PreToolUse hook without its own `timeout_ms` gets when the builder
    /// sets none: 10 s. A policy check that takes longer is treated as down.
    pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);

    /// The deadline an async tool (or a wrapped caller's tool) without its own `timeout_ms` gets
    /// when the builder sets none: 60 s, the default request timeout of the MCP SDKs: long
    /// enough for a slow API call or report query, short enough that a backend that never
    /// answers does not keep the conversation (and the host's request) open forever.
    pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

    /// Sets the deadline of async PreToolUse hooks without their own `timeout_ms` (default
    /// [`DEFAULT_HOOK_TIMEOUT`](Self::DEFAULT_HOOK_TIMEOUT), 10 s). Past it the call is not run
    /// and the agent halts with `hook_timeout` (fail closed, never a denial).
    ///
    /// **Sync hooks cannot be cut short**: a deadline acts at an `.await` that yields, so a sync
    /// hook (or async code that blocks its thread) runs to its end whatever its deadline. Make a
    /// hook that waits on the network `async`.
    pub fn hook_timeout(mut self, deadline: Duration) -> Self {
        self.settings.hook_timeout = DefaultDeadline::Set(deadline);
        self
    }

    /// Turns off the default deadline of async PreToolUse hooks: a hook without its own
    /// `timeout_ms` that never answers (a policy service that hangs) then hangs its call
    /// forever, with nothing logged. Only for a host that bounds every call itself (it drops
    /// the call future at its own deadline: the call is then audited as `cancelled`). A hook's
    /// own `timeout_ms` still applies; a later [`hook_timeout`](Self::hook_timeout) turns the
    /// default deadline back on.
    pub fn allow_hanging_hooks(mut self) -> Self {
        self.settings.hook_timeout = DefaultDeadline::Off;
        self
    }

    /// Sets the deadline of async tools without their own `timeout_ms`, wrapped callers
    /// included (default [`DEFAULT_TOOL_TIMEOUT`](Self::DEFAULT_TOOL_TIMEOUT), 60 s). Past it
    /// the tool's future is dropped and the outcome is `tool_timeout`. Sync tools cannot be cut
    /// short (see [`hook_timeout`](Self::hook_timeout)).
    pub fn tool_timeout(mut self, deadline: Duration) -> Self {
        self.settings.tool_timeout = DefaultDeadline::Set(deadline);
        self
    }

    /// Turns off the default deadline of async tools: a tool without its own `timeout_ms` that
    /// never finishes then hangs its call forever. A tool's own `timeout_ms` still applies; a
    /// later [`tool_timeout`](Self::tool_timeout) turns the default deadline back on.
    pub fn allow_hanging_tools(mut self) -> Self {
        self.settings.tool_timeout = DefaultDeadline::Off;
        self
    }

    /// Counts every tool whose effect is not declared (no `#[tool(effect = …)]`, no
    /// [`ToolDef::effect`], no `readOnlyHint` in a wrapped caller's `annotations`) as a `write`
    /// tool: it then needs a PreToolUse hook, or a reason why not, like any declared write tool
    /// ([`BuildProblem::UnguardedWrite`]), and
    /// [`Dispatcher::tool_effect`](crate::Dispatcher::tool_effect) answers
    /// [`Effect::write()`] for it. Without this setting an undeclared tool is not checked.
    pub fn undeclared_effects_are_writes(mut self) -> Self {
        self.settings.undeclared_writes = true;
        self
    }

    /// Gives the dispatcher an approver: a call a PreToolUse hook asked about
    /// ([`Decision::Ask`](crate::Decision::Ask)) then waits for its answer inline, in
    /// [`Session::call`](crate::Session::call) and [`Session::respond`](crate::Session::respond)
    /// alike. Without one, `respond` pauses the turn
    /// ([`PendingTurn`](crate::approval::PendingTurn)) and `call` blocks the call. See
    /// [`Approver`].
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.settings.approver = Some(Arc::new(approver));
        self
    }

    /// The deadline of the approver's answer when the builder sets none: 5 minutes, long
    /// enough for a person at a screen to read and click, short enough that a forgotten prompt
    /// does not hold the call (and the host's request) open for good.
    pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

    /// Sets the deadline of the approver's answer (default
    /// [`DEFAULT_APPROVAL_TIMEOUT`](Self::DEFAULT_APPROVAL_TIMEOUT), 5 minutes), on the
    /// dispatcher's timer. No answer in time is a denial: the call is answered `blocked`.
    pub fn approval_timeout(mut self, deadline: Duration) -> Self {
        self.settings.approval_timeout = DefaultDeadline::Set(deadline);
        self
    }

    /// The time to live of a pending turn when the builder sets none: 24 hours.
    pub const DEFAULT_PENDING_TTL: Duration = Duration::from_secs(24 * 60 * 60);

    /// Sets how long a pending turn may wait for its decisions (default
    /// [`DEFAULT_PENDING_TTL`](Self::DEFAULT_PENDING_TTL), 24 hours), measured by the resuming
    /// session's context clock from the turn's `created_at`. Resumed later, its waiting calls
    /// are answered `blocked` ("waited … and expired"), not run.
    pub fn pending_ttl(mut self, ttl: Duration) -> Self {
        self.settings.pending_ttl = Some(ttl);
        self
    }

    /// How many read-only blocks of one message [`Session::respond`](crate::Session::respond)
    /// runs at once (default [`DEFAULT_MAX_CONCURRENT_READS`](Self::DEFAULT_MAX_CONCURRENT_READS),
    /// 8). Consecutive blocks whose tool is declared read-only (`#[tool(effect = "read")]`,
    /// [`ToolDef::effect`](crate::dispatch::ToolDef::effect)`(Effect::read())`, a wrapped caller's
    /// `readOnlyHint: true`) are polled together, without a runtime: their async tools' waits
    /// overlap (a sync tool runs inline, so it does not overlap). Their PreToolUse chains still run
    /// one at a time in `tool_use` order, each after the tool before it started; observers and
    /// audit lines follow `tool_use` order; a write, or a tool of undeclared effect, starts only
    /// after every earlier block finished. `1` runs every block one after another; `0` counts
    /// as `1`.
    pub fn max_concurrent_reads(mut self, n: usize) -> Self {
        self.settings.max_concurrent_reads = Some(n.max(1));
        self
    }

    /// The default of [`max_concurrent_reads`](Self::max_concurrent_reads): 8.
    pub const DEFAULT_MAX_CONCURRENT_READS: usize = 8;

    /// Sets how long a call's claim in the answer memory holds (default
    /// [`DEFAULT_CLAIM_LEASE`](Self::DEFAULT_CLAIM_LEASE), 15 minutes). A retry of a call whose
    /// claim is within its lease is refused as in progress; past it with no answer (the worker
    /// running it died), the retry is answered as interrupted and the call is never run again.
    /// Keep it above the longest a call can take (its hooks' and tool's deadlines, an inline
    /// approver's): a call still running past its lease is never run twice, but a retry may be
    /// told it was interrupted while it still runs.
    pub fn claim_lease(mut self, lease: Duration) -> Self {
        self.settings.claim_lease = Some(lease);
        self
    }

    /// The keys that seal the fields of a paused call's input that the audit log's
    /// [`Redaction`](crate::audit::Redaction) hides (feature `seal`): the
    /// [`PendingTurn`](crate::approval::PendingTurn) shows them as the audit line does and
    /// holds the real ones only sealed, under the key that seals; [`Session::resume`]
    /// opens them with any of the keys (see [`SealKeys`](crate::approval::SealKeys)). Without
    /// keys (the default), such a call does not pause: it is answered `blocked`, as where
    /// nobody can approve, its audit line's `detail` naming this method. Calls no field rule
    /// reaches into pause as they do without it.
    ///
    /// [`Session::resume`]: crate::Session::resume
    #[cfg(feature = "seal")]
    pub fn seal_keys(mut self, keys: crate::approval::SealKeys) -> Self {
        self.settings.seal_keys = Some(keys);
        self
    }

    /// The default of [`claim_lease`](Self::claim_lease): 15 minutes, above the default
    /// deadlines of a call together (10 s per hook, 5 minutes for an inline approver, 60 s for
    /// the tool).
    pub const DEFAULT_CLAIM_LEASE: Duration = Duration::from_secs(15 * 60);

    /// Checks everything and builds the dispatcher.
    ///
    /// # Errors
    /// A [`BuildError`] listing every problem found (see [`BuildProblem`]): two tools with one
    /// name; an invalid tool name or an empty description; a schema that is not valid JSON
    /// Schema (checked against its draft's meta-schema, every `$ref` pointing within it: a
    /// `#[schemars(schema_with = …)]` part, a wrapped caller's schema); a schema whose root is
    /// not an object;
    /// a property whose schema is a bare `true` or `{}`; an input example the tool's schema or
    /// input type refuses; a tool marked `strict = true` that a strict target cannot take
    /// strict, or such tools over a strict target's request limits together; a hook matcher or
    /// the audit log's redaction naming a tool registered nowhere; a hook matcher naming none; a
    /// hook given explicitly whose tools are all absent from this dispatcher; an item asking for
    /// a `State<T>` the builder was not given; a source or filter naming nothing; a `write` tool
    /// that no PreToolUse hook of this dispatcher guards and that gives no reason why it needs
    /// none, or gives a blank one.
    pub fn build(self) -> Result<Dispatcher, BuildError> {
        let DispatcherBuilder {
            sources,
            tools,
            pre_hooks,
            post_hooks,
            stop_hooks,
            callers,
            only,
            without,
            states,
            audit,
            settings,
        } = self;
        let mut problems = Problems::new(&states);

        // 1. The registered items the sources select, then the hand-built ones.
        let Items {
            tools,
            mut pre,
            mut post,
            stop,
            mut known_tools,
            explicit,
        } = Items::registered(&sources, &mut problems)
            .with(tools, pre_hooks, post_hooks, stop_hooks);
        // 2. to 7. The tools: from definitions and callers, filtered, each checked (its schema
        // against the meta-schema first) with its input examples, duplicates, the strict mode
        // asked for.
        let mut candidates = candidates(tools, &callers, &mut known_tools, &mut problems);
        let inputs = Inputs::of(&candidates);
        filter(&mut candidates, only.as_deref(), &without, &mut problems);
        for c in &mut candidates {
            let valid = check_schema(c, &mut problems);
            check_tool(c, valid, &mut problems);
            check_input_examples(c, &mut problems);
        }
        check_duplicates(&candidates, &mut problems);
        check_marked_strict(&candidates, &mut problems);
        // 8. to 10. The hooks: their matchers, which ones this dispatcher keeps, their needs.
        check_matchers(&pre, &post, &known_tools, &mut problems);
        check_redaction(audit.as_ref(), &known_tools, &mut problems);
        resolve_typed_hooks(&mut pre, &inputs, &mut problems);
        let kept = (explicit, &known_tools);
        keep_hooks(&mut pre, &mut post, &candidates, kept, &mut problems);
        check_hooks(&pre, &post, &stop, &mut problems);
        let undeclared_writes = settings.undeclared_writes;
        check_guarded_writes(&mut candidates, &pre, undeclared_writes, &mut problems);
        problems.check()?;

        // 12. Assemble.
        let tables = assemble(candidates, pre, post, stop, audit.as_ref());
        let inner = settings.resolve(tables, states, audit.as_ref());
        Ok(Dispatcher {
            inner: Arc::new(inner),
        })
    }
}

impl Settings {
    /// The dispatcher made of `tables` (its tools, chains, observers and hooks) with these
    /// settings resolved: the documented default for every deadline left untouched, the
    /// default timer when none was given, hook runs kept when an audit log reads them, span
    /// content redacted as the audit log redacts.
    fn resolve(self, tables: Inner, states: StateMap, audit: Option<&AuditLog>) -> Inner {
        type B = DispatcherBuilder;
        Inner {
            hook_runs: self.hook_runs || audit.is_some(),
            span_content: self
                .span_content
                .then(|| audit.map(|a| a.redaction().clone()).unwrap_or_default()),
            sealing: Sealing {
                redaction: audit.map(|a| a.redaction().clone()).unwrap_or_default(),
                #[cfg(feature = "seal")]
                keys: self.seal_keys,
            },
            states,
            limits: self.limits,
            timer: self.timer.unwrap_or_else(|| Arc::new(DefaultTimer)),
            hook_timeout: self.hook_timeout.resolve(B::DEFAULT_HOOK_TIMEOUT),
            tool_timeout: self.tool_timeout.resolve(B::DEFAULT_TOOL_TIMEOUT),
            approver: self.approver,
            approval_timeout: self.approval_timeout.resolve(B::DEFAULT_APPROVAL_TIMEOUT),
            pending_ttl: self.pending_ttl.unwrap_or(B::DEFAULT_PENDING_TTL),
            max_concurrent_reads: self
                .max_concurrent_reads
                .unwrap_or(B::DEFAULT_MAX_CONCURRENT_READS),
            claim_lease: self.claim_lease.unwrap_or(B::DEFAULT_CLAIM_LEASE),
            ..tables
        }
    }
}

impl Dispatcher {
    /// Starts an empty builder: add registered items ([`DispatcherBuilder::registered`],
    /// [`DispatcherBuilder::registered_under`], [`DispatcherBuilder::item`]) or hand-built ones.
    pub fn builder() -> DispatcherBuilder {
        DispatcherBuilder::default()
    }
}

/// Every problem `build()` finds, in the order found (one collector for every step, so the
/// error lists them all at once).
struct Problems<'b> {
    found: Vec<BuildProblem>,
    /// The states the builder was given.
    states: &'b StateMap,
}

impl<'b> Problems<'b> {
    fn new(states: &'b StateMap) -> Self {
        Problems {
            found: Vec::new(),
            states,
        }
    }

    fn push(&mut self, problem: BuildProblem) {
        self.found.push(problem);
    }

    /// `item` takes these states: each must have been given.
    fn need_states(&mut self, item: &str, states: &[StateKey]) {
        for key in states {
            if !self.states.contains(key) {
                self.push(BuildProblem::MissingState {
                    item: item.to_owned(),
                    type_name: key.type_name(),
                });
            }
        }
    }

    /// The end of the checks: every problem found, or none.
    fn check(self) -> Result<(), BuildError> {
        if self.found.is_empty() {
            Ok(())
        } else {
            Err(BuildError {
                problems: self.found,
            })
        }
    }
}

/// Every tool and hook definition the sources give, before any filter.
struct Items {
    tools: Vec<ToolDef>,
    pre: Vec<PreHookDef>,
    post: Vec<PostHookDef>,
    stop: Vec<StopHookDef>,
    /// Every tool name registered or given anywhere (a matcher may name a tool that this
    /// dispatcher filters out, or that only another dispatcher takes).
    known_tools: Names,
    /// Where the hooks given to the builder explicitly start in `pre` and `post` (the
    /// registered ones come first).
    explicit: Explicit,
}

/// The positions in `Items::pre` and `Items::post` of the first hook given to the builder
/// explicitly (`.pre_hook(…)`, `.post_hook(…)`).
#[derive(Clone, Copy, Default)]
struct Explicit {
    pre: usize,
    post: usize,
}

impl Items {
    /// Step 1: the registered items the sources select, each once; a source that selects
    /// nothing is a problem.
    fn registered(sources: &[Source], problems: &mut Problems<'_>) -> Items {
        let mut items = Items {
            tools: Vec::new(),
            pre: Vec::new(),
            post: Vec::new(),
            stop: Vec::new(),
            known_tools: Names::default(),
            explicit: Explicit::default(),
        };
        let mut taken = Names::default();
        // Sorted by path: inventory's order is the link order, which varies between builds.
        let mut all: Vec<_> = registered().collect();
        sort_by(&mut all, |a, b| a.path.cmp(b.path));
        for reg in &all {
            if let RegistrationKind::Tool { name, .. } = reg.kind {
                items.known_tools.insert(name);
            }
        }
        for source in sources {
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
                    RegistrationKind::Tool { make, .. } => items.tools.push(make()),
                    RegistrationKind::PreHook(make) => items.pre.push(make()),
                    RegistrationKind::PostHook(make) => items.post.push(make()),
                    RegistrationKind::StopHook(make) => items.stop.push(make()),
                }
            }
        }
        items
    }

    /// The hand-built definitions, after the registered ones.
    fn with(
        mut self,
        tools: Vec<ToolDef>,
        pre: Vec<PreHookDef>,
        post: Vec<PostHookDef>,
        stop: Vec<StopHookDef>,
    ) -> Items {
        for t in &tools {
            self.known_tools.insert(&t.name);
        }
        self.explicit = Explicit {
            pre: self.pre.len(),
            post: self.post.len(),
        };
        self.tools.extend(tools);
        self.pre.extend(pre);
        self.post.extend(post);
        self.stop.extend(stop);
        self
    }
}

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// A tool of the dispatcher to be, from a definition or a wrapped caller.
struct Candidate {
    name: Cow<'static, str>,
    path: Cow<'static, str>,
    description: Cow<'static, str>,
    /// Canonical (a caller's schema is used as given).
    schema: Value,
    /// As generated (schemars' form, or the caller's), checked against the meta-schema.
    raw: Value,
    /// What inputs are validated or explained against (`ToolEntry::validation`).
    validation: Value,
    /// A wrapped caller's schema compiled by `boon` (step 4).
    #[cfg(feature = "full-validation")]
    full: Option<crate::schema::full::Compiled>,
    /// MCP's `outputSchema`, when the tool has one.
    output: Option<Value>,
    backend: Backend,
    states: Vec<StateKey>,
    timeout: Option<Duration>,
    /// `strict = true` / `false`, or neither.
    strict: Option<bool>,
    input_examples: Vec<Value>,
    /// As declared; after step 11, as in force (an undeclared one may count as `write`).
    effect: Option<Effect>,
    /// Why a write tool needs no guard.
    unguarded: Option<Cow<'static, str>>,
    /// The argument type (`None` for a wrapped caller's tool, whose input stays JSON).
    input: Option<InputType>,
}

/// Step 2: the candidate tools, the definitions' then the callers' (whose names become known;
/// a caller's `input_examples` are kept, and a value there that is not an array is a problem).
fn candidates(
    tools: Vec<ToolDef>,
    callers: &[Arc<dyn ToolCaller>],
    known_tools: &mut Names,
    problems: &mut Problems<'_>,
) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = tools.into_iter().map(Candidate::of_definition).collect();
    for (ci, caller) in callers.iter().enumerate() {
        for def in caller.tool_definitions() {
            let candidate = Candidate::of_caller(ci, caller, &def, problems);
            known_tools.insert(&candidate.name);
            candidates.push(candidate);
        }
    }
    candidates
}

impl Candidate {
    /// A tool from its definition: its schema canonical, its validation schema closed unless
    /// it allows unknown fields, its MCP output schema from its output type.
    fn of_definition(t: ToolDef) -> Candidate {
        Candidate {
            schema: canonicalize(&t.schema, !t.additional_properties),
            validation: closed_form(&t.schema, !t.additional_properties),
            #[cfg(feature = "full-validation")]
            full: None,
            raw: t.schema,
            output: t.output_schema.as_ref().and_then(mcp::output_schema),
            name: t.name,
            path: t.path,
            description: t.description,
            backend: Backend::Local(t.imp),
            states: t.states,
            timeout: t.timeout,
            strict: t.strict,
            input_examples: t.input_examples,
            effect: t.effect,
            unguarded: t.unguarded,
            input: Some(t.input),
        }
    }

    /// A tool of the wrapped caller number `ci`, from the definition it gives (`{"name",
    /// "description", "input_schema", "input_examples", "annotations", "unguarded"}`): its
    /// schema used as given, its effect read from MCP's annotations, its path
    /// `<wrapped caller #ci>::name`. `input_examples` that are not an array is a problem.
    fn of_caller(
        ci: usize,
        caller: &Arc<dyn ToolCaller>,
        def: &Value,
        problems: &mut Problems<'_>,
    ) -> Candidate {
        let text = |key: &str| {
            def.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let name = text("name");
        let description = text("description");
        let schema = def.get("input_schema").cloned().unwrap_or(Value::Null);
        let path = format!("<wrapped caller #{ci}>::{name}");
        let input_examples = match def.get("input_examples") {
            None => Vec::new(),
            Some(Value::Array(examples)) => examples.clone(),
            Some(other) => {
                problems.push(BuildProblem::InvalidInputExample {
                    tool: name.clone(),
                    path: path.clone(),
                    index: None,
                    field: String::new(),
                    problem: format!(
                        "it must be an array of input objects, found a JSON {}",
                        crate::content::de::kind_of(other)
                    ),
                });
                Vec::new()
            }
        };
        let effect = def
            .get("annotations")
            .and_then(Effect::from_mcp_annotations);
        let unguarded = def
            .get("unguarded")
            .and_then(Value::as_str)
            .map(|r| Cow::Owned(r.to_owned()));
        Candidate {
            path: Cow::Owned(path),
            name: Cow::Owned(name),
            description: Cow::Owned(description),
            raw: schema.clone(),
            validation: schema.clone(),
            #[cfg(feature = "full-validation")]
            full: None,
            schema,
            output: None,
            backend: Backend::Caller {
                caller: Arc::clone(caller),
            },
            states: Vec::new(),
            timeout: None,
            strict: None,
            input_examples,
            effect,
            unguarded,
            input: None,
        }
    }
}

/// Step 3: `only_tools` and `without_tools`; a name no candidate has is a problem.
fn filter(
    candidates: &mut Vec<Candidate>,
    only: Option<&[String]>,
    without: &[String],
    problems: &mut Problems<'_>,
) {
    let mut provided = Names::default();
    for c in candidates.iter() {
        provided.insert(&c.name);
    }
    if let Some(only) = only {
        for n in only {
            if !provided.contains(n) {
                problems.push(BuildProblem::UnknownFilterTool(n.clone()));
            }
        }
        candidates.retain(|c| only.iter().any(|n| *n == c.name));
    }
    for n in without {
        if !provided.contains(n) {
            problems.push(BuildProblem::UnknownFilterTool(n.clone()));
        }
    }
    candidates.retain(|c| !without.iter().any(|n| *n == c.name));
}

/// Step 4: one kept tool's schema against the JSON Schema meta-schema of its draft
/// (`schema::meta`; with the `full-validation` feature, also compiled by `boon`, which keeps a
/// wrapped caller's compiled schema for validating its inputs). Every tool's schema is checked:
/// a derived one may hold a `#[schemars(schema_with = …)]` part, and a wrapped caller's (a
/// remote server's) is whatever it sent. `false` when the schema is invalid (each fault is an
/// [`BuildProblem::InvalidSchema`]); the tool's other schema checks are then skipped, since they
/// would read a schema that means nothing.
fn check_schema(c: &mut Candidate, problems: &mut Problems<'_>) -> bool {
    let (draft, mut faults) = meta::check(&c.raw);
    #[cfg(feature = "full-validation")]
    if faults.is_empty() {
        match crate::schema::full::compile(&c.raw) {
            Ok(compiled) => {
                if matches!(c.backend, Backend::Caller { .. }) {
                    c.full = Some(compiled);
                }
            }
            Err(f) => faults = f,
        }
    }
    let valid = faults.is_empty();
    for fault in faults.drain(..) {
        problems.push(BuildProblem::InvalidSchema {
            tool: c.name.to_string(),
            path: c.path.to_string(),
            draft: draft.name(),
            keyword: fault.pointer,
            reason: fault.reason,
        });
    }
    valid
}

/// Step 4: one kept tool on its own: its name, description, schema (when it is valid JSON
/// Schema) and states.
fn check_tool(c: &Candidate, schema_valid: bool, problems: &mut Problems<'_>) {
    let tool = || c.name.to_string();
    let path = || c.path.to_string();
    if !is_valid_tool_name(&c.name) {
        problems.push(BuildProblem::InvalidToolName {
            tool: tool(),
            path: path(),
        });
    }
    if c.description.trim().is_empty() {
        problems.push(BuildProblem::NoDescription {
            tool: tool(),
            path: path(),
        });
    }
    if let Some(found) = root_problem(&c.schema).filter(|_| schema_valid) {
        problems.push(BuildProblem::RootNotObject {
            tool: tool(),
            path: path(),
            found,
        });
    }
    let open = if schema_valid {
        open_properties(&c.schema)
    } else {
        Vec::new()
    };
    for property in open {
        problems.push(BuildProblem::OpenProperty {
            tool: tool(),
            path: path(),
            property,
        });
    }
    problems.need_states(&c.path, &c.states);
}

/// Step 5: a kept tool's input examples, each checked as a call's input is (`examples.rs`).
fn check_input_examples(c: &Candidate, problems: &mut Problems<'_>) {
    let imp = match &c.backend {
        Backend::Local(imp) => Some(imp.as_ref()),
        Backend::Caller { .. } => None,
    };
    for p in examples::check(&c.schema, &c.validation, imp, &c.input_examples) {
        problems.push(BuildProblem::InvalidInputExample {
            tool: c.name.to_string(),
            path: c.path.to_string(),
            index: Some(p.index),
            field: p.field,
            problem: p.problem,
        });
    }
}

/// Step 6: two kept tools with one name, named by their sorted paths.
fn check_duplicates(candidates: &[Candidate], problems: &mut Problems<'_>) {
    let mut named: Vec<(&str, &str)> = Vec::with_capacity(candidates.len());
    for c in candidates {
        named.push((&c.name, &c.path));
    }
    sort_by(&mut named, |a, b| a.cmp(b));
    let mut rest = named.as_slice();
    while let Some(&(name, _)) = rest.first() {
        let same = rest.iter().take_while(|(n, _)| *n == name).count();
        if same > 1 {
            problems.push(BuildProblem::DuplicateTool {
                tool: name.to_owned(),
                paths: rest[..same].iter().map(|(_, p)| (*p).to_owned()).collect(),
            });
        }
        rest = &rest[same..];
    }
}

/// Step 7: the tools marked `strict = true`, for every strict target: each one's schema fits the
/// target's strict subset and its limits on one schema, and together they fit its limits on a
/// request (a marked tool is never emitted non-strict, so the dispatcher cannot be built
/// otherwise). Tools in name order, targets in [`Provider::ALL`] order.
fn check_marked_strict(candidates: &[Candidate], problems: &mut Problems<'_>) {
    let mut marked: Vec<(&Candidate, String)> = candidates
        .iter()
        .filter(|c| c.strict == Some(true))
        .map(|c| (c, unwrap_doc(&c.description)))
        .collect();
    if marked.is_empty() {
        return;
    }
    sort_by(&mut marked, |a, b| a.0.name.cmp(&b.0.name));
    for provider in Provider::ALL.into_iter().filter(|p| p.is_strict()) {
        let sources = marked.iter().map(|(c, description)| ToolSource {
            name: &c.name,
            description,
            canonical: &c.schema,
            strict: c.strict,
            input_examples: &c.input_examples,
            output_schema: c.output.as_ref(),
        });
        let (not_strict, over) = marked_strict_problems(provider, sources);
        for (i, reason) in not_strict {
            let c = marked[i].0;
            problems.push(BuildProblem::CannotBeStrict {
                tool: c.name.to_string(),
                path: c.path.to_string(),
                provider,
                reason,
            });
        }
        if let Some(reason) = over {
            problems.push(BuildProblem::StrictLimit {
                provider,
                tools: marked.iter().map(|(c, _)| c.name.to_string()).collect(),
                reason,
            });
        }
    }
}

/// Step 8: every hook's matcher names at least one tool, and every tool it names is known
/// somewhere.
fn check_matchers(
    pre: &[PreHookDef],
    post: &[PostHookDef],
    known_tools: &Names,
    problems: &mut Problems<'_>,
) {
    let matchers = pre
        .iter()
        .map(|h| (&h.path, &h.matcher))
        .chain(post.iter().map(|h| (&h.path, &h.matcher)));
    for (path, matcher) in matchers {
        if let Matcher::Tools(names) = matcher {
            if names.is_empty() {
                problems.push(BuildProblem::EmptyMatcher {
                    hook: path.to_string(),
                });
            }
            for n in names {
                if !known_tools.contains(n.as_ref()) {
                    problems.push(BuildProblem::UnknownMatcherTool {
                        hook: path.to_string(),
                        tool: n.to_string(),
                    });
                }
            }
        }
    }
}

/// Step 8 too: every tool the audit log's redaction names is known somewhere (a misspelled tool
/// would leave its fields in clear).
fn check_redaction(audit: Option<&AuditLog>, known_tools: &Names, problems: &mut Problems<'_>) {
    for tool in audit.into_iter().flat_map(|a| a.redaction().tools()) {
        if !known_tools.contains(tool) {
            problems.push(BuildProblem::UnknownRedactionTool(tool.to_owned()));
        }
    }
}

/// Each candidate's input type by tool name, sorted by name (the last candidate of a name
/// wins, as a map would keep it).
struct Inputs(Vec<(String, Option<InputType>)>);

impl Inputs {
    fn of(candidates: &[Candidate]) -> Inputs {
        let mut all: Vec<(String, Option<InputType>)> = Vec::with_capacity(candidates.len());
        for c in candidates {
            all.push((c.name.to_string(), c.input));
        }
        sort_by(&mut all, |a, b| a.0.cmp(&b.0));
        let mut unique: Vec<(String, Option<InputType>)> = Vec::with_capacity(all.len());
        for (name, input) in all {
            match unique.last_mut() {
                Some(last) if last.0 == name => last.1 = input,
                _ => unique.push((name, input)),
            }
        }
        Inputs(unique)
    }

    fn get(&self, name: &str) -> Option<&Option<InputType>> {
        let at = self
            .0
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        Some(&self.0[at].1)
    }
}

/// Step 8 too: a typed PreToolUse hook's tools follow from its input type. Without `tools`, it
/// matches every tool of the builder's sources (before the tool filters) that takes its type,
/// and none is a problem; with `tools`, every named tool of those sources must take its type.
/// (Step 9 then keeps or drops it like any hook.)
fn resolve_typed_hooks(pre: &mut [PreHookDef], inputs: &Inputs, problems: &mut Problems<'_>) {
    for hook in pre.iter_mut() {
        let Some(wanted) = hook.input else {
            continue;
        };
        match &hook.matcher {
            Matcher::All => {
                let names: Vec<Cow<'static, str>> = inputs
                    .0
                    .iter()
                    .filter(|(_, input)| input.is_some_and(|i| i.id == wanted.id))
                    .map(|(name, _)| Cow::Owned(name.clone()))
                    .collect();
                if names.is_empty() {
                    problems.push(BuildProblem::NoToolTakesHookInput {
                        hook: hook.path.to_string(),
                        input: wanted.name.to_owned(),
                    });
                }
                hook.matcher = Matcher::Tools(names);
            }
            Matcher::Tools(names) => {
                for name in names {
                    let Some(input) = inputs.get(name.as_ref()) else {
                        continue;
                    };
                    if input.is_some_and(|i| i.id == wanted.id) {
                        continue;
                    }
                    problems.push(BuildProblem::HookInputMismatch {
                        hook: hook.path.to_string(),
                        tool: name.to_string(),
                        input: wanted.name.to_owned(),
                        tool_input: match input {
                            Some(i) => format!("`{}`", i.name),
                            None => "JSON (a wrapped caller's tool)".to_owned(),
                        },
                    });
                }
            }
        }
    }
}

/// Step 9: the hooks this dispatcher keeps: those matching every tool, or one it kept. A
/// registered hook whose tools were all filtered out is left out silently (that is how a
/// specialist is built); one given to the builder explicitly is a problem, since the caller
/// meant it to guard this dispatcher (only the tools known somewhere are named: an unknown one
/// is already a problem of step 8, an empty list too).
fn keep_hooks(
    pre: &mut Vec<PreHookDef>,
    post: &mut Vec<PostHookDef>,
    kept: &[Candidate],
    (explicit, known_tools): (Explicit, &Names),
    problems: &mut Problems<'_>,
) {
    let mut kept_names = Names::default();
    for c in kept {
        kept_names.insert(&c.name);
    }
    let kept = kept_names;
    let keeps = |m: &Matcher| match m {
        Matcher::All => true,
        Matcher::Tools(names) => names.iter().any(|n| kept.contains(n.as_ref())),
    };
    let given = pre
        .get(explicit.pre..)
        .unwrap_or_default()
        .iter()
        .map(|h| (&h.path, &h.matcher))
        .chain(
            post.get(explicit.post..)
                .unwrap_or_default()
                .iter()
                .map(|h| (&h.path, &h.matcher)),
        );
    for (path, matcher) in given {
        let Matcher::Tools(names) = matcher else {
            continue;
        };
        let known: Vec<String> = names
            .iter()
            .filter(|n| known_tools.contains(n.as_ref()))
            .map(|n| n.to_string())
            .collect();
        if !known.is_empty() && !keeps(matcher) {
            problems.push(BuildProblem::MatchesNoKeptTool {
                hook: path.to_string(),
                tools: known,
            });
        }
    }
    pre.retain(|h| keeps(&h.matcher));
    post.retain(|h| keeps(&h.matcher));
}

/// Step 10: the kept hooks' states.
fn check_hooks(
    pre: &[PreHookDef],
    post: &[PostHookDef],
    stop: &[StopHookDef],
    problems: &mut Problems<'_>,
) {
    for h in pre {
        problems.need_states(&h.path, &h.states);
    }
    for h in post {
        problems.need_states(&h.path, &h.states);
    }
    for h in stop {
        problems.need_states(&h.path, &h.states);
    }
}

/// Step 11: every `write` tool is guarded by a PreToolUse hook this dispatcher kept (one
/// matching every tool counts), or says why it needs none, in words. With
/// `undeclared_effects_are_writes`, a tool whose effect is undeclared becomes `write` here.
fn check_guarded_writes(
    candidates: &mut [Candidate],
    pre: &[PreHookDef],
    undeclared_writes: bool,
    problems: &mut Problems<'_>,
) {
    for c in candidates {
        let declared = c.effect.is_some();
        if !declared && undeclared_writes {
            c.effect = Some(Effect::write());
        }
        if !c.effect.is_some_and(|e| e.is_write()) {
            continue;
        }
        match c.unguarded.as_deref() {
            Some(reason) if reason.trim().is_empty() => {
                problems.push(BuildProblem::UnguardedWithoutReason {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                });
            }
            Some(_) => {}
            None if pre.iter().any(|h| h.matcher.matches(&c.name)) => {}
            None => problems.push(BuildProblem::UnguardedWrite {
                tool: c.name.to_string(),
                path: c.path.to_string(),
                declared,
            }),
        }
    }
}

/// Step 12, once every check passed: hooks in run order (the audit log last), tools sorted by
/// name with their chains and observers resolved, the definitions rendered; default settings,
/// which `build()` replaces with the builder's.
/// A kept tool as the dispatcher holds it (its chain and observers by index, its unknown-field
/// check, its description unwrapped), and its Anthropic `tools` entry.
fn tool_entry(c: Candidate, pre: &[PreHookDef], post: &[PostHookDef]) -> (ToolEntry, Value) {
    let description = unwrap_doc(&c.description);
    let definition = anthropic_entry(&c.name, &description, &c.schema, &c.input_examples);
    let tool = ToolEntry {
        description,
        chain: matching(pre, |h| h.matcher.matches(&c.name)),
        observers: matching(post, |o| o.matcher.matches(&c.name)),
        fields: FieldCheck::from_schema(&c.schema),
        canonical: c.schema,
        validation: c.validation,
        #[cfg(feature = "full-validation")]
        full: c.full,
        output_schema: c.output,
        name: c.name,
        path: c.path,
        backend: c.backend,
        timeout: c.timeout,
        strict: c.strict,
        input_examples: c.input_examples,
        effect: c.effect,
        unguarded: c.unguarded,
    };
    (tool, definition)
}

fn assemble(
    mut candidates: Vec<Candidate>,
    mut pre: Vec<PreHookDef>,
    mut post: Vec<PostHookDef>,
    mut stop: Vec<StopHookDef>,
    audit: Option<&AuditLog>,
) -> Inner {
    sort_by(&mut pre, |a, b| {
        (a.order, a.path.as_ref()).cmp(&(b.order, b.path.as_ref()))
    });
    sort_by(&mut post, |a, b| a.path.cmp(&b.path));
    sort_by(&mut stop, |a, b| a.path.cmp(&b.path));
    if let Some(log) = audit {
        post.push(log.observer());
        stop.push(log.stop_hook());
    }
    sort_by(&mut candidates, |a, b| a.name.cmp(&b.name));
    let mut tools = Vec::with_capacity(candidates.len());
    let mut definitions = Vec::with_capacity(candidates.len());
    for c in candidates {
        let (tool, definition) = tool_entry(c, &pre, &post);
        tools.push(tool);
        definitions.push(definition);
    }
    let open_chain = matching(&pre, |h| {
        matches!(h.matcher, Matcher::All) && h.input.is_none()
    });
    let available = tools
        .iter()
        .map(|t| t.name.as_ref())
        .collect::<Vec<_>>()
        .join(", ");
    Inner {
        by_name: NameIndex::new(tools.iter().map(|t| t.name.as_ref())),
        tools,
        definitions,
        pre_hooks: pre,
        observers_sync: post.iter().all(|o| o.imp.is_sync()),
        hook_runs: false,
        span_content: None,
        sealing: Sealing::default(),
        observers_of_unknown: matching(&post, |o| matches!(o.matcher, Matcher::All)),
        open_chain,
        observers: post,
        stop_hooks: stop,
        states: StateMap::default(),
        limits: Limits::default(),
        timer: Arc::new(DefaultTimer),
        hook_timeout: None,
        tool_timeout: None,
        approver: None,
        approval_timeout: None,
        pending_ttl: DispatcherBuilder::DEFAULT_PENDING_TTL,
        max_concurrent_reads: DispatcherBuilder::DEFAULT_MAX_CONCURRENT_READS,
        claim_lease: DispatcherBuilder::DEFAULT_CLAIM_LEASE,
        available,
        rendered: Default::default(),
    }
}

/// The indices of the `items` for which `keep` holds, in order.
fn matching<T>(items: &[T], keep: impl Fn(&T) -> bool) -> Box<[usize]> {
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| keep(item))
        .map(|(i, _)| i)
        .collect()
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
    /// A schema toolgate did not derive (a `#[schemars(schema_with = …)]` part, a wrapped
    /// caller's `input_schema`) is not valid JSON Schema: one problem per fault, at its keyword.
    #[error(
        "tool `{tool}` ({path}) has an input schema that is not valid {draft} {}: {reason}; fix the schema (its #[schemars(schema_with = …)] function, or the wrapped caller's definition)",
        keyword_place(.keyword)
    )]
    InvalidSchema {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The draft the schema was checked as (its `$schema`; `JSON Schema 2020-12` when it
        /// names none).
        draft: &'static str,
        /// Where, as a JSON pointer into the schema (`/properties/unit/type`; empty for the
        /// root).
        keyword: String,
        /// Why (``the string "strin" is not a JSON Schema type (one of `array`, …)``).
        reason: String,
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
    /// An input example a tool would refuse, or a wrapped caller's `input_examples` that is not
    /// an array (the API refuses a request with an invalid example: "Define tools").
    #[error(
        "tool `{tool}` ({path}): {} is invalid{}: {problem}; fix the example or remove it (the API refuses a request whose input_examples do not match the input_schema)",
        example_name(*index),
        crate::texts::at_path(field)
    )]
    InvalidInputExample {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The example's position in `input_examples`, from 0; `None` when `input_examples`
        /// itself is not an array.
        index: Option<usize>,
        /// Where in the example (`options.filters[2]`; empty at the top level).
        field: String,
        /// What is wrong there, as the model would be told for a call with this input.
        problem: String,
    },
    /// A tool marked `strict = true` whose schema a strict target cannot take strict.
    #[error(
        "tool `{tool}` ({path}) is marked `strict = true`, but {provider} cannot take it strict: {reason}; remove `strict = true` (the tool is then sent non-strict where it must be) or change its input type"
    )]
    CannotBeStrict {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The strict target.
        provider: Provider,
        /// Why (``property `labels` is a map …``).
        reason: String,
    },
    /// The tools marked `strict = true` are over a strict target's limits on one request's
    /// strict tools together.
    #[error(
        "the tools marked `strict = true` ({}) cannot all be strict for {provider}: {reason}; mark fewer tools `strict = true` or make parameters required",
        tools.join(", ")
    )]
    StrictLimit {
        /// The strict target.
        provider: Provider,
        /// Every tool marked `strict = true`, by name.
        tools: Vec<String>,
        /// Which limits, by how much (``together they hold 30 optional parameters (Anthropic
        /// strict tool use allows 24 in one request)``).
        reason: String,
    },
    /// A hook's matcher names a tool that no source registers.
    #[error("hook `{hook}` matches tool `{tool}`, which is registered nowhere")]
    UnknownMatcherTool {
        /// The hook's full path.
        hook: String,
        /// The unknown tool name.
        tool: String,
    },
    /// The audit log's [`Redaction`](crate::audit::Redaction) has a field rule for a tool that no
    /// source registers (its fields would be left in clear).
    #[error(
        "the audit log's redaction names tool `{0}`, which is registered nowhere (use \"*\" for every tool)"
    )]
    UnknownRedactionTool(String),
    /// A hook's tool list is empty (`PreHookDef::tools([])`, a config file with an empty
    /// list): it would match no tool, so it would guard (or observe) nothing.
    #[error(
        "hook `{hook}` has an empty tool list, so it would never run: name at least one tool, or \
         leave the list out to match every tool"
    )]
    EmptyMatcher {
        /// The hook's full path.
        hook: String,
    },
    /// A hook given to the builder explicitly (`.pre_hook(…)`, `.post_hook(…)`) matches only
    /// tools this dispatcher does not have (filtered out, or from another dispatcher): it would
    /// never run. (A registered hook in that case is simply left out: that is how a specialist
    /// is built.)
    #[error(
        "hook `{hook}` was given to this builder, but none of its tools ({}) is part of this \
         dispatcher, so it would never run: keep one of them, or do not give this builder the \
         hook", tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
    )]
    MatchesNoKeptTool {
        /// The hook's full path.
        hook: String,
        /// The tools it matches (those registered somewhere).
        tools: Vec<String>,
    },
    /// A `write` tool (declared so, or undeclared under
    /// [`DispatcherBuilder::undeclared_effects_are_writes`]) that no PreToolUse hook of this
    /// dispatcher guards and that does not say why it needs none.
    #[error(
        "tool `{tool}` ({path}) {}, but no PreToolUse hook of this dispatcher guards it: add a \
         #[pre_hook] whose `tools` names it, or say why it needs none with \
         #[tool(effect = \"write\", unguarded = \"…\")] (ToolDef::unguarded)",
        if *declared { "writes (`effect = \"write\"`)" } else {
            "declares no effect, which this builder counts as a write (undeclared_effects_are_writes)"
        }
    )]
    UnguardedWrite {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// Whether the tool declared `write` (`false`: undeclared, counted as a write).
        declared: bool,
    },
    /// A `write` tool whose reason for needing no guard is blank.
    #[error(
        "tool `{tool}` ({path}) says it needs no PreToolUse hook but gives no reason: write why \
         in `unguarded = \"…\"`, or guard it with a #[pre_hook]"
    )]
    UnguardedWithoutReason {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// A typed PreToolUse hook (one that takes `&T`) whose input type no tool of this builder's
    /// sources takes: it would guard nothing.
    #[error(
        "hook `{hook}` takes `&{input}`, but no tool of this builder takes `{input}` as its input, \
         so it would guard nothing: take the input type of the tool you mean (a flat tool names \
         its input with #[tool(input = Name)]), or add that tool"
    )]
    NoToolTakesHookInput {
        /// The hook's full path.
        hook: String,
        /// The type the hook takes.
        input: String,
    },
    /// A typed PreToolUse hook whose `tools` names a tool whose input is another type.
    #[error(
        "hook `{hook}` takes `&{input}`, but its tool `{tool}` takes {tool_input}: name only \
         tools whose input is `{input}`, or take `&ToolUse` to read any tool's input"
    )]
    HookInputMismatch {
        /// The hook's full path.
        hook: String,
        /// The tool named in its `tools`.
        tool: String,
        /// The type the hook takes.
        input: String,
        /// The tool's input type, in backticks, or what it is instead.
        tool_input: String,
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
}

/// How a build problem names an example: `` `input_examples[2]` ``, or `` `input_examples` ``.
fn example_name(index: Option<usize>) -> String {
    match index {
        Some(i) => format!("`input_examples[{i}]`"),
        None => "`input_examples`".to_owned(),
    }
}

/// `at `/properties/unit/type``, or `at its root`.
fn keyword_place(pointer: &str) -> String {
    if pointer.is_empty() {
        "at its root".into()
    } else {
        format!("at `{pointer}`")
    }
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
