//! Testing your own rules: [`Replay`] runs recorded model turns (your fixtures, in the Messages
//! API's format or another API's) through your dispatcher in an ordinary `#[test]`, with the
//! trusted context you give it (a fixed clock included), and tells you, for every `tool_use`,
//! how it ended ([`Replayed`]: the outcome, the input the tool ran with, the text the model
//! read, the hooks that blocked, rewrote or asked).
//!
//! ```
//! use serde_json::json;
//! use toolgate_core::audit::Outcome;
//! use toolgate_core::dispatch::{Clock, PreHookDef, ToolDef};
//! use toolgate_core::testing::Replay;
//! use toolgate_core::{Decision, Dispatcher, HookContext, ToolUse};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Refund {
//!     /// The order.
//!     order_id: String,
//!     /// Cents.
//!     amount_cents: u64,
//! }
//!
//! // What the agent builds (its tools and rules), as a builder: the replay adds its observer.
//! let agent = Dispatcher::builder()
//!     .tool(ToolDef::sync("refund", "Refunds an order.", |_env, r: Refund| {
//!         Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
//!     }))
//!     .pre_hook(PreHookDef::sync("app::premium_only", 10, |env, _call: &ToolUse| {
//!         Ok(match env.context().tier() {
//!             Some("premium") => Decision::Allow,
//!             _ => Decision::deny("refunds are for premium customers."),
//!         })
//!     }));
//! let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_515_300);
//! let context = HookContext::builder("u_004", "sess_1")
//!     .tier("free")
//!     .clock(Clock::fixed(at))
//!     .build();
//! let replay = Replay::new(agent, context)?;
//!
//! // A recorded assistant message (a fixture file's text, read with `include_str!`).
//! let turn = replay.turn(&json!({"role": "assistant", "stop_reason": "tool_use", "content": [
//!     {"type": "tool_use", "id": "toolu_1", "name": "refund",
//!      "input": {"order_id": "o_1", "amount_cents": 900}}]}))?;
//! let refund = &turn["toolu_1"];
//! assert_eq!(refund.outcome, Outcome::Blocked);
//! assert_eq!(refund.text, "BLOCKED: refunds are for premium customers.");
//! assert_eq!(refund.blocked_by.as_deref(), Some("app::premium_only"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What a turn may be ([`Replay::turn`]), by its shape: a Messages API assistant message (or
//! the whole response); an OpenAI Chat Completions response, choice or assistant message with
//! `tool_calls`, and a Responses API response (feature `openai`); a Gemini response, candidate
//! or `model` content (feature `gemini`). A transcript ([`Replay::transcript`]) is a JSON array
//! of such turns, or a conversation as the API takes it (`{"messages": […]}`, `{"contents":
//! […]}`), whose assistant turns are replayed in order and whose other entries (the user's
//! messages, the tool results a replay makes anew) are skipped.
//!
//! Every turn of one `Replay` goes through one session (its answer memory included: a turn
//! replayed twice is answered from memory, `replay: true`), so a rule about a total sees the
//! calls before it. Hooks that read application state see its state as the test sets it up.
//! To ask the PreToolUse chain alone about one `tool_use`, without the tool, use
//! [`Dispatcher::pre_tool_use`].

mod shape;

use std::ops::Index;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::approval::ask::Asked;
use crate::approval::decisions::Decisions;
use crate::approval::pending::{PendingTurn, ResumeError};
use crate::audit::outcome::{CallRecord, Outcome};
use crate::dispatch::builder::{BuildError, DispatcherBuilder};
use crate::dispatch::dispatcher::Dispatcher;
use crate::error::RespondError;
use crate::hook::context::HookContext;
use crate::hook::definitions::PostHookDef;
use crate::session::Session;
use crate::session::reply::Reply;

pub use shape::ReplayError;

/// The path the replay's observer is registered under.
const OBSERVER: &str = "toolgate::testing::Replay";

/// Recorded turns replayed through a dispatcher, in one session with a context the test
/// gives (see the [module docs](self)). Built from the agent's [`DispatcherBuilder`], to which
/// it adds one PostToolUse observer that keeps each call's record.
pub struct Replay {
    dispatcher: Dispatcher,
    session: Session,
    seen: Arc<Mutex<Vec<Replayed>>>,
    turns: Mutex<usize>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("dispatcher", &self.dispatcher)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// How one `tool_use` of a replayed turn ended: what its audit line would say, owned.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Replayed {
    /// The `tool_use` id.
    pub tool_use_id: String,
    /// The tool's name, as the model sent it.
    pub name: String,
    /// How it ended (`awaiting_approval` for a call the turn paused on).
    pub outcome: Outcome,
    /// The input the tool ran with (or would have): after normalization and every rewrite.
    pub input: Value,
    /// The hooks that rewrote the input, in order (empty when none did).
    pub rewritten_by: Vec<String>,
    /// The text the model read (`""` when there is no result: a paused or cancelled call).
    pub text: String,
    /// The result's `is_error`.
    pub is_error: bool,
    /// The hook that denied, failed or timed out.
    pub blocked_by: Option<String>,
    /// The hooks that asked a person, with their reasons.
    pub asked_by: Vec<Asked>,
    /// Answered from the session's memory: nothing ran.
    pub replay: bool,
}

impl Replayed {
    fn of(record: &CallRecord<'_>) -> Replayed {
        let result = record.result;
        Replayed {
            tool_use_id: record.call.id.clone(),
            name: record.call.name.clone(),
            outcome: record.outcome,
            input: record.effective_input.unwrap_or(record.input).clone(),
            rewritten_by: record.rewritten_by.iter().map(|&h| h.to_owned()).collect(),
            text: result
                .map(|r| r.content_text().into_owned())
                .unwrap_or_default(),
            is_error: result.is_some_and(|r| r.is_error),
            blocked_by: record.blocked_by.map(str::to_owned),
            asked_by: record.asked_by.to_vec(),
            replay: record.replay,
        }
    }
}

/// One replayed turn: how each of its calls ended, in `tool_use` order, and what the session
/// answered. `turn["toolu_1"]` is the call of that id (and panics, naming the ids there are,
/// when the turn has none: a test's failure).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Turn {
    /// Each call, in `tool_use` order.
    pub calls: Vec<Replayed>,
    /// The answer to send the model (the Messages API's user message, or another API's items,
    /// as JSON), when the turn was answered.
    pub answer: Option<Value>,
    /// The turn paused for a person: resume it with [`Replay::resume`].
    pub pending: Option<PendingTurn>,
    /// The stop reason of a turn with nothing to run.
    pub stop_reason: Option<String>,
    /// Why the turn gave no answer: a halt (a hook could not decide; its calls are in `calls`
    /// as `hook_failed` or `hook_timeout`, the later ones `not_run`), a turn cut at its output
    /// limit, a refused id, the answer memory.
    pub error: Option<RespondError>,
}

impl Turn {
    /// The call of `tool_use_id`, when the turn has one.
    pub fn call(&self, tool_use_id: &str) -> Option<&Replayed> {
        self.calls.iter().find(|c| c.tool_use_id == tool_use_id)
    }

    /// Each call's id and outcome, in order: `[("toolu_1", Outcome::Ok), …]`.
    pub fn outcomes(&self) -> Vec<(&str, Outcome)> {
        self.calls
            .iter()
            .map(|c| (c.tool_use_id.as_str(), c.outcome))
            .collect()
    }
}

impl Index<&str> for Turn {
    type Output = Replayed;

    fn index(&self, tool_use_id: &str) -> &Replayed {
        match self.call(tool_use_id) {
            Some(call) => call,
            None => panic!(
                "the turn has no call {tool_use_id:?}; its calls are {:?}",
                self.calls
                    .iter()
                    .map(|c| c.tool_use_id.as_str())
                    .collect::<Vec<_>>()
            ),
        }
    }
}

impl Replay {
    /// Builds `agent` with an observer that keeps every call's record, and opens one session
    /// with `context` (give it a fixed clock, [`Clock::fixed`](crate::dispatch::Clock::fixed),
    /// for rules that read the time).
    ///
    /// # Errors
    /// The [`BuildError`] of `agent`'s `build()`.
    pub fn new(agent: DispatcherBuilder, context: HookContext) -> Result<Replay, BuildError> {
        let seen: Arc<Mutex<Vec<Replayed>>> = Arc::default();
        let keep = Arc::clone(&seen);
        let observer = PostHookDef::sync(OBSERVER, move |_env, record| {
            lock(&keep).push(Replayed::of(record));
            Ok(())
        });
        let dispatcher = agent.post_hook(observer).build()?;
        let session = dispatcher.session(context);
        Ok(Replay {
            dispatcher,
            session,
            seen,
            turns: Mutex::new(0),
        })
    }

    /// The dispatcher built (for [`Dispatcher::pre_tool_use`], definitions, …).
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// The session the turns go through.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Replays one recorded assistant turn, of any API (see the [module docs](self)).
    ///
    /// # Errors
    /// [`ReplayError`] when `turn` is not a turn this build reads (an unknown shape, an API
    /// whose feature is off, a call item that cannot be read, a user message). A turn the
    /// session refused or halted is not an error: its [`Turn::error`] says why.
    pub fn turn(&self, turn: &Value) -> Result<Turn, ReplayError> {
        let api = shape::api_of(turn)?;
        let number = {
            let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
            *turns += 1;
            *turns - 1
        };
        let reply = crate::block_on(shape::respond(&self.session, api, turn, number));
        let calls = std::mem::take(&mut *lock(&self.seen));
        let mut done = Turn {
            calls,
            answer: None,
            pending: None,
            stop_reason: None,
            error: None,
        };
        match reply {
            Ok(Reply::Answer(answer)) => done.answer = Some(answer),
            Ok(Reply::Pending(pending)) => done.pending = Some(pending),
            Ok(Reply::NothingToRun { stop_reason }) => done.stop_reason = stop_reason,
            Err(RespondError::Convert(e)) => return Err(ReplayError::Unreadable(e.to_string())),
            Err(RespondError::NotAssistant) => return Err(ReplayError::NotAssistant),
            Err(e) => done.error = Some(e),
        }
        Ok(done)
    }

    /// Replays a transcript: a JSON array of turns, or a conversation (`{"messages": […]}` of
    /// the Messages API or OpenAI Chat Completions, `{"contents": […]}` of Gemini) whose
    /// assistant turns are replayed in order (the other entries are skipped: the replay
    /// answers every call anew). One [`Turn`] per replayed turn.
    ///
    /// # Errors
    /// [`ReplayError::NotATranscript`], or the first turn's error ([`turn`](Self::turn)),
    /// naming its place.
    pub fn transcript(&self, transcript: &Value) -> Result<Vec<Turn>, ReplayError> {
        let mut turns = Vec::new();
        for (index, entry) in shape::assistant_turns(transcript)? {
            let turn = self.turn(entry).map_err(|e| ReplayError::InTranscript {
                index,
                error: Box::new(e),
            })?;
            turns.push(turn);
        }
        Ok(turns)
    }

    /// Resumes a turn that paused ([`Turn::pending`]) with a person's `decisions`, in the same
    /// session: the resumed calls as a [`Turn`] whose `answer` is the whole turn's.
    ///
    /// # Errors
    /// The [`ResumeError`] of [`Session::resume`].
    pub fn resume(
        &self,
        pending: &PendingTurn,
        decisions: &Decisions,
    ) -> Result<Turn, ResumeError> {
        let resumed = crate::block_on(self.session.resume(pending, decisions));
        let calls = std::mem::take(&mut *lock(&self.seen));
        let answer = resumed?;
        Ok(Turn {
            calls,
            answer: Some(serde_json::to_value(answer).unwrap_or_default()),
            pending: None,
            stop_reason: None,
            error: None,
        })
    }
}

fn lock(seen: &Mutex<Vec<Replayed>>) -> std::sync::MutexGuard<'_, Vec<Replayed>> {
    // Nothing panics while holding it; a poisoned lock still holds valid records.
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}
