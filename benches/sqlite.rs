//! The SQLite figures of BENCHMARKS.md ("SQLite"), feature `sqlite`:
//!
//! `cargo bench --bench sqlite --features sqlite` works in a temporary folder on this machine's
//! disk and prints one `NAME VALUE` line per figure, sides interleaved round by round, medians
//! of the rounds:
//!
//! - `insert_floor_us`: one plain one-row `INSERT` transaction (autocommit) on a rusqlite
//!   connection with `SqliteStore`'s settings (WAL, `synchronous = FULL`: the WAL is flushed at
//!   every commit), the floor;
//! - `call_us`: a default session's call with the answer memory in `SqliteStore` (claim and
//!   answer: two committed transactions); `call_over_insert_floor` is the ratio;
//! - `call_audit_us`: the same with the audit log's chained files beside it (the support
//!   agent's default: `state.sqlite` and `audit_log.jsonl` in one folder);
//! - `calls_per_s_1`, `_2`, `_4`: calls per second with 1, 2 and 4 workers (threads, each with
//!   its own `SqliteStore` on the one file, as processes sharing a folder have), and
//!   `workers4_over_workers1` (SQLite has one writer at a time: commits queue).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it does one small round and checks
//! only that every side answered, never a time.

#[path = "stores/side.rs"]
mod store_side;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use toolgate::audit::AuditLog;

use store_side::{ANSWER, Ids, dispatcher, median};
use toolgate::store::sqlite::SqliteStore;
use toolgate::{HookContext, Session};

/// `n` calls of `session`; the time per call (µs).
fn calls(session: &Session, ids: &mut Ids, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let result = toolgate::block_on(session.call(&ids.next())).expect("answered");
        assert_eq!(result.content_text(), ANSWER);
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// The floor: one-row `INSERT` transactions on a connection with the store's settings.
struct Floor {
    conn: rusqlite::Connection,
    n: i64,
}

impl Floor {
    fn new(path: &Path) -> Floor {
        let conn = rusqlite::Connection::open(path).expect("the floor's file");
        conn.busy_timeout(SqliteStore::BUSY_TIMEOUT).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        conn.pragma_update(None, "synchronous", "FULL").unwrap();
        conn.execute_batch("CREATE TABLE floor (n INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        Floor { conn, n: 0 }
    }

    /// `n` inserts; the time per insert (µs).
    fn run(&mut self, n: usize) -> f64 {
        let start = Instant::now();
        let mut insert = self
            .conn
            .prepare("INSERT INTO floor (n, body) VALUES (?1, ?2)")
            .unwrap();
        for _ in 0..n {
            self.n += 1;
            insert.execute(rusqlite::params![self.n, ANSWER]).unwrap();
        }
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    }
}

/// `workers` threads on one file, `n` calls each, started together; calls per second.
fn workers(file: &Path, workers: usize, n: usize, round: usize) -> f64 {
    let barrier = Barrier::new(workers + 1);
    let (start, ends) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let barrier = &barrier;
                s.spawn(move || {
                    let store = SqliteStore::open(file).expect("the worker's store");
                    let d = dispatcher(None);
                    let label = format!("w{workers}_{w}_{round}");
                    let ctx = HookContext::builder("u_1", label.clone()).build();
                    let session = d.session_with_store(ctx, Arc::new(store));
                    let mut ids = Ids::new(label);
                    barrier.wait();
                    calls(&session, &mut ids, n);
                    Instant::now()
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let ends: Vec<Instant> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (start, ends)
    });
    let last = ends.into_iter().max().expect("one worker");
    (workers * n) as f64 / last.duration_since(start).as_secs_f64()
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, n, worker_calls) = if bench { (9, 300, 300) } else { (1, 5, 5) };
    let dir: PathBuf =
        std::env::temp_dir().join(format!("toolgate-sqlite-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut floor = Floor::new(&dir.join("floor.sqlite"));
    let store = Arc::new(SqliteStore::open(dir.join("state.sqlite")).unwrap());
    let plain = dispatcher(None);
    let audited = dispatcher(Some(AuditLog::open(dir.join("audit")).unwrap()));
    let s_plain =
        plain.session_with_store(HookContext::builder("u_1", "plain").build(), store.clone());
    let s_audit = audited.session_with_store(HookContext::builder("u_1", "audit").build(), store);
    let (mut i_plain, mut i_audit) = (Ids::new("plain"), Ids::new("audit"));
    let (mut f, mut c, mut a, mut ratio) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let fl = floor.run(n);
        let call = calls(&s_plain, &mut i_plain, n);
        a.push(calls(&s_audit, &mut i_audit, n));
        ratio.push(call / fl);
        f.push(fl);
        c.push(call);
    }
    println!("insert_floor_us {:.1}", median(&f));
    println!("call_us {:.1}", median(&c));
    println!("call_over_insert_floor {:.2}", median(&ratio));
    println!("call_audit_us {:.1}", median(&a));
    let mut per_s = [vec![], vec![], vec![]];
    for round in 0..rounds.min(5) {
        for (k, w) in [1, 2, 4].into_iter().enumerate() {
            per_s[k].push(workers(&dir.join("workers.sqlite"), w, worker_calls, round));
        }
    }
    let [one, two, four] = per_s.map(|v| median(&v));
    println!("calls_per_s_1 {one:.0}");
    println!("calls_per_s_2 {two:.0}");
    println!("calls_per_s_4 {four:.0}");
    println!("workers4_over_workers1 {:.2}", four / one);
    let _ = std::fs::remove_dir_all(&dir);
}
