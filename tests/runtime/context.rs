//! The trusted context: frozen, shareable, with typed extensions and a clock read at each call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use toolgate::{HookContext, dispatch::Clock};

fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

#[test]
fn the_context_is_send_sync_and_clones_share_one_allocation() {
    assert_send_sync::<HookContext>();
    assert_send_sync::<toolgate::Dispatcher>();
    #[derive(Debug, PartialEq)]
    struct Plan(&'static str);
    let ctx = HookContext::builder("u_001", "sess_1")
        .tier("premium")
        .extension(Plan("gold"))
        .extension(42u32)
        .build();
    let copy = ctx.clone();
    assert!(std::ptr::eq(ctx.extensions(), copy.extensions()));
    assert_eq!(copy.extensions().get::<Plan>(), Some(&Plan("gold")));
    assert_eq!(copy.extensions().get::<u32>(), Some(&42));
    assert_eq!(copy.extensions().get::<u64>(), None);
    assert_eq!(copy.extensions().len(), 2);
    assert_eq!(
        (copy.user_id(), copy.session_id(), copy.tier()),
        ("u_001", "sess_1", Some("premium"))
    );
    let bare = HookContext::builder("u_002", "sess_2").build();
    assert_eq!(bare.tier(), None);
    assert!(bare.extensions().is_empty());
    assert_eq!(
        std::mem::size_of::<toolgate::dispatch::Extensions>(),
        std::mem::size_of::<usize>()
    );
}

#[test]
fn now_reads_the_clock_at_the_time_of_the_call() {
    let fixed = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_515_300);
    let ctx = HookContext::builder("u", "s")
        .clock(Clock::fixed(fixed))
        .build();
    assert_eq!(ctx.now(), fixed);
    assert_eq!(ctx.now(), fixed);

    let ticks = Arc::new(AtomicU64::new(0));
    let t = ticks.clone();
    let ctx = HookContext::builder("u", "s")
        .clock(Clock::Custom(Arc::new(move || {
            SystemTime::UNIX_EPOCH + Duration::from_secs(t.fetch_add(60, Ordering::SeqCst))
        })))
        .build();
    assert_eq!(ctx.now(), SystemTime::UNIX_EPOCH);
    assert_eq!(ctx.now(), SystemTime::UNIX_EPOCH + Duration::from_secs(60));
}
