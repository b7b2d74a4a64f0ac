//! What a tool or a hook is: the definitions a dispatcher is built from, the trusted context and
//! the state they are called with, the decision a PreToolUse hook returns, a tool's effect, and
//! a tool backed by another service (a wrapped caller) with its answer.

pub(crate) mod answer;
pub(crate) mod caller;
pub(crate) mod context;
pub(crate) mod decision;
pub(crate) mod definitions;
pub(crate) mod effect;
pub(crate) mod erased;
pub(crate) mod registry;
pub(crate) mod state;
