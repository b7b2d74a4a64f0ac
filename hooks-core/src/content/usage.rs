//! [`Usage`]: the tokens a session's model responses used, added by the host
//! ([`Session::add_usage`](crate::Session::add_usage)) and counted in its
//! [`SessionSummary`](crate::audit::SessionSummary), so the audit log's summary line can be priced.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::message::Message;

/// Token counts, named as the Messages API's `usage` object names them (source: the Messages
/// API reference, "usage"; the API bills input, output, cache writes and cache reads at
/// different rates, so each is kept apart).
///
/// Serialized as `{"input_tokens": 1200, "output_tokens": 85, "cache_creation_input_tokens": 0,
/// "cache_read_input_tokens": 0}`; read back with any member absent as 0. A host on another API
/// maps its counts with [`Usage::new`] (OpenAI's `prompt_tokens`/`completion_tokens`, Gemini's
/// `promptTokenCount`/`candidatesTokenCount`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens not read from or written to the prompt cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// `input_tokens` and `output_tokens`; no cache tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }
    }

    /// This usage with the prompt cache's counts set.
    pub fn with_cache(mut self, creation_input_tokens: u64, read_input_tokens: u64) -> Usage {
        self.cache_creation_input_tokens = creation_input_tokens;
        self.cache_read_input_tokens = read_input_tokens;
        self
    }

    /// The `usage` of a Messages API response: `{"usage": {"input_tokens": 1200,
    /// "output_tokens": 85, "cache_creation_input_tokens": null, …}, …}`. A member that is
    /// absent, `null` or not a whole number counts 0; `None` when the message has no `usage`
    /// object (a user message, a message built by hand).
    ///
    /// ```
    /// use toolgate_core::content::Usage;
    /// use toolgate_core::Message;
    ///
    /// let response: Message = serde_json::from_value(serde_json::json!({
    ///     "role": "assistant", "content": [], "stop_reason": "end_turn",
    ///     "usage": {"input_tokens": 1200, "output_tokens": 85, "cache_read_input_tokens": 900}
    /// })).unwrap();
    /// assert_eq!(Usage::of_response(&response), Some(Usage::new(1200, 85).with_cache(0, 900)));
    /// ```
    pub fn of_response(message: &Message) -> Option<Usage> {
        let usage = message.extra.get("usage")?.as_object()?;
        let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
        Some(Usage {
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
            cache_creation_input_tokens: count("cache_creation_input_tokens"),
            cache_read_input_tokens: count("cache_read_input_tokens"),
        })
    }

    /// Whether every count is 0 (a session no usage was added to; its summary line then has no
    /// `usage` member).
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

impl AddAssign for Usage {
    /// Adds each count (saturating at `u64::MAX`).
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
    }
}
