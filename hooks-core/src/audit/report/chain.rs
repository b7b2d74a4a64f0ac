//! The chain check in words: one line per chain, as `toolgate audit verify` prints it and the
//! report shows it.

use std::fmt;

use crate::audit::verify::AuditVerification;
use crate::audit::{AUDIT_LOG_FILE, DECISIONS_FILE, SESSION_SUMMARIES_FILE};

/// What a chain check found, as lines of text: `audit_log.jsonl (3 files): ok, 15 lines, last
/// hash 3f…` or `audit_log.jsonl: broken: …` naming the first line at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainSummary {
    /// Whether every chain verifies.
    pub ok: bool,
    /// One line per chain, without `\n`.
    pub lines: Vec<String>,
}

/// What an operator is told after a chain verifies: the check cannot see lines deleted from
/// the end of the last file without a last hash kept elsewhere.
pub const KEEP_LAST_HASHES: &str = "keep the last hashes elsewhere: lines deleted from the end of \
                                    a file can only be caught against them";

impl ChainSummary {
    /// The lines of a folder's check ([`verify_audit_dir`](crate::audit::verify_audit_dir)).
    pub fn of(verified: &AuditVerification) -> ChainSummary {
        let mut lines = Vec::new();
        // The decisions' chain is shown where the folder has one (an inbox wrote to it).
        let decisions =
            (!verified.decisions.files.is_empty()).then_some((DECISIONS_FILE, &verified.decisions));
        for (name, chain) in [
            (AUDIT_LOG_FILE, &verified.calls),
            (SESSION_SUMMARIES_FILE, &verified.sessions),
        ]
        .into_iter()
        .chain(decisions)
        {
            let files = match chain.files.len() {
                0 | 1 => String::new(),
                n => format!(" ({n} files)"),
            };
            let verdict = if chain.status.is_ok() { "" } else { "broken: " };
            lines.push(format!("{name}{files}: {verdict}{}", chain.status));
        }
        ChainSummary {
            ok: verified.is_ok(),
            lines,
        }
    }
}

/// Every line, each with its `\n`, then [`KEEP_LAST_HASHES`] when the chain verifies.
impl fmt::Display for ChainSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        if self.ok {
            writeln!(f, "{KEEP_LAST_HASHES}")?;
        }
        Ok(())
    }
}
