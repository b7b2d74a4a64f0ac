//! The two shapes of an answer that may not be ready: [`BoxFuture`], what every async tool and
//! hook is erased to, and `Invoke`, a sync answer given inline or an async one still running;
//! and `join_all`, several futures polled together on the caller's task.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

/// A boxed `Send` future, the shape every async tool and hook is erased to.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool's or hook's answer: ready now (sync code, no allocation) or a future (async code).
pub(crate) enum Invoke<'a, T> {
    Ready(T),
    Pending(BoxFuture<'a, T>),
}

/// Polls every future of `futures` together, in order at each wake-up (so a future that sends
/// something when first polled sends it before the next one does), until all are done; their
/// outputs in order. No runtime: the futures share the caller's task.
pub(crate) async fn join_all<T>(futures: Vec<BoxFuture<'_, T>>) -> Vec<T> {
    let mut slots: Vec<(BoxFuture<'_, T>, Option<T>)> =
        futures.into_iter().map(|f| (f, None)).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in &mut slots {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    slots.into_iter().filter_map(|(_, out)| out).collect()
}
