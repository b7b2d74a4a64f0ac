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
//! share; it sleeps a few tenths of a second to let leases run out, and, for a store that
//! renews, to let a held claim outlive its lease several times (on the `futures-timer` timer:
//! no runtime needed, though a store's own futures may need one).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::approval::pending::{PENDING_TURN_FORMAT, PendingBlock, PendingTurn, TurnFormat};
use crate::audit::outcome::Outcome;
use crate::base::future::join_all;
use crate::content::message::ToolResult;

use super::{
    AnswerStore, CallKey, Claim, InputDigest, PendingStore, Remembered, StoreError, Taken, Token,
};

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

/// Claims `key` with a fresh token for `lease`: the token and the store's answer.
async fn claim(
    store: &dyn AnswerStore,
    key: CallKey<'_>,
    n: u8,
    lease: Duration,
) -> (Token, Claim) {
    let token = Token::draw();
    let claim = store.claim(key, token, digest(n), lease).await.unwrap();
    (token, claim)
}

/// Asserts that `refused` is the store's refusal of an answer of `key` whose claim no longer
/// holds the call, and that it says what the store holds (`holds`, the text inside the
/// parentheses).
fn assert_fenced(refused: Result<(), StoreError>, key: CallKey<'_>, holds: &str, step: &str) {
    let refused = refused.expect_err(step);
    assert!(refused.is_fenced(), "{step}: {refused}");
    let mut what = format!("tool_use {:?}", key.tool_use_id);
    if !key.turn.is_empty() {
        what.push_str(&format!(" of turn {:?}", key.turn));
    }
    assert_eq!(
        refused.to_string(),
        format!(
            "the store refused it: {what} of session {:?} is no longer held by this claim \
             ({holds}), so its answer is not recorded",
            key.session_id
        ),
        "{step}"
    );
}

/// What a store says it holds when a claim's lease ran out and a retry took the call over.
const TAKEN_OVER: &str = "the store holds it as interrupted: this claim's lease ran out and a \
     retry took the call over";

/// Every rule of [`AnswerStore`], in order: a claim, a second claim, an answer under the
/// claim's token and its replay, an answer under another token refused, a release before and
/// after the tool started, a lease that runs out and the late answer refused ("fenced"), a
/// claim held past its lease many times over (a store that renews) and one that lapses once
/// its hold is dropped, the same `tool_use` id in two sessions, sixteen claims of one key
/// racing (exactly one wins), and the turns ("Turns" in the [store docs](super)): one id in
/// two turns is two calls, each replayed in its own turn; a later turn waits while the first
/// call runs, and is kept apart once it lapsed; a call without a turn beside one with a turn
/// is refused either way round; sixteen claims of a later turn racing.
///
/// # Panics
/// At the first rule the store breaks, with the step's name.
pub async fn answer_store(store: &dyn AnswerStore) {
    claims_and_answers(store).await;
    answers_are_final(store).await;
    releases(store).await;
    leases(store).await;
    holds(store).await;
    sessions_apart(store).await;
    racing_claims(store).await;
    turns_apart(store).await;
    turns_in_progress(store).await;
    turns_unknown(store).await;
}

async fn claims_and_answers(store: &dyn AnswerStore) {
    let session = fresh_session("answers");
    let key = CallKey::new(&session, "toolu_1");
    let (token, claimed) = claim(store, key, 1, LONG).await;
    assert_eq!(claimed, Claim::Claimed, "a new key is claimed");
    let (_, again) = claim(store, key, 1, LONG).await;
    assert_eq!(
        again,
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "a second claim while the first runs sees it in progress"
    );
    let (other, seen) = claim(store, key, 2, LONG).await;
    assert_eq!(
        seen,
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "a claim with another input sees the first input's digest"
    );
    let result = ToolResult::error("toolu_1", "BLOCKED: over the limit");
    let wrong = store.answered(key, other, Outcome::Ok, &result).await;
    assert_fenced(
        wrong,
        key,
        "another claim holds it",
        "an answer under a token that did not claim the call is refused",
    );
    store
        .answered(key, token, Outcome::Blocked, &result)
        .await
        .unwrap();
    let (_, replay) = claim(store, key, 1, LONG).await;
    assert_eq!(
        replay,
        Claim::Seen(Remembered::Answered {
            digest: digest(1),
            outcome: Outcome::Blocked,
            result: result.clone(),
        }),
        "an answered key is remembered with its outcome and its exact result"
    );
}

/// An answer is final: sent again under its token it is not refused and changes nothing; a
/// release or an abandon of it changes nothing; every key keeps its own answer.
async fn answers_are_final(store: &dyn AnswerStore) {
    let session = fresh_session("final");
    let key = CallKey::new(&session, "toolu_1");
    let (token, _) = claim(store, key, 1, LONG).await;
    let result = ToolResult::text("toolu_1", "done");
    store
        .answered(key, token, Outcome::Ok, &result)
        .await
        .unwrap();
    let later = ToolResult::text("toolu_1", "something else");
    store
        .answered(key, token, Outcome::Ok, &later)
        .await
        .expect("an answer sent again under its claim's token is not refused");
    store.release(key, token, false).await.unwrap();
    store.abandon(key, token, true);
    let replay = Claim::Seen(Remembered::Answered {
        digest: digest(1),
        outcome: Outcome::Ok,
        result,
    });
    assert_eq!(
        claim(store, key, 1, LONG).await.1,
        replay,
        "an answer is final"
    );
    let blocks = ToolResult::text("toolu_2", "ok");
    let k2 = CallKey::new(&session, "toolu_2");
    let (t2, claimed) = claim(store, k2, 3, LONG).await;
    assert_eq!(claimed, Claim::Claimed);
    store.answered(k2, t2, Outcome::Ok, &blocks).await.unwrap();
    let Claim::Seen(Remembered::Answered { result: got, .. }) = claim(store, k2, 3, LONG).await.1
    else {
        panic!("the second key is answered");
    };
    assert_eq!(got, blocks, "every key keeps its own answer");
}

async fn releases(store: &dyn AnswerStore) {
    let session = fresh_session("releases");
    let key = CallKey::new(&session, "toolu_1");
    let (token, claimed) = claim(store, key, 1, LONG).await;
    assert_eq!(claimed, Claim::Claimed);
    store.release(key, Token::draw(), false).await.unwrap();
    assert_eq!(
        claim(store, key, 1, LONG).await.1,
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "a release under another token leaves the claim"
    );
    store.release(key, token, false).await.unwrap();
    let (token, claimed) = claim(store, key, 2, LONG).await;
    assert_eq!(
        claimed,
        Claim::Claimed,
        "a released call that never started is forgotten: a retry claims it anew"
    );
    store.release(key, token, true).await.unwrap();
    let interrupted = Claim::Seen(Remembered::Interrupted { digest: digest(2) });
    assert_eq!(
        claim(store, key, 2, LONG).await.1,
        interrupted,
        "a released call whose tool started is interrupted, never claimed again"
    );
    let late = ToolResult::text("toolu_1", "late");
    let refused = store.answered(key, token, Outcome::Ok, &late).await;
    assert_fenced(refused, key, TAKEN_OVER, "an answer after an interruption");
    assert_eq!(
        claim(store, key, 2, LONG).await.1,
        interrupted,
        "an answer after an interruption changes nothing"
    );
}

async fn leases(store: &dyn AnswerStore) {
    let session = fresh_session("leases");
    let key = CallKey::new(&session, "toolu_1");
    let (token, claimed) = claim(store, key, 1, SHORT).await;
    assert_eq!(claimed, Claim::Claimed);
    assert_eq!(
        claim(store, key, 1, SHORT).await.1,
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "within its lease a claim is in progress"
    );
    sleep(SHORT * 3).await;
    let interrupted = Claim::Seen(Remembered::Interrupted { digest: digest(1) });
    assert_eq!(
        claim(store, key, 1, LONG).await.1,
        interrupted,
        "a claim whose lease ran out with no answer is interrupted"
    );
    let late = ToolResult::text("toolu_1", "too late");
    let refused = store.answered(key, token, Outcome::Ok, &late).await;
    assert_fenced(refused, key, TAKEN_OVER, "the answer of a claim taken over");
    assert_eq!(
        claim(store, key, 1, LONG).await.1,
        interrupted,
        "an answer that comes after the lease ran out changes nothing"
    );
}

/// A store that renews: a held claim outlives its lease five times over, in progress all
/// along, and its answer is recorded; a claim whose hold is dropped lapses with its lease.
async fn holds(store: &dyn AnswerStore) {
    if !store.renews() {
        return;
    }
    let session = fresh_session("holds");
    let key = CallKey::new(&session, "toolu_long");
    let (token, claimed) = claim(store, key, 1, SHORT).await;
    assert_eq!(claimed, Claim::Claimed);
    let hold = store
        .hold(key, token, SHORT)
        .expect("a store that renews holds a claim");
    for _ in 0..5 {
        sleep(SHORT).await;
        assert_eq!(
            claim(store, key, 1, SHORT).await.1,
            Claim::Seen(Remembered::InProgress { digest: digest(1) }),
            "a held claim stays in progress past its lease"
        );
    }
    assert_eq!(hold.status().lost, None, "no renewal failed");
    let result = ToolResult::text("toolu_long", "done at last");
    store
        .answered(key, token, Outcome::Ok, &result)
        .await
        .expect("the held claim's answer is recorded");
    drop(hold);
    let dropped = CallKey::new(&session, "toolu_dropped");
    let (token, _) = claim(store, dropped, 2, SHORT).await;
    drop(store.hold(dropped, token, SHORT));
    sleep(SHORT * 3).await;
    assert_eq!(
        claim(store, dropped, 2, LONG).await.1,
        Claim::Seen(Remembered::Interrupted { digest: digest(2) }),
        "a claim whose hold was dropped lapses with its lease"
    );
}

async fn sessions_apart(store: &dyn AnswerStore) {
    let (a, b) = (fresh_session("apart-a"), fresh_session("apart-b"));
    let ka = CallKey::new(&a, "toolu_same");
    let kb = CallKey::new(&b, "toolu_same");
    let (ta, claimed) = claim(store, ka, 1, LONG).await;
    assert_eq!(claimed, Claim::Claimed);
    assert_eq!(
        claim(store, kb, 2, LONG).await.1,
        Claim::Claimed,
        "one tool_use id in two sessions is two calls"
    );
    store
        .answered(ka, ta, Outcome::Ok, &ToolResult::text("toolu_same", "a"))
        .await
        .unwrap();
    assert_eq!(
        claim(store, kb, 2, LONG).await.1,
        Claim::Seen(Remembered::InProgress { digest: digest(2) }),
        "answering one session's call leaves the other's in progress"
    );
}

async fn racing_claims(store: &dyn AnswerStore) {
    let session = fresh_session("race");
    let key = CallKey::new(&session, "toolu_raced");
    let claims = (0..16)
        .map(|_| Box::pin(store.claim(key, Token::draw(), digest(7), LONG)) as Racer<'_, _>)
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
    let (t1, claimed) = claim(store, first, 1, LONG).await;
    assert_eq!(claimed, Claim::Claimed);
    let one = ToolResult::text(id, "12:00");
    store.answered(first, t1, Outcome::Ok, &one).await.unwrap();
    let (t2, claimed) = claim(store, later, 1, LONG).await;
    assert_eq!(
        claimed,
        Claim::Claimed,
        "a later turn's call with the same id and input is a new call"
    );
    assert_eq!(
        claim(store, later, 1, LONG).await.1,
        Claim::Seen(Remembered::InProgress { digest: digest(1) }),
        "the later turn's call is in progress under its own turn"
    );
    let two = ToolResult::text(id, "12:05");
    store.answered(later, t2, Outcome::Ok, &two).await.unwrap();
    let answered = |result: &ToolResult| {
        Claim::Seen(Remembered::Answered {
            digest: digest(1),
            outcome: Outcome::Ok,
            result: result.clone(),
        })
    };
    assert_eq!(
        claim(store, first, 1, LONG).await.1,
        answered(&one),
        "the first turn replays its own answer"
    );
    assert_eq!(
        claim(store, later, 1, LONG).await.1,
        answered(&two),
        "the later turn replays its own answer, not the first's"
    );
    // A later turn's release acts on its own call only.
    let third = CallKey::in_turn(&session, "chatcmpl-3", id);
    let (t3, claimed) = claim(store, third, 2, LONG).await;
    assert_eq!(
        claimed,
        Claim::Claimed,
        "a later turn's call with another input is a new call"
    );
    store.release(third, t3, true).await.unwrap();
    assert_eq!(
        claim(store, third, 2, LONG).await.1,
        Claim::Seen(Remembered::Interrupted { digest: digest(2) }),
        "a later turn's call released after its tool started is interrupted"
    );
    assert_eq!(
        claim(store, first, 1, LONG).await.1,
        answered(&one),
        "releasing a later turn's call leaves the first turn's answer"
    );
    let fourth = CallKey::in_turn(&session, "chatcmpl-4", id);
    let claims = (0..16)
        .map(|_| Box::pin(store.claim(fourth, Token::draw(), digest(3), LONG)) as Racer<'_, _>)
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
    let (t1, claimed) = claim(store, first, 1, LONG).await;
    assert_eq!(claimed, Claim::Claimed);
    assert_eq!(
        claim(store, later, 1, LONG).await.1,
        Claim::OtherTurn { in_progress: true },
        "a later turn's call waits while the first call with its id runs"
    );
    store.release(first, t1, false).await.unwrap();
    let (t2, claimed) = claim(store, later, 1, LONG).await;
    assert_eq!(
        claimed,
        Claim::Claimed,
        "the first call released before its tool started: the later turn's call is the first"
    );
    assert_eq!(
        claim(store, first, 1, LONG).await.1,
        Claim::OtherTurn { in_progress: true },
        "and the earlier turn's retry waits for it in turn"
    );
    store.release(later, t2, true).await.unwrap();
    assert_eq!(
        claim(store, first, 1, LONG).await.1,
        Claim::Claimed,
        "once that call is interrupted, the earlier turn's call is kept apart"
    );
    assert_eq!(
        claim(store, later, 1, LONG).await.1,
        Claim::Seen(Remembered::Interrupted { digest: digest(1) }),
        "the interrupted call stays its turn's"
    );
    let lapsing = CallKey::in_turn(&session, "resp_1", "call_1");
    let after = CallKey::in_turn(&session, "resp_2", "call_1");
    assert_eq!(claim(store, lapsing, 4, SHORT).await.1, Claim::Claimed);
    sleep(SHORT * 3).await;
    assert_eq!(
        claim(store, after, 4, LONG).await.1,
        Claim::Claimed,
        "a first call whose lease ran out is interrupted, and a later turn's call kept apart"
    );
    assert_eq!(
        claim(store, lapsing, 4, LONG).await.1,
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
    let (t1, claimed) = claim(store, bare, 1, LONG).await;
    assert_eq!(claimed, Claim::Claimed);
    let result = ToolResult::text("toolu_1", "done");
    store
        .answered(bare, t1, Outcome::Ok, &result)
        .await
        .unwrap();
    assert_eq!(
        claim(store, named, 1, LONG).await.1,
        Claim::OtherTurn { in_progress: false },
        "a call with a turn beside one without"
    );
    let bare = CallKey::new(&session, "toolu_2");
    let named = CallKey::in_turn(&session, "msg_1", "toolu_2");
    let (t2, claimed) = claim(store, named, 2, LONG).await;
    assert_eq!(claimed, Claim::Claimed);
    let (refused, other) = claim(store, bare, 2, LONG).await;
    assert_eq!(
        other,
        Claim::OtherTurn { in_progress: false },
        "a call without a turn beside one with a turn, in progress or not"
    );
    // The refused claims changed nothing: an answer or a release under their tokens (or the
    // turn's own, without the turn) finds no claim of theirs.
    for token in [refused, t2] {
        let answered = store.answered(bare, token, Outcome::Ok, &result).await;
        let holds = "the store keeps no claim of it";
        assert_fenced(answered, bare, holds, "an answer without the turn");
        store.release(bare, token, true).await.unwrap();
    }
    assert_eq!(
        claim(store, named, 2, LONG).await.1,
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
/// one resume at a time (eight takes racing: exactly one wins), put back (only by its take's
/// token), resumed under its take's token with its answer kept for later takes (a resume under
/// another token refused), a take whose lease ran out taken again and the first take's late
/// resume refused, a take held past its lease many times over (a store that renews), and the
/// waiting turns of a session listed oldest first.
///
/// # Panics
/// At the first rule the store breaks, with the step's name.
pub async fn pending_store(store: &dyn PendingStore) {
    let session = fresh_session("pending");
    let (first, second) = kept_once(store, &session).await;
    let token = racing_takes(store, &session, &first, &second).await;
    resumed(store, &session, first, token).await;
    lapsed(store, &session, second).await;
    held_takes(store, &session).await;
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
/// waits; put back under another token, it stays taken; under its own, it is taken again. The
/// token of the take that holds it now.
async fn racing_takes(
    store: &dyn PendingStore,
    session: &str,
    first: &PendingTurn,
    second: &PendingTurn,
) -> Token {
    assert_eq!(
        store
            .take(session, "toolu_none", Token::draw(), LONG)
            .await
            .unwrap(),
        Taken::Missing,
        "a turn never kept is missing"
    );
    let tokens: Vec<Token> = (0..8).map(|_| Token::draw()).collect();
    let takes = tokens
        .iter()
        .map(|t| Box::pin(store.take(session, "toolu_a", *t, LONG)) as Racer<'_, _>)
        .collect();
    let outcomes = join_all(takes).await;
    let won: Vec<usize> = (0..8)
        .filter(|i| matches!(outcomes[*i], Ok(Taken::Turn(_))))
        .collect();
    assert_eq!(
        won.len(),
        1,
        "of eight takes racing, one wins: {outcomes:?}"
    );
    assert_eq!(
        outcomes[won[0]],
        Ok(Taken::Turn(first.clone())),
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
    let (winner, loser) = (tokens[won[0]], tokens[(won[0] + 1) % 8]);
    store.put_back(session, "toolu_a", loser).await.unwrap();
    assert_eq!(
        store.take(session, "toolu_a", loser, LONG).await.unwrap(),
        Taken::Resuming,
        "a put back under another take's token leaves the turn taken"
    );
    store.put_back(session, "toolu_a", winner).await.unwrap();
    let token = Token::draw();
    assert_eq!(
        store.take(session, "toolu_a", token, LONG).await.unwrap(),
        Taken::Turn(first.clone()),
        "a turn put back is taken again"
    );
    token
}

/// A resumed turn answers every later take with its answer (and is neither kept again nor put
/// back); its resume sent again under its token is not refused, one under another is.
async fn resumed(store: &dyn PendingStore, session: &str, first: PendingTurn, token: Token) {
    let answer = json!({"role": "user", "content": []});
    let other = store
        .resumed(session, "toolu_a", Token::draw(), &answer)
        .await;
    let refused = other.expect_err("a resume under a token that did not take the turn");
    assert!(refused.is_fenced(), "{refused}");
    store
        .resumed(session, "toolu_a", token, &answer)
        .await
        .unwrap();
    store
        .resumed(session, "toolu_a", token, &answer)
        .await
        .expect("a resume sent again under its take's token is not refused");
    let take = |t| store.take(session, "toolu_a", t, LONG);
    assert_eq!(
        take(Token::draw()).await.unwrap(),
        Taken::Resumed(answer.clone()),
        "a resumed turn answers every later take with its answer"
    );
    store.put(&first).await.unwrap();
    store.put_back(session, "toolu_a", token).await.unwrap();
    assert_eq!(
        take(Token::draw()).await.unwrap(),
        Taken::Resumed(answer),
        "a resumed turn is not kept again nor put back"
    );
}

/// A take whose lease ran out (its worker died) is taken again; the first take's late resume
/// is refused and changes nothing.
async fn lapsed(store: &dyn PendingStore, session: &str, second: PendingTurn) {
    let (early, late) = (Token::draw(), Token::draw());
    let take = |t, lease| store.take(session, "toolu_b", t, lease);
    assert_eq!(
        take(early, SHORT).await.unwrap(),
        Taken::Turn(second.clone())
    );
    assert_eq!(
        take(Token::draw(), SHORT).await.unwrap(),
        Taken::Resuming,
        "within its lease a take holds the turn"
    );
    sleep(SHORT * 3).await;
    assert_eq!(
        take(late, LONG).await.unwrap(),
        Taken::Turn(second),
        "a take whose lease ran out (its worker died) is taken again"
    );
    let answer = json!({"role": "user", "content": ["late"]});
    let refused = store.resumed(session, "toolu_b", early, &answer).await;
    let refused = refused.expect_err("the resume of a take taken over");
    assert!(refused.is_fenced(), "{refused}");
    assert_eq!(
        refused.to_string(),
        format!(
            "the store refused it: the paused turn \"toolu_b\" of session {session:?} is no \
             longer held by this take (its lease ran out and another resume took the turn), so \
             its answer is not recorded"
        )
    );
    store.put_back(session, "toolu_b", early).await.unwrap();
    assert_eq!(
        take(Token::draw(), LONG).await.unwrap(),
        Taken::Resuming,
        "the late take's put back leaves the turn to the take that holds it"
    );
}

/// A store that renews: a held take outlives its lease five times over; once its hold is
/// dropped it lapses with its lease.
async fn held_takes(store: &dyn PendingStore, session: &str) {
    if !store.renews() {
        return;
    }
    let third = turn(session, "toolu_c");
    store.put(&third).await.unwrap();
    let token = Token::draw();
    let take = |t, lease| store.take(session, "toolu_c", t, lease);
    assert_eq!(
        take(token, SHORT).await.unwrap(),
        Taken::Turn(third.clone())
    );
    let hold = store
        .hold(session, "toolu_c", token, SHORT)
        .expect("a store that renews holds a take");
    for _ in 0..5 {
        sleep(SHORT).await;
        assert_eq!(
            take(Token::draw(), SHORT).await.unwrap(),
            Taken::Resuming,
            "a held take keeps the turn past its lease"
        );
    }
    assert_eq!(hold.status().lost, None, "no renewal failed");
    drop(hold);
    sleep(SHORT * 3).await;
    assert_eq!(
        take(Token::draw(), LONG).await.unwrap(),
        Taken::Turn(third),
        "a take whose hold was dropped lapses with its lease"
    );
}
