//! Telling injected parameters from model arguments.
//!
//! The rule, by type (written the way the user wrote it, checked by the compiler afterwards):
//! - `&HookContext` (any path ending in `HookContext`) is the session's context;
//! - `State<T>` (any path ending in `State` with one type argument) is application state;
//! - in hooks, `&ToolUse`, `&CallRecord` and `&SessionSummary` are the hook's subject;
//! - every other parameter is a model argument (a field of the input).
//!
//! The generated code takes each injected value through `<T as __private::Inject>::inject`,
//! spanned on the parameter's type, so a user type that happens to be called `State<T>` is one
//! compile error on that type that says so, never a silent misreading.

use syn::{GenericArgument, PathArguments, Type};

/// What a hook is about: the one parameter each hook kind is given by reference.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// `&ToolUse`, a PreToolUse hook's.
    ToolUse,
    /// `&CallRecord`, a PostToolUse observer's.
    CallRecord,
    /// `&SessionSummary`, a Stop hook's.
    SessionSummary,
}

impl Subject {
    /// The parameter as written, for messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Subject::ToolUse => "`&ToolUse`",
            Subject::CallRecord => "`&CallRecord`",
            Subject::SessionSummary => "`&SessionSummary`",
        }
    }
}

/// What an injected parameter is.
pub(crate) enum Injected {
    /// `&HookContext`.
    Context,
    /// `State<T>`, holding `T`.
    State(Box<Type>),
    /// A hook's subject.
    Subject(Subject),
}

impl Injected {
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Injected::Context => "`&HookContext`",
            Injected::State(_) => "`State<T>`",
            Injected::Subject(s) => s.describe(),
        }
    }
}

/// A checked `&HookContext` or `State<T>` parameter, which the generated code takes from the
/// call's environment.
pub(crate) struct Injection {
    /// The parameter's type as written: the generated `<ty as Inject>::inject` is spanned on it.
    pub(crate) ty: Box<Type>,
    /// For `State<T>`, `T`: declared to the builder (`needs_state`), which checks it was given.
    pub(crate) state: Option<Box<Type>>,
}

/// How a parameter's type reads.
pub(crate) enum Class {
    Injected(Injected),
    /// `&mut HookContext` and friends: a mistake worth its own message.
    MutRef(&'static str),
    /// `HookContext` (and friends) by value: the same.
    ByValue(&'static str),
    /// `impl Trait`: no concrete type to deserialize into.
    ImplTrait,
    Other,
}

fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => strip(&g.elem),
        Type::Paren(p) => strip(&p.elem),
        other => other,
    }
}

fn last_ident(ty: &Type) -> Option<(&syn::PathSegment, String)> {
    match strip(ty) {
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            Some((seg, seg.ident.to_string()))
        }
        _ => None,
    }
}

pub(crate) fn classify(ty: &Type) -> Class {
    match strip(ty) {
        Type::Reference(r) => {
            let Some((_, name)) = last_ident(&r.elem) else {
                return Class::Other;
            };
            let injected = match name.as_str() {
                "HookContext" => Injected::Context,
                "ToolUse" => Injected::Subject(Subject::ToolUse),
                "CallRecord" => Injected::Subject(Subject::CallRecord),
                "SessionSummary" => Injected::Subject(Subject::SessionSummary),
                _ => return Class::Other,
            };
            if r.mutability.is_some() {
                return Class::MutRef(injected.describe());
            }
            Class::Injected(injected)
        }
        Type::ImplTrait(_) => Class::ImplTrait,
        other => {
            let Some((seg, name)) = last_ident(other) else {
                return Class::Other;
            };
            match name.as_str() {
                "HookContext" => return Class::ByValue(Injected::Context.describe()),
                "ToolUse" => return Class::ByValue(Subject::ToolUse.describe()),
                "CallRecord" => return Class::ByValue(Subject::CallRecord.describe()),
                "SessionSummary" => return Class::ByValue(Subject::SessionSummary.describe()),
                _ => {}
            }
            if name != "State" {
                return Class::Other;
            }
            if let PathArguments::AngleBracketed(args) = &seg.arguments {
                let types: Vec<&Type> = args
                    .args
                    .iter()
                    .filter_map(|a| match a {
                        GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                if types.len() == 1 && args.args.len() == 1 {
                    return Class::Injected(Injected::State(Box::new(types[0].clone())));
                }
            }
            Class::Other
        }
    }
}

/// Whether the type is or holds a reference (`&str`, `Option<&str>`, `Vec<&[u8]>`, `(u8,
/// &str)`): a model argument must be owned, since it is deserialized.
pub(crate) fn has_reference(ty: &Type) -> bool {
    match strip(ty) {
        Type::Reference(_) => true,
        Type::Path(p) => p.path.segments.iter().any(|seg| match &seg.arguments {
            PathArguments::AngleBracketed(args) => args.args.iter().any(|a| match a {
                GenericArgument::Type(t) => has_reference(t),
                _ => false,
            }),
            _ => false,
        }),
        Type::Tuple(t) => t.elems.iter().any(has_reference),
        Type::Array(a) => has_reference(&a.elem),
        Type::Slice(s) => has_reference(&s.elem),
        _ => false,
    }
}

/// Why a type cannot be a whole-input struct, when the macro can see it.
pub(crate) fn not_a_struct(ty: &Type) -> Option<&'static str> {
    match strip(ty) {
        Type::Reference(_) => Some("a reference; take the struct by value"),
        Type::Tuple(_) => Some("a tuple; use a struct with named fields"),
        Type::Array(_) | Type::Slice(_) => Some("an array; use a struct with named fields"),
        Type::Path(_) => {
            let (_, name) = last_ident(ty)?;
            match name.as_str() {
                "Option" | "Vec" | "HashMap" | "BTreeMap" | "HashSet" | "BTreeSet" | "Box"
                | "String" | "str" | "bool" | "char" | "u8" | "u16" | "u32" | "u64" | "u128"
                | "usize" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "f32" | "f64"
                | "Value" => Some("not a struct; use a struct with named fields"),
                _ => None,
            }
        }
        _ => Some("not a struct; use a struct with named fields"),
    }
}

/// Why a model argument of this type can never be strict in any strict target, when the macro
/// can see it: a map (`HashMap`, `BTreeMap`, `IndexMap`: an object with no fixed properties) or a
/// tuple (`prefixItems`), also inside `Option`, `Vec`, `VecDeque`, `Box`, a set or an array.
/// `None` for everything else, which `build()` checks on the schema itself.
pub(crate) fn never_strict(ty: &Type) -> Option<&'static str> {
    match strip(ty) {
        Type::Tuple(t) if t.elems.len() >= 2 => {
            Some("a tuple, whose schema (`prefixItems`) no strict subset can express")
        }
        Type::Tuple(t) => t.elems.iter().find_map(never_strict),
        Type::Array(a) => never_strict(&a.elem),
        Type::Path(_) => {
            let (seg, name) = last_ident(ty)?;
            let PathArguments::AngleBracketed(args) = &seg.arguments else {
                return None;
            };
            let types = args.args.iter().filter_map(|a| match a {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            });
            match name.as_str() {
                "HashMap" | "BTreeMap" | "IndexMap" => Some(
                    "a map, an object with no fixed properties, which no strict subset can \
                     express",
                ),
                "Option" | "Vec" | "VecDeque" | "Box" | "HashSet" | "BTreeSet" | "IndexSet" => {
                    types.into_iter().find_map(never_strict)
                }
                _ => None,
            }
        }
        _ => None,
    }
}
