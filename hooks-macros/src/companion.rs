//! The items `#[tool]` puts beside its function so that hooks can name the tool, and how a
//! hook's `tools = [...]` finds them: both sides of one contract, kept in one file.
//!
//! Beside `#[tool] fn lookup_user`, at the function's visibility:
//! - the companion constant `__toolgate_tool_lookup_user: ToolRef` (value namespace), holding the
//!   tool's name. Its name is hidden, so it never clashes with the user's items (an item named
//!   like the function in the type namespace would clash with a `mod lookup_user;` beside it),
//!   and it is `pub` when the function is, so a hook in another crate finds it;
//! - the name guard, a private item named after the tool's name (`__toolgate_tool_named_lookup`
//!   for `name = "lookup"`): two tools with one name in one module define it twice, and rustc's
//!   "defined multiple times" error points at both names.
//!
//! A matcher entry `tools::lookup_user` becomes, in a block of its own:
//!
//! ```text
//! const __toolgate_tool_lookup_user: NotATool = NotATool;   // the fallback
//! ToolFunction::tool_name(tools::lookup_user, { use tools::*; __toolgate_tool_lookup_user })
//! ```
//!
//! The glob in the inner block brings the real companion when the module has one, and it
//! shadows the fallback of the outer block; a single name is looked up with `use self::*;`. So
//! the lookup of the constant never fails, and what the user reads is about the path they wrote:
//! - a misspelled function is rustc's own "cannot find value `lookup_usr`" with its "a function
//!   with a similar name exists: `lookup_user`"; the fallback's unmet `ToolFunction` bound is on
//!   the unresolved path's error type, which rustc does not report: one error;
//! - a misspelled module is rustc's "unresolved import `tols`" (rustc then holds back the crate's
//!   other "cannot find" errors until it is fixed, as for any failed glob import);
//! - a function that is not a tool, or a tool imported by name without its companion, finds the
//!   fallback: `ToolFunction`'s `#[diagnostic::on_unimplemented]` says "`fn() {helper}` is not a
//!   `#[tool]` function, or its tool is not in scope here" on the path, and its notes say what to
//!   write;
//! - a tool defined inside a function body cannot be named: `self::*` is the module's, and the
//!   fallback in the block shadows the function body's items. No fallback can rank below a
//!   function body's items but above a module's glob imports (a module-level fallback glob makes
//!   the name ambiguous beside the user's `use tools::*;`, E0659), so the lookup serves modules,
//!   where `inventory` registrations and `registered_under` filters live anyway;
//! - a path naming the constant itself (rustc's suggestions did, before) is refused here, with
//!   the function's name to write instead.
//!
//! Measured alternatives (rustc 1.95): naming the constant alone gave "cannot find value
//! `__toolgate_tool_lookup_usr`" with a suggestion to write the constant; naming the function and
//! the constant gave two errors for one misspelling; a type-namespace companion named like the
//! function, even glob-imported so that it yields to the user's items, breaks a hook naming a
//! tool that has a `mod` of the same name beside it; a `macro_rules!` companion cannot be `pub`
//! across crates.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path, Visibility};

/// The prefix of every companion constant's name.
const COMPANION_PREFIX: &str = "__toolgate_tool_";

/// A tool's name, and where it was written.
pub(crate) struct ToolName {
    /// The name the model calls: `name = "…"`, else the function's name without `r#`.
    pub(crate) value: String,
    /// The `name = "…"` literal, else the function's name: a duplicate-name error points here.
    pub(crate) span: Span,
}

/// An identifier as written, `r#` removed: the tool name `type` for `fn r#type`.
pub(crate) fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// The companion constant of the function named `ident`, spanned on `span`.
fn companion_ident(ident: &Ident, span: Span) -> Ident {
    format_ident!("{}{}", COMPANION_PREFIX, unraw(ident), span = span)
}

/// The name guard's identifier, or `None` when the name breaks `^[a-zA-Z0-9_-]{1,64}$` (an error
/// says so). One-to-one: a name of letters, digits and `_` is written as is after `named_`
/// (`get_order` → `__toolgate_tool_named_get_order`); a name with a `-`, which no identifier may
/// hold, goes after `dashed_` with `_` written `__` and `-` written `_h` (`a-b` →
/// `__toolgate_tool_dashed_a_hb`, apart from `a_hb` → `__toolgate_tool_named_a_hb`).
fn guard_ident(name: &ToolName) -> Option<Ident> {
    if name_problem(&name.value).is_some() {
        return None;
    }
    let ident = if name.value.contains('-') {
        let escaped = name.value.replace('_', "__").replace('-', "_h");
        format!("__toolgate_tool_dashed_{escaped}")
    } else {
        format!("__toolgate_tool_named_{}", name.value)
    };
    Some(Ident::new(&ident, name.span))
}

/// Why a tool name breaks `^[a-zA-Z0-9_-]{1,64}$`, if it does.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a tool name cannot be empty".into());
    }
    let chars = name.chars().count();
    if chars > 64 {
        return Some(format!(
            "tool name `{name}` is {chars} characters long; the limit is 64 \
             (`^[a-zA-Z0-9_-]{{1,64}}$`)"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Some(format!(
            "tool name `{name}` contains {c:?}; use only letters, digits, `_` and `-` \
             (`^[a-zA-Z0-9_-]{{1,64}}$`)"
        ));
    }
    None
}

/// The companion constant and the name guard of `#[tool] #vis fn #ident`. Emitted whether or not
/// the tool has errors (thiserror's fallback), so a mistake in a tool is one error, not one more
/// in every hook that names it. `name` is `None` when the tool's name is unknown or unusable: the
/// guard is left out, the constant holds the function's name (the crate does not build anyway).
pub(crate) fn items(
    private: &TokenStream,
    vis: &Visibility,
    ident: &Ident,
    name: Option<&ToolName>,
) -> TokenStream {
    let companion = companion_ident(ident, ident.span());
    let value = name.map_or_else(|| unraw(ident), |n| n.value.clone());
    // Spanned on the name, so "defined multiple times" points at the two names.
    let guard = name.and_then(|n| {
        let guard = guard_ident(n)?;
        Some(quote_spanned! {n.span=>
            #[allow(dead_code, non_upper_case_globals)]
            const #guard: () = ();
        })
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        /// Names the tool of this `#[tool]` function for hook matchers (not public API).
        #vis const #companion: #private::ToolRef = #private::ToolRef { name: #value };

        #guard
    }
}

/// Why a matcher entry cannot name a tool, whatever it resolves to: it names the hidden
/// constant (rustc's suggestions used to), or it has generic arguments.
pub(crate) fn matcher_problem(path: &Path) -> Option<String> {
    let last = path.segments.last()?;
    let written = unraw(&last.ident);
    if let Some(function) = written.strip_prefix(COMPANION_PREFIX) {
        return Some(format!(
            "`{written}` is the hidden constant `#[tool]` puts beside `{function}`: name the \
             function itself, `tools = [{function}]`"
        ));
    }
    if path
        .segments
        .iter()
        .any(|s| !matches!(s.arguments, syn::PathArguments::None))
    {
        return Some(
            "a `#[tool]` function is named by its path alone, without generic arguments".into(),
        );
    }
    None
}

/// The tool name of one matcher entry, as an expression: `path` is a `#[tool]` function as the
/// user wrote it (`lookup_user`, `tools::lookup_user`, `other_crate::lookup_user`).
pub(crate) fn matcher_entry(private: &TokenStream, path: &Path) -> TokenStream {
    let Some(last) = path.segments.last() else {
        // syn parses no empty path; an entry must never silently match nothing.
        return quote!(::core::compile_error!(
            "toolgate: an empty path in `tools = [...]`"
        ));
    };
    // Every token on the path, so an error underlines the path and nothing else.
    let span = path.span();
    let companion = companion_ident(&last.ident, span);
    // The module the function is in: the path without its last segment, or this module.
    let mut module = path.clone();
    module.segments.pop();
    let module = if module.segments.is_empty() {
        quote_spanned!(span=> self)
    } else {
        let segments = module.segments.pairs().map(|p| p.into_value());
        let colon = &module.leading_colon;
        quote!(#colon #(#segments)::*)
    };
    let private_on_path = respan(private, span);
    let lookup = quote_spanned! {span=>
        #private_on_path::ToolFunction::tool_name(#path, {
            #[allow(unused_imports)]
            use #module::*;
            #companion
        })
    };
    quote! {
        {
            #[allow(dead_code, non_upper_case_globals)]
            const #companion: #private::NotATool = #private::NotATool;
            #lookup
        }
    }
}

/// `tokens` with every span set to `span` (groups included).
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner = Group::new(group.delimiter(), respan(&group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(name: &str) -> Option<String> {
        let name = ToolName {
            value: name.to_owned(),
            span: Span::call_site(),
        };
        guard_ident(&name).map(|ident| ident.to_string())
    }

    #[test]
    fn name_guards_are_one_to_one() {
        assert_eq!(
            guard("get_order").as_deref(),
            Some("__toolgate_tool_named_get_order")
        );
        assert_eq!(guard("a-b").as_deref(), Some("__toolgate_tool_dashed_a_hb"));
        assert_eq!(guard("a_hb").as_deref(), Some("__toolgate_tool_named_a_hb"));
        assert_eq!(
            guard("a_-b").as_deref(),
            Some("__toolgate_tool_dashed_a___hb")
        );
        assert_eq!(
            guard("a-_b").as_deref(),
            Some("__toolgate_tool_dashed_a_h__b")
        );
        assert_eq!(guard("a b"), None);
        assert_eq!(guard(""), None);
    }

    #[test]
    fn matcher_entries_refuse_the_hidden_constant_and_generics() {
        let problem = |path: Path| matcher_problem(&path);
        assert_eq!(problem(syn::parse_quote!(tools::lookup_user)), None);
        assert_eq!(
            problem(syn::parse_quote!(tools::__toolgate_tool_lookup_user)).as_deref(),
            Some(
                "`__toolgate_tool_lookup_user` is the hidden constant `#[tool]` puts beside \
                 `lookup_user`: name the function itself, `tools = [lookup_user]`"
            )
        );
        assert_eq!(
            problem(syn::parse_quote!(tools::lookup::<u8>)).as_deref(),
            Some("a `#[tool]` function is named by its path alone, without generic arguments")
        );
    }

    #[test]
    fn matcher_entries_look_in_the_module_of_the_path() {
        let private = quote!(::toolgate::__private);
        let entry = |path: Path| matcher_entry(&private, &path).to_string();
        let expected = |module: &str, path: &str, companion: &str| {
            format!(
                "{{ # [allow (dead_code , non_upper_case_globals)] const {companion} : :: \
                 toolgate :: __private :: NotATool = :: toolgate :: __private :: NotATool ; :: \
                 toolgate :: __private :: ToolFunction :: tool_name ({path} , {{ # [allow \
                 (unused_imports)] use {module} :: * ; {companion} }}) }}"
            )
        };
        assert_eq!(
            entry(syn::parse_quote!(lookup_user)),
            expected("self", "lookup_user", "__toolgate_tool_lookup_user")
        );
        assert_eq!(
            entry(syn::parse_quote!(r#type)),
            expected("self", "r#type", "__toolgate_tool_type")
        );
        assert_eq!(
            entry(syn::parse_quote!(::other::tools::lookup_user)),
            expected(
                ":: other :: tools",
                ":: other :: tools :: lookup_user",
                "__toolgate_tool_lookup_user"
            )
        );
    }
}
