//! Claude Code hooks: the same `#[pre_hook]` rules enforced in Claude Code (and in the Claude
//! Agent SDKs' command hooks). [`ClaudeCodeHook`] reads one hook event (JSON) from standard
//! input, runs the matching rules of a [`Dispatcher`], and writes the documented answer.
//!
//! The protocol is Claude Code's hooks reference (code.claude.com/docs/en/hooks, "Hook input
//! and output", "PreToolUse decision control", "Exit code output"):
//!
//! - Every event is one JSON object on standard input with `session_id`, `transcript_path`,
//!   `cwd`, `permission_mode` and `hook_event_name`; PreToolUse adds `tool_name`, `tool_input`
//!   and `tool_use_id`, PostToolUse those and `tool_response`, SessionEnd `reason`.
//! - PreToolUse answers with exit code 0 and, on standard output,
//!   `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny" |
//!   "ask" | "allow", "permissionDecisionReason": "…", "updatedInput": {…}}}`; `deny`'s reason
//!   is shown to Claude, `ask`'s to the person at the permission prompt. No output leaves
//!   Claude Code's own permission rules and prompts in charge.
//! - Exit code 2 blocks the tool call, with standard error shown to Claude as the reason. **Any
//!   other non-zero exit code is a non-blocking error: the tool runs.** So everything that
//!   fails here (an event that cannot be read, a rule that errors, panics or times out) exits 2.
//!
//! What each event does:
//!
//! | event | toolgate | standard output, exit code |
//! |---|---|---|
//! | PreToolUse, every hook allows | nothing recorded (the PostToolUse event records the call) | none, 0: Claude Code's own permissions apply |
//! | PreToolUse, a hook asks ([`Decision::Ask`](crate::Decision::Ask)), none denies | nothing recorded yet | `permissionDecision: "ask"` with every asking hook's reason (and `updatedInput` after a rewrite), 0: the person decides at Claude Code's prompt |
//! | PreToolUse, a hook rewrites | nothing recorded yet | `permissionDecision: "ask"` (or `"allow"`, [`RewriteAnswer::Allow`]) with `updatedInput`, 0 |
//! | PreToolUse, a hook denies; the input is invalid | an audit line (`blocked`, `invalid_input`) | `permissionDecision: "deny"` with the `BLOCKED: …` text the model reads, 0 |
//! | PreToolUse, a hook errors, panics or times out | an audit line (`hook_failed`, `hook_timeout`), its `detail` for the operator | none; standard error `BLOCKED: …` (no operator detail), 2 |
//! | PreToolUse, a tool the dispatcher does not know, no untyped hook matches every tool | nothing | none, 0 (no decision) |
//! | PreToolUse, a tool the dispatcher does not know, untyped hooks match every tool | those hooks decide, on any JSON object as input (no schema), as above: allow, ask, rewrite, deny, fail closed | as above |
//! | PostToolUse | the observers and the audit log see the call, outcome `ok`, content the `tool_response` | none, 0 |
//! | PostToolUseFailure | the same, outcome `tool_error`, content the `error` | none, 0 |
//! | SessionEnd | the Stop hooks run once, with the session's summary | none, 0 |
//! | Stop (every turn), any other event | nothing | none, 0 |
//! | an event that is not JSON, not an object, without `hook_event_name` (or, for PreToolUse, `tool_name`) | nothing | standard error says why, 2 |
//!
//! Claude Code's `Stop` fires at the end of every turn, so toolgate's Stop hooks run on
//! `SessionEnd`. Each event is a new process: what a session summary needs survives between
//! events in a small state file, `<state dir>/<session_id>.json` (one JSON line, a
//! [`SessionSummary`], plus a `rewrites` member while a rewritten call waits for its
//! PostToolUse), locked while an event updates it, so concurrent events of one session lose
//! nothing; SessionEnd removes it.
//!
//! A rewrite is answered at PreToolUse, but Claude Code's PostToolUse event carries only the
//! input that ran. So the state file keeps each rewritten call (its `tool_use_id`, the model's
//! input, the rewriting hooks) until its PostToolUse: that audit line then has the model's
//! `input`, the `effective_input` that ran and `rewritten_by`, as in a Messages API loop. At
//! most 64 rewrites wait (a call the person declined at Claude Code's prompt never gets a
//! PostToolUse); the oldest ids go first. The state dir is [`ClaudeCodeHook::state_dir`], by
//! default `$CLAUDE_PROJECT_DIR/.toolgate/sessions` (else the event's `cwd`'s).
//!
//! Hooks read what Claude Code says about the session through the context:
//! `ctx.extensions().get::<ClaudeCodeEvent>()` gives the event's `cwd`, the project folder
//! and the permission mode (Claude Code's word, not the model's).
//!
//! Keep toolgate's hook deadline ([`DispatcherBuilder::hook_timeout`], 10 s by default) under
//! the `timeout` of the hook in `settings.json` (60 s by default): a hook process Claude Code
//! kills exits neither 0 nor 2, and the tool runs.
//!
//! [`DispatcherBuilder::hook_timeout`]: crate::dispatch::DispatcherBuilder::hook_timeout

mod state;

use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Value, json};

use crate::audit::outcome::{CallRecord, Outcome, SessionSummary};
use crate::base::panic::catch;
use crate::content::message::{ToolResult, ToolUse};
use crate::dispatch::dispatcher::Dispatcher;
use crate::hook::context::{Clock, HookContext};
use crate::hook::state::Env;
use crate::pipeline::chain_verdict::ChainVerdict;
use crate::pipeline::stats::{Stats, report_observer_error};
use crate::texts;

use state::{Rewritten, StateFile};

/// The exit code that blocks a tool call in Claude Code (its reason on standard error).
pub const EXIT_BLOCK: u8 = 2;

/// The largest event read from standard input, in bytes (64 MiB; a PostToolUse event carries
/// the tool's whole response). A larger event cannot be read: exit 2.
pub const MAX_EVENT_BYTES: u64 = 64 << 20;

/// What standard error says, with exit 2, when the hook process itself failed (a panic outside
/// the rules): no operator detail, which could hold what the model must not read.
pub const HOOK_PANIC_MESSAGE: &str = "BLOCKED: toolgate's policy check failed unexpectedly, so \
     this call was not run.";

/// What a PreToolUse hook answers when a rule rewrote the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RewriteAnswer {
    /// `permissionDecision: "ask"` with `updatedInput`: the person sees the rewritten input at
    /// Claude Code's permission prompt (the default).
    #[default]
    Ask,
    /// `permissionDecision: "allow"` with `updatedInput`: the rewritten input runs without a
    /// prompt (Claude Code's deny and ask permission rules still apply).
    Allow,
}

/// What Claude Code said about the session in the event being answered: a typed extension of
/// the [`HookContext`] hooks receive (`ctx.extensions().get::<ClaudeCodeEvent>()`). It comes from
/// the host, never from the model.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaudeCodeEvent {
    /// `hook_event_name`: `"PreToolUse"`, `"PostToolUse"`, `"SessionEnd"`, …
    pub hook_event_name: String,
    /// `session_id`.
    pub session_id: String,
    /// `cwd`: Claude Code's working folder when the event fired (absolute).
    pub cwd: PathBuf,
    /// The project folder: [`ClaudeCodeHook::project_dir`], else `$CLAUDE_PROJECT_DIR`, else
    /// `cwd`.
    pub project_dir: PathBuf,
    /// `permission_mode` (`"default"`, `"plan"`, `"acceptEdits"`, `"bypassPermissions"`, …),
    /// when the event has one.
    pub permission_mode: Option<String>,
    /// `transcript_path`, when the event has one.
    pub transcript_path: Option<PathBuf>,
}

/// A Claude Code command hook over a [`Dispatcher`]: see the [module docs](self) for the
/// protocol and what each event does.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::claude_code::ClaudeCodeHook;
/// use toolgate_core::dispatch::{PreHookDef, ToolDef};
/// use toolgate_core::{Decision, Dispatcher, ToolUse};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Bash {
///     /// The command.
///     command: String,
/// }
///
/// let dispatcher = Dispatcher::builder()
///     .tool(ToolDef::external::<Bash>("Bash", "Runs a shell command."))
///     .pre_hook(PreHookDef::sync("team::no_sudo", 10, |_env, call: &ToolUse| {
///         Ok(match call.input["command"].as_str() {
///             Some(c) if c.starts_with("sudo ") => Decision::deny("no sudo here."),
///             _ => Decision::Allow,
///         })
///     }).tools(["Bash"]))
///     .build()?;
/// let dir = std::env::temp_dir().join(format!("toolgate-doc-cc-{}", std::process::id()));
/// let hook = ClaudeCodeHook::new(dispatcher).project_dir(&dir).state_dir(&dir);
///
/// let event = json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/work",
///     "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
///     "tool_input": {"command": "sudo rm /etc/hosts", "description": "edit hosts"},
///     "tool_use_id": "toolu_01"});
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let code = hook.run(&mut event.to_string().as_bytes(), &mut out, &mut err);
/// assert_eq!(code, 0);
/// assert_eq!(
///     serde_json::from_slice::<serde_json::Value>(&out)?,
///     json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
///         "permissionDecision": "deny", "permissionDecisionReason": "BLOCKED: no sudo here."}})
/// );
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ClaudeCodeHook {
    dispatcher: Dispatcher,
    user_id: String,
    clock: Clock,
    project_dir: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    rewrites: RewriteAnswer,
}

impl std::fmt::Debug for ClaudeCodeHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeCodeHook")
            .field("dispatcher", &self.dispatcher)
            .field("user_id", &self.user_id)
            .field("project_dir", &self.project_dir)
            .field("state_dir", &self.state_dir)
            .field("rewrites", &self.rewrites)
            .finish_non_exhaustive()
    }
}

/// One event's answer: what goes to standard output and standard error, and the exit code.
struct Answer {
    stdout: Option<Value>,
    stderr: Option<String>,
    code: u8,
}

impl Answer {
    /// Exit 0, nothing written: no decision.
    fn none() -> Answer {
        Answer {
            stdout: None,
            stderr: None,
            code: 0,
        }
    }

    /// Exit 2 with `reason` on standard error: the call is blocked.
    fn block(reason: impl Into<String>) -> Answer {
        Answer {
            stdout: None,
            stderr: Some(reason.into()),
            code: EXIT_BLOCK,
        }
    }

    /// Exit 0 with a PreToolUse decision on standard output.
    fn decide(decision: &str, reason: &str, updated_input: Option<&Value>) -> Answer {
        let mut specific = json!({
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        });
        if let Some(input) = updated_input {
            specific["updatedInput"] = input.clone();
        }
        Answer {
            stdout: Some(json!({ "hookSpecificOutput": specific })),
            stderr: None,
            code: 0,
        }
    }
}

impl ClaudeCodeHook {
    /// A hook over `dispatcher`. The context's user is `$USER` (or `$USERNAME`; `"local"` without
    /// either: the person at the keyboard), its clock the system's, the project folder
    /// `$CLAUDE_PROJECT_DIR` (else the event's `cwd`), the state dir
    /// `<project>/.toolgate/sessions`.
    pub fn new(dispatcher: Dispatcher) -> Self {
        let user_id = std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .unwrap_or_else(|_| "local".into());
        ClaudeCodeHook {
            dispatcher,
            user_id,
            clock: Clock::default(),
            project_dir: None,
            state_dir: None,
            rewrites: RewriteAnswer::default(),
        }
    }

    /// The context's user id.
    pub fn user_id(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = user_id.into();
        self
    }

    /// The context's clock (a fixed one for tests).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The project folder, instead of `$CLAUDE_PROJECT_DIR`.
    pub fn project_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.project_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Where the per-session state files go, instead of `<project>/.toolgate/sessions`.
    pub fn state_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.state_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// What a rewrite answers ([`RewriteAnswer::Ask`] by default).
    pub fn rewrites(mut self, answer: RewriteAnswer) -> Self {
        self.rewrites = answer;
        self
    }

    /// Answers the event on standard input, on standard output and standard error, and
    /// returns the exit code: the body of a hook binary's `main`. A silent panic hook is
    /// installed first, so no panic message (which could hold what the model must not read)
    /// reaches standard error, which Claude reads with exit 2; panics go to `tracing` (target
    /// `toolgate::claude_code`).
    pub fn main(&self) -> ExitCode {
        std::panic::set_hook(Box::new(|info| {
            tracing::error!(target: "toolgate::claude_code", panic = %info, "panicked");
        }));
        let code = self.run(
            &mut std::io::stdin().lock(),
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        );
        ExitCode::from(code)
    }

    /// Answers the event read from `input`: writes the answer to `output` (one JSON line, or
    /// nothing), the reason of a block to `error`, and returns the exit code (0, or
    /// [`EXIT_BLOCK`]; 1 only when a PostToolUse or SessionEnd event could not be recorded,
    /// which blocks nothing). A panic anywhere is exit 2 with [`HOOK_PANIC_MESSAGE`].
    pub fn run(&self, input: &mut dyn Read, output: &mut dyn Write, error: &mut dyn Write) -> u8 {
        let answer = catch_unwind(AssertUnwindSafe(|| self.answer(input)))
            .unwrap_or_else(|_| Answer::block(HOOK_PANIC_MESSAGE));
        let mut code = answer.code;
        if let Some(value) = &answer.stdout
            && writeln!(output, "{value}")
                .and_then(|()| output.flush())
                .is_err()
        {
            // The decision could not be given: block rather than let the tool run unchecked.
            code = EXIT_BLOCK;
            let _ = writeln!(error, "BLOCKED: toolgate could not write its decision.");
        }
        if let Some(text) = &answer.stderr {
            let _ = writeln!(error, "{text}");
        }
        code
    }

    /// Reads and answers one event.
    fn answer(&self, input: &mut dyn Read) -> Answer {
        let event = match read_event(input) {
            Ok(event) => event,
            Err(why) => {
                return Answer::block(format!(
                    "BLOCKED: toolgate could not read the hook event: {why}"
                ));
            }
        };
        let Some(name) = event.get("hook_event_name").and_then(Value::as_str) else {
            return Answer::block(
                "BLOCKED: toolgate could not read the hook event: it has no `hook_event_name`",
            );
        };
        match name {
            "PreToolUse" => self.pre_tool_use(&event),
            "PostToolUse" => self.post_tool_use(&event, Outcome::Ok, "tool_response"),
            "PostToolUseFailure" => self.post_tool_use(&event, Outcome::ToolError, "error"),
            "SessionEnd" => self.session_end(&event),
            _ => Answer::none(),
        }
    }

    /// The trusted context of an event.
    fn context(&self, event: &Value) -> HookContext {
        let text = |key: &str| event.get(key).and_then(Value::as_str);
        let cwd = PathBuf::from(text("cwd").unwrap_or_default());
        let project_dir = self
            .project_dir
            .clone()
            .or_else(|| std::env::var_os("CLAUDE_PROJECT_DIR").map(PathBuf::from))
            .unwrap_or_else(|| cwd.clone());
        let host = ClaudeCodeEvent {
            hook_event_name: text("hook_event_name").unwrap_or_default().to_owned(),
            session_id: text("session_id").unwrap_or_default().to_owned(),
            cwd,
            project_dir,
            permission_mode: text("permission_mode").map(str::to_owned),
            transcript_path: text("transcript_path").map(PathBuf::from),
        };
        HookContext::builder(self.user_id.clone(), host.session_id.clone())
            .clock(self.clock.clone())
            .extension(host)
            .build()
    }

    /// The state dir for the session `context` describes.
    fn state_dir_for(&self, context: &HookContext) -> PathBuf {
        match (
            &self.state_dir,
            context.extensions().get::<ClaudeCodeEvent>(),
        ) {
            (Some(dir), _) => dir.clone(),
            (None, Some(host)) => host.project_dir.join(".toolgate").join("sessions"),
            (None, None) => PathBuf::from(".toolgate").join("sessions"),
        }
    }

    /// PreToolUse: the chain's decision as Claude Code's answer.
    fn pre_tool_use(&self, event: &Value) -> Answer {
        let Some(tool_name) = event.get("tool_name").and_then(Value::as_str) else {
            return Answer::block(
                "BLOCKED: toolgate could not read the hook event: PreToolUse without `tool_name`",
            );
        };
        let call = tool_use(event, tool_name);
        let context = self.context(event);
        let started = Instant::now();
        let decided = crate::block_on(self.dispatcher.inner.pre_tool_use_in_host(&context, &call));
        match decided {
            ChainVerdict::Allow {
                input,
                rewritten_by,
            } => self.allowed(&context, &call, &input, &rewritten_by),
            // `Decision::Ask`: the person decides at Claude Code's permission prompt, which
            // shows every asking hook's reason (and the rewritten input, when there is one).
            ChainVerdict::Ask {
                input,
                rewritten_by,
                asked_by,
            } => {
                let reasons: Vec<&str> = asked_by.iter().map(|a| a.reason.as_str()).collect();
                if !rewritten_by.is_empty() {
                    let _ = self.keep_rewrite(&context, &call, &rewritten_by);
                }
                let updated = (!rewritten_by.is_empty()).then_some(&input);
                Answer::decide("ask", &reasons.join(" "), updated)
            }
            ChainVerdict::Refuse {
                outcome: Outcome::UnknownTool,
                ..
            } => Answer::none(),
            refused => self.refused(&context, &call, refused, started),
        }
    }

    /// The answer to a PreToolUse event every hook allowed: nothing (Claude Code's own
    /// permissions apply), or, after a rewrite, the new input for the person to review (or to
    /// run at once, [`RewriteAnswer::Allow`]), the rewrite kept for the PostToolUse line.
    fn allowed(
        &self,
        context: &HookContext,
        call: &ToolUse,
        input: &Value,
        rewritten_by: &[String],
    ) -> Answer {
        if rewritten_by.is_empty() {
            return Answer::none();
        }
        // The decision stands whether or not the rewrite could be kept for the audit line (it
        // would then show the rewritten input without its author).
        let _ = self.keep_rewrite(context, call, rewritten_by);
        let reason = format!(
            "toolgate rewrote this call's input ({}); review the new input.",
            rewritten_by.join(", ")
        );
        let decision = match self.rewrites {
            RewriteAnswer::Ask => "ask",
            RewriteAnswer::Allow => "allow",
        };
        Answer::decide(decision, &reason, Some(input))
    }

    /// The answer to a PreToolUse event the chain refused, with its audit line: a denial or an
    /// invalid input is Claude Code's `deny` with the text the model reads; a rule that could
    /// not decide blocks the call (exit 2), its detail on the audit line only.
    fn refused(
        &self,
        context: &HookContext,
        call: &ToolUse,
        verdict: ChainVerdict,
        started: Instant,
    ) -> Answer {
        let ChainVerdict::Refuse {
            outcome,
            text,
            blocked_by,
            detail,
            rewritten_by,
        } = verdict
        else {
            // Only a refusal is passed here; anything else fails closed all the same.
            return Answer::block(texts::HALT_MESSAGE);
        };
        let result = ToolResult::error(call.id.clone(), text.clone());
        let rewritten: Vec<&str> = rewritten_by.iter().map(String::as_str).collect();
        let record = CallRecord {
            blocked_by: blocked_by.as_deref(),
            detail: detail.as_deref(),
            rewritten_by: &rewritten,
            ..CallRecord::new(call, &call.input, outcome, Some(&result), started.elapsed())
        };
        // The decision stands whether or not the record could be kept.
        let _ = self.record(context, &record, false);
        match outcome {
            Outcome::Blocked | Outcome::InvalidInput => Answer::decide("deny", &text, None),
            // A rule that could not decide (and any refusal of a kind added later): block,
            // with the text the model may read; the detail is in the audit line.
            _ => Answer::block(text),
        }
    }

    /// PostToolUse / PostToolUseFailure: the observers and the audit log see the call.
    fn post_tool_use(&self, event: &Value, outcome: Outcome, field: &str) -> Answer {
        let tool_name = event.get("tool_name").and_then(Value::as_str).unwrap_or("");
        let call = tool_use(event, tool_name);
        let context = self.context(event);
        let mut text = match event.get(field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let content_bytes = crate::pipeline::limits::cut_result(
            &mut text,
            self.dispatcher.inner.limits.max_result_bytes,
        );
        let result = if outcome == Outcome::Ok {
            ToolResult::text(call.id.clone(), text)
        } else {
            ToolResult::error(call.id.clone(), text)
        };
        let record = CallRecord {
            content_bytes,
            ..CallRecord::new(
                &call,
                &call.input,
                outcome,
                Some(&result),
                std::time::Duration::ZERO,
            )
        };
        match self.record(&context, &record, true) {
            Ok(()) => Answer::none(),
            Err(e) => Answer {
                stdout: None,
                stderr: Some(format!("toolgate could not record this call: {e}")),
                code: 1,
            },
        }
    }

    /// Shows `record` to the observers and counts it in the session's state file. With
    /// `rewritten`, the call's rewrite kept at PreToolUse (if any) is taken from the state and
    /// put on the record: the model's input as `input`, the event's as `effective_input`, and
    /// the rewriting hooks as `rewritten_by`.
    fn record(
        &self,
        context: &HookContext,
        record: &CallRecord<'_>,
        rewritten: bool,
    ) -> std::io::Result<()> {
        let inner = &self.dispatcher.inner;
        let tool = inner.find(&record.call.name);
        let stats = Stats::new(inner.tools.len());
        let env = Env::new(context, &inner.states);
        let mut file = StateFile::open(&self.state_dir_for(context), context.session_id())?;
        let now = context.now();
        let mut state = file.read(context.session_id(), context.user_id(), now)?;
        let taken = if rewritten {
            state.rewrites.remove(&record.call.id)
        } else {
            None
        };
        match &taken {
            Some(kept) => {
                let model_call = record.call.with_input(kept.input.clone());
                let by: Vec<&str> = kept.rewritten_by.iter().map(String::as_str).collect();
                let record = CallRecord {
                    call: &model_call,
                    input: &kept.input,
                    effective_input: Some(record.input),
                    rewritten_by: &by,
                    ..*record
                };
                crate::block_on(inner.observe_record(env, Some(&stats), &record, tool));
            }
            None => crate::block_on(inner.observe_record(env, Some(&stats), record, tool)),
        }
        let summary = &mut state.summary;
        summary.ended_at = now;
        summary.calls += 1;
        *summary.outcomes.entry(record.outcome).or_default() += 1;
        if let Some(i) = tool {
            *summary
                .tools
                .entry(inner.tools[i].name.to_string())
                .or_default() += 1;
        }
        summary.observer_errors += stats
            .observer_errors
            .load(std::sync::atomic::Ordering::Relaxed);
        file.write(&mut state)
    }

    /// Keeps `call`'s rewrite in the session's state file until its PostToolUse event (which
    /// carries the rewritten input only) records it.
    fn keep_rewrite(
        &self,
        context: &HookContext,
        call: &ToolUse,
        rewritten_by: &[String],
    ) -> std::io::Result<()> {
        let mut file = StateFile::open(&self.state_dir_for(context), context.session_id())?;
        let mut state = file.read(context.session_id(), context.user_id(), context.now())?;
        state.rewrites.insert(
            call.id.clone(),
            Rewritten {
                input: call.input.clone(),
                rewritten_by: rewritten_by.to_vec(),
            },
        );
        file.write(&mut state)
    }

    /// SessionEnd: the Stop hooks run once with the session's summary; the state file goes.
    fn session_end(&self, event: &Value) -> Answer {
        let context = self.context(event);
        let ended = (|| {
            let file = StateFile::open(&self.state_dir_for(&context), context.session_id());
            let mut file = file?;
            let now = context.now();
            let mut summary = file
                .read(context.session_id(), context.user_id(), now)?
                .summary;
            summary.ended_at = now;
            self.run_stop_hooks(&context, &mut summary);
            file.remove()
        })();
        match ended {
            Ok(()) => Answer::none(),
            Err(e) => Answer {
                stdout: None,
                stderr: Some(format!("toolgate could not end the session: {e}")),
                code: 1,
            },
        }
    }

    /// The Stop hooks, in path order, as [`Session::end`](crate::Session::end) runs them.
    fn run_stop_hooks(&self, context: &HookContext, summary: &mut SessionSummary) {
        let inner = &self.dispatcher.inner;
        let env = Env::new(context, &inner.states);
        let stats = Stats::new(0);
        let before = summary.observer_errors;
        for hook in &inner.stop_hooks {
            summary.observer_errors = before
                + stats
                    .observer_errors
                    .load(std::sync::atomic::Ordering::Relaxed);
            let failure = match catch(|| (hook.imp)(env, summary)) {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(p) => Some(format!("panicked: {p}")),
            };
            if let Some(error) = failure {
                report_observer_error(Some(&stats), &hook.path, "stop", &error);
            }
        }
    }
}

/// The event on `input`: one JSON object, at most [`MAX_EVENT_BYTES`].
fn read_event(input: &mut dyn Read) -> Result<Value, String> {
    let mut bytes = Vec::new();
    input
        .take(MAX_EVENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("standard input could not be read ({e})"))?;
    if bytes.len() as u64 > MAX_EVENT_BYTES {
        return Err(format!("it is larger than {MAX_EVENT_BYTES} bytes"));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("it is not a JSON object".into()),
        Err(e) => Err(format!("it is not JSON ({e})")),
    }
}

/// The event's call as a `tool_use` block: `tool_use_id`, `tool_name`, `tool_input` (absent or
/// `null`: `{}`).
fn tool_use(event: &Value, tool_name: &str) -> ToolUse {
    let id = event
        .get("tool_use_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = event.get("tool_input").cloned().unwrap_or(Value::Null);
    ToolUse::new(id, tool_name, input)
}
