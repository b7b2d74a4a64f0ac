//! Deadlines without a runtime: the [`Timer`] trait, and the small futures the pipeline uses to
//! race a hook or tool against its deadline and to catch its panics.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::registry::BoxFuture;

/// A source of sleeps, so deadlines work on any async runtime while the core depends on none.
///
/// Give one to [`DispatcherBuilder::timer`](crate::DispatcherBuilder::timer) to enforce
/// `timeout_ms` deadlines. With the facade's `tokio` feature, `toolgate::TokioTimer` is one.
/// A deadline cuts async code only, at its next `.await`: sync code cannot be interrupted.
pub trait Timer: Send + Sync + 'static {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// Polls a boxed future, turning a panic inside `poll` into `Err(panic message)`.
pub(crate) struct CatchUnwind<'a, T>(pub(crate) BoxFuture<'a, T>);

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, String>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

/// How a future raced against a deadline ended.
pub(crate) enum Raced<T> {
    Done(T),
    TimedOut,
}

/// Races `fut` against `sleep`; `fut` is polled first, so a future that finishes on its first
/// poll always wins.
pub(crate) struct Race<F> {
    pub(crate) fut: F,
    pub(crate) sleep: Option<BoxFuture<'static, ()>>,
}

impl<F: Future + Unpin> Future for Race<F> {
    type Output = Raced<F::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(v) = Pin::new(&mut self.fut).poll(cx) {
            return Poll::Ready(Raced::Done(v));
        }
        if let Some(sleep) = self.sleep.as_mut()
            && sleep.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Raced::TimedOut);
        }
        Poll::Pending
    }
}

/// The text of a panic payload (`&str` or `String`), for the operator.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// Runs `f`, turning a panic into `Err(panic message)`.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_message(p.as_ref()))
}
