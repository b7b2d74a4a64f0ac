//! [`MemoryPendingStore`] as an [`InboxStore`] (feature `inbox`): every step under the store's
//! one lock, so each is atomic; its clock is this process's wall clock, in milliseconds. The
//! model the database stores are held to: it passes the same conformance suite.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::approval::decisions::Decisions;
use crate::inbox::judge::CallRow;
use crate::inbox::{
    Attempt, CallState, InboxStore, InboxTurn, Order, Page, PublishedTools, Query, ReadyTurn,
    Recorded, Refusal, TurnState, from_ms, now_ms,
};
use crate::store::{StoreError, StoreErrorKind, StoreFuture, Token, fenced_take};

use super::pending::{Kept, MemoryPendingStore, State, Turns, key, resume_taken};

/// Where a kept turn stands for the inbox at `now`.
fn turn_state(kept: &Kept) -> TurnState {
    match kept.state {
        State::Waiting => TurnState::Waiting,
        State::Taken { .. } => TurnState::Resuming,
        State::Resumed { .. } => TurnState::Resumed,
    }
}

/// Whether `row` of a turn in `turn` matches `query` at `now` (its cursor and order aside).
fn matches(row: &CallRow, turn: TurnState, query: &Query, now: i64) -> bool {
    let shown = row.shown_state(now);
    let state_ok = match query.state {
        None => true,
        Some(CallState::Waiting) => shown == CallState::Waiting && turn == TurnState::Waiting,
        Some(state) => shown == state,
    };
    let is = |filter: &Option<String>, value: &str| filter.as_deref().is_none_or(|f| f == value);
    let window_ok = query.expires_within.is_none_or(|w| {
        let w = i64::try_from(w.as_millis()).unwrap_or(i64::MAX);
        shown == CallState::Waiting && row.expires_at <= now.saturating_add(w)
    });
    state_ok
        && window_ok
        && is(&query.tool, &row.tool)
        && is(&query.user_id, &row.user_id)
        && is(&query.session_id, &row.session_id)
        && query
            .asked_by
            .as_deref()
            .is_none_or(|h| row.asked_by.iter().any(|a| a.hook == h))
}

fn list(turns: &Turns, query: &Query) -> Page {
    let now = now_ms();
    let after = query.after.map(|c| c.seq());
    let in_range = |seq: &u64| match (query.order, after) {
        (_, None) => true,
        (Order::OldestFirst, Some(a)) => *seq > a,
        (Order::NewestFirst, Some(a)) => *seq < a,
    };
    let state_of = |row: &CallRow| {
        turns
            .by_key
            .get(&key(&row.session_id, &row.turn_id))
            .map_or(TurnState::Resumed, turn_state)
    };
    let pick = |(seq, row): (&u64, &CallRow)| {
        (in_range(seq) && matches(row, state_of(row), query, now)).then(|| row.view(now))
    };
    let calls = &turns.inbox.calls;
    let rows: Vec<_> = match query.order {
        Order::OldestFirst => calls
            .iter()
            .filter_map(pick)
            .take(query.limit + 1)
            .collect(),
        Order::NewestFirst => calls
            .iter()
            .rev()
            .filter_map(pick)
            .take(query.limit + 1)
            .collect(),
    };
    Page::of(rows, query)
}

fn turn(turns: &Turns, session_id: &str, turn_id: &str) -> Option<InboxTurn> {
    let kept = turns.by_key.get(&key(session_id, turn_id))?;
    let now = now_ms();
    Some(InboxTurn {
        session_id: session_id.to_owned(),
        turn_id: turn_id.to_owned(),
        user_id: kept.turn.user_id.clone(),
        fingerprint: kept.turn.fingerprint.clone(),
        state: turn_state(kept),
        calls: kept
            .calls
            .iter()
            .filter_map(|seq| turns.inbox.calls.get(seq))
            .map(|row| row.turn_call(now))
            .collect(),
    })
}

fn decide(turns: &mut Turns, attempt: &Attempt) -> Recorded {
    let now = now_ms();
    let at = from_ms(now);
    let r = &attempt.request;
    if let Some(k) = &r.idempotency_key
        && let Some((digest, answer)) = turns.inbox.keys.get(k)
    {
        if *digest != attempt.request_digest {
            return Recorded::new(Err(Refusal::KeyReused { key: k.clone() }), at, false);
        }
        return Recorded::new(answer.clone(), at, true);
    }
    let Some(kept) = turns.by_key.get(&key(&r.session_id, &r.turn_id)) else {
        let unknown = Refusal::UnknownTurn {
            session_id: r.session_id.clone(),
            turn_id: r.turn_id.clone(),
        };
        return Recorded::new(Err(unknown), at, false);
    };
    let state = turn_state(kept);
    let seq = kept.calls.iter().copied().find(|seq| {
        turns
            .inbox
            .calls
            .get(seq)
            .is_some_and(|c| c.tool_use_id == r.tool_use_id)
    });
    let Some(row) = seq.and_then(|seq| turns.inbox.calls.get_mut(&seq)) else {
        let unknown = Refusal::UnknownCall {
            tool_use_id: r.tool_use_id.clone(),
        };
        return Recorded::new(Err(unknown), at, false);
    };
    let answer = row.decide(attempt, state, now);
    let recorded = Recorded::new(answer.clone(), at, false).on(&row.tool, &row.user_id);
    if let Some(k) = &r.idempotency_key {
        let kept = (attempt.request_digest.clone(), answer);
        turns.inbox.keys.insert(k.clone(), kept);
    }
    recorded
}

/// Whether the turn of `kept` is ready at `now`: each of its calls decided or past expiry.
fn ready(turns: &Turns, kept: &Kept, now: i64) -> bool {
    kept.calls.iter().all(|seq| {
        turns
            .inbox
            .calls
            .get(seq)
            .is_none_or(|c| c.shown_state(now) != CallState::Waiting)
    })
}

fn take_ready(turns: &mut Turns, fingerprint: &str, lease: Duration) -> Option<ReadyTurn> {
    let (now, instant) = (now_ms(), Instant::now());
    let takeable = |k: &Kept| match k.state {
        State::Waiting => true,
        State::Taken { until, held, .. } => !held && until <= instant,
        State::Resumed { .. } => false,
    };
    let found = turns
        .by_key
        .iter()
        .filter(|(_, k)| k.open && k.turn.fingerprint == fingerprint && takeable(k))
        .filter(|(_, k)| ready(turns, k, now))
        .min_by_key(|(_, k)| k.place)
        .map(|(key, _)| key.clone())?;
    let kept = turns.by_key.get_mut(&found)?;
    let token = Token::draw();
    kept.state = State::Taken {
        until: instant.checked_add(lease).unwrap_or(instant),
        token,
        held: false,
    };
    let (turn, seqs) = (kept.turn.clone(), kept.calls.clone());
    let mut decisions = Decisions::new();
    let mut expired = Vec::new();
    for seq in seqs {
        let Some(row) = turns.inbox.calls.get_mut(&seq) else {
            continue;
        };
        if row.state == CallState::Waiting {
            row.state = CallState::Expired;
        }
        match row.approval() {
            Some(a) => {
                // One row per call: an id is never decided twice here.
                let _ = decisions.insert(row.tool_use_id.clone(), a);
            }
            None => expired.push(row.tool_use_id.clone()),
        }
    }
    Some(ReadyTurn::new(turn, decisions, expired, token, lease))
}

impl InboxStore for MemoryPendingStore {
    fn list<'a>(&'a self, query: &'a Query) -> StoreFuture<'a, Result<Page, StoreError>> {
        StoreFuture::ready(Ok(list(&self.lock(), query)))
    }

    fn turn<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
    ) -> StoreFuture<'a, Result<Option<InboxTurn>, StoreError>> {
        StoreFuture::ready(Ok(turn(&self.lock(), session_id, turn_id)))
    }

    fn decide<'a>(&'a self, attempt: &'a Attempt) -> StoreFuture<'a, Result<Recorded, StoreError>> {
        StoreFuture::ready(Ok(decide(&mut self.lock(), attempt)))
    }

    fn take_ready<'a>(
        &'a self,
        fingerprint: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Option<ReadyTurn>, StoreError>> {
        StoreFuture::ready(Ok(take_ready(&mut self.lock(), fingerprint, lease)))
    }

    fn finished<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let mut turns = self.lock();
        let mut kept = turns.by_key.get_mut(&key(session_id, turn_id));
        let resumed = resume_taken(kept.as_deref_mut(), token, answer);
        if resumed == Ok(true)
            && let Some(kept) = kept
        {
            kept.open = false;
        }
        StoreFuture::ready(
            resumed
                .map(drop)
                .map_err(|found| fenced_take(session_id, turn_id, found)),
        )
    }

    fn publish_tools<'a>(
        &'a self,
        tools: &'a PublishedTools,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let json = serde_json::to_value(tools).unwrap_or_default();
        let mut turns = self.lock();
        turns.inbox.tools.insert(tools.fingerprint.clone(), json);
        StoreFuture::ready(Ok(()))
    }

    fn published_tools<'a>(
        &'a self,
        fingerprint: &'a str,
    ) -> StoreFuture<'a, Result<Option<PublishedTools>, StoreError>> {
        let kept = self.lock().inbox.tools.get(fingerprint).cloned();
        StoreFuture::ready(kept.map(serde_json::from_value).transpose().map_err(|e| {
            StoreError::new(
                StoreErrorKind::Corrupt,
                format!("the published tools do not read back: {e}"),
            )
        }))
    }
}
