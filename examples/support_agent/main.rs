//! A customer-support agent replaying real Messages API transcripts through toolgate's hooks.
//!
//! `cargo run --example support_agent` replays every bundled transcript
//! (`tests/fixtures/support/*.json`) and prints one line per tool call: the tool, its input,
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
//! - `agent.rs`: the two specialists (one registry, filtered) and the replay of a transcript;
//! - `transcript.rs`: the bundled transcripts, reading and checking a transcript file;
//! - `output.rs`: the `#[post_hook]` observer and what is printed;
//! - `approval.rs`: pending turns written for a person, and `--resume` with their decision;
//! - `worker.rs`: `--worker`, the turns people decided in the store's approval inbox resumed as
//!   they become ready;
//! - `live.rs`: `--live`, the conversation with the model over the Messages API;
//! - `http.rs`: the Messages API over HTTP (ureq), with its retries;
//! - `otel.rs`: `--otel` and `--otel-endpoint`, the spans printed by the SDK's stdout exporter or
//!   sent to a collector over OTLP/HTTP;
//! - `report.rs`: `--report DIR`, which names the `toolgate audit report` command line that
//!   draws the page;
//! - `what_if.rs`: `--what-if FILE`, today's rules (or changed ones) over a recorded audit log;
//! - `cli.rs`: the command line and exit codes.
//!
//! The integration test `tests/support_agent.rs` compiles these same files (it includes this
//! one as a module), so it exercises the very tools and hooks this program runs.

pub(crate) mod agent;
pub(crate) mod approval;
pub(crate) mod cli;
pub(crate) mod http;
pub(crate) mod ledger;
pub(crate) mod live;
pub(crate) mod otel;
pub(crate) mod output;
pub(crate) mod policy;
pub(crate) mod report;
pub(crate) mod seed;
pub(crate) mod state;
pub(crate) mod tools;
pub(crate) mod transcript;
pub(crate) mod what_if;
pub(crate) mod worker;

use std::process::ExitCode;

/// The module path every tool, hook and observer of the agent is registered under: the
/// specialists are built from it (`Dispatcher::builder().registered_under(AGENT_PATH)`).
pub(crate) const AGENT_PATH: &str = module_path!();

fn main() -> ExitCode {
    let code = cli::run(
        std::env::args_os().skip(1),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(code)
}
