//! [`AuditLog`]: the built-in PostToolUse observer and Stop hook that append JSON lines.
//!
//! `dir/audit_log.jsonl` gets one line per `tool_use` block:
//!
//! ```json
//! {"ts":"2026-11-24T10:15:00Z","session_id":"sess_1","user_id":"u_001",
//!  "tool_use_id":"toolu_01","tool":"issue_refund","input":{"order_id":"o_1","amount_cents":2599},
//!  "outcome":"blocked","is_error":true,"content":"BLOCKED: …","duration_us":41,
//!  "blocked_by":"app::policy::spend_limit"}
//! ```
//!
//! `ts` is RFC 3339 UTC from the context's clock; `input` is the input as received, after
//! normalization; `duration_us` is microseconds from the start of the call to its result.
//! Present only when they apply: `blocked_by` (the hook's full path), `rewritten_by` (paths),
//! `effective_input` (after rewrites), `detail` (operator-only: panic text, error chain),
//! `content_bytes` (the full size in bytes when the content was cut).
//!
//! `dir/session_summaries.jsonl` gets one line per session: `ts` followed by the fields of
//! [`SessionSummary`].
//!
//! Each line is written with one `write` call on a file opened with `O_APPEND`, so lines from
//! concurrent sessions and threads never interleave. A failed write is reported on the observer
//! channel (`tracing`, `observer_errors`) and never changes a call's result. The files are
//! opened once: removing the folder while the process runs does not fail the writes (they go to
//! the removed files), so rotate by opening a new `AuditLog` and building a new dispatcher.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::definitions::{PostHookDef, StopHookDef};
use crate::outcome::{CallRecord, Outcome, SessionSummary};
use crate::state::Env;
use crate::time::Rfc3339;

/// The file name of the per-call log inside the audit folder.
pub const AUDIT_LOG_FILE: &str = "audit_log.jsonl";
/// The file name of the per-session log inside the audit folder.
pub const SESSION_SUMMARIES_FILE: &str = "session_summaries.jsonl";

struct Files {
    dir: PathBuf,
    calls: File,
    sessions: File,
}

/// The built-in audit log (opt-in): give it to
/// [`DispatcherBuilder::audit_log`](crate::DispatcherBuilder::audit_log). Cloning shares the
/// open files.
#[derive(Clone)]
pub struct AuditLog {
    files: Arc<Files>,
}

impl AuditLog {
    /// Opens (creating if missing) `dir`, `dir/audit_log.jsonl` and
    /// `dir/session_summaries.jsonl`, for appending.
    ///
    /// # Errors
    /// An [`io::Error`] whose message names the path that failed:
    /// - `dir` exists and is not a folder: kind [`io::ErrorKind::NotADirectory`], message
    ///   ``cannot use `DIR` as the audit folder: it exists and is not a folder``;
    /// - the folder cannot be created: the kind of the underlying error, message
    ///   ``cannot create the audit folder `DIR`: …``;
    /// - a file cannot be opened for appending: the kind of the underlying error, message
    ///   ``cannot open `DIR/audit_log.jsonl` for appending: …``.
    pub fn open(dir: impl AsRef<Path>) -> io::Result<AuditLog> {
        let dir = dir.as_ref().to_path_buf();
        if dir.exists() && !dir.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!(
                    "cannot use `{}` as the audit folder: it exists and is not a folder",
                    dir.display()
                ),
            ));
        }
        std::fs::create_dir_all(&dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create the audit folder `{}`: {e}", dir.display()),
            )
        })?;
        let open = |name: &str| {
            let path = dir.join(name);
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot open `{}` for appending: {e}", path.display()),
                    )
                })
        };
        Ok(AuditLog {
            files: Arc::new(Files {
                calls: open(AUDIT_LOG_FILE)?,
                sessions: open(SESSION_SUMMARIES_FILE)?,
                dir,
            }),
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.files.dir
    }

    /// `dir/audit_log.jsonl`.
    pub fn audit_log_path(&self) -> PathBuf {
        self.files.dir.join(AUDIT_LOG_FILE)
    }

    /// `dir/session_summaries.jsonl`.
    pub fn session_summaries_path(&self) -> PathBuf {
        self.files.dir.join(SESSION_SUMMARIES_FILE)
    }

    pub(crate) fn observer(&self) -> PostHookDef {
        let log = self.clone();
        PostHookDef::sync("toolgate::AuditLog", move |env, record| {
            log.write_call(env, record)
                .map_err(|e| crate::HookError::new(format_args!("audit log write failed: {e}")))
        })
    }

    pub(crate) fn stop_hook(&self) -> StopHookDef {
        let log = self.clone();
        StopHookDef::new("toolgate::AuditLog", move |env, summary| {
            log.write_summary(env, summary)
                .map_err(|e| crate::HookError::new(format_args!("audit log write failed: {e}")))
        })
    }

    fn write_call(&self, env: Env<'_>, r: &CallRecord<'_>) -> io::Result<()> {
        let ctx = env.context();
        let line = CallLine {
            ts: Rfc3339(ctx.now()),
            session_id: ctx.session_id(),
            user_id: ctx.user_id(),
            tool_use_id: &r.call.id,
            tool: &r.call.name,
            input: r.input,
            outcome: r.outcome,
            is_error: r.result.is_some_and(|res| res.is_error),
            content: r.result.map_or(Cow::Borrowed(""), |res| res.content_text()),
            duration_us: u64::try_from(r.duration.as_micros()).unwrap_or(u64::MAX),
            blocked_by: r.blocked_by,
            rewritten_by: r.rewritten_by,
            effective_input: r.effective_input,
            detail: r.detail,
            content_bytes: r.content_bytes,
        };
        append(&self.files.calls, &line)
    }

    fn write_summary(&self, env: Env<'_>, summary: &SessionSummary) -> io::Result<()> {
        #[derive(Serialize)]
        struct SummaryLine<'a> {
            ts: Rfc3339,
            #[serde(flatten)]
            summary: &'a SessionSummary,
        }
        let line = SummaryLine {
            ts: Rfc3339(env.context().now()),
            summary,
        };
        append(&self.files.sessions, &line)
    }
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("dir", &self.files.dir)
            .finish()
    }
}

#[derive(Serialize)]
struct CallLine<'a> {
    ts: Rfc3339,
    session_id: &'a str,
    user_id: &'a str,
    tool_use_id: &'a str,
    tool: &'a str,
    input: &'a Value,
    outcome: Outcome,
    is_error: bool,
    content: Cow<'a, str>,
    duration_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocked_by: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    rewritten_by: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    effective_input: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_bytes: Option<usize>,
}

thread_local! {
    static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serializes `line` plus `\n` into a reused per-thread buffer and appends it with one write.
fn append<T: Serialize>(file: &File, line: &T) -> io::Result<()> {
    LINE.with(|buf| {
        let mut buf = match buf.try_borrow_mut() {
            Ok(b) => b,
            // Re-entered from inside a write (cannot happen today); use a fresh buffer.
            Err(_) => return write_line(file, &mut Vec::new(), line),
        };
        buf.clear();
        let result = write_line(file, &mut buf, line);
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        result
    })
}

fn write_line<T: Serialize>(mut file: &File, buf: &mut Vec<u8>, line: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *buf, line)?;
    buf.push(b'\n');
    // One write: O_APPEND places it whole at the end; a regular file does not split it.
    let written = file.write(buf)?;
    if written != buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write: {written} of {} bytes", buf.len()),
        ));
    }
    Ok(())
}
