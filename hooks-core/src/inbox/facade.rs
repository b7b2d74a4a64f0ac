//! [`Inbox`]: what a page (or a worker) holds: a store, the [`Policy`] every decision is held to
//! in the store's atomic step, the tools an edit is checked against, and where decision lines
//! go.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::dispatch::dispatcher::Dispatcher;
use crate::store::StoreError;

use super::call::{InboxCall, InboxTurn};
use super::decide::{
    Attempt, Choice, DecideError, Decided, DecisionRequest, EditedInput, Recorded, Refusal,
};
use super::edit::check_edit;
use super::line::{DecisionLine, DecisionLog};
use super::policy::{Action, Identity, Policy};
use super::query::{Page, Query};
use super::store::{InboxStore, PublishedTools, ReadyTurn};

/// The approval inbox over a store: list the waiting calls, show a turn, record a person's
/// decision (the policy first, then one atomic write), take a ready turn for a worker. Cheap to
/// share (`Arc<Inbox>`); every method takes `&self`. See the [module docs](super) for a whole
/// example.
pub struct Inbox {
    store: Arc<dyn InboxStore>,
    policy: Arc<Policy>,
    log: Option<Arc<dyn DecisionLog>>,
    tools: Vec<PublishedTools>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("policy", &self.policy)
            .field("decision_log", &self.log.is_some())
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// An [`Inbox`] being set up: [`Inbox::builder`].
#[must_use = "call .build() to get the Inbox"]
pub struct InboxBuilder {
    inbox: Inbox,
}

/// Why an [`InboxBuilder`] could not build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InboxError {
    /// The store does not write decision lines itself and no [`DecisionLog`] was given: every
    /// decision and refused attempt must be an audit line.
    #[error(
        "the inbox has nowhere to write its decision lines: give it a DecisionLog (the audit \
         folder's DecisionFiles), or use a store that writes them (PostgreSQL)"
    )]
    NoDecisionLog,
}

impl InboxBuilder {
    /// Who may decide what (default [`Policy::new`]: nobody may decide anything).
    pub fn policy(mut self, policy: Policy) -> InboxBuilder {
        self.inbox.policy = Arc::new(policy);
        self
    }

    /// Where decision lines go when the store does not write them itself.
    pub fn decision_log(mut self, log: Arc<dyn DecisionLog>) -> InboxBuilder {
        self.inbox.log = Some(log);
        self
    }

    /// Tools an edit is checked against, beside those published to the store (a host that has
    /// the agent's dispatcher gives [`PublishedTools::of`] it).
    pub fn tools(mut self, tools: PublishedTools) -> InboxBuilder {
        self.inbox.tools.push(tools);
        self
    }

    /// The inbox.
    ///
    /// # Errors
    /// [`InboxError::NoDecisionLog`].
    pub fn build(self) -> Result<Inbox, InboxError> {
        if self.inbox.log.is_none() && !self.inbox.store.audits_decisions() {
            return Err(InboxError::NoDecisionLog);
        }
        Ok(self.inbox)
    }
}

impl Inbox {
    /// An inbox over `store`.
    pub fn builder(store: Arc<dyn InboxStore>) -> InboxBuilder {
        InboxBuilder {
            inbox: Inbox {
                store,
                policy: Arc::new(Policy::new()),
                log: None,
                tools: Vec::new(),
            },
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What `who` may do to `call` now, by the policy (its state aside): the buttons a page
    /// shows.
    pub fn allowed(&self, who: &Identity, call: &InboxCall) -> Vec<Action> {
        [Action::Approve, Action::Edit, Action::Decline]
            .into_iter()
            .filter(|&a| self.policy.check(who, a, call).is_ok())
            .collect()
    }

    /// One page of the calls `query` asks for ([`InboxStore::list`]).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    pub async fn list(&self, query: &Query) -> Result<Page, StoreError> {
        self.store.list(query).await
    }

    /// The paused turn (`session_id`, `turn_id`) with every waiting call and its input.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    pub async fn turn(
        &self,
        session_id: &str,
        turn_id: &str,
    ) -> Result<Option<InboxTurn>, StoreError> {
        self.store.turn(session_id, turn_id).await
    }

    /// Records `who`'s decision `request` as one atomic step of the store, which applies the
    /// policy to `who` and the call it reads, and takes the decision only while the call waits,
    /// before its expiry, for the digest the person was shown; an edit is checked against the
    /// tool's input schema first. Its audit line is written before this returns. `who` is the
    /// signed-in identity: it is what the decision records as who decided.
    ///
    /// With an idempotency key seen before, the first answer, whatever it was (a retried
    /// request must not decide twice, nor be told "already decided" by its own first attempt).
    /// The calls of one turn are decided one by one: a refusal on one leaves the others as
    /// they are.
    ///
    /// # Errors
    /// [`DecideError::Refused`] with why: [`Refusal::BadRequest`], [`Refusal::UnknownTurn`]
    /// and [`Refusal::UnknownCall`] (nothing recorded, no audit line), else a refusal recorded
    /// with its audit line (not allowed, already decided, expired, input changed, …);
    /// [`DecideError::Store`] when the store failed (send it again, with its key);
    /// [`DecideError::Unaudited`] when the answer was recorded and its line could not be
    /// written.
    pub async fn decide(
        &self,
        who: &Identity,
        request: DecisionRequest,
    ) -> Result<Decided, DecideError> {
        if let Some(problem) = request.problem() {
            return Err(DecideError::Refused(Refusal::BadRequest { problem }));
        }
        let (edit, refused) = match &request.choice {
            Choice::Edit { input } => self.check_edit(&request, input).await?,
            _ => (None, None),
        };
        let attempt = Attempt::new(request, who, Arc::clone(&self.policy), edit, refused);
        let recorded = self
            .store
            .decide(&attempt)
            .await
            .map_err(DecideError::Store)?;
        self.audit(&attempt, recorded).await
    }

    /// An edit's input checked against the schema of the call's tool, published under the
    /// fingerprint of the dispatcher that paused it (or given to this inbox): the refusal when
    /// it does not fit, or when no schema is known.
    async fn check_edit(
        &self,
        request: &DecisionRequest,
        input: &Value,
    ) -> Result<(Option<EditedInput>, Option<Refusal>), DecideError> {
        let turn = self
            .store
            .turn(&request.session_id, &request.turn_id)
            .await
            .map_err(DecideError::Store)?;
        let Some(turn) = turn else {
            return Err(DecideError::Refused(Refusal::UnknownTurn {
                session_id: request.session_id.clone(),
                turn_id: request.turn_id.clone(),
            }));
        };
        let Some(shown) = turn.call(&request.tool_use_id) else {
            return Err(DecideError::Refused(Refusal::UnknownCall {
                tool_use_id: request.tool_use_id.clone(),
            }));
        };
        let call = &shown.call;
        let edit = EditedInput::new(input.clone());
        let published = match self
            .tools
            .iter()
            .find(|t| t.fingerprint == call.fingerprint)
        {
            Some(local) => Some(local.clone()),
            None => self
                .store
                .published_tools(&call.fingerprint)
                .await
                .map_err(DecideError::Store)?,
        };
        let Some(tool) = published.as_ref().and_then(|p| p.tool(&call.name)) else {
            let fingerprint = call.fingerprint.clone();
            return Ok((Some(edit), Some(Refusal::EditUncheckable { fingerprint })));
        };
        let problems = check_edit(tool, input, &shown.input);
        let refused = (!problems.is_empty()).then_some(Refusal::InvalidEdit { problems });
        Ok((Some(edit), refused))
    }

    /// Writes the attempt's line (unless the store did, the answer is a replay, or no call was
    /// found) and gives the answer.
    async fn audit(&self, attempt: &Attempt, recorded: Recorded) -> Result<Decided, DecideError> {
        if !recorded.replayed
            && !self.store.audits_decisions()
            && let (Some(log), Some((tool, user_id))) = (&self.log, &recorded.call)
        {
            let line = DecisionLine::new(attempt, tool, user_id, &recorded.answer, recorded.at);
            if let Err(error) = log.record(&line).await {
                return Err(DecideError::Unaudited {
                    answer: Box::new(recorded.answer),
                    error,
                });
            }
        }
        recorded.answer.map_err(DecideError::Refused)
    }

    /// Publishes `dispatcher`'s tools to the store under its fingerprint, so an inbox without
    /// the dispatcher checks edits of its calls: a worker calls it at start.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot keep them.
    pub async fn publish(&self, dispatcher: &Dispatcher) -> Result<(), StoreError> {
        self.store
            .publish_tools(&PublishedTools::of(dispatcher))
            .await
    }

    /// Takes one ready turn of the dispatcher `fingerprint` for `lease`
    /// ([`InboxStore::take_ready`]): resume it with
    /// [`Session::resume_ready`](crate::Session::resume_ready).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    pub async fn take_ready(
        &self,
        fingerprint: &str,
        lease: Duration,
    ) -> Result<Option<ReadyTurn>, StoreError> {
        self.store.take_ready(fingerprint, lease).await
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn InboxStore> {
        &self.store
    }
}
