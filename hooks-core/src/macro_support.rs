//! Support for the code the macros generate. Not public API: reached only through
//! `toolgate::__private`, and free to change in any release.

use std::fmt::Display;

use crate::context::HookContext;
use crate::decision::Decision;
use crate::error::{HookError, ToolError};
use crate::state::State;

pub use crate::definitions::output_text;
pub use crate::future::BoxFuture;
pub use crate::registry::{Registration, RegistrationKind, ToolRef};
pub use crate::state::{Env, StateKey};

/// What a PreToolUse hook may return.
#[diagnostic::on_unimplemented(
    message = "a PreToolUse hook must return `Decision` or `Result<Decision, E>`, not `{Self}`",
    label = "this return type is not `Decision` or `Result<Decision, E: Display>`",
    note = "return `Decision::Allow`, `Decision::deny(…)` or `Decision::Rewrite(…)`; return `Err(e)` when the hook cannot decide (the agent halts)"
)]
pub trait IntoDecision {
    /// Converts the hook's return value.
    fn into_decision(self) -> Result<Decision, HookError>;
}

impl IntoDecision for Decision {
    fn into_decision(self) -> Result<Decision, HookError> {
        Ok(self)
    }
}

impl<E: Display> IntoDecision for Result<Decision, E> {
    fn into_decision(self) -> Result<Decision, HookError> {
        self.map_err(HookError::new)
    }
}

/// What a PostToolUse observer or Stop hook may return.
#[diagnostic::on_unimplemented(
    message = "an observer cannot change the result: return `()` or `Result<(), E>`, not `{Self}`",
    label = "PostToolUse and Stop hooks only observe",
    note = "to deny, rewrite or allow a call, write a #[pre_hook(order = N)] instead"
)]
pub trait IntoObserved {
    /// Converts the hook's return value.
    fn into_observed(self) -> Result<(), HookError>;
}

impl IntoObserved for () {
    fn into_observed(self) -> Result<(), HookError> {
        Ok(())
    }
}

impl<E: Display> IntoObserved for Result<(), E> {
    fn into_observed(self) -> Result<(), HookError> {
        self.map_err(HookError::new)
    }
}

/// A tool's return value on its way to a `Result`, chosen by its type, not by how it is
/// spelled: a `Result<T, E>` (however named: `io::Result<T>`, an alias `type Outcome =
/// Result<…>`) splits into its `Ok` and `Err`; any other `T` is `Ok(T)` with the error type
/// [`Infallible`](std::convert::Infallible). Chosen at compile time by method resolution
/// (autoref specialization): call `Returned(Some(value)).split()` with both [`SplitResult`] and
/// [`SplitPlain`] in scope. `None` comes back only when the value was already taken.
pub struct Returned<R>(pub Option<R>);

/// The preferred split of [`Returned`]: the value is a `Result<T, E>`.
pub trait SplitResult {
    /// The `Ok` type.
    type Ok;
    /// The `Err` type.
    type Err;
    /// Splits.
    fn split(self) -> Option<Result<Self::Ok, Self::Err>>;
}

impl<T, E> SplitResult for Returned<Result<T, E>> {
    type Ok = T;
    type Err = E;
    fn split(self) -> Option<Result<T, E>> {
        self.0
    }
}

/// The fallback split of [`Returned`]: the value is the output itself.
pub trait SplitPlain {
    /// The output type.
    type Ok;
    /// Splits.
    fn split(self) -> Option<Result<Self::Ok, std::convert::Infallible>>;
}

impl<T> SplitPlain for &mut Returned<T> {
    type Ok = T;
    fn split(self) -> Option<Result<T, std::convert::Infallible>> {
        self.0.take().map(Ok)
    }
}

/// A tool's error on its way to a [`ToolError`]: through `Into<ToolError>` when `E` has it (any
/// `std::error::Error`, keeping its source chain for the audit line, or a `ToolError` itself),
/// else through `Display` (`String`, `anyhow::Error`). Chosen at compile time by method
/// resolution (autoref specialization): call `ErrorOf(e).into_tool_error()` with both traits in
/// scope.
pub struct ErrorOf<E>(pub E);

/// The preferred conversion of [`ErrorOf`]: `E: Into<ToolError>`.
#[diagnostic::on_unimplemented(
    message = "a tool's error type must convert into `ToolError` or implement `Display`",
    note = "return `Result<T, E>` with `E: std::error::Error`, `String`, or `ToolError`"
)]
pub trait ViaInto {
    /// Converts.
    fn into_tool_error(self) -> ToolError;
}

impl<E: Into<ToolError>> ViaInto for ErrorOf<E> {
    fn into_tool_error(self) -> ToolError {
        self.0.into()
    }
}

/// The fallback conversion of [`ErrorOf`]: `E: Display`, the text the model reads.
pub trait ViaDisplay {
    /// Converts.
    fn into_tool_error(self) -> ToolError;
}

impl<E: Display> ViaDisplay for &ErrorOf<E> {
    fn into_tool_error(self) -> ToolError {
        ToolError::new(self.0.to_string())
    }
}

/// A parameter the macros inject instead of reading it from the model's input (after axum's
/// extractors): the generated code calls `<T as Inject>::inject(env)` with the span of the
/// parameter's type, so a type that is not injectable is one error, on that type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an injected parameter",
    label = "the macros inject `&HookContext` and `toolgate::State<T>` only",
    note = "a type named `State` must be `toolgate::State<T>` to be injected; rename your own type or pass it inside the input struct"
)]
pub trait Inject<'a>: Sized {
    /// Takes the value out of the call's environment.
    ///
    /// # Errors
    /// [`MissingState`](crate::MissingState) when a `State<T>` was not given to the builder.
    fn inject(env: Env<'a>) -> Result<Self, crate::state::MissingState>;
}

impl<'a, T: Send + Sync + 'static> Inject<'a> for State<T> {
    fn inject(env: Env<'a>) -> Result<Self, crate::state::MissingState> {
        env.state::<T>()
    }
}

impl<'a> Inject<'a> for &'a HookContext {
    fn inject(env: Env<'a>) -> Result<Self, crate::state::MissingState> {
        Ok(env.context())
    }
}

/// Checks at compile time that a struct input can be a tool's input (error spanned on its type).
pub fn assert_input<T>()
where
    T: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
{
}

/// What a hook matcher's lookup finds when the function it names has no `#[tool]` companion
/// beside it: the generated code defines a fallback constant of this type, which the real
/// companion (a [`ToolRef`]) shadows. [`ToolFunction`] does not accept it, so such a matcher does
/// not compile, with the trait's message on the path the user wrote.
pub struct NotATool;

/// A function named in a hook's `tools = [...]`, with what was found beside it (`C`): a
/// [`ToolRef`] for a `#[tool]` function, else [`NotATool`]. The generated code calls
/// `ToolFunction::tool_name(path, companion)`; when `path` does not resolve, its type is an error
/// and rustc reports only the unresolved path (with its own "a function with a similar name
/// exists").
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `#[tool]` function, or its tool is not in scope here",
    label = "no tool found beside this function",
    note = "a hook finds a tool beside its function: name a `#[tool]` function of this module, or \
            of a glob-imported one (`use tools::*;`), by its name, and any other by its path \
            (`tools = [tools::lookup_user]`); `use tools::lookup_user;` alone imports the \
            function, not its tool",
    note = "a tool defined inside a function body cannot be named in `tools = [...]`: define it \
            at module level"
)]
pub trait ToolFunction<C>: Sized {
    /// The tool's name.
    fn tool_name(self, companion: C) -> &'static str;
}

impl<F> ToolFunction<ToolRef> for F {
    fn tool_name(self, companion: ToolRef) -> &'static str {
        companion.name
    }
}
