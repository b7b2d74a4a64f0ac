//! The other APIs' whole turns through a [`Session`]: an OpenAI Chat Completions choice, an
//! OpenAI Responses response, a Gemini candidate. Each entry point reads the turn's finish
//! reason with its calls, so the truncation guard cannot be skipped: a turn cut at its output
//! limit runs nothing (as the Messages API's `max_tokens` does in
//! [`Session::respond`]), each call audited as `not_run`.
//!
//! | entry point | takes | cut when | ids | the turn's name | answer items |
//! |---|---|---|---|---|---|
//! | [`Session::respond_openai_choice`] | a choice (or a chat completion with one) | `finish_reason: "length"` | non-empty, unique | the completion's `id` (`chatcmpl-…`); none for a choice alone | `role: "tool"` messages ([`openai::tool_message`]) |
//! | [`Session::respond_openai_response`] | a Response | `status: "incomplete"` on it or on a `function_call` item | `call_id` non-empty, unique | its `id` (`resp_…`) | `function_call_output` items ([`openai_responses::function_call_output`]) |
//! | [`Session::respond_gemini_candidate`] | a candidate (or a response with one) | `finishReason: "MAX_TOKENS"` | unique; absent → `gemini-{turn}-{i}` | `gemini-{turn}`, from the host's turn number | `functionResponse` parts ([`gemini::function_response`]) |
//!
//! Everything else is [`Session::respond`]'s: calls run in order, each id remembered in the
//! turn's name (a resent turn runs nothing twice; a later turn that reuses a call id, as vLLM's
//! `functions.get_time:0`, is a new call; a turn without a name that reuses one is refused,
//! [`CallError::IdRecycled`](crate::CallError::IdRecycled)), a call that asks for a person
//! pauses the turn ([`Reply::Pending`], resumed by [`Session::resume`] into this API's answer
//! items), a halt
//! answers every call (its [`Halt::answer`](crate::Halt::answer) holds Messages API
//! `tool_result` blocks: convert each with the same function as above).

use serde_json::Value;

use crate::approval::pending::TurnFormat;
use crate::content::message::ToolUse;
use crate::error::RespondError;
use crate::provider::Turn;
#[cfg(feature = "gemini")]
use crate::provider::gemini;
#[cfg(feature = "openai")]
use crate::provider::{openai, openai_responses};
use crate::session::reply::Reply;
use crate::session::respond::answer_items;
use crate::session::{Session, TurnName};
use crate::texts;

/// What an API's truncation error names.
struct Api {
    name: &'static str,
    limit: &'static str,
}

impl Session {
    /// Answers one OpenAI Chat Completions choice: `{"index": 0, "message": {"role":
    /// "assistant", "tool_calls": [ … ]}, "finish_reason": "tool_calls"}` (or the whole chat
    /// completion when it has exactly one choice).
    ///
    /// [`Reply::Answer`] holds one `{"role": "tool", "tool_call_id": "call_…", "content": "…"}`
    /// message per tool call, in order ([`openai::tool_message`]), to append after the
    /// assistant message. A choice without tool calls gets [`Reply::NothingToRun`] with its
    /// `finish_reason`.
    ///
    /// Pass the whole completion: its `id` names the turn, so a resend of it is answered from
    /// memory and a later completion's call with the same id (vLLM numbers a turn's calls:
    /// `functions.get_time:0`) runs as a new call. A choice alone has no id: a call id this
    /// session saw before is refused ([`CallError::IdRecycled`](crate::CallError::IdRecycled)),
    /// a resend included.
    ///
    /// # Errors
    /// [`RespondError::Truncated`] when `finish_reason` is `"length"` and the message has tool
    /// calls (nothing runs; each call is audited as `not_run`); [`RespondError::Convert`] when
    /// the choice cannot be read; [`RespondError::Id`] for an empty or repeated id; and the
    /// errors of [`respond`](Self::respond).
    #[cfg(feature = "openai")]
    pub async fn respond_openai_choice(
        &self,
        choice: &Value,
    ) -> Result<Reply<Vec<Value>>, RespondError> {
        let turn = openai::choice_turn(choice)?;
        let api = Api {
            name: "OpenAI Chat Completions",
            limit: "max_completion_tokens",
        };
        self.respond_whole(&turn, TurnFormat::OpenaiChat, api).await
    }

    /// Answers one OpenAI Responses API response: `{"id": "resp_…", "status": "completed",
    /// "output": [{"type": "function_call", "call_id": "call_…", "name": …, "arguments": "…"},
    /// …]}`.
    ///
    /// [`Reply::Answer`] holds one `{"type": "function_call_output", "call_id": "call_…",
    /// "output": "…"}` item per `function_call`, in order
    /// ([`openai_responses::function_call_output`]), for the next request's `input`. A response
    /// without `function_call` items gets [`Reply::NothingToRun`] with its `status`.
    ///
    /// Its `id` names the turn, as the completion's does for
    /// [`respond_openai_choice`](Self::respond_openai_choice); a Response without one has no
    /// turn.
    ///
    /// # Errors
    /// [`RespondError::Truncated`] when the response's `status` is `"incomplete"` (its
    /// `incomplete_details.reason` is named), or a `function_call` item's is, and it has calls:
    /// nothing runs; each call is audited as `not_run`. Otherwise as
    /// [`respond_openai_choice`](Self::respond_openai_choice).
    #[cfg(feature = "openai")]
    pub async fn respond_openai_response(
        &self,
        response: &Value,
    ) -> Result<Reply<Vec<Value>>, RespondError> {
        let turn = openai_responses::response_turn(response)?;
        let api = Api {
            name: "OpenAI Responses",
            limit: "max_output_tokens",
        };
        self.respond_whole(&turn, TurnFormat::OpenaiResponses, api)
            .await
    }

    /// Answers one Gemini candidate: `{"content": {"role": "model", "parts": [{"functionCall":
    /// {"name": …, "args": {…}}}, …]}, "finishReason": "STOP"}` (or a `GenerateContentResponse`
    /// with exactly one candidate). `turn` is the candidate's turn in the host's history (the
    /// same number when the host retries it), and names it, `gemini-{turn}`: a retry is
    /// answered from the session's memory and a later turn's call is a new call, even when
    /// Gemini's call ids recur. A call without an id gets the id `gemini-{turn}-{i}` (`i`: its
    /// position among the candidate's calls, from 0).
    ///
    /// [`Reply::Answer`] holds one `{"functionResponse": {"name": …, "response": {"output": …}}}`
    /// part per call, in order ([`gemini::function_response`]; `id` only when Gemini gave one),
    /// for the next `{"role": "user", "parts": […]}` content. A candidate without calls gets
    /// [`Reply::NothingToRun`] with its `finishReason`.
    ///
    /// # Errors
    /// [`RespondError::Truncated`] when `finishReason` is `"MAX_TOKENS"` and it has calls:
    /// nothing runs; each call is audited as `not_run`. Otherwise as
    /// [`respond_openai_choice`](Self::respond_openai_choice).
    #[cfg(feature = "gemini")]
    pub async fn respond_gemini_candidate(
        &self,
        candidate: &Value,
        turn: usize,
    ) -> Result<Reply<Vec<Value>>, RespondError> {
        let read = gemini::candidate_turn(candidate, turn)?;
        let api = Api {
            name: "Gemini",
            limit: "maxOutputTokens",
        };
        self.respond_whole(&read, TurnFormat::Gemini, api).await
    }

    /// The part every entry point shares: nothing to run, the truncation guard, then the
    /// calls, their ids held to the API-neutral rules (non-empty, unique), and the answer in the
    /// API's shape, or the turn paused for a person.
    async fn respond_whole(
        &self,
        turn: &Turn<'_>,
        format: TurnFormat,
        api: Api,
    ) -> Result<Reply<Vec<Value>>, RespondError> {
        if turn.uses.is_empty() {
            return Ok(Reply::NothingToRun {
                stop_reason: turn.stop_reason.clone(),
            });
        }
        let uses: Vec<&ToolUse> = turn.uses.iter().collect();
        if let Some(signal) = &turn.truncated {
            self.not_run_all(&uses, texts::NOT_RUN_TRUNCATED).await;
            return Err(RespondError::Truncated {
                api: api.name,
                signal: signal.clone(),
                limit: api.limit,
                tool_uses: uses.len(),
            });
        }
        let name = TurnName::of_response(turn.id.as_deref());
        let blocks = self.run_turn(&uses, name, false).await?;
        let calls: Vec<Option<&Value>> = turn.items.iter().map(|&v| Some(v)).collect();
        let reply = self.finish_turn(format, name, &turn.items, blocks, |results| {
            answer_items(format, &calls, &results).unwrap_or_default()
        });
        self.keep_paused(reply).await
    }
}
