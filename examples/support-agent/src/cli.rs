//! The command line: parsing the arguments by hand (a few flags need no parser crate), and
//! [`run`], which the binary and the integration test both call.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use toolgate::{
    audit::{AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE},
    provider::Provider,
};

use super::agent::{self, Agent};
use super::approval::{self, ResumeArgs};
use super::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use super::live::{self, LiveArgs};
use super::otel::{self, Otel};
use super::output;
use super::specialist::Specialist;
use super::state::{State, StoreKind};
use super::transcript::{self, Transcript};
use super::what_if::{self, RuleChanges};
use super::worker::{self, WorkerArgs};

/// The default `--out-dir`.
pub const DEFAULT_OUT_DIR: &str = "data";

const HELP: &str = "\
Replays customer-support transcripts (assistant messages as the Messages API returns them)
through the support agent's tools and hooks.

usage:
  support_agent [--transcript FILE]... [--json] [--out-dir DIR] [--store sqlite|memory]
                [--database-url URL] [--otel] [--otel-endpoint URL]
  support_agent --schemas [--specialist refunds|triage] [--provider NAME]
  support_agent --what-if FILE [--weekly-refund-limit CENTS] [--specialist refunds|triage]
  support_agent --resume FILE (--approve ID [--by WHO] | --deny ID --reason TEXT) [--now TIME]
                [--json] [--out-dir DIR] [--store sqlite|memory] [--database-url URL]
  support_agent --worker [--once] [--out-dir DIR] [--store sqlite] [--database-url URL]
  support_agent --live --user ID --tier free|premium [--say TEXT]... [--specialist NAME]
                [--model NAME] [--base-url URL] [--max-turns N] [--max-tokens N] [--by WHO]
                [--out-dir DIR] [--store sqlite|memory] [--database-url URL] [--otel]
                [--otel-endpoint URL]

  (no option)          replay every bundled transcript; one readable line per tool call
  --transcript FILE    replay that file only (repeatable: those files, in order, one process
                       serving several conversations)
  --json               print only the user message answering each assistant message, one JSON
                       line each
  --out-dir DIR        append audit_log.jsonl and session_summaries.jsonl there (default: data)
  --store NAME         where the answer memory, the paused turns and the refund ledger are
                       kept: sqlite (default: DIR/state.sqlite, shared by every run in DIR)
                       or memory (this run only; paused turns in their files)
  --database-url URL   keep all of it in PostgreSQL instead (built with --features postgres),
                       the audit trail included (its toolgate_audit table; check it with
                       `toolgate audit verify URL`): every worker given the same URL is one
                       agent, and a call or a resume done by one is never done again by another
  --otel               also print each call's OpenTelemetry spans (execute_tool with a
                       pre_tool_use child per hook run), with the SDK's stdout exporter
  --otel-endpoint URL  also send the spans to an OpenTelemetry collector over OTLP/HTTP
                       (protobuf): URL the collector's base address, /v1/traces appended
                       (http://localhost:4318), or a URL whose path ends in /v1/traces, used
                       as given; the spans' service.name is OTEL_SERVICE_NAME when set,
                       else the service.name of OTEL_RESOURCE_ATTRIBUTES, else support_agent
  --schemas            print the specialist's tool definitions as one JSON array and exit
  --specialist NAME    with --schemas: refunds (default) or triage
  --provider NAME      with --schemas: anthropic (default), anthropic-strict, openai (Chat
                       Completions), openai-responses, gemini (functionDeclarations entries), mcp
  --what-if FILE       replay a recorded audit_log.jsonl through today's PreToolUse rules
                       (never the tools) and print every call they decide differently: allowed
                       → blocked, blocked → allowed, another rewrite, another blocking hook
  --weekly-refund-limit CENTS
                       with --what-if: try this weekly refund limit instead of 50000 cents
  --resume FILE        finish a turn paused for a person's approval (a replay writes it to
                       OUT-DIR/pending/SESSION/TURN.json) with one decision:
  --approve ID         approve the waiting tool_use ID (its rules run again, then the tool)
  --by WHO             who decided (default: operator)
  --deny ID            decline the waiting tool_use ID, with --reason TEXT for the model
  --now TIME           the resuming session's clock, RFC 3339 (default: when the turn paused);
                       a turn older than 24 hours expires and its calls are answered blocked
  --worker             resume the turns people decided in the store's approval inbox, as they
                       become ready (each waiting call decided, or expired: the model is told
                       so); one worker of a fleet resumes each turn. Polls until stopped
  --once               with --worker: resume what is ready now, then exit
  --live               talk to the model over the Messages API (key from ANTHROPIC_API_KEY):
                       each call prints its line and writes its audit line, as in a replay;
                       the summary counts the tokens used
  --user ID            with --live: the signed-in customer (the hooks' trusted context)
  --tier free|premium  with --live: the customer's tier (trusted context)
  --say TEXT           with --live: what the customer says (repeatable, in order); without it,
                       the lines typed at the terminal
  --specialist NAME    with --live: refunds (default) or triage
  --model NAME         with --live: the model (default claude-sonnet-5)
  --base-url URL       with --live: the API's address (default https://api.anthropic.com)
  --max-turns N        with --live: requests per thing the customer says (default 10)
  --max-tokens N       with --live: max_tokens per request (default 1024; doubled, up to 8192,
                       after a response cut at max_tokens)
  --now TIME           with --live, for tests: a fixed clock (RFC 3339, 2026-11-24T10:15:00Z)
  --session-id ID      with --live, for tests: the session id (default live-<start in ms>)
  --by WHO             with --live: who answers at the terminal when a rule asks a person about
                       a call (y approves, n REASON declines; default: operator); without a
                       terminal the turn pauses and is written for --resume
  --help               this text

The audit trail a run writes (DIR's files, or the database of --database-url) is checked and
drawn by the `toolgate` command: toolgate audit verify DIR|URL, toolgate audit report DIR|URL
--count-tool issue_refund (docs/toolgate-command.md).

exit codes: 0 all outcomes as expected (or every --live message got a final answer); 1 an
outcome differed (or the agent halted, output failed, the API refused or could not be reached);
2 a bad argument or transcript, or no API key for --live (nothing was run or written)";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `--help`.
    Help,
    /// `--schemas [--specialist NAME] [--provider NAME]`.
    Schemas(Specialist, Provider),
    /// `--what-if FILE [--weekly-refund-limit CENTS] [--specialist NAME]`.
    WhatIf(PathBuf, Specialist, RuleChanges),
    /// `--resume FILE …`: finish a paused turn.
    Resume(ResumeArgs),
    /// `--worker [--once] …`: resume the turns the inbox found ready.
    Worker(WorkerArgs),
    /// `--live …`.
    Live(LiveArgs, Otel),
    /// Replay transcripts.
    Replay {
        /// `--transcript FILE`, each given, in order; every bundled transcript when none is.
        transcripts: Vec<PathBuf>,
        /// `--json`.
        json: bool,
        /// `--out-dir DIR`.
        out_dir: PathBuf,
        /// `--store`.
        store: StoreKind,
        /// `--otel`, `--otel-endpoint URL`.
        otel: Otel,
    },
}

/// Parses the arguments (without the program name). `--name value` and `--name=value` both work;
/// each option may be given once.
pub fn parse_args<I>(args: I) -> Result<Command, String>
where
    I: IntoIterator<Item = OsString>,
{
    let mut transcripts: Vec<PathBuf> = Vec::new();
    let mut out_dir: Option<PathBuf> = None;
    let mut specialist: Option<Specialist> = None;
    let mut provider: Option<Provider> = None;
    let mut what_if: Option<PathBuf> = None;
    let mut weekly_limit: Option<u64> = None;
    let mut resume: Option<PathBuf> = None;
    let mut approve: Option<String> = None;
    let mut deny: Option<String> = None;
    let mut reason: Option<String> = None;
    let mut by: Option<String> = None;
    let mut now: Option<String> = None;
    let mut json = false;
    let mut otel = false;
    let mut otel_endpoint: Option<String> = None;
    let mut store: Option<StoreKind> = None;
    let mut schemas = false;
    let mut help = false;
    let mut live_flag = false;
    let mut worker_flag = false;
    let mut once = false;
    let mut said: Vec<String> = Vec::new();
    // --live's single-valued options, by name.
    let mut live_opts: BTreeMap<&'static str, String> = BTreeMap::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let Some(arg) = arg.to_str().map(str::to_owned) else {
            return Err(format!(
                "argument {} is not UTF-8 text",
                arg.to_string_lossy()
            ));
        };
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(OsString::from(v))),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<OsString, String> {
            match inline.clone().or_else(|| args.next()) {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(format!("{name} needs a value")),
            }
        };
        let flag = |seen: bool| -> Result<bool, String> {
            if inline.is_some() {
                return Err(format!("{name} takes no value"));
            }
            if seen {
                return Err(format!("{name} is given twice"));
            }
            Ok(true)
        };
        match name.as_str() {
            "--transcript" => transcripts.push(PathBuf::from(value("--transcript")?)),
            "--out-dir" if out_dir.is_none() => out_dir = Some(PathBuf::from(value("--out-dir")?)),
            "--specialist" if specialist.is_none() => {
                let v = value("--specialist")?;
                let v = v.to_string_lossy();
                specialist = Some(
                    Specialist::from_name(&v)
                        .ok_or_else(|| format!("--specialist {v}: expected refunds or triage"))?,
                );
            }
            "--provider" if provider.is_none() => {
                let v = value("--provider")?;
                let v = v.to_string_lossy();
                provider = Some(v.parse::<Provider>().map_err(|_| {
                    format!(
                        "--provider {v}: expected anthropic, anthropic-strict, openai, \
                         openai-responses, gemini or mcp"
                    )
                })?);
            }
            "--verify-audit" | "--report" => {
                let command = if name == "--report" {
                    "report DIR|URL --count-tool issue_refund"
                } else {
                    "verify DIR|URL"
                };
                return Err(format!(
                    "{name} is the toolgate command's: toolgate audit {command}"
                ));
            }
            "--what-if" if what_if.is_none() => what_if = Some(PathBuf::from(value("--what-if")?)),
            "--weekly-refund-limit" if weekly_limit.is_none() => {
                let v = value("--weekly-refund-limit")?;
                let v = v.to_string_lossy();
                weekly_limit = Some(v.parse::<u64>().map_err(|_| {
                    format!("--weekly-refund-limit {v}: expected a whole number of cents")
                })?);
            }
            "--resume" if resume.is_none() => resume = Some(PathBuf::from(value("--resume")?)),
            "--approve" if approve.is_none() => approve = Some(text(value("--approve")?)),
            "--deny" if deny.is_none() => deny = Some(text(value("--deny")?)),
            "--reason" if reason.is_none() => reason = Some(text(value("--reason")?)),
            "--by" if by.is_none() => by = Some(text(value("--by")?)),
            "--now" if now.is_none() => now = Some(text(value("--now")?)),
            "--store" | "--database-url" if store.is_some() => {
                let url_given = matches!(store, Some(StoreKind::Postgres(_)));
                return Err(if url_given == (name == "--database-url") {
                    format!("{name} is given twice")
                } else {
                    "--store and --database-url: give one (the database holds all the state)"
                        .to_owned()
                });
            }
            "--database-url" => {
                let url = text(value("--database-url")?);
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err(format!(
                        "--database-url {url}: expected a postgres:// or postgresql:// URL"
                    ));
                }
                // Refused before anything runs when the build cannot reach a database.
                if cfg!(not(feature = "postgres")) {
                    return Err(super::state::NO_POSTGRES.to_owned());
                }
                store = Some(StoreKind::Postgres(url));
            }
            "--store" => {
                let v = text(value("--store")?);
                store = Some(
                    StoreKind::from_name(&v)
                        .ok_or_else(|| format!("--store {v}: expected sqlite or memory"))?,
                );
            }
            "--otel-endpoint" if otel_endpoint.is_none() => {
                otel_endpoint = Some(otel::endpoint(&text(value("--otel-endpoint")?))?)
            }
            "--out-dir"
            | "--specialist"
            | "--provider"
            | "--what-if"
            | "--weekly-refund-limit"
            | "--resume"
            | "--approve"
            | "--deny"
            | "--reason"
            | "--by"
            | "--now"
            | "--otel-endpoint" => {
                return Err(format!("{name} is given twice"));
            }
            "--say" => said.push(value("--say")?.to_string_lossy().into_owned()),
            "--model" | "--base-url" | "--user" | "--tier" | "--max-turns" | "--max-tokens"
            | "--session-id" => {
                let key = LIVE_OPTIONS
                    .iter()
                    .copied()
                    .find(|o| *o == name)
                    .unwrap_or("--model");
                if live_opts.contains_key(key) {
                    return Err(format!("{name} is given twice"));
                }
                live_opts.insert(key, value(key)?.to_string_lossy().into_owned());
            }
            "--live" => live_flag = flag(live_flag)?,
            "--worker" => worker_flag = flag(worker_flag)?,
            "--once" => once = flag(once)?,
            "--json" => json = flag(json)?,
            "--otel" => otel = flag(otel)?,
            "--schemas" => schemas = flag(schemas)?,
            "--help" | "-h" => help = flag(help)?,
            _ => return Err(format!("unknown argument `{arg}`")),
        }
    }
    if help {
        return Ok(Command::Help);
    }
    let otel = Otel {
        stdout: otel,
        endpoint: otel_endpoint,
    };
    if store.is_some() && (what_if.is_some() || schemas) {
        return Err("--store goes with a replay, --resume or --live".to_owned());
    }
    if otel.is_on() && (what_if.is_some() || schemas) {
        return Err("--otel and --otel-endpoint go with a replay or --live".to_owned());
    }
    if let Some(file) = what_if {
        if json
            || schemas
            || !transcripts.is_empty()
            || out_dir.is_some()
            || provider.is_some()
            || resume.is_some()
        {
            return Err("--what-if FILE replays an audit log: it takes only \
                        --weekly-refund-limit and --specialist"
                .to_owned());
        }
        let changes = RuleChanges {
            weekly_refund_limit: weekly_limit,
        };
        return Ok(Command::WhatIf(
            file,
            specialist.unwrap_or(Specialist::Refunds),
            changes,
        ));
    }
    if weekly_limit.is_some() {
        return Err("--weekly-refund-limit goes with --what-if".to_owned());
    }
    if worker_flag {
        return worker_args(WorkerOptions {
            once,
            out_dir,
            store,
            others: json
                || schemas
                || otel.is_on()
                || live_flag
                || resume.is_some()
                || !transcripts.is_empty()
                || specialist.is_some()
                || provider.is_some()
                || approve.is_some()
                || deny.is_some()
                || by.is_some()
                || now.is_some()
                || !said.is_empty()
                || !live_opts.is_empty(),
        });
    }
    if once {
        return Err("--once goes with --worker".to_owned());
    }
    if let Some(file) = resume {
        if schemas || otel.is_on() || !transcripts.is_empty() || specialist.is_some() {
            return Err(
                "--resume finishes a paused turn: it takes no --schemas, --otel, --otel-endpoint, \
                 --transcript or --specialist"
                    .to_owned(),
            );
        }
        return Ok(Command::Resume(resume_args(
            file, approve, deny, reason, by, now, json, out_dir, store,
        )?));
    }
    if live_flag {
        if json || schemas || !transcripts.is_empty() || provider.is_some() {
            return Err(
                "--live talks to the model: it takes no --json, --schemas, --transcript or \
                 --provider"
                    .to_owned(),
            );
        }
        if approve.is_some() || deny.is_some() || reason.is_some() {
            return Err("--approve, --deny and --reason go with --resume".to_owned());
        }
        // `--now` is shared with --resume: parsed once, checked as --live's clock.
        let mut live_opts = live_opts;
        if let Some(now) = now {
            live_opts.insert("--now", now);
        }
        return live_args(live_opts, said, specialist, out_dir, by, store)
            .map(|a| Command::Live(a, otel));
    }
    if let Some(name) =
        live_opts
            .keys()
            .next()
            .copied()
            .or(if said.is_empty() { None } else { Some("--say") })
    {
        return Err(format!("{name} goes with --live"));
    }
    if approve.is_some() || deny.is_some() || reason.is_some() || by.is_some() || now.is_some() {
        return Err("--approve, --deny, --reason, --by and --now go with --resume".to_owned());
    }
    if schemas {
        if json {
            return Err(
                "--schemas prints one JSON array already; --json goes with a replay".to_owned(),
            );
        }
        if !transcripts.is_empty() || out_dir.is_some() {
            return Err(
                "--schemas prints tool definitions and replays nothing: it takes no \
                        --transcript or --out-dir"
                    .to_owned(),
            );
        }
        return Ok(Command::Schemas(
            specialist.unwrap_or(Specialist::Refunds),
            provider.unwrap_or(Provider::Anthropic),
        ));
    }
    if specialist.is_some() {
        return Err(
            "--specialist goes with --schemas or --live (a transcript names its own specialist)"
                .to_owned(),
        );
    }
    if provider.is_some() {
        return Err("--provider goes with --schemas".to_owned());
    }
    Ok(Command::Replay {
        transcripts,
        json,
        out_dir: out_dir.unwrap_or_else(|| PathBuf::from(DEFAULT_OUT_DIR)),
        store: store.unwrap_or_default(),
        otel,
    })
}

/// What `--worker` was given.
struct WorkerOptions {
    once: bool,
    out_dir: Option<PathBuf>,
    store: Option<StoreKind>,
    /// Any option of another mode.
    others: bool,
}

/// The arguments of `--worker`: `--once`, `--out-dir`, `--store sqlite` or `--database-url`.
fn worker_args(o: WorkerOptions) -> Result<Command, String> {
    if o.others {
        return Err("--worker takes only --once, --out-dir, --store and --database-url".to_owned());
    }
    Ok(Command::Worker(WorkerArgs {
        out_dir: o.out_dir.unwrap_or_else(|| PathBuf::from(DEFAULT_OUT_DIR)),
        store: o.store.unwrap_or_default(),
        once: o.once,
    }))
}

/// A UTF-8 value (arguments were checked to be UTF-8).
fn text(v: OsString) -> String {
    v.to_string_lossy().into_owned()
}

/// The arguments of `--resume`: one decision (`--approve ID [--by WHO]` or `--deny ID --reason
/// TEXT`), an optional clock.
#[allow(clippy::too_many_arguments)]
fn resume_args(
    file: PathBuf,
    approve: Option<String>,
    deny: Option<String>,
    reason: Option<String>,
    by: Option<String>,
    now: Option<String>,
    json: bool,
    out_dir: Option<PathBuf>,
    store: Option<StoreKind>,
) -> Result<ResumeArgs, String> {
    let (tool_use_id, deny_reason) = match (approve, deny, reason) {
        (Some(id), None, None) => (id, None),
        (None, Some(id), Some(reason)) => (id, Some(reason)),
        (None, Some(_), None) => return Err("--deny ID needs --reason TEXT".to_owned()),
        (Some(_), None, Some(_)) => {
            return Err("--reason goes with --deny (an approval needs none)".to_owned());
        }
        (Some(_), Some(_), _) => return Err("--approve and --deny exclude each other".to_owned()),
        (None, None, _) => return Err("--resume needs --approve ID or --deny ID".to_owned()),
    };
    let now = match now {
        None => None,
        Some(t) => Some(
            t.parse::<jiff::Timestamp>()
                .ok()
                .and_then(|ts| std::time::SystemTime::try_from(ts).ok())
                .ok_or_else(|| {
                    format!("--now {t}: expected an RFC 3339 instant like 2026-11-25T10:15:00Z")
                })?,
        ),
    };
    Ok(ResumeArgs {
        file,
        tool_use_id,
        deny_reason,
        by: by.unwrap_or_else(|| "operator".to_owned()),
        now,
        json,
        out_dir: out_dir.unwrap_or_else(|| PathBuf::from(DEFAULT_OUT_DIR)),
        store: store.unwrap_or_default(),
    })
}

/// Runs the command line `args` (without the program name), writing to `out` and `err`, and
/// returns the exit code ([`EXIT_OK`], [`EXIT_FAILED`], [`EXIT_BAD_INPUT`]).
pub fn run<I>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = OsString>,
{
    let command = match parse_args(args) {
        Ok(c) => c,
        Err(problem) => {
            let _ = writeln!(err, "error: {problem} (see --help)");
            return EXIT_BAD_INPUT;
        }
    };
    let written = match command {
        Command::Help => writeln!(out, "{HELP}").map(|()| EXIT_OK),
        Command::Schemas(specialist, provider) => match Agent::build(specialist, None) {
            Ok(agent) => {
                let definitions = match agent.dispatcher.tool_definitions_for(provider) {
                    Ok(d) => d,
                    Err(e) => {
                        let _ = writeln!(err, "error: {e}");
                        return EXIT_FAILED;
                    }
                };
                // A host logs these at start-up: tools a strict target had to emit non-strict.
                for tool in agent.dispatcher.non_strict_tools(provider) {
                    let _ = writeln!(err, "note: {provider} emits {tool} non-strict");
                }
                serde_json::to_writer_pretty(&mut *out, definitions)
                    .map_err(std::io::Error::from)
                    .and_then(|()| writeln!(out))
                    .map(|()| EXIT_OK)
            }
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return EXIT_FAILED;
            }
        },
        Command::WhatIf(file, specialist, changes) => {
            return what_if::run(&file, specialist, changes, out, err);
        }
        Command::Resume(args) => return approval::resume(&args, out, err),
        Command::Worker(args) => return worker::run(&args, out, err),
        Command::Live(args, otel) => {
            return traced(&otel, err, |err| live::run(args, out, err));
        }
        Command::Replay {
            transcripts,
            json,
            out_dir,
            store,
            otel,
        } => {
            return traced(&otel, err, |err| {
                replay(transcripts, json, out_dir, store, out, err)
            });
        }
    };
    match written {
        Ok(code) => code,
        Err(e) => output_failed(err, &e),
    }
}

/// Runs `f` with the spans `otel` asks for exported (or as it is, when none is); a warning on
/// `err` when spans could not be sent.
fn traced(otel: &Otel, err: &mut dyn Write, f: impl FnOnce(&mut dyn Write) -> u8) -> u8 {
    if !otel.is_on() {
        return f(err);
    }
    let result = otel::with_spans(otel, || f(&mut *err));
    match result {
        Ok((code, None)) => code,
        Ok((code, Some(warning))) => {
            let _ = writeln!(err, "warning: {warning}");
            code
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_BAD_INPUT
        }
    }
}

/// The options that go with `--live` only (`--say` aside: it repeats).
const LIVE_OPTIONS: [&str; 7] = [
    "--model",
    "--base-url",
    "--user",
    "--tier",
    "--max-turns",
    "--max-tokens",
    "--session-id",
];

/// `--live`'s options, checked: `--user` and `--tier` (`free` or `premium`) are required,
/// `--max-turns` and `--max-tokens` are positive numbers, `--now` an RFC 3339 instant.
fn live_args(
    mut opts: BTreeMap<&'static str, String>,
    say: Vec<String>,
    specialist: Option<Specialist>,
    out_dir: Option<PathBuf>,
    by: Option<String>,
    store: Option<StoreKind>,
) -> Result<LiveArgs, String> {
    let mut take = |name: &str| opts.remove(name);
    let user = take("--user").ok_or("--live needs --user ID (the signed-in customer)")?;
    let tier = take("--tier").ok_or("--live needs --tier free|premium (the customer's tier)")?;
    if !matches!(tier.as_str(), "free" | "premium") {
        return Err(format!("--tier {tier}: expected free or premium"));
    }
    let number = |name: &str, v: Option<String>, default: u32| -> Result<u32, String> {
        match v {
            None => Ok(default),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("{name} {v}: expected a whole number above 0")),
            },
        }
    };
    let max_turns = number("--max-turns", take("--max-turns"), live::DEFAULT_MAX_TURNS)?;
    let max_tokens = number(
        "--max-tokens",
        take("--max-tokens"),
        live::DEFAULT_MAX_TOKENS,
    )?;
    let now = match take("--now") {
        None => None,
        Some(text) => {
            let at = text
                .parse::<jiff::Timestamp>()
                .ok()
                .and_then(|ts| std::time::SystemTime::try_from(ts).ok())
                .ok_or_else(|| {
                    format!("--now {text}: expected an RFC 3339 instant like 2026-11-24T10:15:00Z")
                })?;
            Some((text, at))
        }
    };
    Ok(LiveArgs {
        model: take("--model").unwrap_or_else(|| live::DEFAULT_MODEL.to_owned()),
        base_url: take("--base-url").unwrap_or_else(|| super::http::DEFAULT_BASE_URL.to_owned()),
        specialist: specialist.unwrap_or(Specialist::Refunds),
        user,
        tier,
        say,
        max_turns,
        max_tokens,
        out_dir: out_dir.unwrap_or_else(|| PathBuf::from(DEFAULT_OUT_DIR)),
        now,
        session_id: take("--session-id"),
        by: by.unwrap_or_else(|| "operator".to_owned()),
        store: store.unwrap_or_default(),
    })
}

/// Reports a failed write to stdout (quietly when the reader went away, as `| head` does).
fn output_failed(err: &mut dyn Write, e: &std::io::Error) -> u8 {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        let _ = writeln!(err, "error: cannot write the output: {e}");
    }
    EXIT_FAILED
}

fn replay(
    transcripts: Vec<PathBuf>,
    json: bool,
    out_dir: PathBuf,
    store: StoreKind,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    // Every transcript is read and checked before anything runs or is written.
    let loaded: Result<Vec<Transcript>, _> = if transcripts.is_empty() {
        transcript::bundled()
    } else {
        transcripts
            .iter()
            .map(|path| transcript::load(path))
            .collect()
    };
    let transcripts = match loaded {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let (state, audit) = match State::open_with_audit(&store, &out_dir) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };

    let mut code = EXIT_OK;
    let mut calls = 0;
    let mut waited = 0;
    let mut replays = 0;
    for t in &transcripts {
        let replayed = match agent::replay(t, Some(&audit), &state) {
            Ok(r) => r,
            Err(agent::ReplayError::World(e)) => {
                let _ = writeln!(err, "error: {}: {e}", t.source);
                return EXIT_FAILED;
            }
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return EXIT_FAILED;
            }
        };
        calls += replayed.summary.calls;
        waited += replayed.calls().filter(|c| !c.outcome.is_final()).count() as u64;
        replays += replayed.calls().filter(|c| c.replay).count() as u64;
        let written = if json {
            output::write_json(out, err, &replayed)
        } else {
            output::write_readable(out, t, &replayed)
        };
        if let Err(e) = written {
            return output_failed(err, &e);
        }
        if let Some(pending) = &replayed.pending {
            let note: &mut dyn Write = if json { &mut *err } else { &mut *out };
            if let Err(e) = approval::report_pending(&out_dir, &state, pending, note) {
                let _ = writeln!(err, "error: cannot write the pending turn: {e}");
                code = EXIT_FAILED;
            }
        }
        if let Some(halt) = &replayed.halted {
            let _ = writeln!(err, "error: {}: {halt}", t.source);
            code = EXIT_FAILED;
        }
        for m in agent::mismatches(t, &replayed) {
            let actual = m.actual.map_or("not reached", |o| o.as_str());
            let _ = writeln!(
                err,
                "mismatch: {}: tool_use {}: expected {}, got {actual}",
                t.source, m.tool_use_id, m.expected
            );
            code = EXIT_FAILED;
        }
    }
    drop(audit);
    if let Err(e) = state.finish() {
        let _ = writeln!(err, "error: {e}");
        code = EXIT_FAILED;
    }
    let (calls_file, sessions_file) = match state.audit_place() {
        Some(place) => (PathBuf::from(place), PathBuf::from(place)),
        None => (
            out_dir.join(AUDIT_LOG_FILE),
            out_dir.join(SESSION_SUMMARIES_FILE),
        ),
    };
    if !json
        && let Err(e) = output::write_footer(
            out,
            &calls_file,
            &sessions_file,
            (calls, replays, waited),
            transcripts.len(),
        )
    {
        return output_failed(err, &e);
    }
    if !json {
        code = code.max(crate::trail::check_and_draw(&store, &out_dir, out, err));
    }
    code
}
