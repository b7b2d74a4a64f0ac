//! A person's approval of a call a PreToolUse hook asked about ([`Decision::Ask`]): who asked
//! and why ([`Asked`]), what a person answers ([`Approval`]), the [`Approver`] a host gives the
//! builder to answer inline, and the turn paused when nobody answers inline ([`PendingTurn`]),
//! resumed later with [`Session::resume`](crate::Session::resume) ([`ResumeError`]).
//!
//! You need it when a rule asks a person (`Decision::ask`): to approve inline, or to keep a
//! paused turn (a database row, a file) and finish it when the person has decided. With the
//! `inbox` feature, [`inbox`] lists the paused calls of a store for the people allowed to
//! decide them, records each decision once, and resumes ready turns once across a fleet.
//!
//! [`Decision::Ask`]: crate::Decision::Ask

pub(crate) mod ask;
#[cfg(feature = "inbox")]
pub use crate::inbox;
pub(crate) mod decisions;
pub(crate) mod pending;
pub(crate) mod seal;

pub use ask::{Approval, ApprovalRequest, Approver, Asked};
pub use decisions::{Decisions, DecisionsBuilder, DuplicateDecision};
pub use pending::{
    AwaitingCall, PENDING_TURN_FORMAT, PendingBlock, PendingTurn, ResumeError, Resumed,
    SealProblem, TurnFormat, input_digest,
};
#[cfg(feature = "seal")]
pub use seal::{InvalidSealKey, SealKey, SealKeys};
