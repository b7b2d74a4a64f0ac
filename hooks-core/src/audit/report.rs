//! What an audit trail's lines add up to (feature `audit-report`): [`Figures`], the counts per
//! outcome, day, rule, tool and customer, the people in the loop (who approved or declined what,
//! how long each waited, what still waits and when it expires), the latency distributions, the
//! halts and the token usage, computed from a [`Trail`] against [`ReportOptions`].
//!
//! You need it to count an audit trail from your own code; the `toolgate` command's report and
//! stats (`toolgate audit report|stats`) are these figures, drawn as a page or printed as tables
//! or JSON by the command itself.
//!
//! ```no_run
//! use toolgate_core::audit::Trail;
//! use toolgate_core::audit::report::{Figures, ReportOptions};
//!
//! let trail = Trail::read_dir("data/audit")?;
//! let figures = Figures::of(&trail, &ReportOptions::default());
//! println!("{} calls, {} blocked", figures.calls, figures.outcomes.get("blocked").unwrap_or(&0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::approval::ask::Asked;
use crate::audit::hook_run::HookOutcome;
use crate::audit::outcome::Outcome;
use crate::audit::record::AuditRecord;
use crate::audit::trail::Trail;
use crate::base::time::Rfc3339;
use crate::dispatch::builder::DispatcherBuilder;

/// What the figures are computed against.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReportOptions {
    /// The instant a waiting call's expiry is compared with (default: now).
    pub now: SystemTime,
    /// How long a paused turn may wait before the resuming dispatcher answers its calls
    /// `blocked` (default
    /// [`DispatcherBuilder::DEFAULT_PENDING_TTL`](crate::dispatch::DispatcherBuilder::DEFAULT_PENDING_TTL),
    /// 24 hours): set it to the agent's own
    /// [`pending_ttl`](crate::dispatch::DispatcherBuilder::pending_ttl).
    pub pending_ttl: Duration,
    /// Tools whose successful calls are counted per customer in a column of their own (the
    /// support agent's `issue_refund`: "refunds").
    pub count_tools: Vec<String>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            now: SystemTime::now(),
            pending_ttl: DispatcherBuilder::DEFAULT_PENDING_TTL,
            count_tools: Vec::new(),
        }
    }
}

/// A distribution of durations in microseconds, by the nearest-rank method (the p-th
/// percentile of n sorted samples is the one at rank ⌈p·n/100⌉, so every figure is a measured
/// value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Distribution {
    /// How many samples.
    pub count: u64,
    /// The median, µs.
    pub p50: u64,
    /// The 90th percentile, µs.
    pub p90: u64,
    /// The 99th percentile, µs.
    pub p99: u64,
    /// The largest sample, µs.
    pub max: u64,
}

impl Distribution {
    /// The distribution of `samples` (µs, in any order); all zero when there is none.
    pub fn of(mut samples: Vec<u64>) -> Distribution {
        if samples.is_empty() {
            return Distribution::default();
        }
        samples.sort_unstable();
        let n = samples.len();
        let rank = |p: usize| samples[(p * n).div_ceil(100).clamp(1, n) - 1];
        Distribution {
            count: n as u64,
            p50: rank(50),
            p90: rank(90),
            p99: rank(99),
            max: samples[n - 1],
        }
    }
}

/// One PreToolUse hook's runs, from the `hooks` of every counted line.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RuleFigures {
    /// Runs (a hook decides again after another hook's rewrite: a call can run it twice).
    pub runs: u64,
    /// Runs that denied, and calls it blocked with no run on their line (a paused call
    /// declined or expired at resume).
    pub denials: u64,
    /// Runs that asked for a person.
    pub asks: u64,
    /// Runs that rewrote the input.
    pub rewrites: u64,
    /// Runs that failed or timed out.
    pub failures: u64,
    /// Day (`2026-11-24`, UTC) → (denials, asks).
    pub per_day: BTreeMap<String, (u64, u64)>,
    /// How long its runs took.
    pub durations: Distribution,
}

/// One tool's calls.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolFigures {
    /// Calls counted.
    pub calls: u64,
    /// Calls `blocked`.
    pub blocked: u64,
    /// How long its calls took, from the start of the call to its result (hooks included).
    pub durations: Distribution,
}

/// One customer's calls (by the context's user id).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct UserFigures {
    /// The tier of their latest line that has one.
    pub tier: Option<String>,
    /// Calls counted.
    pub calls: u64,
    /// Calls `blocked`.
    pub blocked: u64,
    /// Calls that waited for a person.
    pub waited: u64,
    /// Tool of [`ReportOptions::count_tools`] → its `ok` calls.
    pub counted: BTreeMap<String, u64>,
}

/// How a call that waited for a person ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resolution {
    /// Approved (or edited) by the one named; the call then ended with `outcome`.
    Approved {
        /// Who approved.
        by: String,
        /// The call's final outcome (`ok`, or `blocked` when a rule still denied it).
        outcome: Outcome,
    },
    /// Declined by the one named.
    Declined {
        /// Who declined.
        by: String,
    },
    /// Resumed after the pending turn had expired: answered `blocked` with no decision.
    Expired,
    /// Ended otherwise (`outcome`), with no decision recorded (the turn halted, for one).
    Other {
        /// The call's final outcome.
        outcome: Outcome,
    },
}

/// A call that waited for a person and was then decided.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Decided {
    /// When the turn paused (the `awaiting_approval` line), or, without that line, when the
    /// final line was written less its wait unknown.
    pub asked_at: SystemTime,
    /// When the call ended (its final line).
    pub decided_at: SystemTime,
    /// The session, the user, the tool and the `tool_use` id.
    pub session_id: String,
    /// The context's user id.
    pub user_id: String,
    /// The tool's name (the line's `tool`).
    pub name: String,
    /// The `tool_use` id.
    pub tool_use_id: String,
    /// The hooks that asked, with their reasons.
    pub asked_by: Vec<Asked>,
    /// How it ended.
    pub resolution: Resolution,
    /// From the pause to the end, µs; `None` when the paused line is not in the trail (rotated
    /// away, or the call was asked about on another trail).
    pub waited_us: Option<u64>,
}

/// A call still waiting for a person: an `awaiting_approval` line with no final line after it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Waiting {
    /// When the turn paused.
    pub since: SystemTime,
    /// When the resuming dispatcher will answer it `blocked` instead ([`ReportOptions::pending_ttl`]
    /// after `since`).
    pub expires_at: SystemTime,
    /// Whether `expires_at` is before [`ReportOptions::now`]: no decision can run it any more.
    pub expired: bool,
    /// The session.
    pub session_id: String,
    /// The context's user id.
    pub user_id: String,
    /// The tool's name (the line's `tool`).
    pub name: String,
    /// The `tool_use` id.
    pub tool_use_id: String,
    /// The hooks that asked, with their reasons.
    pub asked_by: Vec<Asked>,
}

/// Everything the report shows, computed from a [`Trail`]: every count is of final lines only
/// (one per `tool_use`); replayed answers (`"replay": true`), paused calls' lines
/// (`"final": false`) and lines of outcomes this build does not know are left out of the counts
/// and counted in [`left_out`](Self::left_out).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Figures {
    /// Calls counted.
    pub calls: u64,
    /// Lines left out of the counts.
    pub left_out: u64,
    /// Session summary lines.
    pub sessions: u64,
    /// The first and last `ts` of the counted calls.
    pub period: Option<(SystemTime, SystemTime)>,
    /// Outcome (snake_case) → calls.
    pub outcomes: BTreeMap<String, u64>,
    /// Day (`2026-11-24`, UTC) → outcome → calls.
    pub per_day: BTreeMap<String, BTreeMap<String, u64>>,
    /// Hook (full path) → its runs.
    pub rules: BTreeMap<String, RuleFigures>,
    /// Tool → its calls.
    pub tools: BTreeMap<String, ToolFigures>,
    /// User id → their calls.
    pub users: BTreeMap<String, UserFigures>,
    /// Calls that waited for a person and were decided, in the order they ended.
    pub decided: Vec<Decided>,
    /// Calls still waiting (or expired unanswered), oldest first.
    pub waiting: Vec<Waiting>,
    /// The halts (`hook_failed`, `hook_timeout`), oldest first.
    pub halts: Vec<AuditRecord>,
    /// Session → (input tokens, output tokens), where a summary line carries `usage`.
    pub tokens: BTreeMap<String, (u64, u64)>,
    /// [`ReportOptions::count_tools`], for the per-customer columns.
    pub count_tools: Vec<String>,
}

/// Samples gathered while counting, turned into [`Distribution`]s at the end.
#[derive(Default)]
struct Samples {
    rules: BTreeMap<String, Vec<u64>>,
    tools: BTreeMap<String, Vec<u64>>,
}

/// The day of `ts`, `2026-11-24` (UTC).
pub(crate) fn day_of(ts: SystemTime) -> String {
    let mut day = Rfc3339(ts).to_string();
    day.truncate(10);
    day
}

impl Figures {
    /// Counts `trail` against `options`.
    pub fn of(trail: &Trail, options: &ReportOptions) -> Figures {
        let mut f = Figures {
            left_out: trail.unknown_outcomes,
            sessions: trail.summaries.len() as u64,
            count_tools: options.count_tools.clone(),
            ..Figures::default()
        };
        let mut samples = Samples::default();
        // (session id, tool_use id) → the paused line of a call not yet ended.
        let mut paused: BTreeMap<(&str, &str), &AuditRecord> = BTreeMap::new();
        for record in &trail.calls {
            let key = (record.session_id.as_str(), record.tool_use_id.as_str());
            if !record.is_final {
                paused.insert(key, record);
                f.left_out += 1;
                continue;
            }
            if record.replay {
                f.left_out += 1;
                continue;
            }
            let asked = paused.remove(&key);
            if asked.is_some() || record.approved_by.is_some() || record.denied_by.is_some() {
                f.decided.push(decided(asked, record));
            }
            f.count(record, asked.is_some(), &mut samples);
        }
        f.waiting = paused.into_values().map(|r| waiting(r, options)).collect();
        f.waiting.sort_by_key(|w| w.since);
        for (rule, s) in samples.rules {
            f.rules.entry(rule).or_default().durations = Distribution::of(s);
        }
        for (tool, s) in samples.tools {
            f.tools.entry(tool).or_default().durations = Distribution::of(s);
        }
        for summary in &trail.summaries {
            f.count_tokens(summary);
        }
        f
    }

    fn count(&mut self, r: &AuditRecord, waited: bool, samples: &mut Samples) {
        self.calls += 1;
        self.period = Some(match self.period {
            None => (r.ts, r.ts),
            Some((first, last)) => (first.min(r.ts), last.max(r.ts)),
        });
        let outcome = r.outcome.as_str();
        let day = day_of(r.ts);
        *self.outcomes.entry(outcome.to_owned()).or_default() += 1;
        *self
            .per_day
            .entry(day.clone())
            .or_default()
            .entry(outcome.to_owned())
            .or_default() += 1;
        let blocked = r.outcome == Outcome::Blocked;
        let tool = self.tools.entry(r.name.clone()).or_default();
        tool.calls += 1;
        tool.blocked += u64::from(blocked);
        samples
            .tools
            .entry(r.name.clone())
            .or_default()
            .push(r.duration_us);
        self.count_user(r, blocked, waited);
        for run in &r.hooks {
            let rule = self.rules.entry(run.hook.to_string()).or_default();
            rule.runs += 1;
            let (deny, ask) = (
                run.outcome == HookOutcome::Deny,
                run.outcome == HookOutcome::Ask,
            );
            rule.denials += u64::from(deny);
            rule.asks += u64::from(ask);
            rule.rewrites += u64::from(run.outcome == HookOutcome::Rewrite);
            rule.failures += u64::from(matches!(
                run.outcome,
                HookOutcome::Failed | HookOutcome::Timeout
            ));
            if deny || ask {
                let d = rule.per_day.entry(day.clone()).or_default();
                d.0 += u64::from(deny);
                d.1 += u64::from(ask);
            }
            samples
                .rules
                .entry(run.hook.to_string())
                .or_default()
                .push(run.duration_us);
        }
        // Blocked with no hook run on the line (a paused call declined or expired at resume):
        // a denial of the hook that blocked it.
        if blocked
            && r.hooks.is_empty()
            && let Some(hook) = &r.blocked_by
        {
            let rule = self.rules.entry(hook.clone()).or_default();
            rule.runs += 1;
            rule.denials += 1;
            rule.per_day.entry(day).or_default().0 += 1;
        }
        if matches!(r.outcome, Outcome::HookFailed | Outcome::HookTimeout) {
            self.halts.push(r.clone());
        }
    }

    fn count_user(&mut self, r: &AuditRecord, blocked: bool, waited: bool) {
        let user = self.users.entry(r.user_id.clone()).or_default();
        if r.tier.is_some() {
            user.tier.clone_from(&r.tier);
        }
        user.calls += 1;
        user.blocked += u64::from(blocked);
        user.waited += u64::from(waited || r.approved_by.is_some() || r.denied_by.is_some());
        if r.outcome == Outcome::Ok && self.count_tools.contains(&r.name) {
            *user.counted.entry(r.name.clone()).or_default() += 1;
        }
    }

    fn count_tokens(&mut self, summary: &Value) {
        let usage = summary.get("usage");
        let tokens = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_u64);
        if let (Some(session), Some(input), Some(output)) = (
            summary.get("session_id").and_then(Value::as_str),
            tokens("input_tokens"),
            tokens("output_tokens"),
        ) {
            let entry = self.tokens.entry(session.to_owned()).or_default();
            entry.0 += input;
            entry.1 += output;
        }
    }

    /// The waits of the decided calls whose paused line is in the trail.
    pub fn waits(&self) -> Distribution {
        Distribution::of(self.decided.iter().filter_map(|d| d.waited_us).collect())
    }
}

fn micros(from: SystemTime, to: SystemTime) -> u64 {
    to.duration_since(from)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn decided(asked: Option<&AuditRecord>, last: &AuditRecord) -> Decided {
    let resolution = match (&last.approved_by, &last.denied_by) {
        (Some(by), _) => Resolution::Approved {
            by: by.clone(),
            outcome: last.outcome,
        },
        (None, Some(by)) => Resolution::Declined { by: by.clone() },
        // The resuming dispatcher's text for a turn past its `pending_ttl`.
        (None, None)
            if last.outcome == Outcome::Blocked
                && last.content.contains("approval longer than") =>
        {
            Resolution::Expired
        }
        (None, None) => Resolution::Other {
            outcome: last.outcome,
        },
    };
    let asked_by = match asked {
        Some(a) if !a.asked_by.is_empty() => a.asked_by.clone(),
        _ => last.asked_by.clone(),
    };
    Decided {
        asked_at: asked.map_or(last.ts, |a| a.ts),
        decided_at: last.ts,
        session_id: last.session_id.clone(),
        user_id: last.user_id.clone(),
        name: last.name.clone(),
        tool_use_id: last.tool_use_id.clone(),
        asked_by,
        resolution,
        waited_us: asked.map(|a| micros(a.ts, last.ts)),
    }
}

fn waiting(r: &AuditRecord, options: &ReportOptions) -> Waiting {
    let expires_at = r.ts + options.pending_ttl;
    Waiting {
        since: r.ts,
        expires_at,
        expired: expires_at < options.now,
        session_id: r.session_id.clone(),
        user_id: r.user_id.clone(),
        name: r.name.clone(),
        tool_use_id: r.tool_use_id.clone(),
        asked_by: r.asked_by.clone(),
    }
}
