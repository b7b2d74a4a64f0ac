//! `--report DIR|URL`: the page is the `toolgate` command's (`toolgate audit report`), which
//! draws it from the same trail; this flag says so and runs nothing.

use std::io::Write;
use std::path::Path;

use super::cli::EXIT_BAD_INPUT;

/// `--report DIR`: the `toolgate` command line that writes the page this flag wrote
/// (`DIR/report.html`, the refunds counted per customer) on standard error; exit 2. A
/// `postgres://` URL is not repeated (it may hold a password): the line says `URL`.
pub(crate) fn run(dir: &Path, err: &mut dyn Write) -> u8 {
    let command = match super::state::database_url(dir) {
        Some(_) => "toolgate audit report URL -o report.html".to_owned(),
        None => format!(
            "toolgate audit report {} -o {}",
            dir.display(),
            dir.join("report.html").display()
        ),
    };
    let _ = writeln!(
        err,
        "error: --report: the report is the `toolgate` command's now: {command} --count-tool \
         issue_refund (cargo install --path cli; docs/toolgate-command.md)"
    );
    EXIT_BAD_INPUT
}
