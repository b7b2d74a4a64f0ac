//! Attribute arguments, parsed by hand with `syn::meta::parser` (no darling).
//!
//! Every key consumes its whole value (`= tokens` up to the next top-level comma) before the
//! value is checked, so one bad argument never derails the others: all problems of an
//! attribute are reported together.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{LitBool, LitInt, LitStr, Path, Token};

use crate::ctxt::Ctxt;

/// The keys an attribute accepts, for messages.
pub(crate) struct Keys {
    pub(crate) attr: &'static str,
    pub(crate) valid: &'static [&'static str],
}

/// One parsed `key = value` (or flag) argument.
pub(crate) struct Arg {
    pub(crate) key: String,
    pub(crate) key_span: Span,
    /// `None` for a flag.
    pub(crate) value: Option<TokenStream>,
}

/// Parses the arguments of `#[attr(...)]`, reporting syntax errors, unknown keys and
/// duplicates to `cx`.
pub(crate) fn parse(args: TokenStream, keys: &Keys, cx: &mut Ctxt) -> Vec<Arg> {
    let mut out: Vec<Arg> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_else(|| meta.path.to_token_stream().to_string().replace(' ', ""));
        let key_span = meta.path.span();
        let parenthesized = meta.input.peek(syn::token::Paren);
        let value = value_tokens(&meta)?;
        if parenthesized {
            cx.at(
                key_span,
                format_args!(
                    "write `{key} = …`, not `{key}(…)` (a flag is written alone, without \
                     parentheses)"
                ),
            );
            return Ok(());
        }
        if !keys.valid.contains(&key.as_str()) {
            cx.at(
                key_span,
                format_args!(
                    "unknown argument `{key}` for `#[{}]`; valid arguments are {}",
                    keys.attr,
                    keys.valid
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            return Ok(());
        }
        if out.iter().any(|a| a.key == key) {
            cx.at(
                key_span,
                format_args!("duplicate argument `{key}`; give it once"),
            );
            return Ok(());
        }
        out.push(Arg {
            key,
            key_span,
            value,
        });
        Ok(())
    });
    if let Err(e) = parser.parse2(args) {
        cx.push(e);
    }
    out
}

/// Consumes `= tokens…` up to the next top-level comma, or a parenthesized group; `None` for a
/// bare flag.
fn value_tokens(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<TokenStream>> {
    if meta.input.peek(Token![=]) {
        let input = meta.value()?;
        let mut tokens = TokenStream::new();
        while !input.is_empty() && !input.peek(Token![,]) {
            let tt: TokenTree = input.parse()?;
            tt.to_tokens(&mut tokens);
        }
        if tokens.is_empty() {
            return Err(input.error("expected a value after `=`"));
        }
        Ok(Some(tokens))
    } else if meta.input.peek(syn::token::Paren) {
        let group: proc_macro2::Group = meta.input.parse()?;
        Ok(Some(group.stream()))
    } else {
        Ok(None)
    }
}

impl Arg {
    fn value_or_err(&self, cx: &mut Ctxt, shape: &str) -> Option<&TokenStream> {
        match &self.value {
            Some(v) => Some(v),
            None => {
                cx.at(
                    self.key_span,
                    format_args!("`{}` needs a value: `{} = {shape}`", self.key, self.key),
                );
                None
            }
        }
    }

    /// A deadline in milliseconds: a positive integer literal.
    pub(crate) fn timeout_ms(&self, cx: &mut Ctxt) -> Option<(u64, Span)> {
        match self.int(cx, "500")? {
            n if n > 0 => Some((n as u64, self.key_span)),
            _ => {
                cx.spanned(
                    self.value.as_ref(),
                    "`timeout_ms` must be a positive number of milliseconds",
                );
                None
            }
        }
    }

    /// A string literal value.
    pub(crate) fn lit_str(&self, cx: &mut Ctxt) -> Option<LitStr> {
        let v = self.value_or_err(cx, "\"…\"")?;
        match syn::parse2::<LitStr>(v.clone()) {
            Ok(s) => Some(s),
            Err(_) => {
                cx.spanned(
                    v,
                    format_args!(
                        "`{}` must be a string literal, like `{} = \"…\"`",
                        self.key, self.key
                    ),
                );
                None
            }
        }
    }

    /// An integer literal, possibly negative, that fits an `i64`.
    pub(crate) fn int(&self, cx: &mut Ctxt, example: &str) -> Option<i64> {
        let v = self.value_or_err(cx, example)?;
        let parsed = (|input: syn::parse::ParseStream<'_>| {
            let neg: Option<Token![-]> = input.parse()?;
            let lit: LitInt = input.parse()?;
            let n: i128 = lit.base10_parse()?;
            Ok(if neg.is_some() { -n } else { n })
        })
        .parse2(v.clone());
        match parsed.map(i64::try_from) {
            Ok(Ok(n)) => Some(n),
            Ok(Err(_)) => {
                cx.spanned(
                    v,
                    format_args!(
                        "`{}` is out of range: it must fit in an i64 ({} to {})",
                        self.key,
                        i64::MIN,
                        i64::MAX
                    ),
                );
                None
            }
            Err(_) => {
                cx.spanned(
                    v,
                    format_args!(
                        "`{}` must be an integer literal, like `{} = {example}`",
                        self.key, self.key
                    ),
                );
                None
            }
        }
    }

    /// A path, given bare or as a string literal.
    pub(crate) fn path(&self, cx: &mut Ctxt) -> Option<TokenStream> {
        let v = self.value_or_err(cx, "path")?;
        if let Ok(s) = syn::parse2::<LitStr>(v.clone()) {
            return match s.parse::<Path>() {
                Ok(p) => Some(quote!(#p)),
                Err(_) => {
                    cx.spanned(
                        &s,
                        "`crate` must be a path, like `crate = my_facade::toolgate`",
                    );
                    None
                }
            };
        }
        match syn::parse2::<Path>(v.clone()) {
            Ok(p) => Some(quote!(#p)),
            Err(_) => {
                cx.spanned(
                    v,
                    "`crate` must be a path, like `crate = my_facade::toolgate`",
                );
                None
            }
        }
    }

    /// `true` or `false`.
    pub(crate) fn bool(&self, cx: &mut Ctxt) -> Option<bool> {
        let v = self.value_or_err(cx, "true` or `false")?;
        match syn::parse2::<LitBool>(v.clone()) {
            Ok(b) => Some(b.value),
            Err(_) => {
                cx.spanned(
                    v,
                    format_args!(
                        "`{}` must be `true` or `false`, like `{} = true`",
                        self.key, self.key
                    ),
                );
                None
            }
        }
    }

    /// The path of a function, bare (`examples::weather`) or as a string literal
    /// (`"examples::weather"`, serde's `default = "…"` form). `what` says what the function
    /// returns, for the error.
    pub(crate) fn function_path(&self, cx: &mut Ctxt, what: &str) -> Option<Path> {
        let v = self.value_or_err(cx, "path::to::function")?;
        let parsed = match syn::parse2::<LitStr>(v.clone()) {
            Ok(s) => s.parse::<Path>().ok(),
            Err(_) => syn::parse2::<Path>(v.clone()).ok(),
        };
        if parsed.is_none() {
            cx.spanned(
                v,
                format_args!(
                    "`{}` takes the path of a function returning {what}, like `{} = \
                     weather_examples`, not a value: write the values in that function",
                    self.key, self.key
                ),
            );
        }
        parsed
    }

    /// A bracketed list of paths: `[a, b::c]`.
    pub(crate) fn path_list(&self, cx: &mut Ctxt) -> Option<Vec<Path>> {
        let v = self.value_or_err(cx, "[tool_a, tool_b]")?;
        let list = (|input: syn::parse::ParseStream<'_>| {
            let content;
            syn::bracketed!(content in input);
            let items = Punctuated::<Path, Token![,]>::parse_terminated(&content)?;
            Ok(items.into_iter().collect::<Vec<_>>())
        })
        .parse2(v.clone());
        match list {
            Ok(items) if items.is_empty() => {
                cx.spanned(
                    v,
                    "`tools = []` matches nothing; name at least one #[tool] function, or leave \
                     `tools` out to match every tool",
                );
                None
            }
            Ok(items) => Some(items),
            Err(_) => {
                cx.spanned(
                    v,
                    "`tools` must be a list of #[tool] functions, like `tools = [lookup_user, \
                     issue_refund]`",
                );
                None
            }
        }
    }

    /// The arguments every attribute shares: `crate = path` and `timeout_ms = N` (a key that is
    /// neither is ignored here: `parse` already reported unknown keys).
    pub(crate) fn common(
        &self,
        cx: &mut Ctxt,
        krate: &mut TokenStream,
        timeout_ms: &mut Option<(u64, Span)>,
    ) {
        match self.key.as_str() {
            "timeout_ms" => *timeout_ms = self.timeout_ms(cx),
            "crate" => {
                if let Some(p) = self.path(cx) {
                    *krate = p;
                }
            }
            _ => {}
        }
    }

    /// A flag alone (`true`) or `key = true | false`.
    pub(crate) fn flag_or_bool(&self, cx: &mut Ctxt) -> Option<bool> {
        match &self.value {
            None => Some(true),
            Some(_) => self.bool(cx),
        }
    }

    /// A flag given a value is an error.
    pub(crate) fn flag(&self, cx: &mut Ctxt) -> bool {
        if let Some(v) = &self.value {
            cx.spanned(
                v,
                format_args!(
                    "`{}` is a flag and takes no value: write `{}` alone",
                    self.key, self.key
                ),
            );
            return false;
        }
        true
    }
}
