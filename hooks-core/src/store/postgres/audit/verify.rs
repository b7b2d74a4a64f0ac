//! [`PostgresAuditSink::verify`] and [`PostgresAuditSink::export_jsonl`]: both chains read back
//! a page at a time, checked with the audit files' verifier, or written out as the files.

use super::super::conn::{Lane, Pool, db_error};
use super::{Chain, PostgresAuditSink};
use crate::audit::chain::{CHAIN_START, hash, hex_string, parse_hex};
use crate::audit::verify::{ChainLines, ChainStatus, KEEP_LAST_HASHES, verify_lines};
use crate::store::error::{StoreError, StoreErrorKind};
use std::collections::VecDeque;
use std::fmt;
use std::fs::OpenOptions;
use std::future::Future;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

/// The rows a verification or an export reads per statement.
const PAGE: i64 = 1000;

impl PostgresAuditSink {
    /// Verifies the chains in the database (`audit_log`, `session_summaries`, `decisions`), with
    /// the audit files' verifier's rules and code: each chain read in `seq` order from its start
    /// ([`CHAIN_START`]), `ok` with its line count and last hash, or the first line edited,
    /// deleted, inserted or reordered (line numbers count from 1 in the chain, as in the export
    /// of [`export_jsonl`](Self::export_jsonl); the break's `file` is
    /// `postgres:toolgate_audit/<chain>`). With `kept`, the heads kept elsewhere from an earlier
    /// verification, it also finds what the chain alone cannot show: lines deleted from the end
    /// ([`HeadCheck::Truncated`]) or the kept last line changed ([`HeadCheck::Changed`]).
    ///
    /// Reads the chains a page of 1 000 rows at a time (memory stays small), on a thread of the
    /// store's runtime; the future may be awaited on any executor. Lines appended while it runs
    /// may or may not be counted.
    ///
    /// # Errors
    /// A [`StoreError`] when the database cannot be read.
    pub fn verify(
        &self,
        kept: Option<&AuditHeads>,
    ) -> impl Future<Output = Result<PostgresVerification, StoreError>> + Send + 'static {
        let kept = kept.cloned();
        let reader = self.reader();
        let handle = self.store.runtime().handle().clone();
        self.store.runtime().run("verify", async move {
            let task = handle.spawn_blocking(move || reader.verify(kept.as_ref()));
            task.await.unwrap_or_else(|e| {
                Err(StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("PostgreSQL: verify: the check failed: {e}"),
                ))
            })
        })
    }

    /// Writes the chains to `dir` (created if missing) as the audit files: `audit_log.jsonl`,
    /// `session_summaries.jsonl` and, when the inbox wrote any, `decisions.jsonl`, each row's
    /// line and its `\n`, in `seq` order, byte for byte, so the files' verifier
    /// ([`verify_audit_dir`](crate::audit::verify_audit_dir)) checks them. Returns the number
    /// of lines written to the first two (calls, sessions).
    ///
    /// # Errors
    /// A [`StoreError`] when the database cannot be read, or a file cannot be made; a file
    /// that exists is not overwritten (kind `AlreadyExists` in the message).
    pub fn export_jsonl(
        &self,
        dir: impl AsRef<Path>,
    ) -> impl Future<Output = Result<(u64, u64), StoreError>> + Send + 'static {
        let dir = dir.as_ref().to_path_buf();
        let reader = self.reader();
        let handle = self.store.runtime().handle().clone();
        self.store.runtime().run("export", async move {
            let task = handle.spawn_blocking(move || reader.export(&dir));
            task.await.unwrap_or_else(|e| {
                Err(StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("PostgreSQL: export: it failed: {e}"),
                ))
            })
        })
    }

    fn reader(&self) -> Reader {
        Reader {
            pool: self.store.pool(),
            handle: self.store.runtime().handle().clone(),
        }
    }
}

/// What to keep elsewhere of a verified chain (another system, a signed message) to catch, at
/// a later verification, lines deleted from its end or its last line changed: its line count
/// and the SHA-256 (hex) of its last line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// Lines in the chain.
    pub lines: u64,
    /// The SHA-256 (64 lowercase hex digits) of its last line with its `\n`
    /// ([`CHAIN_START`] for an empty chain).
    pub last_hash: String,
}

/// The heads of the chains ([`PostgresVerification::heads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditHeads {
    /// `audit_log`'s.
    pub calls: ChainHead,
    /// `session_summaries`'.
    pub sessions: ChainHead,
    /// `decisions`' (the approval inbox's; 0 lines and [`CHAIN_START`] where it has none).
    pub decisions: ChainHead,
}

/// Whether a kept [`ChainHead`] still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeadCheck {
    /// No head was given.
    NotGiven,
    /// The chain still has the kept line, with the kept hash, at the kept place (lines may
    /// have been appended after it).
    Holds,
    /// The chain is shorter than the kept head: lines were deleted from its end.
    Truncated {
        /// The head kept.
        kept: ChainHead,
        /// The lines the chain has now.
        lines: u64,
    },
    /// The line at the kept head's place has another hash: it (and maybe lines before it) was
    /// changed, or the chain was rewritten.
    Changed {
        /// The head kept.
        kept: ChainHead,
        /// The hash of the line at its place now.
        found: String,
    },
}

impl fmt::Display for HeadCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadCheck::NotGiven => f.write_str("no head kept to compare with"),
            HeadCheck::Holds => f.write_str("the kept head holds"),
            HeadCheck::Truncated { kept, lines } => write!(
                f,
                "the chain has {lines} lines, fewer than the {} of the kept head: lines were \
                 deleted from its end",
                kept.lines
            ),
            HeadCheck::Changed { kept, found } => write!(
                f,
                "line {} has hash {found}, not the kept head's {}: the line was changed",
                kept.lines, kept.last_hash
            ),
        }
    }
}

/// One chain in the database: what the files' rules find, and the kept head's check.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresChain {
    /// The chain's name (`audit_log`, `session_summaries`).
    pub chain: &'static str,
    /// The verdict of the files' rules ([`verify_audit_dir`](crate::audit::verify_audit_dir)'s).
    pub status: ChainStatus,
    /// The kept head's check ([`HeadCheck::NotGiven`] without one, or when the chain breaks).
    pub head: HeadCheck,
}

impl PostgresChain {
    /// Whether the chain verifies and the kept head (if any) holds.
    pub fn is_ok(&self) -> bool {
        self.status.is_ok() && matches!(self.head, HeadCheck::NotGiven | HeadCheck::Holds)
    }

    /// The head to keep for the next verification, when the chain verifies.
    pub fn head(&self) -> Option<ChainHead> {
        match &self.status {
            ChainStatus::Ok { lines, last_hash } => Some(ChainHead {
                lines: *lines,
                last_hash: last_hash.clone(),
            }),
            ChainStatus::Broken(_) => None,
        }
    }
}

impl fmt::Display for PostgresChain {
    /// `audit_log: ok, 15 lines, last hash 3f…` with the head's check, or `audit_log: broken:`
    /// and the break (as a folder's check reads).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.status.is_ok() { "" } else { "broken: " };
        write!(f, "{}: {verdict}{}", self.chain, self.status)?;
        match self.head {
            HeadCheck::NotGiven => Ok(()),
            ref head => write!(f, "; {head}"),
        }
    }
}

/// What [`PostgresAuditSink::verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresVerification {
    /// `audit_log`.
    pub calls: PostgresChain,
    /// `session_summaries`.
    pub sessions: PostgresChain,
    /// `decisions` (the approval inbox's people's decisions).
    pub decisions: PostgresChain,
}

/// One line per chain, each with its `\n` (`decisions` only when it has lines or breaks), then,
/// when every chain verifies, the reminder a folder's check ends with too
/// ([`KEEP_LAST_HASHES`](crate::audit::KEEP_LAST_HASHES)): what `toolgate audit verify
/// postgres://…` prints.
impl fmt::Display for PostgresVerification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.calls)?;
        writeln!(f, "{}", self.sessions)?;
        let empty = matches!(self.decisions.status, ChainStatus::Ok { lines: 0, .. });
        if !empty || !self.decisions.is_ok() {
            writeln!(f, "{}", self.decisions)?;
        }
        if self.is_ok() {
            writeln!(f, "{KEEP_LAST_HASHES}")?;
        }
        Ok(())
    }
}

impl PostgresVerification {
    /// Whether every chain verifies and its kept head (if any) holds.
    pub fn is_ok(&self) -> bool {
        self.calls.is_ok() && self.sessions.is_ok() && self.decisions.is_ok()
    }

    /// The heads, to keep for the next verification, when every chain verifies.
    pub fn heads(&self) -> Option<AuditHeads> {
        Some(AuditHeads {
            calls: self.calls.head()?,
            sessions: self.sessions.head()?,
            decisions: self.decisions.head()?,
        })
    }
}

/// Reads chains a page at a time, from a thread that may block (one of the runtime's blocking
/// threads): each page is a statement sent to the runtime.
struct Reader {
    pool: Arc<Pool>,
    handle: tokio::runtime::Handle,
}

/// Runs `work` on the runtime from a blocking thread and waits for its answer.
fn wait<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let _ = tx.send(work.await);
    });
    rx.recv().unwrap_or_else(|_| {
        Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "PostgreSQL: the store's runtime has stopped",
        ))
    })
}

impl Reader {
    fn lines(&self, chain: Chain) -> RowLines<'_> {
        RowLines {
            reader: self,
            chain,
            after: 0,
            page: VecDeque::new(),
            done: false,
        }
    }

    fn verify(&self, kept: Option<&AuditHeads>) -> Result<PostgresVerification, StoreError> {
        let calls = self.verify_chain(Chain::Calls, kept.map(|k| &k.calls))?;
        let sessions = self.verify_chain(Chain::Sessions, kept.map(|k| &k.sessions))?;
        let decisions = self.verify_chain(Chain::Decisions, kept.map(|k| &k.decisions))?;
        Ok(PostgresVerification {
            calls,
            sessions,
            decisions,
        })
    }

    fn verify_chain(
        &self,
        chain: Chain,
        kept: Option<&ChainHead>,
    ) -> Result<PostgresChain, StoreError> {
        let start = parse_hex(CHAIN_START).unwrap_or_default();
        let status =
            verify_lines(&chain.label(), start, || Ok(self.lines(chain))).map_err(|e| {
                StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("PostgreSQL: verify: {e}"),
                )
            })?;
        let head = match (&status, kept) {
            (ChainStatus::Ok { lines, last_hash }, Some(kept)) => {
                self.check_head(chain, *lines, last_hash, kept)?
            }
            _ => HeadCheck::NotGiven,
        };
        Ok(PostgresChain {
            chain: chain.name(),
            status,
            head,
        })
    }

    /// Whether `kept` holds on a chain of `lines` lines whose last hash is `last_hash`.
    fn check_head(
        &self,
        chain: Chain,
        lines: u64,
        last_hash: &str,
        kept: &ChainHead,
    ) -> Result<HeadCheck, StoreError> {
        if lines < kept.lines {
            return Ok(HeadCheck::Truncated {
                kept: kept.clone(),
                lines,
            });
        }
        let found = if lines == kept.lines {
            last_hash.to_owned()
        } else if kept.lines == 0 {
            CHAIN_START.to_owned()
        } else {
            let pool = Arc::clone(&self.pool);
            let at = (kept.lines - 1) as i64;
            let line: Vec<u8> = wait(&self.handle, async move {
                let what = "verify: reading the kept head's line";
                let rows = pool
                    .query(Lane::Shared, &what, |st| &st.line_at, &[&chain.name(), &at])
                    .await?;
                rows.first()
                    .map(|r| r.try_get::<_, Vec<u8>>(0))
                    .transpose()
                    .map_err(|e| db_error(what, e))
                    .map(Option::unwrap_or_default)
            })?;
            let mut text = line;
            text.push(b'\n');
            hex_string(&hash(&text))
        };
        Ok(if found == kept.last_hash {
            HeadCheck::Holds
        } else {
            HeadCheck::Changed {
                kept: kept.clone(),
                found,
            }
        })
    }

    fn export(&self, dir: &Path) -> Result<(u64, u64), StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| export_failed(e, dir))?;
        let calls = self.export_chain(Chain::Calls, dir)?;
        let sessions = self.export_chain(Chain::Sessions, dir)?;
        self.export_chain(Chain::Decisions, dir)?;
        Ok((calls, sessions))
    }

    /// Writes `chain` to its file in `dir`; the `decisions` chain only when it has a line (a
    /// folder without an inbox has no `decisions.jsonl`). Returns its number of lines.
    fn export_chain(&self, chain: Chain, dir: &Path) -> Result<u64, StoreError> {
        let path = dir.join(chain.file());
        let failed = |e: io::Error| export_failed(e, &path);
        let mut lines = self.lines(chain);
        let mut line = Vec::new();
        let first = lines.next_line(&mut line).map_err(failed)?;
        if !first && chain == Chain::Decisions {
            return Ok(0);
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(failed)?;
        let mut out = BufWriter::new(file);
        let mut count = 0;
        let mut more = first;
        while more {
            out.write_all(&line).map_err(failed)?;
            line.clear();
            count += 1;
            more = lines.next_line(&mut line).map_err(failed)?;
        }
        out.into_inner()
            .map_err(|e| failed(e.into_error()))?
            .sync_all()
            .map_err(failed)?;
        Ok(count)
    }
}

/// An export that failed at `path`, the I/O error its source.
fn export_failed(e: io::Error, path: &Path) -> StoreError {
    StoreError::new(
        StoreErrorKind::Unavailable,
        format!("PostgreSQL: export to `{}`: {e}", path.display()),
    )
    .with_source(e)
}

/// A chain's lines from the database, in `seq` order, each with its `\n`, a page at a time.
struct RowLines<'a> {
    reader: &'a Reader,
    chain: Chain,
    /// The `seq` of the last row read.
    after: i64,
    page: VecDeque<Vec<u8>>,
    done: bool,
}

impl RowLines<'_> {
    fn fetch(&mut self) -> io::Result<()> {
        let (pool, chain, after) = (Arc::clone(&self.reader.pool), self.chain, self.after);
        let rows = wait(&self.reader.handle, async move {
            let what = "reading the audit lines";
            let rows = pool
                .query(
                    Lane::Shared,
                    &what,
                    |st| &st.lines_after,
                    &[&chain.name(), &after, &PAGE],
                )
                .await?;
            rows.iter()
                .map(|r| Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, Vec<u8>>(1)?)))
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()
                .map_err(|e| db_error(what, e))
        })
        .map_err(|e| io::Error::other(e.message().to_owned()))?;
        self.done = (rows.len() as i64) < PAGE;
        if let Some((seq, _)) = rows.last() {
            self.after = *seq;
        }
        self.page.extend(rows.into_iter().map(|(_, line)| line));
        Ok(())
    }
}

impl ChainLines for RowLines<'_> {
    fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<bool> {
        if self.page.is_empty() && !self.done {
            self.fetch()?;
        }
        match self.page.pop_front() {
            Some(line) => {
                buf.extend_from_slice(&line);
                buf.push(b'\n');
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
