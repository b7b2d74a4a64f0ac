//! Helpers shared by the reliability tests (properties, deadlines, limits, concurrency, trusted
//! context): test timers that need no runtime, temporary folders, audit-log readers, a quiet
//! panic hook for injected faults, and a one-poll driver for cancellation tests.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;
use toolgate::{BoxFuture, Timer};

/// Every panic a test injects on purpose starts with this text; [`quiet_injected_panics`] keeps
/// them off stderr.
pub(crate) const INJECTED: &str = "injected fault";

/// Installs, once per test binary, a panic hook that stays silent for panics whose message
/// starts with [`INJECTED`] (and for tokio's "no runtime" panic, which a test provokes on
/// purpose) and hands every other panic to the hook that was installed before (the default one
/// prints it). It is never removed: tests of one binary run in parallel, so
/// restoring the previous hook from one test could silence or unsilence another mid-run; the
/// filter keeps every real panic visible instead.
pub(crate) fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if text.is_some_and(|t| t.starts_with(INJECTED) || t.contains("Tokio 1.x runtime")) {
                return;
            }
            previous(info);
        }));
    });
}

/// A timer that sleeps on a thread of its own per sleep: real time, no runtime needed, so
/// deadline tests run under `toolgate::block_on` in every CI run.
pub(crate) struct ThreadTimer;

impl Timer for ThreadTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let state = Arc::new(Mutex::new((false, None::<Waker>)));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            std::thread::sleep(duration);
            let mut s = shared.lock().unwrap();
            s.0 = true;
            if let Some(w) = s.1.take() {
                w.wake();
            }
        });
        Box::pin(std::future::poll_fn(move |cx| {
            let mut s = state.lock().unwrap();
            if s.0 {
                Poll::Ready(())
            } else {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }))
    }
}

/// A timer whose every deadline has already passed: a future that does not finish on its first
/// poll loses. Deterministic (no clock), for property tests.
pub(crate) struct ExpiredTimer;

impl Timer for ExpiredTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// A broken timer: panics when asked for a sleep.
pub(crate) struct PanickingTimer;

impl Timer for PanickingTimer {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        panic!("{INJECTED}: the timer is broken")
    }
}

/// A future that never finishes and never wakes (a hung backend).
pub(crate) fn hang<T: Send + 'static>() -> BoxFuture<'static, T> {
    Box::pin(std::future::pending())
}

/// Returns `Pending` once (waking itself), then `Ready(())`: an `.await` that really yields.
pub(crate) fn yield_once() -> impl Future<Output = ()> + Send {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
}

/// Polls `fut` once with a no-op waker; `Some` when it finished.
pub(crate) fn poll_once<F: Future>(fut: Pin<&mut F>) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match fut.poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// A folder under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty folder whose name contains `label`.
    pub(crate) fn new(label: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("toolgate-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The JSON lines of a file, each parsed (a line that does not parse fails the test: a torn or
/// interleaved line).
pub(crate) fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} does not end with a newline",
        path.display()
    );
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!("line {} of {} is not JSON ({e})", i + 1, path.display())
            })
        })
        .collect()
}
