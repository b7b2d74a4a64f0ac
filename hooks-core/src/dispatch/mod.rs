//! Building a dispatcher by hand, and what it is built from: [`DispatcherBuilder`] (sources,
//! settings, every start-up check and its [`BuildProblem`]), the definitions the macros write
//! for you ([`ToolDef`], [`PreHookDef`], [`PostHookDef`], [`StopHookDef`], [`Matcher`]), what a
//! tool or hook is called with ([`Env`], [`StateKey`], the context's [`Clock`] and
//! [`Extensions`]), what a tool does to the world ([`Effect`]), a tool backed by another service
//! ([`ToolCaller`], [`SyncCaller`], [`CallAnswer`]), the bounds and timers of a call
//! ([`Limits`], [`Timer`]), and the PreToolUse chain asked on its own ([`ChainVerdict`]).
//!
//! You need it when you write tools or hooks without the macros, wrap another dispatcher, an
//! MCP server or a subagent, change a bound or a deadline, or enforce the rules where the tool
//! runs elsewhere (Claude Code); a dispatcher made of `#[tool]` and `#[pre_hook]` functions
//! needs only [`Dispatcher::builder`](crate::Dispatcher::builder).

pub(crate) mod builder;
pub(crate) mod dispatcher;
pub(crate) mod examples;

pub use crate::base::future::BoxFuture;
pub use crate::base::timer::Timer;
#[cfg(feature = "tokio")]
pub use crate::base::timer::TokioTimer;
pub use crate::error::HookError;
pub use crate::hook::answer::CallAnswer;
pub use crate::hook::caller::{SyncCaller, ToolCaller, sync_caller};
pub use crate::hook::context::{Clock, Extensions, HookContextBuilder};
pub use crate::hook::definitions::{Matcher, PostHookDef, PreHookDef, StopHookDef, ToolDef};
pub use crate::hook::effect::Effect;
pub use crate::hook::state::{Env, MissingState, StateKey};
pub use crate::pipeline::chain_verdict::ChainVerdict;
pub use crate::pipeline::limits::{Limits, MAX_RESULT_BLOCKS};
pub use crate::pipeline::stats::LeaseStats;
pub use builder::{BuildProblem, DispatcherBuilder};
