//! `#[tool]`: checks the function, keeps it as written, and registers a tool that calls it.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ReturnType, Type};

use crate::args::{self, Keys};
use crate::ctxt::Errors;
use crate::doc::{doc_text, is_doc, non_literal_doc};
use crate::func::{Func, ParamKind};
use crate::params::{Class, Injected, classify, has_reference, inject_let, not_a_struct};

const KEYS: Keys = Keys {
    attr: "tool",
    valid: &[
        "name",
        "description",
        "allow_unknown_fields",
        "timeout_ms",
        "crate",
    ],
};

/// A checked parameter, in declaration order.
enum Role {
    /// A field of the generated argument struct.
    Field {
        ident: Ident,
        ty: Box<Type>,
        doc: String,
        pass: Vec<syn::Attribute>,
    },
    /// The whole input, a user struct (`#[input]`).
    Input(Box<Type>),
    Context(Box<Type>),
    /// `State<T>`: the parameter's type, and `T`.
    State {
        ty: Box<Type>,
        inner: Box<Type>,
    },
}

/// The tool's name from the function's identifier, `r#` removed.
pub(crate) fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// Why a tool name breaks `^[a-zA-Z0-9_-]{1,64}$`, if it does.
fn name_problem(name: &str) -> Option<String> {
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

/// A tool name as an identifier for the name-guard constant: `-` is not allowed in
/// identifiers, so `_` is written `__` and `-` is written `_h` (one-to-one: `a-b` and `a_hb`
/// stay apart).
fn mangle(name: &str) -> String {
    name.replace('_', "__").replace('-', "_h")
}

fn strip_param_attrs(func: &mut Func) {
    for p in &mut func.params {
        p.attrs.retain(|a| {
            !(is_doc(a)
                || a.path().is_ident("input")
                || a.path().is_ident("serde")
                || a.path().is_ident("schemars"))
        });
    }
}

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut func = match Func::parse_item(item) {
        Ok(f) => f,
        Err(tokens) => return tokens,
    };
    let mut errors = Errors::new();
    let parsed = args::parse(args, &KEYS, &mut errors);
    let mut name_lit = None;
    let mut description_lit = None;
    let mut allow_unknown = false;
    let mut timeout_ms = None;
    let mut krate = quote!(::toolgate);
    for a in &parsed {
        match a.key.as_str() {
            "name" => name_lit = a.lit_str(&mut errors),
            "description" => description_lit = a.lit_str(&mut errors),
            "allow_unknown_fields" => allow_unknown = a.flag(&mut errors),
            _ => a.common(&mut errors, &mut krate, &mut timeout_ms),
        }
    }

    // The function itself.
    func.check_plain(
        "tool",
        "its input schema must be one concrete type; write a non-generic wrapper and mark that \
         `#[tool]`",
        &mut errors,
    );
    func.check_timeout(timeout_ms, &mut errors);

    let name = match &name_lit {
        Some(l) => l.value(),
        None => unraw(&func.ident),
    };
    if let Some(problem) = name_problem(&name) {
        match &name_lit {
            Some(l) => errors.spanned(l, format_args!("{problem}; fix `name = …`")),
            None => errors.spanned(
                &func.ident,
                format_args!("{problem}; rename the function or set `#[tool(name = \"…\")]`"),
            ),
        }
    }
    let description = match &description_lit {
        Some(l) => l.value().trim().to_owned(),
        None => doc_text(&func.attrs),
    };
    if description.is_empty() {
        match &description_lit {
            Some(l) => errors.spanned(l, "the tool's description cannot be empty"),
            None if non_literal_doc(&func.attrs).is_some() => errors.spanned(
                non_literal_doc(&func.attrs),
                "`#[tool]` reads doc comments written as string literals only, and this \
                 `#[doc = …]` is computed (`concat!`, `include_str!`): write the description in \
                 `///` lines, or set `#[tool(description = \"…\")]`",
            ),
            None => errors.spanned(
                &func.ident,
                format_args!(
                    "tool `{name}` has no description: add a `///` doc comment saying what it does \
                     and when to use it (the model reads it to choose the tool), or set \
                     `#[tool(description = \"…\")]`"
                ),
            ),
        }
    }

    // Parameters.
    let mut roles: Vec<Role> = Vec::new();
    let mut has_input = false;
    let mut first_field: Option<(Span, String)> = None;
    for p in &func.params {
        let (pat, ident, ty) = match &p.kind {
            ParamKind::Receiver(tokens) => {
                errors.spanned(
                    tokens,
                    "`#[tool]` goes on a free function, not a method: `self` cannot come from \
                     the model's input; move the body into a free function and take what it \
                     needs as parameters (`State<T>` for shared state)",
                );
                continue;
            }
            ParamKind::Typed { pat, ident, ty, .. } => (pat, ident, ty),
        };
        if let Some(cfg) = p
            .attrs
            .iter()
            .find(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr"))
        {
            errors.spanned(
                cfg,
                "`#[cfg]` and `#[cfg_attr]` on a tool parameter are not supported: the schema \
                 would change with them",
            );
        }
        let is_input = p.attrs.iter().find(|a| a.path().is_ident("input"));
        let class = classify(ty);
        // `#[serde]`/`#[schemars]` go onto the generated argument struct's fields, so they mean
        // something on a model argument only.
        let field_attr = p
            .attrs
            .iter()
            .find(|a| a.path().is_ident("serde") || a.path().is_ident("schemars"));
        if let Some(attr) = field_attr
            && (is_input.is_some() || matches!(class, Class::Injected(_)))
        {
            errors.spanned(
                attr,
                "`#[serde]` and `#[schemars]` apply to flat model arguments only: put them on \
                 the input struct's fields (for `#[input]`), or remove them (an injected \
                 parameter is not part of the input)",
            );
        }
        if let Some(attr) = is_input {
            if let Class::Injected(inj) = &class {
                errors.spanned(
                    attr,
                    format_args!(
                        "{} is injected, not the model's input; remove `#[input]`",
                        inj.describe()
                    ),
                );
                continue;
            }
            if has_input {
                errors.spanned(
                    attr,
                    "two parameters want the whole input: only one parameter may be `#[input]`",
                );
                continue;
            }
            if let Some(why) = not_a_struct(ty) {
                errors.spanned(
                    ty,
                    format_args!("`#[input]` takes a struct that derives Deserialize and JsonSchema; this type is {why}"),
                );
            }
            has_input = true;
            roles.push(Role::Input(ty.clone()));
            continue;
        }
        match class {
            Class::Injected(Injected::Context) => roles.push(Role::Context(ty.clone())),
            Class::Injected(Injected::State(inner)) => roles.push(Role::State {
                ty: ty.clone(),
                inner,
            }),
            Class::Injected(other) => errors.spanned(
                ty,
                format_args!(
                    "{} is given to hooks, not tools; a tool takes model arguments, \
                     `&HookContext` and `State<T>`",
                    other.describe()
                ),
            ),
            Class::MutRef(what) => errors.spanned(
                ty,
                format_args!(
                    "{what} is read-only (the context is frozen); take it by shared reference"
                ),
            ),
            Class::ByValue(what) => errors.spanned(
                ty,
                format_args!("take {what} by reference: it is injected, not read from the input"),
            ),
            Class::ImplTrait => errors.spanned(
                ty,
                "a model argument needs a concrete type that derives Deserialize and JsonSchema, \
                 not `impl Trait`",
            ),
            Class::Other => {
                let Some(ident) = ident else {
                    errors.spanned(
                        pat,
                        "name this parameter with a plain identifier: its name is the input \
                         field's name",
                    );
                    continue;
                };
                if ident == "_" {
                    errors.spanned(
                        pat,
                        "name this parameter: its name is the input field's name",
                    );
                    continue;
                }
                if has_reference(ty) {
                    errors.spanned(
                        ty,
                        "a model argument is deserialized into an owned value: take `String` \
                         instead of `&str` and `Vec<T>` instead of `&[T]`, also inside `Option` \
                         or `Vec`",
                    );
                    continue;
                }
                if first_field.is_none() {
                    first_field = Some((ident.span(), unraw(ident)));
                }
                roles.push(Role::Field {
                    ident: ident.clone(),
                    ty: ty.clone(),
                    doc: doc_text(&p.attrs),
                    pass: p
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident("serde") || a.path().is_ident("schemars"))
                        .cloned()
                        .collect(),
                });
            }
        }
    }
    if has_input && let Some((span, field)) = &first_field {
        errors.at(
            *span,
            format_args!(
                "`#[input]` takes the whole input, so `{field}` cannot be a model argument too; \
                 move it into the input struct (other parameters may only be `&HookContext` \
                 and `State<T>`)"
            ),
        );
    }

    strip_param_attrs(&mut func);
    if let Some(errs) = errors.check() {
        return quote!(#func #errs);
    }

    let p = quote!(#krate::__private);
    let krate_text = krate.to_string().replace(' ', "");
    let serde_path = format!("{krate_text}::__private::serde");
    let schemars_path = format!("{krate_text}::__private::schemars");
    let fn_ident = &func.ident;
    let fn_name = unraw(fn_ident);
    let vis = &func.vis;
    let companion = format_ident!("__toolgate_tool_{}", fn_name, span = fn_ident.span());
    let guard = format_ident!(
        "__toolgate_tool_named_{}",
        mangle(&name),
        span = fn_ident.span()
    );
    let is_async = func.asyncness.is_some();

    // The argument type and how the call's arguments are formed.
    let struct_input = roles.iter().find_map(|r| match r {
        Role::Input(ty) => Some(ty.clone()),
        _ => None,
    });
    let mut fields = Vec::new();
    let mut field_bindings = Vec::new();
    let mut state_lets = Vec::new();
    let mut state_keys = Vec::new();
    let mut asserts = Vec::new();
    let mut call_args = Vec::new();
    for (i, role) in roles.iter().enumerate() {
        match role {
            Role::Field {
                ident,
                ty,
                doc,
                pass,
            } => {
                let binding = format_ident!("__a{}", i);
                let describe = (!doc.is_empty()).then(|| quote!(#[schemars(description = #doc)]));
                fields.push(quote! { #describe #(#pass)* #ident: #ty });
                field_bindings.push(quote!(#ident: #binding));
                call_args.push(quote!(#binding));
            }
            Role::Input(ty) => {
                asserts.push(quote_spanned!(ty.span()=> #p::assert_input::<#ty>();));
                call_args.push(quote!(__args));
            }
            Role::Context(ty) => {
                let binding = format_ident!("__c{}", i);
                state_lets.push(inject_let(
                    &p,
                    &binding,
                    ty,
                    quote!(#p::ToolError::internal),
                ));
                call_args.push(quote!(#binding));
            }
            Role::State { ty, inner } => {
                let binding = format_ident!("__s{}", i);
                state_lets.push(inject_let(
                    &p,
                    &binding,
                    ty,
                    quote!(#p::ToolError::internal),
                ));
                state_keys.push(quote!(.needs_state(#p::StateKey::of::<#inner>())));
                call_args.push(quote!(#binding));
            }
        }
    }
    let (args_ty, args_def, unpack) = match &struct_input {
        Some(ty) => (quote!(#ty), quote!(), quote!()),
        None => (
            quote!(__ToolgateArgs),
            quote! {
                #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
                #[serde(crate = #serde_path)]
                #[schemars(crate = #schemars_path)]
                #[allow(non_camel_case_types, non_snake_case, dead_code)]
                struct __ToolgateArgs { #(#fields,)* }
            },
            quote!(let __ToolgateArgs { #(#field_bindings,)* } = __args;),
        ),
    };

    let ret_span = match &func.output {
        ReturnType::Default => fn_ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };
    let awaited = if is_async { quote!(.await) } else { quote!() };
    let invoke = quote!(#fn_ident(#(#call_args),*) #awaited);
    // `Result` or not is decided by the type (an alias counts), not by its spelling.
    let to_text = quote_spanned!(ret_span=> {
        #[allow(unused_imports)]
        use #p::{SplitPlain as _, SplitResult as _, ViaDisplay as _, ViaInto as _};
        // A plain output's `Err` arm has the empty type `Infallible`.
        #[allow(unreachable_patterns)]
        let __text = match #p::Returned(::core::option::Option::Some(__out)).split() {
            ::core::option::Option::Some(::core::result::Result::Ok(v)) => #p::output_text(v),
            ::core::option::Option::Some(::core::result::Result::Err(e)) => {
                ::core::result::Result::Err(#p::ErrorOf(e).into_tool_error())
            }
            ::core::option::Option::None => ::core::result::Result::Err(
                #p::ToolError::internal("toolgate: the tool's output was taken twice"),
            ),
        };
        __text
    });
    let body = quote! {
        #unpack
        #(#state_lets)*
        let __out = #invoke;
        #to_text
    };
    let make = if is_async {
        quote! {
            fn __toolgate_call<'a>(
                __env: #p::Env<'a>,
                __args: #args_ty,
            ) -> #p::BoxFuture<'a, ::core::result::Result<::std::string::String, #p::ToolError>> {
                ::std::boxed::Box::pin(async move { #body })
            }
            #p::ToolDef::new_async::<#args_ty, _>(#name, #description, __toolgate_call)
        }
    } else {
        quote! {
            fn __toolgate_call(
                __env: #p::Env<'_>,
                __args: #args_ty,
            ) -> ::core::result::Result<::std::string::String, #p::ToolError> {
                #body
            }
            #p::ToolDef::sync::<#args_ty, _>(#name, #description, __toolgate_call)
        }
    };
    let unknown = allow_unknown.then(|| quote!(.allow_unknown_fields()));
    let timeout =
        timeout_ms.map(|(ms, _)| quote!(.timeout(::core::time::Duration::from_millis(#ms))));
    let path = quote!(::core::concat!(::core::module_path!(), "::", #fn_name));

    quote! {
        #func

        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        /// Names the tool of this `#[tool]` function for hook matchers (not public API).
        #vis const #companion: #p::ToolRef = #p::ToolRef { name: #name };

        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        const #guard: () = ();

        const _: () = {
            #args_def
            #[allow(dead_code)]
            fn __toolgate_asserts() { #(#asserts)* }
            fn __toolgate_make() -> #p::ToolDef {
                #make
                #unknown
                #timeout
                #(#state_keys)*
                .path(#path)
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
