//! The dispatcher: built once from tools and hooks ([`DispatcherBuilder`](crate::DispatcherBuilder)),
//! checked at start-up, shared by every session.

pub(crate) mod builder;
pub(crate) mod dispatcher;
pub(crate) mod examples;
