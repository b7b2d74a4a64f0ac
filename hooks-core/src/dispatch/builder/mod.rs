//! [`DispatcherBuilder`]: where a dispatcher's tools and hooks come from, which it keeps, and
//! the checks that run once at start-up ([`BuildError`] lists every problem at once).
//!
//! [`DispatcherBuilder::build`] runs twelve steps in order, each one pushing what it finds to one
//! collector, so the error lists every problem; the dispatcher is assembled only when none was
//! found.
//!
//! The steps sit in files by what they do (ARCHITECTURE.md, "Parts": `dispatch/`): the items and
//! candidate tools (`sources.rs`, steps 1 to 3), the start-up checks (`checks.rs`, steps 4 to
//! 11), the dispatcher's tables (`assemble.rs`, step 12), and the problems they find
//! (`problems.rs`).

mod assemble;
mod checks;
mod problems;
mod sources;

use std::sync::Arc;
use std::time::Duration;

use crate::approval::ask::Approver;
use crate::approval::seal::Sealing;
use crate::audit::AuditLog;
use crate::base::timer::{DefaultTimer, Timer};
use crate::dispatch::dispatcher::Dispatcher;
use crate::hook::caller::ToolCaller;
use crate::hook::definitions::{PostHookDef, PreHookDef, StopHookDef, ToolDef};
use crate::hook::state::StateMap;
use crate::pipeline::inner::Inner;
use crate::pipeline::limits::Limits;

use assemble::assemble;
use checks::{
    Inputs, check_duplicates, check_guarded_writes, check_hooks, check_input_examples,
    check_marked_strict, check_matchers, check_redaction, check_schema, check_tool, keep_hooks,
    resolve_typed_hooks,
};
use problems::Problems;
pub use problems::{BuildError, BuildProblem};
use sources::{Items, candidates, filter};

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
    fixed_claim_lease: Option<Duration>,
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
    /// [`Effect::write()`](crate::dispatch::Effect::write) for it. Without this setting an
    /// undeclared tool is not checked.
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

    /// Sets how long a call's claim in the answer memory holds after its last renewal, in a
    /// store that renews it while the call runs ([`AnswerStore::renews`]: the SQLite and
    /// PostgreSQL stores, a shared [`MemoryAnswerStore`]; default
    /// [`DEFAULT_CLAIM_LEASE`](Self::DEFAULT_CLAIM_LEASE), 15 s). The store renews it every
    /// third of it, by its own clock, on a thread of its own, while the call's hooks, approver
    /// and tool run, so a call may take as long as its deadlines allow. A retry of a call whose
    /// claim is within its lease is refused as in progress; past it with no answer (the worker
    /// running it died, or could not reach the store to renew), the retry is answered as
    /// interrupted and the call is never run again; a late answer of the worker that lost it
    /// is refused by the store, and that worker answers its host as the store does. So this is
    /// how long a dead worker's calls wait (from its last renewal). Turns taken by
    /// [`Session::resume_from`](crate::Session::resume_from) are held the same way. Keep it a
    /// few times the store's worst latency: a renewal that fails stops the renewals.
    ///
    /// [`AnswerStore::renews`]: crate::store::AnswerStore::renews
    /// [`MemoryAnswerStore`]: crate::store::MemoryAnswerStore
    pub fn claim_lease(mut self, lease: Duration) -> Self {
        self.settings.claim_lease = Some(lease);
        self
    }

    /// Sets how long a call's claim (a resume's take) holds where nothing renews it: in a
    /// store that does not renew ([`AnswerStore::renews`] `false`, the default of a store of
    /// your own) and in a session's own memory (default
    /// [`DEFAULT_FIXED_CLAIM_LEASE`](Self::DEFAULT_FIXED_CLAIM_LEASE), 15 minutes). Keep it
    /// above the longest a call can take (its hooks' and tool's deadlines, an inline
    /// approver's): a call still running past its lease is never run twice, but a retry may be
    /// told it was interrupted while it still runs.
    ///
    /// [`AnswerStore::renews`]: crate::store::AnswerStore::renews
    pub fn fixed_claim_lease(mut self, lease: Duration) -> Self {
        self.settings.fixed_claim_lease = Some(lease);
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

    /// The default of [`claim_lease`](Self::claim_lease): 15 s, renewed every 5 s: a dead
    /// worker's calls are answerable elsewhere 15 s after its last renewal.
    pub const DEFAULT_CLAIM_LEASE: Duration = Duration::from_secs(15);

    /// The default of [`fixed_claim_lease`](Self::fixed_claim_lease): 15 minutes, above the
    /// default deadlines of a call together (10 s per hook, 5 minutes for an inline approver,
    /// 60 s for the tool).
    pub const DEFAULT_FIXED_CLAIM_LEASE: Duration = Duration::from_secs(15 * 60);

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
            fixed_claim_lease: self
                .fixed_claim_lease
                .unwrap_or(B::DEFAULT_FIXED_CLAIM_LEASE),
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
