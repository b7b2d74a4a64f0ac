//! Counts per outcome, rule, tool and user, as aligned text tables or as JSON.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use toolgate_core::audit::printable;
use toolgate_core::audit::report::Figures;

/// Rows of cells; the first row is the header. A column of numbers aligns right, any other
/// left; every cell is [printable](printable) first.
fn aligned(out: &mut String, rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let numeric: Vec<bool> = (0..columns)
        .map(|c| rows.len() > 1 && rows[1..].iter().all(|r| r[c].parse::<u64>().is_ok()))
        .collect();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c > 0 {
                line.push_str("  ");
            }
            if !numeric[c] {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            } else {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The counts as text: a first line (`28 calls in 11 sessions, 4 lines left out`), then one
/// table each for outcomes, rules (most denials first), tools and users, a blank line between.
///
/// ```text
/// 28 calls in 11 sessions, 4 lines left out (replayed or not final)
///
/// outcome  calls
/// blocked      6
/// ok          17
/// ```
pub(crate) fn stats_text(f: &Figures) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} calls in {} sessions, {} lines left out (replayed or not final)",
        f.calls, f.sessions, f.left_out
    );
    let mut rows = vec![vec!["outcome".to_owned(), "calls".to_owned()]];
    rows.extend(
        f.outcomes
            .iter()
            .map(|(o, n)| vec![o.clone(), n.to_string()]),
    );
    out.push('\n');
    aligned(&mut out, &rows);

    let mut rules: Vec<_> = f.rules.iter().collect();
    rules.sort_by(|a, b| b.1.denials.cmp(&a.1.denials).then(a.0.cmp(b.0)));
    let mut rows = vec![
        ["rule", "runs", "denials", "asks", "rewrites", "failures"]
            .map(str::to_owned)
            .to_vec(),
    ];
    rows.extend(rules.iter().map(|(name, r)| {
        vec![
            (*name).clone(),
            r.runs.to_string(),
            r.denials.to_string(),
            r.asks.to_string(),
            r.rewrites.to_string(),
            r.failures.to_string(),
        ]
    }));
    out.push('\n');
    aligned(&mut out, &rows);

    let mut rows = vec![["tool", "calls", "blocked"].map(str::to_owned).to_vec()];
    rows.extend(
        f.tools
            .iter()
            .map(|(name, t)| vec![name.clone(), t.calls.to_string(), t.blocked.to_string()]),
    );
    out.push('\n');
    aligned(&mut out, &rows);

    let mut rows = vec![
        ["user", "tier", "calls", "blocked", "waited"]
            .map(str::to_owned)
            .to_vec(),
    ];
    rows.extend(f.users.iter().map(|(name, u)| {
        vec![
            name.clone(),
            u.tier.clone().unwrap_or_else(|| "-".to_owned()),
            u.calls.to_string(),
            u.blocked.to_string(),
            u.waited.to_string(),
        ]
    }));
    out.push('\n');
    aligned(&mut out, &rows);
    out
}

/// The counts as one JSON object (names as written: print it through
/// [`printable_json`](toolgate_core::audit::printable_json), as `toolgate audit stats --json` does):
///
/// ```json
/// {"calls":28,"sessions":11,"left_out":4,
///  "outcomes":{"blocked":6,"ok":17},
///  "rules":{"support_agent::policy::premium_only":{"runs":12,"denials":3,"asks":0,"rewrites":0,"failures":0}},
///  "tools":{"issue_refund":{"calls":5,"blocked":2}},
///  "users":{"u_004":{"tier":"free","calls":3,"blocked":1,"waited":0}}}
/// ```
///
/// `tier` is `null` for a user whose lines carry none.
pub(crate) fn stats_json(f: &Figures) -> Value {
    let rules: Map<String, Value> = f
        .rules
        .iter()
        .map(|(name, r)| {
            let v = json!({"runs": r.runs, "denials": r.denials, "asks": r.asks,
                "rewrites": r.rewrites, "failures": r.failures});
            (name.clone(), v)
        })
        .collect();
    let tools: Map<String, Value> = f
        .tools
        .iter()
        .map(|(name, t)| {
            (
                name.clone(),
                json!({"calls": t.calls, "blocked": t.blocked}),
            )
        })
        .collect();
    let users: Map<String, Value> = f
        .users
        .iter()
        .map(|(name, u)| {
            let v = json!({"tier": u.tier, "calls": u.calls, "blocked": u.blocked,
                "waited": u.waited});
            (name.clone(), v)
        })
        .collect();
    json!({
        "calls": f.calls,
        "sessions": f.sessions,
        "left_out": f.left_out,
        "outcomes": f.outcomes,
        "rules": rules,
        "tools": tools,
        "users": users,
    })
}
