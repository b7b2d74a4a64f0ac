//! What the replay prints: a PostToolUse observer that keeps what happened to each call (which
//! hook blocked or rewrote it), the readable lines and the `--json` lines.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use toolgate::{
    Message, State,
    audit::{CallRecord, Outcome, SessionSummary, printable, printable_json},
    post_hook,
};

use super::agent::{MessageReplay, SessionReplay};
use super::ledger::{LedgerFailed, Refund};
use super::transcript::Transcript;

/// What the observer keeps of one `tool_use` block (a copy of its `CallRecord`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallLine {
    /// The block's id.
    pub(crate) tool_use_id: String,
    /// The tool the model asked for.
    pub(crate) tool: String,
    /// The input as received (after normalization).
    pub(crate) input: Value,
    /// The input after rewrites, when a hook rewrote it.
    pub(crate) effective_input: Option<Value>,
    /// How the call ended.
    pub(crate) outcome: Outcome,
    /// The full path of the hook that denied (or failed).
    pub(crate) blocked_by: Option<String>,
    /// The full paths of the hooks that rewrote the input.
    pub(crate) rewritten_by: Vec<String>,
    /// Whether the answer is an error.
    pub(crate) is_error: bool,
    /// The answer's text (empty when there is no answer).
    pub(crate) content: String,
    /// The hooks that asked for a person's approval.
    pub(crate) asked_by: Vec<String>,
    /// Who approved, or who declined.
    pub(crate) approved_by: Option<String>,
    /// Who declined.
    pub(crate) denied_by: Option<String>,
    /// The answer memory replayed an earlier answer: nothing ran.
    pub(crate) replay: bool,
}

/// The calls recorded since the last [`take`](Self::take): application state for the observer.
#[derive(Debug, Default)]
pub(crate) struct CallLog {
    lines: Mutex<Vec<CallLine>>,
}

impl CallLog {
    /// Takes the lines recorded so far, oldest first.
    pub(crate) fn take(&self) -> Vec<CallLine> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Keeps a copy of every call's record for the replay's output. Runs once per `tool_use`,
/// whatever its outcome, before the audit log.
#[post_hook]
pub(crate) fn record_call(record: &CallRecord<'_>, log: State<CallLog>) {
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

/// At most `max` characters of `text` through [`printable`] (the library's rule for model text
/// shown to a person: control characters, line separators and bidirectional formatting
/// characters written as `\u{1b}`, `\u{2028}`): one line that cannot drive the terminal, cut
/// after the escapes (`…` marks a cut).
fn one_line(text: &str, max: usize) -> String {
    let shown = printable(text);
    match shown.char_indices().nth(max) {
        None => shown.into_owned(),
        Some((end, _)) => format!("{}…", &shown[..end]),
    }
}

/// The decision part of a call's line: what the hooks and the pipeline made of it, with the
/// outcome's name (`allowed, ok`; `blocked by support_agent::policy::premium_only`;
/// `rewritten by … to {…}, allowed, ok`; `failed, invalid_input`).
pub(crate) fn decision(line: &CallLine) -> String {
    let mut out = String::new();
    if line.replay {
        // The answer memory's: the hooks did not run, so there is no decision to show.
        return format!(
            "replayed: answered earlier ({}), nothing ran again",
            line.outcome
        );
    }
    if !line.rewritten_by.is_empty() {
        let _ = write!(out, "rewritten by {}", line.rewritten_by.join(", "));
        if let Some(effective) = &line.effective_input {
            let _ = write!(out, " to {}", one_line(&effective.to_string(), 80));
        }
        out.push_str(", ");
    }
    if !line.asked_by.is_empty() {
        let _ = write!(out, "asked by {}, ", line.asked_by.join(", "));
        if let Some(who) = &line.approved_by {
            let _ = write!(out, "approved by {}, ", one_line(who, 64));
        }
        if let Some(who) = &line.denied_by {
            let _ = write!(out, "denied by {}, ", one_line(who, 64));
        }
    }
    let hook = line.blocked_by.as_deref().unwrap_or("?");
    let outcome = line.outcome;
    let _ = match outcome {
        Outcome::AwaitingApproval => write!(out, "awaiting approval"),
        Outcome::Ok | Outcome::ToolError | Outcome::Panicked | Outcome::ToolTimeout => {
            write!(out, "allowed, {outcome}")
        }
        // A person declined it (named above): no hook denied it.
        Outcome::Blocked if line.denied_by.is_some() => write!(out, "blocked"),
        Outcome::Blocked => write!(out, "blocked by {hook}"),
        Outcome::HookFailed | Outcome::HookTimeout => {
            write!(out, "failed, {outcome} in {hook} (agent halted)")
        }
        _ => write!(out, "failed, {outcome}"),
    };
    out
}

/// One readable line for a call: id, tool, input, decision, result.
///
/// ```text
/// toolu_01…  lookup_user {"user_id":"u_999"} | blocked by support_agent::policy::own_records_only | BLOCKED: …
/// ```
pub(crate) fn call_line(line: &CallLine) -> String {
    // Every field the model wrote goes through `printable`: a control character or a line
    // separator in a tool name or id could otherwise break the one-line format or drive the
    // terminal.
    format!(
        "{}  {} {} | {} | {}",
        one_line(&line.tool_use_id, 64),
        one_line(&line.tool, 64),
        one_line(&line.input.to_string(), 90),
        decision(line),
        one_line(&line.content, 110)
    )
}

/// `calls 4; outcomes ok 3, blocked 1; tools lookup_user 2, …; observer errors 0`, then, when
/// the session counted tokens (`--live`), `; tokens input 2400, output 180` (and `cache write
/// N`, `cache read N` when not 0).
pub(crate) fn summary_line(s: &SessionSummary) -> String {
    let counts = |m: Vec<(String, u64)>| {
        if m.is_empty() {
            "none".to_owned()
        } else {
            m.into_iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let mut tokens = String::new();
    let u = &s.usage;
    if !u.is_zero() {
        tokens = format!(
            "; tokens input {}, output {}",
            u.input_tokens, u.output_tokens
        );
        if u.cache_creation_input_tokens > 0 {
            tokens.push_str(&format!(", cache write {}", u.cache_creation_input_tokens));
        }
        if u.cache_read_input_tokens > 0 {
            tokens.push_str(&format!(", cache read {}", u.cache_read_input_tokens));
        }
    }
    format!(
        "calls {}; outcomes {}; tools {}; observer errors {}{tokens}",
        s.calls,
        counts(
            s.outcomes
                .iter()
                .map(|(o, n)| (o.to_string(), *n))
                .collect()
        ),
        counts(
            s.tools
                .iter()
                .map(|(t, n)| (printable(t).into_owned(), *n))
                .collect()
        ),
        s.observer_errors
    )
}

/// Prints one replayed transcript in the readable form.
pub(crate) fn write_readable(
    out: &mut dyn Write,
    transcript: &Transcript,
    replay: &SessionReplay,
) -> io::Result<()> {
    let ctx = &transcript.context;
    writeln!(out, "== {}", printable(&transcript.source))?;
    if let Some(about) = &transcript.about {
        writeln!(out, "   {}", printable(about))?;
    }
    writeln!(
        out,
        "   session {}, user {} ({}), specialist {}, clock {}",
        printable(&ctx.session_id),
        printable(&ctx.user_id),
        printable(&ctx.tier),
        ctx.specialist.as_str(),
        printable(&ctx.now_text)
    )?;
    for message in &replay.messages {
        write_message(out, transcript, message)?;
    }
    write_refunds(out, &replay.refunds)?;
    writeln!(out, "   summary: {}", summary_line(&replay.summary))?;
    writeln!(out)
}

/// One `ledger:` line per refund of the book, or the line saying it could not be read.
pub(crate) fn write_refunds(
    out: &mut dyn Write,
    refunds: &Result<Vec<Refund>, LedgerFailed>,
) -> io::Result<()> {
    match refunds {
        Ok(refunds) => {
            for r in refunds {
                writeln!(
                    out,
                    "   ledger: {} refunded {} cents on {} ({}, ISO week {})",
                    r.refund_id, r.amount_cents, r.order_id, r.owner, r.week
                )?;
            }
            Ok(())
        }
        Err(e) => writeln!(out, "   ledger: cannot be read: {e}"),
    }
}

fn write_message(
    out: &mut dyn Write,
    transcript: &Transcript,
    message: &MessageReplay,
) -> io::Result<()> {
    for line in &message.calls {
        let expected = transcript.expected.get(&line.tool_use_id);
        let mark = match expected {
            // A call that waited, then was decided, ends on a later line.
            Some(e)
                if *e != line.outcome
                    && (line.outcome.is_final()
                        || !transcript.approvals.contains(&line.tool_use_id)) =>
            {
                format!("  [EXPECTED {e}]")
            }
            _ => String::new(),
        };
        writeln!(out, "   {}{mark}", call_line(line))?;
    }
    if let Some(problem) = &message.problem {
        writeln!(out, "   ! {}", printable(problem))?;
    }
    Ok(())
}

/// Prints where the audit files are and how many lines this run appended to them: one final
/// line per `tool_use` (`calls`), and one more, not final, per call that waited for a person's
/// approval (`waited`).
pub(crate) fn write_footer(
    out: &mut dyn Write,
    audit_log: &Path,
    summaries: &Path,
    (calls, replayed, waited): (u64, u64, u64),
    sessions: usize,
) -> io::Result<()> {
    let lines = calls + replayed + waited;
    let replayed = match replayed {
        0 => String::new(),
        n => format!(", {n} of them answers replayed from the answer memory"),
    };
    let waited = match waited {
        0 => String::new(),
        n => format!(", and {n} not final for calls that waited for approval"),
    };
    writeln!(
        out,
        "audit log: {} ({lines} line{} appended, one per tool_use{replayed}{waited})",
        audit_log.display(),
        if lines == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "session summaries: {} ({sessions} line{} appended, one per session)",
        summaries.display(),
        if sessions == 1 { "" } else { "s" }
    )
}

/// Prints the user message answering each assistant message, one JSON line each (`--json`).
/// An assistant message without `tool_use` blocks, or one that stopped at `max_tokens`, has no
/// answer: nothing on stdout, and a `note:` line on `err` saying why.
pub(crate) fn write_json(
    out: &mut dyn Write,
    err: &mut dyn Write,
    replay: &SessionReplay,
) -> io::Result<()> {
    for message in &replay.messages {
        match (&message.answer, &message.problem) {
            (Some(answer), _) => write_message_json(out, answer)?,
            (None, Some(problem)) => {
                let _ = writeln!(err, "note: no answer: {}", one_line(problem, 200));
            }
            (None, None) => {}
        }
    }
    Ok(())
}

/// One user message as one JSON line, through [`printable_json`]: the same value, with no
/// control character or line separator from the model's input or a tool's answer raw.
fn write_message_json(out: &mut dyn Write, answer: &Message) -> io::Result<()> {
    let json = serde_json::to_string(answer)?;
    writeln!(out, "{}", printable_json(&json))
}
