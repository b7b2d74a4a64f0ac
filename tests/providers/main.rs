//! The providers' tests, one binary: tool definitions and tool calls and results for every
//! provider (`providers`, checked by the rule validator in `provider_rules`), and the published
//! Anthropic fixtures (`fixtures_anthropic`). Tests are named `<file>::<test>`.

#[path = "../support/mod.rs"]
mod support;

mod fixtures_anthropic;
mod provider_rules;
mod providers;
