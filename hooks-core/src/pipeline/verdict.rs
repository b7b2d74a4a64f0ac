//! How a call ended: a [`Verdict`] (outcome, content, the hook at fault, operator detail), then
//! the [`Answer`] made of it, the `tool_result` the model reads and the record observers see.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::approval::ask::Asked;
use crate::audit::outcome::{CallRecord, Outcome};
use crate::base::panic::catch;
use crate::content::message::{ContentBlock, Message, ToolResult, ToolResultContent, ToolUse};
use crate::content::output::checked;
use crate::error::{Halt, ToolError};
use crate::hook::answer::CallAnswer;
use crate::pipeline::chain_verdict::ChainVerdict;
use crate::pipeline::limits::cut_content;
use crate::store::StoreError;
use crate::texts::{self, Problems};

/// How the call ended, before it becomes a `tool_result`.
pub(super) struct Verdict<'a> {
    outcome: Outcome,
    content: Option<ToolResultContent>,
    /// The hook that denied, errored or timed out.
    blocked_by: Option<Cow<'a, str>>,
    /// Operator-only text.
    detail: Option<String>,
    /// A PreToolUse hook could not decide: the agent halts.
    halt: bool,
}

/// A PreToolUse hook that could not decide.
pub(super) enum HookFailure {
    Failed(String),
    TimedOut(Duration),
}

impl<'a> Verdict<'a> {
    /// A verdict with `text` as the content; `is_error` follows from `outcome` (every outcome
    /// but `ok` is an error).
    #[inline]
    fn error(outcome: Outcome, text: String) -> Self {
        Verdict {
            outcome,
            content: Some(ToolResultContent::Text(text)),
            blocked_by: None,
            detail: None,
            halt: false,
        }
    }

    fn ok(content: Option<ToolResultContent>) -> Self {
        Verdict {
            outcome: Outcome::Ok,
            content,
            blocked_by: None,
            detail: None,
            halt: false,
        }
    }

    /// Whether a PreToolUse hook could not decide (the call halts the agent).
    #[inline]
    pub(super) fn halts(&self) -> bool {
        self.halt
    }

    /// The input does not match the tool's schema: every problem found (see
    /// `texts::invalid_input`).
    pub(super) fn invalid(tool: &str, problems: &Problems) -> Self {
        Verdict::error(Outcome::InvalidInput, texts::invalid_input(tool, problems))
    }

    /// A PreToolUse hook at `hook` rewrote the input into one that is invalid.
    pub(super) fn invalid_rewrite(tool: &str, hook: &str, problems: &Problems) -> Self {
        let (at, message) = match problems.listed.first() {
            Some(p) => (texts::at_path(&p.path), p.message.as_str()),
            None => (String::new(), ""),
        };
        let others = match problems.others(1) {
            o if o.is_empty() => o,
            o => format!(" ({o})"),
        };
        Verdict {
            detail: Some(format!(
                "PreToolUse hook `{hook}` rewrote the input into an invalid one{at}: \
                 {message}{others}"
            )),
            ..Verdict::error(
                Outcome::InvalidInput,
                texts::invalid_rewrite(tool, problems),
            )
        }
    }

    pub(super) fn unknown(name: &str, available: &str) -> Self {
        Verdict::error(Outcome::UnknownTool, texts::unknown_tool(name, available))
    }

    pub(super) fn blocked(hook: &'a str, reason: &str, instead: Option<&str>) -> Self {
        Verdict {
            blocked_by: Some(Cow::Borrowed(hook)),
            ..Verdict::error(Outcome::Blocked, texts::blocked(reason, instead))
        }
    }

    /// The PreToolUse hook at `hook` could not decide: `hook_failed` or `hook_timeout`, a halt.
    pub(super) fn hook_failed(hook: &'a str, failure: HookFailure) -> Self {
        match failure {
            HookFailure::Failed(detail) => {
                Verdict::halted(Cow::Borrowed(hook), Outcome::HookFailed, detail)
            }
            HookFailure::TimedOut(d) => Verdict::halted(
                Cow::Borrowed(hook),
                Outcome::HookTimeout,
                format!("the hook ran past its deadline of {} ms", d.as_millis()),
            ),
        }
    }

    /// The PreToolUse hook at `hook` rewrote the input back to one the call already had: the
    /// chain would loop forever. A halt (`hook_failed`); `by` is every rewrite, in order, and
    /// `cycle` the rewriters of the loop (those since the input was last had, `hook` last), each
    /// named once, in order.
    pub(super) fn chain_looped(hook: &'a str, by: &[&str], cycle: &[&str]) -> Self {
        Verdict::halted(
            Cow::Borrowed(hook),
            Outcome::HookFailed,
            format!(
                "the PreToolUse chain looped: the rewrites of {} undo each other (`{hook}` \
                 rewrote the input back to an earlier one; rewrites in order: {})",
                joined(cycle),
                listed(by)
            ),
        )
    }

    /// The PreToolUse chain rewrote the input more than `max` times for one call (the last
    /// time at `hook`). A halt (`hook_failed`); `by` is every rewrite, in order.
    pub(super) fn chain_unsettled(hook: &'a str, by: &[&str], max: usize) -> Self {
        Verdict::halted(
            Cow::Borrowed(hook),
            Outcome::HookFailed,
            format!(
                "the PreToolUse chain did not settle: more than {max} rewrites for one call \
                 (rewrites in order: {})",
                listed(by)
            ),
        )
    }

    fn halted(hook: Cow<'a, str>, outcome: Outcome, detail: String) -> Self {
        Verdict {
            blocked_by: Some(hook),
            detail: Some(detail),
            halt: true,
            ..Verdict::error(outcome, texts::HALT_MESSAGE.to_owned())
        }
    }

    /// The verdict of a local tool's return value: its content (blocks checked, see
    /// `output::checked`), or its error.
    #[inline]
    pub(super) fn produced(r: Result<ToolResultContent, ToolError>) -> Self {
        match r {
            // The common case, a text: nothing to check.
            Ok(text @ ToolResultContent::Text(_)) => Verdict::ok(Some(text)),
            Ok(blocks) => Verdict::produced_blocks(blocks),
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

    /// The verdict of a local tool's content blocks: checked first, a bad block making the call
    /// an internal `tool_error` (out of line: the text path does not carry it).
    #[inline(never)]
    fn produced_blocks(blocks: ToolResultContent) -> Self {
        match checked(blocks) {
            Ok(content) => Verdict::ok(content),
            Err(e) => Verdict::produced(Err(e)),
        }
    }

    /// The verdict of a wrapped caller's answer: its result is final and its outcome, hook at
    /// fault and detail carry over (see [`CallAnswer`] for what each outcome becomes); its halt
    /// halts this dispatcher too.
    pub(super) fn answered_by_caller(answer: Result<CallAnswer, Halt>) -> Self {
        let answer = match answer {
            Ok(a) => a,
            Err(halt) => {
                return Verdict::halted(
                    Cow::Owned(halt.hook),
                    halt.outcome,
                    format!("the wrapped caller halted: {}", halt.detail),
                );
            }
        };
        let CallAnswer {
            result,
            outcome,
            blocked_by,
            detail,
            ..
        } = answer;
        let (outcome, detail) = match outcome {
            Outcome::Ok if result.is_error => (Outcome::ToolError, detail),
            Outcome::HookFailed | Outcome::HookTimeout => {
                // A policy that could not decide fails closed here too, even when the caller
                // answered instead of halting.
                let detail = format!(
                    "the wrapped caller answered {outcome} without halting: {}",
                    detail.as_deref().unwrap_or("no detail")
                );
                let hook = blocked_by.unwrap_or_else(|| "<wrapped caller>".to_owned());
                return Verdict::halted(Cow::Owned(hook), outcome, detail);
            }
            Outcome::NotRun | Outcome::Cancelled => (
                Outcome::ToolError,
                Some(format!(
                    "the wrapped caller answered {outcome}, which a caller cannot answer; \
                     recorded as tool_error{}",
                    detail.map(|d| format!(": {d}")).unwrap_or_default()
                )),
            ),
            other => (other, detail),
        };
        Verdict {
            outcome,
            content: result.content,
            blocked_by: blocked_by.map(Cow::Owned),
            detail,
            halt: false,
        }
    }

    /// The call waits for a person's approval (the turn pauses): no content, not final.
    pub(super) fn awaiting() -> Self {
        Verdict {
            content: None,
            ..Verdict::error(Outcome::AwaitingApproval, String::new())
        }
    }

    /// A call that needs approval, refused: `blocked` with `text`, the first asking hook at
    /// fault, `detail` for the operator.
    fn refused_approval(asks: &[Asked], text: String, detail: String) -> Self {
        Verdict {
            blocked_by: asks.first().map(|a| Cow::Owned(a.hook.clone())),
            detail: Some(detail),
            ..Verdict::error(Outcome::Blocked, text)
        }
    }

    /// The call needs approval and nobody can give it here (no approver, and not a `respond`
    /// that could pause): `blocked`, fail closed.
    pub(super) fn needs_approval(asks: &[Asked]) -> Self {
        Verdict::refused_approval(
            asks,
            texts::needs_approval(asks.iter().map(|a| a.reason.as_str())),
            format!(
                "the call needs a person's approval ({}) and this dispatcher has no approver; \
                 only Session::respond can pause for one",
                asked_list(asks)
            ),
        )
    }

    /// The call needs approval and would pause, but cannot without keeping a field the audit
    /// log hides in clear (`why`): `blocked` as where nobody can approve, fail closed.
    pub(super) fn cannot_pause(asks: &[Asked], why: String) -> Self {
        Verdict::refused_approval(
            asks,
            texts::needs_approval(asks.iter().map(|a| a.reason.as_str())),
            format!(
                "the call needs a person's approval ({}); {why}",
                asked_list(asks)
            ),
        )
    }

    /// A person declined the call: `blocked`, by nobody's hook. The record names the person
    /// (`denied_by`, set by the caller) and the hooks that only asked (`asked_by`); no hook
    /// denied it, so `blocked_by` is absent and no report counts the decline as a hook's denial.
    pub(super) fn declined(asks: &[Asked], reason: &str) -> Self {
        Verdict {
            blocked_by: None,
            ..Verdict::refused_approval(
                asks,
                texts::declined(reason),
                format!("a person declined the call ({})", asked_list(asks)),
            )
        }
    }

    /// The approver gave no answer within `deadline`: a denial.
    pub(super) fn approval_timeout(asks: &[Asked], deadline: Duration) -> Self {
        Verdict::refused_approval(
            asks,
            texts::approval_timeout(deadline),
            format!(
                "the approver gave no answer within its deadline of {} ms ({})",
                deadline.as_millis(),
                asked_list(asks)
            ),
        )
    }

    /// The pending turn outlived its time to live `ttl`: a denial the model can act on.
    pub(super) fn expired(asks: &[Asked], ttl: Duration) -> Self {
        Verdict::refused_approval(
            asks,
            texts::approval_expired(ttl),
            format!(
                "the pending turn expired: it waited longer than its time to live of {} s ({})",
                ttl.as_secs(),
                asked_list(asks)
            ),
        )
    }

    /// The approver panicked (or its timer did): a denial.
    pub(super) fn approval_failed(asks: &[Asked], why: String) -> Self {
        Verdict::refused_approval(
            asks,
            texts::APPROVAL_FAILED.to_owned(),
            format!("the approver failed: {why} ({})", asked_list(asks)),
        )
    }

    pub(super) fn panicked(message: String) -> Self {
        Verdict {
            detail: Some(format!("the tool panicked: {message}")),
            ..Verdict::error(Outcome::Panicked, texts::PANIC_MESSAGE.to_owned())
        }
    }

    /// The timer panicked while a tool ran: an internal error (the tool is not at fault).
    pub(super) fn timer_failed(message: String) -> Self {
        Verdict {
            detail: Some(format!("the dispatcher's timer panicked: {message}")),
            ..Verdict::error(Outcome::ToolError, texts::INTERNAL_ERROR_MESSAGE.to_owned())
        }
    }

    pub(super) fn tool_timeout(deadline: Duration) -> Self {
        Verdict {
            detail: Some(format!(
                "the tool ran past its deadline of {} ms",
                deadline.as_millis()
            )),
            ..Verdict::error(Outcome::ToolTimeout, texts::tool_timeout(deadline))
        }
    }
}

/// The asks for a `detail`: `` asked by `a`: reason; `b`: reason ``.
fn asked_list(asks: &[Asked]) -> String {
    let list = asks
        .iter()
        .map(|a| format!("`{}`: {}", a.hook, a.reason))
        .collect::<Vec<_>>()
        .join("; ");
    format!("asked by {list}")
}

/// `paths` each named once, in order of first appearance, joined as a sentence does:
/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
fn joined(paths: &[&str]) -> String {
    let mut once: Vec<&str> = Vec::with_capacity(paths.len());
    for p in paths {
        if !once.contains(p) {
            once.push(p);
        }
    }
    match once.split_last() {
        Some((last, before @ [_, ..])) => format!("{} and `{last}`", listed(before)),
        _ => listed(&once),
    }
}

/// Hook paths for a `detail`: `` `a`, `b` ``.
fn listed(paths: &[&str]) -> String {
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Verdict<'_> {
    /// A verdict reached before the tool (a refusal at validation or in the chain) as the
    /// chain-only answer: its outcome, the text the model would read, the hook at fault, the
    /// operator detail, and the hooks that rewrote before it.
    pub(super) fn into_refusal(self, rewritten_by: &[&str]) -> ChainVerdict {
        ChainVerdict::Refuse {
            outcome: self.outcome,
            text: self
                .content
                .as_ref()
                .map(|c| c.text().into_owned())
                .unwrap_or_default(),
            blocked_by: self.blocked_by.map(Cow::into_owned),
            detail: self.detail,
            rewritten_by: rewritten_by.iter().map(|p| (*p).to_owned()).collect(),
        }
    }
}

/// A verdict made into the `tool_result` for `call`, its content cut to `max_result_bytes`.
pub(super) struct Answer<'a> {
    result: ToolResult,
    pub(super) outcome: Outcome,
    blocked_by: Option<Cow<'a, str>>,
    detail: Option<String>,
    /// The full size of the content, when it was cut.
    content_bytes: Option<usize>,
    halt: bool,
}

impl<'a> Answer<'a> {
    #[inline]
    pub(super) fn new(call: &ToolUse, verdict: Verdict<'a>, max_result_bytes: usize) -> Self {
        let Verdict {
            outcome,
            mut content,
            blocked_by,
            detail,
            halt,
        } = verdict;
        let content_bytes = content
            .as_mut()
            .and_then(|c| cut_content(c, max_result_bytes));
        Answer {
            result: ToolResult {
                tool_use_id: call.id.clone(),
                content,
                is_error: outcome != Outcome::Ok,
                extra: Map::new(),
            },
            outcome,
            blocked_by,
            detail,
            content_bytes,
            halt,
        }
    }

    /// Whether a PreToolUse hook could not decide: the agent halts, and this is no answer.
    #[inline]
    pub(super) fn halts(&self) -> bool {
        self.halt
    }

    /// The `tool_result`.
    pub(super) fn result(&self) -> &ToolResult {
        &self.result
    }

    /// Adds `more` to the operator detail (after what is there, `; ` between).
    pub(super) fn add_detail(&mut self, more: &str) {
        self.detail = Some(match self.detail.take() {
            Some(d) => format!("{d}; {more}"),
            None => more.to_owned(),
        });
    }

    /// The store refused this answer (`refusal`): the call's claim no longer held it, its lease
    /// run out (`lost`: why its renewals stopped, when one failed) and a retry took it over,
    /// so the store holds the call as interrupted. The answer becomes that one, `not_run` with
    /// the text every retry gets, and the tool's own answer goes to the operator detail: the
    /// model never reads an answer the store does not hold.
    pub(super) fn fenced(&mut self, refusal: &StoreError, lost: Option<&str>) {
        let ran = self.outcome;
        let given = self.result.content_text();
        let why = match lost {
            Some(lost) => format!("its renewal failed ({lost}), and "),
            None => String::new(),
        };
        self.add_detail(&format!(
            "the tool ran (outcome {ran}), but {why}{refusal}: the store holds the call as \
             interrupted, and that is its answer, here as to every retry; the tool's answer \
             was {given:?}"
        ));
        self.outcome = Outcome::NotRun;
        self.result.content = Some(ToolResultContent::Text(texts::NOT_RUN_AGAIN.to_owned()));
        self.result.is_error = true;
        self.content_bytes = None;
    }

    /// The answer's part of the record observers see of `call` (its input as recorded, how
    /// long it took): the outcome, the result (none for a paused call, `awaiting_approval`:
    /// not final), the hook at fault, the operator detail, the size of a cut content.
    pub(super) fn record<'r>(
        &'r self,
        call: &'r ToolUse,
        input: &'r Value,
        duration: Duration,
    ) -> CallRecord<'r> {
        let result = self.outcome.is_final().then_some(&self.result);
        CallRecord {
            blocked_by: self.blocked_by.as_deref(),
            detail: self.detail.as_deref(),
            content_bytes: self.content_bytes,
            ..CallRecord::new(call, input, self.outcome, result, duration)
        }
    }

    /// What the host gets: the answer, or, when a PreToolUse hook could not decide, a [`Halt`]
    /// whose answer is the one-block message carrying it.
    #[inline]
    pub(super) fn into_answer(self) -> Result<CallAnswer, Halt> {
        if !self.halt {
            return Ok(CallAnswer {
                result: self.result,
                outcome: self.outcome,
                blocked_by: self.blocked_by.map(Cow::into_owned),
                detail: self.detail,
            });
        }
        Err(Halt {
            outcome: self.outcome,
            hook: self.blocked_by.map(Cow::into_owned).unwrap_or_default(),
            tool_use_id: self.result.tool_use_id.clone(),
            detail: self.detail.unwrap_or_default(),
            answer: Box::new(Message::user(vec![ContentBlock::ToolResult(self.result)])),
            index: 0,
            ran_after: None,
        })
    }
}
