//! The program's exit codes, one set for every mode that ends it (a replay, `--resume`, `--live`,
//! `--what-if`, `--schemas`, `--help`); `cli.rs` returns what the mode it ran returned.

/// Every transcript replayed as expected (or `--schemas`, `--help`).
pub const EXIT_OK: u8 = 0;
/// The replay finished, but an outcome differed from the transcript's expected one, the agent
/// halted, or the output could not be written.
pub const EXIT_FAILED: u8 = 1;
/// Nothing ran: a bad argument, or a transcript that is not JSON or not a transcript.
pub const EXIT_BAD_INPUT: u8 = 2;
