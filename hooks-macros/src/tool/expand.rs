//! `#[tool]`'s expansion from a checked [`ToolSpec`] (it cannot fail), and the fallback emitted
//! beside the errors of one that did not check.

use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ReturnType, Type};

use super::check::{ToolParam, ToolSpec};
use crate::codegen::{
    awaited, inject_let, needs_state, private, registered_path, return_span, timeout,
};
use crate::companion::{self, unraw};

/// The function as written, its companion items, and its registration.
pub(crate) fn tool(spec: &ToolSpec) -> TokenStream {
    let p = private(&spec.krate);
    let func = &spec.func;
    let companion = companion::items(&p, &func.vis, &func.ident, spec.name.as_ref());
    let name = tool_name(spec);
    let path = registered_path(func);
    let args_struct = args_struct(spec, &p);
    let (named_input, args_struct) = match spec.input_name {
        Some(_) => (args_struct, None),
        None => (None, args_struct),
    };
    let asserts = input_asserts(spec, &p);
    let make = make_def(spec, &p);
    let settings = settings(spec, &p);
    let output_schema = output_schema(spec, &p);
    // An external tool's function only declares the input: nothing calls it.
    let unused = spec
        .external
        .then(|| quote!(#[allow(dead_code, unused_variables)]));
    quote! {
        #unused
        #func

        #companion

        #named_input

        const _: () = {
            #args_struct
            #[allow(dead_code)]
            fn __toolgate_asserts() { #asserts }
            fn __toolgate_make() -> #p::ToolDef {
                let __def = {
                    #make
                    #settings
                    .path(#path)
                };
                #p::with_output_schema(__def, #output_schema)
            }
            #p::inventory::submit! {
                #p::Registration {
                    path: #path,
                    kind: #p::RegistrationKind::Tool { name: #name, make: __toolgate_make },
                }
            }
        };
    }
}

/// For a tool with errors: the function (so the rest of the crate and IDEs still see it), the
/// errors, and the companion items, so hooks naming the tool add no error of their own.
pub(crate) fn fallback(spec: &ToolSpec, errors: &syn::Error) -> TokenStream {
    let p = private(&spec.krate);
    let func = &spec.func;
    let companion = companion::items(&p, &func.vis, &func.ident, spec.name.as_ref());
    let errors = errors.to_compile_error();
    quote!(#func #errors #companion)
}

/// The tool's name; the function's when the spec has none (never, once checked).
fn tool_name(spec: &ToolSpec) -> String {
    spec.name
        .as_ref()
        .map_or_else(|| unraw(&spec.func.ident), |n| n.value.clone())
}

/// The `#[input]` struct, if the tool takes one.
fn input(spec: &ToolSpec) -> Option<&Type> {
    spec.params.iter().find_map(|param| match param {
        ToolParam::Input(ty) => Some(&**ty),
        _ => None,
    })
}

/// The type the input is deserialized into: the `#[input]` struct, else the generated one
/// (named by `input = Name`, or hidden).
fn args_type(spec: &ToolSpec) -> TokenStream {
    match (input(spec), &spec.input_name) {
        (Some(ty), _) => quote!(#ty),
        (None, Some(name)) => quote!(#name),
        (None, None) => quote!(__ToolgateArgs),
    }
}

/// The generated argument struct of a flat tool: one field per model argument, its doc comment
/// the description, its `#[serde]`/`#[schemars]` attributes carried over. Hidden inside the
/// tool's `const _` block, or, with `input = Name`, a struct `Name` beside the function at its
/// visibility (fields too, with the parameters' docs), that also derives `Serialize` so a typed
/// hook can rewrite it.
fn args_struct(spec: &ToolSpec, p: &TokenStream) -> Option<TokenStream> {
    if input(spec).is_some() {
        return None;
    }
    let named = spec.input_name.as_ref();
    let vis = named.map(|_| &spec.func.vis);
    let fields = spec.params.iter().filter_map(|param| match param {
        ToolParam::Field(f) => {
            let (ident, ty, attrs, doc) = (&f.ident, &f.ty, &f.attrs, &f.doc);
            let describe = (!doc.is_empty()).then(|| quote!(#[schemars(description = #doc)]));
            let rustdoc = (named.is_some() && !doc.is_empty()).then(|| {
                let doc = format!(" {doc}");
                quote!(#[doc = #doc])
            });
            Some(quote! { #rustdoc #describe #(#attrs)* #vis #ident: #ty })
        }
        _ => None,
    });
    let krate = spec.krate.to_string().replace(' ', "");
    let serde_path = format!("{krate}::__private::serde");
    let schemars_path = format!("{krate}::__private::schemars");
    let Some(name) = named else {
        return Some(quote! {
            #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            #[allow(non_camel_case_types, non_snake_case, dead_code)]
            struct __ToolgateArgs { #(#fields,)* }
        });
    };
    let doc = format!(
        " The input of the `{}` tool: its parameters as fields (generated by \
         `#[tool(input = {name})]`). A typed PreToolUse hook takes `&{name}`.",
        tool_name(spec)
    );
    let vis = &spec.func.vis;
    Some(quote! {
        #[doc = #doc]
        #[derive(#p::serde::Deserialize, #p::serde::Serialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_path)]
        #[schemars(crate = #schemars_path)]
        #vis struct #name { #(#fields,)* }
    })
}

/// Compile-time checks that an `#[input]` struct can be an input, spanned on its type.
fn input_asserts(spec: &ToolSpec, p: &TokenStream) -> Option<TokenStream> {
    let ty = input(spec)?;
    Some(quote_spanned!(ty.span()=> #p::assert_input::<#ty>();))
}

/// The `ToolDef`: a generated function that unpacks the input, injects, calls the user's
/// function and turns its output into the result text.
fn make_def(spec: &ToolSpec, p: &TokenStream) -> TokenStream {
    let name = tool_name(spec);
    let description = &spec.description;
    let args_ty = args_type(spec);
    if spec.external {
        return quote!(#p::ToolDef::external::<#args_ty>(#name, #description));
    }
    let body = call_body(spec, p);
    if spec.func.asyncness.is_some() {
        quote! {
            fn __toolgate_call<'a>(
                __env: #p::Env<'a>,
                __args: #args_ty,
            ) -> #p::BoxFuture<'a, ::core::result::Result<#p::ToolResultContent, #p::ToolError>> {
                ::std::boxed::Box::pin(async move { #body })
            }
            #p::ToolDef::new_async::<#args_ty, _, _>(#name, #description, __toolgate_call)
        }
    } else {
        quote! {
            fn __toolgate_call(
                __env: #p::Env<'_>,
                __args: #args_ty,
            ) -> ::core::result::Result<#p::ToolResultContent, #p::ToolError> {
                #body
            }
            #p::ToolDef::sync::<#args_ty, _, _>(#name, #description, __toolgate_call)
        }
    }
}

/// The generated call: bind the fields, inject, call in declaration order, convert.
fn call_body(spec: &ToolSpec, p: &TokenStream) -> TokenStream {
    let mut bindings = Vec::new();
    let mut injections = Vec::new();
    let mut args = Vec::new();
    for (i, param) in spec.params.iter().enumerate() {
        match param {
            ToolParam::Field(f) => {
                let (ident, binding) = (&f.ident, format_ident!("__a{}", i));
                bindings.push(quote!(#ident: #binding));
                args.push(quote!(#binding));
            }
            ToolParam::Input(_) => args.push(quote!(__args)),
            ToolParam::Injected(injection) => {
                let binding = format_ident!("__i{}", i);
                let on_missing = quote!(#p::ToolError::internal);
                injections.push(inject_let(p, &binding, injection, on_missing));
                args.push(quote!(#binding));
            }
        }
    }
    let args_ty = args_type(spec);
    let unpack = input(spec)
        .is_none()
        .then(|| quote!(let #args_ty { #(#bindings,)* } = __args;));
    let fn_ident = &spec.func.ident;
    let awaited = awaited(&spec.func);
    let to_content = output_content(spec, p);
    quote! {
        #unpack
        #(#injections)*
        let __out = #fn_ident(#(#args),*) #awaited;
        #to_content
    }
}

/// `__out` as the result's content (`__private::output_content`: a `Content` is its blocks, any
/// other value its text). `Result` or not is decided by the type (an alias counts), not by its
/// spelling; spanned on the return type, where a type error belongs. An `Err` becomes a
/// `ToolError` by its type's kind (`__private::ErrorOf`): shown as written for `ToolError`,
/// `String` and `&str`, internal for any other type unless `errors = "shown"`.
fn output_content(spec: &ToolSpec, p: &TokenStream) -> TokenStream {
    // The error's kind (`ErrorOf`) is chosen by its type; `errors = "shown"` picks the kind's
    // model-facing conversion.
    let span = return_span(&spec.func);
    let convert = if spec.errors_shown {
        quote_spanned!(span=> shown)
    } else {
        quote_spanned!(span=> internal)
    };
    quote_spanned!(span=> {
        #[allow(unused_imports)]
        use #p::{ListedKind as _, BoxableKind as _, DisplayKind as _, SplitPlain as _, SplitResult as _};
        // A plain output's `Err` arm has the empty type `Infallible`.
        #[allow(unreachable_patterns)]
        let __content = match #p::Returned(::core::option::Option::Some(__out)).split() {
            ::core::option::Option::Some(::core::result::Result::Ok(v)) => #p::output_content(v),
            ::core::option::Option::Some(::core::result::Result::Err(e)) => {
                ::core::result::Result::Err((&&&#p::ErrorOf::of(&e)).tool_error_kind().#convert(e))
            }
            ::core::option::Option::None => ::core::result::Result::Err(
                #p::ToolError::internal("toolgate: the tool's output was taken twice"),
            ),
        };
        __content
    })
}

/// The JSON Schema of the tool's output type, for MCP's `outputSchema`: an expression of type
/// `Option<Value>`, `Some` when the `Ok` type of the return type (or the return type itself)
/// implements `JsonSchema` (`__private::OutputProbe`, chosen by type, not spelling). `None`
/// without a return type, and for an `impl Trait` return type, which cannot be named in the
/// probe. The return type's tokens keep their spans, so an error in them is the function's one
/// error (rustc reports an identical diagnostic once).
fn output_schema(spec: &ToolSpec, p: &TokenStream) -> TokenStream {
    let ty = match &spec.func.output {
        ReturnType::Type(_, ty) if !mentions_impl(ty.to_token_stream()) => ty,
        _ => return quote!(::core::option::Option::None),
    };
    quote! {{
        #[allow(unused_imports)]
        use #p::{OkOfResult as _, OkOfPlain as _, HasSchema as _, NoSchema as _};
        #p::OutputProbe::<#ty>::new().ok_type().output_schema()
    }}
}

/// Whether a type's tokens hold `impl` (an `impl Trait` anywhere in it).
fn mentions_impl(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "impl",
        TokenTree::Group(g) => mentions_impl(g.stream()),
        _ => false,
    })
}

/// The builder calls after the constructor: unknown fields, strict mode, input examples,
/// deadline, effect, the reason a write needs no guard, states needed.
fn settings(spec: &ToolSpec, p: &TokenStream) -> TokenStream {
    let unknown = spec
        .allow_unknown_fields
        .then(|| quote!(.allow_unknown_fields()));
    let strict = spec.strict.map(|b| quote!(.strict(#b)));
    // A typed binding spanned on the path: a function of another shape is one error there.
    let examples = spec.input_examples.as_ref().map(|path| {
        let typed = quote_spanned!(path.span()=>
            let __examples: fn() -> ::std::vec::Vec<#p::serde_json::Value> = #path;
        );
        quote!(.input_examples({ #typed __examples() }))
    });
    let timeout = timeout(spec.timeout_ms);
    let effect = spec.effect.as_ref().map(|e| {
        let base = if e.write {
            quote!(#p::Effect::write())
        } else {
            quote!(#p::Effect::read())
        };
        let destructive = e.destructive.map(|b| quote!(.destructive(#b)));
        let idempotent = e.idempotent.map(|b| quote!(.idempotent(#b)));
        let open_world = e.open_world.map(|b| quote!(.open_world(#b)));
        quote!(.effect(#base #destructive #idempotent #open_world))
    });
    let unguarded = spec.unguarded.as_ref().map(|r| quote!(.unguarded(#r)));
    let states = spec.params.iter().filter_map(|param| match param {
        ToolParam::Injected(injection) => needs_state(p, injection),
        _ => None,
    });
    quote!(#unknown #strict #examples #timeout #effect #unguarded #(#states)*)
}
