//! toolgate: enforce an LLM agent's rules in code.
#![forbid(unsafe_code)]

pub use toolgate_core::*;
pub use toolgate_macros::{post_hook, pre_hook, stop_hook, tool};

#[doc(hidden)]
/// Not public API: what the macros' generated code reaches. Free to change in any release.
pub mod __private {
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use toolgate_core::macro_support::*;
    pub use toolgate_core::{
        CallRecord, Decision, HookError, PostHookDef, PreHookDef, SessionSummary, StopHookDef,
        ToolDef, ToolError, ToolUse,
    };
}
