//! The report page: one self-contained HTML file (inline CSS and SVG, no script, nothing fetched
//! at view time) that reads at 1 280 px and at a phone's width.
//!
//! Every figure sits in an element with a `data-k` key (`<td data-k="outcome:ok">12</td>`), so a
//! test reads the page's numbers back and compares them with the log's.

use std::fmt::Write as _;
use std::time::SystemTime;

use toolgate_core::approval::Asked;
use toolgate_core::audit::report::{Distribution, Figures, Resolution};
use toolgate_core::audit::{AuditVerification, Rfc3339};

use crate::report::escape::esc;
use crate::report::svg;

/// How many halts the page lists, newest first.
const LATEST_HALTS: usize = 10;

const STYLE: &str = "*{box-sizing:border-box}\
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em 1.2em;color:#1a1a1a;\
background:#fff;max-width:76em}\
h1{font-size:1.6em;margin:.3em 0}h2{font-size:1.25em;margin:1.8em 0 .4em;\
border-bottom:1px solid #ccc}h3{font-size:1.05em;margin:1em 0 .2em}\
.scroll{overflow-x:auto;margin:.4em 0 1em}\
table{border-collapse:collapse}\
td,th{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top;\
overflow-wrap:break-word}th{background:#f2f2f2}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
code{font-size:.9em;overflow-wrap:anywhere}\
.ok{color:#006b4f;font-weight:bold}.bad{color:#a33200;font-weight:bold}\
.key{display:flex;flex-wrap:wrap;gap:.2em 1em;margin:.3em 0}\
.key i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}\
.cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.5em 0}\
.card{border:1px solid #bbb;border-radius:6px;padding:.3em .8em;min-width:7.5em}\
.card b{display:block;font-size:1.35em}\
svg{display:block;height:auto;margin:.4em 0}\
p.note{color:#444;font-size:.92em}\
@media (max-width:640px){body{padding:.6em;font-size:14px}\
table,tbody,tr,td{display:block}tr:first-child{display:none}\
tr{border:1px solid #bbb;border-radius:4px;margin:0 0 .6em;padding:.2em .4em}\
td,th{border:none;padding:.1em 0}th{display:block;background:none}\
td::before{content:attr(data-label) \": \";font-weight:bold}td.n{text-align:left}}";

/// A percentage with one decimal, `0.0` for nothing counted.
fn rate(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0.0".to_owned();
    }
    format!("{:.1}", part as f64 * 100.0 / whole as f64)
}

/// A wait in words: `850 ms`, `42 s`, `3 min 20 s`, `2 h 5 min`.
pub(crate) fn wait_text(us: u64) -> String {
    let s = us / 1_000_000;
    match s {
        0 => format!("{} ms", us / 1_000),
        1..60 => format!("{s} s"),
        60..3_600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3_600, s % 3_600 / 60),
    }
}

/// A timestamp for a table cell: the date, a break opportunity, the time.
fn ts(t: SystemTime) -> String {
    Rfc3339(t).to_string().replacen('T', "<wbr>T", 1)
}

/// An open table: where it starts in the page, and its column heads.
struct Table {
    start: usize,
    heads: Vec<String>,
}

/// A table's opening: `<table>` and its header row of `heads` (HTML).
fn table(h: &mut String, heads: &[&str]) -> Table {
    let start = h.len();
    h.push_str("<div class=\"scroll\"><table><tr>");
    for head in heads {
        let _ = write!(h, "<th scope=\"col\">{head}</th>");
    }
    h.push_str("</tr>\n");
    Table {
        start,
        heads: heads.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// Closes `t`, giving each of its cells its column's head as `data-label`: at a phone's width
/// the rows stack as cards and each cell shows its head before it (the page's own text holds
/// no `<td` or `<tr`: every text is escaped).
fn end_table(h: &mut String, t: Table) {
    let rows = h.split_off(t.start);
    for (i, row) in rows.split("<tr>").enumerate() {
        if i > 0 {
            h.push_str("<tr>");
        }
        let mut cells = row.split("<td");
        h.push_str(cells.next().unwrap_or_default());
        // A row may open with a `<th scope="row">`: its `<td>`s then start at the second column.
        let offset = usize::from(row.starts_with("<th scope=\"row\""));
        for (c, cell) in cells.enumerate() {
            let head = t.heads.get(c + offset).map_or("", String::as_str);
            let _ = write!(h, "<td data-label=\"{head}\"{cell}");
        }
    }
    h.push_str("</table></div>\n");
}

/// The page for `figures`, read from `source` (a folder's path, a database's name); `chain` is
/// the chain check, when one ran.
pub(crate) fn render_html(
    source: &str,
    figures: &Figures,
    chain: Option<&AuditVerification>,
) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let _ = writeln!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>toolgate audit report</title><style>{STYLE}</style></head><body>"
    );
    header(&mut h, source, figures, chain);
    outcomes(&mut h, figures);
    people(&mut h, figures);
    customers(&mut h, figures);
    rules(&mut h, figures);
    latency(&mut h, figures);
    tools(&mut h, figures);
    halts(&mut h, figures);
    tokens(&mut h, figures);
    h.push_str("</body></html>\n");
    h
}

fn header(h: &mut String, source: &str, f: &Figures, chain: Option<&AuditVerification>) {
    let _ = writeln!(
        h,
        "<h1>Audit report</h1>\n<p>From <code>{}</code>: <b data-k=\"calls\">{}</b> calls in \
         <b data-k=\"sessions\">{}</b> sessions (<span data-k=\"left_out\">{}</span> replayed or \
         not-final lines left out){}.</p>",
        esc(source),
        f.calls,
        f.sessions,
        f.left_out,
        match f.period {
            Some((first, last)) => format!(", {} to {}", ts(first), ts(last)),
            None => String::new(),
        }
    );
    let Some(chain) = chain else {
        return;
    };
    let _ = write!(
        h,
        "<h2>Hash chain</h2>\n<p class=\"{}\" data-k=\"chain\">{}</p><ul>",
        if chain.is_ok() { "ok" } else { "bad" },
        if chain.is_ok() { "verifies" } else { "broken" }
    );
    for line in &chain.lines() {
        let _ = write!(h, "<li><code>{}</code></li>", esc(line));
    }
    h.push_str("</ul>\n");
}

fn outcomes(h: &mut String, f: &Figures) {
    h.push_str("<h2>Calls per outcome per day</h2>\n<p class=\"key\">");
    for outcome in f.outcomes.keys() {
        let _ = write!(
            h,
            "<span><i style=\"background:{}\"></i>{}</span>",
            svg::colour(outcome),
            esc(outcome)
        );
    }
    h.push_str("</p>\n");
    h.push_str(&svg::outcomes_per_day(&f.per_day));
    let mut heads = vec!["day (UTC)".to_owned()];
    heads.extend(f.outcomes.keys().map(|o| esc(o)));
    heads.push("all".to_owned());
    let t = table(h, &heads.iter().map(String::as_str).collect::<Vec<_>>());
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
    h.push_str("<tr><th scope=\"row\">all</th>");
    for (outcome, n) in &f.outcomes {
        let _ = write!(h, "<td class=\"n\" data-k=\"outcome:{outcome}\">{n}</td>");
    }
    let _ = writeln!(h, "<td class=\"n\">{}</td></tr>", f.calls);
    end_table(h, t);
}

fn card(h: &mut String, key: &str, value: impl std::fmt::Display, label: &str) {
    let _ = write!(
        h,
        "<div class=\"card\"><b data-k=\"{key}\">{value}</b>{label}</div>"
    );
}

fn people(h: &mut String, f: &Figures) {
    h.push_str("<h2>People in the loop</h2>\n");
    let count = |keep: &dyn Fn(&Resolution) -> bool| {
        f.decided.iter().filter(|d| keep(&d.resolution)).count()
    };
    let waits = f.waits();
    let open = f.waiting.iter().filter(|w| !w.expired).count();
    h.push_str("<div class=\"cards\">");
    card(
        h,
        "asked",
        f.decided.len() + f.waiting.len(),
        "asked a person",
    );
    card(
        h,
        "approved",
        count(&|r| matches!(r, Resolution::Approved { .. })),
        "approved",
    );
    card(
        h,
        "declined",
        count(&|r| matches!(r, Resolution::Declined { .. })),
        "declined",
    );
    card(
        h,
        "expired",
        count(&|r| matches!(r, Resolution::Expired)) + (f.waiting.len() - open),
        "expired",
    );
    card(h, "waiting", open, "still waiting");
    card(h, "wait_p50", wait_text(waits.p50), "median wait");
    card(h, "wait_max", wait_text(waits.max), "longest wait");
    h.push_str("</div>\n");
    decided(h, f);
    waiting(h, f);
}

fn asked_text(asked: &[Asked]) -> String {
    let parts: Vec<String> = asked
        .iter()
        .map(|a| format!("<code>{}</code>: {}", esc(&a.hook), esc(&a.reason)))
        .collect();
    parts.join("<br>")
}

fn decided(h: &mut String, f: &Figures) {
    if f.decided.is_empty() {
        h.push_str("<p data-k=\"decided\">No call waited for a person.</p>\n");
        return;
    }
    h.push_str("<h3>Decided</h3>\n");
    let t = table(
        h,
        &[
            "asked (UTC)",
            "tool",
            "user",
            "asked by, reason",
            "decision",
            "waited",
        ],
    );
    for d in &f.decided {
        let id = esc(&d.tool_use_id);
        let decision = match &d.resolution {
            Resolution::Approved { by, outcome } => format!("approved by {} ({outcome})", esc(by)),
            Resolution::Declined { by } => format!("declined by {}", esc(by)),
            Resolution::Expired => "expired unanswered".to_owned(),
            Resolution::Other { outcome } => format!("no decision ({outcome})"),
            // A way of ending a later toolgate counts and this command does not know yet.
            _ => "no decision".to_owned(),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td data-k=\"decision:{id}\">{}</td>\
             <td class=\"n\" data-k=\"waited:{id}\">{}</td></tr>",
            ts(d.asked_at),
            esc(&d.name),
            esc(&d.user_id),
            asked_text(&d.asked_by),
            decision,
            d.waited_us.map_or_else(|| "unknown".to_owned(), wait_text),
        );
    }
    end_table(h, t);
}

fn waiting(h: &mut String, f: &Figures) {
    if f.waiting.is_empty() {
        h.push_str("<p data-k=\"pending\">No turn is waiting.</p>\n");
        return;
    }
    h.push_str("<h3>Waiting</h3>\n");
    let t = table(
        h,
        &[
            "since (UTC)",
            "tool",
            "user",
            "session",
            "asked by, reason",
            "expires (UTC)",
        ],
    );
    for w in &f.waiting {
        let id = esc(&w.tool_use_id);
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td data-k=\"expires:{id}\">{}{}</td></tr>",
            ts(w.since),
            esc(&w.name),
            esc(&w.user_id),
            esc(&w.session_id),
            asked_text(&w.asked_by),
            Rfc3339(w.expires_at),
            if w.expired { " (expired)" } else { "" },
        );
    }
    end_table(h, t);
}

fn customers(h: &mut String, f: &Figures) {
    h.push_str("<h2>Per customer</h2>\n");
    let mut heads = vec![
        "user",
        "tier",
        "calls",
        "blocked",
        "blocked %",
        "waited for a person",
    ];
    let counted: Vec<String> = f
        .count_tools
        .iter()
        .map(|t| format!("{} ok", esc(t)))
        .collect();
    heads.extend(counted.iter().map(String::as_str));
    let t = table(h, &heads);
    for (user, u) in &f.users {
        let k = esc(user);
        let _ = write!(
            h,
            "<tr><td>{k}</td><td>{}</td><td class=\"n\" data-k=\"user_calls:{k}\">{}</td>\
             <td class=\"n\" data-k=\"user_blocked:{k}\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\" data-k=\"user_waited:{k}\">{}</td>",
            esc(u.tier.as_deref().unwrap_or("")),
            u.calls,
            u.blocked,
            rate(u.blocked, u.calls),
            u.waited
        );
        for tool in &f.count_tools {
            let n = u.counted.get(tool).copied().unwrap_or(0);
            let _ = write!(
                h,
                "<td class=\"n\" data-k=\"user_count:{k}:{}\">{n}</td>",
                esc(tool)
            );
        }
        h.push_str("</tr>\n");
    }
    end_table(h, t);
}

fn rules(h: &mut String, f: &Figures) {
    h.push_str("<h2>Rules</h2>\n");
    let t = table(
        h,
        &[
            "rule", "runs", "denials", "denied %", "asks", "rewrites", "failures",
        ],
    );
    let mut rules: Vec<_> = f.rules.iter().collect();
    rules.sort_by(|a, b| b.1.denials.cmp(&a.1.denials).then(a.0.cmp(b.0)));
    for (rule, r) in &rules {
        let k = esc(rule);
        let _ = writeln!(
            h,
            "<tr><td><code>{k}</code></td><td class=\"n\" data-k=\"rule_runs:{k}\">{}</td>\
             <td class=\"n\" data-k=\"rule_denials:{k}\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\" data-k=\"rule_asks:{k}\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            r.runs,
            r.denials,
            rate(r.denials, r.runs),
            r.asks,
            r.rewrites,
            r.failures
        );
    }
    end_table(h, t);
    let over_time: Vec<_> = rules
        .iter()
        .filter(|(_, r)| !r.per_day.is_empty())
        .collect();
    if over_time.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h3>Denials and asks per day</h3>\n<p class=\"key\"><span><i style=\"background:{}\">\
         </i>denied</span><span><i style=\"background:{}\"></i>asked</span></p>\n",
        svg::DENY,
        svg::ASK
    );
    for (i, (rule, r)) in over_time.iter().enumerate() {
        let _ = write!(h, "<p><code>{}</code></p>", esc(rule));
        h.push_str(&svg::rule_per_day(&format!("rule{i}"), rule, &r.per_day));
        for (day, (denied, asked)) in &r.per_day {
            let k = esc(rule);
            let _ = write!(
                h,
                "<span hidden data-k=\"rule_day:{k}:{day}:deny\">{denied}</span>\
                 <span hidden data-k=\"rule_day:{k}:{day}:ask\">{asked}</span>"
            );
        }
        h.push('\n');
    }
}

fn distribution_rows(h: &mut String, prefix: &str, rows: &[(&str, Distribution)]) {
    let t = table(h, &["name", "runs", "p50 µs", "p90 µs", "p99 µs", "max µs"]);
    for (name, d) in rows {
        let k = esc(name);
        let _ = writeln!(
            h,
            "<tr><td><code>{k}</code></td><td class=\"n\">{}</td>\
             <td class=\"n\" data-k=\"{prefix}:{k}:p50\">{}</td>\
             <td class=\"n\" data-k=\"{prefix}:{k}:p90\">{}</td>\
             <td class=\"n\" data-k=\"{prefix}:{k}:p99\">{}</td>\
             <td class=\"n\" data-k=\"{prefix}:{k}:max\">{}</td></tr>",
            d.count, d.p50, d.p90, d.p99, d.max
        );
    }
    end_table(h, t);
}

fn latency(h: &mut String, f: &Figures) {
    h.push_str(
        "<h2>Latency</h2>\n<p class=\"note\">Per rule, each run of the hook; per tool, each call \
         from its start to its result (its hooks included). The thick bar spans the median to \
         the 90th percentile, the tick marks the 99th, the dot the slowest; the axis is \
         logarithmic. Percentiles by nearest rank.</p>\n",
    );
    let mut by_rule: Vec<(&str, Distribution)> = f
        .rules
        .iter()
        .filter(|(_, r)| r.durations.count > 0)
        .map(|(n, r)| (n.as_str(), r.durations))
        .collect();
    by_rule.sort_by(|a, b| b.1.p90.cmp(&a.1.p90).then(a.0.cmp(b.0)));
    let by_tool: Vec<(&str, Distribution)> = f
        .tools
        .iter()
        .map(|(n, t)| (n.as_str(), t.durations))
        .collect();
    for (id, title, prefix, rows) in [
        ("lat-rules", "Latency per rule", "lat_rule", &by_rule),
        ("lat-tools", "Latency per tool", "lat_tool", &by_tool),
    ] {
        let _ = writeln!(h, "<h3>{title}</h3>");
        if rows.is_empty() {
            h.push_str("<p>Nothing ran.</p>\n");
            continue;
        }
        h.push_str(&svg::latency(id, title, rows));
        distribution_rows(h, prefix, rows);
    }
}

fn tools(h: &mut String, f: &Figures) {
    h.push_str("<h2>Blocked rate per tool</h2>\n");
    let t = table(h, &["tool", "calls", "blocked", "blocked %"]);
    for (tool, t) in &f.tools {
        let k = esc(tool);
        let _ = writeln!(
            h,
            "<tr><td>{k}</td><td class=\"n\" data-k=\"tool_calls:{k}\">{}</td>\
             <td class=\"n\" data-k=\"tool_blocked:{k}\">{}</td><td class=\"n\">{}</td></tr>",
            t.calls,
            t.blocked,
            rate(t.blocked, t.calls)
        );
    }
    end_table(h, t);
}

fn halts(h: &mut String, f: &Figures) {
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
    if f.halts.is_empty() {
        return;
    }
    let t = table(
        h,
        &["when (UTC)", "session", "tool", "outcome", "hook", "detail"],
    );
    for r in f.halts.iter().rev().take(LATEST_HALTS) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>\
             <td>{}</td></tr>",
            ts(r.ts),
            esc(&r.session_id),
            esc(&r.name),
            r.outcome,
            esc(r.blocked_by.as_deref().unwrap_or("")),
            esc(r.detail.as_deref().unwrap_or(""))
        );
    }
    end_table(h, t);
}

fn tokens(h: &mut String, f: &Figures) {
    h.push_str("<h2>Token usage per session</h2>\n");
    if f.tokens.is_empty() {
        h.push_str(
            "<p data-k=\"tokens\">none recorded: the host writes no <code>usage</code> in its \
             session summaries.</p>\n",
        );
        return;
    }
    let t = table(h, &["session", "input tokens", "output tokens"]);
    for (session, (input, output)) in &f.tokens {
        let s = esc(session);
        let _ = writeln!(
            h,
            "<tr><td>{s}</td><td class=\"n\" data-k=\"tokens_in:{s}\">{input}</td>\
             <td class=\"n\" data-k=\"tokens_out:{s}\">{output}</td></tr>"
        );
    }
    end_table(h, t);
}

#[cfg(test)]
mod tests {
    use super::wait_text;

    #[test]
    fn a_wait_is_written_in_its_largest_two_units() {
        let cases = [
            (0, "0 ms"),
            (850_000, "850 ms"),
            (999_999, "999 ms"),
            (1_000_000, "1 s"),
            (42_000_000, "42 s"),
            (59_999_999, "59 s"),
            (60_000_000, "1 min 0 s"),
            (200_000_000, "3 min 20 s"),
            (3_600_000_000, "1 h 0 min"),
            (7_500_000_000, "2 h 5 min"),
        ];
        for (us, text) in cases {
            assert_eq!(wait_text(us), text, "{us} µs");
        }
    }
}
