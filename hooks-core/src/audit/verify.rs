//! The verifier of the hash chain ([`verify_audit_dir`], [`verify_audit_file`]): `ok` with the
//! line count and the last hash, or the first line where the chain breaks.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::audit::chain::{Hash, chain_files, hash, hex_string, parse_hex};
use crate::audit::{AUDIT_LOG_FILE, DECISIONS_FILE, SESSION_SUMMARIES_FILE};

/// What [`verify_audit_dir`] found: one [`ChainVerification`] per file name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditVerification {
    /// `audit_log.jsonl` and its rotated files.
    pub calls: ChainVerification,
    /// `session_summaries.jsonl` and its rotated files.
    pub sessions: ChainVerification,
    /// `decisions.jsonl` (the approval inbox's decisions, feature `inbox`) and its rotated
    /// files: an empty chain in a folder that has none.
    pub decisions: ChainVerification,
}

impl AuditVerification {
    /// Whether every chain verifies.
    pub fn is_ok(&self) -> bool {
        self.calls.status.is_ok() && self.sessions.status.is_ok() && self.decisions.status.is_ok()
    }

    /// One line per chain, without `\n`: the live file's name, the number of files when there
    /// are several, then the verdict: `audit_log.jsonl (3 files): ok, 15 lines, last hash 3f…`,
    /// or `audit_log.jsonl: broken: line 8 does not follow line 7: …` naming the first line at
    /// fault. `decisions.jsonl`'s line only where the folder has one (an approval inbox wrote
    /// it).
    pub fn lines(&self) -> Vec<String> {
        let decisions =
            (!self.decisions.files.is_empty()).then_some((DECISIONS_FILE, &self.decisions));
        [
            (AUDIT_LOG_FILE, &self.calls),
            (SESSION_SUMMARIES_FILE, &self.sessions),
        ]
        .into_iter()
        .chain(decisions)
        .map(|(name, chain)| {
            let files = match chain.files.len() {
                0 | 1 => String::new(),
                n => format!(" ({n} files)"),
            };
            let verdict = if chain.status.is_ok() { "" } else { "broken: " };
            format!("{name}{files}: {verdict}{}", chain.status)
        })
        .collect()
    }
}

/// What an operator is told after a chain verifies: the check cannot see lines deleted from
/// the end of the last file without a last hash kept elsewhere.
pub const KEEP_LAST_HASHES: &str = "keep the last hashes elsewhere: lines deleted from the end of \
                                    a file can only be caught against them";

/// The [`lines`](AuditVerification::lines), each with its `\n`, then [`KEEP_LAST_HASHES`] when
/// every chain verifies: what `toolgate audit verify DIR` prints.
impl fmt::Display for AuditVerification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.lines() {
            writeln!(f, "{line}")?;
        }
        if self.is_ok() {
            writeln!(f, "{KEEP_LAST_HASHES}")?;
        }
        Ok(())
    }
}

/// One chain: its files, oldest first, and what the verifier found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainVerification {
    /// The files checked, in chain order: the rotated files by number, then the live file (when
    /// it exists).
    pub files: Vec<PathBuf>,
    /// The verdict.
    pub status: ChainStatus,
}

/// The verdict on one chain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainStatus {
    /// Every line follows the one before it.
    Ok {
        /// Lines checked, every file of the chain together.
        lines: u64,
        /// The SHA-256 (hex) of the last line ([`CHAIN_START`](crate::audit::CHAIN_START) when
        /// there is none): keep it elsewhere, since lines deleted from the end leave a valid,
        /// shorter chain that only this hash can show.
        last_hash: String,
    },
    /// The chain breaks.
    Broken(ChainBreak),
}

impl ChainStatus {
    /// Whether the chain verifies.
    pub fn is_ok(&self) -> bool {
        matches!(self, ChainStatus::Ok { .. })
    }
}

impl fmt::Display for ChainStatus {
    /// `ok, 15 lines, last hash 3f…` or the break's sentence.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainStatus::Ok { lines, last_hash } => write!(
                f,
                "ok, {lines} line{}, last hash {last_hash}",
                if *lines == 1 { "" } else { "s" }
            ),
            ChainStatus::Broken(b) => b.fmt(f),
        }
    }
}

/// Where a chain breaks: the first line at fault, counted from 1 in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainBreak {
    /// The file.
    pub file: PathBuf,
    /// The first line at fault (1-based, in `file`).
    pub line: u64,
    /// What is wrong.
    pub problem: ChainProblem,
}

/// What is wrong at a [`ChainBreak`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainProblem {
    /// The line is not a JSON object whose last member is `"prev"` with 64 lowercase hex
    /// digits (edited by hand, or cut short by a crash).
    Unreadable,
    /// The file's last line has no `\n` (a write cut short).
    Torn,
    /// The file's first line does not carry the hash it should (the last line of the rotated file
    /// before it, or [`CHAIN_START`](crate::audit::CHAIN_START)): lines were deleted from its
    /// start, or the file before it is missing, edited or out of place.
    FirstLine {
        /// What the first line should carry.
        expected: String,
        /// What it carries.
        found: String,
    },
    /// The line's `prev` is not the hash of the line before it, nor of any line of the file:
    /// the line before it was edited, or lines were deleted between them.
    DoesNotFollow,
    /// The lines from [`ChainBreak::line`] to `until` (inclusive) were inserted: the line
    /// after them follows the line before them.
    Inserted {
        /// The last inserted line.
        until: u64,
    },
    /// The line follows a line that comes after it in the file: lines were reordered.
    Reordered {
        /// The line it follows.
        follows: u64,
    },
}

impl fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.line;
        match &self.problem {
            ChainProblem::Unreadable => write!(
                f,
                "line {n} is not a JSON object ending with a \"prev\" hash (edited, or cut short)"
            ),
            ChainProblem::Torn => write!(f, "line {n} has no newline (a write was cut short)"),
            ChainProblem::FirstLine { expected, found } => write!(
                f,
                "line {n} does not start the file's chain: its prev is {found}, expected \
                 {expected} (lines were deleted from the start, or the file before it is \
                 missing or changed)"
            ),
            ChainProblem::DoesNotFollow => write!(
                f,
                "line {n} does not follow line {}: line {} was edited, or lines were deleted \
                 between them",
                n - 1,
                n - 1
            ),
            ChainProblem::Inserted { until } if *until == n => write!(
                f,
                "line {n} was inserted: line {} follows line {}",
                until + 1,
                n - 1
            ),
            ChainProblem::Inserted { until } => write!(
                f,
                "lines {n} to {until} were inserted: line {} follows line {}",
                until + 1,
                n - 1
            ),
            ChainProblem::Reordered { follows } => write!(
                f,
                "line {n} follows line {follows}, which comes after it: lines were reordered"
            ),
        }?;
        write!(f, " in {}", self.file.display())
    }
}

/// Verifies the audit folder `dir`: `audit_log.jsonl`, `session_summaries.jsonl` and
/// `decisions.jsonl` (the approval inbox's), each with its rotated files (`audit_log.1.jsonl`,
/// `audit_log.2.jsonl`, …, oldest first), as one chain per name that starts from
/// [`CHAIN_START`](crate::audit::CHAIN_START). A name with no file at all is an empty chain
/// (`ok`, 0 lines).
///
/// The rule checked is written in the [audit module](crate::audit::AuditLog#the-hash-chain). Each
/// file is read once, line by line (a second time where a chain breaks, to say how).
///
/// # Errors
/// An [`io::Error`] when `dir` or a file of it cannot be read (the message names the path); a
/// `dir` that is not a folder is [`io::ErrorKind::NotADirectory`].
pub fn verify_audit_dir(dir: impl AsRef<Path>) -> io::Result<AuditVerification> {
    verify_audit_dir_with_progress(dir, &|_| {})
}

/// [`verify_audit_dir`], telling `progress` how many bytes it has read as it goes (a number of
/// bytes since the last call, at least every 64 KiB and at the end of each file), so a long
/// check can show a progress bar against the files' sizes. Where a chain breaks, the file is read
/// a second time to say how, and counted again.
///
/// # Errors
/// As [`verify_audit_dir`].
pub fn verify_audit_dir_with_progress(
    dir: impl AsRef<Path>,
    progress: &dyn Fn(u64),
) -> io::Result<AuditVerification> {
    let dir = dir.as_ref();
    if !dir.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("`{}` is not a folder", dir.display()),
        ));
    }
    Ok(AuditVerification {
        calls: verify_name(dir, AUDIT_LOG_FILE, progress)?,
        sessions: verify_name(dir, SESSION_SUMMARIES_FILE, progress)?,
        decisions: verify_name(dir, DECISIONS_FILE, progress)?,
    })
}

fn verify_name(dir: &Path, name: &str, progress: &dyn Fn(u64)) -> io::Result<ChainVerification> {
    let files = chain_files(dir, name).map_err(|e| named(e, dir))?;
    let mut start = [0u8; 32];
    let mut lines = 0;
    for file in &files {
        let counted = verify_lines(file, start, || {
            File::open(file)
                .map(|f| Counted::new(BufReader::new(f), progress))
                .map_err(|e| named(e, file))
        })?;
        match counted {
            ChainStatus::Ok {
                lines: n,
                last_hash,
            } => {
                lines += n;
                start = parse_hex(&last_hash).unwrap_or_default();
            }
            broken => {
                return Ok(ChainVerification {
                    files,
                    status: broken,
                });
            }
        }
    }
    Ok(ChainVerification {
        files,
        status: ChainStatus::Ok {
            lines,
            last_hash: hex_string(&start),
        },
    })
}

/// Verifies one file whose first line must carry `start` (64 hex digits:
/// [`CHAIN_START`](crate::audit::CHAIN_START), or the last hash of the file before it, for a host
/// that keeps rotated files elsewhere).
///
/// # Errors
/// An [`io::Error`] naming the path when the file cannot be read; kind
/// [`io::ErrorKind::InvalidInput`] when `start` is not 64 lowercase hex digits.
pub fn verify_audit_file(path: impl AsRef<Path>, start: &str) -> io::Result<ChainStatus> {
    let start = parse_hex(start).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{start}` is not a SHA-256 hash (64 lowercase hex digits)"),
        )
    })?;
    verify_file_from(path.as_ref(), start)
}

/// The member the verifier reads; serde skips the others.
#[derive(Deserialize)]
struct Prev<'a> {
    #[serde(borrow)]
    prev: &'a str,
}

/// The `prev` of `line` (its `\n` removed), when the line is a JSON object whose last member
/// is `"prev"` with 64 lowercase hex digits.
fn prev_of(line: &[u8]) -> Option<Hash> {
    let suffix_len = "\"prev\":\"\"}".len() + 64;
    let tail = line.get(line.len().checked_sub(suffix_len)?..)?;
    if !tail.starts_with(b"\"prev\":\"") || !tail.ends_with(b"\"}") || line.first() != Some(&b'{') {
        return None;
    }
    let before = line.get(line.len() - suffix_len - 1)?;
    if *before != b',' && *before != b'{' {
        return None;
    }
    let parsed: Prev<'_> = serde_json::from_slice(line).ok()?;
    parse_hex(parsed.prev)
}

fn verify_file_from(path: &Path, start: Hash) -> io::Result<ChainStatus> {
    verify_lines(path, start, || {
        File::open(path)
            .map(BufReader::new)
            .map_err(|e| named(e, path))
    })
}

/// A file's lines with the bytes read told to a progress callback (see
/// [`verify_audit_dir_with_progress`]).
struct Counted<'p, R> {
    inner: R,
    report: &'p dyn Fn(u64),
    pending: u64,
}

impl<'p, R> Counted<'p, R> {
    fn new(inner: R, report: &'p dyn Fn(u64)) -> Self {
        Counted {
            inner,
            report,
            pending: 0,
        }
    }
}

impl<R: BufRead> ChainLines for Counted<'_, R> {
    fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<bool> {
        let read = self.inner.read_until(b'\n', buf)?;
        self.pending += read as u64;
        if self.pending >= 64 * 1024 || (read == 0 && self.pending > 0) {
            (self.report)(self.pending);
            self.pending = 0;
        }
        Ok(read > 0)
    }
}

/// A chain's lines in order, from a file or another store of them (a database's rows).
pub(crate) trait ChainLines {
    /// Appends the next line to `buf`, its `\n` included when it has one; `false` at the end.
    fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<bool>;
}

impl<R: BufRead> ChainLines for R {
    fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<bool> {
        Ok(self.read_until(b'\n', buf)? > 0)
    }
}

/// Verifies the chain that `open` reads (from its start, each time it is called; a second time
/// where the chain breaks, to say how), whose first line must carry `start`; `label` names it in
/// a break ([`ChainBreak::file`]) and in read errors.
pub(crate) fn verify_lines<L: ChainLines>(
    label: &Path,
    start: Hash,
    mut open: impl FnMut() -> io::Result<L>,
) -> io::Result<ChainStatus> {
    let mut reader = open()?;
    let mut line = Vec::new();
    let mut expected = start;
    let mut n = 0u64;
    let broken = |line, problem| {
        Ok(ChainStatus::Broken(ChainBreak {
            file: label.to_path_buf(),
            line,
            problem,
        }))
    };
    loop {
        line.clear();
        if !reader.next_line(&mut line).map_err(|e| named(e, label))? {
            break;
        }
        n += 1;
        let Some(body) = line.strip_suffix(b"\n") else {
            return broken(n, ChainProblem::Torn);
        };
        let Some(prev) = prev_of(body) else {
            return broken(n, ChainProblem::Unreadable);
        };
        if prev != expected {
            let problem = if n == 1 {
                ChainProblem::FirstLine {
                    expected: hex_string(&expected),
                    found: hex_string(&prev),
                }
            } else {
                return classify(label, n, prev, open()?);
            };
            return broken(n, problem);
        }
        expected = hash(&line);
    }
    Ok(ChainStatus::Ok {
        lines: n,
        last_hash: hex_string(&expected),
    })
}

/// Line `at` (> 1) carries `prev`, which is not the hash of line `at - 1`: reads the chain again
/// to say whether `prev` is the hash of another of its lines.
fn classify(
    label: &Path,
    at: u64,
    prev: Hash,
    mut reader: impl ChainLines,
) -> io::Result<ChainStatus> {
    let mut line = Vec::new();
    let mut lines: HashMap<Hash, u64> = HashMap::new();
    let mut n = 0u64;
    loop {
        line.clear();
        if !reader.next_line(&mut line).map_err(|e| named(e, label))? {
            break;
        }
        n += 1;
        lines.entry(hash(&line)).or_insert(n);
    }
    let (line, problem) = match lines.get(&prev) {
        Some(&j) if j < at - 1 => (j + 1, ChainProblem::Inserted { until: at - 1 }),
        Some(&j) if j > at => (at, ChainProblem::Reordered { follows: j }),
        _ => (at, ChainProblem::DoesNotFollow),
    };
    Ok(ChainStatus::Broken(ChainBreak {
        file: label.to_path_buf(),
        line,
        problem,
    }))
}

fn named(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("cannot read `{}`: {e}", path.display()))
}
