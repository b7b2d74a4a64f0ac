//! A person's approval of a paused turn: where a replay writes its pending turn
//! (`<out-dir>/pending/<session>/<turn>.json`, one file per paused turn, never overwritten), and `--resume FILE --approve ID [--by WHO]` /
//! `--deny ID --reason TEXT` [`--now TIME`], which finishes it in a later run, as a host would
//! in another process.
//!
//! The resuming run rebuilds what the host knows of the session from its own records: the
//! specialist whose dispatcher has the pending turn's fingerprint, the customer's tier from the
//! seed data, the session and user ids from the pending turn, and the world the session was
//! replayed in from the store's ledger. The store's ledger is the one the tools and rules read
//! (fresh with `--store memory`): the weekly limit and the order's refundable amount are checked
//! again against every conversation's refunds, so an approval given after another conversation
//! paid the same order is refused where the order has too little left.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use toolgate::{
    HookContext,
    approval::{Decisions, PendingTurn, ResumeError},
    dispatch::Clock,
};

use super::agent::Agent;
use super::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use super::output::call_line;
use super::seed;
use super::specialist::Specialist;
use super::state::{State, StoreKind};

/// Where a replay writes a pending turn: `<out-dir>/pending/<session>/<turn>.json`, the session
/// id and the turn id (its message's id) each written by [`file_name`], which is one-to-one,
/// so two sessions or two turns never share a file.
pub fn pending_path(out_dir: &Path, session_id: &str, turn_id: &str) -> PathBuf {
    out_dir
        .join("pending")
        .join(file_name(session_id))
        .join(format!("{}.json", file_name(turn_id)))
}

/// A file name for `id`, different for every `id`: letters, digits, `_` and `-` as they are,
/// every other byte as `%XX` (`%` itself too, so `%` always starts an escape: `shop/a` is
/// `shop%2Fa`, `shop_a` stays `shop_a`, `..` is `%2E%2E`); the empty id is `%`. A name that
/// would be longer than 120 bytes is `~sha256-` and the id's SHA-256 in hex instead (`~` is
/// never left as it is, so the two forms cannot meet), within every file system's limit.
pub fn file_name(id: &str) -> String {
    use std::fmt::Write as _;
    if id.is_empty() {
        return "%".to_owned();
    }
    let mut name = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            name.push(char::from(b));
        } else {
            let _ = write!(name, "%{b:02X}");
        }
    }
    if name.len() <= 120 {
        return name;
    }
    let digest = toolgate::approval::input_digest(&serde_json::Value::String(id.to_owned()));
    format!("~sha256-{digest}")
}

/// Writes `pending` (pretty JSON, a final newline) to its path under `out_dir`, never over
/// another file: a turn already written there (the same message paused again, by a retry or a
/// second run) keeps its file, and with it the time it first paused.
pub fn write_pending(out_dir: &Path, pending: &PendingTurn) -> io::Result<PathBuf> {
    let path = pending_path(out_dir, &pending.session_id, &pending.turn_id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = serde_json::to_string_pretty(pending).map_err(io::Error::from)?;
    text.push('\n');
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut file) => file.write_all(text.as_bytes())?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    Ok(path)
}

/// Keeps a replay's pending turn in `state`'s store (when it has one: that copy is the one a
/// resume takes, once) and in its file, and says, on `note` (stdout, or stderr with `--json`),
/// where and how to finish it, one line per waiting call.
pub fn report_pending(
    out_dir: &Path,
    state: &State,
    pending: &PendingTurn,
    note: &mut dyn Write,
) -> io::Result<()> {
    if let Some(store) = state.pending() {
        toolgate::block_on(store.put(pending)).map_err(io::Error::other)?;
    }
    let path = write_pending(out_dir, pending)?;
    for waiting in pending.awaiting() {
        writeln!(
            note,
            "note: tool_use {} awaits a person's approval; pending turn written to {}; finish \
             it with --resume {} --approve {} [--by WHO] or --deny {} --reason TEXT",
            waiting.tool_use_id,
            path.display(),
            path.display(),
            waiting.tool_use_id,
            waiting.tool_use_id
        )?;
    }
    Ok(())
}

/// What `--resume` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeArgs {
    /// The pending turn's file.
    pub file: PathBuf,
    /// The waiting `tool_use` id decided.
    pub tool_use_id: String,
    /// `None`: approve; `Some(reason)`: deny.
    pub deny_reason: Option<String>,
    /// Who decided (`--by`; default `operator`).
    pub by: String,
    /// `--now`: the resuming session's clock (RFC 3339); default the pending turn's
    /// `created_at`.
    pub now: Option<SystemTime>,
    /// `--json`: print only the user message.
    pub json: bool,
    /// `--out-dir`: where the audit files are.
    pub out_dir: PathBuf,
    /// `--store`: where the turn is taken from (and the answers and the ledger kept).
    pub store: StoreKind,
}

/// `--resume`: reads the pending turn, resumes it with the decision, prints the calls (or the
/// user message with `--json`) and removes the file once the turn is answered.
pub fn resume(args: &ResumeArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let source = args.file.display().to_string();
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(err, "error: {source}: cannot be read: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let pending: PendingTurn = match serde_json::from_str(&text) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(err, "error: {source}: is not a pending turn: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let Some(customer) = seed::customer(&pending.user_id) else {
        let _ = writeln!(
            err,
            "error: {source}: user {} is not a customer",
            pending.user_id
        );
        return EXIT_BAD_INPUT;
    };
    let (state, audit) = match State::open_with_audit(&args.store, &args.out_dir) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    // The specialist that paused is the one with the same fingerprint (the refunds one when
    // none has it: resuming then says the dispatcher changed). Its ledger is the world the
    // session was replayed in.
    let ledger = match state.ledger_of_session(&pending.session_id) {
        Ok(ledger) => ledger,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let mut agents = Vec::new();
    for specialist in Specialist::ALL {
        match Agent::build_on(specialist, Some(&audit), ledger.clone()) {
            Ok(agent) => agents.push(agent),
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return EXIT_FAILED;
            }
        }
    }
    let index = agents
        .iter()
        .position(|a| a.dispatcher.fingerprint() == pending.fingerprint)
        .unwrap_or(0);
    let agent = &agents[index];
    let context = HookContext::builder(pending.user_id.clone(), pending.session_id.clone())
        .tier(customer.tier)
        .clock(Clock::fixed(args.now.unwrap_or(pending.created_at)))
        .build();
    // An approval names the input the person was shown: the file's waiting call, by its
    // digest (an id that is not waiting is refused by the resume, naming it).
    let waiting = pending
        .awaiting()
        .find(|a| a.tool_use_id == args.tool_use_id);
    let decisions = match (&args.deny_reason, waiting) {
        (Some(reason), _) => {
            Decisions::builder().deny(args.tool_use_id.clone(), args.by.clone(), reason.clone())
        }
        (None, Some(waiting)) => Decisions::builder().approve(waiting, args.by.clone()),
        (None, None) => {
            Decisions::builder().approve_any_input(args.tool_use_id.clone(), args.by.clone())
        }
    }
    .build()
    .expect("one decision names one id");
    let session = state.session(&agent.dispatcher, context);
    // With a store, the store's copy is the one resumed, once: a copy of the file resumed again
    // (by a retry, a second operator, another worker) gets the first resume's answer.
    let resumed = match state.pending() {
        Some(store) => toolgate::block_on(session.resume_from(store, &pending.turn_id, &decisions)),
        None => toolgate::block_on(session.resume(&pending, &decisions)),
    };
    let summary = session.end();
    let calls = agent.calls.take();
    let answer = match resumed {
        Ok(answer) => answer,
        Err(ResumeError::NoSuchTurn { .. }) => {
            let _ = writeln!(
                err,
                "error: {source}: this turn is not kept in {} (a run with --store memory paused \
                 it: resume it with --store memory)",
                state
                    .file()
                    .map_or(String::new(), |p| p.display().to_string())
            );
            return EXIT_BAD_INPUT;
        }
        Err(e) => {
            let _ = writeln!(err, "error: {source}: {e}");
            return match e {
                ResumeError::Call(_) | ResumeError::BeingResumed { .. } | ResumeError::Store(_) => {
                    EXIT_FAILED
                }
                _ => EXIT_BAD_INPUT,
            };
        }
    };
    let written = if args.json {
        // One JSON line, through `printable_json`, as the replay's `--json` lines.
        serde_json::to_string(&answer)
            .map_err(io::Error::from)
            .and_then(|json| writeln!(out, "{}", toolgate::audit::printable_json(&json)))
    } else {
        let mut text = format!(
            "== {source}\n   session {}, user {} ({}), specialist {}\n",
            pending.session_id,
            pending.user_id,
            customer.tier,
            agent_name(index)
        );
        for line in &calls {
            text.push_str(&format!("   {}\n", call_line(line)));
        }
        if calls.is_empty() {
            text.push_str("   already resumed: this is the answer kept then; nothing ran again\n");
        }
        text.push_str(&format!(
            "   summary: {}\n",
            super::output::summary_line(&summary)
        ));
        out.write_all(text.as_bytes())
    };
    if let Err(e) = written {
        let _ = writeln!(err, "error: cannot write the output: {e}");
        return EXIT_FAILED;
    }
    drop(audit);
    if let Err(e) = state.finish() {
        let _ = writeln!(err, "error: {e}");
        return EXIT_FAILED;
    }
    // Answered: the pending turn is done (a second resume would find nothing to resume, or,
    // with a store, the kept answer).
    match std::fs::remove_file(&args.file) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            let _ = writeln!(err, "error: {source}: cannot be removed: {e}");
            return EXIT_FAILED;
        }
    }
    EXIT_OK
}

fn agent_name(index: usize) -> &'static str {
    Specialist::ALL[index].as_str()
}
