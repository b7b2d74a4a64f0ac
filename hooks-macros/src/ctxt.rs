//! An error collector (after serde_derive's `Ctxt`): every problem of an item is gathered and
//! reported together, and the collector insists on being checked.

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

/// Gathers errors while an item is checked.
#[derive(Default)]
pub(crate) struct Errors {
    errors: Option<syn::Error>,
    checked: bool,
}

impl Errors {
    pub(crate) fn new() -> Self {
        Errors::default()
    }

    /// Adds an error spanned on `tokens`.
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, msg: impl Display) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    /// Adds an error at `span`.
    pub(crate) fn at(&mut self, span: proc_macro2::Span, msg: impl Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// Adds an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(all) => all.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// Finishes: the errors as `compile_error!` tokens, if any.
    pub(crate) fn check(mut self) -> Option<TokenStream> {
        self.checked = true;
        self.errors.take().map(|e| e.to_compile_error())
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.checked && !std::thread::panicking() {
            panic!("toolgate-macros: an error collector was dropped without being checked");
        }
    }
}
