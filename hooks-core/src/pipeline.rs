//! The life of one tool call (DESIGN.md): normalize → look up → validate → PreToolUse chain →
//! tool → PostToolUse observers. Exactly one `tool_result` comes out of every `tool_use`, or a
//! [`Halt`] carrying one.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::content::{ContentBlock, Message, ToolResult, ToolResultContent, ToolUse};
use crate::context::HookContext;
use crate::decision::Decision;
use crate::definitions::{PostHookDef, PreHookDef};
use crate::erased::Args;
use crate::error::{Halt, HookError, ToolError};
use crate::future::{BoxFuture, Invoke};
use crate::inner::{Backend, Inner, ToolEntry};
use crate::limits::{Limits, cut_content};
use crate::normalize::{Normalized, Refused, check_bounds, normalize};
use crate::outcome::{CallRecord, Outcome};
use crate::panic::{CatchUnwind, catch};
use crate::schema::explain::explain;
use crate::state::Env;
use crate::stats::{Stats, report_observer_error};
use crate::texts;
use crate::timer::{Deadline, Race, Raced};

/// How the call ended, before it becomes a `tool_result`.
struct Verdict<'a> {
    outcome: Outcome,
    content: Option<ToolResultContent>,
    blocked_by: Option<Cow<'a, str>>,
    detail: Option<String>,
    halt: bool,
}

impl<'a> Verdict<'a> {
    /// A verdict with `text` as the content; `is_error` follows from `outcome` (every outcome
    /// but `ok` is an error).
    fn error(outcome: Outcome, text: String) -> Self {
        Verdict {
            outcome,
            content: Some(ToolResultContent::Text(text)),
            blocked_by: None,
            detail: None,
            halt: false,
        }
    }

    fn ok(text: String) -> Self {
        Verdict::error(Outcome::Ok, text)
    }

    fn invalid(tool: &str, path: &str, message: &str) -> Self {
        Verdict::error(
            Outcome::InvalidInput,
            texts::invalid_input(tool, path, message),
        )
    }

    fn unknown(name: &str, available: &str) -> Self {
        Verdict::error(Outcome::UnknownTool, texts::unknown_tool(name, available))
    }

    fn blocked(hook: &'a str, reason: &str, instead: Option<&str>) -> Self {
        Verdict {
            blocked_by: Some(Cow::Borrowed(hook)),
            ..Verdict::error(Outcome::Blocked, texts::blocked(reason, instead))
        }
    }

    fn halted(hook: Cow<'a, str>, outcome: Outcome, detail: String) -> Self {
        Verdict {
            blocked_by: Some(hook),
            detail: Some(detail),
            halt: true,
            ..Verdict::error(outcome, texts::HALT_MESSAGE.to_owned())
        }
    }

    /// The verdict of a local tool's return value.
    fn produced(r: Result<String, ToolError>) -> Self {
        match r {
            Ok(text) => Verdict::ok(text),
            Err(e) => {
                // The error's `Display` and `source()` chain are user code: a panic there (or in
                // its drop) must not escape the pipeline.
                let parts = catch(move || (e.message().to_owned(), e.detail()));
                let (message, detail) = parts.unwrap_or_else(|p| {
                    (
                        texts::INTERNAL_ERROR_MESSAGE.to_owned(),
                        Some(format!("the tool's error panicked while it was read: {p}")),
                    )
                });
                Verdict {
                    detail,
                    ..Verdict::error(Outcome::ToolError, message)
                }
            }
        }
    }

    fn panicked(message: String) -> Self {
        Verdict {
            detail: Some(format!("the tool panicked: {message}")),
            ..Verdict::error(Outcome::Panicked, texts::PANIC_MESSAGE.to_owned())
        }
    }

    /// The timer panicked while a tool ran: an internal error (the tool is not at fault).
    fn timer_failed(message: String) -> Self {
        Verdict {
            detail: Some(format!("the dispatcher's timer panicked: {message}")),
            ..Verdict::error(Outcome::ToolError, texts::INTERNAL_ERROR_MESSAGE.to_owned())
        }
    }

    fn tool_timeout(deadline: Duration) -> Self {
        Verdict {
            detail: Some(format!(
                "the tool ran past its deadline of {} ms",
                deadline.as_millis()
            )),
            ..Verdict::error(Outcome::ToolTimeout, texts::tool_timeout(deadline))
        }
    }
}

/// A tool started: done already (sync), or a future to await (async).
enum Started<'a> {
    Done(Verdict<'a>),
    Local(BoxFuture<'a, Result<String, ToolError>>),
    Caller(BoxFuture<'a, Result<ToolResult, Halt>>),
}

/// A PreToolUse hook that could not decide.
enum HookFailure {
    Failed(String),
    TimedOut(Duration),
}

/// Keeps a `cancelled` audit line for a call future dropped before it finished.
struct CancelGuard<'a> {
    inner: &'a Inner,
    env: Env<'a>,
    stats: Option<&'a Stats>,
    call: &'a ToolUse,
    /// The input after normalization (the raw one when it could not be normalized).
    input: &'a Value,
    tool: Option<usize>,
    stage: &'static str,
    observers_done: usize,
    started: Instant,
    armed: bool,
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Some(s) = self.stats {
            s.record(Outcome::Cancelled, self.tool);
        }
        if std::thread::panicking() {
            // Running user code while unwinding could abort the process.
            tracing::error!(target: "toolgate::observer", tool_use_id = %self.call.id,
                "call dropped during a panic; observers skipped");
            return;
        }
        let detail = format!(
            "the host dropped the call before it finished ({})",
            self.stage
        );
        let record = CallRecord {
            call: self.call,
            input: self.input,
            effective_input: None,
            result: None,
            outcome: Outcome::Cancelled,
            blocked_by: None,
            rewritten_by: &[],
            detail: Some(&detail),
            content_bytes: None,
            duration: self.started.elapsed(),
        };
        let inner = self.inner;
        for &o in inner
            .observers_for(self.tool)
            .iter()
            .skip(self.observers_done)
        {
            let obs = &inner.observers[o];
            if !obs.imp.is_sync() {
                continue;
            }
            // A sync observer never answers with a future; were one returned, it is dropped.
            if let Err(error) = start_observer(obs, self.env, &record) {
                report_observer_error(self.stats, &obs.path, &self.call.id, &error);
            }
        }
    }
}

/// Starts one observer: `Ok(None)` when it is done, `Ok(Some(future))` for an async one still
/// running, `Err(text)` when it failed (its error's message, or `panicked: …`).
fn start_observer<'a>(
    obs: &'a PostHookDef,
    env: Env<'a>,
    record: &'a CallRecord<'a>,
) -> Result<Option<BoxFuture<'a, Result<(), HookError>>>, String> {
    match catch(|| obs.imp.run(env, record)) {
        Ok(Invoke::Ready(Ok(()))) => Ok(None),
        Ok(Invoke::Ready(Err(e))) => Err(e.message().to_owned()),
        Ok(Invoke::Pending(fut)) => Ok(Some(fut)),
        Err(p) => Err(format!("panicked: {p}")),
    }
}

/// The input a record (and the audit line) shows: the normalized input; the raw one when it
/// could not be normalized; a short note instead of an input refused for its size or depth, so
/// a huge or deeply nested input is never copied into the log (nor walked without bound).
struct Recorded<'a> {
    normalized: Result<Normalized<'a>, Refused>,
    omitted: Option<Value>,
}

impl<'a> Recorded<'a> {
    fn new(call: &'a ToolUse, limits: &Limits) -> Self {
        let normalized = normalize(call, limits);
        let omitted = match &normalized {
            Ok(_) => None,
            Err(_) => check_bounds(&call.input, limits).err().map(|_| {
                Value::String(format!(
                    "[input not recorded: over the input limits ({} bytes, {} levels)]",
                    limits.max_input_bytes, limits.max_input_depth
                ))
            }),
        };
        Recorded {
            normalized,
            omitted,
        }
    }

    fn input(&'a self, call: &'a ToolUse) -> &'a Value {
        match (&self.normalized, &self.omitted) {
            (Ok(c), _) => &c.input,
            (Err(_), Some(note)) => note,
            (Err(_), None) => &call.input,
        }
    }
}

impl Inner {
    /// Runs one `tool_use` through the whole pipeline.
    pub(crate) async fn run_call<'a>(
        &'a self,
        context: &'a HookContext,
        stats: Option<&'a Stats>,
        call: &'a ToolUse,
    ) -> Result<ToolResult, Halt> {
        let started = Instant::now();
        let env = Env::new(context, &self.states);
        let recorded = Recorded::new(call, &self.limits);
        let normalized = &recorded.normalized;
        let mut guard = CancelGuard {
            inner: self,
            env,
            stats,
            call,
            input: recorded.input(call),
            tool: None,
            stage: "before the tool ran",
            observers_done: 0,
            started,
            armed: true,
        };
        // Boxed: this lives in every call future, and is rarely set.
        let mut rewritten: Option<Box<ToolUse>> = None;
        let mut rewritten_by: Vec<&str> = Vec::new();

        let verdict: Verdict<'_> = 'verdict: {
            // Looked up first so the summary's `tools` counts every call of a known tool, an
            // input refused at normalization included; the refusal still comes first.
            let found = self.find(&call.name);
            guard.tool = found;
            let current: &ToolUse = match &normalized {
                Ok(c) => c,
                Err(Refused(msg)) => break 'verdict Verdict::invalid(&call.name, "", msg),
            };
            let Some(index) = found else {
                break 'verdict Verdict::unknown(&call.name, &self.available);
            };
            let tool = &self.tools[index];
            let mut args = match validate(tool, &current.input) {
                Ok(a) => a,
                Err((path, msg)) => break 'verdict Verdict::invalid(&tool.name, &path, &msg),
            };
            for &h in tool.chain.iter() {
                let hook = &self.pre_hooks[h];
                let view = rewritten.as_deref().unwrap_or(current);
                // A sync hook answers inline: no nested future on the common path.
                let decided = match catch(|| hook.imp.run(env, view)) {
                    Ok(Invoke::Ready(r)) => r.map_err(|e| HookFailure::Failed(e.to_string())),
                    Ok(Invoke::Pending(fut)) => self.await_pre_hook(hook, fut).await,
                    Err(p) => Err(HookFailure::Failed(format!("the hook panicked: {p}"))),
                };
                match decided {
                    Ok(Decision::Allow) => {}
                    Ok(Decision::Deny { reason, instead }) => {
                        break 'verdict Verdict::blocked(&hook.path, &reason, instead.as_deref());
                    }
                    Ok(Decision::Rewrite(input)) => {
                        rewritten_by.push(&hook.path);
                        let checked = match &input {
                            Value::Object(_) => check_bounds(&input, &self.limits)
                                .map_err(|Refused(m)| (String::new(), m))
                                .and_then(|()| validate(tool, &input)),
                            other => Err((String::new(), Refused::not_object(other).0)),
                        };
                        match checked {
                            Ok(a) => {
                                args = a;
                                rewritten = Some(Box::new(call.with_input(input)));
                            }
                            Err((path, msg)) => {
                                let at = texts::at_path(&path);
                                break 'verdict Verdict {
                                    detail: Some(format!(
                                        "PreToolUse hook `{}` rewrote the input into an invalid \
                                         one{at}: {msg}",
                                        hook.path
                                    )),
                                    ..Verdict::error(
                                        Outcome::InvalidInput,
                                        texts::invalid_rewrite(&tool.name, &path, &msg),
                                    )
                                };
                            }
                        }
                    }
                    Err(HookFailure::Failed(detail)) => {
                        break 'verdict Verdict::halted(
                            Cow::Borrowed(&hook.path),
                            Outcome::HookFailed,
                            detail,
                        );
                    }
                    Err(HookFailure::TimedOut(d)) => {
                        break 'verdict Verdict::halted(
                            Cow::Borrowed(&hook.path),
                            Outcome::HookTimeout,
                            format!("the hook ran past its deadline of {} ms", d.as_millis()),
                        );
                    }
                }
            }
            guard.stage = "while the tool ran";
            let view = rewritten.as_deref().unwrap_or(current);
            match self.start_tool(tool, env, view, args) {
                Started::Done(verdict) => verdict,
                Started::Local(fut) => self.await_local_tool(tool, fut).await,
                Started::Caller(fut) => self.await_caller(tool, fut).await,
            }
        };

        let Verdict {
            outcome,
            mut content,
            blocked_by,
            detail,
            halt,
        } = verdict;
        let content_bytes = content
            .as_mut()
            .and_then(|c| cut_content(c, self.limits.max_result_bytes));
        let result = ToolResult {
            tool_use_id: call.id.clone(),
            content,
            is_error: outcome != Outcome::Ok,
            extra: Map::new(),
        };
        let record = CallRecord {
            call,
            input: recorded.input(call),
            effective_input: rewritten.as_ref().map(|r| &r.input),
            result: Some(&result),
            outcome,
            blocked_by: blocked_by.as_deref(),
            rewritten_by: &rewritten_by,
            detail: detail.as_deref(),
            content_bytes,
            duration: started.elapsed(),
        };
        guard.stage = "while the observers ran";
        if self.observers_sync {
            self.observe_sync(env, stats, &record, guard.tool);
        } else {
            self.observe(env, stats, &record, &mut guard).await;
        }
        if let Some(s) = stats {
            s.record(outcome, guard.tool);
        }
        guard.armed = false;
        if halt {
            return Err(Halt {
                outcome,
                hook: blocked_by.map(Cow::into_owned).unwrap_or_default(),
                tool_use_id: call.id.clone(),
                detail: detail.unwrap_or_default(),
                answer: Box::new(Message::user(vec![ContentBlock::ToolResult(result)])),
                index: 0,
            });
        }
        Ok(result)
    }

    /// Awaits an async PreToolUse hook against its deadline.
    async fn await_pre_hook(
        &self,
        hook: &PreHookDef,
        fut: BoxFuture<'_, Result<Decision, HookError>>,
    ) -> Result<Decision, HookFailure> {
        let deadline = hook.timeout.or(self.hook_timeout);
        match self.race(CatchUnwind(fut), deadline).await {
            Raced::Done(Ok(r)) => r.map_err(|e| HookFailure::Failed(e.to_string())),
            Raced::Done(Err(p)) => Err(HookFailure::Failed(format!("the hook panicked: {p}"))),
            Raced::TimedOut => Err(HookFailure::TimedOut(deadline.unwrap_or_default())),
            Raced::TimerFailed(p) => Err(HookFailure::Failed(format!(
                "the dispatcher's timer panicked: {p}"
            ))),
        }
    }

    /// Starts the tool: a sync tool's verdict is ready at once; an async one is a future to await.
    fn start_tool<'a>(
        &'a self,
        tool: &'a ToolEntry,
        env: Env<'a>,
        call: &'a ToolUse,
        args: Args,
    ) -> Started<'a> {
        match &tool.backend {
            Backend::Local(imp) => match catch(|| imp.invoke(env, args)) {
                Err(p) => Started::Done(Verdict::panicked(p)),
                Ok(Invoke::Ready(r)) => Started::Done(Verdict::produced(r)),
                Ok(Invoke::Pending(fut)) => Started::Local(fut),
            },
            Backend::Caller { caller, .. } => {
                match catch(|| caller.call_tool(env.context(), call)) {
                    Err(p) => Started::Done(Verdict::panicked(p)),
                    Ok(fut) => Started::Caller(fut),
                }
            }
        }
    }

    /// Awaits an async tool against its deadline.
    async fn await_local_tool<'a>(
        &'a self,
        tool: &'a ToolEntry,
        fut: BoxFuture<'_, Result<String, ToolError>>,
    ) -> Verdict<'a> {
        let deadline = tool.timeout.or(self.tool_timeout);
        match self.race(CatchUnwind(fut), deadline).await {
            Raced::Done(Ok(r)) => Verdict::produced(r),
            Raced::Done(Err(p)) => Verdict::panicked(p),
            Raced::TimedOut => Verdict::tool_timeout(deadline.unwrap_or_default()),
            Raced::TimerFailed(p) => Verdict::timer_failed(p),
        }
    }

    /// Awaits a wrapped caller against the tool's deadline.
    async fn await_caller<'a>(
        &'a self,
        tool: &'a ToolEntry,
        fut: BoxFuture<'_, Result<ToolResult, Halt>>,
    ) -> Verdict<'a> {
        let deadline = tool.timeout.or(self.tool_timeout);
        match self.race(CatchUnwind(fut), deadline).await {
            Raced::Done(Ok(Ok(result))) => Verdict {
                outcome: if result.is_error {
                    Outcome::ToolError
                } else {
                    Outcome::Ok
                },
                content: result.content,
                blocked_by: None,
                detail: None,
                halt: false,
            },
            Raced::Done(Ok(Err(halt))) => Verdict::halted(
                Cow::Owned(halt.hook),
                halt.outcome,
                format!("the wrapped caller halted: {}", halt.detail),
            ),
            Raced::Done(Err(p)) => Verdict::panicked(p),
            Raced::TimedOut => Verdict::tool_timeout(deadline.unwrap_or_default()),
            Raced::TimerFailed(p) => Verdict::timer_failed(p),
        }
    }

    fn race<F: std::future::Future + Unpin>(&self, fut: F, deadline: Option<Duration>) -> Race<F> {
        Race {
            fut,
            deadline: Deadline::new(self.timer.as_deref(), deadline),
        }
    }

    /// Runs the observers when every one is sync: no future, no await.
    fn observe_sync(
        &self,
        env: Env<'_>,
        stats: Option<&Stats>,
        record: &CallRecord<'_>,
        tool: Option<usize>,
    ) {
        for &o in self.observers_for(tool) {
            let obs = &self.observers[o];
            let failure = match start_observer(obs, env, record) {
                Ok(None) => continue,
                // Not reached: `observers_sync` says every observer answers at once.
                Ok(Some(_)) => "an observer said sync returned a future".to_owned(),
                Err(error) => error,
            };
            report_observer_error(stats, &obs.path, &record.call.id, &failure);
        }
    }

    /// Runs the observers of the call, awaiting the async ones; `guard.observers_done` counts
    /// those finished, so a drop mid-way runs only the rest.
    async fn observe(
        &self,
        env: Env<'_>,
        stats: Option<&Stats>,
        record: &CallRecord<'_>,
        guard: &mut CancelGuard<'_>,
    ) {
        let list = self.observers_for(guard.tool);
        for (i, &o) in list.iter().enumerate() {
            guard.observers_done = i;
            let obs = &self.observers[o];
            let failure = match start_observer(obs, env, record) {
                Ok(None) => None,
                Ok(Some(fut)) => match CatchUnwind(fut).await {
                    Ok(r) => r.err().map(|e| e.message().to_owned()),
                    Err(p) => Some(format!("panicked: {p}")),
                },
                Err(error) => Some(error),
            };
            if let Some(error) = failure {
                report_observer_error(stats, &obs.path, &record.call.id, &error);
            }
        }
        guard.observers_done = list.len();
    }

    /// Records a block the host gave up on before it started (a `respond` future dropped while
    /// an earlier block of its message ran): outcome `cancelled`, seen by the sync observers, as
    /// for a call dropped unfinished.
    pub(crate) fn cancelled_before_start(
        &self,
        context: &HookContext,
        stats: Option<&Stats>,
        call: &ToolUse,
    ) {
        let recorded = Recorded::new(call, &self.limits);
        drop(CancelGuard {
            inner: self,
            env: Env::new(context, &self.states),
            stats,
            call,
            input: recorded.input(call),
            tool: self.find(&call.name),
            stage: "before it started, while an earlier block of its message ran",
            observers_done: 0,
            started: Instant::now(),
            armed: true,
        });
    }

    /// Answers a block that is not run (`max_tokens`, or after a halt): observers see it with
    /// outcome `not_run`; the returned result says why.
    pub(crate) async fn not_run(
        &self,
        context: &HookContext,
        stats: Option<&Stats>,
        call: &ToolUse,
        why: &str,
    ) -> ToolResult {
        let started = Instant::now();
        let env = Env::new(context, &self.states);
        let tool = self.find(&call.name);
        let recorded = Recorded::new(call, &self.limits);
        let input = recorded.input(call);
        let mut guard = CancelGuard {
            inner: self,
            env,
            stats,
            call,
            input,
            tool,
            stage: "before the tool ran",
            observers_done: 0,
            started,
            armed: true,
        };
        let result = ToolResult::error(call.id.clone(), texts::not_run(why));
        let record = CallRecord {
            call,
            input,
            effective_input: None,
            result: Some(&result),
            outcome: Outcome::NotRun,
            blocked_by: None,
            rewritten_by: &[],
            detail: None,
            content_bytes: None,
            duration: started.elapsed(),
        };
        self.observe(env, stats, &record, &mut guard).await;
        if let Some(s) = stats {
            s.record(Outcome::NotRun, tool);
        }
        guard.armed = false;
        result
    }
}

/// Validates an input for a tool: the unknown-field check, then the argument type (or, for a
/// wrapped caller, its schema). On failure: `(path, message)` for the model, the path and what
/// was expected found by the schema walk, serde's own message when the walk finds nothing.
/// A wrapped caller's arguments are `()` (its input goes to it as JSON); boxing a zero-sized
/// value allocates nothing.
fn validate(tool: &ToolEntry, input: &Value) -> Result<Args, (String, String)> {
    tool.fields
        .check(input)
        .map_err(|e| (e.path_text(), texts::unknown_field(&e.field, &e.expected)))?;
    let explained = || explain(&tool.raw_schema, input).map(|m| (m.path, m.message));
    match &tool.backend {
        // The argument type's `Deserialize` is user code: a panic in it is a refusal, not an
        // escape.
        Backend::Local(imp) => match catch(|| imp.validate(input)) {
            Ok(Ok(args)) => Ok(args),
            Ok(Err(serde_message)) => Err(explained().unwrap_or((String::new(), serde_message))),
            Err(p) => {
                tracing::error!(target: "toolgate::validation", tool = %tool.name, panic = %p,
                    "the tool's input type panicked while deserializing");
                Err((String::new(), texts::INPUT_UNREADABLE.to_owned()))
            }
        },
        Backend::Caller { .. } => match explained() {
            Some(problem) => Err(problem),
            None => Ok(Box::new(())),
        },
    }
}
