//! [`Session`]: one conversation, one [`HookContext`]; answers assistant messages and ends with
//! the Stop hooks and a [`SessionSummary`].

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use crate::content::{ContentBlock, Message, Role, ToolResult, ToolUse};
use crate::context::HookContext;
use crate::dispatcher::Dispatcher;
use crate::error::{Halt, RespondError};
use crate::outcome::{Outcome, SessionSummary};
use crate::panic::catch;
use crate::state::Env;
use crate::stats::{Stats, report_observer_error};
use crate::texts;

/// One conversation: every `tool_use` of it goes through [`call`](Self::call) or
/// [`respond`](Self::respond), with one trusted [`HookContext`].
///
/// The Stop hooks run exactly once: at [`end`](Self::end), or when the session is dropped
/// unended. (When it is dropped during a panic they are skipped, since running them could abort
/// the process; `tracing` says so.) Failing closed needs `panic = "unwind"` (the default): with
/// `panic = "abort"` a panicking hook ends the process instead of halting the agent.
pub struct Session {
    dispatcher: Dispatcher,
    context: HookContext,
    stats: Stats,
    started_at: SystemTime,
    summary: OnceLock<SessionSummary>,
}

impl Dispatcher {
    /// Opens a session (one conversation) with the host's trusted `context`.
    pub fn session(&self, context: HookContext) -> Session {
        Session::new(self.clone(), context)
    }
}

impl Session {
    fn new(dispatcher: Dispatcher, context: HookContext) -> Self {
        let stats = Stats::new(dispatcher.inner.tools.len());
        let started_at = context.now();
        Session {
            dispatcher,
            context,
            stats,
            started_at,
            summary: OnceLock::new(),
        }
    }

    /// The session's trusted context.
    pub fn context(&self) -> &HookContext {
        &self.context
    }

    /// The dispatcher the session runs on.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// Runs one `tool_use` block through the pipeline and returns its `tool_result` (with
    /// `is_error: true` for every failure the model can act on: `blocked`, `invalid_input`,
    /// `unknown_tool`, `tool_error`, `panicked`, `tool_timeout`).
    ///
    /// Dropping the future before it finishes records the call as `cancelled`.
    ///
    /// # Errors
    /// [`Halt`] when a PreToolUse hook errored, panicked or timed out, or the chain kept
    /// rewriting: the tool did not run, and the halt's answer holds a `BLOCKED:` result for this
    /// id.
    pub async fn call(&self, call: &ToolUse) -> Result<ToolResult, Halt> {
        self.dispatcher
            .inner
            .run_call(&self.context, Some(&self.stats), call)
            .await
            .map(|answer| answer.result)
    }

    /// Answers an assistant message: its `tool_use` blocks run one after another, in order, each
    /// independent of the others, and the answer is one user message
    /// `{"role": "user", "content": [tool_result, …]}` with one `tool_result` per `tool_use`, in
    /// the same order (Messages API, "Parallel tool use": all results in the next user message,
    /// `tool_result` blocks first). A message without `tool_use` blocks gets an empty content.
    ///
    /// # Errors
    /// - [`RespondError::MaxTokens`] when `stop_reason` is `max_tokens`: nothing runs (the last
    ///   block may be cut off) and every block is audited as `not_run`;
    /// - [`RespondError::Halt`] when a PreToolUse hook failed: later blocks are not run, and the
    ///   halt's answer covers every block (`BLOCKED:` for the failed one, `Not run:` after it);
    /// - [`RespondError::NotAssistant`] for a user message.
    pub async fn respond(&self, message: &Message) -> Result<Message, RespondError> {
        if message.role != Role::Assistant {
            return Err(RespondError::NotAssistant);
        }
        let uses: Vec<&ToolUse> = message.tool_uses().collect();
        let inner = &self.dispatcher.inner;
        // Dropped unfinished, the blocks not yet started are audited as `cancelled` too (the
        // one in flight records itself), so every block keeps exactly one line.
        let mut pending = Unstarted {
            session: self,
            uses: &uses,
            next: 0,
        };
        if message.stop_reason.as_deref() == Some("max_tokens") {
            for (i, call) in uses.iter().enumerate() {
                pending.next = i + 1;
                inner
                    .not_run(
                        &self.context,
                        Some(&self.stats),
                        call,
                        texts::NOT_RUN_AT_MAX_TOKENS,
                    )
                    .await;
            }
            return Err(RespondError::MaxTokens {
                tool_uses: uses.len(),
            });
        }
        let mut content = Vec::with_capacity(uses.len());
        for (i, call) in uses.iter().enumerate() {
            pending.next = i + 1;
            match self.call(call).await {
                Ok(result) => content.push(ContentBlock::ToolResult(result)),
                Err(mut halt) => {
                    halt.index += content.len();
                    content.append(&mut halt.answer.content);
                    for (j, rest) in uses.iter().enumerate().skip(i + 1) {
                        pending.next = j + 1;
                        let result = inner
                            .not_run(
                                &self.context,
                                Some(&self.stats),
                                rest,
                                texts::NOT_RUN_AFTER_HALT,
                            )
                            .await;
                        content.push(ContentBlock::ToolResult(result));
                    }
                    *halt.answer = Message::user(content);
                    return Err(RespondError::Halt(halt));
                }
            }
        }
        Ok(Message::user(content))
    }

    /// The counts so far, without ending the session.
    pub fn summary_so_far(&self) -> SessionSummary {
        self.snapshot(self.context.now())
    }

    fn snapshot(&self, ended_at: SystemTime) -> SessionSummary {
        let inner = &self.dispatcher.inner;
        let outcomes = Outcome::ALL
            .iter()
            .zip(self.stats.outcomes.iter())
            .filter_map(|(o, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then_some((*o, n))
            })
            .collect();
        let tools = inner
            .tools
            .iter()
            .zip(self.stats.tools.iter())
            .filter_map(|(t, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then(|| (t.name.to_string(), n))
            })
            .collect();
        SessionSummary {
            session_id: self.context.session_id().to_owned(),
            user_id: self.context.user_id().to_owned(),
            started_at: self.started_at,
            ended_at,
            calls: self.stats.calls(),
            outcomes,
            tools,
            observer_errors: self.stats.observer_errors.load(Ordering::Relaxed),
        }
    }

    /// Ends the session: runs the Stop hooks once, in path order (the audit log's summary line
    /// last, so it counts the others' errors), and returns the final summary. Calling it again,
    /// or dropping the session afterwards, runs nothing more and returns the same summary.
    pub fn end(&self) -> SessionSummary {
        self.summary.get_or_init(|| self.run_stop_hooks()).clone()
    }

    fn run_stop_hooks(&self) -> SessionSummary {
        let inner = &self.dispatcher.inner;
        let env = Env::new(&self.context, &inner.states);
        let mut summary = self.snapshot(self.context.now());
        for hook in &inner.stop_hooks {
            summary.observer_errors = self.stats.observer_errors.load(Ordering::Relaxed);
            let failure = match catch(|| (hook.imp)(env, &summary)) {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(p) => Some(format!("panicked: {p}")),
            };
            if let Some(error) = failure {
                report_observer_error(Some(&self.stats), &hook.path, "stop", &error);
            }
        }
        summary.observer_errors = self.stats.observer_errors.load(Ordering::Relaxed);
        summary
    }
}

/// The blocks of a `respond` not yet started; on drop (the host gave up on the message), each
/// is recorded as `cancelled`.
struct Unstarted<'a> {
    session: &'a Session,
    uses: &'a [&'a ToolUse],
    next: usize,
}

impl Drop for Unstarted<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let s = self.session;
        for call in self.uses.iter().skip(self.next) {
            s.dispatcher
                .inner
                .cancelled_before_start(&s.context, Some(&s.stats), call);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.summary.get().is_some() {
            return;
        }
        if std::thread::panicking() {
            tracing::error!(target: "toolgate::observer", session_id = self.context.session_id(),
                "session dropped during a panic; Stop hooks skipped");
            return;
        }
        self.end();
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("context", &self.context)
            .field("ended", &self.summary.get().is_some())
            .finish_non_exhaustive()
    }
}
