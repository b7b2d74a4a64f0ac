//! One readable line per call, and the filters `toolgate audit tail` applies.

use toolgate_core::audit::{AuditRecord, Outcome, Rfc3339, printable};

/// Which lines to show: every field set must match (exactly); an empty filter shows every line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TailFilter {
    /// The outcome, snake_case (`blocked`).
    pub(crate) outcome: Option<String>,
    /// The context's user id.
    pub(crate) user: Option<String>,
    /// The tool name.
    pub(crate) tool: Option<String>,
    /// The session id.
    pub(crate) session: Option<String>,
}

impl TailFilter {
    /// Whether `record` passes every set field.
    pub(crate) fn matches(&self, record: &AuditRecord) -> bool {
        let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        is(&self.outcome, record.outcome.as_str())
            && is(&self.user, &record.user_id)
            && is(&self.tool, &record.name)
            && is(&self.session, &record.session_id)
    }
}

/// The SGR colour of an outcome on a terminal: green for `ok`, yellow for `blocked`, cyan for a
/// call waiting for a person, red for a halt or a failed tool, none otherwise.
fn sgr(outcome: Outcome) -> Option<&'static str> {
    match outcome {
        Outcome::Ok => Some("32"),
        Outcome::Blocked => Some("33"),
        Outcome::AwaitingApproval => Some("36"),
        Outcome::HookFailed
        | Outcome::HookTimeout
        | Outcome::ToolError
        | Outcome::Panicked
        | Outcome::ToolTimeout => Some("31"),
        _ => None,
    }
}

/// A duration in µs in the unit that reads best: `850 µs`, `12.3 ms`, `2.40 s`.
pub(crate) fn duration_text(us: u64) -> String {
    match us {
        0..1_000 => format!("{us} µs"),
        1_000..1_000_000 => format!("{:.1} ms", us as f64 / 1_000.0),
        _ => format!("{:.2} s", us as f64 / 1_000_000.0),
    }
}

/// The rule a line is about, and how it reads: the hook that blocked or failed it (`rule`),
/// else the first that asked a person (`asked by`: it only asked; who decided follows), else
/// the last that rewrote it (`rule`).
fn rule_of(record: &AuditRecord) -> Option<(&'static str, &str)> {
    let blocked = record.blocked_by.as_deref().map(|h| ("rule", h));
    let asked = || {
        record
            .asked_by
            .first()
            .map(|a| ("asked by", a.hook.as_str()))
    };
    let rewrote = || record.rewritten_by.last().map(|h| ("rule", h.as_str()));
    blocked.or_else(asked).or_else(rewrote)
}

/// One line (no `\n`) for `record`: time, outcome (padded to the longest outcome's width), tool,
/// user (and tier), duration, then the rule, the person who decided and the session, each only
/// when there is one; `(replay)` on a replayed answer. With `colour`, the outcome is wrapped in
/// an SGR colour (ECMA-48) and reset; the text is otherwise the same. Every string of the line
/// is [`printable`](toolgate_core::audit::printable): control characters, line separators and
/// bidirectional formatting characters are written as `\u{1b}`, `\u{2028}`, so a hostile name
/// can neither start a second line nor move the cursor, recolour the terminal or reorder the
/// line.
///
/// ```text
/// 2026-11-24T15:40:00Z blocked           prepare_case_file  user u_004 (free)  14 µs  rule support_agent::policy::premium_only  session sess_free_02
/// ```
pub(crate) fn tail_line(record: &AuditRecord, colour: bool) -> String {
    let outcome = record.outcome.as_str();
    let padded = format!("{outcome:<17}");
    let shown = match sgr(record.outcome) {
        Some(code) if colour => {
            format!("\x1b[{code}m{outcome}\x1b[0m{}", &padded[outcome.len()..])
        }
        _ => padded,
    };
    let mut line = format!(
        "{} {shown} {}  user {}",
        Rfc3339(record.ts),
        printable(&record.name),
        printable(&record.user_id)
    );
    if let Some(tier) = &record.tier {
        line.push_str(&format!(" ({})", printable(tier)));
    }
    line.push_str("  ");
    line.push_str(&duration_text(record.duration_us));
    if let Some((label, rule)) = rule_of(record) {
        line.push_str("  ");
        line.push_str(label);
        line.push(' ');
        line.push_str(&printable(rule));
    }
    if let Some(by) = &record.approved_by {
        line.push_str("  approved by ");
        line.push_str(&printable(by));
    }
    if let Some(by) = &record.denied_by {
        line.push_str("  declined by ");
        line.push_str(&printable(by));
    }
    line.push_str("  session ");
    line.push_str(&printable(&record.session_id));
    if record.replay {
        line.push_str("  (replay)");
    }
    line
}
