//! The `toolgate` binary: [`toolgate_cli::run`] on the process's arguments, standard output and
//! standard error; its exit code is the process's.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    ExitCode::from(toolgate_cli::run(std::env::args_os(), &mut out, &mut err))
}
