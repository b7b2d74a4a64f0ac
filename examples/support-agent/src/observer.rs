//! The PostToolUse observer the replay's output is made from: it keeps what happened to each
//! call (which hook blocked, rewrote or asked about it, the answer) for `output.rs` to print.

use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use toolgate::{
    State,
    audit::{CallRecord, Outcome},
    post_hook,
};

/// What the observer keeps of one `tool_use` block (a copy of its `CallRecord`).
#[derive(Debug, Clone, PartialEq)]
pub struct CallLine {
    /// The block's id.
    pub tool_use_id: String,
    /// The tool the model asked for.
    pub tool: String,
    /// The input as received (after normalization).
    pub input: Value,
    /// The input after rewrites, when a hook rewrote it.
    pub effective_input: Option<Value>,
    /// How the call ended.
    pub outcome: Outcome,
    /// The full path of the hook that denied (or failed).
    pub blocked_by: Option<String>,
    /// The full paths of the hooks that rewrote the input.
    pub rewritten_by: Vec<String>,
    /// Whether the answer is an error.
    pub is_error: bool,
    /// The answer's text (empty when there is no answer).
    pub content: String,
    /// The hooks that asked for a person's approval.
    pub asked_by: Vec<String>,
    /// Who approved, or who declined.
    pub approved_by: Option<String>,
    /// Who declined.
    pub denied_by: Option<String>,
    /// The answer memory replayed an earlier answer: nothing ran.
    pub replay: bool,
}

/// The calls recorded since the last [`take`](Self::take): application state for the observer.
#[derive(Debug, Default)]
pub struct CallLog {
    lines: Mutex<Vec<CallLine>>,
}

impl CallLog {
    /// Takes the lines recorded so far, oldest first.
    pub fn take(&self) -> Vec<CallLine> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Keeps a copy of every call's record for the replay's output. Runs once per `tool_use`,
/// whatever its outcome, before the audit log.
#[post_hook]
pub fn record_call(record: &CallRecord<'_>, log: State<CallLog>) {
    let line = CallLine {
        tool_use_id: record.call.id.clone(),
        tool: record.call.name.clone(),
        input: record.input.clone(),
        effective_input: record.effective_input.cloned(),
        outcome: record.outcome,
        blocked_by: record.blocked_by.map(str::to_owned),
        rewritten_by: record
            .rewritten_by
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        is_error: record.result.is_some_and(|r| r.is_error),
        content: record
            .result
            .map(|r| r.content_text().into_owned())
            .unwrap_or_default(),
        asked_by: record.asked_by.iter().map(|a| a.hook.clone()).collect(),
        approved_by: record.approved_by.map(str::to_owned),
        denied_by: record.denied_by.map(str::to_owned),
        replay: record.replay,
    };
    log.lines
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(line);
}
