//! Deadlines without a runtime: the [`Timer`] trait, the default timer every dispatcher has
//! (`futures-timer`'s one helper thread), and the small future the pipeline uses to race a hook
//! or tool against its deadline.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::base::future::BoxFuture;
use crate::base::panic::{catch, take_panic};

/// A source of sleeps, so deadlines work on any async runtime while the core depends on none.
///
/// Every dispatcher has one: by default the `futures-timer` crate's global timer, one helper thread
/// started on the first deadline, which needs no async runtime (a call driven by
/// [`block_on`](crate::block_on) is cut at its deadline too). Give another to
/// [`DispatcherBuilder::timer`](crate::dispatch::DispatcherBuilder::timer) to put the sleeps on
/// your runtime's timer (with the facade's `tokio` feature, `toolgate::dispatch::TokioTimer`), or,
/// in tests, a timer the test controls.
///
/// A deadline cuts async code only, at an `.await` that yields (returns `Pending`): the
/// dispatcher stops polling the hook's or tool's future and drops it. Sync code, and async code
/// that blocks the thread between two `.await`s, cannot be interrupted; it runs to its end and
/// the deadline is not applied to it.
///
/// The sleep starts when the hook or tool is first polled. A timer that panics (when creating or
/// polling a sleep) fails closed: a PreToolUse hook's call halts as `hook_failed`, a tool's call
/// is a `tool_error` with the generic internal message; the panic text goes to `detail`.
///
/// A timer for tests and sync hosts, one thread per sleep:
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::task::{Poll, Waker};
/// use std::time::Duration;
/// use toolgate_core::dispatch::{BoxFuture, Timer};
///
/// struct ThreadTimer;
///
/// impl Timer for ThreadTimer {
///     fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
///         let state = Arc::new(Mutex::new((false, None::<Waker>)));
///         let shared = Arc::clone(&state);
///         std::thread::spawn(move || {
///             std::thread::sleep(duration);
///             let mut s = shared.lock().unwrap();
///             s.0 = true;
///             if let Some(w) = s.1.take() {
///                 w.wake();
///             }
///         });
///         Box::pin(std::future::poll_fn(move |cx| {
///             let mut s = state.lock().unwrap();
///             if s.0 {
///                 Poll::Ready(())
///             } else {
///                 s.1 = Some(cx.waker().clone());
///                 Poll::Pending
///             }
///         }))
///     }
/// }
///
/// toolgate_core::block_on(ThreadTimer.sleep(Duration::from_millis(1)));
/// ```
pub trait Timer: Send + Sync + 'static {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// The timer a dispatcher has unless the builder is given another: `futures-timer`'s
/// [`Delay`](futures_timer::Delay), served by one global helper thread (started on the first
/// sleep; a binary heap of deadlines, no runtime needed).
pub(crate) struct DefaultTimer;

impl Timer for DefaultTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(futures_timer::Delay::new(duration))
    }
}

/// A [`Timer`] on tokio's time driver (feature `tokio`; tokio with its `time` feature only).
///
/// Its sleeps are [`tokio::time::sleep`], so the call future must be polled inside a Tokio
/// runtime with the time driver on (`Builder::enable_time` or `enable_all`, or
/// `#[tokio::main]`); a server on tokio then needs no extra thread for its deadlines. Outside
/// one tokio panics when the sleep is created; the dispatcher catches that and fails closed (see
/// [`Timer`]): keep the default timer with [`block_on`](crate::block_on).
///
/// ```
/// # #[cfg(feature = "tokio")] {
/// use std::time::Duration;
/// use toolgate_core::dispatch::TokioTimer;
/// use toolgate_core::Dispatcher;
///
/// let dispatcher = Dispatcher::builder()
///     .timer(TokioTimer)
///     .hook_timeout(Duration::from_millis(2500))
///     .build()
///     .unwrap();
/// # let _ = dispatcher; }
/// ```
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioTimer;

#[cfg(feature = "tokio")]
impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// How a future raced against a deadline ended.
pub(crate) enum Raced<T> {
    Done(T),
    TimedOut,
    /// The timer panicked creating or polling the sleep; the future is no longer polled.
    TimerFailed(String),
}

/// The deadline side of a [`Race`].
pub(crate) enum Deadline {
    /// No deadline: the future runs to its end.
    None,
    /// The timer's sleep.
    Sleep(BoxFuture<'static, ()>),
    /// The timer panicked creating the sleep (the message); reported on the first poll.
    Failed(String),
}

impl Deadline {
    /// The sleep of `timer` for `deadline`, when one is set; a panic in `sleep` is caught.
    pub(crate) fn new(timer: &dyn Timer, deadline: Option<Duration>) -> Self {
        match deadline {
            Some(d) => match catch(|| timer.sleep(d)) {
                Ok(sleep) => Deadline::Sleep(sleep),
                Err(p) => Deadline::Failed(p),
            },
            None => Deadline::None,
        }
    }
}

/// Races `fut` against a deadline; `fut` is polled first, so a future that finishes on its first
/// poll always wins. A panic of the timer ends the race as [`Raced::TimerFailed`].
pub(crate) struct Race<F> {
    pub(crate) fut: F,
    pub(crate) deadline: Deadline,
}

impl<F: Future + Unpin> Future for Race<F> {
    type Output = Raced<F::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Deadline::Failed(p) = &mut self.deadline {
            return Poll::Ready(Raced::TimerFailed(std::mem::take(p)));
        }
        if let Poll::Ready(v) = Pin::new(&mut self.fut).poll(cx) {
            return Poll::Ready(Raced::Done(v));
        }
        if let Deadline::Sleep(sleep) = &mut self.deadline {
            match catch_unwind(AssertUnwindSafe(|| sleep.as_mut().poll(cx))) {
                Ok(Poll::Ready(())) => return Poll::Ready(Raced::TimedOut),
                Ok(Poll::Pending) => {}
                Err(payload) => {
                    let p = take_panic(payload);
                    self.deadline = Deadline::None;
                    return Poll::Ready(Raced::TimerFailed(p));
                }
            }
        }
        Poll::Pending
    }
}
