//! The ratio figures of BENCHMARKS.md, measured side by side in one process run.
//!
//! `cargo bench --bench ratios` prints one `NAME VALUE` line per figure: sides interleaved round
//! by round, the median of the rounds. Under `cargo test --all-targets` (no `--bench` argument)
//! it does one quick round and asserts only correctness (every side answers the same text; no
//! audit line lost or interleaved), never a time.
//!
//! Figures: `dispatch_nohooks_over_limit`, `dispatch_4hooks_over_limit` (4 sync PreToolUse hooks
//! that allow + 1 observer), `dispatch_4hooks_audit_over_limit` (the same plus an `AuditLog` whose
//! sink appends each line to a file without the hash chain, `common::UnchainedJsonl`),
//! `dispatch_4hooks_audit_chained_over_limit` (the same with `AuditLog::open`'s chained files),
//! `dispatch_4hooks_audit_over_floor` (the unchained audit side ÷ LIMIT plus `write_floor`: one
//! audit line's bytes appended with one `write` to an `O_APPEND` file, the contract's floor),
//! `allocs_over_limit` (allocations per call, 4 hooks + observer, minus LIMIT's),
//! `audit_records_per_s` (one thread, through the dispatcher with only the audit log),
//! `audit_chained_over_unchained` (that dispatcher ÷ the same with the unchained sink of
//! `common::UnchainedJsonl`: what the hash chain costs per line), read against
//! `chain_floor_over_write_floor` (the audit line appended under the file's lock after a look at
//! its path, as the chain's rules ask, ÷ `write_floor`) and `audit_chain_extra_over_floor_extra`
//! (the chain's time per line above the unchained sink's ÷ the floor's above `write_floor`: the
//! share of the chain's cost the kernel work its rules ask for explains), `audit_lost_lines` and
//! `audit_interleaved_lines` (two threads, one log), and `threads2_over_threads1` (throughput of 2
//! threads sharing one dispatcher ÷ 1 thread), read against `threads2_cpu_per_call_over_threads1`
//! (CPU time per call, 2 threads ÷ 1: contention) and `threads2_runqueue_wait_share` (time the 2
//! threads waited for a core: a busy machine); `respond_e2e_over_handwritten` (message text → parse
//! → respond → answer text, against the same by hand: `ratios/e2e.rs`);
//! `batch4_reads_over_one_call` and `batch_mixed_over_sum` (tools awaiting 20 ms each, several in
//! one message: see `ratios/batch.rs`); `call_future_bytes` and `respond_future_bytes` (the size
//! of `Session::call`'s and `Session::respond`'s futures, 4 hooks + observer: `size_of_val` of a
//! future never polled, printed first, before a `--profile` run too).

#[path = "ratios/batch.rs"]
mod batch;
mod common;
#[path = "ratios/e2e.rs"]
mod e2e;

use std::collections::HashSet;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate::{Dispatcher, ToolUse, audit::AuditLog};

use common::{
    EXPECTED, FreshIds, Side, TempDir, call, context, count_allocs, figure, interleave, keep,
    limit, median, median_ratio, poll_ready, result_text,
};

struct Plan {
    rounds: usize,
    batch: Duration,
    alloc_calls: u64,
    thread_rounds: usize,
    thread_batch: Duration,
    lost_calls_per_thread: usize,
    batch_rounds: usize,
}

fn main() {
    let bench = common::bench_mode();
    let plan = if bench {
        Plan {
            rounds: 301,
            batch: Duration::from_micros(500),
            alloc_calls: 10_000,
            thread_rounds: 21,
            thread_batch: Duration::from_millis(40),
            lost_calls_per_thread: 50_000,
            batch_rounds: 15,
        }
    } else {
        Plan {
            rounds: 1,
            batch: Duration::from_micros(500),
            alloc_calls: 10,
            thread_rounds: 1,
            thread_batch: Duration::from_millis(1),
            lost_calls_per_thread: 200,
            batch_rounds: 1,
        }
    };
    let started = Instant::now();

    let call = call();
    let nohooks = common::dispatcher_nohooks();
    let hooks = common::dispatcher_hooks();
    let audit_dir = TempDir::new("ratios");
    // The audit figure is taken with the hash chain off (each record serialized and appended with
    // one `write`, `common::UnchainedJsonl`); the chain's cost is its own figure
    // (`hooks_audit_chained`, `AuditLog::open`).
    let hooks_audit = common::dispatcher_hooks_audit(
        AuditLog::builder()
            .sink(common::UnchainedJsonl::open(
                &audit_dir.0.join("hooks.jsonl"),
            ))
            .build()
            .expect("the unchained audit log"),
    );
    let hooks_audit_chained = common::dispatcher_hooks_audit(
        AuditLog::open(audit_dir.0.join("hooks")).expect("open the audit log"),
    );
    let audit_only = common::dispatcher_audit_only(
        AuditLog::open(audit_dir.0.join("only")).expect("open the audit log"),
    );
    let unchained_path = audit_dir.0.join("unchained.jsonl");
    let audit_unchained = common::dispatcher_audit_only(
        AuditLog::builder()
            .sink(common::UnchainedJsonl::open(&unchained_path))
            .build()
            .expect("the unchained audit log"),
    );
    let s_nohooks = nohooks.session(context("sess_nohooks"));
    let s_hooks = hooks.session(context("sess_hooks"));
    let s_hooks_audit = hooks_audit.session(context("sess_hooks_audit"));
    let s_hooks_audit_chained = hooks_audit_chained.session(context("sess_hooks_audit_chained"));
    let s_audit_only = audit_only.session(context("sess_audit_only"));
    let s_audit_unchained = audit_unchained.session(context("sess_audit_unchained"));

    // Every side does the same work: check it once, outside the timed loops.
    assert_eq!(limit(&call.input), EXPECTED);
    for s in [
        &s_nohooks,
        &s_hooks,
        &s_hooks_audit,
        &s_hooks_audit_chained,
        &s_audit_only,
        &s_audit_unchained,
    ] {
        assert_eq!(result_text(poll_ready(s.call(&call))), EXPECTED);
    }

    // The size of a call's future and of a message's (4 hooks + observer, a default session):
    // a future is moved whole each time it is awaited, and `poll_ready` moves it once more.
    // Created, measured, dropped unpolled (nothing runs).
    figure(
        "call_future_bytes",
        std::mem::size_of_val(&s_hooks.call(&call)) as f64,
    );
    {
        let mut text = e2e::FreshText::new();
        let message: toolgate::Message =
            serde_json::from_str(text.next()).expect("a valid message");
        figure(
            "respond_future_bytes",
            std::mem::size_of_val(&s_hooks.respond(&message)) as f64,
        );
    }

    // The end-to-end sides answer the same text.
    let s_e2e = nohooks.session(context("sess_e2e"));
    {
        let mut text = e2e::FreshText::new();
        let t = text.next().to_owned();
        let toolgate_text = e2e::toolgate_side(&s_e2e, &t);
        assert_eq!(toolgate_text, e2e::handwritten_side(&t));
        assert_eq!(
            toolgate_text,
            format!(
                r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_e2e_000000000001","content":{}}}]}}"#,
                serde_json::to_string(EXPECTED).expect("a string")
            )
        );
    }
    // The audit contract's floor: one line of the size the audit path writes, appended with one
    // `write` to an `O_APPEND` file per call, nothing else (`write_floor`).
    let floor_line = {
        let text = std::fs::read_to_string(audit_dir.0.join("hooks.jsonl")).expect("audit lines");
        let first = text.lines().next().expect("one audit line").to_owned();
        (first + "\n").into_bytes()
    };
    let floor_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(audit_dir.0.join("floor.jsonl"))
        .expect("the floor's file");
    // The chain's floor: the same line appended as the chain's rules 5 and 6 ask of the kernel,
    // without the hash: the file's lock, a look at what its path names now (`metadata`, which
    // also reads the file's times, so the next `write` must update them), the `write`, the
    // unlock (`chain_floor`).
    // A path as deep as the chained side's (`only/audit_log.jsonl`): the look-up walks as far.
    let chain_floor_path = audit_dir.0.join("floor").join("audit_log.jsonl");
    std::fs::create_dir_all(audit_dir.0.join("floor")).expect("the chain floor's folder");
    let chain_floor_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&chain_floor_path)
        .expect("the chain floor's file");
    let (mut t_e2e, mut t_hand) = (e2e::FreshText::new(), e2e::FreshText::new());
    // Past the one checked above.
    t_e2e.next();

    // Each toolgate side gives every call a new id (a repeated id is answered from the
    // session's memory: a replay, nothing run).
    let mut ids = [(); 6].map(|()| FreshIds::new());
    let [
        i_nohooks,
        i_hooks,
        i_hooks_audit,
        i_hooks_audit_chained,
        i_audit_only,
        i_audit_unchained,
    ] = &mut ids;
    let mut sides = [
        Side::new("limit", || keep(limit(&call.input))),
        Side::new("nohooks", || {
            keep(poll_ready(s_nohooks.call(i_nohooks.next())))
        }),
        Side::new("hooks", || keep(poll_ready(s_hooks.call(i_hooks.next())))),
        Side::new("hooks_audit", || {
            keep(poll_ready(s_hooks_audit.call(i_hooks_audit.next())))
        }),
        Side::new("hooks_audit_chained", || {
            keep(poll_ready(
                s_hooks_audit_chained.call(i_hooks_audit_chained.next()),
            ))
        }),
        Side::new("e2e_toolgate", || {
            keep(e2e::toolgate_side(&s_e2e, t_e2e.next()))
        }),
        Side::new("e2e_handwritten", || {
            keep(e2e::handwritten_side(t_hand.next()))
        }),
        Side::new("audit_only", || {
            keep(poll_ready(s_audit_only.call(i_audit_only.next())))
        }),
        Side::new("audit_unchained", || {
            keep(poll_ready(s_audit_unchained.call(i_audit_unchained.next())))
        }),
        Side::new("write_floor", || {
            let written = std::io::Write::write(&mut &floor_file, &floor_line).expect("a write");
            assert_eq!(written, floor_line.len(), "one whole line per write");
        }),
        Side::new("chain_floor", || {
            chain_floor_file.lock().expect("the file's lock");
            keep(std::fs::metadata(&chain_floor_path).expect("the path's file"));
            let written =
                std::io::Write::write(&mut &chain_floor_file, &floor_line).expect("a write");
            assert_eq!(written, floor_line.len(), "one whole line per write");
            chain_floor_file.unlock().expect("the file's unlock");
        }),
    ];

    // `--profile SIDE N`: run one side N times and stop, for callgrind (instruction counts are
    // repeatable on a noisy machine): `valgrind --tool=callgrind target/release/deps/ratios-…
    // --profile hooks 100000`.
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        let name = args.get(i + 1).map_or("hooks", String::as_str);
        let n = args
            .get(i + 2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(100_000);
        let side = sides
            .iter_mut()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no side named {name}"));
        (side.run)(n);
        return;
    }

    // 1. Time per call, sides interleaved.
    let ns = interleave(&mut sides, plan.rounds, plan.batch);
    drop(sides);
    for (side, v) in [
        "limit",
        "nohooks",
        "hooks",
        "hooks_audit",
        "hooks_audit_chained",
        "e2e_toolgate",
        "e2e_handwritten",
        "audit_only",
        "audit_unchained",
        "write_floor",
        "chain_floor",
    ]
    .iter()
    .zip(&ns)
    {
        figure(&format!("ns_per_call_{side}"), median(v));
    }
    figure("dispatch_nohooks_over_limit", median_ratio(&ns[1], &ns[0]));
    figure("dispatch_4hooks_over_limit", median_ratio(&ns[2], &ns[0]));
    figure(
        "dispatch_4hooks_audit_over_limit",
        median_ratio(&ns[3], &ns[0]),
    );
    figure(
        "dispatch_4hooks_audit_chained_over_limit",
        median_ratio(&ns[4], &ns[0]),
    );
    // The audit path (chain off) against what no audit trail can go under: LIMIT's call plus
    // the line's one `write`, both measured in the same round.
    let floor: Vec<f64> = ns[0].iter().zip(&ns[9]).map(|(l, w)| l + w).collect();
    figure(
        "dispatch_4hooks_audit_over_floor",
        median_ratio(&ns[3], &floor),
    );
    figure("respond_e2e_over_handwritten", median_ratio(&ns[5], &ns[6]));
    figure("audit_records_per_s", 1e9 / median(&ns[7]));
    figure("audit_chained_over_unchained", median_ratio(&ns[7], &ns[8]));
    // What the chain adds per line against what its rules ask of the kernel (the file's lock,
    // the path's look-up, the time update it brings on the write): the rest is the SHA-256 and
    // the line's making.
    figure(
        "chain_floor_over_write_floor",
        median_ratio(&ns[10], &ns[9]),
    );
    let chain_extra: Vec<f64> = ns[7].iter().zip(&ns[8]).map(|(c, u)| c - u).collect();
    let floor_extra: Vec<f64> = ns[10].iter().zip(&ns[9]).map(|(c, w)| c - w).collect();
    figure(
        "audit_chain_extra_over_floor_extra",
        median_ratio(&chain_extra, &floor_extra),
    );

    // 2. Allocations per call: deterministic.
    let (a_limit, b_limit) = count_allocs(plan.alloc_calls, || keep(limit(&call.input)));
    let mut ids = FreshIds::new();
    let (a_nohooks, _) = count_allocs(plan.alloc_calls, || {
        keep(poll_ready(s_nohooks.call(ids.next())));
    });
    let (a_hooks, b_hooks) = count_allocs(plan.alloc_calls, || {
        keep(poll_ready(s_hooks.call(ids.next())));
    });
    let (a_audit, _) = count_allocs(plan.alloc_calls, || {
        keep(poll_ready(s_hooks_audit.call(ids.next())));
    });
    figure("allocs_per_call_limit", a_limit);
    figure("allocs_per_call_nohooks", a_nohooks);
    figure("allocs_per_call_4hooks", a_hooks);
    figure("allocs_per_call_4hooks_audit", a_audit);
    figure("alloc_bytes_per_call_limit", b_limit);
    figure("alloc_bytes_per_call_4hooks", b_hooks);
    figure("allocs_nohooks_over_limit", a_nohooks - a_limit);
    figure("allocs_over_limit", a_hooks - a_limit);

    // 3. Two threads appending to one audit log: nothing lost, nothing interleaved.
    let (lost, interleaved) = audit_two_threads(plan.lost_calls_per_thread);
    figure("audit_lost_lines", lost as f64);
    figure("audit_interleaved_lines", interleaved as f64);
    assert_eq!(
        (lost, interleaved),
        (0, 0),
        "audit lines were lost or interleaved"
    );

    // 4. Two threads sharing one dispatcher ÷ one thread (allow path, 4 hooks + observer).
    let threads = threads_ratio(&hooks, plan.thread_rounds, plan.thread_batch);
    figure("threads2_over_threads1", threads.wall_ratio);
    figure(
        "threads2_cpu_per_call_over_threads1",
        threads.cpu_per_call_ratio,
    );
    figure("threads2_runqueue_wait_share", threads.runqueue_share_2);
    figure(
        "available_parallelism",
        std::thread::available_parallelism().map_or(0, |n| n.get()) as f64,
    );
    // 5. Reads run concurrently: the tools of one message awaiting their I/O together
    // (`ratios/batch.rs`).
    batch::figures(plan.batch_rounds);

    if let Some(load) = load_average() {
        figure("loadavg_1min", load);
    }

    drop((
        s_nohooks,
        s_hooks,
        s_hooks_audit,
        s_hooks_audit_chained,
        s_e2e,
        s_audit_only,
        s_audit_unchained,
    ));
    // The chained files verify, whatever the rounds wrote; the unchained file has one line per
    // line of the chained one.
    let only =
        toolgate::audit::verify_audit_dir(audit_dir.0.join("only")).expect("read the audit files");
    let chained_lines = match only.calls.status {
        toolgate::audit::ChainStatus::Ok { lines, .. } => lines,
        broken => panic!("the benchmark's audit chain is broken: {broken}"),
    };
    assert!(only.is_ok());
    assert!(chained_lines > 0);
    let unchained = std::fs::read_to_string(&unchained_path).unwrap_or_default();
    assert!(
        unchained
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok())
    );
    figure("bench_seconds", started.elapsed().as_secs_f64());
}

/// Two threads, one session each, one dispatcher and one audit log; then every line of the log
/// is read back. Returns (lost, interleaved): calls without their line, and lines that are not
/// one whole, expected JSON object (unparsable, unknown or repeated).
fn audit_two_threads(calls_per_thread: usize) -> (usize, usize) {
    let dir = TempDir::new("two-threads");
    let d = common::dispatcher_audit_only(AuditLog::open(&dir.0).expect("open the audit log"));
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        for t in 0..2 {
            let (d, barrier) = (&d, &barrier);
            s.spawn(move || {
                let session = d.session(context(&format!("sess_t{t}")));
                let calls: Vec<ToolUse> = (0..calls_per_thread)
                    .map(|i| {
                        ToolUse::new(format!("toolu_t{t}_{i}"), "lookup_user", common::input())
                    })
                    .collect();
                barrier.wait();
                for c in &calls {
                    keep(poll_ready(session.call(c)));
                }
            });
        }
    });
    drop(d);
    let text =
        std::fs::read_to_string(dir.0.join(toolgate::audit::AUDIT_LOG_FILE)).unwrap_or_default();
    let mut expected: HashSet<(String, String)> = (0..2)
        .flat_map(|t| {
            (0..calls_per_thread).map(move |i| (format!("sess_t{t}"), format!("toolu_t{t}_{i}")))
        })
        .collect();
    let mut interleaved = 0;
    for line in text.lines() {
        let key = serde_json::from_str::<Value>(line).ok().and_then(|v| {
            let whole = v.get("content").and_then(Value::as_str) == Some(EXPECTED);
            let s = v.get("session_id")?.as_str()?.to_owned();
            let id = v.get("tool_use_id")?.as_str()?.to_owned();
            whole.then_some((s, id))
        });
        match key {
            Some(k) if expected.remove(&k) => {}
            _ => interleaved += 1,
        }
    }
    (expected.len(), interleaved)
}

/// What the thread figure is read against: how busy the machine let the threads be.
struct ThreadFigures {
    /// Median over rounds of (2 threads' calls per second) ÷ (1 thread's).
    wall_ratio: f64,
    /// CPU time per call with 2 threads ÷ with 1 thread (1.0: sharing the dispatcher costs
    /// nothing; above: contention).
    cpu_per_call_ratio: f64,
    /// Share of the 2-thread runs' thread time spent runnable but waiting for a core.
    runqueue_share_2: f64,
}

/// Each thread with its own session on one shared dispatcher; 1 and 2 threads alternate.
fn threads_ratio(d: &Dispatcher, rounds: usize, batch: Duration) -> ThreadFigures {
    // Calibrate: calls one thread makes in about `batch`.
    let n = {
        let s = d.session(context("sess_calibrate"));
        let mut ids = FreshIds::new();
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < batch / 4 {
            for _ in 0..100 {
                keep(poll_ready(s.call(ids.next())));
            }
            n += 100;
        }
        n * 4
    };
    let mut ratios = Vec::with_capacity(rounds);
    let (mut cpu1, mut cpu2, mut on2, mut wait2) = (0u64, 0u64, 0u64, 0u64);
    for round in 0..rounds {
        let (one, two) = if round % 2 == 0 {
            let one = run_threads(d, 1, n);
            (one, run_threads(d, 2, n))
        } else {
            let two = run_threads(d, 2, n);
            (run_threads(d, 1, n), two)
        };
        // (2n / t2) / (n / t1)
        ratios.push(2.0 * one.wall.as_secs_f64() / two.wall.as_secs_f64());
        cpu1 += one.on_cpu_ns;
        cpu2 += two.on_cpu_ns;
        on2 += two.on_cpu_ns;
        wait2 += two.waiting_ns;
    }
    ThreadFigures {
        wall_ratio: median(&ratios),
        cpu_per_call_ratio: (cpu2 as f64 / 2.0) / cpu1 as f64,
        runqueue_share_2: wait2 as f64 / (on2 + wait2).max(1) as f64,
    }
}

struct ThreadRun {
    wall: Duration,
    /// Summed over the threads, from /proc/thread-self/schedstat (0 where unavailable).
    on_cpu_ns: u64,
    waiting_ns: u64,
}

/// Wall time for `threads` threads to make `n` calls each, from a common start.
fn run_threads(d: &Dispatcher, threads: usize, n: u64) -> ThreadRun {
    let barrier = Barrier::new(threads + 1);
    let mut start = Instant::now();
    let mut sched = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let session = d.session(context(&format!("sess_thread_{t}")));
                    let mut ids = FreshIds::new();
                    barrier.wait();
                    let before = schedstat();
                    for _ in 0..n {
                        keep(poll_ready(session.call(ids.next())));
                    }
                    let after = schedstat();
                    (
                        after.0.saturating_sub(before.0),
                        after.1.saturating_sub(before.1),
                    )
                })
            })
            .collect();
        barrier.wait();
        start = Instant::now();
        sched = handles
            .into_iter()
            .map(|h| h.join().unwrap_or((0, 0)))
            .collect();
    });
    ThreadRun {
        wall: start.elapsed(),
        on_cpu_ns: sched.iter().map(|s| s.0).sum(),
        waiting_ns: sched.iter().map(|s| s.1).sum(),
    }
}

/// This thread's (ns on a CPU, ns runnable but waiting for one) so far (Linux schedstat).
fn schedstat() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut fields = text
        .split_whitespace()
        .map(|f| f.parse::<u64>().unwrap_or(0));
    (fields.next().unwrap_or(0), fields.next().unwrap_or(0))
}

/// The 1-minute load average (Linux), to read the thread figure against.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
