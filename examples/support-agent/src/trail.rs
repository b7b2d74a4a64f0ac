//! The end of a replay: the audit trail it appended to, checked and drawn by the `toolgate`
//! command's own code ([`toolgate_cli::run`]), as an operator would type it: `toolgate audit
//! verify SOURCE`, then `toolgate audit report SOURCE -o OUT-DIR/report.html --count-tool
//! issue_refund`. What the command prints is printed as it is, each run under its command line.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use crate::exit::{EXIT_FAILED, EXIT_OK};
use crate::state::StoreKind;

/// The page's file name in the output folder.
pub const REPORT_FILE: &str = "report.html";

/// Runs `toolgate audit verify` and `toolgate audit report` on the trail the run wrote (the
/// files in `out_dir`, or the database of `--database-url`), each under a `$ toolgate …` line
/// (a database's URL shown as `DATABASE_URL`: it may hold a password); the report is written to
/// `out_dir/report.html`. [`EXIT_OK`] when the chain verifies and the page is written;
/// [`EXIT_FAILED`] otherwise (the command's own error lines say why).
pub fn check_and_draw(
    store: &StoreKind,
    out_dir: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let (source, shown): (OsString, String) = match store {
        StoreKind::Postgres(url) => (url.into(), "DATABASE_URL".to_owned()),
        _ => (out_dir.into(), out_dir.display().to_string()),
    };
    let page = out_dir.join(REPORT_FILE);
    let verify: Vec<OsString> = vec!["audit".into(), "verify".into(), source.clone()];
    let report: Vec<OsString> = vec![
        "audit".into(),
        "report".into(),
        source,
        "-o".into(),
        page.clone().into(),
        "--count-tool".into(),
        "issue_refund".into(),
    ];
    let runs = [
        (format!("toolgate audit verify {shown}"), verify),
        (
            format!(
                "toolgate audit report {shown} -o {} --count-tool issue_refund",
                page.display()
            ),
            report,
        ),
    ];
    for (line, args) in runs {
        if writeln!(out, "$ {line}").is_err() {
            return EXIT_FAILED;
        }
        let argv = std::iter::once(OsString::from("toolgate")).chain(args);
        if toolgate_cli::run(argv, out, err) != toolgate_cli::EXIT_OK {
            return EXIT_FAILED;
        }
    }
    EXIT_OK
}
