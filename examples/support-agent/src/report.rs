//! `--report DIR`: one self-contained HTML page from the audit files of `DIR` (rotated ones
//! included, oldest first), drawn by `toolgate::audit::report`, the code the `toolgate audit
//! report` command runs: calls per outcome per day, the people in the loop (who approved or
//! declined what, how long each waited, what still waits and when it expires), each customer's
//! calls, blocks and refunds, each rule's denials and asks per day, latency distributions per
//! rule and per tool, the latest halts, token usage, and whether the hash chain verifies.

use std::io::Write;
use std::path::Path;

use toolgate::audit::report::{
    ChainSummary, Figures, ReportOptions, Trail, TrailError, render_html,
};

use super::cli::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};

/// The report's file name inside `DIR`.
pub const REPORT_FILE: &str = "report.html";

/// The support agent's tools counted per customer: its refunds.
pub const COUNTED_TOOLS: [&str; 1] = ["issue_refund"];

/// `--report DIR`: writes `DIR/report.html` and prints its path. `--report URL` (a
/// `postgres://` URL): the database's chains exported to a temporary folder, the page written
/// to `report.html` in the current folder, titled with the URL (its password hidden).
pub fn run(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let Some(url) = super::state::database_url(dir) else {
        return run_in(dir, dir, &dir.display().to_string(), out, err);
    };
    let export = std::env::temp_dir().join(format!(
        "support-agent-report-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    if let Err(e) = super::state::trail::export(url, &export) {
        let _ = std::fs::remove_dir_all(&export);
        let _ = writeln!(err, "error: --report: {e}");
        return if cfg!(feature = "postgres") {
            EXIT_FAILED
        } else {
            EXIT_BAD_INPUT
        };
    }
    let label = shown(url);
    let code = run_in(&export, Path::new("."), &label, out, err);
    let _ = std::fs::remove_dir_all(&export);
    code
}

/// `url` with its password hidden.
fn shown(url: &str) -> String {
    #[cfg(feature = "postgres")]
    return toolgate::store::postgres::shown_settings(url);
    #[cfg(not(feature = "postgres"))]
    url.to_owned()
}

/// The page of the trail in `dir`, written to `to/report.html`, titled `label`.
fn run_in(dir: &Path, to: &Path, label: &str, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let trail = match Trail::read_dir(dir) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(err, "error: --report: {e}");
            return match e {
                TrailError::Read { .. } => EXIT_FAILED,
                _ => EXIT_BAD_INPUT,
            };
        }
    };
    let chain = match toolgate::audit::verify_audit_dir(dir) {
        Ok(v) => ChainSummary::of(&v),
        Err(e) => {
            let _ = writeln!(err, "error: --report: {e}");
            return EXIT_FAILED;
        }
    };
    let mut options = ReportOptions::default();
    options.count_tools = COUNTED_TOOLS.map(str::to_owned).to_vec();
    let figures = Figures::of(&trail, &options);
    let path = to.join(REPORT_FILE);
    let page = render_html(label, &figures, Some(&chain));
    if let Err(e) = std::fs::write(&path, page) {
        let _ = writeln!(
            err,
            "error: --report: cannot write `{}`: {e}",
            path.display()
        );
        return EXIT_FAILED;
    }
    match writeln!(
        out,
        "report: {} ({} calls, chain {})",
        path.display(),
        figures.calls,
        if chain.ok { "verifies" } else { "broken" }
    ) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_FAILED,
    }
}
