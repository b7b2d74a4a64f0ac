//! Conversations of one customer on one store: the support agent's refund rules are the
//! customer's and the order's, so however many conversations (sessions) and worker processes
//! pay one customer, the weekly limit counts all their refunds in the ISO week and an order's
//! refundable amount all the order's refunds, and every refund has its own id in the store.
//!
//! Shared by the SQLite tests (`tests/support_agent.rs`: processes on one `--out-dir`) and the
//! PostgreSQL ones (`tests/support_agent_postgres/`: processes with their own `--out-dir` and
//! one `--database-url`); each passes its [`Store`]. Every conversation is a transcript
//! written here and replayed by the agent's binary, one process per worker.
//!
//! Two customers, two rules that bind:
//! - `u_001`'s order `o_1002` (45 000 cents paid): 16 000 cents per conversation. Three come to
//!   48 000, under the weekly limit (50 000) but over the order: the order's rule refuses the
//!   third, in the refund tool (the weekly rule has nothing to refuse).
//! - `u_007`'s orders `o_3001` (52 000) and `o_3002` (30 000): 20 000 cents per conversation,
//!   on `o_3001`, `o_3002`, `o_3001`. Three come to 60 000, within each order but over the
//!   weekly limit: the third is refused by the weekly rule before the tool runs, or, when it
//!   read the ledger before another worker's refund landed, by the ledger where the refund is
//!   recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The week every conversation here pays in (ISO 2026-W48), unless it says otherwise.
const WEEK_48: &str = "2026-11-25T10:00:00Z";

/// The week after (ISO 2026-W49).
const WEEK_49: &str = "2026-12-02T10:00:00Z";

/// One conversation: a session of `user` at `now` whose only assistant message refunds `cents`
/// on `order`. It declares no world: it is in the store's shared one, with every other
/// conversation of the customer.
#[derive(Debug, Clone)]
pub(crate) struct Conversation {
    /// The session id (the transcript's file name too).
    pub(crate) session: String,
    /// The customer.
    pub(crate) user: &'static str,
    /// The session's clock.
    pub(crate) now: &'static str,
    /// The order refunded.
    pub(crate) order: &'static str,
    /// The amount, in cents (at most 20 000: no person's approval).
    pub(crate) cents: u64,
}

impl Conversation {
    fn new(
        session: String,
        user: &'static str,
        now: &'static str,
        order: &'static str,
        cents: u64,
    ) -> Self {
        Conversation {
            session,
            user,
            now,
            order,
            cents,
        }
    }

    /// The id of its `issue_refund` call.
    pub(crate) fn tool_use_id(&self) -> String {
        format!("toolu_{}", self.session)
    }

    /// Writes its transcript into `dir`: the path.
    pub(crate) fn write(&self, dir: &Path) -> PathBuf {
        let transcript = json!({
            "_about": "one conversation of a customer asking for a refund",
            "context": {
                "user_id": self.user, "tier": "premium", "session_id": self.session,
                "now": self.now, "specialist": "refunds"
            },
            "messages": [{
                "id": format!("msg_{}", self.session), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{
                    "type": "tool_use", "id": self.tool_use_id(), "name": "issue_refund",
                    "input": {"order_id": self.order, "amount_cents": self.cents}
                }],
                "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 40, "output_tokens": 20}
            }]
        });
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("{}.json", self.session));
        std::fs::write(&path, transcript.to_string()).unwrap();
        path
    }
}

/// `n` conversations of `u_001`, each refunding 16 000 cents on `o_1002` in week 48.
pub(crate) fn order_conversations(tag: &str, n: usize) -> Vec<Conversation> {
    (1..=n)
        .map(|i| {
            Conversation::new(
                format!("{tag}_order_{i}"),
                "u_001",
                WEEK_48,
                "o_1002",
                16_000,
            )
        })
        .collect()
}

/// `n` conversations of `u_007`, each refunding 20 000 cents in week 48, on `o_3001`,
/// `o_3002`, `o_3001`, … in turn.
pub(crate) fn week_conversations(tag: &str, n: usize) -> Vec<Conversation> {
    (1..=n)
        .map(|i| {
            let order = if i % 2 == 1 { "o_3001" } else { "o_3002" };
            Conversation::new(format!("{tag}_week_{i}"), "u_007", WEEK_48, order, 20_000)
        })
        .collect()
}

/// A refund as the store's table holds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Row {
    /// The store's number (`re_0001` is 1).
    pub(crate) id: i64,
    /// The world.
    pub(crate) world: String,
    /// The customer.
    pub(crate) owner: String,
    /// The order.
    pub(crate) order_id: String,
    /// The amount, in cents.
    pub(crate) cents: i64,
}

/// A store the agent's processes share, as a test sets it up.
pub(crate) struct Store<'a> {
    /// The store's arguments for worker `n` (its `--out-dir`, and the URL where there is one).
    pub(crate) args: &'a dyn Fn(usize) -> Vec<OsString>,
    /// Every row of the store's refund table, by id.
    pub(crate) rows: &'a dyn Fn() -> Vec<Row>,
}

/// What one process of the agent answered.
#[derive(Debug)]
pub(crate) struct Worker {
    /// Its exit code.
    pub(crate) code: i32,
    /// Its standard output (`--json`: one user message per line).
    pub(crate) out: String,
    /// Its standard error.
    pub(crate) err: String,
}

impl Worker {
    /// Each `tool_result` it printed: `(tool_use_id, (is_error, content))`.
    pub(crate) fn answers(&self) -> BTreeMap<String, (bool, String)> {
        let mut answers = BTreeMap::new();
        for line in self.out.lines() {
            let message: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            for block in message["content"].as_array().unwrap() {
                let id = block["tool_use_id"].as_str().unwrap().to_owned();
                let content = block["content"].as_str().unwrap().to_owned();
                let is_error = block.get("is_error") == Some(&Value::Bool(true));
                assert!(answers.insert(id, (is_error, content)).is_none());
            }
        }
        answers
    }
}

/// Starts the agent (`--json`) on `store`'s worker `n` replaying `conversations`, in order, in
/// one process; [`std::process::Child::wait_with_output`] is [`finish`].
fn start(
    store: &Store<'_>,
    n: usize,
    dir: &Path,
    conversations: &[Conversation],
) -> std::process::Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_support_agent"));
    command.arg("--json").args((store.args)(n));
    for c in conversations {
        command.arg("--transcript").arg(c.write(dir));
    }
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the support agent starts")
}

fn finish(child: std::process::Child) -> Worker {
    let out = child.wait_with_output().expect("the support agent ends");
    Worker {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8(out.stdout).unwrap(),
        err: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Runs workers at once, worker `n` replaying `work[n]`: what each answered.
pub(crate) fn at_once(store: &Store<'_>, dir: &Path, work: &[Vec<Conversation>]) -> Vec<Worker> {
    let children: Vec<_> = work
        .iter()
        .enumerate()
        .map(|(n, conversations)| start(store, n, dir, conversations))
        .collect();
    children.into_iter().map(finish).collect()
}

/// The tool's answer for a refund recorded as `id`, the order's total then `total`.
fn issued(id: i64, c: &Conversation, total: u64) -> (bool, String) {
    (
        false,
        format!(
            r#"{{"refund_id":"re_{id:04}","order_id":"{}","amount_cents":{},"refunded_total_cents":{total},"status":"issued"}}"#,
            c.order, c.cents
        ),
    )
}

/// The refund tool's refusal of `cents` more on `order` (`paid` paid, `refunded` refunded).
fn order_refused(cents: u64, order: &str, paid: u64, refunded: u64) -> (bool, String) {
    let left = paid - refunded;
    (
        true,
        format!(
            "Refund refused: {cents} cents is more than order {order} has left to refund ({paid} \
             cents paid, {refunded} cents already refunded, {left} cents left). Refund at most \
             {left} cents."
        ),
    )
}

/// The weekly rule's denial of `cents` more in week 48, `already` refunded in it.
fn week_blocked(cents: u64, already: u64) -> (bool, String) {
    let left = 50_000 - already;
    (
        true,
        format!(
            "BLOCKED: a refund of {cents} cents would bring this customer's refunds in ISO week \
             2026-W48 to {} cents, above the weekly limit of 50000 cents ({already} cents \
             already refunded this week). Refund at most {left} cents now and tell the customer \
             the rest will be reviewed by a human agent.",
            already + cents
        ),
    )
}

/// The ledger's refusal of `cents` more in week 48, `already` recorded in it meanwhile.
fn week_refused(cents: u64, already: u64) -> (bool, String) {
    let left = 50_000 - already;
    (
        true,
        format!(
            "Refund refused: another refund to this customer was recorded meanwhile, and {cents} \
             cents would bring their refunds in ISO week 2026-W48 to {} cents, above the weekly \
             limit of 50000 cents. At most {left} cents can be refunded now; tell the customer \
             the rest will be reviewed by a human agent.",
            already + cents
        ),
    )
}

/// `owner`'s rows: their number and the sum of their cents.
fn tally(rows: &[Row], owner: &str) -> (usize, i64) {
    let theirs: Vec<&Row> = rows.iter().filter(|r| r.owner == owner).collect();
    (theirs.len(), theirs.iter().map(|r| r.cents).sum())
}

/// Every row's id is its own, and the ids are 1 to the number of rows (nothing numbered twice,
/// nothing skipped: an id is taken only by a refund recorded).
fn ids_unique(rows: &[Row]) {
    let ids: BTreeSet<i64> = rows.iter().map(|r| r.id).collect();
    let want: BTreeSet<i64> = (1..=rows.len() as i64).collect();
    assert_eq!(ids, want, "{rows:?}");
}

/// Conversations one after the other, each its own process, on one store: the second and third
/// conversation of a customer read the first ones' refunds. Exact answers, ids numbered across
/// both customers in the order paid.
pub(crate) fn one_after_another(store: &Store<'_>, dir: &Path) {
    let order = order_conversations("seq", 3);
    let week = week_conversations("seq", 3);
    let mut answers = BTreeMap::new();
    // Two conversations, then a third, of each customer in turn.
    for (n, c) in [
        &order[0], &week[0], &order[1], &week[1], &order[2], &week[2],
    ]
    .into_iter()
    .enumerate()
    {
        let worker = finish(start(store, n % 4, dir, std::slice::from_ref(c)));
        assert_eq!(
            (worker.code, worker.err.as_str()),
            (0, ""),
            "{}",
            worker.out
        );
        answers.extend(worker.answers());
    }
    let want: BTreeMap<String, (bool, String)> = [
        (order[0].tool_use_id(), issued(1, &order[0], 16_000)),
        (week[0].tool_use_id(), issued(2, &week[0], 20_000)),
        (order[1].tool_use_id(), issued(3, &order[1], 32_000)),
        (week[1].tool_use_id(), issued(4, &week[1], 20_000)),
        (
            order[2].tool_use_id(),
            order_refused(16_000, "o_1002", 45_000, 32_000),
        ),
        (week[2].tool_use_id(), week_blocked(20_000, 40_000)),
    ]
    .into_iter()
    .collect();
    assert_eq!(answers, want);
    // The order's rule spans weeks: a week later the weekly limit starts again, the order's
    // 13 000 cents left do not.
    let later = [
        Conversation::new("seq_order_w49_a".into(), "u_001", WEEK_49, "o_1002", 16_000),
        Conversation::new("seq_order_w49_b".into(), "u_001", WEEK_49, "o_1002", 13_000),
    ];
    let worker = finish(start(store, 0, dir, &later));
    assert_eq!((worker.code, worker.err.as_str()), (0, ""));
    assert_eq!(
        worker.answers(),
        [
            (
                later[0].tool_use_id(),
                order_refused(16_000, "o_1002", 45_000, 32_000)
            ),
            (later[1].tool_use_id(), issued(5, &later[1], 45_000)),
        ]
        .into_iter()
        .collect()
    );
    let rows = (store.rows)();
    ids_unique(&rows);
    assert_eq!(
        rows.iter()
            .map(|r| (
                r.world.as_str(),
                r.owner.as_str(),
                r.order_id.as_str(),
                r.cents
            ))
            .collect::<Vec<_>>(),
        [
            ("shop", "u_001", "o_1002", 16_000),
            ("shop", "u_007", "o_3001", 20_000),
            ("shop", "u_001", "o_1002", 16_000),
            ("shop", "u_007", "o_3002", 20_000),
            ("shop", "u_001", "o_1002", 13_000),
        ]
    );
}

/// `n` conversations of each customer at once, each its own process, on one store: however
/// they interleave, exactly the refunds the rules allow are paid (all of two conversations;
/// two of three), the refused one is told why in one of the exact texts its timing allows,
/// and every refund has its own id.
pub(crate) fn all_at_once(store: &Store<'_>, dir: &Path, n: usize) {
    let order = order_conversations(&format!("at_once_{n}"), n);
    let week = week_conversations(&format!("at_once_{n}"), n);
    let work: Vec<Vec<Conversation>> = order.iter().chain(&week).map(|c| vec![c.clone()]).collect();
    let workers = at_once(store, dir, &work);
    let mut answers = BTreeMap::new();
    for w in &workers {
        assert_eq!((w.code, w.err.as_str()), (0, ""), "{}", w.out);
        answers.extend(w.answers());
    }
    let paid = n.min(2);
    let rows = (store.rows)();
    ids_unique(&rows);
    assert_eq!(tally(&rows, "u_001"), (paid, 16_000 * paid as i64));
    assert_eq!(tally(&rows, "u_007"), (paid, 20_000 * paid as i64));
    let (ok, refused): (Vec<_>, Vec<_>) = answers.values().partition(|(is_error, _)| !is_error);
    assert_eq!(ok.len(), 2 * paid);
    let refusals: BTreeSet<(bool, String)> = refused.into_iter().cloned().collect();
    let allowed: BTreeSet<(bool, String)> = [
        order_refused(16_000, "o_1002", 45_000, 32_000),
        week_blocked(20_000, 40_000),
        week_refused(20_000, 40_000),
    ]
    .into_iter()
    .collect();
    assert!(refusals.is_subset(&allowed), "{refusals:?}");
    if n == 3 {
        // u_001's third conversation is refused by the order's rule, whoever came third.
        assert!(refusals.contains(&order_refused(16_000, "o_1002", 45_000, 32_000)));
        assert_eq!(refusals.len(), 2, "{refusals:?}");
    }
}

/// A fleet of four workers at once, each serving four conversations in one process, two of
/// each customer: sixteen sessions, eight per customer. `u_001` asks 7 000 cents on `o_1002`
/// eight times (six fit in its 45 000 cents); `u_007` 7 000 cents on `o_3001` and `o_3002` in
/// turn (seven fit in the weekly 50 000). The customers' books hold exactly 42 000 and
/// 49 000 cents, each refund one `ok` answer and its own id; then every worker replays another
/// worker's conversations and gets that worker's answers, nothing paid again.
pub(crate) fn fleet_of_four(store: &Store<'_>, dir: &Path) {
    let conversation = |w: usize, i: usize| {
        let session = format!("fleet_w{w}_{i}");
        if i.is_multiple_of(2) {
            Conversation::new(session, "u_001", WEEK_48, "o_1002", 7_000)
        } else {
            let order = if (w + i / 2).is_multiple_of(2) {
                "o_3001"
            } else {
                "o_3002"
            };
            Conversation::new(session, "u_007", WEEK_48, order, 7_000)
        }
    };
    let work: Vec<Vec<Conversation>> = (0..4)
        .map(|w| (0..4).map(|i| conversation(w, i)).collect())
        .collect();
    let first = at_once(store, dir, &work);
    let mut answers = BTreeMap::new();
    for w in &first {
        assert_eq!((w.code, w.err.as_str()), (0, ""), "{}", w.out);
        answers.extend(w.answers());
    }
    assert_eq!(answers.len(), 16);
    let rows = (store.rows)();
    ids_unique(&rows);
    assert_eq!(tally(&rows, "u_001"), (6, 42_000));
    assert_eq!(tally(&rows, "u_007"), (7, 49_000));
    assert!(rows.iter().all(|r| r.world == "shop"));
    let o_3002: i64 = rows
        .iter()
        .filter(|r| r.order_id == "o_3002")
        .map(|r| r.cents)
        .sum();
    assert!(o_3002 <= 30_000, "{o_3002}");
    // Each paid refund is one `ok` answer whose id and order total are a row's.
    let ok: Vec<&String> = answers
        .values()
        .filter(|(is_error, _)| !is_error)
        .map(|(_, content)| content)
        .collect();
    assert_eq!(ok.len(), rows.len());
    let ids: BTreeSet<String> = ok
        .iter()
        .map(|content| {
            serde_json::from_str::<Value>(content).unwrap()["refund_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        ids,
        rows.iter()
            .map(|r| format!("re_{:04}", r.id))
            .collect::<BTreeSet<_>>()
    );
    // The refusals, in the exact texts their timing allows: u_001's by the order's rule at
    // 42 000 refunded (the weekly rule never refuses 49 000), u_007's by the weekly rule or the
    // ledger at 49 000 in the week.
    let refused: BTreeSet<(bool, String)> = answers
        .values()
        .filter(|(is_error, _)| *is_error)
        .cloned()
        .collect();
    let allowed: BTreeSet<(bool, String)> = [
        order_refused(7_000, "o_1002", 45_000, 42_000),
        week_blocked(7_000, 49_000),
        week_refused(7_000, 49_000),
    ]
    .into_iter()
    .collect();
    assert!(refused.is_subset(&allowed), "{refused:?}");
    assert_eq!(answers.values().filter(|(e, _)| *e).count(), 3);
    // A retry of every conversation on another worker: the first answer, nothing paid again.
    let again: Vec<Vec<Conversation>> = (0..4).map(|w| work[(w + 1) % 4].clone()).collect();
    let second = at_once(store, dir, &again);
    for (w, worker) in second.iter().enumerate() {
        assert_eq!((worker.code, worker.err.as_str()), (0, ""));
        assert_eq!(worker.out, first[(w + 1) % 4].out);
    }
    assert_eq!((store.rows)(), rows);
}
