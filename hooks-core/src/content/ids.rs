//! Which `tool_use` ids are run and answered: the rules of each API ([`IdRule`]), checked on a
//! whole message before anything in it runs ([`IdError`]).
//!
//! | path | rules |
//! |---|---|
//! | [`Session::respond`](crate::Session::respond) (Messages API) | every id non-empty, matching `^[a-zA-Z0-9_-]+$`, unique in the message |
//! | [`Session::call`](crate::Session::call) (any API: MCP, OpenAI, …) | non-empty |
//! | OpenAI Chat Completions and Responses turns | non-empty, unique in the turn |
//! | Gemini candidates | unique in the turn (a call without an id gets one, see [`gemini`](crate::provider::gemini)) |
//!
//! Source of the Messages API rules: its 400 answers, `messages.1.content.0.tool_use.id: String
//! should match pattern '^[a-zA-Z0-9_-]+$'` and `tool_use ids must be unique`. A repeated id
//! cannot be answered unambiguously on any API (each answer names its call by id), so every
//! whole-turn path refuses one.

use std::fmt;

use crate::content::message::ToolUse;

/// A rule a `tool_use` id breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdRule {
    /// The id is empty: no `tool_result` could name it.
    Empty,
    /// The id does not match the Messages API's pattern `^[a-zA-Z0-9_-]+$`.
    Pattern,
    /// An earlier block of the same message has the same id.
    Repeated,
}

impl IdRule {
    /// What the rule says, as the error text gives it: `is empty`, ``does not match the
    /// Messages API's pattern `^[a-zA-Z0-9_-]+$` ``, `repeats the id of an earlier block`.
    pub const fn says(self) -> &'static str {
        match self {
            IdRule::Empty => "is empty",
            IdRule::Pattern => "does not match the Messages API's pattern `^[a-zA-Z0-9_-]+$`",
            IdRule::Repeated => "repeats the id of an earlier block",
        }
    }
}

/// A message refused for one of its `tool_use` ids: nothing in it ran, and each of its blocks
/// was audited as `not_run` with this text as the reason.
///
/// `Display`: ``tool_use id "toolu 1" (block 2 of 3) does not match the Messages API's pattern
/// `^[a-zA-Z0-9_-]+$`; none of the message's 3 tool_use blocks was run``. The id is shown as a
/// JSON string, cut to 64 characters (the whole id is in [`id`](Self::id)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdError {
    /// The offending id, whole.
    pub id: String,
    /// Its block's position among the message's `tool_use` blocks, from 1.
    pub block: usize,
    /// How many `tool_use` blocks the message has.
    pub blocks: usize,
    /// The rule it breaks.
    pub rule: IdRule,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool_use id {} (block {} of {}) {}; none of the message's {} tool_use block(s) was run",
            shown(&self.id),
            self.block,
            self.blocks,
            self.rule.says(),
            self.blocks
        )
    }
}

impl std::error::Error for IdError {}

/// The id as a JSON string, at most 64 characters of it (then `…`).
fn shown(id: &str) -> String {
    let cut = match id.char_indices().nth(64) {
        None => id,
        Some((end, _)) => &id[..end],
    };
    let mut text = serde_json::Value::from(cut).to_string();
    if cut.len() < id.len() {
        text.push('…');
    }
    text
}

/// Whether `id` matches `^[a-zA-Z0-9_-]+$`.
pub(crate) fn matches_pattern(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks the ids of one message or turn: each non-empty, matching the Messages API's pattern
/// when `pattern` holds, and unique. The first offending block, in order, is named.
pub(crate) fn check(uses: &[&ToolUse], pattern: bool) -> Result<(), IdError> {
    let error = |i: usize, rule| IdError {
        id: uses[i].id.clone(),
        block: i + 1,
        blocks: uses.len(),
        rule,
    };
    for (i, call) in uses.iter().enumerate() {
        if call.id.is_empty() {
            return Err(error(i, IdRule::Empty));
        }
        if pattern && !matches_pattern(&call.id) {
            return Err(error(i, IdRule::Pattern));
        }
        // Messages hold a handful of blocks: a quadratic scan allocates nothing.
        if uses[..i].iter().any(|earlier| earlier.id == call.id) {
            return Err(error(i, IdRule::Repeated));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_pattern_is_the_messages_api_one() {
        for ok in ["toolu_01AbQ", "a", "A-b_9", "call_Lq8Vn2Rt6Yx0"] {
            assert!(matches_pattern(ok), "{ok}");
        }
        for bad in ["", "toolu 1", "toolu.1", "tööl", "a/b", "a\n", "call:1"] {
            assert!(!matches_pattern(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_first_offending_block_is_named_with_its_rule() {
        let a = ToolUse::new("toolu_a", "t", json!({}));
        let b = ToolUse::new("toolu_b", "t", json!({}));
        let space = ToolUse::new("toolu a", "t", json!({}));
        let empty = ToolUse::new("", "t", json!({}));
        assert_eq!(check(&[&a, &b], true), Ok(()));
        let e = check(&[&a, &b, &a, &space], true).unwrap_err();
        assert_eq!((e.id.as_str(), e.block, e.blocks), ("toolu_a", 3, 4));
        assert_eq!(e.rule, IdRule::Repeated);
        assert_eq!(
            e.to_string(),
            "tool_use id \"toolu_a\" (block 3 of 4) repeats the id of an earlier block; none of \
             the message's 4 tool_use block(s) was run"
        );
        assert_eq!(
            check(&[&a, &space], true).unwrap_err().rule,
            IdRule::Pattern
        );
        assert_eq!(check(&[&a, &space], false), Ok(()));
        assert_eq!(check(&[&empty], false).unwrap_err().rule, IdRule::Empty);
        let long = ToolUse::new("x".repeat(70) + "\"", "t", json!({}));
        assert_eq!(
            check(&[&long], true).unwrap_err().to_string(),
            format!(
                "tool_use id \"{}\"… (block 1 of 1) does not match the Messages API's pattern \
                 `^[a-zA-Z0-9_-]+$`; none of the message's 1 tool_use block(s) was run",
                "x".repeat(64)
            )
        );
    }
}
