//! Which API a recorded turn is in, read from its shape; the turn answered through the
//! session's entry point for that API; the assistant turns of a transcript; and
//! [`ReplayError`].

use serde_json::Value;

use crate::approval::pending::TurnFormat;
use crate::content::message::Message;
use crate::error::{ConvertError, RespondError};
use crate::session::Session;
use crate::session::reply::Reply;

/// Why a recorded turn or transcript could not be replayed: it is not one this build reads.
/// Nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// Not the shape of an assistant turn of any API this replay reads.
    #[error(
        "not an assistant turn: expected a Messages API message (`role: \"assistant\"`, a \
         `content` array), an OpenAI chat completion, choice or assistant message with \
         `tool_calls`, a Responses API response (`output`), or a Gemini response, candidate or \
         `model` content; this value has {found}"
    )]
    Unrecognized {
        /// What the value has instead: its keys, or its JSON type.
        found: String,
    },
    /// A turn of an API whose calls this build does not read.
    #[error("this is a {} turn; this build reads it only with the `{feature}` feature", turn_format.as_str())]
    NotBuilt {
        /// The turn's API.
        turn_format: TurnFormat,
        /// The cargo feature that reads it.
        feature: &'static str,
    },
    /// The turn has its API's shape, but a part of it cannot be read (a call item without an
    /// id or a name, a block of the wrong type).
    #[error("the turn cannot be read: {0}")]
    Unreadable(String),
    /// A user message: the replay runs assistant turns.
    #[error("this is a user message; a replay runs assistant turns")]
    NotAssistant,
    /// Not a transcript: a transcript is a JSON array of turns, or an object with `messages`
    /// or `contents`.
    #[error(
        "not a transcript: expected a JSON array of turns, or a conversation with `messages` \
         (Messages API, OpenAI Chat Completions) or `contents` (Gemini); this value has {found}"
    )]
    NotATranscript {
        /// What the value has instead.
        found: String,
    },
    /// An entry of a transcript could not be replayed.
    #[error("entry {index} of the transcript: {error}")]
    InTranscript {
        /// The entry's place in the transcript's array, from 0.
        index: usize,
        /// Why.
        error: Box<ReplayError>,
    },
}

/// What a value has, for an error: its keys in order, or its JSON type.
fn found(value: &Value) -> String {
    match value {
        Value::Object(map) if map.is_empty() => "no key".to_owned(),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().take(8).map(|k| format!("`{k}`")).collect();
            format!("the keys {}", keys.join(", "))
        }
        Value::Array(_) => "an array".to_owned(),
        Value::String(_) => "a string".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Null => "null".to_owned(),
    }
}

/// The API of a recorded turn, by its shape (see the module docs of `testing`).
///
/// # Errors
/// [`ReplayError::NotAssistant`] for a user message; [`ReplayError::Unrecognized`];
/// [`ReplayError::NotBuilt`] for an API whose feature is off.
pub(super) fn api_of(turn: &Value) -> Result<TurnFormat, ReplayError> {
    let has = |key: &str| turn.get(key).is_some();
    let role = turn.get("role").and_then(Value::as_str);
    let gemini = has("candidates")
        || turn.pointer("/content/parts").is_some()
        || (role == Some("model") && has("parts"));
    let chat = has("choices")
        || (has("message") && has("finish_reason"))
        || (role == Some("assistant") && has("tool_calls"));
    let format = if gemini {
        TurnFormat::Gemini
    } else if chat {
        TurnFormat::OpenaiChat
    } else if turn.get("output").is_some_and(Value::is_array) {
        TurnFormat::OpenaiResponses
    } else if role == Some("assistant") && turn.get("content").is_some_and(Value::is_array) {
        TurnFormat::AnthropicMessages
    } else if role == Some("user") {
        return Err(ReplayError::NotAssistant);
    } else {
        return Err(ReplayError::Unrecognized { found: found(turn) });
    };
    match format.feature() {
        Some(feature) if !built(format) => Err(ReplayError::NotBuilt {
            turn_format: format,
            feature,
        }),
        _ => Ok(format),
    }
}

/// Whether this build reads `format`'s calls.
fn built(format: TurnFormat) -> bool {
    let (openai, gemini) = (cfg!(feature = "openai"), cfg!(feature = "gemini"));
    match format {
        TurnFormat::AnthropicMessages => true,
        TurnFormat::OpenaiChat | TurnFormat::OpenaiResponses => openai,
        TurnFormat::Gemini => gemini,
    }
}

/// `turn` answered by `session`'s entry point for `format` (a bare assistant message or model
/// content wrapped as the choice or candidate the entry point takes), the answer as JSON.
/// `number` is the turn's place in the session (Gemini names a call without an id by it).
pub(super) async fn respond(
    session: &Session,
    format: TurnFormat,
    turn: &Value,
    number: usize,
) -> Result<Reply<Value>, RespondError> {
    match format {
        TurnFormat::AnthropicMessages => {
            let message: Message = serde_json::from_value(turn.clone())
                .map_err(|e| ConvertError::new("a Messages API message", e.to_string()))?;
            let reply = session.respond(&message).await?;
            Ok(map_answer(reply, |m| {
                serde_json::to_value(m).unwrap_or_default()
            }))
        }
        TurnFormat::OpenaiChat => openai_chat(session, turn).await,
        TurnFormat::OpenaiResponses => openai_response(session, turn).await,
        TurnFormat::Gemini => gemini(session, turn, number).await,
    }
}

/// An OpenAI Chat Completions turn: a completion, a choice, or an assistant message (wrapped
/// as a choice that stopped for its tool calls).
#[cfg(feature = "openai")]
async fn openai_chat(session: &Session, turn: &Value) -> Result<Reply<Value>, RespondError> {
    let choice = match turn.get("role") {
        Some(_) => serde_json::json!({"message": turn, "finish_reason": "tool_calls"}),
        None => turn.clone(),
    };
    let reply = session.respond_openai_choice(&choice).await?;
    Ok(map_answer(reply, Value::Array))
}

/// An OpenAI Responses API response.
#[cfg(feature = "openai")]
async fn openai_response(session: &Session, turn: &Value) -> Result<Reply<Value>, RespondError> {
    let reply = session.respond_openai_response(turn).await?;
    Ok(map_answer(reply, Value::Array))
}

/// A Gemini turn: a response, a candidate, or `model` content (wrapped as a candidate that
/// stopped).
#[cfg(feature = "gemini")]
async fn gemini(
    session: &Session,
    turn: &Value,
    number: usize,
) -> Result<Reply<Value>, RespondError> {
    let candidate = match turn.get("role") {
        Some(_) => serde_json::json!({"content": turn, "finishReason": "STOP"}),
        None => turn.clone(),
    };
    let reply = session.respond_gemini_candidate(&candidate, number).await?;
    Ok(map_answer(reply, Value::Array))
}

/// Without the `openai` feature ([`api_of`] refuses such a turn first).
#[cfg(not(feature = "openai"))]
async fn openai_chat(_session: &Session, _turn: &Value) -> Result<Reply<Value>, RespondError> {
    Err(not_built("openai"))
}

/// Without the `openai` feature ([`api_of`] refuses such a turn first).
#[cfg(not(feature = "openai"))]
async fn openai_response(_session: &Session, _turn: &Value) -> Result<Reply<Value>, RespondError> {
    Err(not_built("openai"))
}

/// Without the `gemini` feature ([`api_of`] refuses such a turn first).
#[cfg(not(feature = "gemini"))]
async fn gemini(
    _session: &Session,
    _turn: &Value,
    _number: usize,
) -> Result<Reply<Value>, RespondError> {
    Err(not_built("gemini"))
}

/// The error of a turn whose API this build does not read.
#[cfg(not(all(feature = "openai", feature = "gemini")))]
fn not_built(feature: &str) -> RespondError {
    RespondError::Convert(ConvertError::new(
        "the turn",
        format!("this build lacks the `{feature}` feature"),
    ))
}

/// `reply` with its answer made JSON by `f`.
fn map_answer<T>(reply: Reply<T>, f: impl FnOnce(T) -> Value) -> Reply<Value> {
    match reply {
        Reply::Answer(answer) => Reply::Answer(f(answer)),
        Reply::NothingToRun { stop_reason } => Reply::NothingToRun { stop_reason },
        Reply::Pending(pending) => Reply::Pending(pending),
    }
}

/// The entries of a transcript to replay, with their places: every entry but the user's
/// messages, tool results and instructions (`role` `user`, `tool`, `system`, `developer`, and
/// the Responses API's `function_call_output` items), which a replay makes anew or does not
/// need.
///
/// # Errors
/// [`ReplayError::NotATranscript`].
pub(super) fn assistant_turns(transcript: &Value) -> Result<Vec<(usize, &Value)>, ReplayError> {
    let entries = match transcript {
        Value::Array(entries) => entries,
        Value::Object(map) => match map.get("messages").or_else(|| map.get("contents")) {
            Some(Value::Array(entries)) => entries,
            _ => {
                return Err(ReplayError::NotATranscript {
                    found: found(transcript),
                });
            }
        },
        other => {
            return Err(ReplayError::NotATranscript {
                found: found(other),
            });
        }
    };
    let skipped = |entry: &Value| {
        let role = entry.get("role").and_then(Value::as_str);
        matches!(role, Some("user" | "tool" | "system" | "developer"))
            || entry.get("type").and_then(Value::as_str) == Some("function_call_output")
    };
    Ok(entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| !skipped(entry))
        .collect())
}
