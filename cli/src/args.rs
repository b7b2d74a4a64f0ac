//! The command tree, built with clap's builder API (no derive: no proc-macro crate to build).

use std::io::Write;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};
use clap_complete::Shell;

use crate::{EXIT_BAD_INPUT, EXIT_OK, fail};

const EXIT_CODES: &str = "Exit codes:
  0  done (the chain verifies, the report is written, the lines are shown)
  1  the hash chain is broken (audit verify), or the output could not be written
  2  the command could not run: a usage error, a missing folder or one with no audit files,
     a line that is not an audit line or is cut short, a file that cannot be read, a database
     that cannot be reached or holds no toolgate tables";

fn source() -> Arg {
    Arg::new("dir")
        .value_name("SOURCE")
        .help(
            "The audit folder (audit_log.jsonl, session_summaries.jsonl and their rotated files), \
             or a PostgreSQL URL (postgres://user@host/dbname) a fleet's audit sink writes",
        )
        .required(true)
        .value_parser(value_parser!(std::ffi::OsString))
}

fn filters(command: Command) -> Command {
    command
        .arg(
            Arg::new("outcome")
                .long("outcome")
                .value_name("OUTCOME")
                .help(
                    "Only calls with this outcome (ok, blocked, awaiting_approval, hook_failed, …)",
                ),
        )
        .arg(
            Arg::new("user")
                .long("user")
                .value_name("USER_ID")
                .help("Only this user's calls"),
        )
        .arg(
            Arg::new("tool")
                .long("tool")
                .value_name("TOOL")
                .help("Only calls of this tool"),
        )
        .arg(
            Arg::new("session")
                .long("session")
                .value_name("SESSION_ID")
                .help("Only this session's calls"),
        )
}

fn verify() -> Command {
    Command::new("verify")
        .about("Check the hash chain of the audit files: one line per chain")
        .long_about(
            "Check the hash chain of the audit files (rotated ones included, oldest first): one \
             line per chain, `ok, N lines, last hash H`, or `broken:` naming the first line at \
             fault (edited, deleted, inserted or reordered).",
        )
        .arg(source())
        .after_help(format!(
            "Examples:\n  toolgate audit verify data/audit\n  toolgate audit verify postgres://agent@db.internal/agent\n\n{EXIT_CODES}"
        ))
}

fn report() -> Command {
    Command::new("report")
        .about("Write the HTML report: outcomes, people in the loop, customers, rules, latency")
        .arg(source())
        .arg(
            Arg::new("output")
                .short('o')
                .long("output")
                .value_name("FILE")
                .default_value("report.html")
                .value_parser(value_parser!(PathBuf))
                .help("Where to write the page (`-` for standard output)"),
        )
        .arg(
            Arg::new("open")
                .long("open")
                .action(ArgAction::SetTrue)
                .help("Open the page in the desktop's browser once written"),
        )
        .arg(
            Arg::new("pending-ttl")
                .long("pending-ttl")
                .value_name("SECONDS")
                .default_value("86400")
                .value_parser(value_parser!(u64))
                .help("The agent's pending_ttl: when a waiting call expires"),
        )
        .arg(
            Arg::new("count-tool")
                .long("count-tool")
                .value_name("TOOL")
                .action(ArgAction::Append)
                .help("Count this tool's ok calls per customer in a column of its own (repeatable)"),
        )
        .arg(
            Arg::new("now")
                .long("now")
                .value_name("RFC3339")
                .help("Compare expiries with this instant instead of the clock (a reproducible page)"),
        )
        .after_help(format!(
            "Example:\n  toolgate audit report data/audit -o report.html --count-tool issue_refund --open\n\n\
             {EXIT_CODES}"
        ))
}

fn tail() -> Command {
    filters(
        Command::new("tail")
            .about("Show one line per call: time, outcome, tool, user, duration, rule, session")
            .arg(source())
            .arg(
                Arg::new("follow")
                    .short('f')
                    .long("follow")
                    .action(ArgAction::SetTrue)
                    .help("Keep showing lines as they are appended (a rotated file is followed into the new one)"),
            )
            .arg(
                Arg::new("lines")
                    .short('n')
                    .long("lines")
                    .value_name("N")
                    .default_value("10")
                    .value_parser(value_parser!(usize))
                    .help("Show the last N matching lines first"),
            )
            .arg(
                Arg::new("json")
                    .long("json")
                    .action(ArgAction::SetTrue)
                    .help("Print each matching line as written (its JSON)"),
            )
            .arg(
                Arg::new("color")
                    .long("color")
                    .value_name("WHEN")
                    .value_parser(["auto", "always", "never"])
                    .default_value("auto")
                    .help("Colour the outcome: auto (on a terminal, unless NO_COLOR is set), always, never"),
            ),
    )
    .after_help(format!(
        "Examples:\n  toolgate audit tail data/audit -f --outcome blocked\n  \
         toolgate audit tail data/audit -n 100 --user u_004 --json\n\n{EXIT_CODES}"
    ))
}

fn stats() -> Command {
    filters(
        Command::new("stats")
            .about("Count calls per outcome, rule, tool and user")
            .arg(source())
            .arg(
                Arg::new("json")
                    .long("json")
                    .action(ArgAction::SetTrue)
                    .help("Print the counts as one JSON object"),
            ),
    )
    .after_help(format!(
        "Examples:\n  toolgate audit stats data/audit\n  toolgate audit stats data/audit --tool issue_refund --json\n\n\
         {EXIT_CODES}"
    ))
}

#[cfg(feature = "inbox")]
fn inbox() -> Command {
    Command::new("inbox")
        .about("Serve the approval inbox's page: people decide the paused calls of a store")
        .long_about(
            "Serve the approval inbox's page on the store of SOURCE (the SQLite file an agent \
             keeps its paused turns in, or a PostgreSQL URL): the waiting calls, each turn with \
             its inputs, and the forms to approve, edit or decline them, for the people the \
             policy allows. Without --tokens or --trusted-proxy it listens on loopback only, and \
             every request is the one local person (--local-user).",
        )
        .arg(
            Arg::new("source")
                .value_name("SOURCE")
                .help("The agent's SQLite file (its --out-dir's state.sqlite) or a PostgreSQL URL")
                .required_unless_present("new-token")
                .value_parser(value_parser!(std::ffi::OsString)),
        )
        .arg(
            Arg::new("listen")
                .long("listen")
                .value_name("ADDR")
                .default_value("127.0.0.1:8080")
                .help("The address and port to listen on"),
        )
        .arg(
            Arg::new("policy")
                .long("policy")
                .value_name("FILE")
                .required_unless_present("new-token")
                .value_parser(value_parser!(PathBuf))
                .help("Who may approve, edit or decline which tools (TOML; docs/inbox.md)"),
        )
        .args(sign_in_args())
        .arg(
            Arg::new("public-url")
                .long("public-url")
                .value_name("URL")
                .help("The URL people open, when it is not http://ADDR (behind a proxy, https)"),
        )
        .arg(
            Arg::new("audit-dir")
                .long("audit-dir")
                .value_name("DIR")
                .value_parser(value_parser!(PathBuf))
                .help("An SQLite store's decisions.jsonl goes here (default: the file's folder)"),
        )
        .args(new_token_args())
        .after_help(format!(
            "Examples:\n  toolgate inbox --new-token lead@example.com --group support-leads >> tokens.toml\n  \
             toolgate inbox data/state.sqlite --listen 127.0.0.1:8080 --tokens tokens.toml --policy policy.toml\n  \
             toolgate inbox postgres://inbox@db/agent --listen 10.0.0.5:8080 --trusted-proxy 10.0.0.2 \
             --public-url https://inbox.example.com --policy policy.toml\n\n{EXIT_CODES}"
        ))
}

/// How people sign in to `toolgate inbox`: tokens, a trusted proxy's headers, or the one local
/// person.
#[cfg(feature = "inbox")]
fn sign_in_args() -> [Arg; 6] {
    [
        Arg::new("tokens")
            .long("tokens")
            .value_name("FILE")
            .value_parser(value_parser!(PathBuf))
            .help("Sign in with per-person tokens: the tokens file (TOML of [[person]])"),
        Arg::new("trusted-proxy")
            .long("trusted-proxy")
            .value_name("IP")
            .action(ArgAction::Append)
            .help("Take the identity from a reverse proxy's header, from this address only (repeatable)"),
        Arg::new("identity-header")
            .long("identity-header")
            .value_name("NAME")
            .requires("trusted-proxy")
            .help("The proxy's header with the person's id (default X-Forwarded-Email)"),
        Arg::new("groups-header")
            .long("groups-header")
            .value_name("NAME")
            .requires("trusted-proxy")
            .help("The proxy's header with their groups, comma-separated (default X-Forwarded-Groups)"),
        Arg::new("local-user")
            .long("local-user")
            .value_name("ID")
            .conflicts_with_all(["tokens", "trusted-proxy"])
            .help("Without sign-in: who decides (default: $USER)"),
        Arg::new("local-group")
            .long("local-group")
            .value_name("GROUP")
            .action(ArgAction::Append)
            .conflicts_with_all(["tokens", "trusted-proxy"])
            .help("Without sign-in: a group of the local person (repeatable)"),
    ]
}

/// `toolgate inbox --new-token ID [--group GROUP]...`: a new sign-in token and its entry.
#[cfg(feature = "inbox")]
fn new_token_args() -> [Arg; 2] {
    [
        Arg::new("new-token")
            .long("new-token")
            .value_name("ID")
            .conflicts_with_all(["tokens", "trusted-proxy", "local-user"])
            .help("Print a new sign-in token for ID and its entry for the tokens file, then exit"),
        Arg::new("group")
            .long("group")
            .value_name("GROUP")
            .action(ArgAction::Append)
            .requires("new-token")
            .help("With --new-token: a group of the person (repeatable)"),
    ]
}

/// The whole command tree.
pub(crate) fn command() -> Command {
    let command = Command::new("toolgate")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Verify, report on, tail and count a toolgate agent's audit trail; serve its approval inbox")
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(
            Command::new("audit")
                .about("Read an audit folder: verify, report, tail, stats")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(verify())
                .subcommand(report())
                .subcommand(tail())
                .subcommand(stats())
                .after_help(format!(
                    "Examples:\n  toolgate audit verify data/audit\n  toolgate audit report \
                     data/audit -o report.html\n  toolgate audit tail data/audit -f --outcome \
                     blocked\n  toolgate audit stats data/audit --json\n\n{EXIT_CODES}"
                )),
        );
    #[cfg(feature = "inbox")]
    let command = command.subcommand(inbox());
    command
        .subcommand(
            Command::new("completions")
                .about("Print a shell completion script")
                .arg(
                    Arg::new("shell")
                        .value_name("SHELL")
                        .required(true)
                        .value_parser(value_parser!(Shell))
                        .help("bash, zsh, fish, powershell or elvish"),
                )
                .after_help(
                    "Example:\n  toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate",
                ),
        )
        .after_help(format!(
            "Examples:\n  toolgate audit verify data/audit\n  toolgate audit tail data/audit -f\n\n{EXIT_CODES}"
        ))
}

/// `toolgate completions SHELL`: the script on standard output.
pub(crate) fn completions(m: &ArgMatches, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let Some(shell) = m.get_one::<Shell>("shell").copied() else {
        return fail(err, "completions needs a shell", EXIT_BAD_INPUT);
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut command(), "toolgate", &mut buf);
    match out.write_all(&buf) {
        Ok(()) => EXIT_OK,
        Err(e) => fail(
            err,
            format!("cannot write the script: {e}"),
            crate::EXIT_FAILED,
        ),
    }
}
