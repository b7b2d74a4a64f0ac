//! `#[tool]`: parse the attribute and the function, check them into a [`ToolSpec`], then expand
//! (serde_derive's `from_ast` → `check` → `ctxt.check()?` → expand). With errors, the function,
//! the errors and the companion items hooks name the tool by (thiserror's fallback).

mod check;
mod expand;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;
use crate::func::Func;

pub(crate) use check::ToolSpec;

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match Func::parse_item(item) {
        Ok(func) => func,
        Err(echo) => return echo,
    };
    let mut cx = Ctxt::new();
    let spec = ToolSpec::from_ast(&mut cx, args, func);
    match cx.check() {
        Ok(()) => expand::tool(&spec),
        Err(errors) => expand::fallback(&spec, &errors),
    }
}
