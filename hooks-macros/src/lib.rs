//! Procedural macros of [toolgate](https://docs.rs/toolgate): `#[tool]`, `#[pre_hook]`,
//! `#[post_hook]` and `#[stop_hook]`. Use them through the `toolgate` facade; the code they
//! generate names only `::toolgate::__private::…` (or `crate = path`'s), so a user's crate needs
//! no other dependency.
//!
//! Each attribute reads like serde_derive: parse the function and the attribute's arguments,
//! check them into a spec with every problem gathered in one `Ctxt`, then
//! `ctxt.check()` and an expansion that cannot fail. With errors, the function is emitted
//! unchanged (minus the parameter attributes the macro owns) next to the errors, so IDEs keep
//! working, and a tool still emits the companion items hooks name it by, so one mistake is one
//! error (thiserror's fallback).
//!
//! # Where things live
//!
//! ARCHITECTURE.md, "The macros", names each file and what it holds.

mod args;
mod codegen;
mod companion;
mod ctxt;
mod doc;
mod func;
mod hook;
mod params;
mod tool;

use proc_macro::TokenStream;

/// Makes a function a tool: derives its input schema from the signature and doc comments and
/// registers it. See the `toolgate` facade's documentation for the full contract.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

/// Makes a function a PreToolUse hook: `#[pre_hook(order = N, tools = [a, b])]`.
///
/// - `order = N` (required): lower runs first; equal orders run by the function's path.
/// - `tools = [a, b::c]`: the `#[tool]` functions it guards (by Rust path); without it, every
///   tool. `tools = []` is a compile error: a hook that matches nothing would guard nothing.
/// - A parameter `&T` other than `&HookContext` and `&ToolUse` is the tool's typed input: the
///   hook applies to the tools whose input type is `T` (narrowed by `tools`) and returns
///   `Decision<T>`.
/// - `timeout_ms = N` (async hooks only): the hook's deadline instead of the dispatcher's
///   (10 s by default). Past it the call is not run and the agent halts with `hook_timeout`.
///
/// **A sync hook cannot be cut short**: a deadline acts at an `.await` that yields, so a sync
/// hook (or async code that blocks its thread) runs to its end whatever its deadline. Make a
/// hook that waits on the network `async`.
#[proc_macro_attribute]
pub fn pre_hook(args: TokenStream, item: TokenStream) -> TokenStream {
    hook::expand(hook::Kind::Pre, args.into(), item.into()).into()
}

/// Makes a function a PostToolUse observer: `#[post_hook]` or `#[post_hook(tools = [a])]`
/// (`tools = []` is a compile error: an observer that matches nothing would never run).
#[proc_macro_attribute]
pub fn post_hook(args: TokenStream, item: TokenStream) -> TokenStream {
    hook::expand(hook::Kind::Post, args.into(), item.into()).into()
}

/// Makes a function a Stop hook: `#[stop_hook]`, run once per session.
#[proc_macro_attribute]
pub fn stop_hook(args: TokenStream, item: TokenStream) -> TokenStream {
    hook::expand(hook::Kind::Stop, args.into(), item.into()).into()
}
