//! `--what-if FILE`: today's rules, with the changes the command line asks for
//! (`--weekly-refund-limit CENTS`), over a recorded audit log; prints every call they would
//! have decided differently.
//!
//! The lines are replayed in order through the specialist's PreToolUse chain
//! (`Dispatcher::what_if`: never a tool, never an observer), each in the context its line
//! records (user, session, tier, the clock at its `ts`). The refund ledger the spending rule
//! reads is rebuilt from the log's own lines: after a line of an `issue_refund` that ran (`ok`)
//! is replayed, its refund is recorded, so the next line sees the refunds made before it. Every
//! other piece of application state (the seed's customers and orders) is today's.

use std::io::Write;
use std::path::Path;

use serde_json::Value;
use toolgate::{
    audit::{AuditRecord, Outcome, WhatIf, printable},
    dispatch::ChainVerdict,
};

use super::agent::Agent;
use super::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use super::ledger::IsoWeek;
use super::policy::{WEEKLY_REFUND_LIMIT_CENTS, WeeklyRefundLimit};
use super::seed;
use super::specialist::Specialist;

/// The rule changes a what-if replay tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RuleChanges {
    /// `--weekly-refund-limit CENTS`: the weekly refund limit instead of 50000 cents.
    pub weekly_refund_limit: Option<u64>,
}

/// What a replay found, line by line.
#[derive(Debug, Default)]
pub struct Findings {
    /// The lines replayed (skipped ones excluded).
    pub replayed: usize,
    /// `(line number, record, answer)` of every flip and undecidable line, in order.
    pub changed: Vec<(usize, AuditRecord, WhatIf)>,
    /// The lines skipped.
    pub skipped: usize,
}

/// Reads `path` (an `audit_log.jsonl`) and replays it (see the module docs).
///
/// # Errors
/// The file cannot be read, or a line is not an audit record (`line N: …`).
pub fn replay_file(
    path: &Path,
    specialist: Specialist,
    changes: RuleChanges,
) -> Result<Findings, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: AuditRecord = serde_json::from_str(line).map_err(|e| {
            format!(
                "`{}` line {}: not an audit line: {e}",
                path.display(),
                i + 1
            )
        })?;
        records.push((i + 1, record));
    }
    let limit = WeeklyRefundLimit(
        changes
            .weekly_refund_limit
            .unwrap_or(WEEKLY_REFUND_LIMIT_CENTS),
    );
    let agent = Agent::build_with_limit(specialist, limit).map_err(|e| e.to_string())?;
    let mut found = Findings::default();
    for (number, record) in records {
        let answer = toolgate::block_on(agent.dispatcher.what_if(&record));
        match &answer {
            WhatIf::Skipped { .. } => found.skipped += 1,
            WhatIf::Unchanged => found.replayed += 1,
            _ => {
                found.replayed += 1;
                found.changed.push((number, record.clone(), answer));
            }
        }
        rebuild_ledger(&agent, &record);
    }
    Ok(found)
}

/// Records the refund of a line whose `issue_refund` ran (`ok`), with the input the tool got,
/// in the week of the line's `ts`.
fn rebuild_ledger(agent: &Agent, record: &AuditRecord) {
    if record.name != "issue_refund" || record.outcome != Outcome::Ok || record.replay {
        return;
    }
    let input = record.effective_input.as_ref().unwrap_or(&record.input);
    let (Some(order), Some(amount), Ok(week)) = (
        input
            .get("order_id")
            .and_then(Value::as_str)
            .and_then(seed::order),
        input.get("amount_cents").and_then(Value::as_u64),
        IsoWeek::of(record.ts),
    ) else {
        return;
    };
    // A refund the ledger refuses today (more than the order has left) is left out, as the
    // tool would have refused it; the weekly limit is the rule's to try, not the history's.
    let _ = toolgate::block_on(agent.ledger.record_refund(order, amount, week, u64::MAX));
}

/// `--what-if FILE`: prints a header, then one line per changed decision.
pub fn run(
    path: &Path,
    specialist: Specialist,
    changes: RuleChanges,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let found = match replay_file(path, specialist, changes) {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(err, "error: --what-if: {e}");
            return if e.starts_with("cannot read") {
                EXIT_FAILED
            } else {
                EXIT_BAD_INPUT
            };
        }
    };
    match out.write_all(render(path, changes, &found).as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = writeln!(err, "error: cannot write the output: {e}");
            }
            EXIT_FAILED
        }
    }
}

/// The report: what was tried, the counts, then each changed line.
pub fn render(path: &Path, changes: RuleChanges, found: &Findings) -> String {
    let rule = match changes.weekly_refund_limit {
        Some(cents) => {
            format!("weekly refund limit {cents} cents (today {WEEKLY_REFUND_LIMIT_CENTS})")
        }
        None => "today's rules, unchanged".to_owned(),
    };
    let flips = found
        .changed
        .iter()
        .filter(|(_, _, w)| matches!(w, WhatIf::Flip(_)))
        .count();
    let undecidable = found.changed.len() - flips;
    let mut text = format!(
        "what-if over {}: {rule}\n{} calls replayed, {} skipped; {flips} flip{}, {undecidable} \
         undecidable\n",
        path.display(),
        found.replayed,
        found.skipped,
        if flips == 1 { "" } else { "s" }
    );
    for (number, record, answer) in &found.changed {
        let input = record.effective_input.as_ref().unwrap_or(&record.input);
        let what = match answer {
            WhatIf::Flip(flip) => format!(
                "{} ({} → {}){}",
                flip.change,
                flip.was,
                today(&flip.now),
                flip.hook
                    .as_deref()
                    .map(|h| format!(", by {h}"))
                    .unwrap_or_default()
            ),
            WhatIf::Undecidable { redacted, now } => format!(
                "undecidable: {} redacted; today {} on the placeholder",
                redacted.join(", "),
                today(now)
            ),
            _ => continue,
        };
        // The recorded names and input are the model's: the line goes through `printable`.
        let line = format!(
            "line {number}: {} {} {} {} {}: {what}",
            toolgate::audit::Rfc3339(record.ts),
            record.session_id,
            record.tool_use_id,
            record.name,
            input
        );
        text.push_str(&printable(&line));
        text.push('\n');
    }
    text
}

/// What the chain answers today, in a word: `allowed`, or the refusal's outcome.
fn today(now: &ChainVerdict) -> String {
    match now.outcome() {
        None => "allowed".to_owned(),
        Some(outcome) => outcome.as_str().to_owned(),
    }
}
