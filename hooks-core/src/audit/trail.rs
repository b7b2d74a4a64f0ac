//! Reading an audit trail back: the lines of an audit folder's files (rotated ones included,
//! oldest first), each checked to be a whole JSON line of the kind its file holds.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::audit::chain::chain_files;
use crate::audit::outcome::Outcome;
use crate::audit::record::AuditRecord;
use crate::audit::{AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE};

/// The lines of one audit trail, as [`AuditLog`](crate::audit::AuditLog)'s files hold them:
/// every per-call line as an [`AuditRecord`] (replayed answers and paused calls' lines
/// included, in file order) and every session summary line as JSON.
///
/// Read it from a folder with [`read_dir`](Self::read_dir), or line by line from any other
/// source (a database's rows, a pipe) with [`push_call_line`](Self::push_call_line) and
/// [`push_summary_line`](Self::push_summary_line).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Trail {
    /// The per-call lines, in order.
    pub calls: Vec<AuditRecord>,
    /// Per-call lines whose `outcome` this build does not know (written by a newer toolgate):
    /// kept out of [`calls`](Self::calls) and of every count.
    pub unknown_outcomes: u64,
    /// The session summary lines, in order.
    pub summaries: Vec<Value>,
    /// The files read, in chain order (`audit_log.1.jsonl`, …, `audit_log.jsonl`, then the
    /// summaries' files).
    pub files: Vec<PathBuf>,
}

/// Why a trail could not be read: each one sentence that names the path (and the line, counted
/// from 1), for an operator's terminal.
#[derive(Debug)]
#[non_exhaustive]
pub enum TrailError {
    /// The path does not exist or is not a folder.
    NotAFolder(PathBuf),
    /// The folder holds neither `audit_log.jsonl` nor `session_summaries.jsonl` (nor a rotated
    /// file of either): most likely not the audit folder.
    NoAuditFiles(PathBuf),
    /// A file, or the folder's listing, could not be read.
    Read {
        /// The file, or the folder.
        path: PathBuf,
        /// The error the system gave.
        source: io::Error,
    },
    /// A line is not what its file holds: not JSON, or not an audit line (a member missing or
    /// of the wrong type).
    BadLine {
        /// The file (or the source's label).
        path: PathBuf,
        /// The line, counted from 1.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// The file's last line has no `\n`: a write was cut short (the audit files are written a
    /// whole line at a time, so a finished line always ends with one).
    TornLine {
        /// The file.
        path: PathBuf,
        /// The line, counted from 1.
        line: u64,
    },
}

impl fmt::Display for TrailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrailError::NotAFolder(p) => write!(f, "`{}` is not a folder", p.display()),
            TrailError::NoAuditFiles(p) => write!(
                f,
                "`{}` holds no audit files ({AUDIT_LOG_FILE}, {SESSION_SUMMARIES_FILE}): is it \
                 the audit folder?",
                p.display()
            ),
            TrailError::Read { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            TrailError::BadLine {
                path,
                line,
                problem,
            } => write!(f, "`{}` line {line}: {problem}", path.display()),
            TrailError::TornLine { path, line } => write!(
                f,
                "`{}` line {line} is cut short (no newline at the end of the file): a write was \
                 interrupted",
                path.display()
            ),
        }
    }
}

impl std::error::Error for TrailError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrailError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl Trail {
    /// Reads the audit folder `dir`: `audit_log.jsonl` and `session_summaries.jsonl`, each
    /// with its rotated files, oldest first ([`chain_files`]: the chain's own rule, the one
    /// the writer and the verifier follow). Blank lines are skipped.
    ///
    /// # Errors
    /// [`TrailError::NotAFolder`]; [`TrailError::Read`] naming the folder when its listing
    /// cannot be read (never an empty trail), or naming a file that cannot be read;
    /// [`TrailError::NoAuditFiles`]; [`TrailError::BadLine`] for the first line that is not
    /// JSON or not an audit line; [`TrailError::TornLine`] when a file's last line has no `\n`.
    pub fn read_dir(dir: impl AsRef<Path>) -> Result<Trail, TrailError> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(TrailError::NotAFolder(dir.to_path_buf()));
        }
        let listed = |name| {
            chain_files(dir, name).map_err(|source| TrailError::Read {
                path: dir.to_path_buf(),
                source,
            })
        };
        let calls = listed(AUDIT_LOG_FILE)?;
        let summaries = listed(SESSION_SUMMARIES_FILE)?;
        if calls.is_empty() && summaries.is_empty() {
            return Err(TrailError::NoAuditFiles(dir.to_path_buf()));
        }
        let mut trail = Trail::default();
        for path in calls {
            read_file(&path, |line, n| trail.push_call_line(line, &path, n))?;
            trail.files.push(path);
        }
        for path in summaries {
            read_file(&path, |line, n| trail.push_summary_line(line, &path, n))?;
            trail.files.push(path);
        }
        Ok(trail)
    }

    /// Adds one per-call line (its `\n` removed; `prev` and members this build does not know are
    /// ignored). `path` and `n` (from 1) name it in an error.
    ///
    /// # Errors
    /// [`TrailError::BadLine`]: the line is not a JSON object with the members of an
    /// [`AuditRecord`].
    pub fn push_call_line(&mut self, line: &[u8], path: &Path, n: u64) -> Result<(), TrailError> {
        match parse_call_line(line) {
            Ok(Some(record)) => self.calls.push(record),
            Ok(None) => self.unknown_outcomes += 1,
            Err(problem) => return Err(bad(path, n, problem)),
        }
        Ok(())
    }

    /// Adds one session summary line (its `\n` removed).
    ///
    /// # Errors
    /// [`TrailError::BadLine`]: the line is not a JSON object with a string `session_id`.
    pub fn push_summary_line(
        &mut self,
        line: &[u8],
        path: &Path,
        n: u64,
    ) -> Result<(), TrailError> {
        let value: Value =
            serde_json::from_slice(line).map_err(|e| bad(path, n, format!("not JSON: {e}")))?;
        if value.get("session_id").and_then(Value::as_str).is_none() {
            return Err(bad(
                path,
                n,
                "not a session summary line: no string `session_id`".to_owned(),
            ));
        }
        self.summaries.push(value);
        Ok(())
    }
}

fn bad(path: &Path, line: u64, problem: String) -> TrailError {
    TrailError::BadLine {
        path: path.to_path_buf(),
        line,
        problem,
    }
}

/// One per-call line (its `\n` removed) as a record; `Ok(None)` when its `outcome` is a string
/// this build does not know (a newer writer's): such a line is counted apart, never misread.
///
/// # Errors
/// The sentence saying why the line is not an audit line: `not JSON: …`, `not an audit line:
/// no string `tool_use_id``, `not an audit line: …` (serde's message).
pub fn parse_call_line(line: &[u8]) -> Result<Option<AuditRecord>, String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("not an audit line: not a JSON object".to_owned());
    };
    for member in ["ts", "session_id", "tool_use_id", "tool", "outcome"] {
        if !object.get(member).is_some_and(Value::is_string) {
            return Err(format!("not an audit line: no string `{member}`"));
        }
    }
    let outcome = object["outcome"].as_str().unwrap_or_default();
    if !Outcome::ALL.iter().any(|o| o.as_str() == outcome) {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| format!("not an audit line: {e}"))
}

/// Calls `each` with every non-blank line of `path` (its `\n` removed) and its number from 1.
fn read_file(
    path: &Path,
    each: impl FnMut(&[u8], u64) -> Result<(), TrailError>,
) -> Result<(), TrailError> {
    let file = std::fs::File::open(path).map_err(|source| TrailError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    read_lines(file, path, each)
}

/// Calls `each` with every non-blank line of `reader` (its `\n` removed) and its number from
/// 1; `label` names the source in an error.
fn read_lines(
    reader: impl Read,
    label: &Path,
    mut each: impl FnMut(&[u8], u64) -> Result<(), TrailError>,
) -> Result<(), TrailError> {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let mut n = 0u64;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| TrailError::Read {
                path: label.to_path_buf(),
                source,
            })?;
        if read == 0 {
            return Ok(());
        }
        n += 1;
        if line.last() != Some(&b'\n') {
            return Err(TrailError::TornLine {
                path: label.to_path_buf(),
                line: n,
            });
        }
        line.pop();
        if !line.iter().all(u8::is_ascii_whitespace) {
            each(&line, n)?;
        }
    }
}

/// Reads per-call lines from `reader` to its end, as [`Trail::read_dir`] reads
/// `audit_log.jsonl`: for a source that is not a folder (standard input, a database export).
///
/// # Errors
/// [`TrailError::Read`], [`TrailError::BadLine`], [`TrailError::TornLine`], `label` naming the
/// source.
pub fn read_call_lines(reader: impl Read, label: &Path) -> Result<Trail, TrailError> {
    let mut trail = Trail::default();
    read_lines(reader, label, |line, n| {
        trail.push_call_line(line, label, n)
    })?;
    Ok(trail)
}
