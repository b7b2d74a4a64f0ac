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
//! # Where things live
//!
//! One file per idea, in the order a call meets them:
//!
//! | file | what |
//! |---|---|
//! | `content.rs` | `tool_use`, `tool_result`, messages: the Messages API wire shapes |
//! | `context.rs`, `state.rs` | the trusted [`HookContext`]; application [`State`] and [`Env`] |
//! | `registry.rs` | [`ToolDef`] and the hook definitions, type-erased calls, `inventory` registration |
//! | `builder.rs` | [`DispatcherBuilder`]: sources, filters and every start-up check ([`BuildError`]) |
//! | `dispatcher.rs`, `name_index.rs` | the built [`Dispatcher`]; finding a tool by name |
//! | `limits.rs` | [`Limits`] and input normalization (DESIGN step 1) |
//! | `schema/` | canonical schemas (`mod.rs`), walking subschemas and the nullable `anyOf` (`walk.rs`), build checks and the unknown-field check (`check.rs`), explaining invalid input (`explain.rs`), the first path of the provider items (`targets.rs`, re-exports) |
//! | `pipeline.rs` | one call: look-up, validation, the PreToolUse chain, the tool, the observers |
//! | `decision.rs`, `outcome.rs`, `error.rs` | [`Decision`]; [`Outcome`] and [`CallRecord`]; [`ToolError`], [`Halt`] |
//! | `session.rs` | [`Session`]: messages, Stop hooks, [`SessionSummary`] |
//! | `audit.rs`, `time.rs` | [`AuditLog`]; RFC 3339 timestamps |
//! | `timer.rs` | deadlines ([`Timer`]) and caught panics |
//! | `caller.rs` | wrapping by ownership: [`ToolCaller`] |
//! | `provider/` | [`Provider`], tool definitions and their rendering (`mod.rs`); one file per API, its schema transform beside its call and result conversions (`anthropic.rs`, `openai.rs`, `openai_responses.rs`, `gemini.rs`, `mcp.rs`); what the transforms share (`subset.rs`) |
//! | `macro_support.rs` | what the macros' generated code calls (not public API) |
#![forbid(unsafe_code)]

mod audit;
mod builder;
mod caller;
mod content;
mod context;
mod decision;
mod definitions;
mod dispatcher;
mod erased;
mod error;
mod future;
mod inner;
mod limits;
mod name_index;
mod normalize;
mod outcome;
mod panic;
mod pipeline;
pub mod provider;
mod registry;
pub mod schema;
mod session;
mod state;
mod stats;
mod texts;
mod time;
mod timer;

#[doc(hidden)]
pub mod macro_support;

pub use audit::{AUDIT_LOG_FILE, AuditLog, SESSION_SUMMARIES_FILE};
pub use builder::{BuildError, BuildProblem, DispatcherBuilder};
pub use caller::{SyncCaller, ToolCaller, sync_caller};
pub use content::{ContentBlock, Message, Role, TextBlock, ToolResult, ToolResultContent, ToolUse};
pub use context::{Clock, Extensions, HookContext, HookContextBuilder};
pub use decision::Decision;
pub use definitions::{Matcher, PostHookDef, PreHookDef, StopHookDef, ToolDef, output_text};
pub use dispatcher::Dispatcher;
pub use error::{Halt, HookError, RespondError, ToolError};
pub use future::BoxFuture;
pub use limits::Limits;
pub use outcome::{CallRecord, Outcome, SessionSummary};
pub use provider::{
    ConvertError, NonStrictTool, Provider, SchemaError, SchemaProblem, UnknownProvider,
};
pub use session::Session;
pub use state::{Env, MissingState, State, StateKey};
pub use texts::INTERNAL_ERROR_MESSAGE;
pub use time::Rfc3339;
pub use timer::Timer;
#[cfg(feature = "tokio")]
pub use timer::TokioTimer;

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
