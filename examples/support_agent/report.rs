//! `--report DIR`: one self-contained HTML page from the audit files of `DIR` (rotated ones
//! included, oldest first): calls per outcome per day (a table and an inline SVG chart), the
//! blocked rate per rule and per tool, the slowest rules (from each line's `hooks`), the latest
//! halts with their detail, token usage per session where the host recorded it, and whether
//! the hash chain verifies. No script, no network at view time: the page is HTML and inline CSS
//! and SVG only.
//!
//! Every figure sits in an element with a `data-k` key (`<td data-k="calls:ok">12</td>`), so a
//! test reads the page's numbers back and compares them with the log's.
//!
//! Lines of a replayed answer (`"replay": true`) and lines that are not final (an outcome this
//! build does not know, such as one awaiting approval) are left out of every count.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate::audit::{AUDIT_LOG_FILE, AuditRecord, Outcome, Rfc3339, SESSION_SUMMARIES_FILE};

use super::cli::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};

/// The report's file name inside `DIR`.
pub(crate) const REPORT_FILE: &str = "report.html";

/// How many halts the page lists, newest first.
const LATEST_HALTS: usize = 10;

/// What the page shows, computed from the files.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    /// Calls counted (replayed and not-final lines left out).
    pub(crate) calls: u64,
    /// Lines left out: replayed answers and not-final outcomes.
    pub(crate) left_out: u64,
    /// Outcome → calls.
    pub(crate) outcomes: BTreeMap<String, u64>,
    /// Day (`2026-11-24`) → outcome → calls.
    pub(crate) per_day: BTreeMap<String, BTreeMap<String, u64>>,
    /// Rule → (runs, denials), from the `hooks` runs (a rule that blocked without a recorded
    /// run counts from `blocked_by`).
    pub(crate) rules: BTreeMap<String, (u64, u64)>,
    /// Tool → (calls, blocked).
    pub(crate) tools: BTreeMap<String, (u64, u64)>,
    /// Rule → (runs, total µs, slowest µs).
    pub(crate) durations: BTreeMap<String, (u64, u64, u64)>,
    /// The halts (`hook_failed`, `hook_timeout`), oldest first.
    pub(crate) halts: Vec<AuditRecord>,
    /// Session → (input tokens, output tokens), where a summary line carries `usage`.
    pub(crate) tokens: BTreeMap<String, (u64, u64)>,
    /// Sessions summarized.
    pub(crate) sessions: u64,
    /// The chain verification, one line per file name.
    pub(crate) chain: Vec<String>,
    /// Whether every chain verifies.
    pub(crate) chain_ok: bool,
}

/// The files of one chain in `dir`, oldest first: `NAME.1.jsonl`, `NAME.2.jsonl`, …, `NAME`.
fn chain_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let stem = name.trim_end_matches(".jsonl");
    let mut rotated: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let n = file
                .strip_prefix(stem)?
                .strip_prefix('.')?
                .strip_suffix(".jsonl")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    rotated.sort();
    let mut files: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    let live = dir.join(name);
    if live.exists() {
        files.push(live);
    }
    files
}

/// Reads `dir`'s audit files into [`Figures`].
///
/// # Errors
/// `dir` is not a folder, a file cannot be read, or a line is not JSON (`FILE line N: …`).
pub(crate) fn figures(dir: &Path) -> Result<Figures, String> {
    if !dir.is_dir() {
        return Err(format!("`{}` is not a folder", dir.display()));
    }
    let mut f = Figures::default();
    for path in chain_files(dir, AUDIT_LOG_FILE) {
        for_each_line(&path, |value| {
            if value.get("replay").and_then(Value::as_bool) == Some(true) {
                f.left_out += 1;
                return Ok(());
            }
            match serde_json::from_value::<AuditRecord>(value) {
                // A paused call's `awaiting_approval` line (`"final": false`): its final line
                // comes when the turn is resumed.
                Ok(record) if !record.is_final => f.left_out += 1,
                Ok(record) => f.count(record),
                // An outcome this build does not know: a line that is not final.
                Err(_) => f.left_out += 1,
            }
            Ok(())
        })?;
    }
    for path in chain_files(dir, SESSION_SUMMARIES_FILE) {
        for_each_line(&path, |value| {
            f.sessions += 1;
            let usage = value.get("usage");
            let tokens = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_u64);
            if let (Some(session), Some(input), Some(output)) = (
                value.get("session_id").and_then(Value::as_str),
                tokens("input_tokens"),
                tokens("output_tokens"),
            ) {
                let entry = f.tokens.entry(session.to_owned()).or_default();
                entry.0 += input;
                entry.1 += output;
            }
            Ok(())
        })?;
    }
    f.halts.sort_by_key(|r| r.ts);
    let verified = toolgate::audit::verify_audit_dir(dir).map_err(|e| e.to_string())?;
    f.chain_ok = verified.is_ok();
    for (name, chain) in [
        (AUDIT_LOG_FILE, &verified.calls),
        (SESSION_SUMMARIES_FILE, &verified.sessions),
    ] {
        let verdict = if chain.status.is_ok() { "" } else { "broken: " };
        f.chain.push(format!("{name}: {verdict}{}", chain.status));
    }
    Ok(f)
}

fn for_each_line(
    path: &Path,
    mut each: impl FnMut(Value) -> Result<(), String>,
) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| format!("`{}` line {}: not JSON: {e}", path.display(), i + 1))?;
        each(value)?;
    }
    Ok(())
}

impl Figures {
    fn count(&mut self, r: AuditRecord) {
        self.calls += 1;
        let outcome = r.outcome.as_str().to_owned();
        *self.outcomes.entry(outcome.clone()).or_default() += 1;
        let day = Rfc3339(r.ts)
            .to_string()
            .chars()
            .take(10)
            .collect::<String>();
        *self
            .per_day
            .entry(day)
            .or_default()
            .entry(outcome)
            .or_default() += 1;
        let blocked = r.outcome == Outcome::Blocked;
        let tool = self.tools.entry(r.tool.clone()).or_default();
        tool.0 += 1;
        tool.1 += u64::from(blocked);
        for run in &r.hooks {
            let rule = self.rules.entry(run.hook.to_string()).or_default();
            rule.0 += 1;
            rule.1 += u64::from(run.outcome == toolgate::audit::HookOutcome::Deny);
            let d = self.durations.entry(run.hook.to_string()).or_default();
            d.0 += 1;
            d.1 += run.duration_us;
            d.2 = d.2.max(run.duration_us);
        }
        if blocked
            && r.hooks.is_empty()
            && let Some(hook) = &r.blocked_by
        {
            let rule = self.rules.entry(hook.clone()).or_default();
            rule.0 += 1;
            rule.1 += 1;
        }
        if matches!(r.outcome, Outcome::HookFailed | Outcome::HookTimeout) {
            self.halts.push(r);
        }
    }
}

/// `text` with `& < > " '` escaped for HTML.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A percentage with one decimal, `0.0` for no runs.
fn rate(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0.0".to_owned();
    }
    format!("{:.1}", part as f64 * 100.0 / whole as f64)
}

/// The fill colour of an outcome in the chart.
fn colour(outcome: &str) -> &'static str {
    match outcome {
        "ok" => "#2e7d32",
        "blocked" => "#ef6c00",
        "hook_failed" | "hook_timeout" => "#c62828",
        "invalid_input" => "#6a1b9a",
        "unknown_tool" => "#1565c0",
        "tool_error" | "panicked" | "tool_timeout" => "#ad1457",
        _ => "#546e7a",
    }
}

/// The stacked bar chart of calls per outcome per day, as inline SVG.
fn chart(f: &Figures) -> String {
    let max = f
        .per_day
        .values()
        .map(|o| o.values().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let (bar, gap, height) = (48u64, 24u64, 160u64);
    let width = (bar + gap) * f.per_day.len().max(1) as u64 + gap;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" \
         role=\"img\" aria-label=\"calls per outcome per day\">",
        height + 54
    );
    for (i, (day, outcomes)) in f.per_day.iter().enumerate() {
        let x = gap + i as u64 * (bar + gap);
        // 24 above the tallest bar for its total.
        let mut y = height + 24;
        for (outcome, n) in outcomes {
            let h = n * height / max;
            y -= h;
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{bar}\" height=\"{h}\" fill=\"{}\">\
                 <title>{day} {outcome}: {n}</title></rect>",
                colour(outcome)
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x + bar / 2,
            height + 42,
            esc(&day[5..]),
            x + bar / 2,
            y.saturating_sub(4),
            outcomes.values().sum::<u64>()
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The page.
pub(crate) fn render(dir: &Path, f: &Figures) -> String {
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>toolgate audit report</title><style>\
         body{{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:70em}}\
         table{{border-collapse:collapse;margin:.5em 0 1.5em}}\
         td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:left}}\
         td.n{{text-align:right;font-variant-numeric:tabular-nums}}\
         .ok{{color:#2e7d32}}.bad{{color:#c62828;font-weight:bold}}\
         .key span{{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em}}\
         </style></head><body>\n<h1>Audit report</h1>\n<p>From <code>{}</code>: \
         <b data-k=\"calls\">{}</b> calls in <b data-k=\"sessions\">{}</b> sessions \
         (<span data-k=\"left_out\">{}</span> replayed or not-final lines left out).</p>",
        esc(&dir.display().to_string()),
        f.calls,
        f.sessions,
        f.left_out
    );

    // The chain.
    let _ = write!(
        h,
        "<h2>Hash chain</h2>\n<p class=\"{}\" data-k=\"chain\">{}</p><ul>",
        if f.chain_ok { "ok" } else { "bad" },
        if f.chain_ok { "verifies" } else { "broken" }
    );
    for line in &f.chain {
        let _ = write!(h, "<li><code>{}</code></li>", esc(line));
    }
    h.push_str("</ul>\n");

    // Outcomes over time.
    h.push_str("<h2>Calls per outcome per day</h2>\n<p class=\"key\">");
    for outcome in f.outcomes.keys() {
        let _ = write!(
            h,
            "<span style=\"background:{}\"></span>{}",
            colour(outcome),
            esc(outcome)
        );
    }
    h.push_str("</p>\n");
    h.push_str(&chart(f));
    h.push_str("\n<table><tr><th>day (UTC)</th>");
    for outcome in f.outcomes.keys() {
        let _ = write!(h, "<th>{}</th>", esc(outcome));
    }
    h.push_str("<th>all</th></tr>\n");
    for (day, outcomes) in &f.per_day {
        let _ = write!(h, "<tr><td>{day}</td>");
        for outcome in f.outcomes.keys() {
            let n = outcomes.get(outcome).copied().unwrap_or(0);
            let _ = write!(h, "<td class=\"n\" data-k=\"day:{day}:{outcome}\">{n}</td>");
        }
        let _ = writeln!(
            h,
            "<td class=\"n\">{}</td></tr>",
            outcomes.values().sum::<u64>()
        );
    }
    h.push_str("<tr><th>all</th>");
    for (outcome, n) in &f.outcomes {
        let _ = write!(h, "<td class=\"n\" data-k=\"outcome:{outcome}\">{n}</td>");
    }
    let _ = writeln!(h, "<td class=\"n\">{}</td></tr></table>", f.calls);

    // Blocked rate per rule and per tool.
    h.push_str(
        "<h2>Blocked rate per rule</h2>\n<table><tr><th>rule</th><th>runs</th><th>denials</th>\
         <th>denied %</th></tr>\n",
    );
    let mut rules: Vec<_> = f.rules.iter().collect();
    rules.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(b.0)));
    for (rule, (runs, denied)) in rules {
        let r = esc(rule);
        let _ = writeln!(
            h,
            "<tr><td><code>{r}</code></td><td class=\"n\" data-k=\"rule_runs:{r}\">{runs}</td>\
             <td class=\"n\" data-k=\"rule_denials:{r}\">{denied}</td><td class=\"n\">{}</td></tr>",
            rate(*denied, *runs)
        );
    }
    h.push_str(
        "</table>\n<h2>Blocked rate per tool</h2>\n<table><tr><th>tool</th><th>calls</th>\
         <th>blocked</th><th>blocked %</th></tr>\n",
    );
    for (tool, (calls, blocked)) in &f.tools {
        let t = esc(tool);
        let _ = writeln!(
            h,
            "<tr><td>{t}</td><td class=\"n\" data-k=\"tool_calls:{t}\">{calls}</td>\
             <td class=\"n\" data-k=\"tool_blocked:{t}\">{blocked}</td><td class=\"n\">{}</td></tr>",
            rate(*blocked, *calls)
        );
    }
    h.push_str("</table>\n");

    // The slowest rules.
    h.push_str(
        "<h2>Slowest rules</h2>\n<table><tr><th>rule</th><th>runs</th><th>mean µs</th>\
         <th>slowest µs</th></tr>\n",
    );
    let mut slow: Vec<_> = f.durations.iter().collect();
    slow.sort_by(|a, b| {
        let mean = |(_, (runs, total, _)): &(&String, &(u64, u64, u64))| total / runs.max(&1);
        mean(b)
            .cmp(&mean(a))
            .then(b.1.2.cmp(&a.1.2))
            .then(a.0.cmp(b.0))
    });
    for (rule, (runs, total, max)) in slow {
        let r = esc(rule);
        let _ = writeln!(
            h,
            "<tr><td><code>{r}</code></td><td class=\"n\" data-k=\"slow_runs:{r}\">{runs}</td>\
             <td class=\"n\">{}</td><td class=\"n\" data-k=\"slow_max:{r}\">{max}</td></tr>",
            total / runs.max(&1)
        );
    }
    h.push_str("</table>\n");

    // The latest halts.
    let _ = writeln!(
        h,
        "<h2>Latest halts</h2>\n<p><span data-k=\"halts\">{}</span> in all{}</p>",
        f.halts.len(),
        if f.halts.is_empty() {
            ""
        } else {
            "; the latest first (at most 10):"
        }
    );
    if !f.halts.is_empty() {
        h.push_str(
            "<table><tr><th>when</th><th>session</th><th>tool</th><th>outcome</th>\
             <th>hook</th><th>detail</th></tr>\n",
        );
    }
    for r in f.halts.iter().rev().take(LATEST_HALTS) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>\
             <td>{}</td></tr>",
            Rfc3339(r.ts),
            esc(&r.session_id),
            esc(&r.tool),
            r.outcome,
            esc(r.blocked_by.as_deref().unwrap_or("")),
            esc(r.detail.as_deref().unwrap_or(""))
        );
    }
    if !f.halts.is_empty() {
        h.push_str("</table>\n");
    }

    // Tokens.
    h.push_str("<h2>Token usage per session</h2>\n");
    if f.tokens.is_empty() {
        h.push_str(
            "<p data-k=\"tokens\">none recorded: the host writes no <code>usage</code> in its \
             session summaries.</p>\n",
        );
    } else {
        h.push_str("<table><tr><th>session</th><th>input tokens</th><th>output tokens</th></tr>\n");
        for (session, (input, output)) in &f.tokens {
            let s = esc(session);
            let _ = writeln!(
                h,
                "<tr><td>{s}</td><td class=\"n\" data-k=\"tokens_in:{s}\">{input}</td>\
                 <td class=\"n\" data-k=\"tokens_out:{s}\">{output}</td></tr>"
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// `--report DIR`: writes `DIR/report.html` and prints its path.
pub(crate) fn run(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let f = match figures(dir) {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(err, "error: --report: {e}");
            return if e.ends_with("is not a folder") {
                EXIT_BAD_INPUT
            } else {
                EXIT_FAILED
            };
        }
    };
    let path = dir.join(REPORT_FILE);
    if let Err(e) = std::fs::write(&path, render(dir, &f)) {
        let _ = writeln!(
            err,
            "error: --report: cannot write `{}`: {e}",
            path.display()
        );
        return EXIT_FAILED;
    }
    match writeln!(
        out,
        "report: {} ({} calls, chain {})",
        path.display(),
        f.calls,
        if f.chain_ok { "verifies" } else { "broken" }
    ) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_FAILED,
    }
}
