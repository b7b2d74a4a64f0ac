//! Every text toolgate writes for the model, in one place so they are reviewed together.
//!
//! Each is an `is_error` `tool_result` the model reads and acts on, so each says what happened
//! and what to do next, and none carries operator detail (panic text, error chains, hook paths:
//! those go to the audit line's `detail`). Not here, because toolgate does not write them: the
//! tool's own output and `ToolError` messages, a hook's deny reason, and the explanation of an
//! invalid input's field (written by the schema walk in `schema/explain/`, which fills the
//! `{message}` of [`invalid_input`]). The prefixes `Error:`, `BLOCKED:` and `Not run:` are relied
//! on by the providers that mark failures by text (the `provider` module).
//!
//! Model input quoted back (a tool name, an unknown field, a field path, a value) is cut to
//! [`MAX_QUOTED_CHARS`] characters with `…` ([`quoted`]), so one call cannot make an error the
//! model then carries in every later request; a deserializer's own message, which may quote the
//! input, is cut to [`MAX_DESERIALIZER_MESSAGE_CHARS`]. An invalid input lists every problem
//! found, up to [`MAX_LISTED_PROBLEMS`], in the order `schema/explain/mod.rs` documents.

use std::borrow::Cow;
use std::fmt::Display;
use std::time::Duration;

// The tool ran, or was meant to, and failed.

/// The message the model reads when a tool fails with an error not written for it: a library
/// error forwarded with `?`, [`ToolError::internal`](crate::ToolError::internal), any error of
/// a `#[tool]` but `ToolError`, `String` and `&str` unless the tool says `errors = "shown"`.
pub const INTERNAL_ERROR_MESSAGE: &str = "Error: the tool failed with an internal error. The details were logged for the operator; \
     retrying the same call will not help.";

/// A tool (or a wrapped caller) panicked.
pub(crate) const PANIC_MESSAGE: &str = "Error: the tool failed unexpectedly. The details were logged for \
     the operator; retrying the same call will not help.";

/// A tool ran past its deadline and was cut.
pub(crate) fn tool_timeout(deadline: Duration) -> String {
    format!(
        "Error: the tool did not finish within its deadline of {} ms and was stopped. Try again \
         later, or with a smaller request.",
        deadline.as_millis()
    )
}

// The call was refused before the tool ran.

/// A PreToolUse hook denied the call: `BLOCKED: <reason>`, then ` <instead>` when given.
pub(crate) fn blocked(reason: &str, instead: Option<&str>) -> String {
    let mut text = format!("BLOCKED: {reason}");
    if let Some(instead) = instead.filter(|s| !s.is_empty()) {
        text.push(' ');
        text.push_str(instead);
    }
    text
}

/// A PreToolUse hook asked for a person's approval and nobody can give it here: the call is
/// blocked with the hooks' reasons, joined with `; `.
pub(crate) fn needs_approval<'r>(reasons: impl Iterator<Item = &'r str>) -> String {
    let reasons = reasons.collect::<Vec<_>>().join("; ");
    format!(
        "BLOCKED: this call needs a person's approval, and none can be given here ({reasons}). \
         Tell the user it was not done and that a person must approve it."
    )
}

/// A person declined a call that needed approval; `reason` is theirs.
pub(crate) fn declined(reason: &str) -> String {
    format!("BLOCKED: a person declined this call: {reason}")
}

/// The approver gave no answer within its deadline: a denial.
pub(crate) fn approval_timeout(deadline: Duration) -> String {
    format!(
        "BLOCKED: this call needs a person's approval and none came within {} s. Tell the user \
         it was not done; they can ask again later.",
        deadline.as_secs()
    )
}

/// The approver failed (it panicked): a denial.
pub(crate) const APPROVAL_FAILED: &str = "BLOCKED: this call needs a person's approval and the \
     approval could not be asked for. Do not retry it; tell the user this action is unavailable \
     right now.";

/// A pending turn was resumed after its time to live: its calls waited too long for a person.
pub(crate) fn approval_expired(ttl: Duration) -> String {
    format!(
        "BLOCKED: this call waited for a person's approval longer than {} s and expired; it was \
         not done. Ask the user whether to try it again.",
        ttl.as_secs()
    )
}

/// A PreToolUse hook could not decide (it errored, panicked or ran past its deadline): the agent
/// halts, and this is the answer its `Halt` carries.
pub(crate) const HALT_MESSAGE: &str = "BLOCKED: this call was not run because a policy check \
     could not be completed. Do not retry it; tell the user this action is unavailable right now.";

/// The name is not a tool of this dispatcher; `available` is `"a, b, c"` (empty for none).
pub(crate) fn unknown_tool(name: &str, available: &str) -> String {
    let list = if available.is_empty() {
        "none"
    } else {
        available
    };
    format!(
        "Error: unknown tool '{}'. Available tools: {list}.",
        quoted(name)
    )
}

/// One thing wrong with an input: where (`options.filters[2]`; empty at the top level) and what
/// (`expected an integer, found the string "ten"`), both already bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) path: String,
    pub(crate) message: String,
}

impl Problem {
    /// A problem of the whole input (no path).
    pub(crate) fn here(message: String) -> Problem {
        Problem {
            path: String::new(),
            message,
        }
    }
}

/// The most problems an invalid-input message lists; the others are counted (`and 2 more`).
pub(crate) const MAX_LISTED_PROBLEMS: usize = 5;

/// Every problem found with one input: the first [`MAX_LISTED_PROBLEMS`] in order, and how many
/// more (a lower bound when `more_at_least`: the walk stopped collecting).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Problems {
    pub(crate) listed: Vec<Problem>,
    pub(crate) more: usize,
    pub(crate) more_at_least: bool,
}

impl Problems {
    /// A single problem.
    pub(crate) fn one(problem: Problem) -> Problems {
        Problems {
            listed: vec![problem],
            more: 0,
            more_at_least: false,
        }
    }

    /// Whether nothing was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The problems after the first `shown`: `and 2 more problems`, `and at least 995 more
    /// problems`, or nothing.
    pub(crate) fn others(&self, shown: usize) -> String {
        let at_least = if self.more_at_least { "at least " } else { "" };
        match self.listed.len().saturating_sub(shown) + self.more {
            0 => String::new(),
            1 if !self.more_at_least => "and 1 more problem".to_owned(),
            n => format!("and {at_least}{n} more problems"),
        }
    }
}

/// The input does not match the tool's schema. One problem:
///
/// ```text
/// Error: invalid input for tool `refund` at `amount_cents`: expected an integer ≥ 0, found the string "ten". Send an input that matches the tool's input_schema.
/// ```
///
/// Several: how many, one line per problem (its path first, when it has one), a last line
/// counting those past [`MAX_LISTED_PROBLEMS`], then what to do:
///
/// ```text
/// Error: invalid input for tool `refund` (7 problems):
/// - at `amount_cents`: expected an integer ≥ 0, found the string "ten"
/// - unknown field `note`, expected one of `order_id`, `amount_cents`
/// - …three more lines…
/// - and 2 more problems
/// Send an input that matches the tool's input_schema.
/// ```
pub(crate) fn invalid_input(tool: &str, problems: &Problems) -> String {
    let tool = quoted(tool);
    match problems.listed.as_slice() {
        [] => format!(
            "Error: invalid input for tool `{tool}`. Send an input that matches the tool's \
             input_schema."
        ),
        [one] if problems.more == 0 => format!(
            "Error: invalid input for tool `{tool}`{}: {}. Send an input that matches the \
             tool's input_schema.",
            at_path(&one.path),
            one.message
        ),
        listed => {
            let total = listed.len() + problems.more;
            let plus = if problems.more_at_least {
                " or more"
            } else {
                ""
            };
            let mut text =
                format!("Error: invalid input for tool `{tool}` ({total}{plus} problems):");
            for p in listed {
                text.push_str("\n- ");
                if !p.path.is_empty() {
                    text.push_str(&format!("at `{}`: ", quoted(&p.path)));
                }
                text.push_str(&p.message);
            }
            if problems.more > 0 {
                text.push_str("\n- ");
                text.push_str(&problems.others(listed.len()));
            }
            text.push_str("\nSend an input that matches the tool's input_schema.");
            text
        }
    }
}

/// A PreToolUse hook rewrote the input into one that is invalid (the first of its problems,
/// then how many others): not the model's fault, so it is told not to retry.
pub(crate) fn invalid_rewrite(tool: &str, problems: &Problems) -> String {
    let (at, message) = match problems.listed.first() {
        Some(first) => (at_path(&first.path), first.message.as_str()),
        None => (String::new(), "no detail"),
    };
    let mut others = problems.others(1);
    if !others.is_empty() {
        others.insert_str(0, "; ");
    }
    format!(
        "Error: invalid input for tool `{}`: a policy rewrite of this call produced an input \
         that is invalid{at} ({message}{others}). This is a problem on our side; do not retry \
         the same call.",
        quoted(tool)
    )
}

/// A deserializer's own message (a custom `Deserialize`'s, which may quote the input), cut to
/// [`MAX_DESERIALIZER_MESSAGE_CHARS`].
pub(crate) fn deserializer_message(message: &str) -> String {
    cut_chars(message, MAX_DESERIALIZER_MESSAGE_CHARS).into_owned()
}

/// A wrapped caller's input the walk could not check to the end within its step budget.
pub(crate) const TOO_COMPLEX_TO_CHECK: &str = "the input could not be checked against the \
     tool's input_schema within the validator's step budget; send a smaller input";

// Why an input is invalid: the `message` of `invalid_input`.

/// An input that is valid JSON but not an object (`kind`: `array`, `number`, …).
pub(crate) fn not_an_object(kind: &str) -> String {
    format!("the input must be a JSON object, found a JSON {kind}")
}

/// A string input holding JSON that is not an object.
pub(crate) fn string_not_an_object(kind: &str) -> String {
    format!("the input must be a JSON object, but it is a string holding a JSON {kind}")
}

/// A string input that is not JSON at all (`error`: serde_json's message).
pub(crate) fn string_not_json(error: impl Display) -> String {
    format!("the input must be a JSON object, but it is a string that is not valid JSON ({error})")
}

/// An input over `max_input_bytes` (`bytes`: as far as it was measured).
pub(crate) fn too_large(bytes: usize, max_input_bytes: usize) -> String {
    format!(
        "the input is too large: {bytes} bytes or more, over the limit of {max_input_bytes} \
         bytes; send a smaller input"
    )
}

/// An input nested deeper than `max_input_depth`.
pub(crate) fn too_deep(max_input_depth: usize) -> String {
    format!("the input is nested more than {max_input_depth} levels deep; flatten it")
}

/// A field the schema does not allow (`expected`: the fields it does). The field's name is
/// model input: [`quoted`].
pub(crate) fn unknown_field(field: &str, expected: &[&str]) -> String {
    let field = quoted(field);
    if expected.is_empty() {
        format!("unknown field `{field}`; no fields are expected here")
    } else {
        let expected = expected
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        format!("unknown field `{field}`, expected one of {expected}")
    }
}

/// The tool's input type panicked while it read the input.
pub(crate) const INPUT_UNREADABLE: &str =
    "the input could not be read (the tool's input type failed on it)";

// The call was not run at all.

/// A block that is not run, with the reason: `Not run: <why>`.
pub(crate) fn not_run(why: &str) -> String {
    format!("Not run: {why}")
}

/// Why every block of a message that stopped at `max_tokens` is not run.
pub(crate) const NOT_RUN_AT_MAX_TOKENS: &str =
    "the assistant message stopped at max_tokens, so this tool_use may be cut off.";

/// Why every block of a message that stopped at `model_context_window_exceeded` is not run.
pub(crate) const NOT_RUN_AT_CONTEXT_WINDOW: &str = "the assistant message stopped at \
     model_context_window_exceeded, so this tool_use may be cut off.";

/// Why every call of another API's turn cut at its output limit is not run (OpenAI
/// `finish_reason: "length"`, Responses `status: "incomplete"`, Gemini `MAX_TOKENS`).
#[cfg(any(feature = "openai", feature = "gemini"))]
pub(crate) const NOT_RUN_TRUNCATED: &str =
    "the turn was cut at its output limit, so this call may be cut off.";

/// Why a `tool_use` with an empty id is not run.
pub(crate) const NOT_RUN_EMPTY_ID: &str =
    "the tool_use id is empty, so no tool_result could answer it.";

/// The answer to a retry of a call whose first attempt was cancelled while its tool ran.
pub(crate) const NOT_RUN_AGAIN: &str = "Not run: this call was interrupted earlier while the \
     tool ran, so it may or may not have taken effect, and it is not run again. Check whether \
     it took effect before making the call again.";

/// Why the blocks after a halted one are not run.
pub(crate) const NOT_RUN_AFTER_HALT: &str = "an earlier call in this message was stopped because \
     a policy check could not be completed.";

// A result over `max_result_bytes`.

/// The marker that ends a cut result: `[toolgate: result cut at <kept> of <full> bytes]`.
pub(crate) fn result_cut(kept: usize, full: usize) -> String {
    format!("[toolgate: result cut at {kept} of {full} bytes]")
}

/// The marker that ends a block result that also lost whole blocks (`left_out`: `1 image, 1
/// text block`): `[toolgate: result cut at <kept> of <full> bytes; left out: <left_out>]`.
pub(crate) fn blocks_cut(kept: usize, full: usize, left_out: &str) -> String {
    format!("[toolgate: result cut at {kept} of {full} bytes; left out: {left_out}]")
}

/// The marker that ends a block result cut for its number of blocks (`kept` of `full` blocks
/// kept, the marker not counted; `left_out`: `98977 text blocks`): `[toolgate: result cut at
/// <kept> of <full> blocks; left out: <left_out>]`.
pub(crate) fn blocks_over(kept: usize, full: usize, left_out: &str) -> String {
    format!("[toolgate: result cut at {kept} of {full} blocks; left out: {left_out}]")
}

// A result an API cannot carry whole (the `provider` module).

/// A block left out of a result by an API that cannot carry it (`what`: `an image
/// (image/png)`, `a PDF document "Q3 report"`, …; `why`: [`TEXT_ONLY`] or
/// [`NO_SUCH_CONTENT`]): `[toolgate: <what> was left out: <why>]`.
pub(crate) fn left_out(what: &str, why: &str) -> String {
    format!("[toolgate: {what} was left out: {why}]")
}

/// Why a block is left out of a result for an API whose tool results are text only.
#[cfg(any(feature = "openai", feature = "gemini"))]
pub(crate) const TEXT_ONLY: &str = "this API's tool results take text only";

/// Why a block is left out of a result for an API that has no content of its kind.
pub(crate) const NO_SUCH_CONTENT: &str = "this API's tool results have no such content";

/// MCP: a tool with an `outputSchema` whose result text is not the JSON object it describes
/// (it was cut at the result limit), so `structuredContent` cannot be given.
pub(crate) const STRUCTURED_LEFT_OUT: &str = "[toolgate: the structured result was left out: \
     this text is not the whole JSON object the tool's outputSchema describes (it was cut at the \
     result limit). Ask for less, for example a narrower query.]";

// Shared pieces.

/// `` at `path` `` for a message (the path [`quoted`]), or nothing at the top level (also used in
/// the operator's `detail`).
pub(crate) fn at_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at `{}`", quoted(path))
    }
}

/// The most characters (Unicode scalar values) of one piece of model input an error quotes back.
pub(crate) const MAX_QUOTED_CHARS: usize = 64;

/// The most characters of a deserializer's own message (a custom `Deserialize`'s, which may quote
/// the input) an error shows.
pub(crate) const MAX_DESERIALIZER_MESSAGE_CHARS: usize = 160;

/// A piece of model input as an error quotes it: its first [`MAX_QUOTED_CHARS`] characters, then
/// `…` when there were more (cut on a character boundary).
pub(crate) fn quoted(text: &str) -> Cow<'_, str> {
    cut_chars(text, MAX_QUOTED_CHARS)
}

/// `text`'s first `max` characters, then `…` when there were more.
pub(crate) fn cut_chars(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
    }
}

/// What an external tool (declared with `ToolDef::external` or `#[tool(external)]`) answers when
/// a dispatcher is asked to run it: it runs in the host, never here.
pub const EXTERNAL_TOOL_MESSAGE: &str = "Error: this tool runs in the host application, not in \
     this dispatcher; nothing was run.";

/// MCP (`mcp` feature): a `tools/call` whose caller the host's identity function could not name;
/// nothing was run.
#[cfg(feature = "mcp")]
pub(crate) const MCP_NO_IDENTITY: &str = "BLOCKED: this server could not tell who is calling, so \
     no tool was run. Tell the user the tools are unavailable until they are signed in.";

/// MCP (`mcp` feature): a `tools/call` made after a policy check of the same caller's session
/// could not decide (a halt); the session has ended, nothing was run.
#[cfg(feature = "mcp")]
pub(crate) const MCP_HALTED_SESSION: &str = "BLOCKED: this session was stopped after a policy \
     check could not be completed, so no tool was run. Tell the user this action is unavailable \
     right now.";

/// MCP (`mcp` feature): a remote MCP server could not be reached or did not answer a call.
#[cfg(feature = "mcp")]
pub(crate) const MCP_REMOTE_FAILED: &str = "Error: the tool server did not answer, so the call \
     may not have run. The details were logged for the operator.";

/// MCP (`mcp` feature): a `tools/call` dropped unfinished because its request was cancelled
/// (`notifications/cancelled`) or the connection closed. rmcp sends no answer to a cancelled
/// request; a closing connection may still carry this one.
#[cfg(feature = "mcp")]
pub(crate) const MCP_CANCELLED: &str = "Error: this call was cancelled before it finished, so \
     it may or may not have taken effect. Check whether it took effect before making the call \
     again.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_input_is_cut_on_a_character_boundary() {
        assert_eq!(quoted("short"), "short");
        let exact = "é".repeat(MAX_QUOTED_CHARS);
        assert_eq!(quoted(&exact), exact.as_str());
        let long = "é".repeat(MAX_QUOTED_CHARS + 1);
        assert_eq!(quoted(&long), format!("{}…", "é".repeat(MAX_QUOTED_CHARS)));
    }

    fn problem(path: &str, message: &str) -> Problem {
        Problem {
            path: path.into(),
            message: message.into(),
        }
    }

    #[test]
    fn one_problem_keeps_the_single_line_form() {
        let one = Problems::one(problem("a.b", "expected an integer, found null"));
        assert_eq!(
            invalid_input("t", &one),
            "Error: invalid input for tool `t` at `a.b`: expected an integer, found null. Send an \
             input that matches the tool's input_schema."
        );
        let several = Problems {
            listed: vec![problem("a", "x"), problem("", "y")],
            more: 3,
            more_at_least: false,
        };
        assert_eq!(
            invalid_input("t", &several),
            "Error: invalid input for tool `t` (5 problems):\n- at `a`: x\n- y\n- and 3 more \
             problems\nSend an input that matches the tool's input_schema."
        );
        assert_eq!(
            invalid_rewrite("t", &several),
            "Error: invalid input for tool `t`: a policy rewrite of this call produced an input \
             that is invalid at `a` (x; and 4 more problems). This is a problem on our side; do \
             not retry the same call."
        );
        let capped = Problems {
            more_at_least: true,
            ..several
        };
        assert_eq!(
            invalid_input("t", &capped),
            "Error: invalid input for tool `t` (5 or more problems):\n- at `a`: x\n- y\n- and \
             at least 3 more problems\nSend an input that matches the tool's input_schema."
        );
    }
}
