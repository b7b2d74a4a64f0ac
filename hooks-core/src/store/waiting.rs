//! The waiting calls of a paused turn as the inbox lists them, one row each ([`WaitingRow`]):
//! what every store's [`put`](super::PendingStore::put) writes beside the turn, in the same
//! atomic step, so the inbox lists and filters waiting calls without reading any turn's JSON
//! (ARCHITECTURE.md, "Contracts": "What each store promises", "The inbox").
//!
//! The database stores write these rows in every build, the `inbox` feature or not: an agent
//! built without it still fills the inbox a `toolgate` process reads. A row shows only what the
//! turn's JSON shows (its effective input as kept, which holds whatever the turn redacted).

use serde::Serialize;
use serde_json::Value;

use crate::approval::ask::Asked;
use crate::approval::pending::{PendingBlock, PendingTurn};

/// The most characters of a call's one-line summary; a longer one is cut and ends with `…`.
pub(crate) const SUMMARY_CHARS: usize = 160;

/// One waiting call of a turn, as a store keeps it beside the turn (serialized as a JSON object
/// of these members for PostgreSQL's `json_to_recordset`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WaitingRow {
    /// The `tool_use` id.
    pub(crate) tool_use_id: String,
    /// The block's place in the turn, from 0.
    pub(crate) position: u32,
    /// The tool's name.
    pub(crate) tool: String,
    /// The hooks that asked, with their reasons: `[{"hook", "reason"}]` as JSON text.
    pub(crate) asked_by: String,
    /// The asking hooks' paths, each between two `\n` (`"\nhook_a\nhook_b\n"`), so a filter on
    /// one path is one substring test (a path holds no `\n`).
    pub(crate) rules: String,
    /// The SHA-256 of the effective input's compact JSON text (the turn's `input_digest`).
    pub(crate) digest: String,
    /// [`summary`] of the effective input.
    pub(crate) summary: String,
    /// The effective input, compact JSON text.
    pub(crate) input: String,
}

/// The rows of `turn`'s waiting calls, in `tool_use` order.
pub(crate) fn waiting_rows(turn: &PendingTurn) -> Vec<WaitingRow> {
    turn.blocks
        .iter()
        .enumerate()
        .filter_map(|(i, block)| match block {
            PendingBlock::AwaitingApproval(a) => Some(WaitingRow {
                tool_use_id: a.tool_use_id.clone(),
                position: u32::try_from(i).unwrap_or(u32::MAX),
                tool: a.name.clone(),
                asked_by: serde_json::to_string(&a.asked_by).unwrap_or_else(|_| "[]".to_owned()),
                rules: rules_text(&a.asked_by),
                digest: a.input_digest.clone(),
                summary: summary(&a.effective_input),
                input: a.effective_input.to_string(),
            }),
            PendingBlock::Answered { .. } => None,
        })
        .collect()
}

/// The asking hooks' paths, each between two `\n`: `"\napp::a\napp::b\n"` (`"\n"` for none).
pub(crate) fn rules_text(asked: &[Asked]) -> String {
    let mut text = String::from("\n");
    for a in asked {
        text.push_str(&a.hook);
        text.push('\n');
    }
    text
}

/// A one-line summary of an input for a list: an object's members as `key=value`, each value
/// compact JSON (`order_id="o_1002", amount_cents=25000`); any other value its compact JSON.
/// Cut to [`SUMMARY_CHARS`] characters, ending with `…` when cut. Compact JSON escapes every
/// control character, so the summary is one line.
pub(crate) fn summary(input: &Value) -> String {
    let text = match input {
        Value::Object(members) => members
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    match text.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => {
            let mut short = text[..cut].to_owned();
            short.push('…');
            short
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_summary_is_one_line_of_key_value_pairs_cut_at_its_bound() {
        assert_eq!(
            summary(&json!({"order_id": "o_1002", "amount_cents": 25000})),
            "order_id=\"o_1002\", amount_cents=25000"
        );
        assert_eq!(
            summary(&json!({"note": "two\nlines", "tags": ["a", "b"]})),
            "note=\"two\\nlines\", tags=[\"a\",\"b\"]"
        );
        assert_eq!(summary(&json!([1, 2])), "[1,2]");
        assert_eq!(summary(&json!({})), "");
        let long = summary(&json!({"text": "é".repeat(400)}));
        assert_eq!(long.chars().count(), SUMMARY_CHARS + 1);
        assert!(long.starts_with("text=\"éé"), "{long}");
        assert!(long.ends_with('…'), "{long}");
    }

    #[test]
    fn rules_are_each_between_two_newlines() {
        let asked = |hook: &str| Asked {
            hook: hook.to_owned(),
            reason: "r".to_owned(),
        };
        assert_eq!(rules_text(&[]), "\n");
        assert_eq!(
            rules_text(&[asked("app::a"), asked("app::b")]),
            "\napp::a\napp::b\n"
        );
    }
}
