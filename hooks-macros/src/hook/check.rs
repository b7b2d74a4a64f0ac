//! The hook attributes' checks: the attribute's arguments and the function become a
//! [`HookSpec`], every problem going to the [`Ctxt`].

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Path;

use super::Kind;
use crate::args;
use crate::companion::matcher_problem;
use crate::ctxt::Ctxt;
use crate::func::{Func, ParamKind};
use crate::params::{Class, Injected, Injection, Subject, classify};

/// A checked hook: everything the expansion needs, nothing left to fail.
pub(crate) struct HookSpec {
    pub(crate) kind: Kind,
    /// The function, as written.
    pub(crate) func: Func,
    /// The facade: `::toolgate`, or `crate = path`.
    pub(crate) krate: TokenStream,
    /// `order = N`: a PreToolUse hook's place in its chains (`None` for the other kinds).
    pub(crate) order: Option<i64>,
    /// `tools = [...]`: the `#[tool]` functions it matches, as written; `None` matches all.
    pub(crate) tools: Option<Vec<Path>>,
    /// `timeout_ms = N` (async PreToolUse hooks only).
    pub(crate) timeout_ms: Option<u64>,
    /// The parameters in declaration order, the order the call passes them in.
    pub(crate) params: Vec<HookParam>,
}

/// One checked parameter of a hook.
pub(crate) enum HookParam {
    /// What the hook is about: `&ToolUse`, `&CallRecord` or `&SessionSummary` by kind.
    Subject,
    /// `&HookContext` or `State<T>`.
    Injected(Injection),
    /// A PreToolUse hook's `&T`: the tool's typed input (the referent type).
    Input(Box<syn::Type>),
}

/// The attribute's arguments, parsed.
struct HookArgs {
    /// `order = N`; `None` when missing or unreadable.
    order: Option<i64>,
    /// Whether `order` was written at all (a missing order has its own message).
    order_given: bool,
    tools: Option<Vec<Path>>,
    timeout_ms: Option<(u64, Span)>,
    krate: TokenStream,
}

impl HookArgs {
    fn from_ast(cx: &mut Ctxt, kind: Kind, args: TokenStream) -> HookArgs {
        let mut out = HookArgs {
            order: None,
            order_given: false,
            tools: None,
            timeout_ms: None,
            krate: quote!(::toolgate),
        };
        for a in &args::parse(args, &kind.keys(), cx) {
            match a.key.as_str() {
                "order" => {
                    out.order_given = true;
                    out.order = a.int(cx, "10");
                }
                "tools" => out.tools = a.path_list(cx),
                _ => a.common(cx, &mut out.krate, &mut out.timeout_ms),
            }
        }
        out
    }
}

impl HookSpec {
    /// Parses the attribute's arguments and checks them and the function.
    pub(crate) fn from_ast(cx: &mut Ctxt, kind: Kind, args: TokenStream, func: Func) -> HookSpec {
        let args = HookArgs::from_ast(cx, kind, args);
        if kind == Kind::Pre && !args.order_given {
            cx.at(
                Span::call_site(),
                "`#[pre_hook]` needs an `order`: write `#[pre_hook(order = 10)]` (lower runs \
                 first; equal orders run by the function's path); put cheap, decisive checks first",
            );
        }
        for path in args.tools.iter().flatten() {
            if let Some(problem) = matcher_problem(path) {
                cx.spanned(path, problem);
            }
        }
        func.check_plain(
            kind.describe(),
            "hooks are registered once, for one concrete signature",
            cx,
        );
        if kind == Kind::Stop
            && let Some(a) = &func.asyncness
        {
            cx.spanned(
                a,
                "a Stop hook must be synchronous: it runs from `Session::end` and from `drop`, \
                 where nothing can be awaited; remove `async` (do async work in a PostToolUse \
                 observer, or hand it to a task)",
            );
        }
        func.check_timeout(args.timeout_ms, cx);
        let params = check_params(cx, kind, &func);
        HookSpec {
            kind,
            func,
            krate: args.krate,
            order: args.order,
            tools: args.tools,
            timeout_ms: args.timeout_ms.map(|(ms, _)| ms),
            params,
        }
    }
}

/// Each parameter is the subject, the context or a state, once each for the first two (and,
/// for a PreToolUse hook, the tool's typed input `&T`, once): a method's `self` is refused,
/// every other parameter checked by [`ParamWalk::param`].
fn check_params(cx: &mut Ctxt, kind: Kind, func: &Func) -> Vec<HookParam> {
    let mut walk = ParamWalk::new(kind);
    for p in &func.params {
        match &p.kind {
            ParamKind::Receiver(tokens) => cx.spanned(
                tokens,
                format_args!(
                    "a {} is a free function, not a method: remove `self`",
                    kind.describe()
                ),
            ),
            ParamKind::Typed { ty, .. } => walk.param(cx, ty),
        }
    }
    walk.params
}

/// The walk over a hook's parameters: what the hook's kind allows, the parameters accepted so
/// far, and which of those that are given once were seen.
struct ParamWalk {
    kind: Kind,
    /// What the hook is about: `&ToolUse`, `&CallRecord` or `&SessionSummary` by kind.
    subject: Subject,
    /// The parameters the hook takes, in words, for an error about one it does not.
    allowed: String,
    params: Vec<HookParam>,
    seen_subject: bool,
    seen_context: bool,
    seen_input: bool,
}

impl ParamWalk {
    /// The walk over the parameters of a `kind` hook, none seen yet.
    fn new(kind: Kind) -> ParamWalk {
        let what = kind.describe();
        let subject = kind.subject();
        let allowed = match kind {
            Kind::Pre => format!(
                "a {what} takes `&HookContext`, {}, `&T` (a tool's input type) and `State<T>` \
                 parameters",
                subject.describe()
            ),
            _ => format!(
                "a {what} takes `&HookContext`, {} and `State<T>` parameters",
                subject.describe()
            ),
        };
        ParamWalk {
            kind,
            subject,
            allowed,
            params: Vec::new(),
            seen_subject: false,
            seen_context: false,
            seen_input: false,
        }
    }

    /// One typed parameter, by how its type reads ([`classify`]): the context, a state, the
    /// hook's subject, or (PreToolUse only) the typed input is accepted; anything else is an
    /// error saying what the hook takes.
    fn param(&mut self, cx: &mut Ctxt, ty: &syn::Type) {
        match classify(ty) {
            Class::Injected(Injected::Context) => self.context(cx, ty),
            Class::Injected(Injected::State(inner)) => {
                self.params.push(HookParam::Injected(Injection {
                    ty: Box::new(ty.clone()),
                    state: Some(inner),
                }))
            }
            Class::Injected(Injected::Subject(s)) if s == self.subject => self.subject(cx, ty),
            Class::Injected(other) => cx.spanned(
                ty,
                format_args!(
                    "{}; {} is not for this hook",
                    self.allowed,
                    other.describe()
                ),
            ),
            Class::MutRef(d) => cx.spanned(
                ty,
                format_args!("{d} is read-only for hooks; take it by shared reference"),
            ),
            Class::ByValue(d) => cx.spanned(
                ty,
                format_args!("take {d} by reference: it is given to the hook, not moved"),
            ),
            Class::Other if self.kind == Kind::Pre => self.input(cx, ty),
            Class::Other | Class::ImplTrait => self.none_of_them(cx, ty),
        }
    }

    /// `&HookContext`, given once: a second one is an error.
    fn context(&mut self, cx: &mut Ctxt, ty: &syn::Type) {
        if self.seen_context {
            cx.spanned(ty, "`&HookContext` is given once; remove this parameter");
        }
        self.seen_context = true;
        self.params.push(HookParam::Injected(Injection {
            ty: Box::new(ty.clone()),
            state: None,
        }));
    }

    /// The hook's subject, given once: a second one is an error.
    fn subject(&mut self, cx: &mut Ctxt, ty: &syn::Type) {
        if self.seen_subject {
            cx.spanned(
                ty,
                format_args!(
                    "{} is given once; remove this parameter",
                    self.subject.describe()
                ),
            );
        } else {
            self.seen_subject = true;
            self.params.push(HookParam::Subject);
        }
    }

    /// A PreToolUse hook's other parameter: the tool's typed input `&T`, once. A string or a
    /// scalar (`&str`, `&u64`, …) is never a tool's input type ([`scalar_input`]).
    fn input(&mut self, cx: &mut Ctxt, ty: &syn::Type) {
        if let Some(name) = scalar_input(ty) {
            return cx.spanned(
                ty,
                format_args!(
                    "`&{name}` is not a tool's input type: a typed PreToolUse hook takes `&T` \
                     where `T` is the struct the tool's input deserializes into; the tool's \
                     name and its input as JSON are on `&ToolUse` (`call.name`, `call.input`)"
                ),
            );
        }
        let Some(input) = typed_input(ty) else {
            return self.none_of_them(cx, ty);
        };
        if self.seen_input {
            return cx.spanned(
                ty,
                "a PreToolUse hook takes one typed input `&T` (the tool's input type); \
                 remove this parameter",
            );
        }
        self.seen_input = true;
        self.params.push(HookParam::Input(Box::new(input.clone())));
    }

    /// A parameter the hook does not take: the error says what it takes.
    fn none_of_them(&self, cx: &mut Ctxt, ty: &syn::Type) {
        cx.spanned(
            ty,
            format_args!("{}; this parameter is none of them", self.allowed),
        );
    }
}

/// The name of `T` when `ty` is `&T` for a string or scalar `T` (`&str`, `&String`, `&u64`,
/// `&bool`, …): never a tool's input type (a tool's input is a JSON object), so never a typed
/// hook's input.
fn scalar_input(ty: &syn::Type) -> Option<String> {
    let elem = typed_input(ty)?;
    let syn::Type::Path(p) = elem else {
        return None;
    };
    if p.qself.is_some() || p.path.segments.len() != 1 {
        return None;
    }
    let name = p.path.segments[0].ident.to_string();
    const SCALARS: [&str; 18] = [
        "str", "String", "bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16",
        "u32", "u64", "u128", "usize", "f32", "f64",
    ];
    SCALARS.contains(&name.as_str()).then_some(name)
}

/// The `T` of a shared reference `&T` (not `&mut`, not `&dyn`, not `&impl`): a typed hook's
/// input.
fn typed_input(ty: &syn::Type) -> Option<&syn::Type> {
    match ty {
        syn::Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
            syn::Type::Path(_) => Some(&r.elem),
            _ => None,
        },
        syn::Type::Paren(p) => typed_input(&p.elem),
        syn::Type::Group(g) => typed_input(&g.elem),
        _ => None,
    }
}
