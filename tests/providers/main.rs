//! The providers' tests, one binary: tool definitions and tool calls and results for every
//! provider (`providers`, checked by the rule validator in `provider_rules`), the published
//! Anthropic fixtures (`fixtures_anthropic`), the providers' limits on strict tools
//! (`strict_limits`), the per-tool and per-call options: `strict`, `input_examples`,
//! `cache_control` (`options`), tool results per target, text, JSON and content blocks
//! (`results`), and the other APIs' whole turns through a session (`turns`). Tests are named
//! `<file>::<test>`.

#[path = "../support/mod.rs"]
mod support;

mod fixtures_anthropic;
mod options;
mod provider_rules;
mod providers;
mod recycled_ids;
mod results;
mod strict_limits;
mod turns;
