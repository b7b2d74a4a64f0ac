//! `toolgate audit verify DIR`: the chain check, one line per chain.

use std::io::Write;

use clap::ArgMatches;
use toolgate_core::audit::report::ChainSummary;
use toolgate_core::audit::verify_audit_dir;

use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail, source};

pub(crate) fn run(m: &ArgMatches, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let dir = match source::audit_folder(m) {
        Ok(d) => d,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let verified = match verify_audit_dir(&dir) {
        Ok(v) => v,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let summary = ChainSummary::of(&verified);
    match write!(out, "{summary}") {
        Ok(()) if summary.ok => EXIT_OK,
        Ok(()) => EXIT_FAILED,
        Err(e) => fail(err, format!("cannot write: {e}"), EXIT_FAILED),
    }
}
