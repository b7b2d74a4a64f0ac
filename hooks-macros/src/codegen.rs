//! Pieces of generated code that `#[tool]` and the hook attributes share: the facade's private
//! path, the function's registered path, how an injected parameter is taken from the call's
//! environment, and a deadline.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ReturnType;
use syn::spanned::Spanned;

use crate::companion::unraw;
use crate::func::Func;
use crate::params::Injection;

/// `#krate::__private`: the only way generated code reaches runtime items.
pub(crate) fn private(krate: &TokenStream) -> TokenStream {
    quote!(#krate::__private)
}

/// The function's full path as a `&'static str` expression: `module_path!()::name`, the path a
/// registration is filtered and sorted by.
pub(crate) fn registered_path(func: &Func) -> TokenStream {
    let name = unraw(&func.ident);
    quote!(::core::concat!(::core::module_path!(), "::", #name))
}

/// Where errors about the return type point: the type, or the name when there is none.
pub(crate) fn return_span(func: &Func) -> Span {
    match &func.output {
        ReturnType::Default => func.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    }
}

/// `.await` for an async function.
pub(crate) fn awaited(func: &Func) -> Option<TokenStream> {
    func.asyncness.map(|_| quote!(.await))
}

/// `.timeout(Duration::from_millis(ms))`.
pub(crate) fn timeout(timeout_ms: Option<u64>) -> Option<TokenStream> {
    timeout_ms.map(|ms| quote!(.timeout(::core::time::Duration::from_millis(#ms))))
}

/// `let binding = <ty as Inject>::inject(__env)`, returning `Err(on_missing(e))` from the
/// generated function when a state is missing. Spanned on the parameter's type, so a type that is
/// not injectable is one error, there.
pub(crate) fn inject_let(
    private: &TokenStream,
    binding: &Ident,
    injection: &Injection,
    on_missing: TokenStream,
) -> TokenStream {
    let ty = &injection.ty;
    let inject = quote_spanned!(ty.span()=> <#ty as #private::Inject<'_>>::inject(__env));
    quote! {
        let #binding = match #inject {
            ::core::result::Result::Ok(v) => v,
            ::core::result::Result::Err(e) => return ::core::result::Result::Err(#on_missing(e)),
        };
    }
}

/// `.needs_state(StateKey::of::<T>())` for a `State<T>`, nothing for `&HookContext`.
pub(crate) fn needs_state(private: &TokenStream, injection: &Injection) -> Option<TokenStream> {
    let inner = injection.state.as_ref()?;
    Some(quote!(.needs_state(#private::StateKey::of::<#inner>())))
}
