//! The database stores, one file each, beside the in-memory ones' tests in
//! `tests/runtime/stores.rs`: each passes the conformance suite every store passes, keeps what it
//! recorded across a reopen, and holds its promises when several processes share it or one dies.

#[path = "../support/mod.rs"]
mod support;

mod sqlite;
mod sqlite_inbox;
