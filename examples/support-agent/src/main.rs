//! The support agent's command line: `cargo run -p toolgate-support-agent -- --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = support_agent::cli::run(
        std::env::args_os().skip(1),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(code)
}
