//! `--live`: the support agent in a conversation with the model, over the Messages API.
//!
//! The loop, for each thing the customer says (`--say TEXT`, or a line typed at the terminal):
//! the user turn is appended, then a request (`model`, `max_tokens`, the specialist's `system`
//! prompt and `tools`, `messages`) → [`Session::respond`] → the next request with the answer,
//! until a response has no `tool_use`, at most `--max-turns` requests. Each call prints the same
//! line as the replay and writes the same audit line; each response's `usage` is added to the
//! session ([`Session::add_usage`]), so the summary line counts the tokens.
//!
//! Stop reasons, as the API's "Handling stop reasons" page says to handle them:
//! - `tool_use`: run the calls, send one user message of `tool_result`s, ask again;
//! - `end_turn`, `stop_sequence`: the answer is complete; on to the customer's next words (an
//!   empty answer, which the API documents after tool results, is not sent back: the next
//!   words join the last user turn);
//! - `refusal`: the model declined; said on a `!` line, kept in the conversation, on to the
//!   next words (a host could retry on another model);
//! - `pause_turn`: a server-side loop paused; the assistant turn is sent back as it is, as the
//!   last message, and the response continues it (its blocks are appended to that turn, so
//!   the conversation keeps alternating);
//! - `max_tokens`: the response was cut. Nothing of it runs (`respond` records each `tool_use`
//!   as `not_run`, since the last block may be cut off) and it is not kept; the request is
//!   sent again with `max_tokens` doubled, up to [`MAX_TOKENS_CAP`]; cut there too, the run
//!   stops (exit 1).
//!
//! A turn a rule asks a person about ([`Reply::Pending`]) is put to the person at the terminal,
//! one waiting call at a time (`y` approves, `n REASON` declines; `--by WHO` names them on the
//! audit line), and resumed in this process with their decisions ([`Session::resume`], the path
//! a replay takes with a transcript's `approvals`), so the conversation goes on. With no one at
//! a terminal (standard input is not one), or when the input ends before every call is decided,
//! the turn pauses as in a replay: the pending turn is written under `--out-dir`, a note says how
//! to `--resume` it, and the conversation ends.
//!
//! The trusted context (user, tier, session id, clock) comes from the command line, never from
//! the model. The key comes from `ANTHROPIC_API_KEY` and goes only into the `x-api-key` header.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use toolgate::{
    CallError, HookContext, Message, Reply, RespondError, Session,
    approval::{Approval, AwaitingCall, Decisions, PendingTurn, ResumeError, Resumed},
    audit::{AUDIT_LOG_FILE, SESSION_SUMMARIES_FILE, printable},
    content::{ContentBlock, Role, TextBlock, Usage},
    dispatch::Clock,
    provider::Provider,
};

use super::agent::Agent;
use super::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use super::http::{ApiKey, Client};
use super::ledger::SHARED_WORLD;
use super::output;
use super::specialist::Specialist;
use super::state::{State, StoreKind};

/// The model asked when `--model` is not given.
pub const DEFAULT_MODEL: &str = "claude-sonnet-5";

/// The environment variable holding the API key.
pub const KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// `max_tokens` of a request when `--max-tokens` is not given.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// The most `max_tokens` a request cut at `max_tokens` is sent again with.
pub const MAX_TOKENS_CAP: u32 = 8192;

/// Requests per thing the customer says when `--max-turns` is not given.
pub const DEFAULT_MAX_TURNS: u32 = 10;

/// What `--live` was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveArgs {
    /// `--model`.
    pub model: String,
    /// `--base-url`.
    pub base_url: String,
    /// `--specialist`.
    pub specialist: Specialist,
    /// `--user`: the signed-in customer.
    pub user: String,
    /// `--tier`: `free` or `premium`.
    pub tier: String,
    /// `--say`, in order; empty: read standard input.
    pub say: Vec<String>,
    /// `--max-turns`: requests per thing the customer says.
    pub max_turns: u32,
    /// `--max-tokens`: each request's `max_tokens` (raised after a `max_tokens` stop).
    pub max_tokens: u32,
    /// `--out-dir`.
    pub out_dir: PathBuf,
    /// `--now`: a fixed clock (tests), as written and read.
    pub now: Option<(String, SystemTime)>,
    /// `--session-id` (tests); otherwise `live-` and the start time in milliseconds.
    pub session_id: Option<String>,
    /// `--by`: who answers the approval questions at the terminal (default `operator`); it goes
    /// on the audit line as `approved_by` / `denied_by`.
    pub by: String,
    /// `--store`: where the answer memory, paused turns and the ledger (its shared world) are
    /// kept.
    pub store: StoreKind,
}

/// A person asked about a call: given the question, the line they typed (`None`: the input
/// ended, nobody answers).
pub type Person<'a> = Box<dyn FnMut(&str) -> Option<String> + 'a>;

/// How many unreadable answers a question gets before the turn is left paused.
pub const MAX_ANSWER_TRIES: usize = 3;

/// What the run reads from outside the command line: the key, the customer's words when no
/// `--say` is given, and how to wait between attempts.
pub struct Outside<'a> {
    /// `ANTHROPIC_API_KEY`'s value.
    pub key: Option<String>,
    /// Lines typed by the customer (standard input, when it is a terminal).
    pub lines: Option<Box<dyn Iterator<Item = String> + 'a>>,
    /// The person who decides the calls a rule asks about (at the terminal, when standard input
    /// is one); `None`: such a turn pauses and is written for `--resume`.
    pub person: Option<Person<'a>>,
    /// Waits between attempts.
    pub sleep: &'a mut dyn FnMut(Duration),
}

/// Runs `--live` with the process's environment, standard input and clock.
pub fn run(args: LiveArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let terminal = std::io::stdin().is_terminal();
    // One line from standard input after a prompt on stderr (the lock is taken per line: the
    // customer's words and the approval answers share the terminal). End of input: `None`.
    fn read_line(prompt: &str) -> Option<String> {
        eprint!("{prompt}");
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    }
    let lines: Option<Box<dyn Iterator<Item = String>>> =
        (args.say.is_empty() && terminal).then(|| {
            // Ctrl-D ends the session.
            Box::new(std::iter::from_fn(|| read_line("customer> ")))
                as Box<dyn Iterator<Item = String>>
        });
    let person: Option<Person<'_>> =
        terminal.then(|| Box::new(|question: &str| read_line(question)) as Person<'_>);
    let mut sleep = std::thread::sleep;
    let outside = Outside {
        key: std::env::var(KEY_VAR).ok(),
        lines,
        person,
        sleep: &mut sleep,
    };
    run_with(args, outside, out, err)
}

/// The system prompt of `specialist` for `user` (tier `tier`).
pub fn system_prompt(specialist: Specialist, user: &str, tier: &str) -> String {
    let role = match specialist {
        Specialist::Refunds => {
            "You are the refunds specialist of an online shop's customer support. You look up the \
             customer's account and orders, answer from the help centre (search_faq), open case \
             files with evidence and issue refunds."
        }
        Specialist::Triage => {
            "You are the triage specialist of an online shop's customer support. You look up the \
             customer's account and orders, answer from the help centre (search_faq), and file a \
             ticket for the engineering team when something is broken."
        }
    };
    format!(
        "{role} The signed-in customer is {user} ({tier} tier). Use the tools; when a tool \
         answers BLOCKED, follow what it says instead. Answer briefly."
    )
}

/// Runs `--live` with `outside`'s key, input and sleep (the tests give their own).
///
/// Exit codes: 0 every thing the customer said got a final answer; 1 the API refused or could
/// not be reached, the agent halted, the turn bound was reached, `--out-dir` cannot be used,
/// or output failed; 2 no key or nothing to say (nothing was sent or written).
pub fn run_with(
    args: LiveArgs,
    outside: Outside<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let Some(key) = outside.key.and_then(ApiKey::new) else {
        let _ = writeln!(
            err,
            "error: {KEY_VAR} is not set: create a key in the Claude Console (Settings, API \
             keys), then `export {KEY_VAR}=<your key>` and run again"
        );
        return EXIT_BAD_INPUT;
    };
    let mut words: Box<dyn Iterator<Item = String> + '_> = if !args.say.is_empty() {
        Box::new(args.say.clone().into_iter())
    } else if let Some(lines) = outside.lines {
        Box::new(lines)
    } else {
        let _ = writeln!(
            err,
            "error: --live needs the customer's words: --say TEXT (repeatable), or type them at a \
             terminal (see --help)"
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
    let session_id = args.session_id.clone().unwrap_or_else(|| {
        let ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        format!("live-{ms}")
    });
    // A live conversation is in the shared world: its customer's refunds add up with every other
    // conversation's on this store.
    if let Err(e) = state.books().enter(&session_id, SHARED_WORLD) {
        let _ = writeln!(err, "error: {e}");
        return EXIT_FAILED;
    }
    let agent = match Agent::build_on(args.specialist, Some(&audit), state.ledger(SHARED_WORLD)) {
        Ok(agent) => agent,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let tools = match agent
        .dispatcher
        .tool_definitions_for(Provider::Anthropic)
        .map_err(|e| e.to_string())
        .and_then(|d| serde_json::to_value(d).map_err(|e| e.to_string()))
    {
        Ok(tools) => tools,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let mut context = HookContext::builder(args.user.clone(), session_id.clone()).tier(&args.tier);
    if let Some((_, now)) = &args.now {
        context = context.clock(Clock::fixed(*now));
    }
    let session = state.session(&agent.dispatcher, context.build());

    let mut live = Live {
        client: Client::new(&args.base_url, key, outside.sleep),
        system: system_prompt(args.specialist, &args.user, &args.tier),
        tools,
        messages: Vec::new(),
        agent: &agent,
        session: &session,
        state: &state,
        args: &args,
        person: outside.person,
        waited: std::cell::Cell::new(0),
        replayed: std::cell::Cell::new(0),
    };
    let printed = (|| -> std::io::Result<u8> {
        writeln!(out, "== live: {} at {}", args.model, args.base_url)?;
        writeln!(
            out,
            "   session {session_id}, user {} ({}), specialist {}, clock {}",
            printable(&args.user),
            printable(&args.tier),
            args.specialist.as_str(),
            args.now
                .as_ref()
                .map_or("system", |(text, _)| text.as_str())
        )?;
        let mut code = EXIT_OK;
        for said in words.by_ref() {
            let said = said.trim();
            if said.is_empty() {
                continue;
            }
            writeln!(out, "> {}", printable(said))?;
            if let Err(stop) = live.converse(said, out, err)? {
                let _ = writeln!(err, "error: {stop}");
                code = EXIT_FAILED;
                break;
            }
        }
        let summary = session.end();
        output::write_refunds(
            out,
            &toolgate::block_on(agent.ledger.refunds_of(&args.user)),
        )?;
        writeln!(out, "   summary: {}", output::summary_line(&summary))?;
        if let Err(e) = state.finish() {
            writeln!(out, "   ! the audit lines could not all be stored: {e}")?;
            code = EXIT_FAILED;
        }
        let (calls_file, sessions_file) = match state.audit_place() {
            Some(place) => (PathBuf::from(place), PathBuf::from(place)),
            None => (
                args.out_dir.join(AUDIT_LOG_FILE),
                args.out_dir.join(SESSION_SUMMARIES_FILE),
            ),
        };
        output::write_footer(
            out,
            &calls_file,
            &sessions_file,
            (summary.calls, live.replayed.get(), live.waited.get()),
            1,
        )?;
        Ok(code)
    })();
    match printed {
        Ok(code) => code,
        Err(e) => {
            session.end();
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = writeln!(err, "error: cannot write the output: {e}");
            }
            EXIT_FAILED
        }
    }
}

/// One live conversation's state.
struct Live<'a> {
    client: Client<'a>,
    system: String,
    tools: Value,
    /// The request's `messages` so far: user turns, and assistant turns without the
    /// response-only fields (`Message::request_turn`).
    messages: Vec<Message>,
    agent: &'a Agent,
    session: &'a Session,
    state: &'a State,
    args: &'a LiveArgs,
    /// Who decides what a rule asks about; `None`: nobody at a terminal.
    person: Option<Person<'a>>,
    /// Audit lines written for calls that waited for a person (not final).
    waited: std::cell::Cell<u64>,
    /// Audit lines of answers the answer memory replayed.
    replayed: std::cell::Cell<u64>,
}

impl Live<'_> {
    /// Sends `said` and goes on until a response has no `tool_use`. The outer `Err` is a failed
    /// write to `out`; the inner one why the conversation cannot go on.
    fn converse(
        &mut self,
        said: &str,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> std::io::Result<Result<(), String>> {
        let block = ContentBlock::Text(TextBlock {
            text: said.to_owned(),
            extra: serde_json::Map::new(),
        });
        // After an empty final answer the last turn is the user's: the words join it, so the
        // turns keep alternating.
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(block),
            _ => self.messages.push(Message::user(vec![block])),
        }
        let mut max_tokens = self.args.max_tokens;
        // A `pause_turn` response, sent back as the request's last message.
        let mut paused: Option<Message> = None;
        for _ in 0..self.args.max_turns {
            let mut messages = self.messages.clone();
            if let Some(p) = &paused {
                messages.push(p.request_turn());
            }
            let body = json!({
                "model": self.args.model,
                "max_tokens": max_tokens,
                "system": self.system,
                "tools": self.tools,
                "messages": messages,
            });
            let response = match self.client.create(&body, err) {
                Ok(r) => r,
                Err(e) => return Ok(Err(e.to_string())),
            };
            if let Some(usage) = Usage::of_response(&response) {
                self.session.add_usage(usage);
            }
            write_text(out, &response)?;
            let response = match paused.take() {
                Some(mut turn) => {
                    turn.content.extend(response.content);
                    turn.stop_reason = response.stop_reason;
                    turn
                }
                None => response,
            };
            match response.stop_reason.as_deref() {
                Some("pause_turn") => {
                    writeln!(
                        out,
                        "   ! paused (pause_turn): sending the turn back to continue"
                    )?;
                    paused = Some(response);
                    continue;
                }
                Some("max_tokens") => {
                    if response.tool_uses().next().is_some() {
                        // Every tool_use is audited as `not_run`; the error is expected.
                        let _ = toolgate::block_on(self.session.respond(&response));
                        self.write_calls(out)?;
                    }
                    if max_tokens >= MAX_TOKENS_CAP {
                        return Ok(Err(format!(
                            "the response was cut at max_tokens {max_tokens}, the most this agent \
                             asks for"
                        )));
                    }
                    let raised = max_tokens.saturating_mul(2).min(MAX_TOKENS_CAP);
                    writeln!(
                        out,
                        "   ! cut at max_tokens {max_tokens}: nothing of it runs; asking again \
                         with max_tokens {raised}"
                    )?;
                    max_tokens = raised;
                    continue;
                }
                _ => {}
            }
            // An empty answer (`end_turn` with no block, which the API documents) is not sent
            // back: the API refuses an assistant turn with empty content before the last.
            if !response.content.is_empty() {
                self.messages.push(response.request_turn());
            }
            let reply = toolgate::block_on(self.session.respond(&response));
            self.write_calls(out)?;
            match reply {
                Ok(Reply::Answer(answer)) => self.messages.push(answer),
                Ok(Reply::NothingToRun { stop_reason }) => {
                    if stop_reason.as_deref() == Some("refusal") {
                        writeln!(out, "   ! the model declined to answer (refusal)")?;
                    }
                    return Ok(Ok(()));
                }
                Ok(Reply::Pending(pending)) => {
                    // A rule asked for a person: the person at the terminal decides and the
                    // turn resumes here; with nobody to ask, it pauses as in a replay (the
                    // pending turn written under --out-dir, a note saying how to finish it with
                    // --resume) and this conversation ends here.
                    let Some(decisions) = self.decide(&pending, out)? else {
                        super::approval::report_pending(
                            &self.args.out_dir,
                            self.state,
                            &pending,
                            out,
                        )?;
                        return Ok(Ok(()));
                    };
                    let resumed = toolgate::block_on(self.session.resume(&pending, &decisions));
                    self.write_calls(out)?;
                    match resumed.map(Resumed::into_message) {
                        Ok(Some(answer)) => self.messages.push(answer),
                        Ok(None) => {
                            return Ok(Err(
                                "a Messages API turn resumed into another API's answer".to_owned(),
                            ));
                        }
                        Err(ResumeError::Call(CallError::Halt(halt))) => {
                            writeln!(out, "   ! {}", printable(&halt.to_string()))?;
                            return Ok(Err(format!("the agent halted: {halt}")));
                        }
                        Err(e) => return Ok(Err(e.to_string())),
                    }
                }
                Ok(other) => return Ok(Err(format!("unexpected reply {other:?}"))),
                Err(RespondError::Call(CallError::Halt(halt))) => {
                    writeln!(out, "   ! {}", printable(&halt.to_string()))?;
                    return Ok(Err(format!("the agent halted: {halt}")));
                }
                Err(e) => return Ok(Err(e.to_string())),
            }
        }
        Ok(Err(format!(
            "no final answer after {} requests (--max-turns)",
            self.args.max_turns
        )))
    }

    /// Asks the person about each call of `pending` that waits, in order: a `?` line on `out`
    /// per call (the asking rules' reasons), then the question; each answer gets a `=` line.
    /// `None` when nobody is at a terminal, or the input ended, or an answer could not be read
    /// [`MAX_ANSWER_TRIES`] times: the turn then stays paused (no decision is half-applied).
    fn decide(
        &mut self,
        pending: &PendingTurn,
        out: &mut dyn Write,
    ) -> std::io::Result<Option<Decisions>> {
        let Some(person) = self.person.as_mut() else {
            return Ok(None);
        };
        let mut decisions = Decisions::builder();
        for waiting in pending.awaiting() {
            writeln!(out, "   {}", waiting_line(waiting))?;
            let question = question(waiting);
            let mut decided = None;
            for _ in 0..MAX_ANSWER_TRIES {
                let Some(line) = person(&question) else {
                    return Ok(None);
                };
                match parse_answer(&line, &self.args.by) {
                    Ok(approval) => {
                        decided = Some(approval);
                        break;
                    }
                    Err(problem) => writeln!(out, "   = {problem}")?,
                }
            }
            let Some(approval) = decided else {
                return Ok(None);
            };
            writeln!(
                out,
                "   = {}",
                decided_line(&waiting.tool_use_id, &approval)
            )?;
            let approval = super::agent::shown(approval, waiting);
            decisions = decisions.decide(waiting.tool_use_id.clone(), approval);
        }
        // One question per waiting call, each id once: the decisions cannot name an id twice.
        Ok(decisions.build().ok())
    }

    /// Prints the calls the observer recorded since the last time, one line each.
    fn write_calls(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for line in self.agent.calls.take() {
            if !line.outcome.is_final() {
                self.waited.set(self.waited.get() + 1);
            } else if line.replay {
                self.replayed.set(self.replayed.get() + 1);
            }
            writeln!(out, "   {}", output::call_line(&line))?;
        }
        Ok(())
    }
}

/// Prints the response's text blocks, one `assistant:` line per line of text.
fn write_text(out: &mut dyn Write, response: &Message) -> std::io::Result<()> {
    for block in &response.content {
        if let ContentBlock::Text(t) = block {
            for line in t.text.lines().filter(|l| !l.trim().is_empty()) {
                writeln!(out, "   assistant: {}", printable(line))?;
            }
        }
    }
    Ok(())
}

/// The line saying a call waits for a person: `? ID TOOL waits for a person: REASON[; REASON]`.
pub fn waiting_line(waiting: &AwaitingCall) -> String {
    let reasons: Vec<&str> = waiting.asked_by.iter().map(|a| a.reason.as_str()).collect();
    format!(
        "? {} {} waits for a person: {}",
        printable(&waiting.tool_use_id),
        printable(&waiting.name),
        printable(&reasons.join("; "))
    )
}

/// The question put to the person at the terminal about `waiting`: the tool and the input it
/// would run with (after the rules' rewrites), then how to answer.
pub fn question(waiting: &AwaitingCall) -> String {
    format!(
        "approve {} {}? y = approve, n REASON = decline: ",
        printable(&waiting.name),
        printable(&waiting.effective_input.to_string())
    )
}

/// Reads a person's answer: `y` or `yes` approves (by `by`); `n` or `no`, then the reason for
/// the model, declines (a bare `n` gives the reason `declined by BY`). Case and surrounding
/// spaces do not matter. Anything else: what to type instead.
pub fn parse_answer(line: &str, by: &str) -> Result<Approval, String> {
    let line = line.trim();
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (line, ""),
    };
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" if rest.is_empty() => Ok(Approval::approve(by)),
        "n" | "no" if rest.is_empty() => Ok(Approval::deny(by, format!("declined by {by}"))),
        "n" | "no" => Ok(Approval::deny(by, rest)),
        _ => Err(format!(
            "`{}` is not an answer: type y to approve, or n and the reason to decline",
            printable(line)
        )),
    }
}

/// The line recording a decision: `= ID approved by BY` / `= ID declined by BY: REASON`.
fn decided_line(id: &str, approval: &Approval) -> String {
    match approval {
        Approval::Deny { by, reason } => {
            format!(
                "{} declined by {}: {}",
                printable(id),
                printable(by),
                printable(reason)
            )
        }
        other => format!("{} approved by {}", printable(id), printable(other.by())),
    }
}
