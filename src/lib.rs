//! toolgate enforces an LLM agent's rules in code.
//!
//! A prompt that says "only premium users may open refund cases" is advice the model follows
//! almost always; a `#[pre_hook]` that denies the call is a rule that holds every time. Tools are
//! plain functions marked [`#[tool]`](macro@tool): the macro derives the tool's JSON Schema from
//! the signature and doc comments and registers it. Rules are functions marked
//! [`#[pre_hook(order = N)]`](macro@pre_hook) (authorize, deny, rewrite, before the tool runs),
//! [`#[post_hook]`](macro@post_hook) (observe: audit, metrics) and
//! [`#[stop_hook]`](macro@stop_hook) (once per session). The [`Dispatcher`] turns every
//! `tool_use` block the model sends into exactly one `tool_result`.
//!
//! ```standalone_crate
//! use serde_json::json;
//! use toolgate::{Decision, Dispatcher, HookContext, ToolUse, pre_hook, tool};
//!
//! /// Opens a refund case for one of the customer's orders.
//! #[tool]
//! fn open_refund_case(
//!     /// The order the refund is for, e.g. o_1001.
//!     order_id: String,
//! ) -> String {
//!     format!("case opened for {order_id}")
//! }
//!
//! /// Refund cases are for premium customers; the tier comes from the host, never the model.
//! #[pre_hook(order = 10, tools = [open_refund_case])]
//! fn premium_only(ctx: &HookContext) -> Decision {
//!     match ctx.tier() {
//!         Some("premium") => Decision::Allow,
//!         _ => Decision::deny_instead(
//!             "refund cases are for premium customers.",
//!             "Point the customer to the refund FAQ instead.",
//!         ),
//!     }
//! }
//!
//! fn main() -> Result<(), toolgate::BuildError> {
//!     let dispatcher = Dispatcher::builder().registered_under(module_path!()).build()?;
//!     let free = HookContext::builder("u_004", "sess_1").tier("free").build();
//!     let session = dispatcher.session(free);
//!     let call = ToolUse::new("toolu_01", "open_refund_case", json!({"order_id": "o_2001"}));
//!     let result = toolgate::block_on(session.call(&call)).expect("no hook failed");
//!     assert!(result.is_error);
//!     assert_eq!(
//!         result.content_text(),
//!         "BLOCKED: refund cases are for premium customers. Point the customer to the refund FAQ \
//!          instead."
//!     );
//!     Ok(())
//! }
//! ```
//!
//! # Guides
//!
//! The repository's `docs/` folder has one page per subject, each opening with when you need it:
//!
//! - [Writing tools][guide-tools]: return types, errors the model reads, content blocks, effects.
//! - [The PreToolUse chain][guide-pre-tool-use-chain]: decisions, rewrites, ordering, typed hooks.
//! - [Outcomes][guide-outcomes]: every way a call ends, and what the model reads for each.
//! - [A person's approval][guide-approval]: `ask`, an inline approver, a paused turn resumed later.
//! - [Bounds, deadlines and cancellation][guide-deadlines]: limits, deadlines, dropped calls.
//! - [Conversations][guide-conversations]: whole messages, reads run together, tokens.
//! - [Ids, retries and the answer memory][guide-retries]: why a retried call never runs twice.
//! - [Nested dispatchers][guide-nested-dispatchers]: your hooks in front of any `ToolCaller`.
//! - [Other providers][guide-providers]: OpenAI, Gemini, definitions, strict mode.
//! - [tower][guide-tower]: the hooks as a `Layer`, a session as a `Service<ToolUse>`.
//! - [MCP][guide-mcp]: serve a dispatcher over stdio or HTTP, guard a remote server.
//! - [Claude Code hooks][guide-claude-code]: the same rules as a Claude Code command hook.
//! - [The audit trail][guide-audit-trail]: the log, sinks, redaction, hash chain, what-if.
//! - [OpenTelemetry spans][guide-opentelemetry]: one GenAI span per call, one child per hook run.
//! - [The support agent][guide-support-agent]: the example's options, live mode, its files.
//! - [Testing your rules][guide-testing-your-rules]: recorded turns replayed in a `#[test]`.
//! - [Tests and reliability checks][guide-testing]: the test binaries, property tests, fuzzing.
//!
//! [guide-tools]: https://github.com/toolgate/toolgate/blob/main/docs/tools.md
//! [guide-pre-tool-use-chain]: https://github.com/toolgate/toolgate/blob/main/docs/pre-tool-use-chain.md
//! [guide-outcomes]: https://github.com/toolgate/toolgate/blob/main/docs/outcomes.md
//! [guide-approval]: https://github.com/toolgate/toolgate/blob/main/docs/approval.md
//! [guide-deadlines]: https://github.com/toolgate/toolgate/blob/main/docs/deadlines.md
//! [guide-conversations]: https://github.com/toolgate/toolgate/blob/main/docs/conversations.md
//! [guide-retries]: https://github.com/toolgate/toolgate/blob/main/docs/retries.md
//! [guide-nested-dispatchers]: https://github.com/toolgate/toolgate/blob/main/docs/nested-dispatchers.md
//! [guide-providers]: https://github.com/toolgate/toolgate/blob/main/docs/providers.md
//! [guide-tower]: https://github.com/toolgate/toolgate/blob/main/docs/tower.md
//! [guide-mcp]: https://github.com/toolgate/toolgate/blob/main/docs/mcp.md
//! [guide-claude-code]: https://github.com/toolgate/toolgate/blob/main/docs/claude-code.md
//! [guide-audit-trail]: https://github.com/toolgate/toolgate/blob/main/docs/audit-trail.md
//! [guide-opentelemetry]: https://github.com/toolgate/toolgate/blob/main/docs/opentelemetry.md
//! [guide-support-agent]: https://github.com/toolgate/toolgate/blob/main/docs/support-agent.md
//! [guide-testing-your-rules]: https://github.com/toolgate/toolgate/blob/main/docs/testing-your-rules.md
//! [guide-testing]: https://github.com/toolgate/toolgate/blob/main/docs/testing.md
//!
//! # The life of one tool call
//!
//! 1. **Normalize**: `input` of `""` or `null` means `{}`; a string holding a JSON object is
//!    parsed once; anything else that is not an object is `invalid_input`. Inputs larger or
//!    deeper than the [`Limits`](crate::dispatch::Limits) are `invalid_input` too.
//! 2. **Look up** the name among the dispatcher's tools (a filtered-out tool is unknown).
//! 3. **Validate** by deserializing into the tool's argument type; unknown fields are
//!    `invalid_input` (the schema says `additionalProperties: false`) unless the tool opts out.
//!    A refused input is walked against the schema once, so the message lists every problem
//!    found, each with its path and what was expected, in the input's order: up to five, then
//!    `- and N more problems` (one problem keeps the one-line form `Error: invalid input for
//!    tool `t` at `path`: …`). Model input quoted back (a field name, a path, a value, a tool
//!    name) is cut to 64 characters with `…`.
//! 4. **PreToolUse chain**: the matching hooks in `(order, path)` order. [`Decision::Allow`] goes
//!    on; [`Decision::Deny`] stops with `BLOCKED: <reason>`; [`Decision::Rewrite`] to a new input
//!    is validated again and the chain **runs again from its first hook without the rewriter**:
//!    the hooks before it decide again, the hooks after it see the new input, the rewriter is not
//!    asked about its own. So the input the tool runs with was allowed or produced by every hook
//!    of the chain, and a rewrite that changes the input every time (a prefix, a tag) applies
//!    once. A `Rewrite` equal to the input counts as `Allow`; a rewrite back to an input the call
//!    already had (the detail names the hooks of the loop), or more than 8 rewrites, halts as
//!    `hook_failed`. An error, a panic or a
//!    deadline halts the agent with [`Halt`] (fail closed: the tool does not run).
//!    [`Decision::Ask`] goes on too (a later deny wins); when the pass ends with asks, a person
//!    approves: the builder's [`Approver`](crate::approval::Approver) inline (a deadline; no answer
//!    is a denial), or, with none, `respond` pauses the turn ([`Reply::Pending`], a
//!    [`PendingTurn`](crate::approval::PendingTurn) finished later by [`Session::resume`]) and
//!    `call` blocks it (see the [approval guide][guide-approval]).
//! 5. **Tool**: its value becomes the text (a JSON string is the text itself), a
//!    [`Content`](crate::content::Content) its content blocks (images, documents; see
//!    [`#[tool]`](#tool)); its error is an `is_error` result: the tool's message when it was
//!    written for the model, else the generic
//!    [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE) with the error in the
//!    audit line's `detail` (see [What the model reads when a tool
//!    fails](#what-the-model-reads-when-a-tool-fails)); a panic is caught.
//! 6. **PostToolUse observers** see a read-only [`CallRecord`](crate::audit::CallRecord), whatever
//!    the outcome; the [`AuditLog`](crate::audit::AuditLog) runs last.
//! 7. **Stop**: [`Session::end`] (or dropping the session) runs the Stop hooks once.
//!
//! | outcome | tool ran | `is_error` | content starts with |
//! |---|---|---|---|
//! | `ok` | yes | false | the tool's output |
//! | `tool_error` | yes | true | the tool's message for the model, or the generic [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE) |
//! | `panicked` | yes | true | a generic failure message |
//! | `tool_timeout` | yes, cut | true | a message naming the deadline |
//! | `blocked` | no | true | `BLOCKED: ` |
//! | `invalid_input` | no | true | a message naming the field path and what was expected |
//! | `unknown_tool` | no | true | a message naming the tool and the available tools |
//! | `hook_failed`, `hook_timeout` | no | true, in the `Halt`'s answer | `BLOCKED: ` |
//! | `not_run` | no (a refused answer: yes) | true, where an answer is given | a message saying why (`Not run: …`) |
//! | `cancelled` | maybe | no answer (the host dropped the call) | – |
//! | `awaiting_approval` | not yet | no answer yet: the turn paused for a person ([`Reply::Pending`]); not final, its final record comes at [`Session::resume`] | – |
//!
//! Failing closed needs `panic = "unwind"` (the default profile setting): panics in hooks and
//! tools are caught and become results or halts; with `panic = "abort"` they end the process.
//!
//! # `#[tool]`
//!
//! On a free function, sync or `async`, that returns `T` or `Result<T, E>` with
//! `T: Serialize`. What the model reads, by the type of `T`:
//!
//! | `T` | the `tool_result`'s `content` |
//! |---|---|
//! | `String`, `&'static str`, any value that serializes to a JSON string | the text itself: `"15 degrees"` |
//! | `()` | the empty text `""` |
//! | [`Content`](crate::content::Content) | its blocks: `[{"type": "text", …}, {"type": "image", …}, {"type": "document", …}]`; no blocks: no `content` |
//! | anything else `Serialize` (a struct, a map, a number, `serde_json::Value`) | its compact JSON text: `{"id":"o_1","amount_cents":2599}` |
//!
//! When `T` also implements `JsonSchema` and its schema is an object (a struct, a map), the
//! tool's MCP `tools/list` entry carries it as `outputSchema` and its MCP results carry
//! `structuredContent` (the JSON parsed back at the MCP boundary only; see
//! [`provider::mcp`]); every other `T` gets no `outputSchema` (MCP requires an object root).
//! Nothing to write for it: the type decides, at compile time.
//!
//! A tool that returns an image and a caption:
//!
//! ```standalone_crate
//! use serde_json::json;
//! use toolgate::content::{Content, Image};
//! use toolgate::{Dispatcher, HookContext, ToolError, ToolUse, tool};
//!
//! /// A 1×1 PNG, base64 (a real tool renders one, or reads it from storage).
//! const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
//!
//! /// Renders a chart of one metric by month, as a PNG with a caption.
//! #[tool]
//! fn render_chart(
//!     /// The metric: `revenue` or `orders`.
//!     metric: String,
//! ) -> Result<Content, ToolError> {
//!     if metric != "revenue" && metric != "orders" {
//!         return Err(ToolError::new("Charts exist for `revenue` and `orders` only."));
//!     }
//!     Ok(Content::new()
//!         .text(format!("{metric} by month, 2026"))
//!         .image(Image::png(PNG)))
//! }
//!
//! fn main() -> Result<(), toolgate::BuildError> {
//!     let dispatcher = Dispatcher::builder().registered_under(module_path!()).build()?;
//!     let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
//!     let call = ToolUse::new("toolu_1", "render_chart", json!({"metric": "revenue"}));
//!     let result = toolgate::block_on(session.call(&call)).expect("no hook failed");
//!     assert_eq!(
//!         serde_json::to_value(&result).unwrap(),
//!         json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": [
//!             {"type": "text", "text": "revenue by month, 2026"},
//!             {"type": "image", "source": {"type": "base64", "media_type": "image/png",
//!                                          "data": PNG}}
//!         ]})
//!     );
//!     Ok(())
//! }
//! ```
//!
//! A block's base64 must be plain standard base64 and a URL `https://…`: a bad block makes the call
//! an internal `tool_error` (the reason goes to the audit line's `detail`), so it never makes the
//! API refuse the whole request. Images count against the result limit
//! ([`Limits`](crate::dispatch::Limits), 256 KiB by default) as their base64: one that does not fit
//! is left out whole with a note, never cut, so raise the limit for tools that return images.
//! OpenAI Chat Completions and Gemini take text only: an image or a PDF reaches them as a note
//! naming what was left out (see [`provider`]).
//!
//! The error `E` becomes an `is_error` result by the rule of the next section: a
//! [`ToolError`], a `String` or a `&str` is shown as written; any other error type is internal
//! unless the tool says `errors = "shown"`. Whether the return type is a `Result` is decided by
//! the type, not its spelling: `io::Result<T>` and an alias `type Outcome = Result<…>` are
//! results, and a struct named `SearchResult` is a plain output.
//!
//! - **Description**: the function's doc comment (wrapped lines are joined), or
//!   `#[tool(description = "…")]`. A tool without one does not compile.
//! - **Name**: the function's name with `r#` removed (`fn r#type` is the tool `type`), or
//!   `#[tool(name = "…")]`; checked at compile time against `^[a-zA-Z0-9_-]{1,64}$`.
//! - **Input, flat form**: every parameter that is not injected is a field of a generated
//!   argument struct, named like the parameter; a `///` comment on the parameter is the
//!   property's description; `#[serde(…)]` and `#[schemars(…)]` on a parameter are moved onto
//!   the field (`#[schemars(schema_with = "…")]` gives a `serde_json::Value` its schema; that
//!   schema is checked against the JSON Schema meta-schema at `build()`). An `Option<T>`
//!   parameter is optional (absent from `required`; omitted or `null` both accepted, and the
//!   schema says so: `{"anyOf": [T, {"type": "null"}]}`, written as `T` alone only for a strict
//!   target); every other parameter is required. Parameters must be owned (`String`, not
//!   `&str`).
//! - **Input, struct form**: mark one parameter `#[input]`; its type derives `Deserialize` and
//!   `JsonSchema` and is the whole input (field doc comments are the descriptions). Other
//!   parameters may then only be injected ones. `#[serde(flatten)]` works for a struct, a map,
//!   an enum tagged any way or untagged, and an `Option` of one: the schema lists every field
//!   the variants have (so no input the type accepts is refused as having an unknown field) and
//!   keeps the variants as an `anyOf` that says which fields go together (Anthropic gets no
//!   top-level `anyOf`; strict targets emit such a tool non-strict and say why). The rule,
//!   checked over a corpus of input types with a real JSON Schema validator: every serialized
//!   value of the input type passes the dispatcher and every non-strict target's schema, and
//!   every value a strict definition admits deserializes.
//! - **Injected parameters** are told apart by type, never by name: `&HookContext` (the session's
//!   trusted context) and `State<T>` (state given to
//!   [`DispatcherBuilder::state`](crate::dispatch::DispatcherBuilder::state)). They are not in the
//!   schema. A type that reads like one but is not toolgate's does not compile.
//! - `#[tool(allow_unknown_fields)]` drops `additionalProperties: false` and accepts (and
//!   ignores) unknown input fields.
//! - `#[tool(strict = true)]` / `#[tool(strict = false)]`: the tool's mode in the strict targets
//!   (`anthropic-strict`, `openai`, `openai-responses`), which otherwise make a tool strict where
//!   its schema fits and the providers' limits allow ([`provider`] module docs, "Strict limits").
//!   `false` keeps it out of strict mode ([`Dispatcher::non_strict_tools`] lists it); `true` keeps
//!   it strict and admits it first, never demoted: a flat parameter that is a map or a tuple is a
//!   compile error, and [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build)
//!   fails when a strict target cannot take its schema strict or the `strict = true` tools are over
//!   a limit together
//!   ([`BuildProblem::CannotBeStrict`](crate::dispatch::BuildProblem::CannotBeStrict),
//!   [`BuildProblem::StrictLimit`](crate::dispatch::BuildProblem::StrictLimit)).
//! - `#[tool(input_examples = path)]` (or `= "path"`): a `fn() -> Vec<serde_json::Value>` giving
//!   Anthropic `input_examples`, sent after the tool's `input_schema` in the Anthropic entries.
//!   [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build) checks each one as a
//!   call's input is checked and fails with
//!   [`BuildProblem::InvalidInputExample`](crate::dispatch::BuildProblem::InvalidInputExample)
//!   naming the tool, the example's index and the problem (the API refuses a request with an
//!   invalid example).
//! - `#[tool(timeout_ms = N)]` (async tools only) sets the tool's deadline instead of the
//!   dispatcher's (60 s by default): past it, `tool_timeout`.
//! - `#[tool(errors = "shown")]`: the tool's error type's `Display` is written for the model,
//!   which reads it (its `source()` chain still goes to `detail`). `"shown"` is the only value.
//! - `#[tool(effect = "read")]` / `#[tool(effect = "write")]`: what the tool does to the world
//!   ([`Effect`](crate::dispatch::Effect); MCP's `readOnlyHint`), with MCP's optional hints on it:
//!   `destructive`, `idempotent` (write only) and `open_world`, each a flag or `= true | false`
//!   (`destructiveHint`, `idempotentHint`, `openWorldHint`; one left out is left out of the
//!   annotations, so a client reads MCP's cautious default). **A `write` tool must be guarded**:
//!   [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build) fails with
//!   [`BuildProblem::UnguardedWrite`](crate::dispatch::BuildProblem::UnguardedWrite) naming it when
//!   no PreToolUse hook of the dispatcher matches it, unless it says why it needs none with
//!   `unguarded = "…reason…"`, which is appended to the function's rustdoc (with the effect) and
//!   answered by [`Dispatcher::unguarded_reason`].
//!   [`DispatcherBuilder::undeclared_effects_are_writes`](crate::dispatch::DispatcherBuilder::undeclared_effects_are_writes)
//!   counts every tool without an `effect` as `write`. The effect is exposed by
//!   [`Dispatcher::tool_effect`].
//! - `#[tool(input = Name)]` (flat form only): the generated argument struct is emitted beside
//!   the function as `struct Name` (the function's visibility, on the struct and its fields;
//!   the parameters' `///` comments as field docs), deriving `Deserialize`, `Serialize` and
//!   `JsonSchema`, so a typed PreToolUse hook can take `&Name` and rewrite with a `Name` (every
//!   parameter's type must then be `Serialize` too). You choose the name, so it cannot collide
//!   with an item you did not write (rustc reports a clash with your own items as for any
//!   two definitions); without `input = …` the struct stays hidden. A tool with an `#[input]`
//!   struct needs no name: a typed hook takes that struct.
//! - `#[tool(external)]`: a tool that runs in the host, not here (Claude Code's `Bash`, `Edit`,
//!   `Write`, `Read`, an MCP server's `mcp__<server>__<tool>`; usually with `name = "Bash"`). The
//!   signature declares its input, so hooks name it in `tools = [...]` and see its input validated
//!   as for any tool; its schema is open (unknown fields are accepted, so a field the host adds
//!   does not refuse every call); the body is never called, and a dispatcher asked to run it
//!   answers `tool_error` with [`EXTERNAL_TOOL_MESSAGE`](crate::content::EXTERNAL_TOOL_MESSAGE)
//!   ([`ToolDef::external`](crate::dispatch::ToolDef::external) by hand). See `claude_code`
//!   (feature `claude-code`).
//! - `#[tool(crate = path)]` for crates that re-export toolgate under another path.
//!
//! The function stays callable as written; the registered tool calls it directly by path, so
//! there is no mutable slot a wrapper could rebind. Beside it, `#[tool]` emits one hidden
//! constant, `__toolgate_tool_<fn name>`, with the function's visibility, and a private guard
//! that makes two tools of one name in one module a compile error. Hook matchers find a tool
//! through that constant, in the module their path names: name the function by a path
//! (`tools::lookup_user`), or glob-import its module, or import the constant along with the
//! function (`use tools::{lookup_user, __toolgate_tool_lookup_user};`); a tool defined inside a
//! function body cannot be named by a hook. Everything else it generates lives in
//! `const _: () = { … };`.
//!
//! # What the model reads when a tool fails
//!
//! **Only text written for the model is shown to it.** A driver or HTTP error forwarded with `?`
//! routinely holds a DSN with its password, a signed URL or a key, so every error is internal
//! unless it was written for the model or opted in:
//!
//! | the tool's error | the model reads | the audit line's `detail` |
//! |---|---|---|
//! | [`ToolError::new`]`(text)`, a `String`, a `&str` | the text | – |
//! | any `std::error::Error` (with `?` into `ToolError`, or as the tool's `E`), `Box<dyn Error>`, [`ToolError::internal`] | [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE) | its `Display` and `source()` chain, joined with `": "` |
//! | a `Display`-only type such as `anyhow::Error` as the tool's `E` | [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE) | its alternate form `{:#}` (anyhow's whole chain) |
//! | [`ToolError::for_model`]`(e)`, or any error of a `#[tool(errors = "shown")]` tool | `e`'s `Display` | its `source()` chain |
//!
//! Rust's coherence rules forbid a per-type `From<MyError> for ToolError` beside the blanket
//! `From<E: Error>`, so the opt-in is on the value (`.map_err(ToolError::for_model)?`) or on the
//! tool (`errors = "shown"`). `errors = "shown"` does not reach inside a `ToolError`: a tool
//! returning `Result<T, ToolError>` chooses per value.
//!
//! ```standalone_crate
//! use serde_json::json;
//! use toolgate::content::INTERNAL_ERROR_MESSAGE;
//! use toolgate::{Dispatcher, HookContext, ToolError, ToolUse, tool};
//!
//! /// The database driver's error: its text names the DSN, password included.
//! #[derive(Debug)]
//! struct DriverError;
//! impl std::fmt::Display for DriverError {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         f.write_str("postgres://billing:s3cr3t@db-7/ledger: connection refused")
//!     }
//! }
//! impl std::error::Error for DriverError {}
//!
//! fn balance_of(_account: &str) -> Result<u64, DriverError> {
//!     Err(DriverError)
//! }
//!
//! /// Why a transfer was refused; its `Display` is written for the model.
//! #[derive(Debug)]
//! struct Refused(u64);
//! impl std::fmt::Display for Refused {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         write!(f, "Transfer refused: at most {} cents can be moved today.", self.0)
//!     }
//! }
//! impl std::error::Error for Refused {}
//!
//! /// Gets an account's balance, in cents.
//! #[tool]
//! fn get_balance(
//!     /// The account, e.g. `acc_1`.
//!     account: String,
//! ) -> Result<u64, ToolError> {
//!     let cents = balance_of(&account)?; // internal: the model never reads the DSN
//!     Ok(cents)
//! }
//!
//! /// Moves money between the customer's accounts.
//! #[tool(errors = "shown")]
//! fn transfer(
//!     /// The amount, in cents.
//!     cents: u64,
//! ) -> Result<String, Refused> {
//!     if cents > 5000 { Err(Refused(5000)) } else { Ok("moved".into()) }
//! }
//!
//! fn main() -> Result<(), toolgate::BuildError> {
//!     let dispatcher = Dispatcher::builder().registered_under(module_path!()).build()?;
//!     let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
//!     let call = ToolUse::new("toolu_1", "get_balance", json!({"account": "acc_1"}));
//!     let result = toolgate::block_on(session.call(&call)).expect("no hook failed");
//!     assert_eq!(
//!         serde_json::to_value(&result).unwrap(),
//!         json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
//!                "content": INTERNAL_ERROR_MESSAGE})
//!     );
//!     let call = ToolUse::new("toolu_2", "transfer", json!({"cents": 9000}));
//!     let result = toolgate::block_on(session.call(&call)).expect("no hook failed");
//!     assert_eq!(
//!         result.content_text(),
//!         "Transfer refused: at most 5000 cents can be moved today."
//!     );
//!     Ok(())
//! }
//! ```
//!
//! # Hooks
//!
//! - `#[pre_hook(order = N)]`, `#[pre_hook(order = N, tools = [a, b::c])]`: parameters are
//!   `&HookContext`, `&ToolUse` and `State<T>` (any subset, any order); returns [`Decision`] or
//!   `Result<Decision, E: Display>` (an `Err` halts the agent), or, for a hook that only
//!   rewrites and never refuses, [`Rewrite`] (`Keep`, `To(input)`; such a hook guards no write
//!   tool at `build()`); sync or async (`timeout_ms = N`
//!   sets an async hook's deadline instead of the dispatcher's, 10 s by default; **a sync hook
//!   cannot be cut short**, so a hook that waits on the network should be async). `order` is
//!   required; equal orders run by the function's full path. `tools` names `#[tool]`
//!   functions by Rust path, so a misspelling does not compile, nor does an empty list (a hook
//!   that guards nothing); without it the hook matches every tool.
//! - **Typed PreToolUse hooks**: a `#[pre_hook]` may take `&T`, a tool's input type (the struct the
//!   tool deserializes into: an `#[input]` struct, or a flat tool's generated one named with
//!   `#[tool(input = Name)]`), instead of or beside `&ToolUse`. It reads the validated arguments
//!   themselves (no second deserialization; after a rewrite they are validated again, so `&T`
//!   always matches the input the tool would run with) and returns `Decision<T>` (or
//!   `Result<Decision<T>, E>`): a rewrite is a `T`, serialized back to the input (so `T:
//!   Serialize`), then authorized again like any rewrite; a rewrite of another type does not
//!   compile. The tools it applies to follow from `T`: every tool of the builder that takes `T`,
//!   narrowed by `tools = [...]` when given.
//!   [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build) fails with
//!   [`BuildProblem::NoToolTakesHookInput`](crate::dispatch::BuildProblem::NoToolTakesHookInput)
//!   when no tool takes `T`, and with
//!   [`BuildProblem::HookInputMismatch`](crate::dispatch::BuildProblem::HookInputMismatch) when
//!   `tools` names a tool whose input is another type. A rule that reads the same fields of several
//!   tools with different inputs stays a `&ToolUse` hook. By hand:
//!   [`PreHookDef::typed`](crate::dispatch::PreHookDef::typed),
//!   [`PreHookDef::typed_async`](crate::dispatch::PreHookDef::typed_async).
//! - `#[post_hook]`, `#[post_hook(tools = [a])]`: `&HookContext`, `&CallRecord`, `State<T>`;
//!   returns `()` or `Result<(), E: Display>`; sync or async. It observes and cannot change the
//!   result.
//! - `#[stop_hook]`: `&HookContext`, `&SessionSummary`, `State<T>`; returns `()` or
//!   `Result<(), E: Display>`; synchronous only (it runs from `drop`).
//!
//! The most common mistake, a PreToolUse hook without `order`, does not compile:
//!
//! ```compile_fail
//! use toolgate::{Decision, ToolUse, pre_hook};
//!
//! #[pre_hook]
//! fn allow_everything(_call: &ToolUse) -> Decision {
//!     Decision::Allow
//! }
//! ```
//!
//! ```text
//! error: `#[pre_hook]` needs an `order`: write `#[pre_hook(order = 10)]` (lower runs first;
//!        equal orders run by the function's path); put cheap, decisive checks first
//! ```
//!
//! # A person's approval: `ask`
//!
//! A PreToolUse hook returns [`Decision::ask`]`(reason)` when a person must approve the call;
//! the chain goes on (a later deny wins). Two host modes:
//!
//! - **Inline**: [`DispatcherBuilder::approver`](crate::dispatch::DispatcherBuilder::approver)
//!   gives an [`Approver`](crate::approval::Approver) that answers while the call waits
//!   ([`Approval::approve`](crate::approval::Approval::approve),
//!   [`Approval::deny`](crate::approval::Approval::deny),
//!   [`Approval::edit`](crate::approval::Approval::edit)), within
//!   [`DispatcherBuilder::approval_timeout`](crate::dispatch::DispatcherBuilder::approval_timeout)
//!   (5 minutes by default; no answer is a denial).
//! - **Durable pause**: without one, [`Session::respond`] answers the other blocks and returns
//!   [`Reply::Pending`] with the [`PendingTurn`](crate::approval::PendingTurn). A session opened
//!   on a store ([`Dispatcher::session_on`] with `SqliteStore` or `PostgresStore`,
//!   [`Session::with_pending_store`]) has already kept it there; a person decides on the calls
//!   [`PendingStore::waiting`](crate::store::PendingStore::waiting) lists, approving each as shown
//!   ([`DecisionsBuilder::approve`](crate::approval::DecisionsBuilder::approve) binds the
//!   approval to its input digest), and [`Session::resume_from`] (in any process, same session
//!   and user, same [`Dispatcher::fingerprint`]) finishes it once with the person's
//!   [`Decisions`](crate::approval::Decisions), one per waiting call (an id decided twice is
//!   refused). Without a store the host keeps the turn's JSON and [`Session::resume`] finishes
//!   it, once-only within one process's answer memory. Every API's whole turns pause the same
//!   way: an OpenAI or Gemini turn resumes into that API's answer items.
//!
//! [`Session::call`] cannot pause: without an approver such a call is `blocked` (fail closed).
//!
//! ```
//! use serde_json::json;
//! use toolgate::approval::{Approval, ApprovalRequest, Approver, Decisions, PendingTurn};
//! use toolgate::dispatch::{BoxFuture, PreHookDef, ToolDef};
//! use toolgate::{Decision, Dispatcher, HookContext, Reply, ToolUse};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Refund {
//!     /// Cents.
//!     amount_cents: u64,
//! }
//!
//! struct Lead;
//! impl Approver for Lead {
//!     fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
//!         let small = request.input["amount_cents"].as_u64() < Some(50_000);
//!         Box::pin(async move {
//!             if small { Approval::approve("lead") } else { Approval::deny("lead", "too large.") }
//!         })
//!     }
//! }
//!
//! let builder = || {
//!     Dispatcher::builder()
//!         .tool(ToolDef::sync("refund", "Refunds.", |_env, r: Refund| {
//!             Ok(format!("refunded {}", r.amount_cents))
//!         }))
//!         .pre_hook(PreHookDef::sync("app::large", 10, |_env, call: &ToolUse| {
//!             Ok(match call.input["amount_cents"].as_u64() {
//!                 Some(n) if n > 20_000 => Decision::ask("above 20000 cents"),
//!                 _ => Decision::Allow,
//!             })
//!         }))
//! };
//! let ctx = || HookContext::builder("u_1", "sess_1").build();
//! let turn = serde_json::from_value(json!({"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_1", "name": "refund", "input": {"amount_cents": 25000}}
//! ]}))?;
//!
//! // Inline.
//! let inline = builder().approver(Lead).build()?;
//! let reply = toolgate::block_on(inline.session(ctx()).respond(&turn))?;
//! assert_eq!(reply.answer().unwrap().tool_results().next().unwrap().content_text(),
//!     "refunded 25000");
//!
//! // Paused, stored, resumed by a fresh dispatcher.
//! let stored = match toolgate::block_on(builder().build()?.session(ctx()).respond(&turn))? {
//!     Reply::Pending(p) => serde_json::to_string(&p)?,
//!     other => panic!("{other:?}"),
//! };
//! let pending: PendingTurn = serde_json::from_str(&stored)?;
//! let decisions = Decisions::builder().deny("toolu_1", "lead", "not today.").build()?;
//! let resumed = toolgate::block_on(builder().build()?.session(ctx()).resume(&pending, &decisions))?;
//! let answer = resumed.into_message().expect("a Messages API turn");
//! assert_eq!(answer.tool_results().next().unwrap().content_text(),
//!     "BLOCKED: a person declined this call: not today.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Other providers
//!
//! One canonical schema per tool, one transform per target: [`Dispatcher::tool_definitions_for`]
//! gives the `tools` entries for each [`Provider`](crate::provider::Provider) (Anthropic, Anthropic
//! strict, OpenAI Chat Completions and Responses, Gemini `functionDeclarations`, MCP `tools/list`),
//! and [`provider`] converts each API's tool calls into [`ToolUse`] blocks and [`ToolResult`]s back
//! into its result format, so the same hooks and outcomes apply whatever the model's API (a whole
//! turn is best answered through the session's entry points, which also read its finish reason: see
//! the next section). A strict target emits a tool it cannot express strictly as non-strict and
//! [`Dispatcher::non_strict_tools`] says which and why; Gemini refuses what its schema subset
//! cannot express, naming the tools.
//!
//! ```standalone_crate
//! use serde_json::json;
//! use toolgate::provider::Provider;
//! use toolgate::{Dispatcher, HookContext, provider, tool};
//!
//! /// Gets the current weather in a city.
//! #[tool]
//! fn get_weather(
//!     /// The city, e.g. Bogotá.
//!     city: String,
//! ) -> String {
//!     format!("{city}: 21°C")
//! }
//!
//! let dispatcher = Dispatcher::builder().registered_under(module_path!()).build()?;
//! let tools = dispatcher.tool_definitions_for(Provider::OpenAi)?;
//! assert_eq!(tools[0]["function"]["strict"], true);
//!
//! // An OpenAI `tool_calls` entry: the arguments are a JSON string (feature `openai`).
//! # #[cfg(feature = "openai")] {
//! let tool_call = json!({"id": "call_1", "type": "function",
//!     "function": {"name": "get_weather", "arguments": "{\"city\": \"Bogotá\"}"}});
//! let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
//! let call = provider::openai::tool_use(&tool_call)?;
//! let result = toolgate::block_on(session.call(&call)).expect("no hook failed");
//! assert_eq!(
//!     provider::openai::tool_message(&result),
//!     json!({"role": "tool", "tool_call_id": "call_1", "content": "Bogotá: 21°C"})
//! );
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Wrapped callers and schemas toolgate did not derive
//!
//! A wrapped [`ToolCaller`](crate::dispatch::ToolCaller) (an MCP client, a remote server, another
//! dispatcher) brings its own `input_schema`, sent as given. At `build()` it is checked against the
//! meta-schema of the draft it names in `$schema` (2020-12 when none; 2019-09, 07, 06 and 04 too),
//! as is every `#[schemars(schema_with = …)]` part of a `#[tool]`'s schema: a keyword of the wrong
//! kind (`{"type": "strin"}`), a `$ref` that points to nothing or outside the schema, an unknown
//! `$schema` is a [`BuildProblem::InvalidSchema`](crate::dispatch::BuildProblem::InvalidSchema)
//! naming the tool and the keyword, and the schema is never sent. The caller's inputs are then
//! validated against its schema by the same walk that explains invalid inputs, every validation
//! keyword included (`minLength`, `maxLength`, `multipleOf`, `uniqueItems`, `exclusiveMinimum`,
//! `dependentRequired`, `not`, `if`/`then`/`else`, …) but regular expressions (`pattern`,
//! `patternProperties`) and `format`. The `full-validation` feature (off by default: its regex and
//! URL dependencies about double the runtime's clean build) adds `boon`, a complete JSON Schema
//! validator: the meta-schema check then also compiles every regular expression, and a caller's
//! inputs are also checked against `pattern`, `patternProperties`, `format` (as the draft asserts
//! it) and `unevaluated*`.
//!
//! For MCP, [`Dispatcher::output_schema`] gives a tool's `outputSchema` (also in its
//! `tools/list` entry) and [`provider::mcp::call_tool_result`] turns a result into a
//! `CallToolResult` with `structuredContent`:
//!
//! ```standalone_crate
//! use schemars::JsonSchema;
//! use serde::Serialize;
//! use serde_json::json;
//! use toolgate::provider::{Provider, mcp};
//! use toolgate::{Dispatcher, HookContext, ToolUse, tool};
//!
//! /// Current weather data.
//! #[derive(Serialize, JsonSchema)]
//! struct WeatherData {
//!     /// Temperature in celsius.
//!     temperature: f64,
//!     /// Conditions, e.g. "Partly cloudy".
//!     conditions: String,
//! }
//!
//! /// Gets current weather data for a location.
//! #[tool]
//! fn get_weather_data(
//!     /// City name or zip code.
//!     location: String,
//! ) -> WeatherData {
//!     let _ = location;
//!     WeatherData { temperature: 22.5, conditions: "Partly cloudy".into() }
//! }
//!
//! let dispatcher = Dispatcher::builder().registered_under(module_path!()).build()?;
//! let entry = &dispatcher.tool_definitions_for(Provider::Mcp)?[0];
//! assert_eq!(entry["outputSchema"], json!({"type": "object",
//!     "properties": {"temperature": {"type": "number", "description": "Temperature in celsius."},
//!                    "conditions": {"type": "string",
//!                                   "description": "Conditions, e.g. \"Partly cloudy\"."}},
//!     "required": ["temperature", "conditions"]}));
//!
//! let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
//! let call = ToolUse::new("1", "get_weather_data", json!({"location": "Lisbon"}));
//! let result = toolgate::block_on(session.call(&call)).expect("no hook failed");
//! assert_eq!(
//!     mcp::call_tool_result(&result, dispatcher.output_schema("get_weather_data")),
//!     json!({"content": [{"type": "text",
//!                         "text": "{\"temperature\":22.5,\"conditions\":\"Partly cloudy\"}"}],
//!            "structuredContent": {"temperature": 22.5, "conditions": "Partly cloudy"},
//!            "isError": false})
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Conversations: replies, ids and retries
//!
//! [`Session::respond`] answers a whole assistant message and returns a [`Reply`]:
//! [`Reply::Answer`] with the user message to send next (one `tool_result` per `tool_use`, in
//! order), or [`Reply::NothingToRun`] with the message's `stop_reason` when it has no `tool_use`
//! (`end_turn`, `stop_sequence`, `refusal`, `pause_turn`): the API refuses an empty user message,
//! so none is made. [`Conversation`](crate::content::Conversation) keeps the next request's
//! `messages`; its `push_response` keeps an API response's `role` and `content` only
//! ([`Message::request_turn`]), since the API refuses `id`, `model`, `usage`, … in a request.
//!
//! - **Ids** ([`IdRule`](crate::content::IdRule)): `respond` runs a message only when every
//!   `tool_use` id matches the Messages API's `^[a-zA-Z0-9_-]+$` and is unique in it; otherwise
//!   nothing runs, every block is audited as `not_run`, and [`RespondError::Id`] names the id and
//!   the rule. [`Session::call`] serves every API (MCP request ids, OpenAI call ids), so it refuses
//!   only an empty id.
//! - **Retries**: a session remembers every id it answered, with a SHA-256 of its input, in an
//!   [`AnswerStore`](crate::store::AnswerStore) (in memory by default, bounded:
//!   [`MemoryAnswerStore`](crate::store::MemoryAnswerStore); a host's database through
//!   [`Dispatcher::session_with_store`]). An id seen again with the same input is answered from
//!   memory without running hooks or the tool (its audit line says `"replay": true`; counts leave
//!   it out); while the first attempt still runs it is refused as in progress
//!   ([`CallError::InProgress`]: wait, then retry); with another input it is refused
//!   ([`CallError::IdReused`]); a call cancelled after its tool started is answered "not run
//!   again". A block that halted or was `not_run` was not answered: a retry runs it.
//! - **Tokens**: [`Session::add_usage`] adds one response's tokens
//!   ([`Usage::of_response`](crate::content::Usage::of_response) reads its `usage`) to
//!   [`SessionSummary::usage`](crate::audit::SessionSummary::usage), which the Stop hooks receive
//!   and the audit log's summary line carries (only when some were added), so a session can be
//!   priced. The support agent's `--live` mode adds every response's.
//! - **Other APIs**: [`Session::respond_openai_choice`], [`Session::respond_openai_response`]
//!   and [`Session::respond_gemini_candidate`] take the whole choice, response or candidate, so
//!   a turn cut at its output limit (`finish_reason: "length"`, `status: "incomplete"`,
//!   `MAX_TOKENS`) runs nothing, as `max_tokens` does for `respond` (features `openai` and
//!   `gemini`; the definitions for every API need none).
//!
//! # Bounds, deadlines and cancellation
//!
//! - **Bounds** ([`Limits`](crate::dispatch::Limits), set with
//!   [`DispatcherBuilder::limits`](crate::dispatch::DispatcherBuilder::limits)): an input over 1
//!   MiB of compact JSON or nested deeper than 32 levels is `invalid_input` before any hook or tool
//!   sees it (a hook's rewrite is held to the same bounds); a result over 256 KiB is cut with a
//!   marker, and the audit line's `content_bytes` keeps its full size. An image or a document that
//!   does not fit is left out whole, never cut, and the marker names it.
//! - **Deadlines, on by default**: an async PreToolUse hook gets 10 s
//!   ([`DispatcherBuilder::DEFAULT_HOOK_TIMEOUT`](crate::dispatch::DispatcherBuilder::DEFAULT_HOOK_TIMEOUT)),
//!   an async tool or wrapped caller 60 s
//!   ([`DispatcherBuilder::DEFAULT_TOOL_TIMEOUT`](crate::dispatch::DispatcherBuilder::DEFAULT_TOOL_TIMEOUT),
//!   the MCP SDKs' request timeout), unless it sets its own (`timeout_ms = N`) or the builder
//!   another default
//!   ([`DispatcherBuilder::hook_timeout`](crate::dispatch::DispatcherBuilder::hook_timeout),
//!   [`DispatcherBuilder::tool_timeout`](crate::dispatch::DispatcherBuilder::tool_timeout)). A
//!   PreToolUse hook past its deadline halts the agent with `hook_timeout` (never a denial); a tool
//!   past its deadline is `tool_timeout`. No runtime is needed: every dispatcher has a
//!   [`Timer`](crate::dispatch::Timer) (`futures-timer`'s one helper thread);
//!   [`DispatcherBuilder::timer`](crate::dispatch::DispatcherBuilder::timer) puts the sleeps on
//!   another (the `tokio` feature, off by default, adds `TokioTimer`). Turning a default off takes
//!   [`DispatcherBuilder::allow_hanging_hooks`](crate::dispatch::DispatcherBuilder::allow_hanging_hooks)
//!   /
//!   [`DispatcherBuilder::allow_hanging_tools`](crate::dispatch::DispatcherBuilder::allow_hanging_tools).
//!   **Sync code cannot be cut**: a deadline stops async code at an `.await` that yields, and a
//!   sync hook or tool (or async code that blocks its thread) runs to its end. A timer that panics
//!   fails closed.
//! - **Cancellation**: a `call` or `respond` future dropped before it finishes (the host gave
//!   up) leaves one `cancelled` audit line per unanswered `tool_use` (the one in flight and,
//!   for `respond`, those not yet started), seen by the sync observers; the session's Stop hooks
//!   still run once. A future never polled did nothing and records nothing.
//!
//! # Wrapping: nested dispatchers
//!
//! [`DispatcherBuilder::wrap`](crate::dispatch::DispatcherBuilder::wrap) builds a dispatcher around
//! a [`ToolCaller`](crate::dispatch::ToolCaller) it owns (another [`Dispatcher`], a subagent, an
//! MCP client): its tools become the outer dispatcher's, reached only through the outer hooks. A
//! caller answers with a [`CallAnswer`](crate::dispatch::CallAnswer) (the `tool_result`, its
//! outcome, the hook at fault, the operator detail), so the outer audit line keeps the inner truth:
//! a denial inside is `blocked` with the inner hook's path in `blocked_by`, and `invalid_input`,
//! `unknown_tool`, `panicked`, `tool_timeout` carry over with the inner detail; an inner halt halts
//! the outer dispatcher too.
//!
//! # tower
//!
//! With the `tower` feature, `toolgate::tower::HooksLayer` puts a dispatcher's hooks in front of
//! any `Clone` `Service<ToolUse>` that says which tools it serves, and `tower::SessionService`
//! makes a session a `Service<ToolUse>` (response [`CallAnswer`](crate::dispatch::CallAnswer),
//! error [`CallError`], `'static` futures), so tower's timeouts, concurrency limits, retries and
//! rate limits stack inside or outside toolgate's. A tower timeout outside drops the call
//! (`cancelled`); inside, its error is the call's `tool_error`; the table is in the `tower`
//! module's docs.
//!
//! # MCP
//!
//! With the `mcp` feature (rmcp 3.11.0), `toolgate::mcp::McpServer` serves a dispatcher over MCP
//! (`tools/list` with each tool's effect as `annotations`; every `tools/call` through a
//! [`Session`], with the trusted [`HookContext`] built by the host from the request, never from the
//! arguments; every failure an `isError` result with the Messages API text), and
//! `toolgate::mcp::McpGuard` makes a connection to a remote MCP server a
//! [`ToolCaller`](crate::dispatch::ToolCaller), so a dispatcher puts its hooks in front of it.
//! The support agent's `mcp_server` binary (`examples/support-agent/`) serves its tools over stdio;
//! the module docs have the table of results. With `mcp-http`, the same server is rmcp's streamable HTTP service
//! (`McpServer::streamable_http_service`, a tower service for hyper or axum, the identity from what
//! the host's auth layer put in the request's extensions) and a guard reaches a remote server over
//! HTTP(S) (`McpGuard::streamable_http`).
//!
//! # Claude Code hooks
//!
//! With the `claude-code` feature, `toolgate::claude_code::ClaudeCodeHook` is a Claude Code command
//! hook over a dispatcher: one event on standard input, the documented answer on standard output
//! (`permissionDecision: "deny"` for a denial, `"ask"` with `updatedInput` for a rewrite, nothing
//! for an allow), exit 2 with the reason on standard error for a rule that fails or an event that
//! cannot be read. PostToolUse events feed the observers and the audit log; the Stop hooks run on
//! `SessionEnd`. The module docs have the protocol, event by event; `examples/claude_code_hook.rs`
//! a team's rules on Claude Code's tools.
//!
//! # The audit trail
//!
//! [`AuditLog::open`](crate::audit::AuditLog::open) appends one line per `tool_use` to
//! `dir/audit_log.jsonl` and one per session to `dir/session_summaries.jsonl` (members listed on
//! [`AuditRecord`](crate::audit::AuditRecord) and [`SummaryRecord`](crate::audit::SummaryRecord);
//! `tier` comes from the context, absent when it has none).
//! [`AuditLog::builder`](crate::audit::AuditLog::builder) adds
//! [`AuditSink`](crate::audit::AuditSink)s (a database, a log pipeline: each receives the same
//! record) and a [`Redaction`](crate::audit::Redaction) (JSON pointers per tool into `input` and
//! `effective_input`, functions over `content` and `detail` such as
//! [`mask_card_numbers`](crate::audit::mask_card_numbers) and
//! [`mask_emails`](crate::audit::mask_emails)) applied before any sink sees a record. Every line
//! ends with `prev`, the SHA-256 of the line before it in the same file: `verify_audit_dir`
//! (feature `audit-verify`) names the first line edited, deleted, inserted or reordered (the rule,
//! with reopening, rotation and several writer processes, is under "The hash chain" in
//! [`AuditLog`](crate::audit::AuditLog)'s docs).
//!
//! # Registration and linking
//!
//! The macros register with `inventory` (linkme's `#[link_section]` statics are refused under
//! `#![forbid(unsafe_code)]`).
//! [`DispatcherBuilder::registered`](crate::dispatch::DispatcherBuilder::registered) takes every
//! registered item of the linked crates;
//! [`DispatcherBuilder::registered_under`](crate::dispatch::DispatcherBuilder::registered_under)
//! the items under one module path (a specialist);
//! [`DispatcherBuilder::item`](crate::dispatch::DispatcherBuilder::item) one item by full path. A
//! registered hook whose tools are all filtered out of a dispatcher is left out of it; a hook given
//! explicitly ([`DispatcherBuilder::pre_hook`](crate::dispatch::DispatcherBuilder::pre_hook),
//! [`DispatcherBuilder::post_hook`](crate::dispatch::DispatcherBuilder::post_hook)) whose tools are
//! all absent, or any hook with an empty tool list, fails the build: a guard is never dropped
//! silently. Items in a library crate are only linked when the binary uses that crate: if nothing
//! else names it, write `use my_tools as _;`. One test binary shares one registry, so tests build
//! dispatchers from module paths or lists, never from everything. Doctests that register items need
//! a crate of their own (`standalone_crate` in edition 2024).
//!
//! # Cargo features
//!
//! All off by default, so a default build compiles the dispatcher, the hooks, every provider's
//! tool definitions, MCP's conversions, the audit log and `toolgate::testing`, and nothing
//! else. Each item is named by its full path (a test compiles each one with its feature):
//!
//! | feature | what it adds |
//! |---|---|
//! | `tokio` | `toolgate::dispatch::TokioTimer`: deadlines on tokio's time driver (tokio with its `time` feature) |
//! | `full-validation` | JSON Schema validation by `boon`: meta-schemas with regular expressions at `build()`, every keyword of a wrapped caller's schema (no item of its own) |
//! | `tower` | `toolgate::tower::{HooksLayer, SessionService}`: the hooks as a `Layer` in front of any `Service<ToolUse>`, a session as a `Service<ToolUse>` |
//! | `claude-code` | `toolgate::claude_code::ClaudeCodeHook`: the rules as a Claude Code command hook (`examples/claude_code_hook.rs`) |
//! | `audit-verify` | `toolgate::audit::{verify_audit_dir, verify_audit_file}`: the audit files' hash chain checked (the files are chained without it) |
//! | `audit-report` | `toolgate::audit::{Trail, TrailError, parse_call_line, read_call_lines}` and `toolgate::audit::report::Figures`: an audit trail read back and what it adds up to (counts, the people in the loop, latency distributions); the `toolgate` command draws them as its page, tables and lines |
//! | `openai` | OpenAI's calls in and results out: `toolgate::provider::openai::{tool_use, tool_uses, tool_message}`, `toolgate::provider::openai_responses::{tool_use, tool_uses, function_call_output}`, whole turns with `toolgate::Session::{respond_openai_choice, respond_openai_response}` (definitions need no feature) |
//! | `gemini` | Gemini's calls in and results out: `toolgate::provider::gemini::{tool_use, function_response}`, whole turns with `toolgate::Session::respond_gemini_candidate` (definitions need no feature) |
//! | `mcp` | `toolgate::mcp::{McpServer, McpGuard}`: a dispatcher as an MCP server over stdio (rmcp 3.11), a guard in front of a remote MCP server; your crate runs them on a tokio runtime (`tokio` with `rt`) |
//! | `mcp-http` | `mcp` over streamable HTTP: `toolgate::mcp::McpServer::streamable_http_service` (a tower service for hyper or axum), `toolgate::mcp::McpCaller::http_request`, `toolgate::mcp::McpGuard::streamable_http` (reqwest, rustls on ring) |
//! | `seal` | `toolgate::approval::{SealKey, SealKeys}`, `toolgate::dispatch::DispatcherBuilder::seal_keys`: the fields the audit log's redaction hides are sealed (AES-SIV, RustCrypto's `aes-siv`) in a paused turn and given back at resume; without it such a call is blocked, not paused |
//! | `inbox` | `toolgate::approval::inbox::{Inbox, InboxStore, Policy}`: the approval inbox over the paused-turn stores: waiting calls listed and filtered, a person's decision recorded once and atomically under a policy (who may approve, edit or decline; never the requester; two people where a tool needs them), ready turns resumed once across a fleet, every attempt an audit line |
//! | `inbox-http` | `toolgate::inbox_http::{InboxPage, Tokens, ProxyAuth}`: the approval inbox's page (an axum router, or served on its own address): the waiting calls, each turn's inputs and forms, live updates, sign-in by token or trusted proxy, the policy file; `decided_by` is always the signed-in person |
//! | `sqlite` | `toolgate::store::sqlite::SqliteStore`: the answer memory and the paused turns in one SQLite file that sessions and processes share (`toolgate::Dispatcher::session_on`), each committed write surviving a crash (rusqlite, SQLite compiled in) |
//! | `postgres` | `toolgate::store::postgres::{PostgresStore, PostgresAuditSink}`: the answer memory, the paused turns and the audit chain in PostgreSQL, so worker processes sharing a database are one agent (tokio-postgres) |
#![forbid(unsafe_code)]

// The public names, one by one: a glob would also re-export what toolgate-core hides from its
// docs (its `macro_support` module), which generated code reaches through `__private` alone.
#[cfg(feature = "claude-code")]
pub use toolgate_core::claude_code;
#[cfg(feature = "mcp")]
pub use toolgate_core::mcp;
#[cfg(feature = "tower")]
pub use toolgate_core::tower;
pub use toolgate_core::{
    BuildError, CallError, Decision, Dispatcher, Halt, HookContext, Message, Reply, RespondError,
    Rewrite, Session, State, ToolError, ToolResult, ToolUse, approval, audit, block_on, content,
    dispatch, provider, store, testing,
};
/// The approval inbox's page (feature `inbox-http`): the `toolgate-inbox` crate.
#[cfg(feature = "inbox-http")]
pub use toolgate_inbox as inbox_http;
pub use toolgate_macros::{post_hook, pre_hook, stop_hook, tool};

/// Not public API: what the macros' generated code reaches. Free to change in any release.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    // Listed one by one like the root's names, and not inlined: an inlined support trait would
    // show its impls on `Decision`, `HookContext`, `State` and `ToolError` in the public docs.
    #[doc(no_inline)]
    pub use toolgate_core::macro_support::{
        BoxFuture, Boxable, BoxableKind, DisplayKind, Displayed, Env, ErrorOf, HasSchema, Inject,
        IntoDecision, IntoObserved, IntoTypedDecision, Listed, ListedError, ListedKind, MayRefuse,
        NoSchema, NotATool, OkOfPlain, OkOfResult, OutputProbe, RefusalProbe, Registration,
        RegistrationKind, Returned, RewritesOnly, SplitPlain, SplitResult, StateKey, ToolFunction,
        ToolRef, ToolResultContent, TypeProbe, assert_input, output_content, output_text,
        with_output_schema,
    };
    pub use toolgate_core::{
        Decision, ToolError, ToolUse,
        audit::{CallRecord, SessionSummary},
        dispatch::{Effect, HookError, PostHookDef, PreHookDef, StopHookDef, ToolDef},
    };
}

/// The README's examples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guides' examples (`docs/*.md`), one item per page, compiled and run as doctests
/// (`cargo test --doc`). `docs/opentelemetry.md` is the support agent's (its code needs an OTLP
/// exporter, which the support agent's package depends on and this one does not).
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../docs/tools.md")]
    pub struct Tools;

    #[doc = include_str!("../docs/pre-tool-use-chain.md")]
    pub struct PreToolUseChain;

    #[doc = include_str!("../docs/outcomes.md")]
    pub struct Outcomes;

    #[doc = include_str!("../docs/approval.md")]
    pub struct Approval;

    #[doc = include_str!("../docs/deadlines.md")]
    pub struct Deadlines;

    #[doc = include_str!("../docs/conversations.md")]
    pub struct Conversations;

    #[doc = include_str!("../docs/retries.md")]
    pub struct Retries;

    #[cfg(feature = "postgres")]
    #[doc = include_str!("../docs/fleet.md")]
    pub struct Fleet;

    #[cfg(feature = "inbox-http")]
    #[doc = include_str!("../docs/inbox.md")]
    pub struct Inbox;

    #[doc = include_str!("../docs/nested-dispatchers.md")]
    pub struct NestedDispatchers;

    #[doc = include_str!("../docs/providers.md")]
    pub struct Providers;

    #[doc = include_str!("../docs/tower.md")]
    pub struct Tower;

    #[doc = include_str!("../docs/mcp.md")]
    pub struct Mcp;

    #[doc = include_str!("../docs/claude-code.md")]
    pub struct ClaudeCode;

    #[doc = include_str!("../docs/audit-trail.md")]
    pub struct AuditTrail;

    #[doc = include_str!("../docs/support-agent.md")]
    pub struct SupportAgent;

    #[doc = include_str!("../docs/testing.md")]
    pub struct Testing;

    #[doc = include_str!("../docs/testing-your-rules.md")]
    pub struct TestingYourRules;

    #[doc = include_str!("../docs/toolgate-command.md")]
    pub struct ToolgateCommand;
}
