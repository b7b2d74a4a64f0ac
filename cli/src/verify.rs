//! `toolgate audit verify SOURCE`: the chain check, one line per chain.

use std::io::Write;

use clap::ArgMatches;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use toolgate_core::audit::{
    AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE, chain_files, verify_audit_dir_with_progress,
};

use crate::database;
use crate::source::{self, Source};
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail};

pub(crate) fn run(m: &ArgMatches, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if let Source::Database(url) = source::source(m) {
        return database(&url, out, err);
    }
    let input = match source::input(m) {
        Ok(i) => i,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let bar = progress_bar(&input.dir);
    let verified = verify_audit_dir_with_progress(&input.dir, &|bytes| bar.inc(bytes));
    bar.finish_and_clear();
    let verified = match verified {
        Ok(v) => v,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    written(write!(out, "{verified}"), verified.is_ok(), err)
}

/// Trails smaller than this are checked without a bar (about 3 000 lines of 350 bytes).
const BAR_FROM_BYTES: u64 = 1024 * 1024;

/// A bar over the chains' bytes on standard error, drawn only on a terminal and for a trail of
/// at least [`BAR_FROM_BYTES`]; hidden (every call a no-op) otherwise.
fn progress_bar(dir: &std::path::Path) -> ProgressBar {
    let total: u64 = [AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE]
        .iter()
        // A folder that cannot be listed gets no bar; the check names it.
        .filter_map(|name| chain_files(dir, name).ok())
        .flatten()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    if total < BAR_FROM_BYTES {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "verifying {bar:40} {binary_bytes}/{binary_total_bytes} ({eta} left)",
    ) {
        bar.set_style(style);
    }
    bar
}

fn written(result: std::io::Result<()>, ok: bool, err: &mut dyn Write) -> u8 {
    match result {
        Ok(()) if ok => EXIT_OK,
        Ok(()) => EXIT_FAILED,
        Err(e) => fail(err, format!("cannot write: {e}"), EXIT_FAILED),
    }
}

/// The database's two chains, checked where they are (a read-only connection), one line each:
/// `audit_log: ok, N lines, last hash H`, or the first line at fault.
#[cfg(feature = "postgres")]
fn database(url: &str, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let store = match database::connect(url) {
        Ok(s) => s,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let verdict = match toolgate_core::block_on(store.audit_sink().verify(None)) {
        Ok(v) => v,
        Err(e) => {
            return fail(
                err,
                format!("{}: {e}", database::shown(url)),
                EXIT_BAD_INPUT,
            );
        }
    };
    let ok = verdict.is_ok();
    let text = verdict.to_string();
    written(out.write_all(text.as_bytes()), ok, err)
}

#[cfg(not(feature = "postgres"))]
fn database(url: &str, _out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    fail(err, database::without_postgres(url), EXIT_BAD_INPUT)
}
