//! `toolgate`: the operator's command for a toolgate agent's audit trail, as a library: [`run`]
//! is the whole command (the binary `toolgate` calls it with the process's arguments), so a
//! program that ends by checking and drawing its own trail (the support agent does) runs the
//! very command an operator would type, and prints what it prints.
//!
//! ```text
//! toolgate audit verify DIR        check the hash chain (exit 0 verifies, 1 broken, 2 bad input)
//! toolgate audit report DIR        the HTML report: outcomes, people in the loop, customers, rules, latency
//! toolgate audit tail DIR -f       one line per call, following new lines (rotation included)
//! toolgate audit stats DIR         counts per outcome, rule, tool and user (--json)
//! toolgate inbox SOURCE --listen ADDR --policy FILE [--tokens FILE]   the approval inbox's page
//! toolgate completions SHELL       a completion script for bash, zsh, fish, powershell or elvish
//! ```
//!
//! `SOURCE` is the folder an [`AuditLog`](toolgate_core::audit::AuditLog) writes
//! (`audit_log.jsonl`, `session_summaries.jsonl` and their rotated files) or, with the
//! `postgres` feature (on by default), a PostgreSQL URL whose database a fleet's
//! `PostgresAuditSink` writes. Every command reads it with the library
//! (`toolgate_core::audit::{Trail, verify_audit_dir}`, `audit::report::Figures`) and shows it
//! itself: the page, the tables, the lines are the command's.
//!
//! | file | what it holds |
//! |---|---|
//! | `lib.rs` | the command: the subcommand run, the exit codes, the one way an error is printed |
//! | `main.rs` | the binary: [`run`] on the process's arguments |
//! | `args.rs` | the command tree (clap's builder API), the completion scripts |
//! | `source.rs` | `SOURCE`: an audit folder, checked, or a database exported to a temporary one |
//! | `database.rs` | a fleet's database: its URL as it may be shown, the read-only connection (feature `postgres`) |
//! | `verify.rs` | `audit verify`: the chain check, one line per chain, a progress bar on a long trail |
//! | `report/` | `audit report`: the command (`mod.rs`), the page (`html.rs`), its charts (`svg.rs`), text made safe for it (`escape.rs`) |
//! | `stats/` | `audit stats`: the command (`mod.rs`), the counts as aligned tables or JSON (`print.rs`) |
//! | `inbox.rs` | `inbox`: the approval inbox's page (the crate `toolgate-inbox`) on SOURCE's store, its sign-in tokens (feature `inbox`) |
//! | `tail/` | `audit tail`: the command (`mod.rs`), one readable line per call and the filters (`line.rs`), a file followed as `tail -F` does (`follow.rs`) |

mod args;
mod database;
#[cfg(feature = "inbox")]
mod inbox;
mod report;
mod source;
mod stats;
mod tail;
mod verify;

use std::ffi::OsString;
use std::io::Write;

/// Done: the chain verifies, the report is written, the lines are shown.
pub const EXIT_OK: u8 = 0;
/// The hash chain is broken (`audit verify`), or the output could not be written.
pub const EXIT_FAILED: u8 = 1;
/// The command could not run: a usage error, a folder that is missing or holds no audit files,
/// a line that is not an audit line or is cut short, a file that cannot be read, a database that
/// cannot be reached or holds no toolgate tables.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Parses `argv` (the program's name first, as `std::env::args_os` gives it: `["toolgate",
/// "audit", "verify", "data"]`) and runs its command, writing what the command prints to `out`
/// and its errors (`toolgate: error: …`, clap's usage errors) to `err`; the exit code
/// ([`EXIT_OK`], [`EXIT_FAILED`], [`EXIT_BAD_INPUT`]), which the binary exits with. `--help` and
/// `--version` write to `out` and give [`EXIT_OK`]. Nothing panics on bad input: every refusal
/// is a line on `err` and [`EXIT_BAD_INPUT`].
pub fn run(
    argv: impl IntoIterator<Item = OsString>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let matches = match args::command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            // `--help` and `--version` print to standard output and succeed.
            let text = e.render().to_string();
            return if e.use_stderr() {
                let _ = err.write_all(text.as_bytes());
                EXIT_BAD_INPUT
            } else {
                match out.write_all(text.as_bytes()) {
                    Ok(()) => EXIT_OK,
                    Err(_) => EXIT_FAILED,
                }
            };
        }
    };
    match matches.subcommand() {
        Some(("audit", audit)) => match audit.subcommand() {
            Some(("verify", m)) => verify::run(m, out, err),
            Some(("report", m)) => report::run(m, out, err),
            Some(("tail", m)) => tail::run(m, out, err),
            Some(("stats", m)) => stats::run(m, out, err),
            _ => unreachable!("clap requires an audit subcommand"),
        },
        #[cfg(feature = "inbox")]
        Some(("inbox", m)) => inbox::run(m, out, err),
        Some(("completions", m)) => args::completions(m, out, err),
        _ => unreachable!("clap requires a subcommand"),
    }
}

/// Writes `toolgate: error: MESSAGE` to `err`, MESSAGE through `printable` (a path or a line's
/// text quoted in it cannot start a second line or drive the terminal); `code`.
pub(crate) fn fail(err: &mut dyn Write, message: impl std::fmt::Display, code: u8) -> u8 {
    let message = message.to_string();
    let _ = writeln!(
        err,
        "toolgate: error: {}",
        toolgate_core::audit::printable(&message)
    );
    code
}
