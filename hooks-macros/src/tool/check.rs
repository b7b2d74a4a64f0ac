//! `#[tool]`'s checks: the attribute's arguments and the function become a [`ToolSpec`], every
//! problem going to the [`Ctxt`]. The spec is built even when there are problems, so the
//! fallback still has the function and its name.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Ident, LitStr, Path, Type};

use crate::args::{self, Arg, Keys};
use crate::companion::{ToolName, name_problem, unraw};
use crate::ctxt::Ctxt;
use crate::doc::{doc_text, is_doc, non_literal_doc};
use crate::func::{Func, Param, ParamKind};
use crate::params::{
    Class, Injected, Injection, classify, has_reference, never_strict, not_a_struct,
};

const KEYS: Keys = Keys {
    attr: "tool",
    valid: &[
        "name",
        "description",
        "allow_unknown_fields",
        "strict",
        "input_examples",
        "timeout_ms",
        "crate",
        "errors",
        "effect",
        "destructive",
        "idempotent",
        "open_world",
        "unguarded",
        "input",
        "external",
    ],
};

/// A checked `#[tool]`: everything the expansion needs, nothing left to fail.
pub(crate) struct ToolSpec {
    /// The function as written, minus the parameter attributes the macro owns (`///`,
    /// `#[input]`, `#[serde]`, `#[schemars]`).
    pub(crate) func: Func,
    /// The facade: `::toolgate`, or `crate = path`.
    pub(crate) krate: TokenStream,
    /// `None` when `name = …` cannot be read or breaks the rule (an error says which).
    pub(crate) name: Option<ToolName>,
    /// The description the model reads: `description = "…"`, else the doc comment.
    pub(crate) description: String,
    /// `allow_unknown_fields`: no `additionalProperties: false`.
    pub(crate) allow_unknown_fields: bool,
    /// `timeout_ms = N` (async tools only).
    pub(crate) timeout_ms: Option<u64>,
    /// `errors = "shown"`: the error type's `Display` is written for the model.
    pub(crate) errors_shown: bool,
    /// `strict = true` / `strict = false` (`ToolDef::strict`).
    pub(crate) strict: Option<bool>,
    /// `input_examples = path`: a `fn() -> Vec<serde_json::Value>` (`ToolDef::input_examples`).
    pub(crate) input_examples: Option<Path>,
    /// `external`: the tool runs in the host; the signature declares its input
    /// (`ToolDef::external`), the body is never called.
    pub(crate) external: bool,
    /// The parameters in declaration order, the order the call passes them in.
    pub(crate) params: Vec<ToolParam>,
    /// `effect = "read" | "write"` with its hints (`ToolDef::effect`).
    pub(crate) effect: Option<EffectSpec>,
    /// `unguarded = "…"`: why a write tool needs no PreToolUse hook (`ToolDef::unguarded`).
    pub(crate) unguarded: Option<String>,
    /// `input = Name`: the name of the generated input struct of a flat tool, emitted beside
    /// the function (so a typed hook can take `&Name`).
    pub(crate) input_name: Option<Ident>,
}

/// A checked `effect = …` with MCP's hints.
pub(crate) struct EffectSpec {
    /// `effect = "write"`.
    pub(crate) write: bool,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
}

/// One checked parameter of a tool.
pub(crate) enum ToolParam {
    /// A model argument: a field of the generated argument struct.
    Field(Field),
    /// `#[input]`: the whole input, a struct of the user's.
    Input(Box<Type>),
    /// `&HookContext` or `State<T>`.
    Injected(Injection),
}

/// A model argument.
pub(crate) struct Field {
    /// The parameter's name, which is the input field's name.
    pub(crate) ident: Ident,
    pub(crate) ty: Box<Type>,
    /// The parameter's `///` comment: the property's description.
    pub(crate) doc: String,
    /// `#[serde(…)]` and `#[schemars(…)]`, moved onto the generated field.
    pub(crate) attrs: Vec<Attribute>,
}

/// `name = "…"` as given.
enum NameArg {
    Absent,
    /// Given, but not a string literal (an error says so).
    Unreadable,
    Given(LitStr),
}

/// The attribute's arguments, parsed.
struct ToolArgs {
    name: NameArg,
    description: Option<LitStr>,
    allow_unknown_fields: bool,
    strict: Option<bool>,
    input_examples: Option<Path>,
    timeout_ms: Option<(u64, Span)>,
    errors_shown: bool,
    external: bool,
    krate: TokenStream,
    /// `effect = "…"`: `Some(true)` for write; `None` when absent or unreadable.
    effect: Option<bool>,
    /// Whether `effect` was written at all (an unreadable one has its own error).
    effect_given: bool,
    /// `destructive`, `idempotent`, `open_world`: the value and the key's span.
    destructive: Option<(bool, Span)>,
    idempotent: Option<(bool, Span)>,
    open_world: Option<(bool, Span)>,
    unguarded: Option<(LitStr, Span)>,
    input_name: Option<(Ident, Span)>,
}

impl ToolArgs {
    fn from_ast(cx: &mut Ctxt, args: TokenStream) -> ToolArgs {
        let mut out = ToolArgs {
            name: NameArg::Absent,
            description: None,
            allow_unknown_fields: false,
            strict: None,
            input_examples: None,
            timeout_ms: None,
            errors_shown: false,
            external: false,
            krate: quote!(::toolgate),
            effect: None,
            effect_given: false,
            destructive: None,
            idempotent: None,
            open_world: None,
            unguarded: None,
            input_name: None,
        };
        for a in &args::parse(args, &KEYS, cx) {
            match a.key.as_str() {
                "name" => {
                    out.name = match a.lit_str(cx) {
                        Some(lit) => NameArg::Given(lit),
                        None => NameArg::Unreadable,
                    }
                }
                "description" => out.description = a.lit_str(cx),
                "allow_unknown_fields" => out.allow_unknown_fields = a.flag(cx),
                "errors" => out.errors_shown = check_errors(cx, a),
                "external" => out.external = a.flag(cx),
                "strict" => out.strict = a.bool(cx),
                "effect" => {
                    out.effect_given = true;
                    out.effect = check_effect(cx, a);
                }
                "destructive" => out.destructive = a.flag_or_bool(cx).map(|b| (b, a.key_span)),
                "idempotent" => out.idempotent = a.flag_or_bool(cx).map(|b| (b, a.key_span)),
                "open_world" => out.open_world = a.flag_or_bool(cx).map(|b| (b, a.key_span)),
                "unguarded" => out.unguarded = a.lit_str(cx).map(|l| (l, a.key_span)),
                "input" => out.input_name = check_input_name(cx, a).map(|i| (i, a.key_span)),
                "input_examples" => {
                    out.input_examples = a.function_path(cx, "`Vec<serde_json::Value>`")
                }
                _ => a.common(cx, &mut out.krate, &mut out.timeout_ms),
            }
        }
        out
    }
}

impl ToolSpec {
    /// Parses the attribute's arguments and checks them and the function.
    pub(crate) fn from_ast(cx: &mut Ctxt, args: TokenStream, mut func: Func) -> ToolSpec {
        let args = ToolArgs::from_ast(cx, args);
        func.check_plain(
            "tool",
            "its input schema must be one concrete type; write a non-generic wrapper and mark \
             that `#[tool]`",
            cx,
        );
        func.check_timeout(args.timeout_ms, cx);
        let name = check_name(cx, &args.name, &func);
        let written = match &args.name {
            NameArg::Given(lit) => lit.value(),
            _ => unraw(&func.ident),
        };
        let description = check_description(cx, args.description.as_ref(), &func, &written);
        let params = check_params(cx, &func);
        if args.strict == Some(true) {
            check_strict(cx, &params);
        }
        let (effect, unguarded) = check_effect_args(cx, &args);
        if let Some((_, span)) = &args.input_name
            && params.iter().any(|p| matches!(p, ToolParam::Input(_)))
        {
            cx.at(
                *span,
                "`input = …` names the struct generated from a flat tool's parameters, and this \
                 tool takes an `#[input]` struct already: a typed hook takes `&` that struct; \
                 remove `input = …`",
            );
        }
        strip_param_attrs(&mut func);
        if let Some(effect) = &effect {
            document_effect(&mut func, effect, unguarded.as_deref());
        }
        ToolSpec {
            func,
            krate: args.krate,
            name,
            description,
            allow_unknown_fields: args.allow_unknown_fields,
            timeout_ms: args.timeout_ms.map(|(ms, _)| ms),
            errors_shown: args.errors_shown,
            strict: args.strict,
            input_examples: args.input_examples,
            external: args.external,
            params,
            effect,
            unguarded,
            input_name: args.input_name.map(|(i, _)| i),
        }
    }
}

/// `input = Name`: a plain identifier, the name of a struct the tool's module does not have yet.
fn check_input_name(cx: &mut Ctxt, arg: &Arg) -> Option<Ident> {
    const SHAPE: &str = "`input` names the struct generated from the tool's parameters, like \
                         `input = RefundRequest`";
    let Some(value) = &arg.value else {
        cx.at(arg.key_span, format_args!("`input` needs a value; {SHAPE}"));
        return None;
    };
    match syn::parse2::<Ident>(value.clone()) {
        Ok(ident) => Some(ident),
        Err(_) => {
            cx.spanned(
                value,
                format_args!("`input` takes a plain identifier, not a path or a string; {SHAPE}"),
            );
            None
        }
    }
}

/// `effect = "read" | "write"`: `Some(true)` for write, `None` (with an error) for anything else.
fn check_effect(cx: &mut Ctxt, arg: &Arg) -> Option<bool> {
    const VALID: &str = "valid values: `\"read\"` (the tool only reads: MCP's `readOnlyHint: \
                         true`) and `\"write\"` (it changes something; a PreToolUse hook must \
                         guard it)";
    let Some(value) = &arg.value else {
        cx.at(
            arg.key_span,
            format_args!("`effect` needs a value; {VALID}"),
        );
        return None;
    };
    match syn::parse2::<LitStr>(value.clone()) {
        Ok(lit) if lit.value() == "read" => Some(false),
        Ok(lit) if lit.value() == "write" => Some(true),
        Ok(lit) => {
            cx.spanned(
                &lit,
                format_args!("unknown value `{:?}` for `effect`; {VALID}", lit.value()),
            );
            None
        }
        Err(_) => {
            cx.spanned(
                value,
                format_args!("`effect` takes a string literal; {VALID}"),
            );
            None
        }
    }
}

/// The hints and `unguarded` against the effect they describe: `destructive`, `idempotent` and
/// `unguarded` need `effect = "write"` (MCP gives the two hints a meaning for a write only),
/// `open_world` needs an effect, and `unguarded` needs a reason in words.
fn check_effect_args(cx: &mut Ctxt, args: &ToolArgs) -> (Option<EffectSpec>, Option<String>) {
    let write = args.effect == Some(true);
    let why = |key: &str| {
        if args.effect == Some(false) {
            format!("`{key}` describes a write, and this tool is `effect = \"read\"`")
        } else {
            format!("`{key}` needs `effect = \"write\"` beside it")
        }
    };
    for (key, given) in [
        ("destructive", &args.destructive),
        ("idempotent", &args.idempotent),
    ] {
        if let Some((_, span)) = given
            && !write
            && (args.effect.is_some() || !args.effect_given)
        {
            cx.at(
                *span,
                format_args!(
                    "{}; MCP gives `{key}Hint` a meaning only when a tool is not read-only",
                    why(key)
                ),
            );
        }
    }
    if let Some((_, span)) = &args.open_world
        && !args.effect_given
    {
        cx.at(
            *span,
            "`open_world` needs an effect beside it: `effect = \"read\"` or `effect = \"write\"`",
        );
    }
    let mut unguarded = None;
    if let Some((lit, span)) = &args.unguarded {
        let reason = lit.value().trim().to_owned();
        if !write && (args.effect.is_some() || !args.effect_given) {
            cx.at(
                *span,
                format_args!(
                    "{}: `unguarded` says why a write tool needs no PreToolUse hook, and a read \
                     tool needs none anyway",
                    why("unguarded")
                ),
            );
        } else if reason.is_empty() {
            cx.spanned(
                lit,
                "`unguarded` needs a reason in words, like `unguarded = \"files into the team's \
                 own queue; triage closes duplicates\"`: it is recorded in the tool's docs",
            );
        } else {
            unguarded = Some(reason);
        }
    }
    let effect = args.effect.map(|write| EffectSpec {
        write,
        destructive: args.destructive.map(|(b, _)| b),
        idempotent: args.idempotent.map(|(b, _)| b),
        open_world: args.open_world.map(|(b, _)| b),
    });
    (effect, unguarded)
}

/// Appends the effect, and the reason a write tool needs no guard, to the function's rustdoc
/// (after the description the model reads was taken from it).
fn document_effect(func: &mut Func, effect: &EffectSpec, unguarded: Option<&str>) {
    let mut hints = Vec::new();
    let mut hint = |name: &str, value: Option<bool>| match value {
        Some(true) => hints.push(name.to_owned()),
        Some(false) => hints.push(format!("not {name}")),
        None => {}
    };
    hint("destructive", effect.destructive);
    hint("idempotent", effect.idempotent);
    hint("open world", effect.open_world);
    let kind = if effect.write { "write" } else { "read" };
    let hints = if hints.is_empty() {
        String::new()
    } else {
        format!(" ({})", hints.join(", "))
    };
    let mut lines = vec![String::new(), format!(" **Effect:** {kind}{hints}.")];
    if let Some(reason) = unguarded {
        lines.push(String::new());
        lines.push(format!(
            " **Unguarded:** this write tool needs no PreToolUse hook: {reason}"
        ));
    }
    for line in lines {
        func.attrs.push(syn::parse_quote!(#[doc = #line]));
    }
}

/// `errors = "shown"`, the only value: the tool's error type's `Display` is written for the model.
/// (Without it, the model reads a generic message for any error but `ToolError`, `String` and
/// `&str`.)
fn check_errors(cx: &mut Ctxt, arg: &Arg) -> bool {
    const VALID: &str = "valid values: `\"shown\"` (the model reads the error type's `Display`); \
                         leave `errors` out for the default (the model reads a generic message \
                         for any error but `ToolError`, `String` and `&str`)";
    let Some(value) = &arg.value else {
        cx.at(
            arg.key_span,
            format_args!("`errors` needs a value; {VALID}"),
        );
        return false;
    };
    match syn::parse2::<LitStr>(value.clone()) {
        Ok(lit) if lit.value() == "shown" => true,
        Ok(lit) => {
            cx.spanned(
                &lit,
                format_args!("unknown value `{:?}` for `errors`; {VALID}", lit.value()),
            );
            false
        }
        Err(_) => {
            cx.spanned(
                value,
                format_args!("`errors` takes a string literal; {VALID}"),
            );
            false
        }
    }
}

/// The tool's name: `name = "…"`, else the function's; `None` when unreadable or invalid.
fn check_name(cx: &mut Ctxt, arg: &NameArg, func: &Func) -> Option<ToolName> {
    let (name, fix) = match arg {
        NameArg::Unreadable => return None,
        NameArg::Given(lit) => (
            ToolName {
                value: lit.value(),
                span: lit.span(),
            },
            "fix `name = …`",
        ),
        NameArg::Absent => (
            ToolName {
                value: unraw(&func.ident),
                span: func.ident.span(),
            },
            "rename the function or set `#[tool(name = \"…\")]`",
        ),
    };
    match name_problem(&name.value) {
        Some(problem) => {
            cx.at(name.span, format_args!("{problem}; {fix}"));
            None
        }
        None => Some(name),
    }
}

/// The description the model reads; an empty one is an error.
fn check_description(cx: &mut Ctxt, given: Option<&LitStr>, func: &Func, name: &str) -> String {
    let description = match given {
        Some(lit) => lit.value().trim().to_owned(),
        None => doc_text(&func.attrs),
    };
    if !description.is_empty() {
        return description;
    }
    match given {
        Some(lit) => cx.spanned(lit, "the tool's description cannot be empty"),
        None => match non_literal_doc(&func.attrs) {
            Some(doc) => cx.spanned(
                doc,
                "`#[tool]` reads doc comments written as string literals only, and this \
                 `#[doc = …]` is computed (`concat!`, `include_str!`): write the description in \
                 `///` lines, or set `#[tool(description = \"…\")]`",
            ),
            None => cx.spanned(
                &func.ident,
                format_args!(
                    "tool `{name}` has no description: add a `///` doc comment saying what it does \
                     and when to use it (the model reads it to choose the tool), or set \
                     `#[tool(description = \"…\")]`"
                ),
            ),
        },
    }
    description
}

/// Each parameter becomes a model argument, the whole input, or an injected value: its
/// attributes are checked ([`check_param_attrs`]), then an `#[input]` parameter as the input
/// ([`check_input`]) and any other as an injected value or a model argument
/// ([`check_argument`]); last, that an `#[input]` stands without model arguments.
fn check_params(cx: &mut Ctxt, func: &Func) -> Vec<ToolParam> {
    let mut params = Vec::new();
    for p in &func.params {
        let (pat, ident, ty) = match &p.kind {
            ParamKind::Receiver(tokens) => {
                cx.spanned(
                    tokens,
                    "`#[tool]` goes on a free function, not a method: `self` cannot come from \
                     the model's input; move the body into a free function and take what it \
                     needs as parameters (`State<T>` for shared state)",
                );
                continue;
            }
            ParamKind::Typed { pat, ident, ty, .. } => (pat, ident.as_ref(), &**ty),
        };
        let input = param_attr(p, &["input"]);
        let class = classify(ty);
        check_param_attrs(cx, p, input.is_some(), &class);
        let param = match input {
            Some(input) => check_input(cx, input, &class, ty, has_input(&params)),
            None => check_argument(cx, p, class, pat, ident, ty),
        };
        params.extend(param);
    }
    check_input_alone(cx, &params);
    params
}

/// The first of the parameter's attributes named one of `names`.
fn param_attr<'p>(p: &'p Param, names: &[&str]) -> Option<&'p Attribute> {
    p.attrs
        .iter()
        .find(|a| names.iter().any(|n| a.path().is_ident(n)))
}

/// Whether a parameter checked so far is the `#[input]`.
fn has_input(params: &[ToolParam]) -> bool {
    params.iter().any(|p| matches!(p, ToolParam::Input(_)))
}

/// The attributes the macro refuses on a parameter: `#[cfg]` and `#[cfg_attr]` (the schema
/// would change with them), and `#[serde]`/`#[schemars]` anywhere but on a model argument
/// (they go onto the generated argument struct's fields, so they mean something there only).
fn check_param_attrs(cx: &mut Ctxt, p: &Param, is_input: bool, class: &Class) {
    if let Some(cfg) = param_attr(p, &["cfg", "cfg_attr"]) {
        cx.spanned(
            cfg,
            "`#[cfg]` and `#[cfg_attr]` on a tool parameter are not supported: the schema \
             would change with them",
        );
    }
    if let Some(field_attr) = param_attr(p, &["serde", "schemars"])
        && (is_input || matches!(class, Class::Injected(_)))
    {
        cx.spanned(
            field_attr,
            "`#[serde]` and `#[schemars]` apply to flat model arguments only: put them on \
             the input struct's fields (for `#[input]`), or remove them (an injected \
             parameter is not part of the input)",
        );
    }
}

/// An `#[input]` parameter (`input` is the attribute): the whole input, a struct of the
/// user's. `None`, with an error, for an injected parameter and when an earlier parameter is
/// the input already (`taken`); a type that is not a struct has an error and stays the input.
fn check_input(
    cx: &mut Ctxt,
    input: &Attribute,
    class: &Class,
    ty: &Type,
    taken: bool,
) -> Option<ToolParam> {
    if let Class::Injected(inj) = class {
        cx.spanned(
            input,
            format_args!(
                "{} is injected, not the model's input; remove `#[input]`",
                inj.describe()
            ),
        );
        return None;
    }
    if taken {
        cx.spanned(
            input,
            "two parameters want the whole input: only one parameter may be `#[input]`",
        );
        return None;
    }
    if let Some(why) = not_a_struct(ty) {
        cx.spanned(
            ty,
            format_args!(
                "`#[input]` takes a struct that derives Deserialize and JsonSchema; this type \
                 is {why}"
            ),
        );
    }
    Some(ToolParam::Input(Box::new(ty.clone())))
}

/// A parameter without `#[input]`, by how its type reads (`class`): `&HookContext` or
/// `State<T>` injected, anything else a model argument ([`model_argument`]). `None`, with an
/// error, for what a tool cannot take: a hook's subject, the context by `&mut` or by value,
/// `impl Trait`.
fn check_argument(
    cx: &mut Ctxt,
    p: &Param,
    class: Class,
    pat: &TokenStream,
    ident: Option<&Ident>,
    ty: &Type,
) -> Option<ToolParam> {
    match class {
        Class::Injected(Injected::Context) => Some(ToolParam::Injected(Injection {
            ty: Box::new(ty.clone()),
            state: None,
        })),
        Class::Injected(Injected::State(inner)) => Some(ToolParam::Injected(Injection {
            ty: Box::new(ty.clone()),
            state: Some(inner),
        })),
        Class::Injected(subject @ Injected::Subject(_)) => {
            cx.spanned(
                ty,
                format_args!(
                    "{} is given to hooks, not tools; a tool takes model arguments, \
                     `&HookContext` and `State<T>`",
                    subject.describe()
                ),
            );
            None
        }
        Class::MutRef(what) => {
            cx.spanned(
                ty,
                format_args!(
                    "{what} is read-only (the context is frozen); take it by shared reference"
                ),
            );
            None
        }
        Class::ByValue(what) => {
            cx.spanned(
                ty,
                format_args!("take {what} by reference: it is injected, not read from the input"),
            );
            None
        }
        Class::ImplTrait => {
            cx.spanned(
                ty,
                "a model argument needs a concrete type that derives Deserialize and JsonSchema, \
                 not `impl Trait`",
            );
            None
        }
        Class::Other => model_argument(cx, p, pat, ident, ty).map(ToolParam::Field),
    }
}

/// A model argument: a field of the generated argument struct, named by the parameter (a
/// plain identifier, not `_`: its name is the input field's name) and of an owned type (it is
/// deserialized from the input). `None`, with an error, otherwise.
fn model_argument(
    cx: &mut Ctxt,
    p: &Param,
    pat: &TokenStream,
    ident: Option<&Ident>,
    ty: &Type,
) -> Option<Field> {
    let Some(ident) = ident else {
        cx.spanned(
            pat,
            "name this parameter with a plain identifier: its name is the input field's name",
        );
        return None;
    };
    if ident == "_" {
        cx.spanned(
            pat,
            "name this parameter: its name is the input field's name",
        );
        return None;
    }
    if has_reference(ty) {
        cx.spanned(
            ty,
            "a model argument is deserialized into an owned value: take `String` instead of \
             `&str` and `Vec<T>` instead of `&[T]`, also inside `Option` or `Vec`",
        );
        return None;
    }
    Some(Field {
        ident: ident.clone(),
        ty: Box::new(ty.clone()),
        doc: doc_text(&p.attrs),
        attrs: p
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("serde") || a.path().is_ident("schemars"))
            .cloned()
            .collect(),
    })
}

/// `#[input]` takes the whole input: no other parameter may be a model argument (the first
/// one is named in the error).
fn check_input_alone(cx: &mut Ctxt, params: &[ToolParam]) {
    let first_field = params.iter().find_map(|p| match p {
        ToolParam::Field(f) => Some(&f.ident),
        _ => None,
    });
    if has_input(params)
        && let Some(field) = first_field
    {
        cx.at(
            field.span(),
            format_args!(
                "`#[input]` takes the whole input, so `{}` cannot be a model argument too; \
                 move it into the input struct (other parameters may only be `&HookContext` \
                 and `State<T>`)",
                unraw(field)
            ),
        );
    }
}

/// `strict = true` where the macro can see it cannot hold: a flat model argument whose type is a
/// map or a tuple (without `#[serde]`/`#[schemars]`, which may change its schema). The rest is
/// `build()`'s to check on the schema (`BuildProblem::CannotBeStrict`).
fn check_strict(cx: &mut Ctxt, params: &[ToolParam]) {
    for param in params {
        let ToolParam::Field(f) = param else {
            continue;
        };
        if !f.attrs.is_empty() {
            continue;
        }
        if let Some(why) = never_strict(&f.ty) {
            cx.spanned(
                &f.ty,
                format_args!(
                    "`strict = true` cannot hold: parameter `{}` is {why}; remove `strict = \
                     true` (the tool is then strict only where its schema allows), or take a \
                     struct with named fields",
                    unraw(&f.ident)
                ),
            );
        }
    }
}

/// Removes the parameter attributes the macro consumed: rustc rejects `///` and `#[input]` on
/// parameters, and `#[serde]`/`#[schemars]` went onto the generated fields.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn docs_after(effect: EffectSpec, unguarded: Option<&str>) -> Vec<String> {
        let mut func = Func::parse_item(quote! {
            /// Files a ticket.
            fn file(summary: String) -> String { summary }
        })
        .unwrap_or_else(|_| panic!("a function"));
        document_effect(&mut func, &effect, unguarded);
        func.attrs.iter().map(|a| quote!(#a).to_string()).collect()
    }

    #[test]
    fn the_effect_and_the_reason_are_appended_to_the_rustdoc() {
        let write = EffectSpec {
            write: true,
            destructive: Some(false),
            idempotent: None,
            open_world: Some(false),
        };
        assert_eq!(
            docs_after(write, Some("triage closes duplicates")),
            [
                "# [doc = r\" Files a ticket.\"]",
                "# [doc = \"\"]",
                "# [doc = \" **Effect:** write (not destructive, not open world).\"]",
                "# [doc = \"\"]",
                "# [doc = \" **Unguarded:** this write tool needs no PreToolUse hook: triage \
                 closes duplicates\"]",
            ]
        );
        let read = EffectSpec {
            write: false,
            destructive: None,
            idempotent: None,
            open_world: None,
        };
        assert_eq!(
            docs_after(read, None),
            [
                "# [doc = r\" Files a ticket.\"]",
                "# [doc = \"\"]",
                "# [doc = \" **Effect:** read.\"]",
            ]
        );
    }
}
