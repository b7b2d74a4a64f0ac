//! Procedural macros of [toolgate](https://docs.rs/toolgate): `#[tool]`, `#[pre_hook]`,
//! `#[post_hook]` and `#[stop_hook]`. Use them through the `toolgate` facade; the code they
//! generate names only `::toolgate::__private::…` (or `crate = path`'s), so a user's crate needs
//! no other dependency.
//!
//! Layout (after serde_derive): `func` parses the function by hand (no syn `full`), `args`
//! parses attribute arguments, `params` tells injected parameters from model arguments,
//! `tool` and `hook` check and expand, `ctxt` gathers every error of an item so they are
//! reported together. On error the function is emitted unchanged (minus the parameter
//! attributes the macro owns) next to the errors, so IDEs keep working.

mod args;
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
#[proc_macro_attribute]
pub fn pre_hook(args: TokenStream, item: TokenStream) -> TokenStream {
    hook::expand(hook::Kind::Pre, args.into(), item.into()).into()
}

/// Makes a function a PostToolUse observer: `#[post_hook]` or `#[post_hook(tools = [a])]`.
#[proc_macro_attribute]
pub fn post_hook(args: TokenStream, item: TokenStream) -> TokenStream {
    hook::expand(hook::Kind::Post, args.into(), item.into()).into()
}

/// Makes a function a Stop hook: `#[stop_hook]`, run once per session.
#[proc_macro_attribute]
pub fn stop_hook(args: TokenStream, item: TokenStream) -> TokenStream {
    hook::expand(hook::Kind::Stop, args.into(), item.into()).into()
}
