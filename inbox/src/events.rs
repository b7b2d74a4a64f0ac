//! `GET /events`: the live updates of a page, as server-sent events. The page's script opens it
//! with the calls it shows (`watch`: a JSON array of `[session_id, turn_id, tool_use_id,
//! input_digest]`) and either the list's filters or one turn (`session`, `turn`); every poll
//! interval (a second by default) the store is read again and each change is one event:
//!
//! - `call`: `{"key": "[\"sess_1\",\"toolu_1\",\"toolu_2\"]", "state": "approved", "text":
//!   "approved by ann at 2026-12-05T10:00:00Z"}` for a watched call decided, expired, edited
//!   (`state` `waiting`, its digest changed) or gone elsewhere: the page turns it read-only;
//! - `added` (the list only): `{"html": "<tbody …>…</tbody>", "newest": false}` for calls that
//!   began waiting since: the rows to insert.
//!
//! Polling works on every store alike (a PostgreSQL `LISTEN` would need the library to notify);
//! the list's read is the same indexed page the list itself reads.
//!
//! At most [`max_streams`](crate::InboxPageBuilder::max_streams) streams are open at once (100 by
//! default); one more is refused with `503` until a page goes away, so the store's reads stay
//! bounded whatever is left open.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::mpsc;
use toolgate_core::approval::inbox::{CallState, InboxCall, InboxTurn};

use crate::app::App;
use crate::guard::{field, pairs, signed, text};
use crate::pages::blocking;
use crate::pages::list::{Filters, rows};
use crate::pages::turn::outcome;

/// The most calls one page's updates watch.
const MAX_WATCHED: usize = 500;
/// A comment line at least this often, so proxies keep the stream open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A call on the page: session, turn, `tool_use` id.
type Key = (String, String, String);

/// What a page's updates are about.
enum Watching {
    /// The list with these filters.
    List(Filters),
    /// One turn.
    Turn(String, String),
}

/// The stream's body: events as the watcher sends them.
struct Events(mpsc::Receiver<Bytes>);

impl http_body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|b| b.map(|b| Ok(http_body::Frame::data(b))))
    }
}

/// `GET /events`.
pub(crate) async fn stream(State(app): State<Arc<App>>, req: Request) -> Response {
    if let Err((status, why)) = signed(&app, &req) {
        return text(status, why);
    }
    let q = pairs(req.uri().query().unwrap_or("").as_bytes());
    let watching = match (field(&q, "session"), field(&q, "turn")) {
        (Some(s), Some(t)) => Watching::Turn(s.to_owned(), t.to_owned()),
        _ => match Filters::of(&q) {
            Ok(f) => Watching::List(f),
            Err(why) => return text(StatusCode::BAD_REQUEST, why),
        },
    };
    let watched = match field(&q, "watch").map(serde_json::from_str::<Vec<[String; 4]>>) {
        None => HashMap::new(),
        Some(Ok(list)) if list.len() <= MAX_WATCHED => list
            .into_iter()
            .map(|[s, t, id, digest]| ((s, t, id), digest))
            .collect(),
        Some(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                "`watch` is a JSON array of at most 500 [session_id, turn_id, tool_use_id, \
                 input_digest]",
            );
        }
    };
    let Ok(permit) = Arc::clone(&app.streams).try_acquire_owned() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!(
                "refused: this inbox has as many live-update streams open as it keeps ({}); the \
                 page works without them: reload it later\n",
                app.max_streams
            ),
        )
            .into_response();
    };
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        watch(app, watching, watched, tx).await;
        // The stream's place is free once its page has gone.
        drop(permit);
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::new(Events(rx)),
    )
        .into_response()
}

/// Polls the store for `watching` until the page goes away, sending each change.
async fn watch(
    app: Arc<App>,
    watching: Watching,
    mut watched: HashMap<Key, String>,
    tx: mpsc::Sender<Bytes>,
) {
    let mut last = Instant::now();
    if tx
        .send(Bytes::from_static(b"retry: 2000\n\n"))
        .await
        .is_err()
    {
        return;
    }
    loop {
        let events = match &watching {
            Watching::Turn(s, t) => turn_changes(&app, s, t, &mut watched).await,
            Watching::List(f) => list_changes(&app, f, &mut watched).await,
        };
        let mut batch = String::new();
        for (name, data) in events {
            batch.push_str(&format!("event: {name}\ndata: {data}\n\n"));
        }
        if batch.is_empty() && last.elapsed() >= KEEP_ALIVE {
            batch.push_str(": still here\n\n");
        }
        if !batch.is_empty() {
            last = Instant::now();
            if tx.send(Bytes::from(batch)).await.is_err() {
                return;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(app.poll) => {}
            () = tx.closed() => return,
        }
    }
}

/// The `call` event of `key`: its state and the sentence the page shows (as [`esc`] shows text:
/// no line separator or bidirectional formatting character reaches the page raw).
///
/// [`esc`]: crate::pages::esc
fn call_event(key: &Key, state: &str, text: &str) -> (&'static str, String) {
    let key = crate::pages::call_key(&key.0, &key.1, &key.2);
    (
        "call",
        json!({"key": key, "state": state, "text": toolgate_core::audit::printable(text)})
            .to_string(),
    )
}

/// The events of the watched calls of `turn` (`None`: no longer kept) that changed; those are
/// no longer watched.
fn changes_in(
    session_id: &str,
    turn_id: &str,
    turn: Option<&InboxTurn>,
    watched: &mut HashMap<Key, String>,
) -> Vec<(&'static str, String)> {
    let mine: Vec<Key> = watched
        .keys()
        .filter(|k| k.0 == session_id && k.1 == turn_id)
        .cloned()
        .collect();
    let mut events = Vec::new();
    for key in mine {
        let seen = watched.get(&key).cloned().unwrap_or_default();
        let call = turn.and_then(|t| t.call(&key.2));
        let event = match call {
            None => Some(call_event(&key, "gone", "no longer waiting in the store")),
            Some(c) if c.call.state != CallState::Waiting => {
                Some(call_event(&key, c.call.state.as_str(), &outcome(c)))
            }
            Some(c) if c.call.input_digest != seen => {
                let by = c.call.approvals.last().map_or("someone", |m| m.by.as_str());
                Some(call_event(
                    &key,
                    "waiting",
                    &format!("edited by {by}: look at its input again"),
                ))
            }
            Some(_) => None,
        };
        if let Some(e) = event {
            watched.remove(&key);
            events.push(e);
        }
    }
    events
}

async fn read_turn(app: &App, session_id: &str, turn_id: &str) -> Result<Option<InboxTurn>, ()> {
    let (inbox, s, t) = (
        Arc::clone(&app.inbox),
        session_id.to_owned(),
        turn_id.to_owned(),
    );
    match blocking(move || toolgate_core::block_on(inbox.turn(&s, &t))).await {
        Ok(Ok(turn)) => Ok(turn),
        _ => Err(()),
    }
}

async fn turn_changes(
    app: &App,
    session_id: &str,
    turn_id: &str,
    watched: &mut HashMap<Key, String>,
) -> Vec<(&'static str, String)> {
    match read_turn(app, session_id, turn_id).await {
        Ok(turn) => changes_in(session_id, turn_id, turn.as_ref(), watched),
        // The store did not answer: nothing is said until it does.
        Err(()) => Vec::new(),
    }
}

async fn list_changes(
    app: &App,
    filters: &Filters,
    watched: &mut HashMap<Key, String>,
) -> Vec<(&'static str, String)> {
    let query = filters.query(app.page_size);
    let inbox = Arc::clone(&app.inbox);
    let Ok(Ok(page)) = blocking(move || toolgate_core::block_on(inbox.list(&query))).await else {
        return Vec::new();
    };
    let now: HashMap<Key, &InboxCall> = page
        .calls
        .iter()
        .map(|c| {
            (
                (
                    c.session_id.clone(),
                    c.turn_id.clone(),
                    c.tool_use_id.clone(),
                ),
                c,
            )
        })
        .collect();
    let mut turns: BTreeMap<(String, String), ()> = BTreeMap::new();
    for (key, digest) in watched.iter() {
        match now.get(key) {
            Some(c) if c.input_digest == *digest => {}
            _ => {
                turns.insert((key.0.clone(), key.1.clone()), ());
            }
        }
    }
    let mut events = Vec::new();
    for (s, t) in turns.keys() {
        if let Ok(turn) = read_turn(app, s, t).await {
            events.extend(changes_in(s, t, turn.as_ref(), watched));
        }
    }
    let added: Vec<InboxCall> = page
        .calls
        .iter()
        .filter(|c| {
            let key = (
                c.session_id.clone(),
                c.turn_id.clone(),
                c.tool_use_id.clone(),
            );
            !watched.contains_key(&key) && watched.len() < MAX_WATCHED
        })
        .cloned()
        .collect();
    // A later page (after a cursor) shows what it showed; new calls are the first page's.
    if !added.is_empty() && filters.after.is_none() {
        for c in &added {
            let key = (
                c.session_id.clone(),
                c.turn_id.clone(),
                c.tool_use_id.clone(),
            );
            watched.insert(key, c.input_digest.clone());
        }
        let html = rows(&added, SystemTime::now());
        events.push((
            "added",
            json!({"html": html, "newest": filters.newest, "count": added.len()}).to_string(),
        ));
    }
    events
}
