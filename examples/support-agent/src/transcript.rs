//! Transcripts: the bundled sessions, and reading and checking a transcript file before anything
//! runs.
//!
//! A transcript is one JSON object:
//!
//! ```json
//! {
//!   "_about": "what the session shows (keys starting with `_` are comments)",
//!   "context": {"user_id": "u_001", "tier": "premium", "session_id": "sess_1",
//!               "now": "2026-11-24T10:15:00Z", "specialist": "refunds", "world": "demo"},
//!   "messages": [ {"role": "assistant", "content": [ … tool_use … ], "stop_reason": "tool_use", …} ],
//!   "expected_outcomes": {"toolu_01…": "ok", "toolu_02…": "blocked"},
//!   "approvals": {"toolu_02…": {"decision": "approve", "by": "lead@example.com"}}
//! }
//! ```
//!
//! `messages` are assistant Message objects exactly as the Messages API returns them (the replay
//! writes the user turns); `expected_outcomes` is optional and names outcomes as the audit log
//! does. `now` is an RFC 3339 instant: the session's fixed clock. `world` is optional: the part
//! of the store's refund ledger the conversation pays from and is checked against (every
//! conversation declaring the same world, or none, shares its customers' totals; the bundled
//! transcripts declare `demo`, so they replay the same whatever else the store paid); a session
//! stays in the world it was first replayed in. `approvals` is optional: a person's decision per
//! `tool_use` id that a rule asks about (`decision` is `approve` or `deny`, `by` who decided,
//! `reason` optional, for a denial). A turn whose waiting calls all
//! have one is resumed with them (expect `ok` for an approved call that runs, `blocked` for a
//! denied one); otherwise the turn stays paused (expect `awaiting_approval`), the replay of the
//! transcript stops there and the pending turn is written for `--resume`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::{Map, Value};
use toolgate::{
    Message,
    approval::{Approval, Decisions},
    audit::{Outcome, printable},
    content::Role,
};

use super::ledger::SHARED_WORLD;
use super::specialist::Specialist;

/// The bundled transcripts (`transcripts/*.json`, compiled in): name and text.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "01_premium_refund.json",
        include_str!("../transcripts/01_premium_refund.json"),
    ),
    (
        "02_free_tier_unusual_phrasing.json",
        include_str!("../transcripts/02_free_tier_unusual_phrasing.json"),
    ),
    (
        "03_parallel_batch.json",
        include_str!("../transcripts/03_parallel_batch.json"),
    ),
    (
        "04_edges.json",
        include_str!("../transcripts/04_edges.json"),
    ),
    (
        "05_capability_check.json",
        include_str!("../transcripts/05_capability_check.json"),
    ),
    (
        "06_large_refund_approved.json",
        include_str!("../transcripts/06_large_refund_approved.json"),
    ),
    (
        "07_large_refund_denied.json",
        include_str!("../transcripts/07_large_refund_denied.json"),
    ),
    (
        "08_large_refund_paused.json",
        include_str!("../transcripts/08_large_refund_paused.json"),
    ),
    (
        "09_large_refund_expired.json",
        include_str!("../transcripts/09_large_refund_expired.json"),
    ),
    (
        "10_weekly_refunds.json",
        include_str!("../transcripts/10_weekly_refunds.json"),
    ),
];

/// The trusted facts of a transcript's session.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    /// The authenticated user.
    pub user_id: String,
    /// `free` or `premium`.
    pub tier: String,
    /// The session id (on every audit line).
    pub session_id: String,
    /// The fixed clock.
    pub now: SystemTime,
    /// `now` as written in the file.
    pub now_text: String,
    /// Which specialist answers.
    pub specialist: Specialist,
    /// The world of the store's ledger the conversation is in: `context.world`, or
    /// [`SHARED_WORLD`] when the transcript declares none.
    pub world: String,
}

/// A transcript, read and checked.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// Where it came from: the file's path, or the bundled file's name.
    pub source: String,
    /// The `_about` comment, when there is one.
    pub about: Option<String>,
    /// The session's facts.
    pub context: SessionFacts,
    /// The assistant messages, in order.
    pub messages: Vec<Message>,
    /// Expected outcome per `tool_use` id (empty when the file has none).
    pub expected: BTreeMap<String, Outcome>,
    /// A person's decision per `tool_use` id (empty when the file has none).
    pub approvals: Decisions,
}

impl Transcript {
    /// The ids of every `tool_use` block, in order.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.messages
            .iter()
            .flat_map(|m| m.tool_uses().map(|t| t.id.as_str()))
    }
}

/// A transcript that cannot be replayed: the file and the problem, on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptError {
    /// The file.
    pub source: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for TranscriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the parser said.
        write!(f, "{}: {}", self.source, printable(&self.problem))
    }
}

impl std::error::Error for TranscriptError {}

/// The `context` object as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContext {
    user_id: String,
    tier: String,
    session_id: String,
    now: String,
    specialist: String,
    #[serde(default)]
    world: Option<String>,
}

/// Reads and checks every bundled transcript.
pub fn bundled() -> Result<Vec<Transcript>, TranscriptError> {
    BUNDLED
        .iter()
        .map(|(name, text)| parse(name, text))
        .collect()
}

/// Reads and checks the transcript at `path`.
pub fn load(path: &Path) -> Result<Transcript, TranscriptError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TranscriptError {
        source: source.clone(),
        problem: if e.kind() == std::io::ErrorKind::InvalidData {
            "is not UTF-8 text".to_owned()
        } else {
            format!("cannot be read: {e}")
        },
    })?;
    parse(&source, &text)
}

/// Reads and checks a transcript's text; `source` names it in errors.
///
/// Checks: the text is one JSON object with `context`, `messages` and optionally
/// `expected_outcomes` (other keys only when they start with `_`); `context` has exactly
/// `user_id`, `tier` (`free` or `premium`), `session_id`, `now` (RFC 3339) and `specialist`
/// (`refunds` or `triage`), and optionally `world` (not empty); `messages` is a non-empty
/// array of assistant messages in the Messages API's shape; `tool_use` ids are unique; every
/// `expected_outcomes` key is one of them and every value an outcome name.
pub fn parse(source: &str, text: &str) -> Result<Transcript, TranscriptError> {
    let fail = |problem: String| TranscriptError {
        source: source.to_owned(),
        problem,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| fail(format!("is not JSON: {e}")))?;
    // A JSON object keeps the last of two equal keys: an approval given twice is refused from
    // the text, before it is lost.
    if let Err(e) = serde_json::from_str::<ApprovalIds>(text) {
        return Err(fail(e.to_string()));
    }
    let Value::Object(mut top) = value else {
        return Err(fail(format!(
            "must be a JSON object with `context` and `messages`, found {}",
            kind(&value)
        )));
    };
    let about = match top.get("_about") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    if let Some(key) = top.keys().find(|k| {
        !k.starts_with('_')
            && !matches!(
                k.as_str(),
                "context" | "messages" | "expected_outcomes" | "approvals"
            )
    }) {
        return Err(fail(format!(
            "unknown key `{key}` (expected `context`, `messages`, `expected_outcomes`, \
             `approvals`, or a comment key starting with `_`)"
        )));
    }

    let raw = top
        .remove("context")
        .ok_or_else(|| fail("missing key `context`".to_owned()))?;
    let raw = RawContext::deserialize(raw).map_err(|e| fail(format!("context: {e}")))?;
    if !matches!(raw.tier.as_str(), "free" | "premium") {
        return Err(fail(format!(
            "context.tier: `{}` is not a tier (expected `free` or `premium`)",
            raw.tier
        )));
    }
    let specialist = Specialist::from_name(&raw.specialist).ok_or_else(|| {
        fail(format!(
            "context.specialist: `{}` is not a specialist (expected `refunds` or `triage`)",
            raw.specialist
        ))
    })?;
    if raw.world.as_deref() == Some("") {
        return Err(fail(format!(
            "context.world: empty (name the world, or leave `world` out for the shared one, \
             `{SHARED_WORLD}`)"
        )));
    }
    let now = raw
        .now
        .parse::<jiff::Timestamp>()
        .ok()
        .and_then(|ts| SystemTime::try_from(ts).ok())
        .ok_or_else(|| {
            fail(format!(
                "context.now: `{}` is not an RFC 3339 instant like 2026-11-24T10:15:00Z",
                raw.now
            ))
        })?;

    let messages = match top.remove("messages") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(fail(format!(
                "`messages` must be an array of assistant messages, found {}",
                kind(&other)
            )));
        }
        None => return Err(fail("missing key `messages`".to_owned())),
    };
    if messages.is_empty() {
        return Err(fail("`messages` is empty: nothing to replay".to_owned()));
    }
    let messages = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let message =
                Message::deserialize(m).map_err(|e| fail(format!("messages[{i}]: {e}")))?;
            if message.role != Role::Assistant {
                return Err(fail(format!(
                    "messages[{i}]: role is `user`; a transcript holds the assistant's messages \
                     only (the replay writes the user turns)"
                )));
            }
            Ok(message)
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut ids = BTreeSet::new();
    for id in messages.iter().flat_map(|m| m.tool_uses().map(|t| &t.id)) {
        if !ids.insert(id.as_str()) {
            return Err(fail(format!("tool_use id `{id}` appears twice")));
        }
    }

    let expected = match top.remove("expected_outcomes") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(map)) => expected_outcomes(map, &ids).map_err(fail)?,
        Some(other) => {
            return Err(fail(format!(
                "`expected_outcomes` must be an object of tool_use id to outcome, found {}",
                kind(&other)
            )));
        }
    };

    let approvals = match top.remove("approvals") {
        None | Some(Value::Null) => Decisions::new(),
        Some(Value::Object(map)) => approvals(map, &ids).map_err(fail)?,
        Some(other) => {
            return Err(fail(format!(
                "`approvals` must be an object of tool_use id to decision, found {}",
                kind(&other)
            )));
        }
    };

    Ok(Transcript {
        source: source.to_owned(),
        about,
        context: SessionFacts {
            user_id: raw.user_id,
            tier: raw.tier,
            session_id: raw.session_id,
            now,
            now_text: raw.now,
            specialist,
            world: raw.world.unwrap_or_else(|| SHARED_WORLD.to_owned()),
        },
        messages,
        expected,
        approvals,
    })
}

/// A decision as a transcript writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDecision {
    decision: String,
    by: String,
    #[serde(default)]
    reason: Option<String>,
}

fn approvals(map: Map<String, Value>, ids: &BTreeSet<&str>) -> Result<Decisions, String> {
    let mut decided = Decisions::new();
    for (id, raw) in map {
        if !ids.contains(id.as_str()) {
            return Err(format!(
                "approvals: `{id}` is not the id of a tool_use block in `messages`"
            ));
        }
        let raw = RawDecision::deserialize(raw).map_err(|e| format!("approvals.{id}: {e}"))?;
        let approval = match raw.decision.as_str() {
            "approve" => Approval::approve(raw.by),
            "deny" => Approval::deny(
                raw.by,
                raw.reason
                    .unwrap_or_else(|| "the reviewer gave no reason.".to_owned()),
            ),
            other => {
                return Err(format!(
                    "approvals.{id}.decision: `{other}` is not a decision (expected `approve` or \
                     `deny`)"
                ));
            }
        };
        decided
            .insert(id, approval)
            .map_err(|e| format!("approvals: {e}"))?;
    }
    Ok(decided)
}

/// The keys of a transcript's `approvals` object, read from its text so that an id given twice
/// is refused (`approvals: tool_use "toolu_2" has two decisions; …`); everything else of the
/// transcript is read, and checked, from its `Value`.
#[derive(Deserialize)]
struct ApprovalIds {
    #[serde(default)]
    #[allow(dead_code)]
    approvals: Option<UniqueKeys>,
}

/// A JSON value whose object keys, when it is an object, are all different.
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = UniqueKeys;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<UniqueKeys, A::Error> {
                let mut seen = BTreeSet::new();
                while let Some(id) = map.next_key::<String>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    if !seen.insert(id.clone()) {
                        let twice = toolgate::approval::DuplicateDecision { tool_use_id: id };
                        return Err(serde::de::Error::custom(format!("approvals: {twice}")));
                    }
                }
                Ok(UniqueKeys)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<UniqueKeys, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(UniqueKeys)
            }
            fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
        }
        deserializer.deserialize_any(Keys)
    }
}

fn expected_outcomes(
    map: Map<String, Value>,
    ids: &BTreeSet<&str>,
) -> Result<BTreeMap<String, Outcome>, String> {
    let mut expected = BTreeMap::new();
    for (id, outcome) in map {
        if !ids.contains(id.as_str()) {
            return Err(format!(
                "expected_outcomes: `{id}` is not the id of a tool_use block in `messages`"
            ));
        }
        let outcome =
            Outcome::deserialize(&outcome).map_err(|e| format!("expected_outcomes.{id}: {e}"))?;
        expected.insert(id, outcome);
    }
    Ok(expected)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
