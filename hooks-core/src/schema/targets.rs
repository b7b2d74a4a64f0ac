//! The tool definitions of each target, under their first path: a re-export of the items that
//! live in [`crate::provider`], so that `toolgate_core::schema::targets::…` keeps naming them.
//!
//! Each target's transform now sits in its provider's file, beside that API's call and result
//! conversions: [`anthropic`](crate::provider::anthropic) (default and strict),
//! [`openai`](crate::provider::openai) (Chat Completions and the strict subset),
//! [`openai_responses`](crate::provider::openai_responses), [`gemini`](crate::provider::gemini)
//! and [`mcp`](crate::provider::mcp); the rules each one enforces are in its docs, and what every
//! target does with what it cannot take is in the [`provider`](crate::provider) module docs.

pub use crate::provider::openai::OPENAI_MAX_NESTING;
pub use crate::provider::{Definition, NonStrictTool, SchemaError, SchemaProblem, definition};
