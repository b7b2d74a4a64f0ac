//! The compile-time registry the macros fill: each `#[tool]` and hook submits a [`Registration`]
//! with `inventory`; [`DispatcherBuilder`](crate::dispatch::DispatcherBuilder) collects them
//! ([`registered`]).

use crate::hook::definitions::{PostHookDef, PreHookDef, StopHookDef, ToolDef};

/// One item registered at compile time by a toolgate macro. Not public API: the macros submit
/// these with `inventory`; [`DispatcherBuilder`](crate::dispatch::DispatcherBuilder) collects them.
#[doc(hidden)]
pub struct Registration {
    /// The item's full Rust path (`module_path!()` + `::` + the function's name).
    pub path: &'static str,
    /// What it is, and how to make it.
    pub kind: RegistrationKind,
}

/// What a [`Registration`] makes. Not public API.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum RegistrationKind {
    /// A `#[tool]`: its name (for matcher checks without building it) and its maker.
    Tool {
        /// The tool's name.
        name: &'static str,
        /// Builds the definition.
        make: fn() -> ToolDef,
    },
    /// A `#[pre_hook]`.
    PreHook(fn() -> PreHookDef),
    /// A `#[post_hook]`.
    PostHook(fn() -> PostHookDef),
    /// A `#[stop_hook]`.
    StopHook(fn() -> StopHookDef),
}

inventory::collect!(Registration);

/// Every item registered with the macros in the linked crates.
pub(crate) fn registered() -> impl Iterator<Item = &'static Registration> {
    inventory::iter::<Registration>.into_iter()
}

/// Names a `#[tool]` function's tool, so hook matchers can refer to the function by its Rust
/// path and a misspelling is a compile error. `#[tool]` emits one as a hidden constant named
/// `__toolgate_tool_<fn name>` beside the function. Not public API.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ToolRef {
    /// The tool's name.
    pub name: &'static str,
}
