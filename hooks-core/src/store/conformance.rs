//! The tests every store passes: plain async functions, each checking one trait's whole
//! contract against a store, that the in-memory stores, the database stores and a store of your
//! own all run the same way (after object_store's `integration` module).
//!
//! ```
//! use toolgate_core::store::{MemoryAnswerStore, MemoryPendingStore, conformance};
//!
//! toolgate_core::block_on(conformance::answer_store(&MemoryAnswerStore::new()));
//! toolgate_core::block_on(conformance::pending_store(&MemoryPendingStore::new()));
//! ```
//!
//! Each function panics (an `assert_eq!` naming the step) at the first broken rule. It uses
//! session ids of its own, unique to each run, so it can run against a database other tests
//! share; it sleeps a few tenths of a second to let leases run out (on the `futures-timer`
//! timer: no runtime needed, though a store's own futures may need one).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::approval::pending::{PENDING_TURN_FORMAT, PendingBlock, PendingTurn, TurnFormat};
use crate::audit::outcome::Outcome;
use crate::base::future::join_all;
use crate::content::message::ToolResult;

use super::{AnswerStore, CallKey, Claim, InputDigest, PendingStore, Remembered, Taken};

/// A lease long enough for any step of these tests.
const LONG: Duration = Duration::from_secs(600);
/// A lease the tests let run out.
const SHORT: Duration = Duration::from_millis(150);

/// A session id no other run of these tests uses.
fn fresh_session(what: &str) -> String {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    format!("conformance-{what}-{}-{nanos}-{n}", std::process::id())
}

fn digest(n: u8) -> InputDigest {
    InputDigest([n; 32])
}

async fn sleep(d: Duration) {
    futures_timer::Delay::new(d).await;
}

/// A future of the tests, boxed.
type Racer<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Every rule of [`AnswerStore`], in order: a claim, a second claim, an answer and its replay,
/// a release before and after the tool started, a lease that runs out, the same `tool_use` id
/// in two sessions, sixteen claims of one key racing (exactly one wins), and the turns ("Turns"
/// in the [store docs](super)): one id in two turns is two calls, each replayed in its own
/// turn; a later turn waits while the first call runs, and is kept apart once it lapsed; a
/// call without a turn beside one with a turn is refused either way round; sixteen claims of a
/// later turn racing.
///
/// # Panics
/// At the first rule the store breaks, with the step's name.
pub async fn answer_store(store: &dyn AnswerStore) {
    claims_and_answers(store).await;
    releases(store).await;
    leases(store).await;
    sessions_apart(store).await;
    racing_claims(store).await;
    turns_apart(store).await;
    turns_in_progress(store).await;
    turns_unknown(store).await;
}

async fn claims_and_answers(store: &dyn AnswerStore) {
    let session = fresh_session("answers");
    let key = CallKey::new(&session, "toolu_1");
    let claim = store.claim(key, digest(1), LONG).await.unwrap();
    assert_eq!(claim, Claim::Claimed, "a new key is claimed");
    let again = store.claim(key, digest(1), LONG).await.unwrap();
    assert_eq!(
        again,
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "a second claim while the first runs sees it in progress"
    );
    let other = store.claim(key, digest(2), LONG).await.unwrap();
    assert_eq!(
        other,
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "a claim with another input sees the first input's digest"
    );
    let result = ToolResult::error("toolu_1", "BLOCKED: over the limit");
    store
        .answered(key, Outcome::Blocked, &result)
        .await
        .unwrap();
    let replay = store.claim(key, digest(1), LONG).await.unwrap();
    assert_eq!(
        replay,
        Claim::Seen(Remembered::Answered {
            digest: digest(1),
            outcome: Outcome::Blocked,
            result: result.clone(),
        }),
        "an answered key is remembered with its outcome and its exact result"
    );
    // An answer or a release of a key no longer in progress changes nothing.
    let later = ToolResult::text("toolu_1", "something else");
    store.answered(key, Outcome::Ok, &later).await.unwrap();
    store.release(key, false).await.unwrap();
    store.abandon(key, true);
    let still = store.claim(key, digest(1), LONG).await.unwrap();
    assert_eq!(still, replay, "an answer is final");
    let blocks = ToolResult::text("toolu_2", "ok");
    let k2 = CallKey::new(&session, "toolu_2");
    assert_eq!(
        store.claim(k2, digest(3), LONG).await.unwrap(),
        Claim::Claimed
    );
    store.answered(k2, Outcome::Ok, &blocks).await.unwrap();
    let Claim::Seen(Remembered::Answered { result: got, .. }) =
        store.claim(k2, digest(3), LONG).await.unwrap()
    else {
        panic!("the second key is answered");
    };
    assert_eq!(got, blocks, "every key keeps its own answer");
}

async fn releases(store: &dyn AnswerStore) {
    let session = fresh_session("releases");
    let key = CallKey::new(&session, "toolu_1");
    assert_eq!(
        store.claim(key, digest(1), LONG).await.unwrap(),
        Claim::Claimed
    );
    store.release(key, false).await.unwrap();
    assert_eq!(
        store.claim(key, digest(2), LONG).await.unwrap(),
        Claim::Claimed,
        "a released call that never started is forgotten: a retry claims it anew"
    );
    store.release(key, true).await.unwrap();
    let interrupted = Claim::Seen(Remembered::Interrupted { digest: digest(2) });
    assert_eq!(
        store.claim(key, digest(2), LONG).await.unwrap(),
        interrupted,
        "a released call whose tool started is interrupted, never claimed again"
    );
    store
        .answered(key, Outcome::Ok, &ToolResult::text("toolu_1", "late"))
        .await
        .unwrap();
    assert_eq!(
        store.claim(key, digest(2), LONG).await.unwrap(),
        interrupted,
        "an answer after an interruption changes nothing"
    );
}

async fn leases(store: &dyn AnswerStore) {
    let session = fresh_session("leases");
    let key = CallKey::new(&session, "toolu_1");
    assert_eq!(
        store.claim(key, digest(1), SHORT).await.unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        store.claim(key, digest(1), SHORT).await.unwrap(),
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "within its lease a claim is in progress"
    );
    sleep(SHORT * 3).await;
    let interrupted = Claim::Seen(Remembered::Interrupted { digest: digest(1) });
    assert_eq!(
        store.claim(key, digest(1), LONG).await.unwrap(),
        interrupted,
        "a claim whose lease ran out with no answer is interrupted"
    );
    store
        .answered(key, Outcome::Ok, &ToolResult::text("toolu_1", "too late"))
        .await
        .unwrap();
    assert_eq!(
        store.claim(key, digest(1), LONG).await.unwrap(),
        interrupted,
        "an answer that comes after the lease ran out changes nothing"
    );
}

async fn sessions_apart(store: &dyn AnswerStore) {
    let (a, b) = (fresh_session("apart-a"), fresh_session("apart-b"));
    let ka = CallKey::new(&a, "toolu_same");
    let kb = CallKey::new(&b, "toolu_same");
    assert_eq!(
        store.claim(ka, digest(1), LONG).await.unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        store.claim(kb, digest(2), LONG).await.unwrap(),
        Claim::Claimed,
        "one tool_use id in two sessions is two calls"
    );
    store
        .answered(ka, Outcome::Ok, &ToolResult::text("toolu_same", "a"))
        .await
        .unwrap();
    assert_eq!(
        store.claim(kb, digest(2), LONG).await.unwrap(),
        Claim::Seen(Remembered::InProgress { digest: digest(2) }),
        "answering one session's call leaves the other's in progress"
    );
}

async fn racing_claims(store: &dyn AnswerStore) {
    let session = fresh_session("race");
    let key = CallKey::new(&session, "toolu_raced");
    let claims = (0..16)
        .map(|_| Box::pin(store.claim(key, digest(7), LONG)) as Racer<'_, _>)
        .collect();
    let outcomes = join_all(claims).await;
    let won = outcomes
        .iter()
        .filter(|c| matches!(c, Ok(Claim::Claimed)))
        .count();
    assert_eq!(
        won, 1,
        "of sixteen claims racing on one key, one wins: {outcomes:?}"
    );
    for c in outcomes {
        let c = c.unwrap();
        assert!(
            matches!(
                c,
                Claim::Claimed | Claim::Seen(Remembered::InProgress { .. })
            ),
            "every other racer sees it in progress: {c:?}"
        );
    }
}

/// One `tool_use` id in two turns is two calls, each answered, released and replayed in its
/// own turn; a third turn's racing claims: one wins.
async fn turns_apart(store: &dyn AnswerStore) {
    let session = fresh_session("turns");
    let id = "functions.get_time:0";
    let first = CallKey::in_turn(&session, "chatcmpl-1", id);
    let later = CallKey::in_turn(&session, "chatcmpl-2", id);
    assert_eq!(
        store.claim(first, digest(1), LONG).await.unwrap(),
        Claim::Claimed
    );
    let one = ToolResult::text(id, "12:00");
    store.answered(first, Outcome::Ok, &one).await.unwrap();
    assert_eq!(
        store.claim(later, digest(1), LONG).await.unwrap(),
        Claim::Claimed,
        "a later turn's call with the same id and input is a new call"
    );
    assert_eq!(
        store.claim(later, digest(1), LONG).await.unwrap(),
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "the later turn's call is in progress under its own turn"
    );
    let two = ToolResult::text(id, "12:05");
    store.answered(later, Outcome::Ok, &two).await.unwrap();
    let answered = |result: &ToolResult| {
        Claim::Seen(Remembered::Answered {
            digest: digest(1),
            outcome: Outcome::Ok,
            result: result.clone(),
        })
    };
    assert_eq!(
        store.claim(first, digest(1), LONG).await.unwrap(),
        answered(&one),
        "the first turn replays its own answer"
    );
    assert_eq!(
        store.claim(later, digest(1), LONG).await.unwrap(),
        answered(&two),
        "the later turn replays its own answer, not the first's"
    );
    // A later turn's release acts on its own call only.
    let third = CallKey::in_turn(&session, "chatcmpl-3", id);
    assert_eq!(
        store.claim(third, digest(2), LONG).await.unwrap(),
        Claim::Claimed,
        "a later turn's call with another input is a new call"
    );
    store.release(third, true).await.unwrap();
    assert_eq!(
        store.claim(third, digest(2), LONG).await.unwrap(),
        Claim::Seen(Remembered::Interrupted { digest: digest(2) }),
        "a later turn's call released after its tool started is interrupted"
    );
    assert_eq!(
        store.claim(first, digest(1), LONG).await.unwrap(),
        answered(&one),
        "releasing a later turn's call leaves the first turn's answer"
    );
    let fourth = CallKey::in_turn(&session, "chatcmpl-4", id);
    let claims = (0..16)
        .map(|_| Box::pin(store.claim(fourth, digest(3), LONG)) as Racer<'_, _>)
        .collect();
    let won = join_all(claims)
        .await
        .into_iter()
        .filter(|c| matches!(c, Ok(Claim::Claimed)))
        .count();
    assert_eq!(won, 1, "of sixteen claims of a later turn racing, one wins");
}

/// While the first call with an id runs, a later turn's call is refused as in progress and
/// nothing is recorded: released, the first call's place is the later turn's; once a first
/// call lapsed, a later turn's call is kept apart.
async fn turns_in_progress(store: &dyn AnswerStore) {
    let session = fresh_session("turns-running");
    let first = CallKey::in_turn(&session, "resp_1", "call_0");
    let later = CallKey::in_turn(&session, "resp_2", "call_0");
    assert_eq!(
        store.claim(first, digest(1), LONG).await.unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        store.claim(later, digest(1), LONG).await.unwrap(),
        Claim::OtherTurn { in_progress: true },
        "a later turn's call waits while the first call with its id runs"
    );
    store.release(first, false).await.unwrap();
    assert_eq!(
        store.claim(later, digest(1), LONG).await.unwrap(),
        Claim::Claimed,
        "the first call released before its tool started: the later turn's call is the first"
    );
    assert_eq!(
        store.claim(first, digest(1), LONG).await.unwrap(),
        Claim::OtherTurn { in_progress: true },
        "and the earlier turn's retry waits for it in turn"
    );
    store.release(later, true).await.unwrap();
    assert_eq!(
        store.claim(first, digest(1), LONG).await.unwrap(),
        Claim::Claimed,
        "once that call is interrupted, the earlier turn's call is kept apart"
    );
    assert_eq!(
        store.claim(later, digest(1), LONG).await.unwrap(),
        Claim::Seen(Remembered::Interrupted { digest: digest(1) }),
        "the interrupted call stays its turn's"
    );
    let lapsing = CallKey::in_turn(&session, "resp_1", "call_1");
    let after = CallKey::in_turn(&session, "resp_2", "call_1");
    assert_eq!(
        store.claim(lapsing, digest(4), SHORT).await.unwrap(),
        Claim::Claimed
    );
    sleep(SHORT * 3).await;
    assert_eq!(
        store.claim(after, digest(4), LONG).await.unwrap(),
        Claim::Claimed,
        "a first call whose lease ran out is interrupted, and a later turn's call kept apart"
    );
    assert_eq!(
        store.claim(lapsing, digest(4), LONG).await.unwrap(),
        Claim::Seen(Remembered::Interrupted { digest: digest(4) }),
        "the lapsed first call is interrupted"
    );
}

/// A call without a turn and one with a turn on one id, either way round: the store cannot
/// tell a resend from a new call, and records nothing.
async fn turns_unknown(store: &dyn AnswerStore) {
    let session = fresh_session("turns-unknown");
    let bare = CallKey::new(&session, "toolu_1");
    let named = CallKey::in_turn(&session, "msg_1", "toolu_1");
    assert_eq!(
        store.claim(bare, digest(1), LONG).await.unwrap(),
        Claim::Claimed
    );
    let result = ToolResult::text("toolu_1", "done");
    store.answered(bare, Outcome::Ok, &result).await.unwrap();
    assert_eq!(
        store.claim(named, digest(1), LONG).await.unwrap(),
        Claim::OtherTurn { in_progress: false },
        "a call with a turn beside one without"
    );
    let bare = CallKey::new(&session, "toolu_2");
    let named = CallKey::in_turn(&session, "msg_1", "toolu_2");
    assert_eq!(
        store.claim(named, digest(2), LONG).await.unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        store.claim(bare, digest(2), LONG).await.unwrap(),
        Claim::OtherTurn { in_progress: false },
        "a call without a turn beside one with a turn, in progress or not"
    );
    // The refused claims changed nothing.
    store.answered(bare, Outcome::Ok, &result).await.unwrap();
    store.release(bare, true).await.unwrap();
    assert_eq!(
        store.claim(named, digest(2), LONG).await.unwrap(),
        Claim::Seen(Remembered::InProgress { digest: digest(2) }),
        "an answer or a release without the turn leaves the turn's call as it was"
    );
}

/// A paused turn of `session`, named `turn_id`, with one waiting call.
fn turn(session: &str, turn_id: &str) -> PendingTurn {
    let waiting = crate::approval::pending::AwaitingCall::new(
        &crate::content::ToolUse::new(turn_id, "refund", json!({"amount_cents": 25000})),
        &json!({"amount_cents": 25000}),
        &[],
        &[],
    );
    PendingTurn {
        format: PENDING_TURN_FORMAT,
        turn_format: TurnFormat::AnthropicMessages,
        turn_id: turn_id.to_owned(),
        turn: None,
        session_id: session.to_owned(),
        user_id: "u_conformance".to_owned(),
        fingerprint: "0".repeat(64),
        created_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_515_300),
        pending_ttl: Some(Duration::from_secs(24 * 3600)),
        blocks: vec![PendingBlock::AwaitingApproval(waiting)],
    }
}

/// Every rule of [`PendingStore`]: a turn kept and read back whole, never overwritten, taken by
/// one resume at a time (eight takes racing: exactly one wins), put back, resumed with its
/// answer kept for later takes, a take whose lease ran out taken again, and the waiting turns of
/// a session listed oldest first.
///
/// # Panics
/// At the first rule the store breaks, with the step's name.
pub async fn pending_store(store: &dyn PendingStore) {
    let session = fresh_session("pending");
    let (first, second) = kept_once(store, &session).await;
    racing_takes(store, &session, &first, &second).await;
    resumed_and_lapsed(store, &session, &first, second).await;
}

/// Two turns put (the first twice), both waiting, oldest first, the first as first kept.
async fn kept_once(store: &dyn PendingStore, session: &str) -> (PendingTurn, PendingTurn) {
    let first = turn(session, "toolu_a");
    store.put(&first).await.unwrap();
    let mut later = first.clone();
    later.created_at += Duration::from_secs(3600);
    store.put(&later).await.unwrap();
    let second = turn(session, "toolu_b");
    store.put(&second).await.unwrap();
    assert_eq!(
        store.waiting(session).await.unwrap(),
        vec![first.clone(), second.clone()],
        "both turns wait, oldest first, the first as it was first kept"
    );
    (first, second)
}

/// A missing turn; eight takes racing on the first (one wins, whole); a taken turn no longer
/// waits; put back, it is taken again.
async fn racing_takes(
    store: &dyn PendingStore,
    session: &str,
    first: &PendingTurn,
    second: &PendingTurn,
) {
    assert_eq!(
        store.take(session, "toolu_none", LONG).await.unwrap(),
        Taken::Missing,
        "a turn never kept is missing"
    );
    let takes = (0..8)
        .map(|_| Box::pin(store.take(session, "toolu_a", LONG)) as Racer<'_, _>)
        .collect();
    let outcomes = join_all(takes).await;
    let won: Vec<_> = outcomes
        .iter()
        .filter(|t| matches!(t, Ok(Taken::Turn(_))))
        .collect();
    assert_eq!(
        won.len(),
        1,
        "of eight takes racing, one wins: {outcomes:?}"
    );
    assert_eq!(
        won[0],
        &Ok(Taken::Turn(first.clone())),
        "the winner gets the turn whole"
    );
    assert!(
        outcomes
            .iter()
            .all(|t| matches!(t, Ok(Taken::Turn(_) | Taken::Resuming))),
        "the others see it being resumed: {outcomes:?}"
    );
    assert_eq!(
        store.waiting(session).await.unwrap(),
        vec![second.clone()],
        "a taken turn no longer waits"
    );
    store.put_back(session, "toolu_a").await.unwrap();
    assert_eq!(
        store.take(session, "toolu_a", LONG).await.unwrap(),
        Taken::Turn(first.clone()),
        "a turn put back is taken again"
    );
}

/// A resumed turn answers every later take with its answer (and is neither kept again nor put
/// back); a take whose lease ran out is taken again.
async fn resumed_and_lapsed(
    store: &dyn PendingStore,
    session: &str,
    first: &PendingTurn,
    second: PendingTurn,
) {
    let answer = json!({"role": "user", "content": []});
    store.resumed(session, "toolu_a", &answer).await.unwrap();
    assert_eq!(
        store.take(session, "toolu_a", LONG).await.unwrap(),
        Taken::Resumed(answer.clone()),
        "a resumed turn answers every later take with its answer"
    );
    store.put(first).await.unwrap();
    store.put_back(session, "toolu_a").await.unwrap();
    assert_eq!(
        store.take(session, "toolu_a", LONG).await.unwrap(),
        Taken::Resumed(answer),
        "a resumed turn is not kept again nor put back"
    );
    assert_eq!(
        store.take(session, "toolu_b", SHORT).await.unwrap(),
        Taken::Turn(second.clone())
    );
    assert_eq!(
        store.take(session, "toolu_b", SHORT).await.unwrap(),
        Taken::Resuming,
        "within its lease a take holds the turn"
    );
    sleep(SHORT * 3).await;
    assert_eq!(
        store.take(session, "toolu_b", LONG).await.unwrap(),
        Taken::Turn(second),
        "a take whose lease ran out (its worker died) is taken again"
    );
}
