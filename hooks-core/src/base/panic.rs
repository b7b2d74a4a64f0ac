//! Caught panics: a panic in a hook, a tool, a timer or any other user code becomes a result or
//! a halt (fail closed), never an unwind out of the pipeline. Needs `panic = "unwind"`.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::base::future::BoxFuture;

/// Runs `f`, turning a panic into `Err(panic message)`.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(take_panic)
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
            Err(payload) => Poll::Ready(Err(take_panic(payload))),
        }
    }
}

/// The text of a panic payload, for the operator; the payload is then disposed of without
/// letting a panic in its own `drop` escape (a payload whose drop panics is leaked: unwinding
/// out of the pipeline would leave a `tool_use` unanswered).
pub(crate) fn take_panic(payload: Box<dyn Any + Send>) -> String {
    let message = panic_message(payload.as_ref());
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
    message
}

/// The text of a panic payload (`&str` or `String`), for the operator.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}
