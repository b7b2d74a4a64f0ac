//! `#[pre_hook]`, `#[post_hook]` and `#[stop_hook]`: check the signature, keep the function as
//! written, and register a hook that calls it.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Path, ReturnType};

use crate::args::{self, Keys};
use crate::ctxt::Errors;
use crate::func::{Func, ParamKind};
use crate::params::{Class, Injected, classify, inject_let};
use crate::tool::unraw;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Pre,
    Post,
    Stop,
}

impl Kind {
    fn keys(self) -> Keys {
        match self {
            Kind::Pre => Keys {
                attr: "pre_hook",
                valid: &["order", "tools", "timeout_ms", "crate"],
            },
            Kind::Post => Keys {
                attr: "post_hook",
                valid: &["tools", "crate"],
            },
            Kind::Stop => Keys {
                attr: "stop_hook",
                valid: &["crate"],
            },
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Pre => "PreToolUse hook",
            Kind::Post => "PostToolUse observer",
            Kind::Stop => "Stop hook",
        }
    }

    /// The subject parameter it takes, and its description.
    fn subject(self) -> (&'static str, &'static str) {
        match self {
            Kind::Pre => ("ToolUse", "`&ToolUse`"),
            Kind::Post => ("CallRecord", "`&CallRecord`"),
            Kind::Stop => ("SessionSummary", "`&SessionSummary`"),
        }
    }
}

/// The companion constant `#[tool]` emits beside a function, at the same path.
fn tool_ref(path: &Path) -> Path {
    let mut path = path.clone();
    if let Some(last) = path.segments.last_mut() {
        let name = unraw(&last.ident);
        last.ident = format_ident!("__toolgate_tool_{}", name, span = last.ident.span());
    }
    path
}

enum Arg {
    Context(Box<syn::Type>),
    Subject,
    State(Box<syn::Type>, Box<syn::Type>),
}

pub(crate) fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match Func::parse_item(item) {
        Ok(f) => f,
        Err(tokens) => return tokens,
    };
    let mut errors = Errors::new();
    let keys = kind.keys();
    let parsed = args::parse(args, &keys, &mut errors);
    let mut order: Option<i64> = None;
    let mut order_given = false;
    let mut tools: Option<Vec<Path>> = None;
    let mut timeout_ms = None;
    let mut krate = quote!(::toolgate);
    for a in &parsed {
        match a.key.as_str() {
            "order" => {
                order_given = true;
                order = a.int(&mut errors, "10");
            }
            "tools" => tools = a.path_list(&mut errors),
            _ => a.common(&mut errors, &mut krate, &mut timeout_ms),
        }
    }
    if kind == Kind::Pre && !order_given {
        errors.at(
            Span::call_site(),
            "`#[pre_hook]` needs an `order`: write `#[pre_hook(order = 10)]` (lower runs first; \
             equal orders run by the function's path); put cheap, decisive checks first",
        );
    }

    // The function itself.
    let what = kind.name();
    func.check_plain(
        what,
        "hooks are registered once, for one concrete signature",
        &mut errors,
    );
    if kind == Kind::Stop
        && let Some(a) = &func.asyncness
    {
        errors.spanned(
            a,
            "a Stop hook must be synchronous: it runs from `Session::end` and from `drop`, \
             where nothing can be awaited; remove `async` (do async work in a PostToolUse \
             observer, or hand it to a task)",
        );
    }
    func.check_timeout(timeout_ms, &mut errors);

    let (subject_name, subject_desc) = kind.subject();
    let mut call_args = Vec::new();
    let mut seen_subject = false;
    let mut seen_context = false;
    for p in &func.params {
        let ty = match &p.kind {
            ParamKind::Receiver(tokens) => {
                errors.spanned(
                    tokens,
                    format_args!("a {what} is a free function, not a method: remove `self`"),
                );
                continue;
            }
            ParamKind::Typed { ty, .. } => ty,
        };
        let allowed =
            format!("a {what} takes `&HookContext`, {subject_desc} and `State<T>` parameters");
        match classify(ty) {
            Class::Injected(Injected::Context) => {
                if seen_context {
                    errors.spanned(ty, "`&HookContext` is given once; remove this parameter");
                }
                seen_context = true;
                call_args.push(Arg::Context(ty.clone()));
            }
            Class::Injected(Injected::State(inner)) => {
                call_args.push(Arg::State(ty.clone(), inner))
            }
            Class::Injected(inj) => {
                let is_subject = match inj {
                    Injected::ToolUse => subject_name == "ToolUse",
                    Injected::CallRecord => subject_name == "CallRecord",
                    Injected::Summary => subject_name == "SessionSummary",
                    _ => false,
                };
                if !is_subject {
                    errors.spanned(
                        ty,
                        format_args!("{allowed}; {} is not for this hook", inj.describe()),
                    );
                } else if seen_subject {
                    errors.spanned(
                        ty,
                        format_args!("{subject_desc} is given once; remove this parameter"),
                    );
                } else {
                    seen_subject = true;
                    call_args.push(Arg::Subject);
                }
            }
            Class::MutRef(d) => errors.spanned(
                ty,
                format_args!("{d} is read-only for hooks; take it by shared reference"),
            ),
            Class::ByValue(d) => errors.spanned(
                ty,
                format_args!("take {d} by reference: it is given to the hook, not moved"),
            ),
            Class::Other | Class::ImplTrait => errors.spanned(
                ty,
                format_args!("{allowed}; this parameter is none of them"),
            ),
        }
    }

    if let Some(errs) = errors.check() {
        return quote!(#func #errs);
    }

    let p = quote!(#krate::__private);
    let fn_ident = &func.ident;
    let fn_name = unraw(fn_ident);
    let is_async = func.asyncness.is_some();
    let path = quote!(::core::concat!(::core::module_path!(), "::", #fn_name));
    let ret_span = match &func.output {
        ReturnType::Default => fn_ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };

    let mut state_lets = Vec::new();
    let mut state_keys = Vec::new();
    let mut invoke_args = Vec::new();
    for (i, a) in call_args.iter().enumerate() {
        match a {
            Arg::Context(ty) => {
                let binding = format_ident!("__c{}", i);
                state_lets.push(inject_let(&p, &binding, ty, quote!(#p::HookError::new)));
                invoke_args.push(quote!(#binding));
            }
            Arg::Subject => invoke_args.push(quote!(__subject)),
            Arg::State(ty, inner) => {
                let binding = format_ident!("__s{}", i);
                state_lets.push(inject_let(&p, &binding, ty, quote!(#p::HookError::new)));
                state_keys.push(quote!(.needs_state(#p::StateKey::of::<#inner>())));
                invoke_args.push(quote!(#binding));
            }
        }
    }
    let awaited = is_async.then(|| quote!(.await));
    let invoke = quote!(#fn_ident(#(#invoke_args),*) #awaited);
    let (convert, out_ty, subject_ty, def, ctor_sync, ctor_async) = match kind {
        Kind::Pre => (
            quote_spanned!(ret_span=> #p::IntoDecision::into_decision(__out)),
            quote!(#p::Decision),
            quote!(#p::ToolUse),
            quote!(#p::PreHookDef),
            quote!(sync),
            quote!(new_async),
        ),
        Kind::Post => (
            quote_spanned!(ret_span=> #p::IntoObserved::into_observed(__out)),
            quote!(()),
            quote!(#p::CallRecord<'a>),
            quote!(#p::PostHookDef),
            quote!(sync),
            quote!(new_async),
        ),
        Kind::Stop => (
            quote_spanned!(ret_span=> #p::IntoObserved::into_observed(__out)),
            quote!(()),
            quote!(#p::SessionSummary),
            quote!(#p::StopHookDef),
            quote!(new),
            quote!(new),
        ),
    };
    let body = quote! {
        #(#state_lets)*
        let __out = #invoke;
        #convert
    };
    let result_ty = quote!(::core::result::Result<#out_ty, #p::HookError>);
    let order_arg = match kind {
        Kind::Pre => {
            let order = order.unwrap_or_default();
            quote!(, #order)
        }
        _ => quote!(),
    };
    let make_def = if is_async {
        quote! {
            fn __toolgate_run<'a>(
                __env: #p::Env<'a>,
                __subject: &'a #subject_ty,
            ) -> #p::BoxFuture<'a, #result_ty> {
                ::std::boxed::Box::pin(async move { #body })
            }
            #def::#ctor_async(#path #order_arg, __toolgate_run)
        }
    } else {
        let subject_ty = match kind {
            Kind::Post => quote!(#p::CallRecord<'_>),
            _ => subject_ty,
        };
        quote! {
            fn __toolgate_run(__env: #p::Env<'_>, __subject: &#subject_ty) -> #result_ty {
                #body
            }
            #def::#ctor_sync(#path #order_arg, __toolgate_run)
        }
    };
    let matcher = tools.map(|list| {
        let refs = list.iter().map(tool_ref);
        quote!(.tools([#(#refs.name),*]))
    });
    let timeout =
        timeout_ms.map(|(ms, _)| quote!(.timeout(::core::time::Duration::from_millis(#ms))));
    let reg_kind = match kind {
        Kind::Pre => quote!(PreHook),
        Kind::Post => quote!(PostHook),
        Kind::Stop => quote!(StopHook),
    };

    quote! {
        #func

        const _: () = {
            fn __toolgate_make() -> #def {
                #make_def
                #matcher
                #timeout
                #(#state_keys)*
            }
            #p::inventory::submit! {
                #p::Registration {
                    path: #path,
                    kind: #p::RegistrationKind::#reg_kind(__toolgate_make),
                }
            }
        };
    }
}
