//! [`Provider`]: the APIs a dispatcher's tools can be handed to, each in its own file: the tool
//! definitions it is shown (one transform of the canonical schema per target) and the
//! conversions of tool calls (in) and tool results (out) between its wire format and toolgate's
//! [`ToolUse`] and [`ToolResult`] (the Anthropic Messages API shape).
//!
//! | [`Provider`] | file | entry | calls in | results out |
//! |---|---|---|---|---|
//! | `Anthropic`, `AnthropicStrict` | [`anthropic`] | `{name, description, input_schema}`, `strict: true` for the strict one | (toolgate's own shape) | (toolgate's own shape) |
//! | `OpenAi` | [`openai`] | `{type: "function", function: {name, description, parameters, strict}}` | [`openai::tool_use`], [`openai::tool_uses`] | [`openai::tool_message`] |
//! | `OpenAiResponses` | [`openai_responses`] | `{type: "function", name, description, parameters, strict}` | [`openai_responses::tool_use`], [`openai_responses::tool_uses`] | [`openai_responses::function_call_output`] |
//! | `Gemini` | [`gemini`] | `{name, description, parameters}` (OpenAPI 3.0 subset) | [`gemini::tool_use`] | [`gemini::function_response`] |
//! | `Mcp` | [`mcp`] | `{name, description, inputSchema}` | [`mcp::tool_use`] | [`mcp::call_tool_result`] |
//!
//! The calls-in and results-out functions of OpenAI and Gemini (and the sessions' whole-turn
//! entry points that use them) are behind the `openai` and `gemini` features; the definitions
//! of every target, MCP's conversions and the strict checks at `build()` are in every build.
//!
//! Each file's docs name the API documents it follows and the rules it enforces.
//!
//! # Tool definitions
//!
//! [`definition`] turns a tool's name, description and canonical schema
//! ([`canonicalize`]) into one entry of a target's tool list; a
//! dispatcher renders each target's list once
//! ([`Dispatcher::tool_definitions_for`](crate::Dispatcher::tool_definitions_for)).
//!
//! What a transform does with what a target cannot take: a constraint a target does not support
//! but that only narrows values (`minimum`, `maxLength`, an unsupported string `format`,
//! `default` for OpenAI strict, …) is removed and written at the end of the description as
//! `{minimum: 0, maxLength: 40}`, as Anthropic's SDKs do ("Structured outputs", "How SDK
//! transformation works"): the model still reads it, and the dispatcher validates every input
//! against the Rust type anyway. A construct a target cannot express (a map, a recursive type, a
//! tuple, `not`, …) is not dropped: a strict target emits the tool non-strict and says why
//! ([`Definition::non_strict`], [`NonStrictTool`]); Gemini refuses the tool ([`definition`]
//! returns the reason, [`SchemaError`] lists every such tool).
//!
//! # Strict limits
//!
//! Strict decoding has limits beyond the schema subset, each written, with its source, in its
//! provider's file:
//!
//! - Anthropic ([`anthropic`], "Structured outputs", "Schema complexity limits"): a request's
//!   strict tools together hold at most
//!   [`ANTHROPIC_MAX_STRICT_TOOLS`](anthropic::ANTHROPIC_MAX_STRICT_TOOLS) (20) tools,
//!   [`ANTHROPIC_MAX_OPTIONAL_PARAMETERS`](anthropic::ANTHROPIC_MAX_OPTIONAL_PARAMETERS) (24)
//!   optional parameters and
//!   [`ANTHROPIC_MAX_UNION_PARAMETERS`](anthropic::ANTHROPIC_MAX_UNION_PARAMETERS) (16)
//!   union-typed parameters.
//! - OpenAI ([`openai`], "Structured Outputs", "Supported schemas"): one schema holds at most
//!   5 000 object properties, 10 levels of nesting, 1 000 enum values and 120 000 characters of
//!   names and values, and an enum of more than 250 string values at most 15 000 characters.
//!   These concern one tool alone: a tool over one is non-strict whatever the other tools are.
//!
//! A dispatcher's definitions for a strict target always keep within these limits. For a limit
//! on a request's strict tools together, it admits the tools one at a time, in this order, and
//! emits each tool that would cross a limit non-strict, with the reason ([`NonStrictTool`],
//! listed by [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools)):
//!
//! 1. the tools marked `strict = true` ([`ToolDef::strict`](crate::dispatch::ToolDef::strict)), by
//!    name: always admitted (`build()` fails when together they are over a limit, so they never
//!    are);
//! 2. then every other tool the target can take strict, by name (the dispatcher's tool order,
//!    byte order of the names): admitted when the totals stay within every limit, else emitted
//!    non-strict. A tool that does not fit does not stop the later ones: a smaller tool after it
//!    may still fit.
//!
//! Tools marked `strict = false`, and those outside the strict subset, are non-strict before
//! any counting and count toward nothing. The result depends only on the set of tools, not on
//! registration or link order, so every process of a deployment sends the same definitions.
//! The budget covers one dispatcher's tools, the whole request's when they are its only strict
//! schemas: strict schemas a host adds to the same request (another dispatcher's tools, an
//! Anthropic `output_config.format` schema, whose optional parameters count too) are not known
//! to it, and a host that adds some must leave room for them (for instance by marking tools
//! `strict = false`).
//!
//! # Calls and results
//!
//! A call converted from any provider is a [`ToolUse`] like any other: the same
//! pipeline, hooks and outcomes apply (`invalid_input` for arguments that are not a JSON object,
//! `unknown_tool`, `blocked`, …). The conversions check only what they need to answer the call
//! (an id, a name); the arguments are left to the pipeline, so a model's malformed arguments
//! become an `invalid_input` result the model can read, never a host error ([`ConvertError`] is
//! for the host's side only).
//!
//! Results: a text result is the same text everywhere. A result of content blocks (a tool's
//! [`Content`](crate::content::Content)) goes as far as each API lets it:
//!
//! | target | text | image | PDF document | plain-text document | other blocks |
//! |---|---|---|---|---|---|
//! | Anthropic | `text` block | `image` block | `document` block | `document` block | as they are |
//! | OpenAI Chat Completions ([`openai::tool_message`]) | text | a note | a note | its text | a note |
//! | OpenAI Responses ([`openai_responses::function_call_output`]) | `input_text` | `input_image` | `input_file` | `input_text` | a note |
//! | Gemini ([`gemini::function_response`]) | text | a note | a note | its text | a note |
//! | MCP ([`mcp::call_tool_result`]) | `text` | `image` (or `resource_link` for a URL) | `resource` (or `resource_link`) | `resource` | a note |
//!
//! A note is a line of text naming what was left out, so the model knows it is missing:
//! `[toolgate: an image (image/png) was left out: this API's tool results take text only]`.
//! Where the text is one string, the blocks' texts and notes are joined with `\n`. Chat
//! Completions' `role: "tool"` message takes a string or text parts only; Gemini's
//! `functionResponse.response` is a JSON object (Gemini 3 models also accept images and PDFs
//! in `functionResponse.parts`, earlier ones do not, so toolgate sends the note; a host that
//! targets Gemini 3 only can add the parts from the result's blocks).
//!
//! # Adding a provider
//!
//! One new file and one enum arm; nothing else in the crate changes:
//!
//! 1. `provider/<name>.rs`: a module doc naming the API documents, the rules and the limits
//!    with their sources; a `pub(super) const TARGET: Target` (its name, whether it is strict,
//!    its `definition` function: a `ToolSource` (name, description, canonical schema, strict
//!    mode, input examples) → [`Definition`], or why the target cannot express the tool; its
//!    limits on a request's strict tools together, if any; whether an entry takes
//!    `cache_control`); then the public call and result conversions, returning
//!    [`ConvertError`]. It builds on the shared modules only: `crate::schema` (the canonical
//!    form, [`anthropic_input_schema`], the subschema
//!    walker and the nullable split in `schema::walk`) and `provider::subset` (paths in
//!    reasons, moving narrowing keywords into the description, the keywords no subset can
//!    express), `provider::request_limits` (a budget across a request's strict tools); never
//!    another provider's file (the one exception: `openai_responses` builds on `openai`'s
//!    strict transform, both being OpenAI's with one schema subset).
//! 2. Here: `pub mod <name>;`, the variant (documented with its entry's shape), its arm in
//!    `Provider::target` (the compiler asks for it), and its place in [`Provider::ALL`] (the
//!    test `all_lists_every_variant_in_declaration_order` asks for that, once its own `match`
//!    gives the variant a position).
//!
//! Names, parsing, strictness, [`definition`], the dispatcher's per-target cache (indexed by
//! [`Provider::ALL`]) and its [`SchemaError`] then follow. Tests: the golden-file tests in
//! `tests/providers.rs` run for every provider in [`Provider::ALL`], so they fail until
//! `tests/golden/<name>/` holds the hand-written entries; the rule validator
//! (`tests/provider_rules/`) gets the new API's rules, written from its documents, and
//! `target_of` in `tests/providers.rs` maps the provider to them.

#[cfg(any(feature = "openai", feature = "gemini"))]
use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::content::de::kind_of;
#[cfg(any(feature = "openai", feature = "gemini"))]
use crate::content::message::{ToolResult, ToolResultContent, ToolUse};
#[cfg(any(feature = "openai", feature = "gemini"))]
use crate::content::output::Media;
#[cfg(any(feature = "openai", feature = "gemini"))]
use crate::texts;

pub mod anthropic;
pub mod gemini;
pub mod mcp;
pub mod openai;
pub mod openai_responses;
mod options;
mod request_limits;
mod subset;

pub use crate::schema::{anthropic_input_schema, canonicalize, without_null_branches};
pub(crate) use options::apply as apply_options;
pub use options::{CacheControl, CacheTtl, DefinitionOptions};
use request_limits::{Budget, RequestLimits};

/// A target API for tool definitions
/// ([`Dispatcher::tool_definitions_for`](crate::Dispatcher::tool_definitions_for)) and
/// tool-call conversions (this module).
///
/// Names (for [`FromStr`], [`Provider::name`] and `Display`): `anthropic`, `anthropic-strict`,
/// `openai`, `openai-responses`, `gemini`, `mcp`.
///
/// ```
/// use toolgate_core::provider::Provider;
///
/// let p: Provider = "openai-responses".parse().unwrap();
/// assert_eq!(p, Provider::OpenAiResponses);
/// assert_eq!(p.to_string(), "openai-responses");
/// assert!("claude".parse::<Provider>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum Provider {
    /// Anthropic Messages API `tools` entries, `{name, description, input_schema}` (the
    /// default; the same as [`Dispatcher::tool_definitions`](crate::Dispatcher::tool_definitions)).
    #[default]
    Anthropic,
    /// Anthropic with `strict: true` (docs: "Strict tool use"): the schema narrowed to the strict
    /// subset; a tool outside it is emitted without `strict`.
    AnthropicStrict,
    /// OpenAI Chat Completions `tools` entries, `{type: "function", function: {name,
    /// description, parameters, strict}}` (docs: "Function calling").
    OpenAi,
    /// OpenAI Responses API `tools` entries, `{type: "function", name, description,
    /// parameters, strict}`.
    OpenAiResponses,
    /// Gemini `functionDeclarations` entries, `{name, description, parameters}` with
    /// `parameters` in Gemini's OpenAPI 3.0 subset (docs: "Function calling",
    /// `FunctionDeclaration`).
    Gemini,
    /// MCP `tools/list` entries, `{name, description, inputSchema}` (spec: "Tools").
    Mcp,
}

impl Provider {
    /// Every provider, in declaration order.
    pub const ALL: [Provider; 6] = [
        Provider::Anthropic,
        Provider::AnthropicStrict,
        Provider::OpenAi,
        Provider::OpenAiResponses,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The provider's name: `anthropic`, `anthropic-strict`, `openai`, `openai-responses`,
    /// `gemini` or `mcp`.
    pub const fn name(self) -> &'static str {
        self.target().name
    }

    /// Whether definitions for this provider are strict where the schema allows it
    /// (`anthropic-strict`, `openai`, `openai-responses`), so that
    /// [`Dispatcher::non_strict_tools`](crate::Dispatcher::non_strict_tools) may list tools.
    pub const fn is_strict(self) -> bool {
        self.target().strict
    }

    /// The provider's file: its name, strictness, definitions and limits. The one `match` over
    /// the variants (see "Adding a provider" in the module docs).
    const fn target(self) -> Target {
        match self {
            Provider::Anthropic => anthropic::TARGET,
            Provider::AnthropicStrict => anthropic::STRICT_TARGET,
            Provider::OpenAi => openai::TARGET,
            Provider::OpenAiResponses => openai_responses::TARGET,
            Provider::Gemini => gemini::TARGET,
            Provider::Mcp => mcp::TARGET,
        }
    }

    /// The position in [`Provider::ALL`] (which lists the variants in declaration order, and
    /// the variants have default discriminants).
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

/// What a provider file tells the rest of the crate: one `const` per [`Provider`] variant,
/// returned by `Provider::target`.
#[derive(Clone, Copy)]
struct Target {
    /// [`Provider::name`]: what `FromStr` parses and `Display` writes.
    name: &'static str,
    /// [`Provider::is_strict`].
    strict: bool,
    /// One tool's entry (see [`ToolSource`]; the description already unwrapped), or why the
    /// target cannot express the tool. See [`definition`]. `may_be_strict`: for a strict
    /// target, whether the tool may be emitted strict (`false`: it is marked `strict = false`
    /// or is past a request limit, and gets the target's non-strict entry); ignored by the
    /// others.
    definition: fn(&ToolSource<'_>, bool) -> Result<Definition, String>,
    /// For a strict target whose limits hold across a request's strict tools together: the
    /// limits and how one tool's strict entry counts toward them (see "Strict limits" in the
    /// module docs). `None`: no such limit (a limit on one schema alone is part of the strict
    /// transform).
    request_limits: Option<RequestLimits>,
    /// Whether an entry takes a `cache_control` field ([`DefinitionOptions::cache_control`]).
    cache_control: bool,
}

/// One tool as the targets' transforms see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolSource<'a> {
    /// The tool's name.
    pub(crate) name: &'a str,
    /// The description, unwrapped (`schema::unwrap_doc`).
    pub(crate) description: &'a str,
    /// The canonical schema ([`canonicalize`]).
    pub(crate) canonical: &'a Value,
    /// `Some(true)`: marked `strict = true`
    /// ([`ToolDef::strict`](crate::dispatch::ToolDef::strict)); `Some(false)`: marked `strict =
    /// false`; `None`: strict where the target is and can be.
    pub(crate) strict: Option<bool>,
    /// The tool's `input_examples`
    /// ([`ToolDef::input_examples`](crate::dispatch::ToolDef::input_examples)), for the targets
    /// whose entry has such a field (Anthropic).
    pub(crate) input_examples: &'a [Value],
    /// MCP's `outputSchema` of the tool ([`mcp::output_schema`]), for MCP's entry.
    pub(crate) output_schema: Option<&'a Value>,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A provider name [`Provider::from_str`] does not know. `Display`: ``unknown provider
/// `claude`: expected one of anthropic, anthropic-strict, openai, openai-responses, gemini,
/// mcp`` (the names of [`Provider::ALL`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProvider(
    /// The name as given.
    pub String,
);

impl fmt::Display for UnknownProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown provider `{}`: expected one of ", self.0)?;
        for (i, p) in Provider::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(p.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownProvider {}

impl FromStr for Provider {
    type Err = UnknownProvider;

    /// Parses a provider name (see [`Provider::name`]), ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownProvider(s.to_owned()))
    }
}

pub use crate::error::ConvertError;

fn string_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    what: &'static str,
) -> Result<&'a str, ConvertError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ConvertError::new(
            what,
            format!("`{key}` must be a string, found {}", kind_of(other)),
        )),
        None => Err(ConvertError::new(what, format!("`{key}` is missing"))),
    }
}

fn object<'a>(v: &'a Value, what: &'static str) -> Result<&'a Map<String, Value>, ConvertError> {
    v.as_object().ok_or_else(|| {
        ConvertError::new(
            what,
            format!("expected a JSON object, found {}", kind_of(v)),
        )
    })
}

#[cfg(any(feature = "openai", feature = "gemini"))]
/// One whole turn of another API, read for a session's entry point
/// ([`Session::respond_openai_choice`](crate::Session::respond_openai_choice), …): its calls,
/// its model response's id, why it stopped, and whether it was cut at its output limit.
pub(crate) struct Turn<'a> {
    /// The model response's id, which a resend of it carries too: a chat completion's `id`, a
    /// Response's `id`, `gemini-{turn}` for a Gemini candidate; `None` when there is none (a
    /// Chat Completions choice passed without its completion).
    pub(crate) id: Option<Cow<'a, str>>,
    /// The calls, in order.
    pub(crate) uses: Vec<ToolUse>,
    /// The call items as the API sent them, in the same order (Gemini's answer echoes them).
    #[cfg_attr(not(feature = "gemini"), allow(dead_code))]
    pub(crate) items: Vec<&'a Value>,
    /// The API's stop reason, as given.
    pub(crate) stop_reason: Option<String>,
    /// What says the turn was cut at its output limit (`finish_reason: "length"`, …).
    pub(crate) truncated: Option<String>,
}

#[cfg(any(feature = "openai", feature = "gemini"))]
/// The one element of `obj[key]` when the value is a whole API response (`choices`,
/// `candidates`), or the value itself.
fn the_one<'a>(v: &'a Value, key: &str, what: &'static str) -> Result<&'a Value, ConvertError> {
    match v.get(key) {
        None => Ok(v),
        Some(Value::Array(items)) if items.len() == 1 => Ok(&items[0]),
        Some(Value::Array(items)) => Err(ConvertError::new(
            what,
            format!(
                "`{key}` has {} entries; pass the one to answer, not the whole response",
                items.len()
            ),
        )),
        Some(other) => Err(ConvertError::new(
            what,
            format!("`{key}` must be an array, found {}", kind_of(other)),
        )),
    }
}

#[cfg(any(feature = "openai", feature = "gemini"))]
/// A string field that may be absent or `null`.
fn optional_string(
    obj: &Map<String, Value>,
    key: &str,
    what: &'static str,
) -> Result<Option<String>, ConvertError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ConvertError::new(
            what,
            format!("`{key}` must be a string, found {}", kind_of(other)),
        )),
    }
}

#[cfg(any(feature = "openai", feature = "gemini"))]
/// The text of a result for an API with no error flag: a failure that does not already say so
/// (`Error:`, `BLOCKED:`, `Not run:`) gets `Error: ` in front.
/// The text of a result for an API whose tool results are text: a string as is; blocks' texts
/// (a plain-text document's too) joined with `\n`, with a note in the place of each block the
/// text cannot carry (an image, a PDF, …; see the module docs).
fn readable_text(result: &ToolResult) -> Cow<'_, str> {
    let blocks = match &result.content {
        None => return Cow::Borrowed(""),
        Some(ToolResultContent::Text(text)) => return Cow::Borrowed(text),
        Some(ToolResultContent::Blocks(blocks)) => blocks,
    };
    let lines: Vec<Cow<'_, str>> = blocks
        .iter()
        .map(|b| match Media::of(b) {
            Media::Text(text) | Media::TextDocument(text, _) => Cow::Borrowed(text),
            media => Cow::Owned(texts::left_out(
                &media.described().unwrap_or_default(),
                texts::TEXT_ONLY,
            )),
        })
        .collect();
    Cow::Owned(lines.join("\n"))
}

#[cfg(feature = "openai")]
/// The text of a result for an API with no error flag ([`readable_text`]): a failure that does
/// not already say so (`Error:`, `BLOCKED:`, `Not run:`) gets `Error: ` in front.
fn text_saying_failure(result: &ToolResult) -> String {
    let text = readable_text(result);
    if result.is_error
        && !["Error:", "BLOCKED:", "Not run:"]
            .iter()
            .any(|p| text.starts_with(p))
    {
        format!("Error: {text}")
    } else {
        text.into_owned()
    }
}

// ---- tool definitions ----

/// One tool's entry in a target's tool list.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Definition {
    /// The entry, in the target's wire format (see the module docs).
    pub value: Value,
    /// For a strict target (`AnthropicStrict`, `OpenAi`, `OpenAiResponses`): why the tool had to
    /// be emitted non-strict (``property `labels` is a map …``); `None` when it is strict, and
    /// always `None` for the other targets.
    pub non_strict: Option<String>,
}

impl Definition {
    /// An entry with nothing to report (`non_strict: None`).
    fn plain(value: Value) -> Self {
        Definition {
            value,
            non_strict: None,
        }
    }
}

/// The entry of one tool for `provider`, from the tool's `name`, `description` (already
/// unwrapped) and canonical schema: the transform of the provider's file (see the module docs'
/// table for each entry's shape).
///
/// One tool alone: a limit on a request's strict tools together (Anthropic's, "Strict limits"
/// in the module docs) is the dispatcher's to apply, so a strict entry from here may still be
/// one a dispatcher sends non-strict.
///
/// # Errors
/// For [`Provider::Gemini`] only: the reason the tool cannot be expressed in Gemini's
/// `parameters` (a recursive type, a map, a tuple, `not`/`if`, a non-string `enum`, a name that
/// does not start with a letter or `_`). Every other target can express every canonical schema
/// (a strict one falls back to non-strict).
pub fn definition(
    provider: Provider,
    name: &str,
    description: &str,
    canonical: &Value,
) -> Result<Definition, String> {
    let tool = ToolSource {
        name,
        description,
        canonical,
        strict: None,
        input_examples: &[],
        output_schema: None,
    };
    (provider.target().definition)(&tool, true)
}

/// A tool a strict target had to emit non-strict, and why (for a host to log at start-up).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NonStrictTool {
    /// The tool's name.
    pub tool: String,
    /// Why its schema is outside the strict subset (``property `labels` is a map …``).
    pub reason: String,
}

impl fmt::Display for NonStrictTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.tool, self.reason)
    }
}

/// One tool a target cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaProblem {
    /// The tool's name.
    pub tool: String,
    /// Why (``property `tree.children[]` is a recursive type …``).
    pub reason: String,
}

/// The tools a target cannot express, all of them (today only Gemini refuses tools: a
/// recursive type, a map, a tuple, …). Other targets of the same dispatcher are unaffected.
///
/// `Display` (one line per tool):
///
/// ```text
/// gemini cannot express 1 tool; filter it out for this target (DispatcherBuilder::without_tools) or change its input type:
/// - `walk_tree`: property `tree.children[]` is a recursive type (`$ref`), which Gemini's `parameters` (an OpenAPI 3.0 subset without `$ref`) cannot express
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaError {
    /// The target.
    pub provider: Provider,
    /// One entry per tool, in the dispatcher's tool order (by name).
    pub problems: Vec<SchemaProblem>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(
            f,
            "{} cannot express {n} tool{}; filter {} out for this target \
             (DispatcherBuilder::without_tools) or change {} input type:",
            self.provider,
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            if n == 1 { "its" } else { "their" },
        )?;
        for p in &self.problems {
            write!(f, "\n- `{}`: {}", p.tool, p.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for SchemaError {}

/// The definitions of a dispatcher's tools for one target, built once (lazily) per dispatcher.
#[derive(Debug)]
pub(crate) struct Rendered {
    pub(crate) definitions: Vec<Value>,
    pub(crate) non_strict: Vec<NonStrictTool>,
}

/// Why a tool marked `strict = false` is non-strict (its [`NonStrictTool::reason`]).
const MARKED_NON_STRICT: &str = "the tool is marked `strict = false`";

/// Renders every tool for `provider`, in the order given (the dispatcher's: by name),
/// collecting every tool the target cannot express. For a strict target: each tool marked
/// `strict = false` or outside the strict subset is non-strict with its reason; then, when the
/// target limits a request's strict tools together, the strict candidates are admitted in the
/// documented order (those marked `strict = true` first, then the others, each group in the
/// given order), and each that would cross a limit is emitted non-strict with the reason.
pub(crate) fn render<'a>(
    provider: Provider,
    tools: impl Iterator<Item = ToolSource<'a>>,
) -> Result<Rendered, SchemaError> {
    let target = provider.target();
    let tools: Vec<ToolSource<'a>> = tools.collect();
    let mut values = Vec::with_capacity(tools.len());
    let mut reasons: Vec<Option<String>> = Vec::with_capacity(tools.len());
    let mut strict_ones = Vec::new();
    let mut problems = Vec::new();
    // Each tool on its own.
    for (i, tool) in tools.iter().enumerate() {
        let may_be_strict = tool.strict != Some(false);
        match (target.definition)(tool, may_be_strict) {
            Ok(d) => {
                let reason = match d.non_strict {
                    Some(reason) => Some(reason),
                    None if target.strict && !may_be_strict => Some(MARKED_NON_STRICT.to_owned()),
                    None => None,
                };
                if target.strict && reason.is_none() {
                    strict_ones.push(i);
                }
                values.push(d.value);
                reasons.push(reason);
            }
            Err(reason) => {
                problems.push(SchemaProblem {
                    tool: tool.name.to_owned(),
                    reason,
                });
                values.push(Value::Null);
                reasons.push(None);
            }
        }
    }
    if !problems.is_empty() {
        return Err(SchemaError { provider, problems });
    }
    // The request's limits, for the tools that are strict so far.
    if let Some(limits) = target.request_limits {
        for (i, reason) in past_limits(limits, &tools, &values, strict_ones) {
            if let Ok(d) = (target.definition)(&tools[i], false) {
                values[i] = d.value;
            }
            reasons[i] = Some(reason);
        }
    }
    let non_strict = tools
        .iter()
        .zip(&mut reasons)
        .filter_map(|(tool, reason)| {
            reason.take().map(|reason| NonStrictTool {
                tool: tool.name.to_owned(),
                reason,
            })
        })
        .collect();
    Ok(Rendered {
        definitions: values,
        non_strict,
    })
}

/// The strict candidates (indices into `tools`, whose strict entries are in `values`) that
/// would cross one of `limits`, with the reason: the candidates are admitted in the documented
/// order, the marked tools first, then the others, each group in the given order.
fn past_limits(
    limits: RequestLimits,
    tools: &[ToolSource<'_>],
    values: &[Value],
    mut candidates: Vec<usize>,
) -> Vec<(usize, String)> {
    // Stable: each group keeps the given order.
    crate::base::sort::sort_by(&mut candidates, |&a, &b| {
        (tools[a].strict != Some(true)).cmp(&(tools[b].strict != Some(true)))
    });
    let mut budget = Budget::new(limits);
    let mut past = Vec::new();
    for i in candidates {
        let load = (limits.load)(&values[i]);
        if tools[i].strict == Some(true) {
            budget.force(load);
        } else if let Err(reason) = budget.admit(load) {
            past.push((i, reason));
        }
    }
    past
}

/// Why the tools marked `strict = true` (`tools`, each with `strict: Some(true)`) cannot all be
/// strict for a strict `provider` (checked by `build()`): each tool whose schema the target
/// cannot take strict, as its position in `tools` and the reason; then, when the target limits a
/// request's strict tools together and the tools are over a limit, why (``together they hold 30
/// optional parameters (Anthropic strict tool use allows 24 in one request)``).
pub(crate) fn marked_strict_problems<'a>(
    provider: Provider,
    tools: impl Iterator<Item = ToolSource<'a>>,
) -> (Vec<(usize, String)>, Option<String>) {
    let target = provider.target();
    let mut not_strict = Vec::new();
    let mut budget = target.request_limits.map(Budget::new);
    for (i, tool) in tools.enumerate() {
        match (target.definition)(&tool, true) {
            Ok(Definition {
                non_strict: Some(reason),
                ..
            })
            | Err(reason) => not_strict.push((i, reason)),
            Ok(Definition { value, .. }) => {
                if let (Some(budget), Some(limits)) = (&mut budget, target.request_limits) {
                    budget.force((limits.load)(&value));
                }
            }
        }
    }
    (not_strict, budget.and_then(|b| b.over()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn index_is_the_position_in_all() {
        for (i, p) in Provider::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i, "{p}");
        }
    }

    /// A new variant stops this `match` from compiling until it has a position here, and the
    /// test fails until [`Provider::ALL`] lists it there (the dispatcher's per-target cache is
    /// indexed by `ALL`).
    #[test]
    fn all_lists_every_variant_in_declaration_order() {
        let position = |p: Provider| match p {
            Provider::Anthropic => 0,
            Provider::AnthropicStrict => 1,
            Provider::OpenAi => 2,
            Provider::OpenAiResponses => 3,
            Provider::Gemini => 4,
            Provider::Mcp => 5,
        };
        let listed: Vec<usize> = Provider::ALL.into_iter().map(position).collect();
        assert_eq!(listed, [0, 1, 2, 3, 4, 5]);
    }

    fn root(props: Value) -> Value {
        json!({"type": "object", "properties": props, "additionalProperties": false})
    }

    #[test]
    fn a_tool_without_parameters() {
        let empty = root(json!({}));
        let gemini = definition(Provider::Gemini, "ping", "Answers pong.", &empty);
        assert_eq!(
            gemini.map(|d| d.value),
            Ok(json!({"name": "ping", "description": "Answers pong."}))
        );
        let openai = definition(Provider::OpenAiResponses, "ping", "Answers pong.", &empty);
        assert_eq!(
            openai.map(|d| d.value),
            Ok(
                json!({"type": "function", "name": "ping", "description": "Answers pong.",
                      "parameters": {"type": "object", "properties": {}, "required": [],
                                     "additionalProperties": false},
                      "strict": true})
            )
        );
    }

    #[test]
    fn one_of_becomes_any_of_and_const_a_gemini_enum() {
        let schema = root(json!({"shape": {"oneOf": [
            {"type": "object", "properties": {"kind": {"type": "string", "const": "circle"},
                                              "r": {"type": "number"}},
             "required": ["kind", "r"], "additionalProperties": false},
            {"type": "object", "properties": {"kind": {"type": "string", "const": "square"},
                                              "side": {"type": "number"}},
             "required": ["kind", "side"], "additionalProperties": false}
        ]}}));
        let strict = openai::strict(&schema).expect("a oneOf of closed objects is strict");
        assert_eq!(strict["properties"]["shape"]["oneOf"], Value::Null);
        assert_eq!(
            strict["properties"]["shape"]["anyOf"][1]["properties"]["kind"],
            json!({"type": "string", "const": "square"})
        );
        let gemini = gemini::parameters(&schema)
            .expect("Gemini expresses a oneOf of objects")
            .expect("the tool has parameters");
        assert_eq!(
            gemini["properties"]["shape"]["anyOf"][0],
            json!({"type": "object",
                   "properties": {"kind": {"type": "string", "format": "enum",
                                           "enum": ["circle"]},
                                  "r": {"type": "number"}},
                   "required": ["kind", "r"]})
        );
    }

    #[test]
    fn what_each_target_cannot_express() {
        let tuple = root(json!({"pair": {"type": "array", "prefixItems": [
            {"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2}}));
        let all_of = root(json!({"x": {"allOf": [{"type": "string"}, {"minLength": 1}]}}));
        let numbers = root(json!({"level": {"type": "integer", "enum": [1, 2, 3]}}));
        assert_eq!(
            openai::strict(&tuple),
            Err("property `pair` uses a tuple (`prefixItems`)".to_owned())
        );
        assert_eq!(
            openai::strict(&all_of),
            Err("property `x` uses `allOf`".to_owned())
        );
        assert_eq!(
            gemini::parameters(&numbers),
            Err(
                "property `level` has non-string `enum` values; Gemini allows `enum` only on \
                 strings"
                    .to_owned()
            )
        );
        assert_eq!(
            definition(Provider::Gemini, "3d_print", "Prints.", &numbers).map(|d| d.value),
            Err(
                "the name `3d_print` does not start with a letter or `_`, which Vertex AI \
                 requires of a function name"
                    .to_owned()
            )
        );
        // Anthropic strict accepts `allOf` (narrowing each branch) but not the tuple; the
        // integer enum is fine for OpenAI strict.
        assert_eq!(
            anthropic::strict(&all_of),
            Ok(root(json!({"x": {"allOf": [
                {"type": "string"}, {"description": "{minLength: 1}"}]}})))
        );
        assert_eq!(
            anthropic::strict(&tuple),
            Err("property `pair` uses a tuple (`prefixItems`)".to_owned())
        );
        assert_eq!(
            openai::strict(&numbers),
            Ok(json!({"type": "object",
                      "properties": {"level": {"type": "integer", "enum": [1, 2, 3]}},
                      "additionalProperties": false, "required": ["level"]}))
        );
    }
}
