//! PostgreSQL (feature `postgres`): `PostgresStore` and `PostgresAuditSink` against a real
//! server (a throwaway one this binary starts, or `TOOLGATE_TEST_DATABASE_URL`:
//! `toolgate_test_support::postgres`), a fresh database per test. Worker processes are this binary run again (`worker.rs`), each
//! connecting to the test's database on its own, so the fleet, the resume races and the killed
//! worker are real processes sharing one database.
//!
//! Without a server (no PostgreSQL binaries, no `TOOLGATE_TEST_DATABASE_URL`) every test here
//! fails, saying how to get one.
#![cfg(feature = "postgres")]

#[path = "../support/mod.rs"]
mod support;

// The throwaway server, shared with the other packages' tests and benches/postgres.rs.
use toolgate_test_support::postgres as server;

mod agent;
mod audit;
mod cuts;
mod drops;
mod fleet;
mod inbox;
mod leases;
mod proxy;
mod sealed;
mod stores;
mod worker;
