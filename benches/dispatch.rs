//! Criterion benchmarks of one `lookup_user` call (20 tools registered): the hand-written LIMIT,
//! toolgate with no hooks, with 4 PreToolUse hooks + 1 observer, and with the audit log too.
//!
//! `cargo bench --bench dispatch` gives absolute times with criterion's statistics; the ratios
//! (measured side by side) come from `cargo bench --bench ratios`.

mod common;

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate::audit::AuditLog;

use common::{EXPECTED, FreshIds, TempDir, call, context, keep, limit, poll_ready, result_text};

fn lookup_user(c: &mut Criterion) {
    let call = call();
    let nohooks = common::dispatcher_nohooks();
    let hooks = common::dispatcher_hooks();
    let dir = TempDir::new("criterion");
    let audit = common::dispatcher_hooks_audit(AuditLog::open(&dir.0).expect("open the audit log"));
    let s_nohooks = nohooks.session(context("sess_nohooks"));
    let s_hooks = hooks.session(context("sess_hooks"));
    let s_audit = audit.session(context("sess_audit"));
    assert_eq!(limit(&call.input), EXPECTED);
    assert_eq!(result_text(poll_ready(s_hooks.call(&call))), EXPECTED);

    let mut g = c.benchmark_group("lookup_user");
    g.bench_function("limit", |b| b.iter(|| keep(limit(&call.input))));
    let mut ids = FreshIds::new();
    g.bench_function("toolgate_nohooks", |b| {
        b.iter(|| keep(poll_ready(s_nohooks.call(ids.next()))))
    });
    g.bench_function("toolgate_4hooks_observer", |b| {
        b.iter(|| keep(poll_ready(s_hooks.call(ids.next()))))
    });
    g.bench_function("toolgate_4hooks_observer_audit", |b| {
        b.iter(|| keep(poll_ready(s_audit.call(ids.next()))))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = lookup_user
}
criterion_main!(benches);
