//! The two shapes of an answer that may not be ready: [`BoxFuture`], what every async tool and
//! hook is erased to, and `Invoke`, a sync answer given inline or an async one still running.

use std::future::Future;
use std::pin::Pin;

/// A boxed `Send` future, the shape every async tool and hook is erased to.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool's or hook's answer: ready now (sync code, no allocation) or a future (async code).
pub(crate) enum Invoke<'a, T> {
    Ready(T),
    Pending(BoxFuture<'a, T>),
}
