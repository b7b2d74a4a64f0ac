//! Every decision and every refused attempt as an audit line ([`DecisionLine`]) in the
//! `decisions` chain, and where it goes ([`DecisionLog`]): the audit folder's `decisions.jsonl`
//! ([`DecisionFiles`], hash-chained and verified as the other files are), lines kept in memory
//! ([`MemoryDecisionLog`], for tests), or, for a PostgreSQL store, its `decisions` chain, written
//! in the decision's own transaction.

use std::io;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use serde::Serialize;

use crate::audit::DECISIONS_FILE;
use crate::audit::chain::{ChainedFile, hash, hex};
use crate::store::{StoreError, StoreErrorKind, StoreFuture};

use super::call::CallState;
use super::decide::{Attempt, Decided, Refusal};
use super::policy::Action;

/// One line of the `decisions` chain: who tried what on which call, the digest of the input
/// they were shown, their comment, and what came of it. It never holds an input (the call's
/// own audit line at resume shows it, redacted as the audit log redacts).
///
/// ```json
/// {"ts": "2026-11-24T10:20:00.125Z", "session_id": "sess_1", "turn_id": "toolu_1",
///  "tool_use_id": "toolu_2", "tool": "issue_refund", "user_id": "u_001",
///  "by": "lead@example.com", "action": "approve", "input_digest": "…(64 hex)",
///  "comment": "checked the order", "result": "approved",
///  "prev": "…(64 hex)"}
/// ```
///
/// `result`: the call's state after the decision (`approved`, `edited`, `declined`, or
/// `waiting` after the first approval of a two-person call), or `refused`, with `refused`
/// naming why (`already_decided`, `expired`, `input_changed`, `not_allowed`, …, as
/// [`Refusal`] serializes) and `detail` the sentence the person was shown. `edited_digest`: an
/// edit's input digest; `reason`: a decline's reason for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DecisionLine {
    /// When the store judged it, by its clock.
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub ts: SystemTime,
    /// The session.
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The call.
    pub tool_use_id: String,
    /// The call's tool's name, as [`ToolUse::name`](crate::ToolUse::name) (`tool` in JSON, as
    /// on the call's audit line).
    #[serde(rename = "tool")]
    pub name: String,
    /// The user the call was made for.
    pub user_id: String,
    /// Who tried (the signed-in identity's id).
    pub by: String,
    /// What they tried.
    pub action: Action,
    /// The digest of the input they were shown.
    pub input_digest: String,
    /// An edit's input digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_digest: Option<String>,
    /// A decline's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Their comment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The call's state after it, or `refused`.
    pub result: String,
    /// Why it was refused (the [`Refusal`] variant, snake_case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The refusal's sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl DecisionLine {
    /// The line of `attempt` on a call of `tool` made for `user_id`, answered `answer` at `at`.
    pub(crate) fn new(
        attempt: &Attempt,
        tool: &str,
        user_id: &str,
        answer: &Result<Decided, Refusal>,
        at: SystemTime,
    ) -> DecisionLine {
        let r = &attempt.request;
        let (result, refused, detail) = match answer {
            Ok(d) => (d.state.as_str().to_owned(), None, None),
            Err(refusal) => {
                let kind = serde_json::to_value(refusal)
                    .ok()
                    .and_then(|v| v.get("refused").and_then(|k| k.as_str()).map(str::to_owned));
                ("refused".to_owned(), kind, Some(refusal.to_string()))
            }
        };
        DecisionLine {
            ts: at,
            session_id: r.session_id.clone(),
            turn_id: r.turn_id.clone(),
            tool_use_id: r.tool_use_id.clone(),
            name: tool.to_owned(),
            user_id: user_id.to_owned(),
            by: attempt.by.clone(),
            action: attempt.action(),
            input_digest: r.input_digest.clone(),
            edited_digest: attempt.edit.as_ref().map(|e| e.digest.clone()),
            reason: attempt.reason().map(str::to_owned),
            comment: r.comment.clone(),
            result,
            refused,
            detail,
        }
    }

    /// Whether it records a decision that ended the call.
    pub fn decided(&self) -> bool {
        CallState::parse(&self.result).is_some_and(CallState::is_decided)
    }

    /// The line's JSON object, without `prev` (the chain's writer adds it last).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec())
    }
}

/// Where the inbox writes its [`DecisionLine`]s when its store does not write them itself
/// ([`InboxStore::audits_decisions`](super::InboxStore::audits_decisions)).
pub trait DecisionLog: Send + Sync {
    /// Appends `line` to the `decisions` chain; the future ends once it is written.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be written.
    fn record<'a>(&'a self, line: &'a DecisionLine) -> StoreFuture<'a, Result<(), StoreError>>;
}

/// The audit folder's `decisions.jsonl`: one hash chain, every line appended whole under the
/// file's lock, with the same rule as `audit_log.jsonl` (ARCHITECTURE.md, "Contracts": "The
/// audit line and its chain"), so `verify_audit_dir` checks it and processes share it.
pub struct DecisionFiles {
    file: ChainedFile,
}

impl DecisionFiles {
    /// Opens (creating) `dir/decisions.jsonl`, `dir` made when missing.
    ///
    /// # Errors
    /// An [`io::Error`] naming the path when the folder or the file cannot be opened.
    pub fn open(dir: impl AsRef<Path>) -> io::Result<DecisionFiles> {
        let dir = dir.as_ref();
        let named = |e: io::Error, path: &Path| {
            io::Error::new(e.kind(), format!("cannot open `{}`: {e}", path.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| named(e, dir))?;
        let file = ChainedFile::open(dir, DECISIONS_FILE)
            .map_err(|e| named(e, &dir.join(DECISIONS_FILE)))?;
        Ok(DecisionFiles { file })
    }
}

impl std::fmt::Debug for DecisionFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionFiles")
            .field("path", &self.file.path())
            .finish()
    }
}

impl DecisionLog for DecisionFiles {
    fn record<'a>(&'a self, line: &'a DecisionLine) -> StoreFuture<'a, Result<(), StoreError>> {
        let (mut object, mut spare) = (line.to_json(), Vec::new());
        StoreFuture::ready(self.file.append(&mut object, &mut spare).map_err(|e| {
            StoreError::new(
                StoreErrorKind::Unavailable,
                format!("cannot append to `{}`: {e}", self.file.path().display()),
            )
            .with_source(e)
        }))
    }
}

/// Decision lines kept in memory, chained as a file would be (each line with its `prev`): for
/// tests and examples.
#[derive(Debug, Default)]
pub struct MemoryDecisionLog {
    lines: Mutex<(Vec<String>, [u8; 32])>,
}

impl MemoryDecisionLog {
    /// An empty log.
    pub fn new() -> MemoryDecisionLog {
        MemoryDecisionLog::default()
    }

    /// The lines so far, in order, each a JSON object ending with `prev` (no `\n`).
    pub fn lines(&self) -> Vec<String> {
        self.lock().0.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<String>, [u8; 32])> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl DecisionLog for MemoryDecisionLog {
    fn record<'a>(&'a self, line: &'a DecisionLine) -> StoreFuture<'a, Result<(), StoreError>> {
        let mut object = line.to_json();
        object.pop();
        let mut kept = self.lock();
        let prev = String::from_utf8_lossy(&hex(&kept.1)).into_owned();
        let text = format!("{},\"prev\":\"{prev}\"}}", String::from_utf8_lossy(&object));
        kept.1 = hash(format!("{text}\n").as_bytes());
        kept.0.push(text);
        StoreFuture::ready(Ok(()))
    }
}
