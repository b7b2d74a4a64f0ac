//! A hand parser for the function items the attributes go on.
//!
//! syn's `ItemFn` needs syn's `full` feature, which roughly doubles syn's build; serde_derive,
//! schemars_derive and thiserror build syn without it. A tool or hook is a plain function, so
//! this parses exactly what one can hold (attributes, visibility, qualifiers, name, generics,
//! parameters, return type, where clause) with the `derive`-level parsers and keeps the body as
//! an opaque token group. Whatever is parsed is written back unchanged, except the attributes
//! the macros consume (`///` on parameters, `#[input]`).

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Generics, Ident, LitStr, ReturnType, Token, Type, Visibility, WhereClause};

use crate::ctxt::Ctxt;

/// A function item.
pub(crate) struct Func {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) constness: Option<Token![const]>,
    pub(crate) asyncness: Option<Token![async]>,
    pub(crate) unsafety: Option<Token![unsafe]>,
    pub(crate) abi: Option<(Token![extern], Option<LitStr>)>,
    pub(crate) fn_token: Token![fn],
    pub(crate) ident: Ident,
    pub(crate) generics: Generics,
    pub(crate) params: Vec<Param>,
    pub(crate) output: ReturnType,
    pub(crate) where_clause: Option<WhereClause>,
    pub(crate) body: Group,
}

/// One parameter.
pub(crate) struct Param {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) kind: ParamKind,
}

pub(crate) enum ParamKind {
    /// `self`, `&self`, `mut self`, `self: Box<Self>`: kept as tokens.
    Receiver(TokenStream),
    /// `pat: Type`.
    Typed {
        /// The pattern's tokens (`name`, `mut name`, `_`, `(a, b)`).
        pat: TokenStream,
        /// The name when the pattern is a plain (possibly `mut`) identifier.
        ident: Option<Ident>,
        colon: Token![:],
        ty: Box<Type>,
    },
}

impl Parse for Func {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let constness: Option<Token![const]> = input.parse()?;
        let asyncness: Option<Token![async]> = input.parse()?;
        let unsafety: Option<Token![unsafe]> = input.parse()?;
        let abi = if input.peek(Token![extern]) {
            let ext: Token![extern] = input.parse()?;
            let name: Option<LitStr> = input.parse()?;
            Some((ext, name))
        } else {
            None
        };
        let fn_token: Token![fn] = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "toolgate's attributes go on a function item (`fn name(…) { … }`)",
            )
        })?;
        let ident: Ident = input.parse()?;
        let generics: Generics = input.parse()?;
        let content;
        let _paren = syn::parenthesized!(content in input);
        let mut params = Vec::new();
        while !content.is_empty() {
            params.push(content.parse::<Param>()?);
            if content.is_empty() {
                break;
            }
            content.parse::<Token![,]>()?;
        }
        let output: ReturnType = input.parse()?;
        // `Generics`' own parser stops at `>`: the `where` clause comes after the output.
        let where_clause: Option<WhereClause> = input.parse()?;
        let body: Group = match input.parse::<TokenTree>() {
            Ok(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => g,
            Ok(other) => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected the function's body `{ … }`",
                ));
            }
            Err(e) => {
                return Err(syn::Error::new(
                    e.span(),
                    "expected the function's body `{ … }`",
                ));
            }
        };
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the function's body"));
        }
        Ok(Func {
            attrs,
            vis,
            constness,
            asyncness,
            unsafety,
            abi,
            fn_token,
            ident,
            generics,
            params,
            output,
            where_clause,
            body,
        })
    }
}

impl Parse for Param {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        // Receivers: `self`, `mut self`, `&self`, `&mut self`, `&'a self`, `self: T`.
        let fork = input.fork();
        let _ = fork.parse::<Option<Token![&]>>();
        let _ = fork.parse::<Option<syn::Lifetime>>();
        let _ = fork.parse::<Option<Token![mut]>>();
        if fork.peek(Token![self]) {
            let mut tokens = TokenStream::new();
            while !input.is_empty() && !input.peek(Token![,]) {
                let tt: TokenTree = input.parse()?;
                tt.to_tokens(&mut tokens);
            }
            return Ok(Param {
                attrs,
                kind: ParamKind::Receiver(tokens),
            });
        }
        // The pattern: everything up to the `:` at this depth.
        let mut pat = TokenStream::new();
        let mut idents = Vec::new();
        let mut other = false;
        while !input.is_empty() && !input.peek(Token![:]) {
            let tt: TokenTree = input.parse()?;
            match &tt {
                TokenTree::Ident(i) if i == "mut" && idents.is_empty() => {}
                TokenTree::Ident(i) => idents.push(i.clone()),
                _ => other = true,
            }
            tt.to_tokens(&mut pat);
        }
        let colon: Token![:] = input.parse()?;
        let ty: Type = input.parse()?;
        let ident = if !other && idents.len() == 1 {
            idents.pop()
        } else {
            None
        };
        Ok(Param {
            attrs,
            kind: ParamKind::Typed {
                pat,
                ident,
                colon,
                ty: Box::new(ty),
            },
        })
    }
}

impl Func {
    /// Reports what a tool or hook function cannot be: `const`, `unsafe`, `extern`, generic.
    /// `what` names the item in messages ("tool", "PreToolUse hook"); `generic_fix` says how to
    /// do without generics.
    pub(crate) fn check_plain(&self, what: &str, generic_fix: &str, cx: &mut Ctxt) {
        if let Some(c) = &self.constness {
            cx.spanned(
                c,
                format_args!("a {what} cannot be a `const fn`; remove `const`"),
            );
        }
        if let Some(u) = &self.unsafety {
            cx.spanned(
                u,
                format_args!(
                    "a {what} cannot be an `unsafe fn`: it runs on the model's untrusted input"
                ),
            );
        }
        if let Some((e, _)) = &self.abi {
            cx.spanned(
                e,
                format_args!("a {what} cannot have an `extern` ABI; remove it"),
            );
        }
        if !self.generics.params.is_empty() {
            cx.spanned(
                &self.generics,
                format_args!("a {what} cannot be generic: {generic_fix}"),
            );
        }
        if let Some(w) = &self.where_clause {
            cx.spanned(
                w,
                format_args!("a {what} cannot have a `where` clause: it cannot be generic"),
            );
        }
    }

    /// Reports a deadline on a sync function: sync code cannot be cut.
    pub(crate) fn check_timeout(&self, timeout_ms: Option<(u64, Span)>, cx: &mut Ctxt) {
        if let Some((_, span)) = timeout_ms
            && self.asyncness.is_none()
        {
            cx.at(
                span,
                "`timeout_ms` needs an `async fn`: sync code cannot be cut at a deadline",
            );
        }
    }
}

impl Func {
    /// Parses the item an attribute sits on; on failure, the item as written followed by the
    /// parse error, so the rest of the crate still sees the function.
    pub(crate) fn parse_item(item: TokenStream) -> Result<Func, TokenStream> {
        syn::parse2(item.clone()).map_err(|e| {
            let e = e.to_compile_error();
            quote!(#item #e)
        })
    }
}

impl ToTokens for Param {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        match &self.kind {
            ParamKind::Receiver(r) => r.to_tokens(tokens),
            ParamKind::Typed { pat, colon, ty, .. } => {
                pat.to_tokens(tokens);
                colon.to_tokens(tokens);
                ty.to_tokens(tokens);
            }
        }
    }
}

impl ToTokens for Func {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let Func {
            attrs,
            vis,
            constness,
            asyncness,
            unsafety,
            abi,
            fn_token,
            ident,
            generics,
            params,
            output,
            where_clause,
            body,
            ..
        } = self;
        let abi = abi.as_ref().map(|(e, n)| quote!(#e #n));
        tokens.extend(quote! {
            #(#attrs)* #vis #constness #asyncness #unsafety #abi #fn_token #ident #generics
            ( #(#params),* ) #output #where_clause #body
        });
    }
}
