//! What a store does for the inbox ([`InboxStore`]), a turn ready to resume with its decisions
//! ([`ReadyTurn`]), and the tools a dispatcher publishes so the inbox can check an edit without
//! the agent's code ([`PublishedTools`], [`ToolSchema`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::decisions::Decisions;
use crate::approval::pending::PendingTurn;
use crate::dispatch::dispatcher::Dispatcher;
use crate::pipeline::inner::Backend;
use crate::store::{PendingStore, StoreError, StoreFuture, Token};

use super::call::InboxTurn;
use super::decide::{Attempt, Recorded};
use super::query::{Page, Query};

/// A paused turn that no longer waits for anyone: each of its waiting calls was decided or
/// expired. Taken by one worker ([`InboxStore::take_ready`]) and resumed with
/// [`Session::resume_ready`](crate::Session::resume_ready).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReadyTurn {
    /// The turn as it was kept.
    pub turn: PendingTurn,
    /// One decision per decided call (an approval names the digest approved; a two-person
    /// call's approval names both people, `a, b`).
    pub decisions: Decisions,
    /// The `tool_use` ids of the calls nobody decided before their expiry, in order: each
    /// resumes as expired (not run; the model reads that it expired).
    pub expired: Vec<String>,
    /// The take's token ([`Token`]): the resume holds the take under it, and its answer is
    /// recorded under it ([`InboxStore::finished`]).
    pub token: Token,
    /// The take's lease: how long it holds from its last renewal (a store that renews keeps it
    /// alive while the resume runs).
    pub lease: Duration,
}

impl ReadyTurn {
    /// A ready turn: `turn`, its `decisions`, and the ids of its `expired` calls, taken under
    /// `token` for `lease`.
    pub fn new(
        turn: PendingTurn,
        decisions: Decisions,
        expired: Vec<String>,
        token: Token,
        lease: Duration,
    ) -> ReadyTurn {
        ReadyTurn {
            turn,
            decisions,
            expired,
            token,
            lease,
        }
    }
}

/// How an input's integers are read when an edit is checked: as the tool itself reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Integers {
    /// As serde_json does (a `#[tool]`'s argument type): `2.0` is not an integer.
    Serde,
    /// As JSON Schema does (a wrapped caller's schema): `2.0` is one.
    JsonSchema,
}

/// One tool's input schema, as the inbox checks an edit against it: the schema the dispatcher
/// itself validates inputs with (objects closed: an unknown field is a problem).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// Its validation schema (`$ref`s within it).
    pub input_schema: Value,
    /// How its integers are read.
    pub integers: Integers,
}

/// The tools of one dispatcher, by its fingerprint: what the inbox checks an edit of a call
/// against when the process deciding (a `toolgate` inbox) does not have the agent's
/// dispatcher. A worker publishes its own at start ([`Inbox::publish`](super::Inbox::publish));
/// the fingerprint covers every tool's schema, so the schemas published under it are the ones
/// the paused calls were checked by.
///
/// JSON: `{"fingerprint": "5f0c…", "tools": [{"name": "issue_refund", "input_schema": {…},
/// "integers": "serde"}]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PublishedTools {
    /// The dispatcher's [`fingerprint`](crate::Dispatcher::fingerprint).
    pub fingerprint: String,
    /// Its tools, by name.
    pub tools: Vec<ToolSchema>,
}

impl PublishedTools {
    /// The tools of `dispatcher`, with its fingerprint.
    pub fn of(dispatcher: &Dispatcher) -> PublishedTools {
        let inner = &dispatcher.inner;
        PublishedTools {
            fingerprint: inner.fingerprint(),
            tools: inner
                .tools
                .iter()
                .map(|t| ToolSchema {
                    name: t.name.to_string(),
                    input_schema: t.validation.clone(),
                    integers: match t.backend {
                        Backend::Local(_) => Integers::Serde,
                        Backend::Caller { .. } => Integers::JsonSchema,
                    },
                })
                .collect(),
        }
    }

    /// The tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolSchema> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A [`PendingStore`] whose paused turns people decide on: the inbox's store. Its `put` keeps,
/// in the same atomic step as the turn, one row per waiting call (an index: the list reads no
/// turn's JSON), with its expiry counted by the store's clock from that moment
/// ([`PendingTurn::ttl`] later).
///
/// Every method is one atomic step in the store (one statement or one transaction), and every
/// instant is the store's clock (PostgreSQL's `now()`, SQLite's and the in-memory store's the
/// process's wall clock), never a caller's:
///
/// - [`decide`](Self::decide) records one person's decision on one call only while the call
///   waits, before its expiry, for the input digest the person was shown; otherwise it says
///   why ([`Refusal`](super::Refusal)), changing nothing. An idempotency key is unique in the
///   store: the same key gets the first answer, whatever it was.
/// - [`take_ready`](Self::take_ready) takes one turn whose every waiting call is decided or
///   expired, as [`PendingStore::take`] takes a turn (one taker wins; a lease), recording
///   its undecided calls as expired in the same step, so no decision lands after it.
///
/// [`conformance::inbox_store`](super::conformance::inbox_store) checks all of it. Implemented
/// by [`MemoryPendingStore`](crate::store::MemoryPendingStore), `SqliteStore` (feature
/// `sqlite`) and `PostgresStore` (feature `postgres`).
pub trait InboxStore: PendingStore {
    /// One page of the calls `query` asks for, in its order, after its cursor.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    fn list<'a>(&'a self, query: &'a Query) -> StoreFuture<'a, Result<Page, StoreError>>;

    /// The paused turn (`session_id`, `turn_id`) with every waiting call and its input; `None`
    /// when no such turn is kept.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    fn turn<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
    ) -> StoreFuture<'a, Result<Option<InboxTurn>, StoreError>>;

    /// Records `attempt` atomically: with an idempotency key seen before, its first answer
    /// (`replayed`, nothing changed; [`Refusal::KeyReused`](super::Refusal::KeyReused) when the
    /// key came with another request); with a refusal found before the store, that refusal,
    /// kept under the key; else the decision, when the call takes it now (see the module docs
    /// for the rules), or why not. An unknown turn or call is refused and nothing is kept.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: nothing is recorded.
    fn decide<'a>(&'a self, attempt: &'a Attempt) -> StoreFuture<'a, Result<Recorded, StoreError>>;

    /// Takes, oldest first, one turn of the dispatcher `fingerprint` whose waiting calls are
    /// all decided or expired (and that no one resumed, or whose take's lease ran out), for
    /// `lease`, under a [`Token`] the store draws for the take ([`ReadyTurn::token`]): exactly
    /// one of any number of callers gets it; its undecided calls are recorded as expired in the
    /// same step. `None`: no turn is ready.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: nothing is taken.
    fn take_ready<'a>(
        &'a self,
        fingerprint: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Option<ReadyTurn>, StoreError>>;

    /// The turn taken under `token` was resumed into `answer`: as [`PendingStore::resumed`],
    /// and it leaves the inbox's ready turns, in one step.
    ///
    /// # Errors
    /// [`StoreError::fenced`] when the take of `token` no longer holds the turn (its lease ran
    /// out and another worker took it): nothing changes. Another [`StoreError`] when it cannot
    /// be recorded (the turn is taken again after the lease and the answer memory replays its
    /// answers).
    fn finished<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.resumed(session_id, turn_id, token, answer)
    }

    /// Keeps `tools` under their fingerprint (published again, they replace what was kept: the
    /// fingerprint covers every schema, so both are the same).
    ///
    /// # Errors
    /// [`StoreError`] when they cannot be kept.
    fn publish_tools<'a>(
        &'a self,
        tools: &'a PublishedTools,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The tools kept under `fingerprint`, when a dispatcher published them.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    fn published_tools<'a>(
        &'a self,
        fingerprint: &'a str,
    ) -> StoreFuture<'a, Result<Option<PublishedTools>, StoreError>>;

    /// Whether [`decide`](Self::decide) also appends each attempt's audit line (the
    /// `decisions` chain) in the decision's own transaction: PostgreSQL does. When not, the
    /// [`Inbox`](super::Inbox) writes it to its [`DecisionLog`](super::DecisionLog) once the
    /// store answered.
    fn audits_decisions(&self) -> bool {
        false
    }
}
