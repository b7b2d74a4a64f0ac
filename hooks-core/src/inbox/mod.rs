//! The approval inbox (feature `inbox`): a person decides where they work. Every call a
//! PreToolUse hook asked a person about, paused in a store
//! ([`PendingStore`](crate::store::PendingStore)), is listed for the people allowed to decide
//! it; each decision is recorded once, atomically, for the call and the input the person was
//! shown; a turn whose calls are all decided or expired is taken by one worker of a fleet and
//! resumed with those decisions.
//!
//! A page (HTTP, sign-in, the policy file: a crate of its own) holds an [`Inbox`] and calls
//! [`list`](Inbox::list), [`turn`](Inbox::turn) and [`decide`](Inbox::decide) with the signed-in
//! [`Identity`]; a worker calls [`take_ready`](Inbox::take_ready) and
//! [`Session::resume_ready`](crate::Session::resume_ready).
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolgate_core::approval::inbox::{
//!     Action, CallState, Choice, DecisionRequest, Identity, Inbox, MemoryDecisionLog, Policy,
//!     Query,
//! };
//! use toolgate_core::dispatch::{PreHookDef, ToolDef};
//! use toolgate_core::store::{MemoryPendingStore, PendingStore};
//! use toolgate_core::{Decision, Dispatcher, HookContext, Reply, ToolUse};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Refund {
//!     /// The order.
//!     order_id: String,
//!     /// Cents.
//!     amount_cents: u64,
//! }
//!
//! let dispatcher = Dispatcher::builder()
//!     .tool(ToolDef::sync("refund", "Refunds an order.", |_env, a: Refund| {
//!         Ok(format!("refunded {} on {}", a.amount_cents, a.order_id))
//!     }))
//!     .pre_hook(PreHookDef::sync("app::large_refund", 10, |_env, _call: &ToolUse| {
//!         Ok(Decision::ask("refunds need a person's approval"))
//!     }))
//!     .build()?;
//! let store = Arc::new(MemoryPendingStore::new());
//!
//! // The agent: the refund pauses, and the turn is kept in the store.
//! let context = || HookContext::builder("u_001", "sess_1").build();
//! let session = dispatcher.session(context());
//! let message = serde_json::from_value(json!({"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_1", "name": "refund",
//!      "input": {"order_id": "o_1", "amount_cents": 25000}}]}))?;
//! let Reply::Pending(turn) = toolgate_core::block_on(session.respond(&message))? else {
//!     unreachable!("the refund waits for a person")
//! };
//! toolgate_core::block_on(store.put(&turn))?;
//!
//! // The page: the lead lists the waiting calls and approves the refund they were shown.
//! let inbox = Inbox::builder(store.clone())
//!     .policy(Policy::new().allow("group:leads", &[Action::Approve], &["refund"]))
//!     .decision_log(Arc::new(MemoryDecisionLog::new()))
//!     .build()?;
//! let page = toolgate_core::block_on(inbox.list(&Query::waiting()))?;
//! let call = &page.calls[0];
//! assert_eq!(call.summary, r#"order_id="o_1", amount_cents=25000"#);
//! let lead = Identity::new("lead@example.com").in_group("leads");
//! let request = DecisionRequest::new(&call.session_id, &call.turn_id, &call.tool_use_id,
//!     &call.input_digest, Choice::Approve).idempotency_key("form-7f3a");
//! let decided = toolgate_core::block_on(inbox.decide(&lead, request.clone()))?;
//! assert_eq!(decided.state, CallState::Approved);
//! // A second click sends the same request: the first answer, nothing decided twice.
//! assert_eq!(toolgate_core::block_on(inbox.decide(&lead, request))?, decided);
//!
//! // A worker: takes the ready turn and resumes it in the turn's session.
//! let lease = std::time::Duration::from_secs(60);
//! let ready = toolgate_core::block_on(inbox.take_ready(&dispatcher.fingerprint(), lease))?
//!     .expect("every call of the turn is decided");
//! let worker = dispatcher.session(context());
//! let answer = toolgate_core::block_on(worker.resume_ready(store.as_ref(), &ready))?;
//! assert_eq!(serde_json::to_value(&answer)?, json!({"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "toolu_1", "content": "refunded 25000 on o_1"}]}));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it promises (ARCHITECTURE.md, "Contracts": "What each store promises", "The inbox")
//!
//! - **One decision per call.** [`InboxStore::decide`] is one atomic step of the store: it
//!   records a decision only while the call waits, before its expiry by the store's clock, for
//!   the input digest the person was shown. Two people deciding one call at once: one wins, the
//!   other is told who won and when ([`Refusal::AlreadyDecided`]). A second click, a second tab,
//!   a retried request with the same idempotency key gets the first answer.
//! - **Who decides.** The [`Policy`] is applied to the signed-in [`Identity`] the page passes
//!   to [`Inbox::decide`] (never a form field), by the store, to the call it reads in the
//!   decision's own atomic step: which people or groups may approve, edit or decline which
//!   tools; the user a call was made for may not decide it (unless allowed); a two-person
//!   tool's call needs two different people. A store's write takes an [`Attempt`], which only
//!   the inbox makes, so no page reaches it without the policy.
//! - **Expiry is its own state.** A call nobody decided before `expires_at` (the store's clock
//!   when it kept the turn, plus the turn's [`ttl`](crate::approval::PendingTurn::ttl)) is
//!   `expired`: a decision after it is refused as expired, and the resumed turn tells the model
//!   the call expired, never that a person declined it.
//! - **Edits.** The input is checked against the tool's input schema (published by the
//!   dispatcher under its fingerprint: [`Inbox::publish`]) before it is accepted, every problem
//!   listed; the tool cannot change; at resume the PreToolUse chain decides on the edit (a deny
//!   still wins).
//! - **Ready turns resume once.** A turn is ready when each of its waiting calls is decided or
//!   expired; [`InboxStore::take_ready`] gives it to exactly one worker of a fleet (with a
//!   lease and a token, as [`PendingStore::take`](crate::store::PendingStore::take)), with its
//!   decisions; [`Session::resume_ready`](crate::Session::resume_ready) holds the take while it
//!   resumes (a store that renews keeps it alive), and its answer is refused if the take was
//!   lost meanwhile.
//! - **Audit.** Every decision and every refused attempt (not allowed, expired, input changed,
//!   already decided, …) is a [`DecisionLine`] of the `decisions` chain: who, when, the digest
//!   they saw, their comment, what came of it. A request naming no known turn or call, or a
//!   malformed one, changes nothing and writes no line.
//!
//! # Where things live
//!
//! ARCHITECTURE.md, "Parts": `inbox/` names each file; each store's statements are beside the
//! store (`store/memory_inbox.rs`, `store/sqlite/inbox.rs`, `store/postgres/inbox.rs`).

pub(crate) mod call;
pub mod conformance;
pub(crate) mod decide;
mod edit;
mod facade;
pub(crate) mod judge;
mod line;
mod policy;
mod query;
mod store;

pub use call::{BadCursor, CallState, Cursor, InboxCall, InboxTurn, Mark, TurnCall, TurnState};
pub use decide::{
    Attempt, Choice, DecideError, Decided, DecisionRequest, EditProblem, EditedInput,
    MAX_KEY_CHARS, MAX_TEXT_CHARS, Recorded, Refusal,
};
pub use facade::{Inbox, InboxBuilder, InboxError};
pub use line::{DecisionFiles, DecisionLine, DecisionLog, MemoryDecisionLog};
pub use policy::{Action, Identity, NotAllowed, Policy, Rule};
pub use query::{Order, Page, Query};
pub use store::{InboxStore, Integers, PublishedTools, ReadyTurn, ToolSchema};

pub(crate) use call::{from_ms, now_ms};
