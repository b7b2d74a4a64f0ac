//! [`Decisions`]: a person's decisions about the calls of one paused turn, one per `tool_use`
//! id, and [`DuplicateDecision`], why two decisions for one id are refused.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::{Approval, AwaitingCall};

/// The decisions a person made about the waiting calls of one [`PendingTurn`](super::PendingTurn),
/// at most one per `tool_use` id: what [`Session::resume`](crate::Session::resume) takes.
///
/// An id decided twice is refused wherever the decisions come from, so a host never has to
/// guess which of two decisions a person meant: [`DecisionsBuilder::build`] and the JSON reader
/// both answer [`DuplicateDecision`] naming the id, and nothing runs. (A `BTreeMap` or a
/// `serde_json::Map` read from a page's form keeps the last of two decisions for one key
/// silently: approve-then-deny would run the call a person also declined.)
///
/// JSON: an object whose keys are `tool_use` ids and whose values are [`Approval`]s,
/// `{"toolu_2": {"decision": "approve", "by": "lead@example.com", "input_digest": "f7ad…(64
/// hex)"}, "toolu_3": {"decision": "deny", "by": "lead@example.com", "reason": "the order was
/// already refunded"}}`. An approval without `input_digest` approves whatever input the turn
/// holds: give the digest of the input the person was shown.
///
/// At resume, every waiting call of a turn that has not expired needs a decision
/// ([`ResumeError::Undecided`](super::ResumeError::Undecided) names the first without one, and
/// nothing runs); a decision for an id that is not waiting is refused
/// ([`ResumeError::NotPending`](super::ResumeError::NotPending)); a turn past its time to live
/// needs none (its waiting calls are answered `blocked`).
///
/// ```
/// use toolgate_core::approval::{Approval, AwaitingCall, Decisions};
///
/// // A waiting call as a paused turn (or `PendingStore::waiting`) shows it to the person.
/// let refund: AwaitingCall = serde_json::from_value(serde_json::json!({
///     "tool_use_id": "toolu_2", "tool": "issue_refund",
///     "input": {"order_id": "o_1", "amount_cents": 25000},
///     "effective_input": {"order_id": "o_1", "amount_cents": 25000},
///     "input_digest": "f7ad74ecaa3335bc7760abe56317c13907e609ce171d60552b3d28889a6b69cc",
///     "asked_by": [{"hook": "app::large_refund", "reason": "above 20000 cents"}]
/// })).unwrap();
/// let decisions = Decisions::builder()
///     .approve(&refund, "lead@example.com")
///     .deny("toolu_3", "lead@example.com", "the order was already refunded")
///     .build()
///     .unwrap();
/// // The approval names the input the person saw.
/// assert_eq!(decisions.get("toolu_2"),
///     Some(&Approval::approve_digest("lead@example.com", &refund.input_digest)));
///
/// // Two decisions for one id, in the builder or in JSON: refused, naming the id.
/// let twice = Decisions::builder()
///     .approve(&refund, "lead@example.com")
///     .deny("toolu_2", "lead@example.com", "no")
///     .build();
/// assert_eq!(twice.unwrap_err().to_string(),
///     "tool_use \"toolu_2\" has two decisions; decide each waiting call once");
/// let posted = r#"{"toolu_2": {"decision": "deny", "by": "a", "reason": "no"},
///                  "toolu_2": {"decision": "approve", "by": "b"}}"#;
/// let err = serde_json::from_str::<Decisions>(posted).unwrap_err();
/// assert!(err.to_string().starts_with(
///     "tool_use \"toolu_2\" has two decisions; decide each waiting call once"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Decisions {
    by_id: BTreeMap<String, Approval>,
}

impl Decisions {
    /// No decision yet: resumes only a turn past its time to live.
    pub fn new() -> Self {
        Decisions::default()
    }

    /// A builder that collects decisions and refuses, at [`build`](DecisionsBuilder::build),
    /// an id decided twice.
    pub fn builder() -> DecisionsBuilder {
        DecisionsBuilder::default()
    }

    /// Adds the decision for `tool_use_id`.
    ///
    /// # Errors
    /// [`DuplicateDecision`] when `tool_use_id` already has one (which is kept).
    pub fn insert(
        &mut self,
        tool_use_id: impl Into<String>,
        approval: Approval,
    ) -> Result<(), DuplicateDecision> {
        use std::collections::btree_map::Entry;
        match self.by_id.entry(tool_use_id.into()) {
            Entry::Occupied(e) => Err(DuplicateDecision {
                tool_use_id: e.key().clone(),
            }),
            Entry::Vacant(v) => {
                v.insert(approval);
                Ok(())
            }
        }
    }

    /// The decision for `tool_use_id`, when there is one.
    pub fn get(&self, tool_use_id: &str) -> Option<&Approval> {
        self.by_id.get(tool_use_id)
    }

    /// Whether `tool_use_id` has a decision.
    pub fn contains(&self, tool_use_id: &str) -> bool {
        self.by_id.contains_key(tool_use_id)
    }

    /// The decisions, by `tool_use` id in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Approval)> {
        self.by_id.iter().map(|(id, a)| (id.as_str(), a))
    }

    /// How many ids have a decision.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no id has a decision.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

/// Collects decisions for [`Decisions`]; [`build`](Self::build) refuses an id decided twice.
#[derive(Debug, Default)]
#[must_use = "call .build() to get the Decisions"]
pub struct DecisionsBuilder {
    decisions: Decisions,
    twice: Option<String>,
}

impl DecisionsBuilder {
    /// Adds `approval` for `tool_use_id`.
    pub fn decide(mut self, tool_use_id: impl Into<String>, approval: Approval) -> Self {
        if let Err(e) = self.decisions.insert(tool_use_id, approval) {
            self.twice.get_or_insert(e.tool_use_id);
        }
        self
    }

    /// `by` approves the waiting call `call` as the person was shown it: its `tool_use` id,
    /// bound to its [`input_digest`](AwaitingCall::input_digest)
    /// ([`Approval::approve_digest`]). Resuming a turn whose input for that call has another
    /// digest (changed since the person saw it) is refused
    /// ([`ResumeError::DigestMismatch`](super::ResumeError::DigestMismatch)) and nothing runs.
    /// Get `call` from the turn the person was shown:
    /// [`PendingStore::waiting`](crate::store::PendingStore::waiting) lists a session's
    /// paused turns, each with its [`awaiting`](super::PendingTurn::awaiting) calls.
    pub fn approve(self, call: &AwaitingCall, by: impl Into<String>) -> Self {
        let approval = Approval::approve_digest(by, call.input_digest.clone());
        self.decide(call.tool_use_id.clone(), approval)
    }

    /// `by` approves `tool_use_id` whatever input the paused turn holds for it
    /// ([`Approval::approve`], no digest): the explicit spelling, for a host that checks the
    /// input itself or approves without showing it. [`approve`](Self::approve) binds the
    /// approval to the input the person saw.
    pub fn approve_any_input(self, tool_use_id: impl Into<String>, by: impl Into<String>) -> Self {
        self.decide(tool_use_id, Approval::approve(by))
    }

    /// [`Approval::deny`] by `by` for `tool_use_id`, with a reason for the model.
    pub fn deny(
        self,
        tool_use_id: impl Into<String>,
        by: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        self.decide(tool_use_id, Approval::deny(by, reason))
    }

    /// [`Approval::edit`] by `by` for `tool_use_id`: run with `input` instead.
    pub fn edit(
        self,
        tool_use_id: impl Into<String>,
        by: impl Into<String>,
        input: serde_json::Value,
    ) -> Self {
        self.decide(tool_use_id, Approval::edit(by, input))
    }

    /// The decisions.
    ///
    /// # Errors
    /// [`DuplicateDecision`] naming the first id that was decided twice.
    pub fn build(self) -> Result<Decisions, DuplicateDecision> {
        match self.twice {
            Some(tool_use_id) => Err(DuplicateDecision { tool_use_id }),
            None => Ok(self.decisions),
        }
    }
}

/// Two decisions for one `tool_use` id: refused, since either could be the person's.
/// `Display`: `tool_use "toolu_2" has two decisions; decide each waiting call once`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateDecision {
    /// The id decided twice.
    pub tool_use_id: String,
}

impl fmt::Display for DuplicateDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool_use {:?} has two decisions; decide each waiting call once",
            self.tool_use_id
        )
    }
}

impl std::error::Error for DuplicateDecision {}

/// Read from a JSON object of id → [`Approval`], refusing a key named twice (serde's own map
/// readers keep the last value).
impl<'de> Deserialize<'de> for Decisions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Decisions;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of tool_use id to decision")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Decisions, A::Error> {
                let mut decisions = Decisions::new();
                while let Some((id, approval)) = map.next_entry::<String, Approval>()? {
                    decisions
                        .insert(id, approval)
                        .map_err(serde::de::Error::custom)?;
                }
                Ok(decisions)
            }
        }
        deserializer.deserialize_map(Each)
    }
}
