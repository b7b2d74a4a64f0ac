//! The error collector (after serde_derive's `Ctxt`): every problem of an item is gathered while
//! it is checked and reported together, and the collector insists on being checked.

use proc_macro2::Span;
use quote::ToTokens;
use std::fmt::Display;

/// Gathers the errors found while one item is checked. `check` must be called before it is
/// dropped (a forgotten check would silently expand a broken item).
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Option<syn::Error>,
    checked: bool,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt::default()
    }

    /// Adds an error spanned on `tokens` (the smallest offending tokens).
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, msg: impl Display) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    /// Adds an error at `span`.
    pub(crate) fn at(&mut self, span: Span, msg: impl Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// Adds an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(all) => all.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// Finishes checking: every error gathered, combined into one `syn::Error`, if any.
    pub(crate) fn check(mut self) -> Result<(), syn::Error> {
        self.checked = true;
        match self.errors.take() {
            Some(errors) => Err(errors),
            None => Ok(()),
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !self.checked && !std::thread::panicking() {
            panic!("toolgate-macros: an error collector was dropped without being checked");
        }
    }
}
