//! The tests every inbox store passes: [`inbox_store`], plain async functions a store of your
//! own runs as the in-memory, SQLite and PostgreSQL stores do (as `store::conformance` does for
//! the answer memory and the paused turns).
//!
//! ```
//! use toolgate_core::approval::inbox::conformance;
//! use toolgate_core::store::MemoryPendingStore;
//!
//! toolgate_core::block_on(conformance::inbox_store(&MemoryPendingStore::new()));
//! ```
//!
//! It panics (an `assert_eq!` naming the step) at the first broken rule. Every turn it keeps
//! has a session, a user and a fingerprint of its own, unique to each run, and every list it
//! checks is filtered by them, so it can run against a database other tests share. It sleeps
//! about three seconds in all, to let expiries and leases pass (on the `futures-timer` timer:
//! no runtime needed, though a store's own futures may need one).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::approval::ask::{Approval, Asked};
use crate::approval::pending::{
    AwaitingCall, PENDING_TURN_FORMAT, PendingBlock, PendingTurn, TurnFormat, input_digest,
};
use crate::base::future::{BoxFuture, join_all};
use crate::content::message::{ToolResult, ToolUse};

use super::call::{CallState, InboxCall, Mark, TurnState, to_ms};
use super::decide::{Attempt, Choice, Decided, DecisionRequest, EditedInput, Recorded, Refusal};
use super::policy::{Action, Identity, NotAllowed, Policy};
use super::query::Query;
use super::store::{InboxStore, Integers, PublishedTools, ReadyTurn, ToolSchema};

/// A lease no step outlives.
const LONG: Duration = Duration::from_secs(600);

/// A name no other run uses.
fn fresh(what: &str) -> String {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    format!("inbox-{what}-{}-{nanos}-{n}", std::process::id())
}

async fn sleep(d: Duration) {
    futures_timer::Delay::new(d).await;
}

/// One run's names: its session, user and fingerprint.
struct Run {
    session: String,
    user: String,
    fingerprint: String,
}

impl Run {
    fn new(what: &str) -> Run {
        Run {
            session: fresh(what),
            user: fresh("user"),
            fingerprint: fresh("fingerprint"),
        }
    }

    /// A paused turn `turn_id`: an answered block first, then one waiting call per `(id, tool,
    /// input, asking hooks)`, kept for `ttl`.
    fn turn(
        &self,
        turn_id: &str,
        calls: &[(&str, &str, Value, &[&str])],
        ttl: Duration,
    ) -> PendingTurn {
        let mut blocks = vec![PendingBlock::Answered {
            result: ToolResult::text(format!("{turn_id}_answered"), "ok"),
            call: None,
        }];
        for (id, tool, input, hooks) in calls {
            let asked: Vec<Asked> = hooks
                .iter()
                .map(|h| Asked {
                    hook: (*h).to_owned(),
                    reason: format!("{h} asks"),
                })
                .collect();
            let call = ToolUse::new(*id, *tool, input.clone());
            blocks.push(PendingBlock::AwaitingApproval(AwaitingCall::new(
                &call,
                input,
                &asked,
                &[],
            )));
        }
        PendingTurn {
            format: PENDING_TURN_FORMAT,
            turn_format: TurnFormat::AnthropicMessages,
            turn_id: turn_id.to_owned(),
            turn: None,
            session_id: self.session.clone(),
            user_id: self.user.clone(),
            fingerprint: self.fingerprint.clone(),
            created_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_515_300),
            pending_ttl: Some(ttl),
            blocks,
        }
    }

    /// A turn of one waiting refund call `id` (amount `cents`), kept a day.
    fn refund_turn(&self, id: &str, cents: u64) -> PendingTurn {
        let input = json!({"order_id": format!("o_{id}"), "amount_cents": cents});
        self.turn(id, &[(id, "refund", input, &["app::large_refund"])], DAY)
    }

    /// `by`'s attempt on call `id` of turn `turn_id`, seen with `digest`, on a call one
    /// approval decides, with no idempotency key.
    fn attempt(&self, by: &str, turn_id: &str, id: &str, digest: &str, choice: Choice) -> Attempt {
        let edit = match &choice {
            Choice::Edit { input } => Some(EditedInput::new(input.clone())),
            _ => None,
        };
        let request = DecisionRequest::new(&self.session, turn_id, id, digest, choice);
        Attempt::new(request, &Identity::new(by), Arc::new(anyone()), edit, None)
    }

    /// This run's calls `query` lists (filtered by its user).
    async fn list(&self, store: &dyn InboxStore, query: Query) -> Vec<InboxCall> {
        store.list(&query.user(&self.user)).await.unwrap().calls
    }
}

const DAY: Duration = Duration::from_secs(24 * 3600);

/// `attempt` with the idempotency key `key`.
fn keyed(mut attempt: Attempt, key: &str) -> Attempt {
    attempt.request.idempotency_key = Some(key.to_owned());
    attempt
}

/// `attempt` on a two-person call (every tool needs two people).
fn two_person(mut attempt: Attempt) -> Attempt {
    attempt.policy = Arc::new(anyone().two_person("refund"));
    attempt
}

/// A policy that lets anyone do anything, their own calls included.
fn anyone() -> Policy {
    let all = [Action::Approve, Action::Edit, Action::Decline];
    Policy::new().allow("*", &all, &["*"]).allow_own_calls()
}

fn digest_of(input: &Value) -> String {
    input_digest(input)
}

fn ids(calls: &[InboxCall]) -> Vec<&str> {
    calls.iter().map(|c| c.tool_use_id.as_str()).collect()
}

async fn decided(store: &dyn InboxStore, attempt: &Attempt) -> Decided {
    match store.decide(attempt).await.unwrap().answer {
        Ok(d) => d,
        Err(r) => panic!("{} was refused: {r}", attempt.request.tool_use_id),
    }
}

async fn refused(store: &dyn InboxStore, attempt: &Attempt) -> Refusal {
    match store.decide(attempt).await.unwrap().answer {
        Ok(d) => panic!("{} was decided: {d:?}", attempt.request.tool_use_id),
        Err(r) => r,
    }
}

/// Every rule of [`InboxStore`], in order: turns listed as kept (every member, every filter,
/// both orders, pages), decisions and their refusals, idempotency keys, two-person calls,
/// expiry, racing deciders and takers, a turn taken outside the inbox, published tools.
///
/// # Panics
/// At the first rule the store breaks, with the step's name.
pub async fn inbox_store(store: &dyn InboxStore) {
    listed_as_kept(store).await;
    filtered_and_paged(store).await;
    decisions(store).await;
    idempotency(store).await;
    two_people(store).await;
    expiry(store).await;
    racing_deciders(store).await;
    racing_takers(store).await;
    outside_the_inbox(store).await;
    published_tools(store).await;
}

/// A turn kept (twice) is listed once, each waiting call with every member as kept; the turn
/// shows every call and its input.
async fn listed_as_kept(store: &dyn InboxStore) {
    let run = Run::new("listed");
    let refund = json!({"order_id": "o_1", "amount_cents": 25000});
    let lookup = json!({"order_id": "o_2"});
    let turn = run.turn(
        "toolu_l0",
        &[
            ("toolu_l1", "refund", refund.clone(), &["app::large_refund"]),
            ("toolu_l2", "lookup", lookup.clone(), &["app::x", "app::y"]),
        ],
        DAY,
    );
    store.put(&turn).await.unwrap();
    store.put(&turn).await.unwrap();
    let calls = run.list(store, Query::waiting()).await;
    assert_eq!(
        ids(&calls),
        ["toolu_l1", "toolu_l2"],
        "both waiting calls, once, in order"
    );
    let first = &calls[0];
    let asked = vec![Asked {
        hook: "app::large_refund".to_owned(),
        reason: "app::large_refund asks".to_owned(),
    }];
    assert_eq!(
        (
            first.session_id.as_str(),
            first.turn_id.as_str(),
            first.position,
            first.name.as_str()
        ),
        (run.session.as_str(), "toolu_l0", 1, "refund"),
        "a call's names and its place in the turn"
    );
    assert_eq!(first.asked_by, asked, "who asked and why");
    assert_eq!(
        (&first.user_id, &first.fingerprint),
        (&run.user, &run.fingerprint)
    );
    assert_eq!(first.state, CallState::Waiting);
    assert_eq!(
        first.input_digest,
        digest_of(&refund),
        "the effective input's digest"
    );
    assert_eq!(first.summary, "order_id=\"o_1\", amount_cents=25000");
    assert_eq!(
        (first.approvals.len(), &first.decided, &first.reason),
        (0, &None, &None)
    );
    assert_eq!(
        to_ms(first.expires_at) - to_ms(first.created_at),
        to_ms(SystemTime::UNIX_EPOCH + DAY),
        "a call expires the turn's ttl after the store kept it"
    );
    assert_eq!(calls[1].position, 2);
    let shown = store
        .turn(&run.session, "toolu_l0")
        .await
        .unwrap()
        .expect("kept");
    assert_eq!(shown.state, TurnState::Waiting);
    assert_eq!(shown.user_id, run.user);
    let inputs: Vec<(&Value, &Option<Value>)> =
        shown.calls.iter().map(|c| (&c.input, &c.edit)).collect();
    assert_eq!(
        inputs,
        [(&refund, &None), (&lookup, &None)],
        "a turn shows every input"
    );
    assert_eq!(shown.calls[0].call, calls[0], "as the list shows it");
    assert_eq!(store.turn(&run.session, "toolu_none").await.unwrap(), None);
}

/// Every filter, both orders, and pages that cover every call once.
async fn filtered_and_paged(store: &dyn InboxStore) {
    let run = Run::new("paged");
    let hooks: &[&str] = &["app::x", "app::y"];
    let t1 = run.turn(
        "toolu_p1",
        &[
            (
                "toolu_p1",
                "refund",
                json!({"n": 1}),
                &["app::large_refund"],
            ),
            ("toolu_p1b", "lookup", json!({"n": 2}), hooks),
        ],
        DAY,
    );
    store.put(&t1).await.unwrap();
    for id in ["toolu_p2", "toolu_p3"] {
        store.put(&run.refund_turn(id, 100)).await.unwrap();
    }
    let soon = run.turn(
        "toolu_p4",
        &[("toolu_p4", "refund", json!({}), &["app::z"])],
        Duration::from_secs(600),
    );
    store.put(&soon).await.unwrap();
    let all = ["toolu_p1", "toolu_p1b", "toolu_p2", "toolu_p3", "toolu_p4"];
    assert_eq!(ids(&run.list(store, Query::waiting()).await), all);
    let by = |q: Query| async { ids(&run.list(store, q).await).join(" ") };
    assert_eq!(by(Query::waiting().tool("lookup")).await, "toolu_p1b");
    assert_eq!(by(Query::waiting().asked_by("app::y")).await, "toolu_p1b");
    assert_eq!(
        by(Query::waiting().asked_by("app::")).await,
        "",
        "a hook's whole path"
    );
    assert_eq!(
        by(Query::waiting()
            .session(&run.session)
            .tool("refund")
            .limit(1))
        .await,
        "toolu_p1"
    );
    let other = Query::waiting().session(fresh("none"));
    assert_eq!(by(other).await, "", "another session's calls only");
    let window = Query::waiting().expires_within(Duration::from_secs(3600));
    assert_eq!(
        by(window).await,
        "toolu_p4",
        "only what expires within the window"
    );
    assert_eq!(by(Query::all()).await, all.join(" "), "every state");
    for newest in [false, true] {
        let mut seen = Vec::new();
        let mut query = Query::waiting().limit(2);
        if newest {
            query = query.newest_first();
        }
        loop {
            let page = store.list(&query.clone().user(&run.user)).await.unwrap();
            assert!(page.calls.len() <= 2, "at most a page");
            seen.extend(page.calls.iter().map(|c| c.tool_use_id.clone()));
            match page.next {
                Some(next) => query = query.after(next),
                None => break,
            }
        }
        let mut expected: Vec<String> = all.iter().map(|s| (*s).to_owned()).collect();
        if newest {
            expected.reverse();
        }
        assert_eq!(
            seen, expected,
            "pages cover every call once, in order (newest: {newest})"
        );
    }
}

/// Approve, decline, edit; a second decision told who won; a stale digest, an unknown turn or
/// call, a refusal found before the store: each refused, nothing else changed.
async fn decisions(store: &dyn InboxStore) {
    let run = Run::new("decisions");
    let inputs: Vec<Value> = (1..=3)
        .map(|n| json!({"order_id": format!("o_{n}"), "amount_cents": n * 100}))
        .collect();
    let calls: Vec<(&str, &str, Value, &[&str])> = ["toolu_d1", "toolu_d2", "toolu_d3"]
        .iter()
        .zip(&inputs)
        .map(|(id, input)| (*id, "refund", input.clone(), &["app::large_refund"][..]))
        .collect();
    store.put(&run.turn("toolu_d0", &calls, DAY)).await.unwrap();
    let d: Vec<String> = inputs.iter().map(digest_of).collect();
    let approve = run.attempt("alice", "toolu_d0", "toolu_d1", &d[0], Choice::Approve);
    let first = decided(store, &approve).await;
    let mark = Mark {
        by: "alice".to_owned(),
        at: first.at,
        comment: None,
    };
    assert_eq!(
        first,
        Decided {
            state: CallState::Approved,
            by: "alice".to_owned(),
            at: first.at,
            approvals: vec![mark.clone()],
            input_digest: d[0].clone()
        },
        "an approval"
    );
    let late = run.attempt("bob", "toolu_d0", "toolu_d1", &d[0], Choice::Approve);
    assert_eq!(
        refused(store, &late).await,
        Refusal::AlreadyDecided {
            state: CallState::Approved,
            by: "alice".to_owned(),
            at: first.at
        },
        "a second decision is told who won and when"
    );
    refusals(store, &run, &d[1]).await;
    let waiting = run.list(store, Query::waiting()).await;
    assert_eq!(
        ids(&waiting),
        ["toolu_d2", "toolu_d3"],
        "refusals change nothing; decisions are per call"
    );
    let decline = Choice::Decline {
        reason: "already refunded".to_owned(),
    };
    let declined = decided(
        store,
        &run.attempt("bob", "toolu_d0", "toolu_d2", &d[1], decline),
    )
    .await;
    assert_eq!(declined.state, CallState::Declined);
    let edited_input = json!({"order_id": "o_3", "amount_cents": 150});
    let edit = Choice::Edit {
        input: edited_input.clone(),
    };
    let edited = decided(
        store,
        &run.attempt("carol", "toolu_d0", "toolu_d3", &d[2], edit),
    )
    .await;
    assert_eq!(
        (edited.state, &edited.input_digest),
        (CallState::Edited, &digest_of(&edited_input))
    );
    listed_as_decided(store, &run, &inputs[2], &edited_input).await;
    unknown_ids(store, &run, &d[0]).await;
}

/// The calls of `decisions` listed as decided, the edit shown beside the input (`input`) it
/// replaced.
async fn listed_as_decided(store: &dyn InboxStore, run: &Run, input: &Value, edited_input: &Value) {
    let every = run.list(store, Query::all()).await;
    let states: Vec<(CallState, Option<&str>, Option<&str>)> = every
        .iter()
        .map(|c| {
            (
                c.state,
                c.decided.as_ref().map(|m| m.by.as_str()),
                c.reason.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (CallState::Approved, Some("alice"), None),
            (CallState::Declined, Some("bob"), Some("already refunded")),
            (CallState::Edited, Some("carol"), None),
        ],
        "each call as decided"
    );
    assert_eq!(
        every[2].summary, "order_id=\"o_3\", amount_cents=150",
        "an edit's summary"
    );
    let shown = store.turn(&run.session, "toolu_d0").await.unwrap().unwrap();
    assert_eq!(
        shown.calls[2].edit,
        Some(edited_input.clone()),
        "the turn shows the edit"
    );
    assert_eq!(shown.calls[2].input, *input, "and the input as it paused");
}

/// Refusals of call `toolu_d2` (its input's digest `digest`), each changing nothing: a stale
/// digest, the requester's own call, no rule, a refusal found before the store.
async fn refusals(store: &dyn InboxStore, run: &Run, digest: &str) {
    let stale = "0".repeat(64);
    let decline = Choice::Decline {
        reason: "already refunded".to_owned(),
    };
    let blind = run.attempt("bob", "toolu_d0", "toolu_d2", &stale, decline);
    assert_eq!(
        refused(store, &blind).await,
        Refusal::InputChanged {
            seen: stale.clone(),
            now: digest.to_owned()
        },
        "a decision for an input the call does not have"
    );
    let mut own = run.attempt(&run.user, "toolu_d0", "toolu_d2", digest, Choice::Approve);
    own.policy = Arc::new(Policy::new().allow("*", &[Action::Approve], &["*"]));
    assert_eq!(
        refused(store, &own).await,
        Refusal::NotAllowed(NotAllowed::OwnCall {
            user_id: run.user.clone(),
        }),
        "the policy, applied by the store: nobody decides their own call"
    );
    let mut declined_only = run.attempt("bob", "toolu_d0", "toolu_d2", digest, Choice::Approve);
    declined_only.policy = Arc::new(Policy::new().allow("bob", &[Action::Decline], &["*"]));
    assert_eq!(
        refused(store, &declined_only).await,
        Refusal::NotAllowed(NotAllowed::NoRule {
            by: "bob".to_owned(),
            action: Action::Approve,
            tool: "refund".to_owned(),
        }),
        "no rule lets bob approve"
    );
    let mut uncheckable = run.attempt("bob", "toolu_d0", "toolu_d2", digest, Choice::Approve);
    uncheckable.refused = Some(Refusal::EditUncheckable {
        fingerprint: run.fingerprint.clone(),
    });
    assert_eq!(
        refused(store, &uncheckable).await,
        Refusal::EditUncheckable {
            fingerprint: run.fingerprint.clone()
        },
        "a refusal found before the store"
    );
}

/// Unknown turn and call ids: refused, naming them; nothing kept.
async fn unknown_ids(store: &dyn InboxStore, run: &Run, digest: &str) {
    let turn = run.attempt("dave", "toolu_nope", "toolu_d1", digest, Choice::Approve);
    assert_eq!(
        refused(store, &turn).await,
        Refusal::UnknownTurn {
            session_id: run.session.clone(),
            turn_id: "toolu_nope".to_owned()
        }
    );
    let call = run.attempt("dave", "toolu_d0", "toolu_nope", digest, Choice::Approve);
    assert_eq!(
        refused(store, &call).await,
        Refusal::UnknownCall {
            tool_use_id: "toolu_nope".to_owned()
        }
    );
    let answered = run.attempt(
        "dave",
        "toolu_d0",
        "toolu_d0_answered",
        digest,
        Choice::Approve,
    );
    assert_eq!(
        refused(store, &answered).await,
        Refusal::UnknownCall {
            tool_use_id: "toolu_d0_answered".to_owned()
        },
        "a block answered when the turn paused waits for nobody"
    );
}

/// One key twice: the first answer, refusals included; a key with another request: refused.
async fn idempotency(store: &dyn InboxStore) {
    let run = Run::new("keys");
    for (id, cents) in [("toolu_k1", 100), ("toolu_k2", 200)] {
        store.put(&run.refund_turn(id, cents)).await.unwrap();
    }
    let d1 = digest_of(&json!({"order_id": "o_toolu_k1", "amount_cents": 100}));
    let key = fresh("key");
    let once = keyed(
        run.attempt("alice", "toolu_k1", "toolu_k1", &d1, Choice::Approve),
        &key,
    );
    let first = store.decide(&once).await.unwrap();
    assert!(first.answer.is_ok() && !first.replayed, "{first:?}");
    let again: Recorded = store.decide(&once).await.unwrap();
    assert_eq!(
        (&again.answer, again.replayed),
        (&first.answer, true),
        "the same key: the first answer"
    );
    let decline = Choice::Decline {
        reason: "no".to_owned(),
    };
    let other = keyed(
        run.attempt("alice", "toolu_k1", "toolu_k1", &d1, decline),
        &key,
    );
    assert_eq!(
        refused(store, &other).await,
        Refusal::KeyReused { key: key.clone() },
        "the same key, another request"
    );
    let by_bob = keyed(
        run.attempt("bob", "toolu_k1", "toolu_k1", &d1, Choice::Approve),
        &key,
    );
    assert_eq!(
        refused(store, &by_bob).await,
        Refusal::KeyReused { key },
        "the same key, another person"
    );
    let stale = keyed(
        run.attempt("alice", "toolu_k2", "toolu_k2", &d1, Choice::Approve),
        &fresh("stale"),
    );
    let refusal = refused(store, &stale).await;
    assert!(
        matches!(refusal, Refusal::InputChanged { .. }),
        "{refusal:?}"
    );
    let replay = store.decide(&stale).await.unwrap();
    assert_eq!(
        (replay.answer, replay.replayed),
        (Err(refusal), true),
        "a refusal is a first answer too"
    );
    let waiting = run.list(store, Query::waiting()).await;
    assert_eq!(ids(&waiting), ["toolu_k2"], "no key decided anything twice");
}

/// A two-person call: one approval leaves it waiting (and its turn not ready); the same
/// person again is refused; a second person completes it. An edit is its editor's approval of
/// the edited input, which the second person approves by its digest.
async fn two_people(store: &dyn InboxStore) {
    let run = Run::new("two");
    store.put(&run.refund_turn("toolu_t1", 300)).await.unwrap();
    let d = digest_of(&json!({"order_id": "o_toolu_t1", "amount_cents": 300}));
    let by = |who: &str| two_person(run.attempt(who, "toolu_t1", "toolu_t1", &d, Choice::Approve));
    let one = decided(store, &by("alice")).await;
    assert_eq!(
        (one.state, one.approvals.len()),
        (CallState::Waiting, 1),
        "one of two"
    );
    assert_eq!(
        store.take_ready(&run.fingerprint, LONG).await.unwrap(),
        None,
        "not ready after one approval"
    );
    assert_eq!(
        refused(store, &by("alice")).await,
        Refusal::AlreadyApproved { at: one.at },
        "the same person twice"
    );
    let two = decided(store, &by("bob")).await;
    let who: Vec<&str> = two.approvals.iter().map(|m| m.by.as_str()).collect();
    assert_eq!(
        (two.state, who),
        (CallState::Approved, vec!["alice", "bob"]),
        "the second completes it"
    );
    let ready = store
        .take_ready(&run.fingerprint, LONG)
        .await
        .unwrap()
        .expect("ready");
    assert_eq!(
        ready.decisions.get("toolu_t1"),
        Some(&Approval::approve_digest("alice, bob", d.clone()))
    );
    store.put(&run.refund_turn("toolu_t2", 400)).await.unwrap();
    let d2 = digest_of(&json!({"order_id": "o_toolu_t2", "amount_cents": 400}));
    let new_input = json!({"order_id": "o_toolu_t2", "amount_cents": 350});
    let edit = Choice::Edit {
        input: new_input.clone(),
    };
    let first = decided(
        store,
        &two_person(run.attempt("alice", "toolu_t2", "toolu_t2", &d2, edit)),
    )
    .await;
    assert_eq!(
        (first.state, &first.input_digest),
        (CallState::Waiting, &digest_of(&new_input))
    );
    let old = two_person(run.attempt("bob", "toolu_t2", "toolu_t2", &d2, Choice::Approve));
    assert!(
        matches!(refused(store, &old).await, Refusal::InputChanged { .. }),
        "the original is no longer what runs"
    );
    let new_digest = digest_of(&new_input);
    let second =
        two_person(run.attempt("bob", "toolu_t2", "toolu_t2", &new_digest, Choice::Approve));
    assert_eq!(decided(store, &second).await.state, CallState::Edited);
    let ready = store
        .take_ready(&run.fingerprint, LONG)
        .await
        .unwrap()
        .expect("ready");
    assert_eq!(
        ready.decisions.get("toolu_t2"),
        Some(&Approval::edit("alice, bob", new_input))
    );
}

/// A call past its expiry: refused as expired (never declined), listed as expired, and its turn
/// ready with the call among the expired; a decision after the take is still expired.
async fn expiry(store: &dyn InboxStore) {
    let run = Run::new("expiry");
    let calls: Vec<(&str, &str, Value, &[&str])> = vec![
        (
            "toolu_e1",
            "refund",
            json!({"n": 1}),
            &["app::large_refund"],
        ),
        (
            "toolu_e2",
            "refund",
            json!({"n": 2}),
            &["app::large_refund"],
        ),
    ];
    store
        .put(&run.turn("toolu_e0", &calls, Duration::from_millis(700)))
        .await
        .unwrap();
    let d1 = digest_of(&json!({"n": 1}));
    let d2 = digest_of(&json!({"n": 2}));
    decided(
        store,
        &run.attempt("alice", "toolu_e0", "toolu_e1", &d1, Choice::Approve),
    )
    .await;
    assert_eq!(
        store.take_ready(&run.fingerprint, LONG).await.unwrap(),
        None,
        "one call still waits"
    );
    sleep(Duration::from_millis(1500)).await;
    let expires_at = run.list(store, Query::all()).await[1].expires_at;
    let late = run.attempt("bob", "toolu_e0", "toolu_e2", &d2, Choice::Approve);
    assert_eq!(
        refused(store, &late).await,
        Refusal::Expired { at: expires_at },
        "a decision after the expiry"
    );
    assert_eq!(
        ids(&run.list(store, Query::waiting()).await),
        Vec::<&str>::new()
    );
    let expired = run
        .list(store, Query::all().in_state_of(CallState::Expired))
        .await;
    assert_eq!(ids(&expired), ["toolu_e2"], "expiry is its own state");
    let ready = store
        .take_ready(&run.fingerprint, LONG)
        .await
        .unwrap()
        .expect("ready once expired");
    assert_eq!(ready.expired, ["toolu_e2"]);
    assert_eq!(
        ready.decisions.get("toolu_e1"),
        Some(&Approval::approve_digest("alice", d1))
    );
    assert_eq!(ready.decisions.len(), 1, "an expired call has no decision");
    assert_eq!(
        refused(store, &late).await,
        Refusal::Expired { at: expires_at },
        "after the take too"
    );
}

/// Eight people deciding one call at once: one wins, every other is told who.
async fn racing_deciders(store: &dyn InboxStore) {
    let run = Run::new("race");
    store.put(&run.refund_turn("toolu_r1", 500)).await.unwrap();
    let d = digest_of(&json!({"order_id": "o_toolu_r1", "amount_cents": 500}));
    let attempts: Vec<Attempt> = (0..8)
        .map(|i| {
            run.attempt(
                &format!("person{i}"),
                "toolu_r1",
                "toolu_r1",
                &d,
                Choice::Approve,
            )
        })
        .collect();
    let racers: Vec<BoxFuture<'_, Result<Recorded, _>>> = attempts
        .iter()
        .map(|a| Box::pin(store.decide(a)) as BoxFuture<'_, _>)
        .collect();
    let answers: Vec<Result<Decided, Refusal>> = join_all(racers)
        .await
        .into_iter()
        .map(|r| r.unwrap().answer)
        .collect();
    let won: Vec<&Decided> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(
        won.len(),
        1,
        "of eight deciding at once, one wins: {answers:?}"
    );
    let winner = won[0];
    for a in &answers {
        if let Err(r) = a {
            assert_eq!(
                r,
                &Refusal::AlreadyDecided {
                    state: CallState::Approved,
                    by: winner.by.clone(),
                    at: winner.at
                },
                "told who won"
            );
        }
    }
}

/// Eight takers of one ready turn: one gets it; a take within its lease holds it, a finished
/// turn is never taken again, a take whose lease ran out is taken again ([`lapsed_take`]).
async fn racing_takers(store: &dyn InboxStore) {
    let run = Run::new("takers");
    store.put(&run.refund_turn("toolu_w1", 600)).await.unwrap();
    let d = digest_of(&json!({"order_id": "o_toolu_w1", "amount_cents": 600}));
    decided(
        store,
        &run.attempt("alice", "toolu_w1", "toolu_w1", &d, Choice::Approve),
    )
    .await;
    let racers: Vec<BoxFuture<'_, Result<Option<ReadyTurn>, _>>> = (0..8)
        .map(|_| Box::pin(store.take_ready(&run.fingerprint, LONG)) as BoxFuture<'_, _>)
        .collect();
    let takes: Vec<Option<ReadyTurn>> = join_all(racers)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        takes.iter().filter(|t| t.is_some()).count(),
        1,
        "of eight takers, one gets the turn"
    );
    assert_eq!(
        store.take_ready(&run.fingerprint, LONG).await.unwrap(),
        None,
        "a taken turn is held"
    );
    let shown = store.turn(&run.session, "toolu_w1").await.unwrap().unwrap();
    assert_eq!(shown.state, TurnState::Resuming);
    let answer = json!({"role": "user", "content": []});
    let winner = takes.iter().flatten().next().expect("one take");
    store
        .finished(&run.session, "toolu_w1", winner.token, &answer)
        .await
        .unwrap();
    assert_eq!(
        store
            .turn(&run.session, "toolu_w1")
            .await
            .unwrap()
            .unwrap()
            .state,
        TurnState::Resumed
    );
    lapsed_take(store, &run).await;
}

/// A second turn of `run`: a take whose lease ran out (its worker died) is taken again, the
/// finished turn is not, and the first take's late answer is refused by its token.
async fn lapsed_take(store: &dyn InboxStore, run: &Run) {
    let answer = json!({"role": "user", "content": []});
    store.put(&run.refund_turn("toolu_w2", 700)).await.unwrap();
    let d2 = digest_of(&json!({"order_id": "o_toolu_w2", "amount_cents": 700}));
    decided(
        store,
        &run.attempt("alice", "toolu_w2", "toolu_w2", &d2, Choice::Approve),
    )
    .await;
    let short = Duration::from_millis(200);
    let taken = store
        .take_ready(&run.fingerprint, short)
        .await
        .unwrap()
        .expect("ready");
    assert_eq!(
        taken.turn.turn_id, "toolu_w2",
        "the finished turn is not taken again"
    );
    sleep(short * 3).await;
    let again = store
        .take_ready(&run.fingerprint, LONG)
        .await
        .unwrap()
        .expect("its lease ran out");
    assert_eq!(
        (&again.turn, &again.decisions, &again.expired),
        (&taken.turn, &taken.decisions, &taken.expired),
        "a take whose lease ran out (its worker died) is taken again"
    );
    let late = store
        .finished(&run.session, "toolu_w2", taken.token, &answer)
        .await
        .expect_err("the first take's late answer");
    assert!(late.is_fenced(), "refused by its token: {late}");
    assert_eq!(
        store
            .turn(&run.session, "toolu_w2")
            .await
            .unwrap()
            .unwrap()
            .state,
        TurnState::Resuming,
        "and the turn stays the second take's"
    );
    assert_eq!(
        store.take_ready(&fresh("fingerprint"), LONG).await.unwrap(),
        None,
        "another dispatcher's turns only"
    );
}

/// A turn taken by a resume outside the inbox takes no decision and is not listed as waiting;
/// put back, it is.
async fn outside_the_inbox(store: &dyn InboxStore) {
    let run = Run::new("outside");
    store.put(&run.refund_turn("toolu_o1", 800)).await.unwrap();
    let d = digest_of(&json!({"order_id": "o_toolu_o1", "amount_cents": 800}));
    let token = crate::store::Token::draw();
    store
        .take(&run.session, "toolu_o1", token, LONG)
        .await
        .unwrap();
    let attempt = run.attempt("alice", "toolu_o1", "toolu_o1", &d, Choice::Approve);
    assert_eq!(
        refused(store, &attempt).await,
        Refusal::TurnNotWaiting {
            state: TurnState::Resuming
        }
    );
    assert_eq!(
        ids(&run.list(store, Query::waiting()).await),
        Vec::<&str>::new()
    );
    store
        .put_back(&run.session, "toolu_o1", token)
        .await
        .unwrap();
    assert_eq!(ids(&run.list(store, Query::waiting()).await), ["toolu_o1"]);
    assert_eq!(decided(store, &attempt).await.state, CallState::Approved);
}

/// Tools published under a fingerprint read back whole; another fingerprint has none.
async fn published_tools(store: &dyn InboxStore) {
    let fingerprint = fresh("tools");
    let tools = PublishedTools {
        fingerprint: fingerprint.clone(),
        tools: vec![ToolSchema {
            name: "refund".to_owned(),
            input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            integers: Integers::Serde,
        }],
    };
    store.publish_tools(&tools).await.unwrap();
    store.publish_tools(&tools).await.unwrap();
    assert_eq!(
        store.published_tools(&fingerprint).await.unwrap(),
        Some(tools)
    );
    assert_eq!(store.published_tools(&fresh("none")).await.unwrap(), None);
}
