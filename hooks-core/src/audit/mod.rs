//! What a call and a session came to, and the audit trail made of it: the record every
//! PostToolUse observer sees ([`CallRecord`], its [`Outcome`], each [`HookRun`]), the summary
//! every Stop hook sees ([`SessionSummary`]), and [`AuditLog`], the built-in observer and Stop
//! hook that turns every `tool_use` and every session into an audit record, redacts it and hands
//! it to the sinks (the hash-chained JSONL files by default); the chain's check (feature
//! `audit-verify`), the trail read back and what it adds up to (feature `audit-report`), and
//! what-if replays of a recorded log against today's rules ([`WhatIf`]).
//!
//! You need it to write an observer or a Stop hook, keep an audit trail, check one, or ask what
//! today's rules would have done to yesterday's calls.
//!
//! Where each piece is: ARCHITECTURE.md, "Parts": `audit/`.

pub(crate) mod chain;
mod files;
pub(crate) mod hook_run;
mod line;
pub(crate) mod outcome;
pub(crate) mod printable;
mod record;
mod redact;
#[cfg(feature = "audit-report")]
pub mod report;
mod sink;
#[cfg(feature = "audit-report")]
mod trail;
#[cfg(feature = "audit-verify")]
pub(crate) mod verify;
pub(crate) mod what_if;

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

pub use crate::base::time::Rfc3339;
pub use chain::CHAIN_START;
#[cfg(any(feature = "audit-verify", feature = "audit-report"))]
pub use chain::chain_files;
pub use hook_run::{HookOutcome, HookRun};
pub use outcome::{CallRecord, LeaseRecord, Outcome, SessionSummary};
pub use printable::{printable, printable_json};
pub use record::{AuditRecord, SummaryRecord};
pub use redact::{InvalidPointer, REDACTED, Redaction, mask_card_numbers, mask_emails};
pub use sink::AuditSink;
#[cfg(feature = "audit-report")]
pub use trail::{Trail, TrailError, parse_call_line, read_call_lines};
#[cfg(feature = "audit-verify")]
pub use verify::{
    AuditVerification, ChainBreak, ChainProblem, ChainStatus, ChainVerification, KEEP_LAST_HASHES,
    verify_audit_dir, verify_audit_dir_with_progress, verify_audit_file,
};
pub use what_if::{Change, Flip, WhatIf};

use crate::base::local::with_reused;
use crate::base::panic::catch;
use crate::error::HookError;
use crate::hook::context::Extensions;
use crate::hook::definitions::{PostHookDef, StopHookDef};
use crate::hook::state::Env;
use files::JsonlFiles;

/// The file name of the per-call log inside the audit folder.
pub const AUDIT_LOG_FILE: &str = "audit_log.jsonl";
/// The file name of the per-session log inside the audit folder.
pub const SESSION_SUMMARIES_FILE: &str = "session_summaries.jsonl";
/// The file name of the people's decisions inside the audit folder: one line per decision and
/// per refused attempt of the approval inbox (feature `inbox`), a hash chain of its own, so the
/// per-call log keeps exactly one final line per `tool_use`.
pub const DECISIONS_FILE: &str = "decisions.jsonl";

struct LogInner {
    files: Option<JsonlFiles>,
    sinks: Vec<Box<dyn AuditSink>>,
    redaction: Redaction,
    extensions: Vec<RecordedExtension>,
}

/// A context extension the audit line records: its name on the line, and how its value is
/// read from a context's extensions and written as JSON.
#[derive(Clone)]
struct RecordedExtension {
    name: String,
    read: fn(&Extensions) -> Option<Value>,
}

impl RecordedExtension {
    /// The extension of type `T`, recorded as `name`: its `Serialize` JSON, or, should that
    /// fail, a string saying so (a line is never lost to it).
    fn of<T: Serialize + Send + Sync + 'static>(name: String) -> Self {
        RecordedExtension {
            name,
            read: |extensions| {
                let value = extensions.get::<T>()?;
                Some(serde_json::to_value(value).unwrap_or_else(|e| {
                    Value::String(format!("<this extension does not serialize: {e}>"))
                }))
            },
        }
    }
}

/// The built-in audit log (opt-in): give it to
/// [`DispatcherBuilder::audit_log`](crate::dispatch::DispatcherBuilder::audit_log). Its observer
/// runs after every other observer and its summary after every other Stop hook. Cloning shares it.
///
/// For each `tool_use` it makes one [`AuditRecord`] (for each session one [`SummaryRecord`]),
/// applies its [`Redaction`], and hands the redacted record to each sink in turn: the JSONL
/// files of its folder first ([`open`](Self::open), [`AuditLogBuilder::dir`]), then the
/// [`AuditSink`]s given to the builder. A sink that fails is reported on the observer channel
/// (`tracing` target `toolgate::observer`, the session's `observer_errors`), never fails the
/// call, and does not keep the other sinks from the record.
///
/// # The files
///
/// `dir/audit_log.jsonl` gets one line per `tool_use` block (the JSON of its [`AuditRecord`],
/// then `prev`):
///
/// ```json
/// {"ts":"2026-11-24T10:15:00Z","session_id":"sess_1","user_id":"u_001","tier":"premium",
///  "tool_use_id":"toolu_01","tool":"issue_refund","input":{"order_id":"o_1","amount_cents":2599},
///  "outcome":"blocked","is_error":true,"content":"BLOCKED: …","duration_us":41,
///  "blocked_by":"app::policy::spend_limit",
///  "hooks":[{"hook":"app::policy::premium_only","decision":"allow","duration_us":1},
///           {"hook":"app::policy::spend_limit","decision":"deny","duration_us":37}],
///  "prev":"…64 hex digits…"}
/// ```
///
/// `ts` is RFC 3339 UTC from the context's clock; `tier` the context's (absent when it has none);
/// `input` is the input as received, after normalization; `duration_us` is microseconds from the
/// start of the call to its result. Present only when they apply: `blocked_by` (the hook's full
/// path), `rewritten_by` (paths), `hooks` (every run of a PreToolUse hook in order: its path, its
/// decision, `allow`, `deny`, `rewrite`, `ask`, `failed` or `timeout`, and its duration in µs),
/// `effective_input` (after rewrites), `detail` (operator-only: panic text, error chain),
/// `content_bytes` (the full size in bytes when the content was cut). `prev` is always last.
/// Members may be added in later versions, before `prev`: read lines by member name.
///
/// `dir/session_summaries.jsonl` gets one line per session: `ts`, the members of
/// [`SessionSummary`], then `prev`.
///
/// # The hash chain
///
/// 1. Every line of each file is one JSON object followed by `\n`, whose last member is
///    `"prev"`: 64 lowercase hex digits.
/// 2. `prev` is the SHA-256 of the bytes of the line before it in the same file, **including**
///    that line's `\n` (`sed -n 7p audit_log.jsonl | sha256sum` prints line 8's `prev`).
/// 3. The first line of a file carries the hash of the last line of the file it follows: the
///    newest rotated file of the same name in the folder (`audit_log.N.jsonl`, largest `N`, `N`
///    in decimal with no sign and no leading zero: the rule of `chain_files`, features
///    `audit-verify` and `audit-report`), or [`CHAIN_START`] (64 zeros) when there is none.
///    Each file name is its own chain.
/// 4. A file opened again (another process, a new `AuditLog`) continues from its last line,
///    read back and hashed. A last line cut short by a crash (no `\n`) is ended with one before
///    the next line; it stays damaged, and the verifier reports it.
/// 5. Rotation ([`rotate`](Self::rotate), or a rename by the host or logrotate in its default
///    rename mode, to the next `NAME.N.jsonl`): a writer notices at its next line that the path
///    names a new file, opens it, and rule 3 carries the last hash over.
/// 6. Every line is written with one `write` on a file opened with `O_APPEND`, under the
///    file's exclusive lock (`File::lock`: an advisory `flock` on Unix) held while the writer
///    reads the end of the file and appends; threads of one process also queue on a mutex. So
///    several threads and several processes writing to one folder keep one chain and never
///    interleave. (A file system without locks is written without them.)
///
/// `verify_audit_dir` (feature `audit-verify`) checks these rules (`toolgate audit verify DIR`
/// prints what it finds): `ok` with the line count and the last hash, or the first line that
/// was edited, deleted, inserted or reordered. Deleting lines from the end of the newest file
/// leaves a shorter chain that verifies: only a last hash kept elsewhere (another system, a signed
/// message) catches that.
#[derive(Clone)]
pub struct AuditLog {
    inner: Arc<LogInner>,
}

impl AuditLog {
    /// Opens (creating if missing) `dir`, `dir/audit_log.jsonl` and
    /// `dir/session_summaries.jsonl`, for appending; no other sink, no redaction (see
    /// [`builder`](Self::builder) for those).
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
        AuditLog::builder().dir(dir).build()
    }

    /// Starts an audit log with sinks and redaction of your choice.
    pub fn builder() -> AuditLogBuilder {
        AuditLogBuilder::default()
    }

    /// The folder of the JSONL files, when there are files.
    pub fn dir(&self) -> Option<&Path> {
        self.inner.files.as_ref().map(JsonlFiles::dir)
    }

    /// `dir/audit_log.jsonl`, when there are files.
    pub fn audit_log_path(&self) -> Option<PathBuf> {
        self.dir().map(|d| d.join(AUDIT_LOG_FILE))
    }

    /// `dir/session_summaries.jsonl`, when there are files.
    pub fn session_summaries_path(&self) -> Option<PathBuf> {
        self.dir().map(|d| d.join(SESSION_SUMMARIES_FILE))
    }

    /// The redaction applied before any sink sees a record.
    pub fn redaction(&self) -> &Redaction {
        &self.inner.redaction
    }

    /// Rotates both files: each non-empty live file is renamed to the next `NAME.N.jsonl` (`N`
    /// one more than the largest in the folder, from 1), under its lock; the next line starts a
    /// new live file whose first `prev` is the rotated file's last hash. Returns the new paths
    /// of the files rotated (none when both were empty or there are no files).
    ///
    /// # Errors
    /// An [`io::Error`] when a rename fails or the target name is taken (kind
    /// [`io::ErrorKind::AlreadyExists`]); a file rotated before the error stays rotated.
    pub fn rotate(&self) -> io::Result<Vec<PathBuf>> {
        let Some(files) = &self.inner.files else {
            return Ok(Vec::new());
        };
        let mut rotated = Vec::new();
        for file in [files.calls(), files.sessions()] {
            rotated.extend(file.rotate()?);
        }
        Ok(rotated)
    }

    pub(crate) fn observer(&self) -> PostHookDef {
        let log = self.clone();
        PostHookDef::sync("toolgate::audit::AuditLog", move |env, record| {
            log.write_call(env, record)
        })
    }

    pub(crate) fn stop_hook(&self) -> StopHookDef {
        let log = self.clone();
        StopHookDef::new("toolgate::audit::AuditLog", move |env, summary| {
            log.write_summary(env, summary)
        })
    }

    fn write_call(&self, env: Env<'_>, r: &CallRecord<'_>) -> Result<(), HookError> {
        let ctx = env.context();
        // Taken by a write further up this thread's stack (a sink that dispatches), or the
        // thread is ending: that call fills a fresh slot.
        with_reused(&RECORD, |slot| {
            let record = match slot {
                Some(record) => {
                    record.refill(ctx, r);
                    record
                }
                None => slot.insert(AuditRecord::new(ctx, r)),
            };
            for e in &self.inner.extensions {
                if let Some(value) = (e.read)(ctx.extensions()) {
                    record.extensions.insert(e.name.clone(), value);
                }
            }
            let result = self.write_record(record);
            if record.held_bytes() > MAX_HELD_BYTES {
                *slot = None;
            }
            result
        })
    }

    /// Redacts `record` and hands it to every sink.
    fn write_record(&self, record: &mut AuditRecord) -> Result<(), HookError> {
        self.inner.redaction.apply(record);
        self.inner.deliver(|sink| sink.record(record))
    }

    fn write_summary(&self, env: Env<'_>, summary: &SessionSummary) -> Result<(), HookError> {
        let record = SummaryRecord::new(env.context().now(), summary);
        self.inner.deliver(|sink| sink.summary(&record))
    }
}

thread_local! {
    /// Per thread: the last call's record, refilled for the next call
    /// ([`AuditRecord::refill`]) instead of built and dropped each time.
    static RECORD: RefCell<Option<AuditRecord>> = const { RefCell::new(None) };
}

/// A kept record holding more text than this (a long `content`) is dropped after its call.
const MAX_HELD_BYTES: usize = 64 * 1024;

impl LogInner {
    /// Hands a record to every sink (each in its own panic guard); one error naming every sink
    /// that failed.
    fn deliver(
        &self,
        send: impl Fn(&dyn AuditSink) -> Result<(), HookError>,
    ) -> Result<(), HookError> {
        let mut failed = String::new();
        let sinks = self
            .files
            .iter()
            .map(|f| f as &dyn AuditSink)
            .chain(self.sinks.iter().map(|s| &**s));
        for sink in sinks {
            let error = match catch(|| send(sink)) {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.message().to_owned(),
                Err(panic) => format!("panicked: {panic}"),
            };
            if !failed.is_empty() {
                failed.push_str("; ");
            }
            failed.push_str(&format!("audit sink `{}` failed: {error}", sink.name()));
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(HookError::new(failed))
        }
    }
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sinks: Vec<&str> = self.inner.sinks.iter().map(|s| s.name()).collect();
        f.debug_struct("AuditLog")
            .field("dir", &self.dir())
            .field("sinks", &sinks)
            .field("redaction", &self.inner.redaction)
            .finish()
    }
}

/// Builds an [`AuditLog`]: a folder for the JSONL files, other sinks, redaction.
///
/// ```
/// use toolgate_core::audit::{AuditLog, Redaction, mask_emails};
///
/// # let dir = std::env::temp_dir().join(format!("toolgate-doc-audit-{}", std::process::id()));
/// let log = AuditLog::builder()
///     .dir(&dir)
///     .redaction(Redaction::new().field("issue_refund", "/card_number")?.text(mask_emails))
///     .build()?;
/// assert_eq!(log.audit_log_path(), Some(dir.join("audit_log.jsonl")));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
#[must_use = "call .build() to get the AuditLog"]
pub struct AuditLogBuilder {
    dir: Option<PathBuf>,
    sinks: Vec<Box<dyn AuditSink>>,
    redaction: Redaction,
    extensions: Vec<RecordedExtension>,
}

impl AuditLogBuilder {
    /// Writes the chained JSONL files to `dir` (created if missing), as the first sink.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Adds a sink, after the files and the sinks added before it.
    pub fn sink(mut self, sink: impl AuditSink) -> Self {
        self.sinks.push(Box::new(sink));
        self
    }

    /// Sets the redaction applied to every record before any sink sees it (default: none).
    pub fn redaction(mut self, redaction: Redaction) -> Self {
        self.redaction = redaction;
        self
    }

    /// Records the context's extension of type `T` on every line of a session whose context
    /// has one ([`HookContextBuilder::extension`](crate::dispatch::HookContextBuilder::extension)),
    /// as the member `name` of the line's `extensions` object, its value as `T` serializes:
    /// `"extensions": {"role": "maintainer"}`. A rule that decides on a trusted fact the host
    /// put in the context (a role, a region) then leaves that fact in the trail beside the
    /// decision. Lines are written in the order the extensions were added; a second `T` under
    /// one `name` replaces the first. Redaction does not apply to them: record only facts that
    /// may be kept as long as the trail.
    ///
    /// ```
    /// use toolgate_core::audit::{AuditLog, AuditRecord, AuditSink};
    /// use toolgate_core::dispatch::{PreHookDef, ToolDef};
    /// use toolgate_core::{Decision, Dispatcher, HookContext, ToolUse};
    ///
    /// #[derive(serde::Serialize)]
    /// #[serde(rename_all = "snake_case")]
    /// enum Role { Maintainer, Triager }
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Close {
    ///     /// The issue.
    ///     number: u64,
    /// }
    ///
    /// # #[derive(Clone, Default)] struct Lines(std::sync::Arc<std::sync::Mutex<Vec<AuditRecord>>>);
    /// # impl AuditSink for Lines {
    /// #     fn record(&self, r: &AuditRecord) -> Result<(), toolgate_core::dispatch::HookError> {
    /// #         self.0.lock().unwrap().push(r.clone()); Ok(())
    /// #     }
    /// # }
    /// # let lines = Lines::default();
    /// let log = AuditLog::builder()
    ///     # .sink(lines.clone())
    ///     .record_extension::<Role>("role")
    ///     .build()?;
    /// let dispatcher = Dispatcher::builder()
    ///     .tool(ToolDef::sync("close_issue", "Closes an issue.", |_env, c: Close| {
    ///         Ok(format!("closed #{}", c.number))
    ///     }))
    ///     .pre_hook(PreHookDef::sync("app::maintainers_close", 10, |env, _call: &ToolUse| {
    ///         Ok(match env.context().extensions().get::<Role>() {
    ///             Some(Role::Maintainer) => Decision::Allow,
    ///             _ => Decision::deny("only maintainers close issues."),
    ///         })
    ///     }))
    ///     .audit_log(log)
    ///     .build()?;
    /// let context = HookContext::builder("octocat", "sess_1").extension(Role::Maintainer).build();
    /// let call = ToolUse::new("toolu_1", "close_issue", serde_json::json!({"number": 7}));
    /// toolgate_core::block_on(dispatcher.session(context).call(&call))?;
    /// # let line = lines.0.lock().unwrap()[0].clone();
    /// // The line: {…, "user_id": "octocat", "extensions": {"role": "maintainer"}, …}
    /// assert_eq!(line.extensions["role"], "maintainer");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record_extension<T: Serialize + Send + Sync + 'static>(
        mut self,
        name: impl Into<String>,
    ) -> Self {
        let name = name.into();
        self.extensions.retain(|e| e.name != name);
        self.extensions.push(RecordedExtension::of::<T>(name));
        self
    }

    /// Opens the folder's files and builds the log.
    ///
    /// # Errors
    /// The errors of [`AuditLog::open`] for the folder; kind [`io::ErrorKind::InvalidInput`]
    /// with ``an audit log needs a folder (.dir) or a sink (.sink)`` when it has neither.
    pub fn build(self) -> io::Result<AuditLog> {
        if self.dir.is_none() && self.sinks.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an audit log needs a folder (.dir) or a sink (.sink)",
            ));
        }
        let files = self.dir.as_deref().map(JsonlFiles::open).transpose()?;
        Ok(AuditLog {
            inner: Arc::new(LogInner {
                files,
                sinks: self.sinks,
                redaction: self.redaction,
                extensions: self.extensions,
            }),
        })
    }
}
