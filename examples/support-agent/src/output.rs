//! What the replay prints: the readable lines of the calls the observer kept (`observer.rs`) and
//! the `--json` lines.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use toolgate::{
    Message,
    audit::{Outcome, SessionSummary, printable, printable_json},
};

use super::agent::{MessageReplay, SessionReplay};
use super::ledger::{LedgerFailed, Refund};
use super::observer::CallLine;
use super::transcript::Transcript;

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
pub fn decision(line: &CallLine) -> String {
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
pub fn call_line(line: &CallLine) -> String {
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
pub fn summary_line(s: &SessionSummary) -> String {
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
pub fn write_readable(
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
pub fn write_refunds(
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
pub fn write_footer(
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
pub fn write_json(
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
