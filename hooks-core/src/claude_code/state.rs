//! The per-session state file of the Claude Code hook: each hook event is a new process, so
//! what a session summary needs (start, counts, observer errors) is kept in
//! `<dir>/<session_id>.json` between events, under the file's lock, with the rewrites answered
//! at PreToolUse that their PostToolUse event has not yet recorded.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::outcome::SessionSummary;

/// What the state file holds: one JSON line, the session's summary so far, and a `rewrites`
/// member while a rewritten call waits for its PostToolUse event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct SessionState {
    #[serde(flatten)]
    pub(super) summary: SessionSummary,
    /// By `tool_use_id`: the calls whose input the PreToolUse chain rewrote.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) rewrites: BTreeMap<String, Rewritten>,
}

/// A call the chain rewrote at PreToolUse, kept for its PostToolUse audit line (Claude Code
/// sends the rewritten input there, not the model's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Rewritten {
    /// The input as the model sent it.
    pub(super) input: Value,
    /// The hooks that rewrote it, in order.
    pub(super) rewritten_by: Vec<String>,
}

/// At most this many rewrites wait in one state file: a PostToolUse that never comes (the
/// person declined the call at Claude Code's prompt) must not grow it for good. The oldest
/// tool_use ids (in id order) go first.
pub(super) const MAX_WAITING_REWRITES: usize = 64;

/// The state file of one session, locked for as long as this value lives.
pub(super) struct StateFile {
    file: File,
    path: PathBuf,
}

impl StateFile {
    /// Opens (creating the folder and the file when missing) and locks the state file of
    /// `session_id` under `dir`. Concurrent events of one session (Claude Code runs hooks in
    /// parallel) wait for each other here, so no update is lost.
    pub(super) fn open(dir: &Path, session_id: &str) -> std::io::Result<StateFile> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.json", file_stem(session_id)));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        file.lock()?;
        Ok(StateFile { file, path })
    }

    /// The state so far; a new one (started `now`) when the file is empty. A file that does
    /// not parse is an error: it is never silently reset.
    pub(super) fn read(
        &mut self,
        session_id: &str,
        user_id: &str,
        now: SystemTime,
    ) -> std::io::Result<SessionState> {
        let mut text = String::new();
        self.file.seek(SeekFrom::Start(0))?;
        self.file.read_to_string(&mut text)?;
        if text.trim().is_empty() {
            let summary = SessionSummary {
                session_id: session_id.to_owned(),
                user_id: user_id.to_owned(),
                started_at: now,
                ended_at: now,
                calls: 0,
                outcomes: Default::default(),
                tools: Default::default(),
                observer_errors: 0,
                usage: Default::default(),
            };
            return Ok(SessionState {
                summary,
                rewrites: BTreeMap::new(),
            });
        }
        serde_json::from_str(&text).map_err(|e| {
            std::io::Error::other(format!(
                "the session state file {} is not a session summary: {e}",
                self.path.display()
            ))
        })
    }

    /// Replaces the file's content with `state`, one JSON line (at most
    /// [`MAX_WAITING_REWRITES`] rewrites kept).
    pub(super) fn write(&mut self, state: &mut SessionState) -> std::io::Result<()> {
        while state.rewrites.len() > MAX_WAITING_REWRITES {
            state.rewrites.pop_first();
        }
        let mut line = serde_json::to_vec(state).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.file.seek(SeekFrom::Start(0))?;
        self.file.set_len(0)?;
        self.file.write_all(&line)?;
        self.file.flush()
    }

    /// Removes the file (the session ended); the lock goes with it.
    pub(super) fn remove(self) -> std::io::Result<()> {
        std::fs::remove_file(&self.path)
    }
}

/// A session id as a file name: Claude Code's ids are UUIDs; any other byte than an ASCII
/// letter, digit, `-` or `_` becomes `_` (so no id reaches outside the folder), and an empty id
/// is `_`.
pub(super) fn file_stem(session_id: &str) -> String {
    let stem: String = session_id
        .chars()
        .take(128)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() { "_".into() } else { stem }
}
