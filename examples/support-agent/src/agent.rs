//! The two specialists (`specialist.rs`), built from one registry, and the replay of one
//! transcript through them.

use std::collections::BTreeMap;
use std::sync::Arc;

use toolgate::{
    BuildError, CallError, Dispatcher, HookContext, Message, Reply, RespondError, Session,
    approval::{Approval, AwaitingCall, Decisions, PendingTurn, ResumeError},
    audit::{AuditLog, Outcome, SessionSummary},
    dispatch::{Clock, DispatcherBuilder},
};

use super::ledger::{EnterError, Ledger, LedgerFailed, Refund};
use super::observer::{CallLine, CallLog};
use super::policy::WeeklyRefundLimit;
use super::specialist::Specialist;
use super::state::State;
use super::tools::TicketQueue;
use super::transcript::Transcript;

/// One specialist's dispatcher and the state it was given (fresh for every transcript).
pub struct Agent {
    /// The dispatcher.
    pub dispatcher: Dispatcher,
    /// The refund ledger the tools and hooks share.
    pub ledger: Arc<Ledger>,
    /// What the `record_call` observer saw.
    pub calls: Arc<CallLog>,
}

impl Agent {
    /// Builds `specialist` from the items registered under the agent's module path (its tools in
    /// `tools`, hooks in `policy`, observer in `output`), with a fresh ledger, and with
    /// `audit` as its audit log when given. A tool without a declared effect counts as a write
    /// (`undeclared_effects_are_writes`): every write tool has a rule, or says why it needs none.
    pub fn build(specialist: Specialist, audit: Option<&AuditLog>) -> Result<Agent, BuildError> {
        Agent::build_with(specialist, audit, |b| b)
    }

    /// [`build`](Self::build), with `extra` adding to the builder before it builds (a test adds
    /// a hook that cannot decide, to see the agent halt).
    pub fn build_with(
        specialist: Specialist,
        audit: Option<&AuditLog>,
        extra: impl FnOnce(DispatcherBuilder) -> DispatcherBuilder,
    ) -> Result<Agent, BuildError> {
        Agent::assemble(
            specialist,
            audit,
            WeeklyRefundLimit::default(),
            Ledger::default(),
            extra,
        )
    }

    /// [`build`](Self::build) on `ledger` (a world of the store's ledger) instead of a fresh one.
    pub fn build_on(
        specialist: Specialist,
        audit: Option<&AuditLog>,
        ledger: Ledger,
    ) -> Result<Agent, BuildError> {
        Agent::assemble(
            specialist,
            audit,
            WeeklyRefundLimit::default(),
            ledger,
            |b| b,
        )
    }

    /// `specialist` with another weekly refund limit and no audit log (a what-if replay).
    pub fn build_with_limit(
        specialist: Specialist,
        limit: WeeklyRefundLimit,
    ) -> Result<Agent, BuildError> {
        Agent::assemble(specialist, None, limit, Ledger::default(), |b| b)
    }

    fn assemble(
        specialist: Specialist,
        audit: Option<&AuditLog>,
        limit: WeeklyRefundLimit,
        ledger: Ledger,
        extra: impl FnOnce(DispatcherBuilder) -> DispatcherBuilder,
    ) -> Result<Agent, BuildError> {
        let ledger = Arc::new(ledger);
        let calls = Arc::new(CallLog::default());
        let builder = Dispatcher::builder().registered_under(super::AGENT_PATH);
        let builder = match specialist {
            Specialist::Refunds => builder.without_tools(["create_jira_ticket"]),
            Specialist::Triage => builder.only_tools([
                "lookup_user",
                "get_order_details",
                "search_faq",
                "create_jira_ticket",
            ]),
        };
        let mut builder = builder
            .undeclared_effects_are_writes()
            .state_arc(Arc::clone(&ledger))
            .state_arc(Arc::clone(&calls))
            .state(TicketQueue::default())
            .state(limit);
        if let Some(log) = audit {
            builder = builder.audit_log(log.clone());
        }
        Ok(Agent {
            dispatcher: extra(builder).build()?,
            ledger,
            calls,
        })
    }
}

/// What became of one assistant message.
#[derive(Debug)]
pub struct MessageReplay {
    /// The user message answering it (one `tool_result` per `tool_use`, in order); `None` when
    /// the message has no `tool_use` or stopped at `max_tokens`. After a halt, the halt's
    /// answer.
    pub answer: Option<Message>,
    /// What the observer recorded for its `tool_use` blocks, in order.
    pub calls: Vec<CallLine>,
    /// Why the message got no regular answer (`max_tokens`, a halt, a pause).
    pub problem: Option<String>,
}

/// What became of one transcript.
#[derive(Debug)]
pub struct SessionReplay {
    /// One entry per assistant message that was replayed (after a halt, none more).
    pub messages: Vec<MessageReplay>,
    /// `Session::end`'s summary.
    pub summary: SessionSummary,
    /// Set when a PreToolUse hook failed: the agent halted and later messages were not replayed.
    pub halted: Option<String>,
    /// The customer's refunds in the session's world, every conversation's (or why they could
    /// not be read).
    pub refunds: Result<Vec<Refund>, LedgerFailed>,
    /// Set when a turn paused for a person's approval that the transcript does not give: later
    /// messages were not replayed; `--resume` finishes it.
    pub pending: Option<PendingTurn>,
}

impl SessionReplay {
    /// Every call of the session, in order.
    pub fn calls(&self) -> impl Iterator<Item = &CallLine> {
        self.messages.iter().flat_map(|m| m.calls.iter())
    }
}

/// A `tool_use` whose outcome is not the transcript's expected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The block's id.
    pub tool_use_id: String,
    /// What the transcript expects.
    pub expected: Outcome,
    /// What happened; `None` when the block was never reached (the agent halted earlier).
    pub actual: Option<Outcome>,
}

/// The host's trusted context for a transcript: its user, tier and session, and a fixed clock
/// at its `now`.
pub fn hook_context(transcript: &Transcript) -> HookContext {
    let c = &transcript.context;
    HookContext::builder(c.user_id.clone(), c.session_id.clone())
        .tier(c.tier.clone())
        .clock(Clock::fixed(c.now))
        .build()
}

/// Why a transcript could not be replayed: nothing of it ran.
#[derive(Debug)]
pub enum ReplayError {
    /// The specialist did not build.
    Build(BuildError),
    /// The session cannot enter the transcript's world (it was replayed in another one), or
    /// the ledger failed.
    World(EnterError),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Build(e) => e.fmt(f),
            ReplayError::World(e) => e.fmt(f),
        }
    }
}

/// Replays `transcript` on an agent of its specialist whose ledger is the world the transcript
/// declares in `state`'s ledger (the shared one when it declares none; the session entered in
/// it first), its answers in `state`'s answer memory (see [`replay_on`]).
pub fn replay(
    transcript: &Transcript,
    audit: Option<&AuditLog>,
    state: &State,
) -> Result<SessionReplay, ReplayError> {
    let facts = &transcript.context;
    state
        .books()
        .enter(&facts.session_id, &facts.world)
        .map_err(ReplayError::World)?;
    let agent = Agent::build_on(facts.specialist, audit, state.ledger(&facts.world))
        .map_err(ReplayError::Build)?;
    let session = state.session(&agent.dispatcher, hook_context(transcript));
    Ok(replay_in(&agent, &session, transcript))
}

/// Replays `transcript` on `agent`: each assistant message is answered in turn
/// (`Session::respond`), then the session ends (Stop hooks, summary line). When a PreToolUse
/// hook cannot decide, the agent halts: the halt's answer is kept and later messages are not
/// replayed.
pub fn replay_on(agent: &Agent, transcript: &Transcript) -> SessionReplay {
    let session = agent.dispatcher.session(hook_context(transcript));
    replay_in(agent, &session, transcript)
}

/// [`replay_on`] in `session` (a session of `agent`'s dispatcher).
fn replay_in(agent: &Agent, session: &Session, transcript: &Transcript) -> SessionReplay {
    let mut messages = Vec::with_capacity(transcript.messages.len());
    let mut halted = None;
    let mut paused = None;
    for message in &transcript.messages {
        let (answer, problem) = match toolgate::block_on(session.respond(message)) {
            Ok(Reply::Answer(answer)) => (Some(answer), None),
            Ok(Reply::Pending(pending)) => match decided(transcript, &pending) {
                // The transcript carries every decision: the turn resumes with them.
                Some(decisions) => match toolgate::block_on(session.resume(&pending, &decisions)) {
                    Ok(answer) => (answer.into_message(), None),
                    Err(ResumeError::Call(CallError::Halt(halt))) => {
                        let text = halt.to_string();
                        halted = Some(text.clone());
                        (Some(halt.into_answer()), Some(text))
                    }
                    Err(other) => (None, Some(other.to_string())),
                },
                None => {
                    let ids: Vec<&str> =
                        pending.awaiting().map(|a| a.tool_use_id.as_str()).collect();
                    let text = format!("paused: {} awaiting approval", ids.join(", "));
                    paused = Some(pending);
                    (None, Some(text))
                }
            },
            // No `tool_use` (the model's closing text): nothing to send back.
            Ok(_) => (None, None),
            Err(RespondError::Call(CallError::Halt(halt))) => {
                let text = halt.to_string();
                halted = Some(text.clone());
                (Some(halt.into_answer()), Some(text))
            }
            Err(other) => (None, Some(other.to_string())),
        };
        messages.push(MessageReplay {
            answer,
            calls: agent.calls.take(),
            problem,
        });
        if halted.is_some() || paused.is_some() {
            break;
        }
    }
    let summary = session.end();
    let refunds = toolgate::block_on(agent.ledger.refunds_of(&transcript.context.user_id));
    SessionReplay {
        messages,
        summary,
        halted,
        refunds,
        pending: paused,
    }
}

/// The transcript's decisions for every waiting call of `pending`, when it has them all.
fn decided(transcript: &Transcript, pending: &PendingTurn) -> Option<Decisions> {
    let mut decisions = Decisions::builder();
    for waiting in pending.awaiting() {
        let decision = transcript.approvals.get(&waiting.tool_use_id)?;
        decisions = decisions.decide(
            waiting.tool_use_id.clone(),
            shown(decision.clone(), waiting),
        );
    }
    // Each waiting id once: the builder cannot see an id twice.
    decisions.build().ok()
}

/// The expected outcomes that did not happen, in transcript order of the ids. A call the answer
/// memory replayed is not compared: its answer was checked when an earlier run first gave it,
/// or a person has decided it since (a paused refund approved between two runs is `ok` now).
pub fn mismatches(transcript: &Transcript, replay: &SessionReplay) -> Vec<Mismatch> {
    let actual: BTreeMap<&str, Outcome> = replay
        .calls()
        .map(|c| (c.tool_use_id.as_str(), c.outcome))
        .collect();
    let replayed: Vec<&str> = replay
        .calls()
        .filter(|c| c.replay)
        .map(|c| c.tool_use_id.as_str())
        .collect();
    transcript
        .tool_use_ids()
        .filter(|id| !replayed.contains(id))
        .filter_map(|id| {
            let expected = *transcript.expected.get(id)?;
            let actual = actual.get(id).copied();
            (actual != Some(expected)).then(|| Mismatch {
                tool_use_id: id.to_owned(),
                expected,
                actual,
            })
        })
        .collect()
}

/// `approval` bound to the input the person was shown: an approval that names no input gets
/// `waiting`'s digest (a resume whose input has changed since is then refused); any other
/// decision as it is.
pub(crate) fn shown(approval: Approval, waiting: &AwaitingCall) -> Approval {
    match approval {
        Approval::Approve {
            by,
            input_digest: None,
        } => Approval::approve_digest(by, waiting.input_digest.clone()),
        other => other,
    }
}
