//! `--worker`: resumes the turns people decided in the approval inbox of the store, as they
//! become ready. Each replay with a shared store (the SQLite file of `--out-dir`, or the database
//! of `--database-url`) keeps its paused refunds there, where an inbox lists them; once each
//! waiting call of a turn is decided or expired, a worker takes the turn (one worker of a fleet
//! gets it) and resumes it in the turn's session, as `--resume` does: the specialist with the
//! turn's fingerprint, the customer's tier from the seed data, the session's ledger, the clock
//! of when the turn paused. At start it publishes the specialists' tools to the store, so an
//! inbox without this program checks a person's edit against them.
//!
//! It polls every half second until stopped; `--once` resumes what is ready now and exits.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use toolgate::HookContext;
use toolgate::approval::inbox::{PublishedTools, ReadyTurn};
use toolgate::audit::AuditLog;
use toolgate::dispatch::{Clock, DispatcherBuilder};

use super::agent::Agent;
use super::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use super::output::{call_line, summary_line};
use super::seed;
use super::specialist::Specialist;
use super::state::{State, StoreKind};

/// How long a worker waits between two looks at a store with nothing ready.
const POLL: Duration = Duration::from_millis(500);

/// What `--worker` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerArgs {
    /// `--out-dir`: the audit files (and the SQLite file).
    pub(crate) out_dir: PathBuf,
    /// `--store` / `--database-url`: the store whose inbox it serves.
    pub(crate) store: StoreKind,
    /// `--once`: resume what is ready now, then exit.
    pub(crate) once: bool,
}

/// `--worker`: see the module docs. Prints one block per resumed turn.
pub(crate) fn run(args: &WorkerArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if args.store == StoreKind::Memory {
        let _ = writeln!(
            err,
            "error: --worker resumes turns kept in a store other runs share: --store sqlite (the \
             default) or --database-url"
        );
        return EXIT_BAD_INPUT;
    }
    let (state, audit) = match State::open_with_audit(&args.store, &args.out_dir) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let Some(store) = state.inbox() else {
        return EXIT_FAILED;
    };
    let mut fingerprints = Vec::new();
    for specialist in Specialist::ALL {
        let published = Agent::build(specialist, None)
            .map_err(|e| e.to_string())
            .and_then(|agent| {
                let tools = PublishedTools::of(&agent.dispatcher);
                toolgate::block_on(store.publish_tools(&tools)).map_err(|e| e.to_string())?;
                Ok((specialist, tools.fingerprint))
            });
        match published {
            Ok(f) => fingerprints.push(f),
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return EXIT_FAILED;
            }
        }
    }
    let mut failed = false;
    loop {
        let mut resumed = 0;
        for (specialist, fingerprint) in &fingerprints {
            let lease = DispatcherBuilder::DEFAULT_CLAIM_LEASE;
            loop {
                match toolgate::block_on(store.take_ready(fingerprint, lease)) {
                    Ok(Some(ready)) => {
                        failed |= !resume(&state, &audit, *specialist, &ready, out, err);
                        resumed += 1;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = writeln!(err, "error: {e}");
                        return EXIT_FAILED;
                    }
                }
            }
        }
        if args.once {
            break;
        }
        if resumed == 0 {
            std::thread::sleep(POLL);
        }
    }
    drop(audit);
    if let Err(e) = state.finish() {
        let _ = writeln!(err, "error: {e}");
        return EXIT_FAILED;
    }
    if failed { EXIT_FAILED } else { EXIT_OK }
}

/// Resumes one ready turn in its session; prints its block; whether it was answered.
fn resume(
    state: &State,
    audit: &AuditLog,
    specialist: Specialist,
    ready: &ReadyTurn,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> bool {
    let turn = &ready.turn;
    let name = format!("turn {} of session {}", turn.turn_id, turn.session_id);
    let Some(customer) = seed::customer(&turn.user_id) else {
        let _ = writeln!(
            err,
            "error: {name}: user {} is not a customer",
            turn.user_id
        );
        return false;
    };
    let agent = state
        .ledger_of_session(&turn.session_id)
        .and_then(|ledger| {
            Agent::build_on(specialist, Some(audit), ledger).map_err(|e| e.to_string())
        });
    let agent = match agent {
        Ok(agent) => agent,
        Err(e) => {
            let _ = writeln!(err, "error: {name}: {e}");
            return false;
        }
    };
    let context = HookContext::builder(turn.user_id.clone(), turn.session_id.clone())
        .tier(customer.tier)
        .clock(Clock::fixed(turn.created_at))
        .build();
    let session = state.session(&agent.dispatcher, context);
    let Some(store) = state.inbox() else {
        return false;
    };
    let resumed = toolgate::block_on(session.resume_ready(store, ready));
    let summary = session.end();
    if let Err(e) = resumed {
        let _ = writeln!(err, "error: {name}: {e}");
        return false;
    }
    let mut text = format!(
        "== resumed {name}\n   user {} ({}), specialist {}\n",
        turn.user_id,
        customer.tier,
        specialist.as_str()
    );
    for line in &agent.calls.take() {
        text.push_str(&format!("   {}\n", call_line(line)));
    }
    text.push_str(&format!("   summary: {}\n", summary_line(&summary)));
    out.write_all(text.as_bytes()).is_ok()
}
