//! [`Dispatcher`]: the built, shared, immutable set of tools and hooks every session runs on (built
//! by [`DispatcherBuilder`](crate::dispatch::DispatcherBuilder)), and what it tells the host: its
//! tools' definitions for each provider, paths, schemas and chains.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::audit::AuditRecord;
use crate::audit::what_if::{self, WhatIf};
use crate::base::future::BoxFuture;
use crate::content::message::ToolUse;
use crate::error::Halt;
use crate::hook::answer::CallAnswer;
use crate::hook::caller::ToolCaller;
use crate::hook::context::HookContext;
use crate::hook::effect::Effect;
use crate::pipeline::chain_verdict::ChainVerdict;
use crate::pipeline::inner::Inner;
use crate::pipeline::stats::LeaseStats;
use crate::provider::{DefinitionOptions, NonStrictTool, Provider, SchemaError, apply_options};
use crate::session::Session;
use crate::store::{AnswerStore, PendingStore};

/// Turns `tool_use` blocks into `tool_result` blocks through the PreToolUse chain, the tool and
/// the PostToolUse observers, for many sessions at once.
///
/// Built once with [`Dispatcher::builder`], then shared: it is `Send + Sync` and cloning it
/// shares one `Arc`. Open a [`Session`](crate::Session) per conversation with
/// [`Dispatcher::session`]. The dispatcher is itself a [`ToolCaller`], so it can be wrapped by
/// another dispatcher (each inner call runs once; the inner one runs its own hooks without a
/// session, so no Stop). Its [`CallAnswer`] carries the inner pipeline's outcome, the path of the
/// inner hook that denied and the inner detail, so the outer audit line says `blocked` (with
/// the inner hook's path) for a denial inside, `invalid_input`, `panicked`, … likewise.
#[derive(Clone)]
pub struct Dispatcher {
    pub(crate) inner: Arc<Inner>,
}

// `Dispatcher::builder` is in `builder/mod.rs`, beside what it makes, so that file, which builds
// a `Dispatcher`, is not imported back by this one.
impl Dispatcher {
    /// The Anthropic Messages API `tools` entries, sorted by name: `[{"name": "get_weather",
    /// "description": "…", "input_schema": {"type": "object", "properties": {…}, "required":
    /// […], "additionalProperties": false}}, …]`. Built once, at `build()`.
    pub fn tool_definitions(&self) -> &[Value] {
        &self.inner.definitions
    }

    /// The `tools` entries for `provider`, sorted by name, each in that API's format (see
    /// [`provider`](crate::provider) for every target's rules):
    /// `anthropic` is [`tool_definitions`](Self::tool_definitions); `openai` gives
    /// `[{"type": "function", "function": {"name": …, "description": …, "parameters": {…},
    /// "strict": true}}, …]`; `gemini` gives the `functionDeclarations` entries `[{"name": …,
    /// "description": …, "parameters": {…}}, …]`; `mcp` the `tools/list` entries `[{"name": …,
    /// "description": …, "inputSchema": {…}}, …]`, with `"outputSchema": {…}` for a tool whose
    /// output type has an object schema ([`output_schema`](Self::output_schema)). Built on first
    /// use, then cached.
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

    /// [`tool_definitions_for`](Self::tool_definitions_for) with options that belong to the
    /// request's tool list as a whole ([`DefinitionOptions`]): with
    /// `cache_control`, the last Anthropic entry gets `"cache_control": {"type": "ephemeral"}`
    /// (or with its `ttl`), which caches every tool definition of the request (Anthropic "Prompt
    /// caching"). A copy of the cached entries, made on each call.
    ///
    /// ```
    /// # use schemars::JsonSchema;
    /// # use serde::Deserialize;
    /// use serde_json::json;
    /// use toolgate_core::dispatch::ToolDef;
    /// use toolgate_core::provider::{CacheControl, DefinitionOptions, Provider};
    /// use toolgate_core::Dispatcher;
    ///
    /// # /// Arguments.
    /// # #[derive(Deserialize, JsonSchema)]
    /// # struct Ping {}
    /// let dispatcher = Dispatcher::builder()
    ///     .tool(ToolDef::sync("ping", "Answers pong.", |_env, _args: Ping| {
    ///         Ok(String::from("pong"))
    ///     }))
    ///     .build()?;
    /// let options = DefinitionOptions::new().cache_control(CacheControl::ephemeral());
    /// let tools = dispatcher.tool_definitions_with(Provider::Anthropic, &options)?;
    /// assert_eq!(tools[0]["cache_control"], json!({"type": "ephemeral"}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`tool_definitions_for`](Self::tool_definitions_for).
    pub fn tool_definitions_with(
        &self,
        provider: Provider,
        options: &DefinitionOptions,
    ) -> Result<Vec<Value>, SchemaError> {
        let mut definitions = self.tool_definitions_for(provider)?.to_vec();
        apply_options(provider, &mut definitions, options);
        Ok(definitions)
    }

    /// The tools a strict target (`anthropic-strict`, `openai`, `openai-responses`) emits
    /// non-strict, with the reason, in name order, for a host to log at start-up: those outside
    /// its strict subset (`` `tag_items`: property `labels` is a map (`additionalProperties` is
    /// a schema, as for HashMap<String, T>) ``), those past one of its limits (``its 25 optional
    /// parameters would bring the optional parameters of the request's strict tools to 25
    /// (Anthropic strict tool use allows 24 in one request)``; see the
    /// [`provider`](crate::provider) module docs, "Strict limits"), and those marked
    /// `strict = false` (``the tool is marked `strict = false` ``). Empty for every other
    /// target.
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
    /// `schema/`): the `input_schema` before the Anthropic form collapses
    /// optional values, so an `Option<u32>` property reads `{"anyOf": [{"type": "integer",
    /// "minimum": 0}, {"type": "null"}]}`. `None` when this dispatcher has no tool named `tool`.
    pub fn canonical_schema(&self, tool: &str) -> Option<&Value> {
        self.inner
            .find(tool)
            .map(|i| &self.inner.tools[i].canonical)
    }

    /// MCP's `outputSchema` of a tool: the JSON Schema of its output type when that is an
    /// object (`{"type": "object", "properties": {…}, …}`; see
    /// [`provider::mcp::output_schema`](crate::provider::mcp::output_schema)), as its
    /// [`tool_definitions_for(Provider::Mcp)`](Self::tool_definitions_for) entry shows it; pass
    /// it to [`provider::mcp::call_tool_result`](crate::provider::mcp::call_tool_result) with the
    /// tool's results. `None` when the tool has none (its output is text, a non-object value, or
    /// has no `JsonSchema`; a wrapped caller's tool) or this dispatcher has no tool named `tool`.
    pub fn output_schema(&self, tool: &str) -> Option<&Value> {
        let i = self.inner.find(tool)?;
        self.inner.tools[i].output_schema.as_ref()
    }

    /// What a tool does to the world ([`Effect`]): as declared (`#[tool(effect = …)]`,
    /// [`ToolDef::effect`](crate::dispatch::ToolDef::effect), a wrapped caller's `annotations`), or
    /// [`Effect::write()`] for an undeclared one when the builder was told
    /// [`undeclared_effects_are_writes`](crate::dispatch::DispatcherBuilder::undeclared_effects_are_writes).
    /// `None` when the effect is undeclared otherwise, or this dispatcher has no tool named `tool`
    /// ([`tool_path`](Self::tool_path) tells the two apart). A client's MCP `annotations` are
    /// [`Effect::mcp_annotations`] of it.
    pub fn tool_effect(&self, tool: &str) -> Option<Effect> {
        let i = self.inner.find(tool)?;
        self.inner.tools[i].effect
    }

    /// Why a `write` tool needs no PreToolUse hook, as the tool says (`#[tool(unguarded = "…")]`,
    /// [`ToolDef::unguarded`](crate::dispatch::ToolDef::unguarded), a wrapped caller's
    /// `"unguarded"`). `None` when it says nothing, or this dispatcher has no tool named `tool`.
    pub fn unguarded_reason(&self, tool: &str) -> Option<&str> {
        let i = self.inner.find(tool)?;
        self.inner.tools[i].unguarded.as_deref()
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

    /// The fingerprint a [`PendingTurn`](crate::approval::PendingTurn) is bound to: what its
    /// approvals depend on. The SHA-256 (lowercase hex, 64 characters) of this text, UTF-8:
    ///
    /// ```text
    /// toolgate dispatcher fingerprint 1
    /// tool\t<name>\t<canonical input schema, compact JSON>
    /// pre_hook\t<order>\t<full path>        (one line per hook of the tool's chain, in order)
    /// …                                        (every tool, by name)
    /// ```
    ///
    /// So it changes when a tool is added, removed, renamed or its input schema changes, and
    /// when a PreToolUse hook is added to, removed from or moved in a tool's chain. It cannot
    /// see a hook's body: a rule changed under the same path and order keeps the fingerprint
    /// (rename the hook, or bump its order, to invalidate pending turns on purpose).
    /// Descriptions, PostToolUse observers, Stop hooks, limits and deadlines are not part of it.
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }

    /// Asks the PreToolUse chain about `call` for the session `context` describes, without
    /// running the tool or any observer and without counting anything in a session: steps 1 to 4
    /// of a call (normalize, look up, validate, the chain with its rewrite rule and deadlines).
    ///
    /// For hosts that enforce the rules where the tool runs elsewhere (a coding agent's own
    /// tools), and for replaying recorded calls against today's rules. Hooks that read
    /// application state see today's state; the context's clock is whatever `context` says.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate_core::audit::Outcome;
    /// use toolgate_core::dispatch::{ChainVerdict, PreHookDef, ToolDef};
    /// use toolgate_core::{Decision, Dispatcher, HookContext, ToolUse};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Refund {
    ///     /// Cents.
    ///     amount_cents: u64,
    /// }
    ///
    /// let dispatcher = Dispatcher::builder()
    ///     .tool(ToolDef::sync("refund", "Refunds an order.", |_env, a: Refund| {
    ///         Ok(format!("refunded {}", a.amount_cents))
    ///     }))
    ///     .pre_hook(PreHookDef::sync("app::cap", 10, |_env, call: &ToolUse| {
    ///         Ok(match call.input["amount_cents"].as_u64() {
    ///             Some(n) if n > 5000 => Decision::deny("refunds above 5000 cents need a person."),
    ///             _ => Decision::Allow,
    ///         })
    ///     }))
    ///     .build()?;
    /// let ctx = HookContext::builder("u_001", "sess_1").build();
    ///
    /// let small = ToolUse::new("toolu_1", "refund", json!({"amount_cents": 900}));
    /// assert_eq!(
    ///     toolgate_core::block_on(dispatcher.pre_tool_use(&ctx, &small)),
    ///     ChainVerdict::Allow { input: json!({"amount_cents": 900}), rewritten_by: vec![] }
    /// );
    /// let large = ToolUse::new("toolu_2", "refund", json!({"amount_cents": 9000}));
    /// let decided = toolgate_core::block_on(dispatcher.pre_tool_use(&ctx, &large));
    /// assert_eq!(decided.outcome(), Some(Outcome::Blocked));
    /// # Ok::<(), toolgate_core::BuildError>(())
    /// ```
    pub async fn pre_tool_use(&self, context: &HookContext, call: &ToolUse) -> ChainVerdict {
        self.inner.pre_tool_use(context, call).await
    }

    /// What-if replay of one audit line: what today's PreToolUse chain decides about the
    /// recorded call, against what the line says was decided then.
    ///
    /// The call is rebuilt from the line (`tool_use_id`, `tool`, and `input` as recorded, before
    /// any rewrite), and so is its context: `user_id`, `session_id`, `tier`, and a clock fixed at
    /// the line's `ts` (nothing else of the original context, such as its extensions, is on the
    /// line). The chain runs as in [`pre_tool_use`](Self::pre_tool_use): never the tool, never
    /// the observers, nothing counted. Answers (see [`WhatIf`]):
    /// - [`WhatIf::Unchanged`]: allowed with the same effective input and rewrites, or refused
    ///   with the same outcome by the same hook;
    /// - [`WhatIf::Flip`]: allowed → blocked, blocked → allowed, another rewrite, another
    ///   blocking hook, with the hook responsible;
    /// - [`WhatIf::Undecidable`]: the decision differs, but the recorded input holds
    ///   [`REDACTED`](crate::audit::REDACTED) placeholders, so the hooks did not read what the
    ///   model sent (a field rule with its own mask function, `Redaction::field_with`, is detected
    ///   only when its mask writes that placeholder);
    /// - [`WhatIf::Skipped`]: the line records no decision of the chain: a replayed answer
    ///   (`"replay": true`), `not_run`, `cancelled`, or an outcome that is not final.
    ///
    /// Hooks that read application state (a ledger, a database) see **today's** state, not the
    /// state at `ts`: a host that wants the past rebuilds it before each line (the support agent's
    /// `--what-if` rebuilds its refund ledger from the log's own refund lines). A line refused
    /// inside a wrapped caller ([`ToolCaller`](crate::dispatch::ToolCaller)) names the inner hook,
    /// which this dispatcher's chain does not run: replay it on the inner dispatcher.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate_core::audit::{AuditRecord, Change, WhatIf};
    /// use toolgate_core::dispatch::{PreHookDef, ToolDef};
    /// use toolgate_core::{Decision, Dispatcher, ToolUse};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Refund {
    ///     /// Cents.
    ///     amount_cents: u64,
    /// }
    ///
    /// // Today's rule: refunds above 3000 cents need a person (it was 5000 when the line was written).
    /// let dispatcher = Dispatcher::builder()
    ///     .tool(ToolDef::sync("refund", "Refunds an order.", |_env, a: Refund| {
    ///         Ok(format!("refunded {}", a.amount_cents))
    ///     }))
    ///     .pre_hook(PreHookDef::sync("app::cap", 10, |_env, call: &ToolUse| {
    ///         Ok(match call.input["amount_cents"].as_u64() {
    ///             Some(n) if n > 3000 => Decision::deny("refunds above 3000 cents need a person."),
    ///             _ => Decision::Allow,
    ///         })
    ///     }))
    ///     .build()?;
    /// let line: AuditRecord = serde_json::from_value(json!({
    ///     "ts": "2026-11-24T10:15:00Z", "session_id": "sess_1", "user_id": "u_001",
    ///     "tool_use_id": "toolu_1", "tool": "refund", "input": {"amount_cents": 4000},
    ///     "outcome": "ok", "is_error": false, "content": "refunded 4000", "duration_us": 12,
    /// }))?;
    /// let WhatIf::Flip(flip) = toolgate_core::block_on(dispatcher.what_if(&line)) else {
    ///     panic!("a flip")
    /// };
    /// assert_eq!(flip.change, Change::NowBlocked);
    /// assert_eq!(flip.hook.as_deref(), Some("app::cap"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn what_if(&self, record: &AuditRecord) -> WhatIf {
        if let Some(skipped) = what_if::skipped(record) {
            return skipped;
        }
        let context = what_if::context_of(record);
        let call = ToolUse::new(
            record.tool_use_id.clone(),
            record.name.clone(),
            record.input.clone(),
        );
        let now = self.inner.pre_tool_use(&context, &call).await;
        what_if::compare(record, now)
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
    /// The Anthropic entries, each with the tool's effect as MCP `annotations` when it has one,
    /// and, for a `write` tool, an `unguarded` reason saying that this dispatcher guards it (its
    /// PreToolUse chain, or the tool's own reason): a wrapping dispatcher then neither asks for
    /// a guard of its own nor loses the effect.
    fn tool_definitions(&self) -> Vec<Value> {
        let mut definitions = self.inner.definitions.clone();
        for (entry, tool) in definitions.iter_mut().zip(&self.inner.tools) {
            let (Some(effect), Value::Object(entry)) = (tool.effect, entry) else {
                continue;
            };
            entry.insert(
                "annotations".into(),
                Value::Object(effect.mcp_annotations()),
            );
            if effect.is_write() {
                // The hooks that guard it: those that can deny or ask (a rewrite-only hook
                // guards nothing).
                let chain: Vec<&str> = tool
                    .chain
                    .iter()
                    .map(|&h| &self.inner.pre_hooks[h])
                    .filter(|h| h.refuses)
                    .map(|h| h.path.as_ref())
                    .collect();
                let reason = match &tool.unguarded {
                    Some(reason) if chain.is_empty() => reason.to_string(),
                    _ => format!(
                        "guarded inside the wrapped dispatcher by {}",
                        chain.join(", ")
                    ),
                };
                entry.insert("unguarded".into(), Value::String(reason));
            }
        }
        definitions
    }

    fn call_tool<'a>(
        &'a self,
        context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<CallAnswer, Halt>> {
        Box::pin(self.inner.run_call(context, None, call, None))
    }
}

impl Dispatcher {
    /// How this dispatcher's claims in the answer memory (and takes of paused turns) were kept
    /// alive while their calls ran, since it was built: its leases and renewal interval, how
    /// many claims were held and renewed, the renewals made, those that failed, and the
    /// answers refused because their claim no longer held the call ([`LeaseStats`]).
    pub fn lease_stats(&self) -> LeaseStats {
        let inner = &self.inner;
        inner
            .leases
            .stats(inner.claim_lease, inner.fixed_claim_lease)
    }

    /// Opens a session (one conversation) with the host's trusted `context`. It remembers the
    /// `tool_use` ids it answers in a [`MemoryAnswerStore`](crate::store::MemoryAnswerStore) with
    /// the default caps, each input by a hash keyed at random for this session (SipHash-1-3 of the
    /// input's structure; equal JSON texts, equal keys), cheaper than the SHA-256
    /// [`InputDigest`](crate::store::InputDigest) a host's store is given: these keys never leave
    /// the session, so they need not be stable.
    pub fn session(&self, context: HookContext) -> Session {
        Session::new(Arc::clone(&self.inner), context, None)
    }

    /// Opens a session that remembers the `tool_use` ids it answers in `store`: the host's
    /// database, so a conversation served by several processes still runs nothing twice, or a
    /// [`MemoryAnswerStore`](crate::store::MemoryAnswerStore) with other caps. Give each
    /// conversation its own store (or key it by the session id): `tool_use` ids are unique within a
    /// conversation only.
    pub fn session_with_store(&self, context: HookContext, store: Arc<dyn AnswerStore>) -> Session {
        Session::new(Arc::clone(&self.inner), context, Some(store))
    }

    /// Opens a session on one `store` that keeps both the answer memory and the turns paused for
    /// a person: `store::sqlite::SqliteStore` (feature `sqlite`) or
    /// `store::postgres::PostgresStore` (feature `postgres`), which every session and worker
    /// process of the agent shares. What it promises:
    ///
    /// - a retried call, in any session or process on the store, runs nothing twice
    ///   ([`session_with_store`](Self::session_with_store));
    /// - a turn that pauses ([`Reply::Pending`](crate::Reply::Pending)) is already kept in the
    ///   store when `respond` returns ([`Session::with_pending_store`]): the host does not `put`
    ///   it, and any session of the same session id and user, in this process or another, on a
    ///   dispatcher of the same [`fingerprint`](Self::fingerprint), finishes it with
    ///   [`Session::resume_from`] once, however many workers try at once.
    ///
    /// A person's decisions are bound to the inputs they were shown: list the waiting calls with
    /// [`PendingStore::waiting`](crate::store::PendingStore::waiting) and approve each with
    /// [`DecisionsBuilder::approve`](crate::approval::DecisionsBuilder::approve), which carries
    /// its input digest (see the [approval guide]).
    ///
    /// [approval guide]: https://github.com/toolgate/toolgate/blob/main/docs/approval.md
    pub fn session_on<S>(&self, context: HookContext, store: Arc<S>) -> Session
    where
        S: AnswerStore + PendingStore + 'static,
    {
        let answers: Arc<dyn AnswerStore> = store.clone();
        Session::new(Arc::clone(&self.inner), context, Some(answers)).with_pending_store(store)
    }
}
