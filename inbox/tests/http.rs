//! The page over HTTP, each test on an SQLite file and on a fresh database of the throwaway
//! PostgreSQL server (`toolgate_test_support::postgres`, the workspace's tests' own): races, refusals, bad
//! input. Every refusal asserts its status and that nothing changed in the store (the call as the
//! store shows it, and the count of decision lines).

mod support;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Answer, Client, TempDir, World, hidden, refunds};
use toolgate_core::approval::inbox::{Action, Identity, Inbox, Policy};
use toolgate_core::store::postgres::PostgresStore;
use toolgate_inbox::{Auth, CONTENT_SECURITY_POLICY, InboxPage};
use toolgate_test_support::postgres as server;

/// A world on a fresh PostgreSQL database.
fn postgres(name: &str) -> World {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    let mut w = World::new(Arc::new(store), TempDir::new(name));
    let sql = server::Sql::connect(&db.settings);
    let db = Arc::new(std::sync::Mutex::new((db, sql)));
    w.count_lines = Some(Box::new(move || {
        let held = db.lock().unwrap();
        usize::try_from(
            held.1
                .int("SELECT count(*) FROM toolgate_audit WHERE chain = 'decisions'"),
        )
        .unwrap()
    }));
    w
}

/// Each test on SQLite and on PostgreSQL.
macro_rules! both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(super::World::sqlite(stringify!($name)));
            }
            #[test]
            fn postgres() {
                super::$name(super::postgres(stringify!($name)));
            }
        }
    )*};
}

both!(
    two_people_at_the_same_moment_one_wins_the_other_is_told_who,
    one_idempotency_key_sent_twice_gets_the_first_answer,
    a_decision_after_the_expiry_is_refused_and_the_turn_resumes_it_as_expired,
    a_decision_for_a_digest_the_call_no_longer_has_is_refused,
    the_requester_may_not_decide_their_own_call_whatever_the_body_says,
    forged_and_unauthenticated_posts_are_refused_and_change_nothing,
    bad_bodies_and_unknown_ids_get_a_clear_error_and_change_nothing,
    a_decision_lands_on_the_call_it_names_among_parallel_calls,
    an_edit_keeps_its_json_types_cannot_rename_the_tool_and_a_deny_still_wins,
    a_two_person_tool_is_not_ready_after_one_approval,
    eight_workers_racing_for_one_ready_turn_resume_once_and_refund_once,
    a_form_decline_without_a_reason_is_refused_next_to_its_field,
);

/// The JSON body deciding `call` of `turn` with `choice`, for the digest the store shows.
fn body(w: &World, session: &str, turn: &str, call: &str, choice: &str) -> Value {
    let digest = w.call(session, turn, call)["input_digest"].clone();
    json!({"session_id": session, "turn_id": turn, "tool_use_id": call,
           "input_digest": digest, "choice": choice})
}

fn refund(order: &str, cents: u64) -> Value {
    json!({"order_id": order, "amount_cents": cents})
}

/// What must not change: the call as the store shows it, and the decision lines.
fn snapshot(w: &World, session: &str, turn: &str, call: &str) -> (Value, usize) {
    (w.call(session, turn, call), w.decision_count())
}

fn two_people_at_the_same_moment_one_wins_the_other_is_told_who(w: World) {
    w.pause(
        "s_race",
        &[("t_race", "issue_refund", refund("o_race", 25_000))],
    );
    let b = body(&w, "s_race", "t_race", "t_race", "approve");
    let people = [w.signed_in("ann"), w.signed_in("bob")];
    let barrier = Arc::new(Barrier::new(2));
    let answers: Vec<(String, Answer)> = std::thread::scope(|s| {
        let handles: Vec<_> = people
            .iter()
            .zip(["ann", "bob"])
            .map(|(c, name)| {
                let (barrier, b) = (Arc::clone(&barrier), b.clone());
                s.spawn(move || {
                    barrier.wait();
                    (name.to_owned(), c.decide(&b, None))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<&(String, Answer)> = answers.iter().filter(|(_, a)| a.status == 200).collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    let (winner, answer) = won[0];
    assert_eq!(answer.json()["state"], "approved");
    assert_eq!(answer.json()["by"], winner.as_str());
    let (_, lost) = answers.iter().find(|(n, _)| n != winner).unwrap();
    assert_eq!(lost.status, 409, "{lost:?}");
    let refused = lost.json();
    assert_eq!(refused["refused"], "already_decided");
    assert_eq!(refused["by"], winner.as_str());
    assert_eq!(refused["state"], "approved");
    assert_eq!(
        refused["detail"],
        format!(
            "already approved by {winner} at {}",
            refused["at"].as_str().unwrap()
        )
    );
    assert_eq!(
        w.call("s_race", "t_race", "t_race")["decided"]["by"],
        winner.as_str()
    );
}

fn one_idempotency_key_sent_twice_gets_the_first_answer(w: World) {
    w.pause(
        "s_key",
        &[("t_key", "issue_refund", refund("o_key", 25_000))],
    );
    let ann = w.signed_in("ann");
    let b = body(&w, "s_key", "t_key", "t_key", "approve");
    let first = ann.decide(&b, Some("click-1"));
    assert_eq!(first.status, 200, "{first:?}");
    let lines = w.decision_count();
    let again = ann.decide(&b, Some("click-1"));
    assert_eq!((again.status, again.json()), (200, first.json()));
    assert_eq!(w.decision_count(), lines, "a replay writes no line");
    // Without the key, a second click is told it is decided already (by ann herself).
    let other = ann.decide(&b, Some("click-2"));
    assert_eq!(other.status, 409);
    assert_eq!(other.json()["refused"], "already_decided");
    // The key with another request is refused, nothing recorded.
    let mut decline = b.clone();
    decline["choice"] = json!("decline");
    decline["reason"] = json!("no");
    let reused = ann.decide(&decline, Some("click-1"));
    assert_eq!(
        (reused.status, reused.json()["refused"].clone()),
        (409, json!("key_reused"))
    );
    assert_eq!(w.call("s_key", "t_key", "t_key")["state"], "approved");
}

fn a_decision_after_the_expiry_is_refused_and_the_turn_resumes_it_as_expired(w: World) {
    w.pause_by(
        &w.hasty,
        "s_late",
        &[("t_late", "issue_refund", refund("o_late", 25_000))],
    );
    let ann = w.signed_in("ann");
    let b = body(&w, "s_late", "t_late", "t_late", "approve");
    std::thread::sleep(Duration::from_secs(2));
    let late = ann.decide(&b, None);
    assert_eq!(late.status, 409, "{late:?}");
    assert_eq!(late.json()["refused"], "expired");
    assert!(
        late.json()["detail"]
            .as_str()
            .unwrap()
            .ends_with("before a decision came: it will not run")
    );
    let ready = toolgate_core::block_on(
        w.store
            .take_ready(&w.hasty.fingerprint(), Duration::from_secs(60)),
    )
    .unwrap()
    .expect("the turn is ready: its only call expired");
    assert_eq!(ready.expired, ["t_late"]);
    let session = w.hasty.session(w.context("s_late"));
    let answer = toolgate_core::block_on(session.resume_ready(w.store.as_ref(), &ready)).unwrap();
    assert_eq!(
        serde_json::to_value(answer).unwrap()["content"][0]["content"],
        "BLOCKED: this call waited for a person's approval longer than 1 s and expired; it was \
         not done. Ask the user whether to try it again."
    );
    assert_eq!(refunds("o_late"), 0);
}

fn a_decision_for_a_digest_the_call_no_longer_has_is_refused(w: World) {
    w.pause(
        "s_dig",
        &[("t_dig", "issue_refund", refund("o_dig", 25_000))],
    );
    let ann = w.signed_in("ann");
    let mut b = body(&w, "s_dig", "t_dig", "t_dig", "approve");
    let shown = b["input_digest"].as_str().unwrap().to_owned();
    b["input_digest"] = json!("0".repeat(64));
    let before = snapshot(&w, "s_dig", "t_dig", "t_dig");
    let stale = ann.decide(&b, None);
    assert_eq!(stale.status, 409, "{stale:?}");
    assert_eq!(stale.json()["refused"], "input_changed");
    assert_eq!(stale.json()["now"], shown.as_str());
    assert_eq!(snapshot(&w, "s_dig", "t_dig", "t_dig").0, before.0);
    assert_eq!(
        w.decision_count(),
        before.1 + 1,
        "the refused attempt is one audit line"
    );
}

fn the_requester_may_not_decide_their_own_call_whatever_the_body_says(w: World) {
    w.pause(
        "s_own",
        &[("t_own", "issue_refund", refund("o_own", 25_000))],
    );
    let customer = w.signed_in("u_001");
    let b = body(&w, "s_own", "t_own", "t_own", "approve");
    let before = snapshot(&w, "s_own", "t_own", "t_own");
    let own = customer.decide(&b, None);
    assert_eq!(own.status, 403, "{own:?}");
    assert_eq!(own.json()["refused"], "not_allowed");
    assert_eq!(
        own.json()["detail"],
        "the call was made on behalf of u_001, who may not decide it: another person must"
    );
    // A body naming someone else as who decides is refused whole, by anyone.
    let mut forged = b.clone();
    forged["decided_by"] = json!("ann");
    let f = customer.decide(&forged, None);
    assert_eq!(f.status, 400, "{f:?}");
    assert!(
        f.json()["error"]
            .as_str()
            .unwrap()
            .contains("unknown field `decided_by`"),
        "{f:?}"
    );
    // carol is signed in, and no rule lets her approve.
    let carol = w.signed_in("carol").decide(&b, None);
    assert_eq!(
        (carol.status, carol.json()["refused"].clone()),
        (403, json!("not_allowed"))
    );
    let after = snapshot(&w, "s_own", "t_own", "t_own");
    assert_eq!(after.0, before.0);
    assert_eq!(
        after.1,
        before.1 + 2,
        "two refused attempts, two lines; the malformed one none"
    );
}

fn forged_and_unauthenticated_posts_are_refused_and_change_nothing(w: World) {
    w.pause(
        "s_csrf",
        &[("t_csrf", "issue_refund", refund("o_csrf", 25_000))],
    );
    let ann = w.signed_in("ann");
    let b = body(&w, "s_csrf", "t_csrf", "t_csrf", "approve").to_string();
    let before = snapshot(&w, "s_csrf", "t_csrf", "t_csrf");
    let csrf = ann.csrf.clone().unwrap();
    let json_ct = ("Content-Type", "application/json");
    let own = ann.origin();
    // What is refused: (what, who sends it, the headers, the status).
    type Case<'a> = (&'a str, Client, Vec<(&'a str, String)>, u16);
    let cases: Vec<Case<'_>> = vec![
        (
            "cross-origin",
            ann.clone(),
            vec![
                ("Origin", "http://evil.example".into()),
                ("X-CSRF-Token", csrf.clone()),
            ],
            403,
        ),
        (
            "no origin",
            ann.clone(),
            vec![("X-CSRF-Token", csrf.clone())],
            403,
        ),
        (
            "origin null",
            ann.clone(),
            vec![("Origin", "null".into()), ("X-CSRF-Token", csrf.clone())],
            403,
        ),
        ("no token", ann.clone(), vec![("Origin", own.clone())], 403),
        (
            "wrong token",
            ann.clone(),
            vec![("Origin", own.clone()), ("X-CSRF-Token", "f".repeat(64))],
            403,
        ),
        (
            "no session",
            w.client(),
            vec![("Origin", own.clone()), ("X-CSRF-Token", csrf.clone())],
            401,
        ),
        (
            "wrong host",
            Client {
                host: "evil.example:80".into(),
                ..ann.clone()
            },
            vec![("Origin", own.clone()), ("X-CSRF-Token", csrf.clone())],
            421,
        ),
        (
            "rebinding host",
            Client {
                host: format!("attacker.example:{}", ann.addr.port()),
                ..ann.clone()
            },
            vec![
                (
                    "Origin",
                    format!("http://attacker.example:{}", ann.addr.port()),
                ),
                ("X-CSRF-Token", csrf.clone()),
            ],
            421,
        ),
    ];
    for (what, client, headers, status) in cases {
        let mut h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        h.push(json_ct);
        let a = client.send("POST", "/api/decide", &h, b.as_bytes());
        assert_eq!(a.status, status, "{what}: {a:?}");
        assert_eq!(a.header("access-control-allow-origin"), None, "{what}");
        assert_eq!(
            snapshot(&w, "s_csrf", "t_csrf", "t_csrf"),
            before,
            "{what} changed nothing"
        );
    }
    // The form route too: a form from another site, or without its token.
    let fields = |csrf: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("session_id", "s_csrf".into()),
            ("turn_id", "t_csrf".into()),
            ("tool_use_id", "t_csrf".into()),
            (
                "input_digest",
                before.0["input_digest"].as_str().unwrap().into(),
            ),
            ("choice", "approve".into()),
        ]
    };
    let form = |f: Vec<(&str, String)>| -> String {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(f)
            .finish()
    };
    let ct = ("Content-Type", "application/x-www-form-urlencoded");
    let a = ann.send(
        "POST",
        "/decide",
        &[("Origin", "http://evil.example"), ct],
        form(fields(&csrf)).as_bytes(),
    );
    assert_eq!(a.status, 403, "{a:?}");
    let a = ann.send(
        "POST",
        "/decide",
        &[("Origin", &own), ct],
        form(fields("")).as_bytes(),
    );
    assert_eq!(a.status, 403, "{a:?}");
    assert_eq!(snapshot(&w, "s_csrf", "t_csrf", "t_csrf"), before);
    // The pages: the exact policy, no CORS, no caching; no page without a session.
    let page = ann.get("/");
    assert_eq!(
        page.header("content-security-policy"),
        Some(CONTENT_SECURITY_POLICY)
    );
    assert_eq!(
        CONTENT_SECURITY_POLICY,
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let pre = ann.send(
        "OPTIONS",
        "/api/decide",
        &[
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        b"",
    );
    assert_eq!(
        (pre.status, pre.header("access-control-allow-origin")),
        (405, None)
    );
    let anon = w.client().get("/");
    assert_eq!(
        (anon.status, anon.header("location")),
        (303, Some("/sign-in"))
    );
    let anon = w.client().get(&support_turn("s_csrf", "t_csrf"));
    assert_eq!(anon.status, 303);
    assert!(!anon.body.contains("o_csrf"));
    // A session cookie is HttpOnly and SameSite=Strict; the token never comes back in a page.
    let mut fresh = w.client();
    fresh.sign_in(&support::token("bob"));
    let set = w.client().get("/sign-in");
    assert!(
        set.header("set-cookie")
            .unwrap()
            .ends_with("; Path=/; HttpOnly; SameSite=Strict")
    );
    let list = fresh.get("/");
    assert!(!list.body.contains(&support::token("bob")));
    assert!(!list.body.contains(fresh.cookie.as_deref().unwrap()));
}

fn support_turn(session: &str, turn: &str) -> String {
    format!("/turn?session={session}&turn={turn}")
}

fn bad_bodies_and_unknown_ids_get_a_clear_error_and_change_nothing(w: World) {
    w.pause(
        "s_bad",
        &[("t_bad", "issue_refund", refund("o_bad", 25_000))],
    );
    let ann = w.signed_in("ann");
    let good = body(&w, "s_bad", "t_bad", "t_bad", "approve");
    let before = snapshot(&w, "s_bad", "t_bad", "t_bad");
    let raw = |bytes: &[u8], ct: &str| {
        let origin = ann.origin();
        let csrf = ann.csrf.clone().unwrap();
        ann.send(
            "POST",
            "/api/decide",
            &[
                ("Origin", &origin),
                ("Content-Type", ct),
                ("X-CSRF-Token", &csrf),
            ],
            bytes,
        )
    };
    let big = raw(&vec![b' '; 16 * 1024 + 1], "application/json");
    assert_eq!(big.status, 413, "{big:?}");
    let broken = raw(b"{\"session_id\": ", "application/json");
    assert_eq!(broken.status, 400);
    assert!(
        broken.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("the body is not a decision: EOF while parsing"),
        "{broken:?}"
    );
    let not_json = raw(b"choice=approve", "application/x-www-form-urlencoded");
    assert_eq!(not_json.status, 415);
    let mut unknown_turn = good.clone();
    unknown_turn["turn_id"] = json!("t_nope");
    let a = ann.decide(&unknown_turn, None);
    assert_eq!(
        (a.status, a.json()["refused"].clone()),
        (404, json!("unknown_turn"))
    );
    let mut unknown_call = good.clone();
    unknown_call["tool_use_id"] = json!("t_nope");
    let a = ann.decide(&unknown_call, None);
    assert_eq!(
        (a.status, a.json()["refused"].clone()),
        (404, json!("unknown_call"))
    );
    let mut empty = good.clone();
    empty["session_id"] = json!("");
    let a = ann.decide(&empty, None);
    assert_eq!(
        (a.status, a.json()["detail"].clone()),
        (
            400,
            json!("the request is not valid: `session_id` is empty")
        )
    );
    let mut wrong_type = good.clone();
    wrong_type["choice"] = json!("aprove");
    assert_eq!(ann.decide(&wrong_type, None).status, 400);
    let long_key = "k".repeat(201);
    let a = ann.decide(&good, Some(&long_key));
    assert_eq!(
        (a.status, a.json()["refused"].clone()),
        (400, json!("bad_request"))
    );
    // Pages: an unknown turn, a bad cursor.
    assert_eq!(ann.get(&support_turn("s_bad", "t_nope")).status, 404);
    assert_eq!(ann.get("/?after=zzz").status, 400);
    assert_eq!(
        snapshot(&w, "s_bad", "t_bad", "t_bad"),
        before,
        "nothing changed, no line"
    );
}

fn a_decision_lands_on_the_call_it_names_among_parallel_calls(w: World) {
    w.pause(
        "s_par",
        &[
            ("t_par1", "issue_refund", refund("o_par1", 25_000)),
            ("t_par2", "issue_refund", refund("o_par2", 30_000)),
            (
                "t_par3",
                "wire_transfer",
                json!({"to": "acct_9", "amount_cents": 500}),
            ),
        ],
    );
    let ann = w.signed_in("ann");
    // The list shows every call of the turn, in one group.
    let list = ann.get("/");
    for id in ["t_par1", "t_par2", "t_par3"] {
        assert!(
            list.body.contains(&format!("&quot;{id}&quot;]")),
            "{id} listed"
        );
    }
    assert!(list.body.contains("3 calls waiting"), "{}", list.body);
    // The turn's page has one set of forms per call; the second call's approval lands on it.
    let page = ann.get(&support_turn("s_par", "t_par1"));
    assert_eq!(page.body.matches("class=\"decide approve\"").count(), 3);
    let d2 = w.call("s_par", "t_par1", "t_par2")["input_digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let csrf = ann.csrf.clone().unwrap();
    let a = ann.post_form(
        "/decide",
        &[
            ("csrf", &csrf),
            ("session_id", "s_par"),
            ("turn_id", "t_par1"),
            ("tool_use_id", "t_par2"),
            ("input_digest", &d2),
            ("choice", "approve"),
            ("idempotency_key", "f-1"),
        ],
    );
    assert_eq!(a.status, 303, "{a:?}");
    assert_eq!(
        a.header("location"),
        Some("/turn?session=s_par&turn=t_par1#call-t_par2")
    );
    assert_eq!(w.call("s_par", "t_par1", "t_par1")["state"], "waiting");
    assert_eq!(w.call("s_par", "t_par1", "t_par2")["state"], "approved");
    assert_eq!(w.call("s_par", "t_par1", "t_par3")["state"], "waiting");
    // The first call's digest does not decide the second.
    let d1 = w.call("s_par", "t_par1", "t_par1")["input_digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut crossed = body(&w, "s_par", "t_par1", "t_par3", "approve");
    crossed["input_digest"] = json!(d1);
    assert_eq!(
        ann.decide(&crossed, None).json()["refused"],
        "input_changed"
    );
    // The page shows who decided the second, read-only, and the others' forms.
    let page = ann.get(&support_turn("s_par", "t_par1"));
    assert!(page.body.contains("approved by ann at "), "{}", page.body);
    assert_eq!(page.body.matches("class=\"decide approve\"").count(), 2);
    // The model's input beside what runs, since a rule added a note.
    assert!(
        page.body
            .contains("<figcaption>The model's input</figcaption>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("rewritten by support::note"),
        "{}",
        page.body
    );
    let list = ann.get("/");
    assert!(
        !list.body.contains("&quot;t_par2&quot;]"),
        "the decided call left the list"
    );
}

fn an_edit_keeps_its_json_types_cannot_rename_the_tool_and_a_deny_still_wins(w: World) {
    w.pause(
        "s_edit",
        &[("t_edit", "issue_refund", refund("o_edit", 25_000))],
    );
    let ann = w.signed_in("ann");
    let before = snapshot(&w, "s_edit", "t_edit", "t_edit");
    // A wrong type is refused, every problem listed with its path.
    let mut bad = body(&w, "s_edit", "t_edit", "t_edit", "edit");
    bad["input"] = json!({"order_id": 7, "amount_cents": "20000", "note": "x"});
    let a = ann.decide(&bad, None);
    assert_eq!(a.status, 422, "{a:?}");
    assert_eq!(a.json()["refused"], "invalid_edit");
    assert_eq!(
        a.json()["problems"],
        json!([{"path": "order_id", "message": "expected a string, found the number 7"},
               {"path": "amount_cents", "message": "expected an integer ≥ 0, found the string \"20000\""}])
    );
    // Renaming the tool: no such member, the body is refused whole.
    let mut renamed = body(&w, "s_edit", "t_edit", "t_edit", "edit");
    renamed["input"] = json!({"order_id": "o_edit", "amount_cents": 1});
    renamed["tool"] = json!("wire_transfer");
    assert_eq!(ann.decide(&renamed, None).status, 400);
    assert_eq!(w.call("s_edit", "t_edit", "t_edit"), before.0);
    // The form: "150000" typed into the number field stays a number; the schema accepts it;
    // at resume the refund cap (a PreToolUse hook) denies it: a deny still wins.
    let csrf = ann.csrf.clone().unwrap();
    let digest = before.0["input_digest"].as_str().unwrap().to_owned();
    let a = ann.post_form(
        "/decide",
        &[
            ("csrf", &csrf),
            ("session_id", "s_edit"),
            ("turn_id", "t_edit"),
            ("tool_use_id", "t_edit"),
            ("input_digest", &digest),
            ("choice", "edit"),
            ("input.order_id", "o_edit"),
            ("input.amount_cents", "150000"),
            ("input.note", "checked"),
        ],
    );
    assert_eq!(a.status, 303, "{a:?}");
    let call = w.call("s_edit", "t_edit", "t_edit");
    assert_eq!(call["state"], "edited");
    let turn = toolgate_core::block_on(w.store.turn("s_edit", "t_edit"))
        .unwrap()
        .unwrap();
    assert_eq!(
        turn.call("t_edit").unwrap().edit,
        Some(json!({"order_id": "o_edit", "amount_cents": 150000, "note": "checked"}))
    );
    let ready = toolgate_core::block_on(
        w.store
            .take_ready(&w.dispatcher.fingerprint(), Duration::from_secs(60)),
    )
    .unwrap()
    .unwrap();
    let session = w.dispatcher.session(w.context("s_edit"));
    let answer = toolgate_core::block_on(session.resume_ready(w.store.as_ref(), &ready)).unwrap();
    let text = serde_json::to_value(answer).unwrap()["content"][0]["content"].clone();
    assert_eq!(text, "BLOCKED: refunds above 100 000 cents are not allowed");
    assert_eq!(refunds("o_edit"), 0);
}

fn a_two_person_tool_is_not_ready_after_one_approval(w: World) {
    w.pause(
        "s_two",
        &[(
            "t_two",
            "wire_transfer",
            json!({"to": "acct_1", "amount_cents": 900}),
        )],
    );
    let (ann, bob) = (w.signed_in("ann"), w.signed_in("bob"));
    let b = body(&w, "s_two", "t_two", "t_two", "approve");
    let first = ann.decide(&b, None);
    assert_eq!(
        (first.status, first.json()["state"].clone()),
        (200, json!("waiting"))
    );
    let lease = Duration::from_secs(60);
    assert!(
        toolgate_core::block_on(w.store.take_ready(&w.dispatcher.fingerprint(), lease))
            .unwrap()
            .is_none()
    );
    let twice = ann.decide(&b, None);
    assert_eq!(
        (twice.status, twice.json()["refused"].clone()),
        (409, json!("already_approved"))
    );
    // The list says who approved and that a second person is needed.
    assert!(
        bob.get("/")
            .body
            .contains("waiting for a second person (approved by ann)")
    );
    let second = bob.decide(&b, None);
    assert_eq!(
        (second.status, second.json()["state"].clone()),
        (200, json!("approved"))
    );
    let by: Vec<Value> = second.json()["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["by"].clone())
        .collect();
    assert_eq!(by, [json!("ann"), json!("bob")]);
    assert!(
        toolgate_core::block_on(w.store.take_ready(&w.dispatcher.fingerprint(), lease))
            .unwrap()
            .is_some()
    );
}

fn eight_workers_racing_for_one_ready_turn_resume_once_and_refund_once(w: World) {
    // The refunds are counted per order id in this binary: one order of this store's own.
    let order = format!("o_fleet_{}", w.dir.0.display());
    w.pause(
        "s_fleet",
        &[("t_fleet", "issue_refund", refund(&order, 25_000))],
    );
    let ann = w.signed_in("ann");
    assert_eq!(
        ann.decide(&body(&w, "s_fleet", "t_fleet", "t_fleet", "approve"), None)
            .status,
        200
    );
    let barrier = Arc::new(Barrier::new(8));
    let fingerprint = w.dispatcher.fingerprint();
    let resumed: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (barrier, fingerprint, w) = (Arc::clone(&barrier), fingerprint.clone(), &w);
                s.spawn(move || {
                    barrier.wait();
                    let took = toolgate_core::block_on(
                        w.store.take_ready(&fingerprint, Duration::from_secs(60)),
                    )
                    .unwrap();
                    let Some(ready) = took else { return 0 };
                    let session = w.dispatcher.session(w.context("s_fleet"));
                    toolgate_core::block_on(session.resume_ready(w.store.as_ref(), &ready))
                        .unwrap();
                    1
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(resumed, 1);
    assert_eq!(refunds(&order), 1);
}

fn a_form_decline_without_a_reason_is_refused_next_to_its_field(w: World) {
    w.pause(
        "s_dec",
        &[("t_dec", "issue_refund", refund("o_dec", 25_000))],
    );
    let ann = w.signed_in("ann");
    let page = ann.get(&support_turn("s_dec", "t_dec"));
    let digest = hidden(&page.body, "input_digest").unwrap();
    let csrf = ann.csrf.clone().unwrap();
    let before = snapshot(&w, "s_dec", "t_dec", "t_dec");
    let a = ann.post_form(
        "/decide",
        &[
            ("csrf", &csrf),
            ("session_id", "s_dec"),
            ("turn_id", "t_dec"),
            ("tool_use_id", "t_dec"),
            ("input_digest", &digest),
            ("choice", "decline"),
            ("reason", "  "),
        ],
    );
    assert_eq!(a.status, 400, "{a:?}");
    assert!(
        a.body.contains(
            "id=\"call-t_dec-reason-problem\">A decline needs a reason: the model reads it.</p>"
        ),
        "{}",
        a.body
    );
    assert!(
        a.body
            .contains("aria-invalid=\"true\" aria-describedby=\"call-t_dec-reason-problem\"")
    );
    assert_eq!(snapshot(&w, "s_dec", "t_dec", "t_dec"), before);
    let a = ann.post_form(
        "/decide",
        &[
            ("csrf", &csrf),
            ("session_id", "s_dec"),
            ("turn_id", "t_dec"),
            ("tool_use_id", "t_dec"),
            ("input_digest", &digest),
            ("choice", "decline"),
            ("reason", "the order was cancelled"),
        ],
    );
    assert_eq!(a.status, 303);
    let call = w.call("s_dec", "t_dec", "t_dec");
    assert_eq!(
        (call["state"].clone(), call["reason"].clone()),
        (json!("declined"), json!("the order was cancelled"))
    );
}

#[test]
fn without_authentication_the_page_listens_on_loopback_only() {
    let inbox = Inbox::builder(Arc::new(toolgate_core::store::MemoryPendingStore::new()))
        .policy(Policy::new().allow("me", &[Action::Approve], &["*"]))
        .decision_log(Arc::new(
            toolgate_core::approval::inbox::MemoryDecisionLog::new(),
        ))
        .build()
        .unwrap();
    let inbox = Arc::new(inbox);
    let local = || InboxPage::builder(Arc::clone(&inbox), Auth::Local(Identity::new("me")));
    for addr in ["0.0.0.0:0", "192.0.2.1:0", "[::]:0"] {
        let err = toolgate_inbox::bind(local(), addr.parse().unwrap()).unwrap_err();
        assert!(
            matches!(err, toolgate_inbox::PageError::NotLoopback(_)),
            "{addr}: {err}"
        );
    }
    let ok = toolgate_inbox::bind(local(), "127.0.0.1:0".parse().unwrap()).unwrap();
    assert_eq!(
        ok.page().hosts(),
        [
            ok.addr().to_string(),
            format!("localhost:{}", ok.addr().port())
        ]
    );
    // With tokens, any address; every address needs the URL people open.
    let tokens = || InboxPage::builder(Arc::clone(&inbox), Auth::Tokens(support::tokens()));
    let err = toolgate_inbox::bind(tokens(), "0.0.0.0:0".parse().unwrap()).unwrap_err();
    assert!(matches!(err, toolgate_inbox::PageError::Config(_)), "{err}");
    let page = tokens().public_url("https://inbox.example.com").unwrap();
    let bound = toolgate_inbox::bind(page, "0.0.0.0:0".parse().unwrap()).unwrap();
    assert_eq!(bound.page().hosts(), ["inbox.example.com"]);
}

#[test]
fn a_trusted_proxy_header_counts_from_the_proxy_only() {
    let w = World::sqlite("proxy");
    w.pause("s_px", &[("t_px", "issue_refund", refund("o_px", 25_000))]);
    let store = Arc::clone(&w.store);
    let inbox = Inbox::builder(store)
        .policy(support::policy())
        .decision_log(Arc::new(
            toolgate_core::approval::inbox::DecisionFiles::open(&w.dir.0).unwrap(),
        ))
        .build()
        .unwrap();
    // The proxy is 127.0.0.1: its header is taken.
    let addr = support::serve(InboxPage::builder(
        Arc::new(inbox),
        Auth::Proxy(toolgate_inbox::ProxyAuth::new(vec![
            "127.0.0.1".parse().unwrap(),
        ])),
    ));
    let c = Client {
        addr,
        cookie: None,
        csrf: None,
        host: addr.to_string(),
    };
    let page = c.send(
        "GET",
        "/",
        &[
            ("X-Forwarded-Email", "ann"),
            ("X-Forwarded-Groups", "leads, x"),
        ],
        b"",
    );
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("Signed in as <strong>ann</strong>"));
    assert_eq!(
        c.send("GET", "/", &[], b"").status,
        401,
        "no header, nobody"
    );
    // Another proxy address: the same header from 127.0.0.1 is refused.
    let other = support::serve(InboxPage::builder(
        Arc::new(
            Inbox::builder(Arc::clone(&w.store))
                .policy(support::policy())
                .decision_log(Arc::new(
                    toolgate_core::approval::inbox::MemoryDecisionLog::new(),
                ))
                .build()
                .unwrap(),
        ),
        Auth::Proxy(toolgate_inbox::ProxyAuth::new(vec![
            "10.9.9.9".parse().unwrap(),
        ])),
    ));
    let c = Client {
        addr: other,
        cookie: None,
        csrf: None,
        host: other.to_string(),
    };
    let refused = c.send("GET", "/", &[("X-Forwarded-Email", "ann")], b"");
    assert_eq!(refused.status, 403);
}

#[test]
fn without_the_tools_schemas_an_edit_is_not_offered_and_is_refused_as_uncheckable() {
    use toolgate_core::dispatch::{PreHookDef, ToolDef};
    use toolgate_core::{Decision, Dispatcher, ToolUse};
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Note {
        /// The text.
        text: String,
    }
    let w = World::sqlite("unpublished");
    // An agent whose tools nobody published to this store.
    let other = Dispatcher::builder()
        .tool(ToolDef::sync(
            "post_note",
            "Posts a note.",
            |_env, n: Note| Ok(n.text),
        ))
        .pre_hook(PreHookDef::sync("notes::ask", 1, |_env, _c: &ToolUse| {
            Ok(Decision::ask("notes need a person"))
        }))
        .build()
        .unwrap();
    w.pause_by(
        &other,
        "s_unpub",
        &[("t_unpub", "post_note", json!({"text": "hi"}))],
    );
    let ann = w.signed_in("ann");
    let page = ann.get(&support_turn("s_unpub", "t_unpub"));
    assert!(
        !page.body.contains("details class=\"edit\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("An edit is checked against the tool's input schema, which the agent's workers publish when they start"), "{}", page.body);
    assert_eq!(page.body.matches("class=\"decide approve\"").count(), 1);
    let mut edit = body(&w, "s_unpub", "t_unpub", "t_unpub", "edit");
    edit["input"] = json!({"text": "bye"});
    let a = ann.decide(&edit, None);
    assert_eq!(
        (a.status, a.json()["refused"].clone()),
        (422, json!("edit_uncheckable"))
    );
    assert_eq!(w.call("s_unpub", "t_unpub", "t_unpub")["state"], "waiting");
}

/// Opens `GET /events` as `c` and reads its head; the open connection and the status.
fn open_events(c: &Client) -> (std::net::TcpStream, u16) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(c.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let cookie = c.cookie.as_deref().unwrap();
    write!(
        s,
        "GET /events HTTP/1.1\r\nHost: {}\r\nCookie: toolgate_inbox={cookie}\r\n\r\n",
        c.host
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (s, status)
}

#[test]
fn live_update_streams_are_bounded_and_a_closed_one_frees_its_place() {
    let w = World::sqlite("streams");
    let inbox = Inbox::builder(Arc::clone(&w.store))
        .policy(support::policy())
        .decision_log(Arc::new(
            toolgate_core::approval::inbox::MemoryDecisionLog::new(),
        ))
        .build()
        .unwrap();
    let addr = support::serve(
        InboxPage::builder(Arc::new(inbox), Auth::Tokens(support::tokens()))
            .poll_every(Duration::from_millis(50))
            .max_streams(2),
    );
    let mut ann = Client {
        addr,
        cookie: None,
        csrf: None,
        host: addr.to_string(),
    };
    ann.sign_in(&support::token("ann"));
    let (first, status) = open_events(&ann);
    assert_eq!(status, 200);
    let (_second, status) = open_events(&ann);
    assert_eq!(status, 200);
    // A third stream, open or left open by a tab, a script or an attacker: refused, and the
    // pages still answer.
    let (_third, status) = open_events(&ann);
    assert_eq!(status, 503);
    assert_eq!(ann.get("/").status, 200);
    // The first page goes away: its place is free again once the server sees it gone.
    drop(first);
    let mut status = 503;
    for _ in 0..200 {
        let (s, got) = open_events(&ann);
        status = got;
        if got == 200 {
            drop(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status, 200, "a closed stream frees its place");
}

/// What a browser sends for the form field `name` of `html` left as shown: an `<input>`'s value,
/// or a `<textarea>`'s text with its first line break dropped and its line breaks as CR LF.
fn as_a_browser_sends(html: &str, name: &str) -> String {
    let unescape = |t: &str| {
        t.replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    let at = html.find(&format!("name=\"{name}\"")).unwrap();
    let tag_start = html[..at].rfind('<').unwrap();
    if html[tag_start..].starts_with("<textarea") {
        let open = at + html[at..].find('>').unwrap() + 1;
        let close = open + html[open..].find("</textarea>").unwrap();
        let text = &html[open..close];
        let text = text.strip_prefix('\n').unwrap_or(text);
        unescape(text).replace('\n', "\r\n")
    } else {
        let marker = "value=\"";
        let v = at + html[at..].find(marker).unwrap() + marker.len();
        let end = v + html[v..].find('"').unwrap();
        unescape(&html[v..end])
    }
}

#[test]
fn a_form_edit_keeps_the_exact_value_of_a_field_left_as_shown() {
    let w = World::sqlite("roundtrip");
    // A text field with a line break, a tab and a bidi override (a textarea; the form shows the
    // last two as escapes, a browser sends its line breaks as CR LF), a JSON field (`note` may
    // be null) with a line separator.
    let order = "o_rt\n\tline2\u{202e}";
    let note = "n\u{2028}1";
    w.pause(
        "s_rt",
        &[(
            "t_rt",
            "issue_refund",
            json!({"order_id": order, "amount_cents": 25_000, "note": note}),
        )],
    );
    let ann = w.signed_in("ann");
    let page = ann.get(&support_turn("s_rt", "t_rt"));
    let digest = w.call("s_rt", "t_rt", "t_rt")["input_digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let sent_order = as_a_browser_sends(&page.body, "input.order_id");
    let sent_note = as_a_browser_sends(&page.body, "input.note");
    assert_eq!(sent_order, "o_rt\r\n\\u{9}line2\\u{202e}");
    assert_eq!(sent_note, "\"n\\u{2028}1\"");
    let a = ann.post_form(
        "/decide",
        &[
            ("csrf", ann.csrf.as_deref().unwrap()),
            ("session_id", "s_rt"),
            ("turn_id", "t_rt"),
            ("tool_use_id", "t_rt"),
            ("input_digest", &digest),
            ("choice", "edit"),
            ("input.order_id", &sent_order),
            ("input.amount_cents", "30000"),
            ("input.note", &sent_note),
        ],
    );
    assert_eq!(a.status, 303, "{a:?}");
    let turn = toolgate_core::block_on(w.store.turn("s_rt", "t_rt"))
        .unwrap()
        .unwrap();
    assert_eq!(
        turn.call("t_rt").unwrap().edit,
        Some(json!({"order_id": order, "amount_cents": 30000, "note": note}))
    );
}
