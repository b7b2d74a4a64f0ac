//! `toolgate audit report DIR`: the HTML page.

mod escape;
mod html;
mod svg;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ArgMatches;
use toolgate_core::audit::report::{Figures, ReportOptions};
use toolgate_core::audit::{Rfc3339, Trail, verify_audit_dir};

use crate::report::html::render_html;
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail, source};

fn options(m: &ArgMatches) -> Result<ReportOptions, String> {
    let mut options = ReportOptions::default();
    if let Some(ttl) = m.get_one::<u64>("pending-ttl") {
        options.pending_ttl = Duration::from_secs(*ttl);
    }
    options.count_tools = m
        .get_many::<String>("count-tool")
        .map(|tools| tools.cloned().collect())
        .unwrap_or_default();
    if let Some(now) = m.get_one::<String>("now") {
        options.now = Rfc3339::parse(now).ok_or_else(|| {
            format!("--now `{now}` is not an RFC 3339 UTC time (2026-11-24T15:40:00Z)")
        })?;
    }
    Ok(options)
}

pub(crate) fn run(m: &ArgMatches, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (input, options) = match options(m).and_then(|o| Ok((source::input(m)?, o))) {
        Ok(v) => v,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let dir = &input.dir;
    let trail = match Trail::read_dir(dir) {
        Ok(t) => t,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    // A database's chains are checked on their export, byte for byte the database's lines.
    let chain = match verify_audit_dir(dir) {
        Ok(v) => v,
        Err(e) => return fail(err, e, EXIT_BAD_INPUT),
    };
    let figures = Figures::of(&trail, &options);
    let page = render_html(&input.label, &figures, Some(&chain));
    let output = m
        .get_one::<PathBuf>("output")
        .cloned()
        .unwrap_or_else(|| PathBuf::from("report.html"));
    if output == Path::new("-") {
        return match out.write_all(page.as_bytes()) {
            Ok(()) => EXIT_OK,
            Err(e) => fail(err, format!("cannot write: {e}"), EXIT_FAILED),
        };
    }
    if let Err(e) = std::fs::write(&output, page) {
        return fail(
            err,
            format!("cannot write `{}`: {e}", output.display()),
            EXIT_FAILED,
        );
    }
    let _ = writeln!(
        out,
        "report: {} ({} calls, chain {})",
        output.display(),
        figures.calls,
        if chain.is_ok() { "verifies" } else { "broken" }
    );
    if m.get_flag("open")
        && let Err(e) = open(&output)
    {
        let _ = writeln!(
            err,
            "toolgate: warning: cannot open `{}` in a browser: {e}",
            output.display()
        );
    }
    EXIT_OK
}

/// Opens `page` with the desktop's handler for HTML files: `open` on macOS, `cmd /C start` on
/// Windows, `xdg-open` elsewhere (the freedesktop.org convention).
fn open(page: &Path) -> std::io::Result<()> {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    let status = command.arg(page).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the opener exited with {status}"
        )))
    }
}
