//! The hook attributes' expansion from a checked [`HookSpec`] (it cannot fail), and the fallback
//! emitted beside the errors of one that did not check.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::Kind;
use super::check::{HookParam, HookSpec};
use crate::codegen::{
    awaited, inject_let, needs_state, private, registered_path, return_span, timeout,
};
use crate::companion::matcher_entry;

/// The function as written, and its registration.
pub(crate) fn hook(spec: &HookSpec) -> TokenStream {
    let p = private(&spec.krate);
    let func = &spec.func;
    let def = def_type(spec.kind, &p);
    let make = make_def(spec, &p);
    let matcher = matcher(spec, &p);
    let timeout = timeout(spec.timeout_ms);
    let states = spec.params.iter().filter_map(|param| match param {
        HookParam::Injected(injection) => needs_state(&p, injection),
        HookParam::Subject | HookParam::Input(_) => None,
    });
    let path = registered_path(func);
    let kind = match spec.kind {
        Kind::Pre => quote!(PreHook),
        Kind::Post => quote!(PostHook),
        Kind::Stop => quote!(StopHook),
    };
    let refusal = refusal(spec, &p);
    quote! {
        #func

        const _: () = {
            fn __toolgate_make() -> #def {
                let __def = {
                    #make
                    #matcher
                    #timeout
                    #(#states)*
                };
                #refusal
            }
            #p::inventory::submit! {
                #p::Registration {
                    path: #path,
                    kind: #p::RegistrationKind::#kind(__toolgate_make),
                }
            }
        };
    }
}

/// A PreToolUse hook whose return type cannot refuse a call (`Rewrite`, read by the probe at
/// compile time) is declared `rewrites_only`: no write tool's guard. Every other definition as
/// made.
fn refusal(spec: &HookSpec, p: &TokenStream) -> TokenStream {
    let syn::ReturnType::Type(_, ret) = &spec.func.output else {
        return quote!(__def);
    };
    if spec.kind != Kind::Pre {
        return quote!(__def);
    }
    quote! {{
        use #p::{MayRefuse as _, RewritesOnly as _};
        if #p::RefusalProbe::<#ret>::new().can_refuse() {
            __def
        } else {
            __def.rewrites_only()
        }
    }}
}

/// For a hook with errors: the function (so the rest of the crate and IDEs still see it) and the
/// errors.
pub(crate) fn fallback(spec: &HookSpec, errors: &syn::Error) -> TokenStream {
    let func = &spec.func;
    let errors = errors.to_compile_error();
    quote!(#func #errors)
}

/// The definition type the registration builds.
fn def_type(kind: Kind, p: &TokenStream) -> TokenStream {
    match kind {
        Kind::Pre => quote!(#p::PreHookDef),
        Kind::Post => quote!(#p::PostHookDef),
        Kind::Stop => quote!(#p::StopHookDef),
    }
}

/// The definition: a generated function that injects, calls the user's function and converts
/// what it returns, passed to the definition's constructor.
fn make_def(spec: &HookSpec, p: &TokenStream) -> TokenStream {
    let def = def_type(spec.kind, p);
    let path = registered_path(&spec.func);
    let order = (spec.kind == Kind::Pre).then(|| {
        let order = spec.order.unwrap_or_default();
        quote!(, #order)
    });
    let body = call_body(spec, p);
    if let Some(input) = typed_input(spec) {
        return typed_def(spec, p, input, &path, order, &body);
    }
    let output = match spec.kind {
        Kind::Pre => quote!(#p::Decision),
        Kind::Post | Kind::Stop => quote!(()),
    };
    let result = quote!(::core::result::Result<#output, #p::HookError>);
    if spec.func.asyncness.is_some() {
        let subject = match spec.kind {
            Kind::Pre => quote!(#p::ToolUse),
            Kind::Post => quote!(#p::CallRecord<'a>),
            Kind::Stop => quote!(#p::SessionSummary),
        };
        let ctor = match spec.kind {
            Kind::Pre | Kind::Post => quote!(new_async),
            Kind::Stop => quote!(new),
        };
        quote! {
            fn __toolgate_run<'a>(
                __env: #p::Env<'a>,
                __subject: &'a #subject,
            ) -> #p::BoxFuture<'a, #result> {
                ::std::boxed::Box::pin(async move { #body })
            }
            #def::#ctor(#path #order, __toolgate_run)
        }
    } else {
        let subject = match spec.kind {
            Kind::Pre => quote!(#p::ToolUse),
            Kind::Post => quote!(#p::CallRecord<'_>),
            Kind::Stop => quote!(#p::SessionSummary),
        };
        let ctor = match spec.kind {
            Kind::Pre | Kind::Post => quote!(sync),
            Kind::Stop => quote!(new),
        };
        quote! {
            fn __toolgate_run(__env: #p::Env<'_>, __subject: &#subject) -> #result {
                #body
            }
            #def::#ctor(#path #order, __toolgate_run)
        }
    }
}

/// The input type of a typed PreToolUse hook (`&T`), if it takes one.
fn typed_input(spec: &HookSpec) -> Option<&syn::Type> {
    spec.params.iter().find_map(|param| match param {
        HookParam::Input(ty) => Some(&**ty),
        _ => None,
    })
}

/// A typed PreToolUse hook's definition: `PreHookDef::typed::<T, _>` (or `typed_async`), spanned
/// on `T`, so a `T` that is not `Serialize` is one error on the parameter's type.
fn typed_def(
    spec: &HookSpec,
    p: &TokenStream,
    input: &syn::Type,
    path: &TokenStream,
    order: Option<TokenStream>,
    body: &TokenStream,
) -> TokenStream {
    let result = quote!(::core::result::Result<#p::Decision<#input>, #p::HookError>);
    let span = syn::spanned::Spanned::span(input);
    if spec.func.asyncness.is_some() {
        let ctor = quote_spanned!(span=> #p::PreHookDef::typed_async::<#input, _>);
        quote! {
            fn __toolgate_run<'a>(
                __env: #p::Env<'a>,
                __subject: &'a #p::ToolUse,
                __input: &'a #input,
            ) -> #p::BoxFuture<'a, #result> {
                ::std::boxed::Box::pin(async move { #body })
            }
            #ctor(#path #order, __toolgate_run)
        }
    } else {
        let ctor = quote_spanned!(span=> #p::PreHookDef::typed::<#input, _>);
        quote! {
            fn __toolgate_run(
                __env: #p::Env<'_>,
                __subject: &#p::ToolUse,
                __input: &#input,
            ) -> #result {
                #body
            }
            #ctor(#path #order, __toolgate_run)
        }
    }
}

/// The generated call: inject, call in declaration order, convert the return value (spanned on
/// the return type, where a wrong one is reported).
fn call_body(spec: &HookSpec, p: &TokenStream) -> TokenStream {
    let mut injections = Vec::new();
    let mut args = Vec::new();
    for (i, param) in spec.params.iter().enumerate() {
        match param {
            HookParam::Subject => args.push(quote!(__subject)),
            HookParam::Input(_) => args.push(quote!(__input)),
            HookParam::Injected(injection) => {
                let binding = format_ident!("__i{}", i);
                let on_missing = quote!(#p::HookError::new);
                injections.push(inject_let(p, &binding, injection, on_missing));
                args.push(quote!(#binding));
            }
        }
    }
    let fn_ident = &spec.func.ident;
    let awaited = awaited(&spec.func);
    let convert = match (spec.kind, typed_input(spec)) {
        (Kind::Pre, Some(input)) => quote_spanned!(return_span(&spec.func)=>
            #p::IntoTypedDecision::<#input>::into_typed_decision(__out)),
        (Kind::Pre, None) => quote_spanned!(return_span(&spec.func)=>
            #p::IntoDecision::into_decision(__out)),
        (Kind::Post | Kind::Stop, _) => quote_spanned!(return_span(&spec.func)=>
            #p::IntoObserved::into_observed(__out)),
    };
    quote! {
        #(#injections)*
        let __out = #fn_ident(#(#args),*) #awaited;
        #convert
    }
}

/// `.tools([...])`: each named `#[tool]` function's tool name, found beside it.
fn matcher(spec: &HookSpec, p: &TokenStream) -> Option<TokenStream> {
    let entries = spec
        .tools
        .as_ref()?
        .iter()
        .map(|path| matcher_entry(p, path));
    Some(quote!(.tools([#(#entries),*])))
}
