//! Options of one definitions call ([`Dispatcher::tool_definitions_with`]): what belongs to the
//! request's tool list as a whole rather than to one tool. Today: Anthropic's `cache_control`
//! breakpoint, which goes on the list's last entry.
//!
//! [`Dispatcher::tool_definitions_with`]: crate::Dispatcher::tool_definitions_with

use serde_json::{Value, json};

use super::Provider;

/// Options of [`Dispatcher::tool_definitions_with`](crate::Dispatcher::tool_definitions_with),
/// built from [`DefinitionOptions::new`] (nothing set: the same entries as
/// [`tool_definitions_for`](crate::Dispatcher::tool_definitions_for)).
///
/// ```
/// use toolgate_core::provider::{CacheControl, CacheTtl, DefinitionOptions};
///
/// let options = DefinitionOptions::new()
///     .cache_control(CacheControl::ephemeral().ttl(CacheTtl::OneHour));
/// assert_eq!(options.cache_control, Some(CacheControl::ephemeral().ttl(CacheTtl::OneHour)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefinitionOptions {
    /// A prompt-caching breakpoint on the last tool (Anthropic "Prompt caching": "Tools: Tool
    /// definitions in the `tools` array" are cacheable, and a `cache_control` on the last one
    /// caches the whole list). Written as that entry's `cache_control` field for
    /// [`Provider::Anthropic`] and [`Provider::AnthropicStrict`]; the other targets have no
    /// such field (OpenAI and Gemini cache a request's prefix on their own; an MCP `tools/list`
    /// is not a model request), so there it changes nothing. No tools, no breakpoint.
    pub cache_control: Option<CacheControl>,
}

impl DefinitionOptions {
    /// No option set.
    pub fn new() -> Self {
        DefinitionOptions::default()
    }

    /// Sets [`cache_control`](Self::cache_control).
    pub fn cache_control(mut self, cache_control: CacheControl) -> Self {
        self.cache_control = Some(cache_control);
        self
    }
}

/// An Anthropic prompt-caching breakpoint (docs: "Prompt caching"): `{"type": "ephemeral"}`,
/// the default lifetime of 5 minutes, or with a `ttl` (`{"type": "ephemeral", "ttl": "1h"}`).
///
/// ```
/// use serde_json::json;
/// use toolgate_core::provider::{CacheControl, CacheTtl};
///
/// assert_eq!(CacheControl::ephemeral().to_json(), json!({"type": "ephemeral"}));
/// assert_eq!(CacheControl::ephemeral().ttl(CacheTtl::OneHour).to_json(),
///            json!({"type": "ephemeral", "ttl": "1h"}));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheControl {
    ttl: Option<CacheTtl>,
}

/// How long a cache entry lives (`ttl` of a [`CacheControl`]): `"5m"` or `"1h"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheTtl {
    /// `"5m"`, the API's default when no `ttl` is given.
    FiveMinutes,
    /// `"1h"` (a cache write costs more; see the API's pricing).
    OneHour,
}

impl CacheControl {
    /// `{"type": "ephemeral"}`: the API's default lifetime (5 minutes).
    pub const fn ephemeral() -> Self {
        CacheControl { ttl: None }
    }

    /// The same breakpoint with an explicit `ttl`.
    pub const fn ttl(self, ttl: CacheTtl) -> Self {
        CacheControl { ttl: Some(ttl) }
    }

    /// The `cache_control` object as sent.
    pub fn to_json(self) -> Value {
        match self.ttl {
            None => json!({"type": "ephemeral"}),
            Some(CacheTtl::FiveMinutes) => json!({"type": "ephemeral", "ttl": "5m"}),
            Some(CacheTtl::OneHour) => json!({"type": "ephemeral", "ttl": "1h"}),
        }
    }
}

/// `definitions` (one target's entries, in order) with `options` applied for `provider`.
pub(crate) fn apply(provider: Provider, definitions: &mut [Value], options: &DefinitionOptions) {
    if let Some(cache_control) = options.cache_control
        && provider.target().cache_control
        && let Some(Value::Object(last)) = definitions.last_mut()
    {
        last.insert("cache_control".into(), cache_control.to_json());
    }
}
