//! What-if replay: today's PreToolUse chains asked about a recorded audit line, and the answer
//! compared with what was decided then ([`WhatIf`], [`Flip`], [`Change`]).
//!
//! The chain runs through [`Dispatcher::pre_tool_use`](crate::Dispatcher::pre_tool_use): never
//! the tool, never the observers, nothing counted.

use std::fmt;

use serde_json::Value;

use crate::audit::outcome::Outcome;
use crate::audit::{AuditRecord, REDACTED};
use crate::hook::context::{Clock, HookContext};
use crate::pipeline::chain_verdict::ChainVerdict;

/// What today's PreToolUse chain says about one recorded `tool_use`, against the audit line.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum WhatIf {
    /// Decided as recorded: allowed with the same effective input and the same rewrites, or
    /// refused with the same outcome by the same hook.
    Unchanged,
    /// Decided differently.
    Flip(Flip),
    /// The recorded input holds redacted values ([`REDACTED`](crate::audit::REDACTED)) and today's
    /// decision differs from the recorded one: the hooks read the placeholder, not the value
    /// the model sent, so the difference may be the redaction's. Not a flip.
    Undecidable {
        /// JSON pointers of the redacted values in the recorded `input` (then
        /// `effective_input`), e.g. `["/card/number"]`.
        redacted: Vec<String>,
        /// What the chain answered with the placeholders.
        now: ChainVerdict,
    },
    /// The line records no decision of the PreToolUse chain, so it is not replayed. `why` is
    /// one of: `"a replayed answer"` (an answer a session gave again from its memory),
    /// `"not_run"`, `"cancelled"` (or the name of another outcome that is not a final decision,
    /// such as one awaiting approval).
    Skipped {
        /// Why.
        why: String,
    },
}

/// A recorded decision that today's chain makes differently.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Flip {
    /// What changed.
    pub change: Change,
    /// The hook responsible: for [`Change::NowBlocked`] and [`Change::OtherBlockingHook`] the
    /// hook that refuses today; for [`Change::NowAllowed`] the hook that refused then; for
    /// [`Change::OtherRewrite`] the first hook whose rewrites differ. `None` when no hook is at
    /// fault (the input no longer validates, the tool is gone).
    pub hook: Option<String>,
    /// The recorded outcome (`ok`, `blocked`, …).
    pub was: Outcome,
    /// What the chain answers today.
    pub now: ChainVerdict,
}

/// How a decision changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Change {
    /// The tool ran then (any outcome of a call that reached its tool); today the chain
    /// refuses it.
    NowBlocked,
    /// Refused then (`blocked`, `invalid_input`, `unknown_tool`, `hook_failed`,
    /// `hook_timeout`); today the chain allows it.
    NowAllowed,
    /// Allowed both times, but the tool would get another input, or other hooks rewrote it.
    OtherRewrite,
    /// Refused both times, by another hook or with another outcome.
    OtherBlockingHook,
    /// Today a hook asks for a person's approval ([`Decision::Ask`](crate::Decision::Ask)),
    /// where the call then ran or was refused with no hook asking. (A call a hook asked about
    /// then, approved, declined or expired, and asked about again today, is unchanged.)
    NowAsks,
}

impl Change {
    /// `allowed → blocked`, `blocked → allowed`, `other rewrite`, `other blocking hook`,
    /// `→ needs approval`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Change::NowBlocked => "allowed → blocked",
            Change::NowAllowed => "blocked → allowed",
            Change::OtherRewrite => "other rewrite",
            Change::OtherBlockingHook => "other blocking hook",
            Change::NowAsks => "→ needs approval",
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the line says the chain decided.
enum Recorded<'r> {
    /// The tool ran with `input` after the rewrites of `by`.
    Allowed { input: &'r Value, by: &'r [String] },
    /// Refused with `outcome`, at `hook`.
    Refused {
        outcome: Outcome,
        hook: Option<&'r str>,
    },
}

/// The context a recorded call ran in, rebuilt from its line: user id, session id, tier, and a
/// clock fixed at the line's `ts`.
pub(crate) fn context_of(record: &AuditRecord) -> HookContext {
    let mut b = HookContext::builder(record.user_id.clone(), record.session_id.clone())
        .clock(Clock::fixed(record.ts));
    if let Some(tier) = &record.tier {
        b = b.tier(tier.clone());
    }
    b.build()
}

/// Why a line is not replayed, or `None` when it records a decision of the chain.
pub(crate) fn skipped(record: &AuditRecord) -> Option<WhatIf> {
    if record.replay {
        return Some(WhatIf::Skipped {
            why: "a replayed answer".to_owned(),
        });
    }
    match recorded(record) {
        Some(_) => None,
        None => Some(WhatIf::Skipped {
            why: record.outcome.as_str().to_owned(),
        }),
    }
}

fn recorded(record: &AuditRecord) -> Option<Recorded<'_>> {
    Some(match record.outcome {
        Outcome::Ok | Outcome::ToolError | Outcome::Panicked | Outcome::ToolTimeout => {
            Recorded::Allowed {
                input: record.effective_input.as_ref().unwrap_or(&record.input),
                by: &record.rewritten_by,
            }
        }
        outcome @ (Outcome::Blocked
        | Outcome::InvalidInput
        | Outcome::UnknownTool
        | Outcome::HookFailed
        | Outcome::HookTimeout) => Recorded::Refused {
            outcome,
            hook: record.blocked_by.as_deref(),
        },
        _ => return None,
    })
}

/// Compares today's answer `now` with what `record` says was decided (a line [`skipped`]
/// does not reach this).
pub(crate) fn compare(record: &AuditRecord, now: ChainVerdict) -> WhatIf {
    let Some(was) = recorded(record) else {
        return WhatIf::Skipped {
            why: record.outcome.as_str().to_owned(),
        };
    };
    let flip = match (&was, &now) {
        (
            Recorded::Allowed { input, by },
            ChainVerdict::Allow {
                input: today,
                rewritten_by,
            },
        ) => {
            if input == &today && by == rewritten_by {
                None
            } else {
                let first_other = by
                    .iter()
                    .zip(rewritten_by.iter())
                    .find(|(a, b)| a != b)
                    .map(|(_, b)| b.clone())
                    .or_else(|| rewritten_by.get(by.len()).cloned())
                    .or_else(|| by.get(rewritten_by.len()).cloned())
                    .or_else(|| rewritten_by.last().cloned());
                Some((Change::OtherRewrite, first_other))
            }
        }
        (Recorded::Allowed { .. }, ChainVerdict::Refuse { blocked_by, .. }) => {
            Some((Change::NowBlocked, blocked_by.clone()))
        }
        (Recorded::Refused { hook, .. }, ChainVerdict::Allow { .. }) => {
            Some((Change::NowAllowed, hook.map(str::to_owned)))
        }
        (
            Recorded::Refused { outcome, hook },
            ChainVerdict::Refuse {
                outcome: today,
                blocked_by,
                ..
            },
        ) => (outcome != today || *hook != blocked_by.as_deref())
            .then(|| (Change::OtherBlockingHook, blocked_by.clone())),
        (_, ChainVerdict::Ask { asked_by, .. }) => {
            // Asked then too (approved, declined, expired or still waiting): unchanged.
            let asked_then = !record.asked_by.is_empty();
            (!asked_then).then(|| (Change::NowAsks, asked_by.first().map(|a| a.hook.clone())))
        }
    };
    let Some((change, hook)) = flip else {
        return WhatIf::Unchanged;
    };
    let redacted = redacted_pointers(record);
    if !redacted.is_empty() {
        return WhatIf::Undecidable { redacted, now };
    }
    WhatIf::Flip(Flip {
        change,
        hook,
        was: record.outcome,
        now,
    })
}

/// The JSON pointers of the values equal to [`REDACTED`] in the record's `input`, then in its
/// `effective_input` (prefixed `effective_input`), without repeats.
fn redacted_pointers(record: &AuditRecord) -> Vec<String> {
    let mut out = Vec::new();
    walk(&record.input, &mut String::new(), &mut out);
    if let Some(effective) = &record.effective_input {
        let mut more = Vec::new();
        walk(effective, &mut String::new(), &mut more);
        for p in more {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

fn walk(value: &Value, at: &mut String, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s == REDACTED => out.push(at.clone()),
        Value::Object(map) => {
            for (k, v) in map {
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                walk(v, at, out);
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = at.len();
                at.push('/');
                at.push_str(&i.to_string());
                walk(v, at, out);
                at.truncate(len);
            }
        }
        _ => {}
    }
}
