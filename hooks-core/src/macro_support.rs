//! Support for the code the macros generate. Not public API: reached only through
//! `toolgate::__private`, and free to change in any release.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt::Display;
use std::marker::PhantomData;

use crate::error::{HookError, Noted, ToolError};
use crate::hook::context::HookContext;
use crate::hook::decision::{Decision, Rewrite};
use crate::hook::definitions::ToolDef;
use crate::hook::state::State;

pub use crate::base::future::BoxFuture;
pub use crate::content::message::ToolResultContent;
pub use crate::content::output::{output_content, output_text};
pub use crate::hook::registry::{Registration, RegistrationKind, ToolRef};
pub use crate::hook::state::{Env, StateKey};

/// What a PreToolUse hook may return.
#[diagnostic::on_unimplemented(
    message = "a PreToolUse hook must return `Decision` or `Result<Decision, E>`, not `{Self}`",
    label = "this return type is not `Decision` or `Result<Decision, E: Display>`",
    note = "return `Decision::Allow`, `Decision::deny(…)`, `Decision::ask(…)` (a person decides) or `Decision::Rewrite(…)`; a hook that only rewrites returns `Rewrite` (`Rewrite::Keep`, `Rewrite::To(…)`); return `Err(e)` when the hook cannot decide (the agent halts)"
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

impl IntoDecision for Rewrite {
    fn into_decision(self) -> Result<Decision, HookError> {
        Ok(self.into())
    }
}

impl<E: Display> IntoDecision for Result<Rewrite, E> {
    fn into_decision(self) -> Result<Decision, HookError> {
        self.map(Decision::from).map_err(HookError::new)
    }
}

/// What a typed PreToolUse hook (one that takes `&I`, the tool's input type) may return: a
/// `Decision<I>`, so a rewrite is an `I`.
#[diagnostic::on_unimplemented(
    message = "a PreToolUse hook that takes `&{I}` must return `Decision<{I}>` or `Result<Decision<{I}>, E>`, not `{Self}`",
    label = "this return type is not `Decision<{I}>` or `Result<Decision<{I}>, E: Display>`",
    note = "a typed hook's rewrite is a `{I}`: return `Decision::Rewrite({I} {{ … }})`, `Decision::Allow` or `Decision::deny(…)`; take `&ToolUse` instead to rewrite the input as JSON"
)]
pub trait IntoTypedDecision<I> {
    /// Converts the hook's return value.
    fn into_typed_decision(self) -> Result<Decision<I>, HookError>;
}

impl<I> IntoTypedDecision<I> for Decision<I> {
    fn into_typed_decision(self) -> Result<Decision<I>, HookError> {
        Ok(self)
    }
}

impl<I, E: Display> IntoTypedDecision<I> for Result<Decision<I>, E> {
    fn into_typed_decision(self) -> Result<Decision<I>, HookError> {
        self.map_err(HookError::new)
    }
}

impl<I> IntoTypedDecision<I> for Rewrite<I> {
    fn into_typed_decision(self) -> Result<Decision<I>, HookError> {
        Ok(self.into())
    }
}

impl<I, E: Display> IntoTypedDecision<I> for Result<Rewrite<I>, E> {
    fn into_typed_decision(self) -> Result<Decision<I>, HookError> {
        self.map(Decision::from).map_err(HookError::new)
    }
}

/// Whether a PreToolUse hook whose return type is `R` can refuse a call, read at compile time
/// by method resolution (no bound on `R`, so a wrong return type is reported once, by
/// [`IntoDecision`]): `RefusalProbe::<R>::new().can_refuse()` with [`RewritesOnly`] and
/// [`MayRefuse`] in scope is `false` for [`Rewrite`] and `Result<Rewrite, E>`, `true` for
/// everything else. A hook that cannot refuse is no write tool's guard at `build()`.
pub struct RefusalProbe<R>(PhantomData<fn() -> R>);

impl<R> RefusalProbe<R> {
    /// The probe of `R`.
    pub fn new() -> Self {
        RefusalProbe(PhantomData)
    }
}

impl<R> Default for RefusalProbe<R> {
    fn default() -> Self {
        RefusalProbe::new()
    }
}

/// The preferred `can_refuse` of [`RefusalProbe`]: the hook returns a [`Rewrite`].
pub trait RewritesOnly {
    /// `false`: the hook keeps or replaces the input, never denies or asks.
    fn can_refuse(self) -> bool;
}

impl<I> RewritesOnly for RefusalProbe<Rewrite<I>> {
    fn can_refuse(self) -> bool {
        false
    }
}

impl<I, E> RewritesOnly for RefusalProbe<Result<Rewrite<I>, E>> {
    fn can_refuse(self) -> bool {
        false
    }
}

/// The fallback `can_refuse` of [`RefusalProbe`]: any other return type (a [`Decision`]).
pub trait MayRefuse {
    /// `true`.
    fn can_refuse(self) -> bool;
}

impl<R> MayRefuse for &RefusalProbe<R> {
    fn can_refuse(self) -> bool {
        true
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

/// A tool's return type `R`, probed at compile time for the JSON Schema of its output (MCP's
/// `outputSchema`), by method resolution (autoref specialization, as for [`Returned`]): the
/// generated code calls `OutputProbe::<R>::new().ok_type().output_schema()` with
/// [`OkOfResult`], [`OkOfPlain`], [`HasSchema`] and [`NoSchema`] in scope. `ok_type` finds the
/// output type `T` (the `Ok` type of a `Result<T, E>`, however named; `R` itself otherwise);
/// `output_schema` is `Some(T's schema)` when `T: JsonSchema`, `None` otherwise.
pub struct OutputProbe<R>(PhantomData<fn() -> R>);

impl<R> OutputProbe<R> {
    /// The probe for `R`.
    pub fn new() -> Self {
        OutputProbe(PhantomData)
    }
}

impl<R> Default for OutputProbe<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// The output type found by [`OutputProbe`].
pub struct TypeProbe<T>(PhantomData<fn() -> T>);

/// The preferred `ok_type` of [`OutputProbe`]: `R` is a `Result<T, E>`.
pub trait OkOfResult {
    /// The `Ok` type.
    type Ok;
    /// The probe of the `Ok` type.
    fn ok_type(self) -> TypeProbe<Self::Ok>;
}

impl<T, E> OkOfResult for OutputProbe<Result<T, E>> {
    type Ok = T;
    fn ok_type(self) -> TypeProbe<T> {
        TypeProbe(PhantomData)
    }
}

/// The fallback `ok_type` of [`OutputProbe`]: `R` is the output itself.
pub trait OkOfPlain {
    /// The output type.
    type Ok;
    /// The probe of the output type.
    fn ok_type(self) -> TypeProbe<Self::Ok>;
}

impl<R> OkOfPlain for &OutputProbe<R> {
    type Ok = R;
    fn ok_type(self) -> TypeProbe<R> {
        TypeProbe(PhantomData)
    }
}

/// The preferred `output_schema` of [`TypeProbe`]: the output type has a JSON Schema.
pub trait HasSchema {
    /// The schema, as generated.
    fn output_schema(self) -> Option<serde_json::Value>;
}

impl<T: schemars::JsonSchema> HasSchema for TypeProbe<T> {
    fn output_schema(self) -> Option<serde_json::Value> {
        Some(crate::schema::generate::<T>())
    }
}

/// The fallback `output_schema` of [`TypeProbe`]: no schema.
pub trait NoSchema {
    /// `None`.
    fn output_schema(self) -> Option<serde_json::Value>;
}

impl<T> NoSchema for &TypeProbe<T> {
    fn output_schema(self) -> Option<serde_json::Value> {
        None
    }
}

/// Sets the generated tool's output schema (what [`OutputProbe`] found).
pub fn with_output_schema(mut def: ToolDef, schema: Option<serde_json::Value>) -> ToolDef {
    def.output_schema = schema;
    def
}

/// A tool's error on its way to a [`ToolError`], by the rule "only text written for the model
/// is shown to it". The conversion is chosen by the error's type at compile time, by method
/// resolution (autoref specialization, after anyhow's `kind.rs`): the generated code calls
/// `(&&&ErrorOf::of(&e)).tool_error_kind()` with [`ListedKind`], [`BoxableKind`] and
/// [`DisplayKind`] in scope, then the kind's `internal(e)` (the default) or `shown(e)`
/// (`#[tool(errors = "shown")]`). The first kind that applies wins:
///
/// | `E` | kind | default | `errors = "shown"` |
/// |---|---|---|---|
/// | `ToolError` | [`Listed`] | as made | as made |
/// | `String`, `&str`, `Cow<str>`, `Box<str>` | [`Listed`] | shown as written | shown as written |
/// | `Box<dyn Error>`, `Box<dyn Error + Send>` | [`Listed`] (chain read now) | internal | `Display` shown, chain to `detail` |
/// | `E: Into<Box<dyn Error + Send + Sync>>`: any `std::error::Error`, `Box<dyn Error + Send + Sync>`, `anyhow::Error` | [`Boxable`] | internal | `Display` shown, chain to `detail` |
/// | any other `E: Display` | [`Displayed`] | internal, `detail` from `{:#}` | `Display` shown |
///
/// Internal: the model reads [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE) and
/// the error's text goes to the audit line's `detail`. A `Display`-only error's chain is read from
/// its alternate form `{:#}`, which `anyhow::Error` and `eyre::Report` write as `outer: cause:
/// root`.
pub struct ErrorOf<E>(PhantomData<fn() -> E>);

impl<E> ErrorOf<E> {
    /// The kind probe for `error`'s type (the value is converted afterwards, by the kind).
    pub fn of(_error: &E) -> Self {
        ErrorOf(PhantomData)
    }
}

/// The error types of the [`Listed`] kind, each listed by name (no blanket impl, so none
/// overlaps another kind): text written for the model (`String`, `&str`, `Cow<str>`,
/// `Box<str>`), a `ToolError` as made, and the boxed errors that are not `Send` (their chain read
/// now, since they cannot be kept).
pub trait ListedError {
    /// Converts, for a tool without `errors = "shown"`.
    fn internal(self) -> ToolError;
    /// Converts, for a tool with `errors = "shown"`.
    fn shown(self) -> ToolError;
}

impl ListedError for ToolError {
    fn internal(self) -> ToolError {
        self
    }
    fn shown(self) -> ToolError {
        self
    }
}

macro_rules! authored_text {
    ($($t:ty),*) => {$(
        impl ListedError for $t {
            fn internal(self) -> ToolError {
                ToolError::new(String::from(self))
            }
            fn shown(self) -> ToolError {
                ToolError::new(String::from(self))
            }
        }
    )*};
}

authored_text!(String, &str, Cow<'_, str>, Box<str>);

macro_rules! unsendable_box {
    ($($t:ty),*) => {$(
        // Not `Send`: the error cannot be kept, so its chain is read now.
        impl ListedError for $t {
            fn internal(self) -> ToolError {
                ToolError::internal(Noted::read(&*self))
            }
            fn shown(self) -> ToolError {
                ToolError::for_model(Noted::read(&*self))
            }
        }
    )*};
}

unsendable_box!(Box<dyn StdError>, Box<dyn StdError + Send>);

/// The kind of a `ToolError`, a `String` or `&str` error, and the other [`ListedError`]s.
pub struct Listed;

impl Listed {
    /// See [`ErrorOf`].
    pub fn internal<E: ListedError>(self, error: E) -> ToolError {
        error.internal()
    }
    /// See [`ErrorOf`].
    pub fn shown<E: ListedError>(self, error: E) -> ToolError {
        error.shown()
    }
}

/// The kind of an error that boxes into `Box<dyn Error + Send + Sync>`: any `std::error::Error
/// + Send + Sync + 'static`, a boxed one, `anyhow::Error`.
pub struct Boxable;

impl Boxable {
    /// See [`ErrorOf`].
    pub fn internal<E: Into<Box<dyn StdError + Send + Sync + 'static>>>(
        self,
        error: E,
    ) -> ToolError {
        ToolError::internal(error)
    }
    /// See [`ErrorOf`].
    pub fn shown<E: Into<Box<dyn StdError + Send + Sync + 'static>>>(self, error: E) -> ToolError {
        ToolError::for_model(error)
    }
}

/// The kind of an error known only by its `Display`.
pub struct Displayed;

impl Displayed {
    /// See [`ErrorOf`].
    pub fn internal<E: Display>(self, error: E) -> ToolError {
        ToolError::internal(Noted::new(format!("{error:#}"), None))
    }
    /// See [`ErrorOf`]: the `Display` is shown; the alternate form, when it says more, goes to
    /// `detail` (without the `Display` it starts with).
    pub fn shown<E: Display>(self, error: E) -> ToolError {
        let (text, full) = (error.to_string(), format!("{error:#}"));
        let rest = (full != text).then(|| {
            full.strip_prefix(text.as_str())
                .and_then(|rest| rest.strip_prefix(": "))
                .unwrap_or(&full)
                .to_owned()
        });
        ToolError::for_model(Noted::new(text, rest))
    }
}

/// The first kind of [`ErrorOf`]: [`Listed`].
pub trait ListedKind {
    /// The kind.
    fn tool_error_kind(&self) -> Listed {
        Listed
    }
}

impl<E: ListedError> ListedKind for &&ErrorOf<E> {}

/// The second kind of [`ErrorOf`]: [`Boxable`].
pub trait BoxableKind {
    /// The kind.
    fn tool_error_kind(&self) -> Boxable {
        Boxable
    }
}

impl<E: Into<Box<dyn StdError + Send + Sync + 'static>>> BoxableKind for &ErrorOf<E> {}

/// The last kind of [`ErrorOf`]: [`Displayed`].
pub trait DisplayKind {
    /// The kind.
    fn tool_error_kind(&self) -> Displayed {
        Displayed
    }
}

// Unbounded, so the probe always finds a kind: an error type that is not even `Display` fails
// at `Displayed`'s conversion, with rustc's "`E` doesn't implement `std::fmt::Display`" on the
// tool's return type.
impl<E> DisplayKind for ErrorOf<E> {}

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
    /// [`MissingState`](crate::dispatch::MissingState) when a `State<T>` was not given to the
    /// builder.
    fn inject(env: Env<'a>) -> Result<Self, crate::hook::state::MissingState>;
}

impl<'a, T: Send + Sync + 'static> Inject<'a> for State<T> {
    fn inject(env: Env<'a>) -> Result<Self, crate::hook::state::MissingState> {
        env.state::<T>()
    }
}

impl<'a> Inject<'a> for &'a HookContext {
    fn inject(env: Env<'a>) -> Result<Self, crate::hook::state::MissingState> {
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
