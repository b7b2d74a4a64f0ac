//! A customer-support agent replaying real Messages API transcripts through toolgate's hooks.
//!
//! `cargo run -p toolgate-support-agent` replays every bundled transcript
//! (`transcripts/*.json`) and prints one line per tool call: the tool, its input,
//! what the hooks decided and the result. It needs no network and no API key: the assistant
//! messages are recorded, the tools answer from seed data. `--help` lists the options;
//! `--live` talks to the model instead (see `live.rs`).
//!
//! The files, one concern each:
//! - `seed.rs`: customers, orders and FAQ entries;
//! - `ledger.rs`: the refund ledger (`State<Ledger>`, async), one per store, its totals the
//!   customer's and the order's across conversations; ISO weeks; its stores in `ledger/`
//!   (`memory.rs`, `sqlite.rs`, `postgres.rs`);
//! - `state.rs`: where the answer memory, the paused turns and the ledger are kept (the SQLite
//!   file `<out-dir>/state.sqlite` by default, or memory);
//! - `tools.rs`: the six `#[tool]` functions;
//! - `policy.rs`: the six `#[pre_hook]` rules;
//! - `specialist.rs`: the two specialists, each a subset of the tools;
//! - `agent.rs`: a specialist built (one registry, filtered) and the replay of a transcript;
//! - `transcript.rs`: the bundled transcripts, reading and checking a transcript file;
//! - `observer.rs`: the `#[post_hook]` observer that keeps what happened to each call;
//! - `output.rs`: what is printed;
//! - `trail.rs`: the end of a replay, its audit trail checked and drawn by the `toolgate`
//!   command's own code (`audit verify`, `audit report`);
//! - `approval.rs`: pending turns written for a person, and `--resume` with their decision;
//! - `worker.rs`: `--worker`, the turns people decided in the store's approval inbox resumed as
//!   they become ready;
//! - `live.rs`: `--live`, the conversation with the model over the Messages API;
//! - `http.rs`: the Messages API over HTTP (ureq), with its retries;
//! - `otel.rs`: `--otel` and `--otel-endpoint`, the spans printed by the SDK's stdout exporter or
//!   sent to a collector over OTLP/HTTP;
//! - `what_if.rs`: `--what-if FILE`, today's rules (or changed ones) over a recorded audit log;
//! - `cli.rs`: the command line;
//! - `exit.rs`: the exit codes every mode returns;
//! - `mcp_server.rs` (feature `mcp`): the refunds specialist served over MCP, the
//!   `mcp_server` binary's options, server and, with `mcp-http`, its streamable HTTP transport.
//!
//! These files are the package's library, `support_agent` (the module path every tool and hook
//! is registered under); the binaries `support_agent` (`src/main.rs`) and `mcp_server`
//! (`src/bin/mcp_server.rs`) and the tests (`tests/`) use the very tools and hooks it holds.

pub mod agent;
pub mod approval;
pub mod cli;
pub mod exit;
pub mod http;
pub mod ledger;
pub mod live;
pub mod observer;
pub mod otel;
pub mod output;
pub mod policy;
pub mod seed;
pub mod specialist;
pub mod state;
pub mod tools;
pub mod trail;
pub mod transcript;
pub mod what_if;
pub mod worker;

#[cfg(feature = "mcp")]
pub mod mcp_server;

/// The module path every tool, hook and observer of the agent is registered under: the
/// specialists are built from it (`Dispatcher::builder().registered_under(AGENT_PATH)`).
pub const AGENT_PATH: &str = module_path!();

/// `docs/opentelemetry.md`'s code (a host's OTLP exporter), compiled as a doctest with this
/// package's dependencies (`cargo test --doc`): toolgate depends on no exporter, this package
/// does.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/opentelemetry.md")]
pub struct OpenTelemetryGuide;
