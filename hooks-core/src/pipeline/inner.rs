//! The state behind a [`Dispatcher`](crate::Dispatcher): its tools ([`ToolEntry`]), hooks and
//! settings, shared by every session and never changed after `build()`.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::approval::ask::Approver;
use crate::approval::seal::Sealing;
use crate::audit::Redaction;
use crate::base::timer::Timer;
use crate::hook::caller::ToolCaller;
use crate::hook::definitions::{PostHookDef, PreHookDef, StopHookDef};
use crate::hook::effect::Effect;
use crate::hook::erased::ErasedTool;
use crate::hook::state::StateMap;
use crate::pipeline::limits::Limits;
use crate::pipeline::name_index::NameIndex;
use crate::pipeline::stats::LeaseCounters;
use crate::provider::{Provider, Rendered, SchemaError, ToolSource, render};
use crate::schema::check::FieldCheck;

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
    /// What an input is validated (a wrapped caller's) or explained (a derived tool's) against:
    /// a derived tool's raw schemars schema closed as the canonical form is (integer `format`s
    /// kept: they give integer ranges), or a wrapped caller's schema as given.
    pub(crate) validation: Value,
    /// MCP's `outputSchema` of the tool (`provider::mcp::output_schema` of its output type's
    /// schema), when it has one.
    pub(crate) output_schema: Option<Value>,
    /// The unknown-field check of a derived tool's canonical schema (the fast path, before its
    /// argument type deserializes the input).
    pub(crate) fields: FieldCheck,
    /// A wrapped caller's schema compiled by `boon`, which applies what the input walk does not.
    #[cfg(feature = "full-validation")]
    pub(crate) full: Option<crate::schema::full::Compiled>,
    /// Indices into `Inner::pre_hooks` of the hooks that match this tool, in chain order.
    pub(crate) chain: Box<[usize]>,
    /// Indices into `Inner::observers` of the observers that see this tool's calls, in order.
    pub(crate) observers: Box<[usize]>,
    pub(crate) timeout: Option<Duration>,
    /// `strict = true` / `false`, or neither (see `ToolDef::strict`).
    pub(crate) strict: Option<bool>,
    /// Anthropic `input_examples`, checked at `build()`.
    pub(crate) input_examples: Vec<Value>,
    /// The effect in force (an undeclared one is `write` under `undeclared_effects_are_writes`).
    pub(crate) effect: Option<Effect>,
    /// Why a write tool needs no guard, when it says so.
    pub(crate) unguarded: Option<Cow<'static, str>>,
}

/// The shared, immutable state of a dispatcher, made by `DispatcherBuilder::build`. Its calls
/// run in `pipeline/` (`Inner::run_call`, `not_run`, `cancelled_before_start`).
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
    /// Indices into `pre_hooks` of the untyped hooks that match every tool, in chain order: the
    /// chain a host-run tool the dispatcher does not know goes through
    /// (`Inner::pre_tool_use_in_host`).
    #[cfg_attr(not(feature = "claude-code"), allow(dead_code))]
    pub(crate) open_chain: Box<[usize]>,
    /// Whether every observer is sync (they then run without a future).
    pub(crate) observers_sync: bool,
    /// Whether calls keep their PreToolUse hook runs for the observers (an audit log, or
    /// `record_hook_runs`); a call whose span is enabled keeps them too.
    pub(crate) hook_runs: bool,
    /// Set by `span_content`: record a call's arguments and result on its span, after this
    /// redaction (the audit log's, or none).
    pub(crate) span_content: Option<Redaction>,
    /// What a paused call keeps of its input: the audit log's field rules (or none) and the
    /// keys that seal what they hide (`approval/seal.rs`).
    pub(crate) sealing: Sealing,
    pub(crate) states: StateMap,
    pub(crate) limits: Limits,
    /// The builder's timer, or the default one.
    pub(crate) timer: Arc<dyn Timer>,
    /// The deadline of async PreToolUse hooks without their own; `None` only after
    /// `allow_hanging_hooks`.
    pub(crate) hook_timeout: Option<Duration>,
    /// The deadline of async tools (and wrapped callers) without their own; `None` only after
    /// `allow_hanging_tools`.
    pub(crate) tool_timeout: Option<Duration>,
    /// Answers calls that need a person's approval inline; `None`: `respond` pauses, `call`
    /// blocks.
    pub(crate) approver: Option<Arc<dyn Approver>>,
    /// The deadline of the approver's answer; `None` only after `allow_hanging_approvals`.
    pub(crate) approval_timeout: Option<Duration>,
    /// How long a pending turn may wait before its calls are answered as expired.
    pub(crate) pending_ttl: Duration,
    /// How many read-only blocks of one message run at once (`order.rs`); at least 1.
    pub(crate) max_concurrent_reads: usize,
    /// How long a call's claim (a resume's take) holds in a store that renews it while the
    /// call runs, from its last renewal: how long a dead worker's calls wait.
    pub(crate) claim_lease: Duration,
    /// How long a claim (a take) holds in a store that does not renew it, and in a session's
    /// own memory: above the longest call.
    pub(crate) fixed_claim_lease: Duration,
    /// How the claims and takes were kept alive, counted as each ends.
    pub(crate) leases: LeaseCounters,
    /// `"a, b, c"`, for unknown-tool messages.
    pub(crate) available: String,
    /// Definitions per target (by `Provider::index`), rendered on first use.
    pub(crate) rendered: [OnceLock<Result<Rendered, SchemaError>>; Provider::ALL.len()],
}

impl Inner {
    /// See [`Dispatcher::fingerprint`](crate::Dispatcher::fingerprint): the SHA-256 of the
    /// tools, their input schemas and PreToolUse chains.
    pub(crate) fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut text = String::from("toolgate dispatcher fingerprint 1\n");
        for tool in &self.tools {
            text.push_str("tool\t");
            text.push_str(&tool.name);
            text.push('\t');
            text.push_str(&tool.canonical.to_string());
            text.push('\n');
            for &h in tool.chain.iter() {
                let hook = &self.pre_hooks[h];
                text.push_str(&format!("pre_hook\t{}\t{}\n", hook.order, hook.path));
            }
        }
        crate::approval::pending::hex(&Sha256::digest(text.as_bytes()))
    }

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
    pub(crate) fn rendered(&self, provider: Provider) -> &Result<Rendered, SchemaError> {
        self.rendered[provider.index()].get_or_init(|| {
            let tools = self.tools.iter().map(|t| ToolSource {
                name: &t.name,
                description: &t.description,
                canonical: &t.canonical,
                strict: t.strict,
                input_examples: &t.input_examples,
                output_schema: t.output_schema.as_ref(),
            });
            render(provider, tools)
        })
    }
}
