//! The runtime of [toolgate](https://docs.rs/toolgate): it enforces an LLM agent's rules in code.
//!
//! A [`Dispatcher`] turns every `tool_use` block the model sends into exactly one `tool_result`,
//! running the PreToolUse hooks ([`PreHookDef`]) before the tool, the PostToolUse observers
//! ([`PostHookDef`]) after it and the Stop hooks ([`StopHookDef`]) once per [`Session`]. Hooks
//! decide with a [`Decision`]; a hook that cannot decide halts the agent ([`Halt`]): fail closed.
//!
//! Most users depend on the `toolgate` facade and write `#[tool]` and `#[pre_hook]` functions;
//! everything here also works by hand:
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//! use toolgate_core::{Decision, Dispatcher, HookContext, PreHookDef, ToolDef, ToolUse};
//!
//! /// Arguments of `open_case`.
//! #[derive(Deserialize, JsonSchema)]
//! struct OpenCase {
//!     /// The order the case is about.
//!     order_id: String,
//! }
//!
//! let dispatcher = Dispatcher::builder()
//!     .tool(ToolDef::sync("open_case", "Opens a refund case for an order.",
//!         |_env, args: OpenCase| Ok(format!("case opened for {}", args.order_id))))
//!     .pre_hook(PreHookDef::sync("app::premium_only", 10, |env, _call| {
//!         Ok(match env.context().tier() {
//!             Some("premium") => Decision::Allow,
//!             _ => Decision::deny_instead("refund cases are for premium users.",
//!                                         "Offer the refund FAQ instead."),
//!         })
//!     }))
//!     .build()?;
//!
//! let free = dispatcher.session(HookContext::builder("u_004", "sess_2").tier("free").build());
//! let call = ToolUse::new("toolu_1", "open_case", json!({"order_id": "o_2001"}));
//! let result = toolgate_core::block_on(free.call(&call)).unwrap();
//! assert!(result.is_error);
//! assert_eq!(result.content_text(),
//!     "BLOCKED: refund cases are for premium users. Offer the refund FAQ instead.");
//! # Ok::<(), toolgate_core::BuildError>(())
//! ```
//!
//! Failing closed needs `panic = "unwind"` (the default): panics in hooks and tools are caught
//! and become results; with `panic = "abort"` they end the process.
//!
//! # Rules a deployment can rely on
//!
//! - **Rewrites are re-authorized** ([`Decision::Rewrite`]): after a rewrite to a new input the
//!   PreToolUse chain starts again from its first hook, so the input a tool runs with was seen
//!   and allowed by every hook of its chain. A rewrite equal to the input counts as `Allow`; a
//!   rewrite back to an earlier input, or more than 8 rewrites, halts as `hook_failed`.
//! - **Deadlines by default**: async PreToolUse hooks get 10 s, async tools 60 s
//!   ([`DispatcherBuilder::DEFAULT_HOOK_TIMEOUT`], [`DispatcherBuilder::DEFAULT_TOOL_TIMEOUT`]),
//!   on a timer every dispatcher has (no runtime needed); turning them off takes
//!   [`DispatcherBuilder::allow_hanging_hooks`] / [`DispatcherBuilder::allow_hanging_tools`].
//!   Sync hooks and tools cannot be cut short.
//! - **No guard is dropped silently**: a hook with an empty tool list, or one given to the
//!   builder explicitly whose tools are all absent, is a [`BuildError`].
//! - **No write tool without a guard**: a tool declared `write` ([`Effect`]) that no
//!   PreToolUse hook of the dispatcher matches is a [`BuildError`]
//!   ([`BuildProblem::UnguardedWrite`]) unless it says why it needs none
//!   ([`ToolDef::unguarded`]); [`DispatcherBuilder::undeclared_effects_are_writes`] counts every
//!   undeclared tool as `write`.
//! - **A person approves what a rule asks about** ([`Decision::Ask`]): inline by the builder's
//!   [`Approver`] (a deadline, no answer is a denial), or, with none, in a paused turn
//!   ([`Reply::Pending`]) resumed later ([`Session::resume`]); [`Session::call`] blocks such a
//!   call (fail closed).
//! - **Nested dispatchers keep the truth**: a [`ToolCaller`] answers a [`CallAnswer`], so a
//!   denial inside a wrapped dispatcher is `blocked`, with the inner hook's path, on the outer
//!   audit line too.
//!
//! # Conversations
//!
//! A [`Session`] answers a whole assistant message with [`Session::respond`], which returns a
//! [`Reply`]: the user message to send next, or [`Reply::NothingToRun`] for a message without
//! `tool_use` (never an empty user message). It runs only ids the Messages API accepts
//! ([`IdError`]), and it remembers every id it answered ([`AnswerStore`]), so a host that
//! retries a message runs nothing twice. [`Conversation`] keeps the next request's `messages`
//! with each assistant turn reduced to `role` and `content`; the other APIs' whole turns go
//! through `Session::respond_openai_choice`, `Session::respond_openai_response` (feature
//! `openai`) and `Session::respond_gemini_candidate` (feature `gemini`), which run nothing from
//! a turn cut at its output limit.
//!
//! # Cargo features
//!
//! Off by default, each: `tokio` ([`Timer`] on tokio), `full-validation` (`boon`), `tower`
//! (`tower` module), `claude-code` (`claude_code` module), `audit-verify`
//! (`verify_audit_dir`, `verify_audit_file`), `openai` and `gemini` (those APIs' calls in and
//! results out, and the sessions' whole-turn entry points; every provider's definitions are in
//! every build), `mcp` (the `mcp` module: rmcp server and guard). The `toolgate` facade has the
//! same features.
//!
//! # Where things live
//!
//! One file per idea, roughly in the order a call meets them. Shared types sit low (`content`,
//! `future`, `texts`, `outcome`) and no file imports one that imports it back: the builder, the
//! session and the dispatcher are on top.
//!
//! | file | what it holds |
//! |---|---|
//! | `content/` | `tool_use`, `tool_result`, messages: the Messages API wire shapes (`mod.rs`), [`Message::request_turn`]; reading them in one pass (`de.rs`), writing them (`ser.rs`) |
//! | `conversation.rs` | [`Conversation`]: the next request's `messages`, assistant turns as a request may hold them |
//! | `context.rs` | the trusted [`HookContext`], its [`Clock`] and typed [`Extensions`] |
//! | `state.rs` | application [`State`] and the [`Env`] a tool or hook is called with |
//! | `decision.rs` | [`Decision`], what a PreToolUse hook answers |
//! | `effect.rs` | [`Effect`]: what a tool does to the world (read or write, MCP's hints), and its MCP `annotations` |
//! | `approval.rs` | a person's approval of a call a hook asked about: [`Asked`], [`Approval`], the inline [`Approver`] and its [`ApprovalRequest`] |
//! | `definitions.rs` | what a dispatcher is built from: [`ToolDef`], [`PreHookDef`], [`PostHookDef`], [`StopHookDef`], [`Matcher`] |
//! | `output.rs` | what a tool answers with: text ([`output_text`]) or content blocks ([`Content`], [`Image`], [`Document`]), [`ToolOutput`], [`output_content`]; the checks a block result passes; blocks as the providers read them |
//! | `erased.rs` | type erasure: every tool and hook behind one shape, a sync one answered inline |
//! | `future.rs` | [`BoxFuture`], and `Invoke`: an answer ready now or a future |
//! | `registry.rs` | the `inventory` registry the macros fill (`Registration`, `ToolRef`) |
//! | `builder.rs` | [`DispatcherBuilder`]: sources, filters and every start-up check ([`BuildError`]), as named steps |
//! | `examples.rs` | a tool's `input_examples`, checked at `build()` as a call's input is |
//! | `inner.rs` | `Inner`: what `build()` makes and every session shares (tools with their chains and observers, hooks, settings) |
//! | `dispatcher.rs` | [`Dispatcher`]: the public face of `Inner` (definitions per provider, paths, schemas, chains) |
//! | `name_index.rs` | finding a tool by the name the model sent |
//! | `ids.rs` | which `tool_use` ids run: each API's rules ([`IdRule`]), checked on a whole message ([`IdError`]) |
//! | `normalize.rs` | DESIGN step 1: the input normalized and held to the input [`Limits`] |
//! | `limits.rs` | [`Limits`]; a result cut to its bound |
//! | `schema/mod.rs` | canonical schemas: closing objects, flattened enums, the Anthropic `input_schema` |
//! | `schema/walk.rs` | walking a schema: the keywords that hold subschemas, the nullable `anyOf`, JSON kinds, `$ref` within a schema |
//! | `schema/check.rs` | the start-up schema checks and the unknown-field check |
//! | `schema/explain.rs` | the input walk: every problem of an invalid input, in order; a wrapped caller's validator |
//! | `schema/meta.rs` | the meta-schema check of a schema toolgate did not derive (drafts 2020-12 to 04) |
//! | `schema/full.rs` | `full-validation` only: the same checks by `boon`, a complete JSON Schema validator |
//! | `schema/targets.rs` | the provider items under their first path (re-exports of `provider/`) |
//! | `pipeline/mod.rs` | one call: `run_call` (normalize → look up → validate → PreToolUse chain, restarted after each rewrite, then a person's approval when a hook asked → tool → observers); the modes of a call that needs approval (block, pause, resume) |
//! | `pipeline/verdict.rs` | how a call ended, then the `tool_result` and the record made of it |
//! | `pipeline/observe.rs` | the PostToolUse observers; the `cancelled` record of a dropped call |
//! | `pipeline/span.rs` | the call's `tracing` span (`execute_tool {tool}`, OpenTelemetry GenAI attributes) and a `pre_tool_use {hook}` child per hook run |
//! | `pipeline/decide.rs` | the PreToolUse chain asked on its own (steps 1 to 4, no tool, no observers) |
//! | `pending.rs` | [`PendingTurn`]: a turn paused for approval, as JSON ([`PendingBlock`], [`AwaitingCall`], [`input_digest`]); [`ResumeError`] |
//! | `resume.rs` | [`Session::resume`]: a pending turn finished with a person's decisions |
//! | `what_if.rs` | what-if replay: [`WhatIf`], [`Flip`], [`Change`]; a line's context rebuilt, today's answer compared with the recorded one |
//! | `pre_tool_use.rs` | [`PreToolUse`]: what the chain decided, for hosts that enforce the rules elsewhere and for what-if replays |
//! | `panic.rs` | caught panics: a panic in user code becomes a result or a halt |
//! | `timer.rs` | deadlines: [`Timer`], the default timer (`futures-timer`), `TokioTimer`, a future raced against its deadline |
//! | `sort.rs` | one stable sort and a sorted name set for cold code (`build()`, error texts, audit files): the standard sort compiled once |
//! | `texts.rs` | every text toolgate writes for the model ([`INTERNAL_ERROR_MESSAGE`] among them) |
//! | `hook_run.rs` | [`HookRun`], [`HookDecision`]: one run of a PreToolUse hook, as records and audit lines list them |
//! | `outcome.rs` | what observers see: [`Outcome`], [`CallRecord`], [`SessionSummary`] |
//! | `error.rs` | [`ToolError`] (what the model reads, what the operator logs), [`HookError`], [`Halt`], [`CallError`], [`RespondError`] |
//! | `memory.rs` | a session's memory of answered ids: [`AnswerStore`], [`MemoryAnswerStore`], [`InputDigest`] |
//! | `reply.rs` | [`Reply`]: an answer, nothing to run, or a turn paused for approval |
//! | `session.rs` | [`Session`]: `call`, `respond` (ids checked, answers remembered), the Stop hooks and the summary |
//! | `reads.rs` | a message's read-only blocks run together in `respond` and `resume`: the bounded join and the gates that keep chains, observers and audit lines in `tool_use` order |
//! | `turns.rs` | features `openai`, `gemini`: the other APIs' whole turns through a session, truncation guarded: `respond_openai_choice`, `respond_openai_response`, `respond_gemini_candidate` |
//! | `stats.rs` | a session's counters; the observer channel (`tracing` and `observer_errors`) |
//! | `usage.rs` | [`Usage`]: the tokens of the model's responses a host adds to a session |
//! | `audit/mod.rs` | [`AuditLog`], [`AuditLogBuilder`]: the built-in observer and Stop hook, records handed to every sink |
//! | `audit/record.rs` | [`AuditRecord`], [`SummaryRecord`]: what every sink receives; a JSONL line is one's JSON; one record per thread refilled |
//! | `audit/line.rs` | [`AuditRecord::write_json`]: a line's JSON by hand, serde_json's bytes, a word-at-a-time escaper |
//! | `audit/sink.rs` | [`AuditSink`]: where records go (the JSONL files are the default) |
//! | `audit/redact.rs` | [`Redaction`] (JSON pointers per tool, text functions), [`mask_card_numbers`], [`mask_emails`] |
//! | `audit/chain.rs` | the hash chain: `prev` on every line, the file lock, reopening, rotation |
//! | `audit/files.rs` | the default sink: `audit_log.jsonl` and `session_summaries.jsonl` |
//! | `audit/verify.rs` | feature `audit-verify`: `verify_audit_dir`, `verify_audit_file`: the chain checked, the first broken line named |
//! | `time.rs` | RFC 3339 timestamps ([`Rfc3339`]); the audit line's, with the second cached |
//! | `answer.rs` | [`CallAnswer`]: a `tool_result` with its outcome, the hook at fault and the operator detail |
//! | `caller.rs` | wrapping by ownership: [`ToolCaller`], [`SyncCaller`] |
//! | `claude_code/mod.rs` | feature `claude-code`: `claude_code::ClaudeCodeHook`, a Claude Code command hook over a dispatcher (one event in, the documented answer out) |
//! | `claude_code/state.rs` | feature `claude-code`: the hook's per-session state file (the summary between events, under the file's lock) |
//! | `mcp/mod.rs` | feature `mcp`: MCP with rmcp; the `_meta` keys of a call's outcome |
//! | `mcp/server.rs` | [`mcp::McpServer`]: an rmcp server handler over a dispatcher (identity from the host, sessions per caller, results as `CallToolResult`) |
//! | `mcp/guard.rs` | [`mcp::McpGuard`]: an rmcp client connection as a [`ToolCaller`], the remote outcome kept |
//! | `mcp/http.rs` | feature `mcp-http`: MCP over streamable HTTP: `McpServer::streamable_http_service`, `McpCaller::http_request`, `McpGuard::streamable_http` |
//! | `tower.rs` | feature `tower`: a session as a `Service<ToolUse>`, a tower service as a [`ToolCaller`], the hooks as a `Layer`; how tower's timeouts meet toolgate's deadlines |
//! | `provider/mod.rs` | [`Provider`]; the tool definitions of each target and their rendering |
//! | `provider/anthropic.rs` | Anthropic: the `tools` entries, default and strict |
//! | `provider/openai.rs` | OpenAI Chat Completions: the `tools` entry, `tool_calls` in, `tool` messages out; the strict subset |
//! | `provider/openai_responses.rs` | OpenAI Responses: the flat `tools` entry, `function_call` in, `function_call_output` out |
//! | `provider/gemini.rs` | Gemini: `functionDeclarations`, `functionCall` in, `functionResponse` out |
//! | `provider/mcp.rs` | MCP: `tools/list` entries, `tools/call` in, `CallToolResult` out |
//! | `provider/subset.rs` | what the providers' schema transforms share |
//! | `provider/request_limits.rs` | limits on a request's strict tools together, and the budget that admits tools in the documented order |
//! | `provider/options.rs` | options of one definitions call: [`DefinitionOptions`], [`CacheControl`] |
//! | `macro_support.rs` | what the macros' generated code calls (not public API), a tool's error converted by its type's kind among them |
//! | `lib.rs` | this page, the re-exports and [`block_on`] |
#![forbid(unsafe_code)]

mod answer;
mod approval;
mod audit;
mod builder;
mod caller;
#[cfg(feature = "claude-code")]
pub mod claude_code;
mod content;
mod context;
mod conversation;
mod decision;
mod definitions;
mod dispatcher;
mod effect;
mod erased;
mod error;
mod examples;
mod future;
mod hook_run;
mod ids;
mod inner;
mod limits;
#[cfg(feature = "mcp")]
pub mod mcp;
mod memory;
mod name_index;
mod normalize;
mod outcome;
mod output;
mod panic;
mod pending;
mod pipeline;
mod pre_tool_use;
pub mod provider;
mod reads;
mod registry;
mod reply;
mod resume;
pub mod schema;
mod session;
mod sort;
mod state;
mod stats;
mod texts;
mod time;
mod timer;
#[cfg(feature = "tower")]
pub mod tower;
#[cfg(any(feature = "openai", feature = "gemini"))]
mod turns;
mod usage;
mod what_if;

#[doc(hidden)]
pub mod macro_support;

pub use answer::CallAnswer;
pub use approval::{Approval, ApprovalRequest, Approver, Asked};
pub use audit::{
    AUDIT_LOG_FILE, AuditLog, AuditLogBuilder, AuditRecord, AuditSink, CHAIN_START, InvalidPointer,
    REDACTED, Redaction, SESSION_SUMMARIES_FILE, SummaryRecord, mask_card_numbers, mask_emails,
};
#[cfg(feature = "audit-verify")]
pub use audit::{
    AuditVerification, ChainBreak, ChainProblem, ChainStatus, ChainVerification, verify_audit_dir,
    verify_audit_file,
};
pub use builder::{BuildError, BuildProblem, DispatcherBuilder};
pub use caller::{SyncCaller, ToolCaller, sync_caller};
pub use content::{ContentBlock, Message, Role, TextBlock, ToolResult, ToolResultContent, ToolUse};
pub use context::{Clock, Extensions, HookContext, HookContextBuilder};
pub use conversation::Conversation;
pub use decision::Decision;
pub use definitions::{Matcher, PostHookDef, PreHookDef, StopHookDef, ToolDef};
pub use dispatcher::Dispatcher;
pub use effect::Effect;
pub use error::{CallError, Halt, HookError, RespondError, ToolError};
pub use future::BoxFuture;
pub use hook_run::{HookDecision, HookRun};
pub use ids::{IdError, IdRule};
pub use limits::Limits;
pub use memory::{
    AnswerStore, Claim, InputDigest, MemoryAnswerStore, Remembered, StoreError, StoreFuture,
};
pub use outcome::{CallRecord, Outcome, SessionSummary};
pub use output::{Content, Document, Image, ToolOutput, output_content, output_text};
pub use pending::{
    AwaitingCall, PENDING_TURN_FORMAT, PendingBlock, PendingTurn, ResumeError, input_digest,
};
pub use pre_tool_use::PreToolUse;
pub use provider::{
    CacheControl, CacheTtl, ConvertError, DefinitionOptions, NonStrictTool, Provider, SchemaError,
    SchemaProblem, UnknownProvider,
};
pub use reply::Reply;
pub use session::Session;
pub use state::{Env, MissingState, State, StateKey};
pub use texts::{EXTERNAL_TOOL_MESSAGE, INTERNAL_ERROR_MESSAGE};
pub use time::Rfc3339;
pub use timer::Timer;
#[cfg(feature = "tokio")]
pub use timer::TokioTimer;
pub use usage::Usage;
pub use what_if::{Change, Flip, WhatIf};

/// Drives a future to completion on the current thread, parking between polls.
///
/// For tests, examples and sync hosts: toolgate's futures need no runtime unless a hook or tool
/// awaits one (a tokio timer, a tokio database client). Not a general executor: one future,
/// one thread.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }

    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}
