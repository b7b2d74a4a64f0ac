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
//! One folder per part, in the order a call meets them; `ARCHITECTURE.md` (at the repository's
//! root) says what each owns, the life of one call file by file, and the contracts a change must
//! keep. Shared types sit low and no file imports one that imports it back.
//!
//! | folder | what it holds |
//! |---|---|
//! | `base/` | the bottom: futures ready at once, caught panics, timers and deadlines, RFC 3339 timestamps, one stable sort |
//! | `texts.rs`, `error.rs` | every text the model reads; the errors a host matches |
//! | `content/` | the Messages API wire shapes (`tool_use`, `tool_result`, messages), a tool's output, ids, the conversation, token usage |
//! | `hook/` | what a tool or hook is: definitions, the trusted context, state, decisions, effects, wrapped callers |
//! | `dispatch/` | the dispatcher: the builder and its start-up checks, what it tells the host |
//! | `pipeline/` | one call: normalize, look up, validate, the PreToolUse chain, approval, the tool, the observers; the order of a message's blocks |
//! | `session/` | a conversation: calls through the answer memory, whole turns of every API, resuming a paused turn, the Stop hooks |
//! | `approval/` | a person's approval: asks, decisions, the approver, paused turns |
//! | `store/` | the answer memory: the trait, the in-memory store, the input digest |
//! | `audit/` | what a call and a session came to (records, outcomes, hook runs), the audit log, its sinks, redaction, the hash chain, what-if replays |
//! | `schema/` | canonical schemas, start-up schema checks, the walk that explains an invalid input |
//! | `provider/` | the tool definitions of each API and their calls and results |
//! | `tower.rs`, `mcp/`, `claude_code/` | host adapters (features `tower`, `mcp`, `claude-code`) |
//! | `macro_support.rs` | what the macros' generated code calls (not public API) |
#![forbid(unsafe_code)]

mod approval;
mod audit;
mod base;
#[cfg(feature = "claude-code")]
pub mod claude_code;
mod content;
mod dispatch;
mod error;
mod hook;
#[cfg(feature = "mcp")]
pub mod mcp;
mod pipeline;
pub mod provider;
pub mod schema;
mod session;
mod store;
mod texts;
#[cfg(feature = "tower")]
pub mod tower;

#[doc(hidden)]
pub mod macro_support;

pub use approval::pending::{
    AwaitingCall, PENDING_TURN_FORMAT, PendingBlock, PendingTurn, ResumeError, input_digest,
};
pub use approval::{Approval, ApprovalRequest, Approver, Asked};
pub use audit::hook_run::{HookDecision, HookRun};
pub use audit::outcome::{CallRecord, Outcome, SessionSummary};
pub use audit::what_if::{Change, Flip, WhatIf};
pub use audit::{
    AUDIT_LOG_FILE, AuditLog, AuditLogBuilder, AuditRecord, AuditSink, CHAIN_START, InvalidPointer,
    REDACTED, Redaction, SESSION_SUMMARIES_FILE, SummaryRecord, mask_card_numbers, mask_emails,
};
#[cfg(feature = "audit-verify")]
pub use audit::{
    AuditVerification, ChainBreak, ChainProblem, ChainStatus, ChainVerification, verify_audit_dir,
    verify_audit_file,
};
pub use base::future::BoxFuture;
pub use base::time::Rfc3339;
pub use base::timer::Timer;
#[cfg(feature = "tokio")]
pub use base::timer::TokioTimer;
pub use content::conversation::Conversation;
pub use content::ids::{IdError, IdRule};
pub use content::output::{Content, Document, Image, ToolOutput, output_content, output_text};
pub use content::usage::Usage;
pub use content::{ContentBlock, Message, Role, TextBlock, ToolResult, ToolResultContent, ToolUse};
pub use dispatch::builder::{BuildError, BuildProblem, DispatcherBuilder};
pub use dispatch::dispatcher::Dispatcher;
pub use error::{CallError, Halt, HookError, RespondError, ToolError};
pub use hook::answer::CallAnswer;
pub use hook::caller::{SyncCaller, ToolCaller, sync_caller};
pub use hook::context::{Clock, Extensions, HookContext, HookContextBuilder};
pub use hook::decision::Decision;
pub use hook::definitions::{Matcher, PostHookDef, PreHookDef, StopHookDef, ToolDef};
pub use hook::effect::Effect;
pub use hook::state::{Env, MissingState, State, StateKey};
pub use pipeline::limits::Limits;
pub use pipeline::pre_tool_use::PreToolUse;
pub use provider::{
    CacheControl, CacheTtl, ConvertError, DefinitionOptions, NonStrictTool, Provider, SchemaError,
    SchemaProblem, UnknownProvider,
};
pub use session::Session;
pub use session::reply::Reply;
pub use store::memory::MemoryAnswerStore;
pub use store::{AnswerStore, Claim, InputDigest, Remembered, StoreError, StoreFuture};
pub use texts::{EXTERNAL_TOOL_MESSAGE, INTERNAL_ERROR_MESSAGE};

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
