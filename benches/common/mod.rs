//! What every benchmark binary shares: the measured tool (`lookup_user`, among 20 registered
//! tools), the 4 PreToolUse hooks and the observer, the hand-written LIMIT, the dispatchers, a
//! counting allocator, a no-op-waker poll and the interleaved-rounds timer.
//!
//! Included by `benches/ratios.rs`, `benches/dispatch.rs` and, by path, by the peer bench crate
//! `bench-peers/benches/peers.rs`, so every binary measures exactly the same tool.
// Each binary uses a different part of this module.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate::{Dispatcher, HookContext, ToolUse, audit::AuditLog};

// ---------------------------------------------------------------------------------------------
// The tools.

/// What `lookup_user` returns: a small struct the model reads as JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub(crate) struct User {
    pub(crate) user_id: String,
    pub(crate) name: &'static str,
    pub(crate) tier: &'static str,
    pub(crate) open_orders: u32,
}

/// The measured tool's body, shared by every side (toolgate, LIMIT, rmcp, rig).
pub(crate) fn lookup_user_body(user_id: String, include_orders: bool) -> User {
    User {
        user_id,
        name: "Ada Lovelace",
        tier: "premium",
        open_orders: if include_orders { 2 } else { 0 },
    }
}

/// The 20 tools of the toolgate side: `lookup_user` and 19 fillers.
pub(crate) mod tools {
    use toolgate::tool;

    use super::User;

    /// Looks up a customer by id; with `include_orders`, counts their open orders.
    #[tool]
    pub(crate) fn lookup_user(
        /// The customer's id, e.g. u_001.
        user_id: String,
        /// Whether to count the customer's open orders.
        include_orders: bool,
    ) -> User {
        super::lookup_user_body(user_id, include_orders)
    }

    macro_rules! fillers {
        ($($name:ident),* $(,)?) => {$(
            /// A filler tool (one of 19): echoes the query.
            #[tool]
            pub(crate) fn $name(
                /// What to look for.
                query: String,
                /// How many results to return at most.
                limit: Option<u32>,
            ) -> String {
                format!("{query} {}", limit.unwrap_or(10))
            }
        )*};
    }

    fillers!(
        filler_01, filler_02, filler_03, filler_04, filler_05, filler_06, filler_07, filler_08,
        filler_09, filler_10, filler_11, filler_12, filler_13, filler_14, filler_15, filler_16,
        filler_17, filler_18, filler_19,
    );
}

/// The 4 sync PreToolUse hooks (each allows the benchmark's call) and the observer (no I/O).
pub(crate) mod hooks {
    use std::cell::Cell;

    use toolgate::{Decision, HookContext, ToolUse, audit::CallRecord, post_hook, pre_hook};

    /// Only signed-in users reach tools.
    #[pre_hook(order = 10)]
    fn signed_in(ctx: &HookContext) -> Decision {
        ran();
        if ctx.user_id().is_empty() {
            Decision::deny("sign in first.")
        } else {
            Decision::Allow
        }
    }

    /// Customers look up themselves; premium agents anyone.
    #[pre_hook(order = 20, tools = [super::tools::lookup_user])]
    fn own_record_or_premium(ctx: &HookContext, call: &ToolUse) -> Decision {
        ran();
        // Premium short-circuits: the input is only read for other tiers.
        if ctx.tier() == Some("premium")
            || call.input.get("user_id").and_then(|v| v.as_str()) == Some(ctx.user_id())
        {
            Decision::Allow
        } else {
            Decision::deny("you can only look up your own record.")
        }
    }

    /// No destructive tools in this agent.
    #[pre_hook(order = 30)]
    fn read_only(call: &ToolUse) -> Decision {
        ran();
        if call.name.starts_with("delete_") {
            Decision::deny("this agent is read-only.")
        } else {
            Decision::Allow
        }
    }

    /// Free-tier sessions get no tools after hours (here: a tier check only, no clock).
    #[pre_hook(order = 40)]
    fn tier_known(ctx: &HookContext) -> Decision {
        ran();
        match ctx.tier() {
            Some(_) => Decision::Allow,
            None => Decision::deny("your account has no tier yet."),
        }
    }

    thread_local! {
        static OBSERVED: Cell<u64> = const { Cell::new(0) };
        static HOOK_RUNS: Cell<u64> = const { Cell::new(0) };
    }

    /// One run of a hook, counted per thread.
    fn ran() {
        HOOK_RUNS.with(|n| n.set(n.get() + 1));
    }

    /// Counts calls per thread (metrics without I/O or shared writes).
    #[post_hook]
    fn count_calls(record: &CallRecord<'_>) {
        std::hint::black_box(record.outcome);
        OBSERVED.with(|n| n.set(n.get() + 1));
    }

    /// The calls this thread's observer saw and the PreToolUse hook runs on this thread, since
    /// it started. A replayed answer is observed with no hook run: a side that measured replays
    /// shows fewer than 4 runs per call.
    #[allow(dead_code)]
    pub(crate) fn observed() -> (u64, u64) {
        (OBSERVED.with(Cell::get), HOOK_RUNS.with(Cell::get))
    }
}

// ---------------------------------------------------------------------------------------------
// LIMIT: the least any dispatcher can do.

/// `lookup_user`'s arguments, for the hand-written LIMIT.
#[derive(Deserialize)]
pub(crate) struct LookupUserArgs {
    pub(crate) user_id: String,
    pub(crate) include_orders: bool,
}

/// LIMIT: `Args::deserialize(&value)`, call the function, `serde_json::to_string` of the output.
pub(crate) fn limit(input: &Value) -> String {
    let args = LookupUserArgs::deserialize(input).expect("the benchmark input is valid");
    let out = tools::lookup_user(args.user_id, args.include_orders);
    serde_json::to_string(&out).expect("User serializes")
}

// ---------------------------------------------------------------------------------------------
// Dispatchers and calls.

/// The benchmark's `tool_use` input.
pub(crate) fn input() -> Value {
    json!({"user_id": "u_001", "include_orders": true})
}

/// The benchmark's `tool_use` block (built once, held by reference in the timed loops).
pub(crate) fn call() -> ToolUse {
    ToolUse::new("toolu_bench_01", "lookup_user", input())
}

/// [`call`] with a new id for every call, rewritten in place (an odometer over the id's last 12
/// digits: no allocation, a few instructions). A session answers an id once and replays it
/// after that (nothing runs), so a toolgate side that repeated one id would measure replays.
pub(crate) struct FreshIds {
    call: ToolUse,
}

impl FreshIds {
    pub(crate) fn new() -> Self {
        FreshIds {
            call: ToolUse::new("toolu_bench_000000000000", "lookup_user", input()),
        }
    }

    /// The block with the next id.
    pub(crate) fn next(&mut self) -> &ToolUse {
        // The id ends in ASCII digits: a byte-wise odometer keeps it UTF-8.
        let mut id = std::mem::take(&mut self.call.id).into_bytes();
        for b in id.iter_mut().rev() {
            if *b == b'9' {
                *b = b'0';
            } else if b.is_ascii_digit() {
                *b += 1;
                break;
            } else {
                break;
            }
        }
        self.call.id = String::from_utf8(id).expect("an ASCII id");
        &self.call
    }
}

/// The text every side must produce for [`call`].
pub(crate) const EXPECTED: &str =
    r#"{"user_id":"u_001","name":"Ada Lovelace","tier":"premium","open_orders":2}"#;

/// The session's trusted context (system clock, as in production).
pub(crate) fn context(session_id: &str) -> HookContext {
    HookContext::builder("u_001", session_id)
        .tier("premium")
        .build()
}

fn under(module: &str) -> String {
    format!("{}::{module}", module_path!())
}

/// 20 tools, no hooks.
pub(crate) fn dispatcher_nohooks() -> Dispatcher {
    Dispatcher::builder()
        .registered_under(under("tools"))
        .build()
        .expect("the benchmark dispatcher builds")
}

/// 20 tools, 4 PreToolUse hooks, 1 observer.
pub(crate) fn dispatcher_hooks() -> Dispatcher {
    Dispatcher::builder()
        .registered_under(under("tools"))
        .registered_under(under("hooks"))
        .build()
        .expect("the benchmark dispatcher builds")
}

/// 20 tools, 4 PreToolUse hooks, 1 observer and the audit log.
pub(crate) fn dispatcher_hooks_audit(log: AuditLog) -> Dispatcher {
    Dispatcher::builder()
        .registered_under(under("tools"))
        .registered_under(under("hooks"))
        .audit_log(log)
        .build()
        .expect("the benchmark dispatcher builds")
}

/// 20 tools and the audit log, no hooks: the audit append rate.
pub(crate) fn dispatcher_audit_only(log: AuditLog) -> Dispatcher {
    Dispatcher::builder()
        .registered_under(under("tools"))
        .audit_log(log)
        .build()
        .expect("the benchmark dispatcher builds")
}

/// The audit log as it was before the hash chain, as a sink: each record serialized into a
/// reused buffer with its `\n` and appended with one `write` to an `O_APPEND` file; no `prev`, no
/// lock, no hash. Measured against the chained files (`AuditLog::open`) to give the chain's cost
/// per line: both sides build, redact (no rule) and serialize the same record, with the line
/// writer the files use (`AuditRecord::write_json`, serde_json's bytes).
pub(crate) struct UnchainedJsonl(std::fs::File);

impl UnchainedJsonl {
    pub(crate) fn open(path: &std::path::Path) -> Self {
        UnchainedJsonl(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("open the unchained audit file"),
        )
    }
}

impl toolgate::audit::AuditSink for UnchainedJsonl {
    fn record(
        &self,
        record: &toolgate::audit::AuditRecord,
    ) -> Result<(), toolgate::dispatch::HookError> {
        use std::io::Write;
        thread_local! {
            static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        LINE.with(|line| {
            let mut line = line.borrow_mut();
            line.clear();
            record.write_json(&mut line);
            line.push(b'\n');
            let written = (&self.0)
                .write(&line)
                .map_err(toolgate::dispatch::HookError::new)?;
            if written != line.len() {
                return Err(toolgate::dispatch::HookError::new("short write"));
            }
            Ok(())
        })
    }
}

/// A fresh folder for an audit log; removed by [`TempDir`]'s drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolgate-bench-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the audit folder");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The text of a toolgate call's result, checking it succeeded.
pub(crate) fn result_text(r: Result<toolgate::ToolResult, toolgate::CallError>) -> String {
    let r = r.expect("no hook halts the benchmark call");
    assert!(!r.is_error, "the benchmark call failed: {r:?}");
    r.content_text().into_owned()
}

// ---------------------------------------------------------------------------------------------
// Driving futures.

/// Polls `fut` once with a no-op waker: every measured future finishes on its first poll, so no
/// executor cost is counted on any side.
///
/// # Panics
/// If the future is not ready after one poll (the side would need an executor).
pub(crate) fn poll_ready<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a benchmark future did not finish on its first poll"),
    }
}

// ---------------------------------------------------------------------------------------------
// Counting allocations.

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting `alloc`, `alloc_zeroed` and `realloc` calls while
/// [`count_allocs`] runs (a relaxed flag check otherwise).
pub(crate) struct CountingAlloc;

// Bench-only code: a `GlobalAlloc` impl must be `unsafe impl`; it forwards every call to
// `System` unchanged and only bumps two counters. The library crates forbid unsafe code.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note(bytes: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        ALLOC_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Allocations (calls of `alloc`/`alloc_zeroed`/`realloc`) and bytes per call of `f`, over `n`
/// calls after 100 warm-up calls. Single-threaded: run nothing else meanwhile.
pub(crate) fn count_allocs(n: u64, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..100 {
        f();
    }
    ALLOCS.store(0, Ordering::Relaxed);
    ALLOC_BYTES.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..n {
        f();
    }
    COUNTING.store(false, Ordering::SeqCst);
    let per = |x: u64| x as f64 / n as f64;
    (
        per(ALLOCS.load(Ordering::Relaxed)),
        per(ALLOC_BYTES.load(Ordering::Relaxed)),
    )
}

// ---------------------------------------------------------------------------------------------
// Timing: sides interleaved round by round.

/// `cargo bench` passes `--bench`; `cargo test --all-targets` runs a `harness = false` bench's
/// `main` without it, and then one quick round is done and nothing about time is asserted.
pub(crate) fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// One measured side: `run(n)` performs `n` calls.
pub(crate) struct Side<'a> {
    pub(crate) name: &'static str,
    pub(crate) run: Box<dyn FnMut(u64) + 'a>,
}

impl<'a> Side<'a> {
    pub(crate) fn new(name: &'static str, mut once: impl FnMut() + 'a) -> Self {
        Side {
            name,
            run: Box::new(move |n| {
                for _ in 0..n {
                    once();
                }
            }),
        }
    }
}

fn time(run: &mut dyn FnMut(u64), n: u64) -> Duration {
    let start = Instant::now();
    run(n);
    start.elapsed()
}

/// Calibrates each side to batches of about `target`, then runs `rounds` rounds; in each round
/// every side runs one batch (the starting side rotates). Returns ns per call, per side, per
/// round.
///
/// On a shared machine a batch that spans a preemption measures the wait too, so batches are
/// kept well under a scheduler time slice (a target of about half a millisecond) and the
/// callers take medians over many rounds; calibration takes the fastest of three tries.
pub(crate) fn interleave(sides: &mut [Side<'_>], rounds: usize, target: Duration) -> Vec<Vec<f64>> {
    let batches: Vec<u64> = sides
        .iter_mut()
        .map(|s| {
            let mut n = 1u64;
            loop {
                let t = (0..3)
                    .map(|_| time(&mut s.run, n))
                    .min()
                    .unwrap_or_default();
                if t >= target / 2 || n >= 1 << 30 {
                    let per = t.as_nanos() as f64 / n as f64;
                    break ((target.as_nanos() as f64 / per.max(0.1)) as u64).max(1);
                }
                n *= 2;
            }
        })
        .collect();
    let mut ns = vec![Vec::with_capacity(rounds); sides.len()];
    for round in 0..rounds {
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            let t = time(&mut sides[i].run, batches[i]);
            ns[i].push(t.as_nanos() as f64 / batches[i] as f64);
        }
    }
    ns
}

/// The median of `xs` (the mean of the two middle values for an even count).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The median over rounds of `a[i] / b[i]` (both measured in round `i`).
pub(crate) fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    median(&r)
}

/// Prints one figure as `NAME VALUE`.
pub(crate) fn figure(name: &str, value: f64) {
    if value.abs() >= 1000.0 || value == value.trunc() {
        println!("{name} {value:.0}");
    } else {
        println!("{name} {value:.3}");
    }
}

/// Keeps a value alive so the optimizer cannot drop the work that produced it.
pub(crate) fn keep<T>(v: T) {
    drop(black_box(v));
}
