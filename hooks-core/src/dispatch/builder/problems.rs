//! What `build()` reports: each [`BuildProblem`], the [`BuildError`] that lists them, and the
//! collector every step of `build()` pushes its problems to.

use std::fmt;

use crate::hook::state::{StateKey, StateMap};
use crate::provider::Provider;

/// One problem found by [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Two or more tools share a name (a model could not tell them apart).
    #[error("two tools are named `{tool}`: {}; rename one with #[tool(name = \"…\")] or filter one out", paths.join(" and "))]
    DuplicateTool {
        /// The shared name.
        tool: String,
        /// The full paths of the tools.
        paths: Vec<String>,
    },
    /// A name outside `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("tool `{tool}` ({path}) has an invalid name: use 1 to 64 letters, digits, `_` or `-`")]
    InvalidToolName {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// An empty description.
    #[error("tool `{tool}` ({path}) has no description: the model needs one to choose the tool")]
    NoDescription {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// The input schema's root is not an object with properties.
    #[error(
        "tool `{tool}` ({path}) has an input schema whose root is {found}; a tool's input must be a struct with named fields, whose schema is `{{\"type\": \"object\", …}}`"
    )]
    RootNotObject {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// What the root is.
        found: String,
    },
    /// A schema toolgate did not derive (a `#[schemars(schema_with = …)]` part, a wrapped
    /// caller's `input_schema`) is not valid JSON Schema: one problem per fault, at its keyword.
    #[error(
        "tool `{tool}` ({path}) has an input schema that is not valid {draft} {}: {reason}; fix the schema (its #[schemars(schema_with = …)] function, or the wrapped caller's definition)",
        keyword_place(.keyword)
    )]
    InvalidSchema {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The draft the schema was checked as (its `$schema`; `JSON Schema 2020-12` when it
        /// names none).
        draft: &'static str,
        /// Where, as a JSON pointer into the schema (`/properties/unit/type`; empty for the
        /// root).
        keyword: String,
        /// Why (``the string "strin" is not a JSON Schema type (one of `array`, …)``).
        reason: String,
    },
    /// A property's schema is a bare `true` or `{}`.
    #[error(
        "tool `{tool}` ({path}): property `{property}` accepts any JSON (its schema is `true` or `{{}}`, as for serde_json::Value); give it an explicit schema with #[schemars(schema_with = \"…\")] on the parameter or field, or use a typed struct"
    )]
    OpenProperty {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The property's path (`options.extra`).
        property: String,
    },
    /// An input example a tool would refuse, or a wrapped caller's `input_examples` that is not
    /// an array (the API refuses a request with an invalid example: "Define tools").
    #[error(
        "tool `{tool}` ({path}): {} is invalid{}: {problem}; fix the example or remove it (the API refuses a request whose input_examples do not match the input_schema)",
        example_name(*index),
        crate::texts::at_path(field)
    )]
    InvalidInputExample {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The example's position in `input_examples`, from 0; `None` when `input_examples`
        /// itself is not an array.
        index: Option<usize>,
        /// Where in the example (`options.filters[2]`; empty at the top level).
        field: String,
        /// What is wrong there, as the model would be told for a call with this input.
        problem: String,
    },
    /// A tool marked `strict = true` whose schema a strict target cannot take strict.
    #[error(
        "tool `{tool}` ({path}) is marked `strict = true`, but {provider} cannot take it strict: {reason}; remove `strict = true` (the tool is then sent non-strict where it must be) or change its input type"
    )]
    CannotBeStrict {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The strict target.
        provider: Provider,
        /// Why (``property `labels` is a map …``).
        reason: String,
    },
    /// The tools marked `strict = true` are over a strict target's limits on one request's
    /// strict tools together.
    #[error(
        "the tools marked `strict = true` ({}) cannot all be strict for {provider}: {reason}; mark fewer tools `strict = true` or make parameters required",
        tools.join(", ")
    )]
    StrictLimit {
        /// The strict target.
        provider: Provider,
        /// Every tool marked `strict = true`, by name.
        tools: Vec<String>,
        /// Which limits, by how much (``together they hold 30 optional parameters (Anthropic
        /// strict tool use allows 24 in one request)``).
        reason: String,
    },
    /// A hook's matcher names a tool that no source registers.
    #[error("hook `{hook}` matches tool `{tool}`, which is registered nowhere")]
    UnknownMatcherTool {
        /// The hook's full path.
        hook: String,
        /// The unknown tool name.
        tool: String,
    },
    /// The audit log's [`Redaction`](crate::audit::Redaction) has a field rule for a tool that no
    /// source registers (its fields would be left in clear).
    #[error(
        "the audit log's redaction names tool `{0}`, which is registered nowhere (use \"*\" for every tool)"
    )]
    UnknownRedactionTool(String),
    /// A hook's tool list is empty (`PreHookDef::tools([])`, a config file with an empty
    /// list): it would match no tool, so it would guard (or observe) nothing.
    #[error(
        "hook `{hook}` has an empty tool list, so it would never run: name at least one tool, or \
         leave the list out to match every tool"
    )]
    EmptyMatcher {
        /// The hook's full path.
        hook: String,
    },
    /// A hook given to the builder explicitly (`.pre_hook(…)`, `.post_hook(…)`) matches only
    /// tools this dispatcher does not have (filtered out, or from another dispatcher): it would
    /// never run. (A registered hook in that case is simply left out: that is how a specialist
    /// is built.)
    #[error(
        "hook `{hook}` was given to this builder, but none of its tools ({}) is part of this \
         dispatcher, so it would never run: keep one of them, or do not give this builder the \
         hook", tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
    )]
    MatchesNoKeptTool {
        /// The hook's full path.
        hook: String,
        /// The tools it matches (those registered somewhere).
        tools: Vec<String>,
    },
    /// A `write` tool (declared so, or undeclared under
    /// [`DispatcherBuilder::undeclared_effects_are_writes`](crate::dispatch::DispatcherBuilder::undeclared_effects_are_writes))
    /// that no PreToolUse hook of this dispatcher guards and that does not say why it needs none.
    /// A guard is a hook that can deny or ask: one that only rewrites (it returns
    /// [`Rewrite`](crate::Rewrite), or is declared
    /// [`rewrites_only`](crate::dispatch::PreHookDef::rewrites_only)) can never refuse a call.
    #[error(
        "tool `{tool}` ({path}) {}, but no PreToolUse hook of this dispatcher guards it{}: add a \
         #[pre_hook] that returns `Decision` and whose `tools` names it, or say why it needs \
         none with #[tool(effect = \"write\", unguarded = \"…\")] (ToolDef::unguarded)",
        if *declared { "writes (`effect = \"write\"`)" } else {
            "declares no effect, which this builder counts as a write (undeclared_effects_are_writes)"
        },
        rewriters_text(only_rewritten_by)
    )]
    UnguardedWrite {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// Whether the tool declared `write` (`false`: undeclared, counted as a write).
        declared: bool,
        /// The hooks that match the tool but only rewrite (they cannot refuse, so none guards
        /// it), by full path; empty when no hook matches it.
        only_rewritten_by: Vec<String>,
    },
    /// A `write` tool whose reason for needing no guard is blank.
    #[error(
        "tool `{tool}` ({path}) says it needs no PreToolUse hook but gives no reason: write why \
         in `unguarded = \"…\"`, or guard it with a #[pre_hook]"
    )]
    UnguardedWithoutReason {
        /// The tool's name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// A typed PreToolUse hook (one that takes `&T`) whose input type no tool of this builder's
    /// sources takes: it would guard nothing.
    #[error(
        "hook `{hook}` takes `&{input}`, but no tool of this builder takes `{input}` as its input, \
         so it would guard nothing: take the input type of the tool you mean (a flat tool names \
         its input with #[tool(input = Name)]), or add that tool"
    )]
    NoToolTakesHookInput {
        /// The hook's full path.
        hook: String,
        /// The type the hook takes.
        input: String,
    },
    /// A typed PreToolUse hook whose `tools` names a tool whose input is another type.
    #[error(
        "hook `{hook}` takes `&{input}`, but its tool `{tool}` takes {tool_input}: name only \
         tools whose input is `{input}`, or take `&ToolUse` to read any tool's input"
    )]
    HookInputMismatch {
        /// The hook's full path.
        hook: String,
        /// The tool named in its `tools`.
        tool: String,
        /// The type the hook takes.
        input: String,
        /// The tool's input type, in backticks, or what it is instead.
        tool_input: String,
    },
    /// An item takes a `State<T>` the builder was not given.
    #[error(
        "`{item}` takes State<{type_name}>, but the builder was not given one: add .state(…) with a {type_name}"
    )]
    MissingState {
        /// The item's full path.
        item: String,
        /// The state's type.
        type_name: &'static str,
    },
    /// `registered_under` found nothing.
    #[error(
        "nothing is registered under module path `{0}` (is the crate linked? add `use my_crate as _;`)"
    )]
    NothingUnder(String),
    /// `item` found nothing.
    #[error("no registered item has the path `{0}`")]
    NoSuchItem(String),
    /// `only_tools` or `without_tools` names a tool no source provides.
    #[error("the tool filter names `{0}`, which no source of this builder provides")]
    UnknownFilterTool(String),
}

/// How a build problem names an example: `` `input_examples[2]` ``, or `` `input_examples` ``.
fn example_name(index: Option<usize>) -> String {
    match index {
        Some(i) => format!("`input_examples[{i}]`"),
        None => "`input_examples`".to_owned(),
    }
}

/// `at `/properties/unit/type``, or `at its root`.
fn keyword_place(pointer: &str) -> String {
    if pointer.is_empty() {
        "at its root".into()
    } else {
        format!("at `{pointer}`")
    }
}

/// Every problem [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build) found,
/// reported together; `Display` writes one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    /// The problems, in the order found.
    pub problems: Vec<BuildProblem>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the dispatcher cannot be built ({} problem{}):",
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            write!(f, "\n- {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

/// Every problem `build()` finds, in the order found (one collector for every step, so the
/// error lists them all at once).
pub(super) struct Problems<'b> {
    found: Vec<BuildProblem>,
    /// The states the builder was given.
    states: &'b StateMap,
}

impl<'b> Problems<'b> {
    pub(super) fn new(states: &'b StateMap) -> Self {
        Problems {
            found: Vec::new(),
            states,
        }
    }

    pub(super) fn push(&mut self, problem: BuildProblem) {
        self.found.push(problem);
    }

    /// `item` takes these states: each must have been given.
    pub(super) fn need_states(&mut self, item: &str, states: &[StateKey]) {
        for key in states {
            if !self.states.contains(key) {
                self.push(BuildProblem::MissingState {
                    item: item.to_owned(),
                    type_name: key.type_name(),
                });
            }
        }
    }

    /// The end of the checks: every problem found, or none.
    pub(super) fn check(self) -> Result<(), BuildError> {
        if self.found.is_empty() {
            Ok(())
        } else {
            Err(BuildError {
                problems: self.found,
            })
        }
    }
}

/// What [`BuildProblem::UnguardedWrite`] says of the hooks that match a write tool but only
/// rewrite: `` (`app::normalize` only rewrites: it returns `Rewrite`, so it can never refuse a
/// call)``, or nothing when there are none.
fn rewriters_text(hooks: &[String]) -> String {
    match hooks {
        [] => String::new(),
        [one] => format!(
            " (`{one}` matches it but only rewrites: it returns `Rewrite`, so it can never refuse \
             a call)"
        ),
        many => format!(
            " ({} match it but only rewrite: they return `Rewrite`, so none can refuse a call)",
            many.iter()
                .map(|h| format!("`{h}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
