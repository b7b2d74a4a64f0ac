//! The runtime of [toolgate](https://docs.rs/toolgate): it enforces an LLM agent's rules in code.
//!
//! A [`Dispatcher`] turns every `tool_use` block the model sends into exactly one `tool_result`,
//! running the PreToolUse hooks ([`PreHookDef`](crate::dispatch::PreHookDef)) before the tool, the
//! PostToolUse observers ([`PostHookDef`](crate::dispatch::PostHookDef)) after it and the Stop
//! hooks ([`StopHookDef`](crate::dispatch::StopHookDef)) once per [`Session`]. Hooks decide with a
//! [`Decision`]; a hook that cannot decide halts the agent ([`Halt`]): fail closed.
//!
//! Most users depend on the `toolgate` facade and write `#[tool]` and `#[pre_hook]` functions;
//! everything here also works by hand:
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//! use toolgate_core::dispatch::{PreHookDef, ToolDef};
//! use toolgate_core::{Decision, Dispatcher, HookContext, ToolUse};
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
//! The `toolgate` facade's docs and the guides under `docs/` say what a deployment can rely on;
//! `ARCHITECTURE.md` says how this crate keeps it.
//!
//! # Where things live
//!
//! One folder per part, in the order a call meets them. `ARCHITECTURE.md` (at the repository's
//! root) is the map: its "Parts" table names every file and folder of this crate's `src` and
//! what each owns (CI checks that it does), then the life of one call file by file, and the
//! contracts a change must keep. Shared types sit low and no file imports one that imports it
//! back.
#![forbid(unsafe_code)]

pub mod approval;
pub mod audit;
mod base;
#[cfg(feature = "claude-code")]
pub mod claude_code;
pub mod content;
pub mod dispatch;
mod error;
mod hook;
// Public as `approval::inbox` (the facade re-exports `approval` whole, so the feature reaches
// `toolgate::approval::inbox` with no facade feature in between).
#[cfg(feature = "inbox")]
#[doc(hidden)]
pub mod inbox;
#[cfg(feature = "mcp")]
pub mod mcp;
mod pipeline;
pub mod provider;
pub(crate) mod schema;
mod session;
pub mod store;
pub mod testing;
mod texts;
#[cfg(feature = "tower")]
pub mod tower;

#[doc(hidden)]
pub mod macro_support;

pub use content::message::{Message, ToolResult, ToolUse};
pub use dispatch::builder::BuildError;
pub use dispatch::dispatcher::Dispatcher;
pub use error::{CallError, Halt, RespondError, ToolError};
pub use hook::context::HookContext;
pub use hook::decision::{Decision, Rewrite};
pub use hook::state::State;
pub use session::Session;
pub use session::reply::Reply;

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
