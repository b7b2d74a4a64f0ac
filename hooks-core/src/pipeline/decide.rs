//! The PreToolUse chain asked on its own: steps 1 to 4 of a call (normalize, look up, validate,
//! the chain), never the tool, never the observers, nothing counted in a session.

#[cfg(feature = "claude-code")]
use serde_json::{Map, Value};

use crate::content::message::ToolUse;
use crate::hook::context::HookContext;
#[cfg(feature = "claude-code")]
use crate::hook::definitions::ToolDef;
use crate::hook::state::Env;
use crate::pipeline::chain_verdict::ChainVerdict;
#[cfg(feature = "claude-code")]
use crate::pipeline::inner::Backend;
use crate::pipeline::inner::{Inner, ToolEntry};
use crate::pipeline::normalize::{Refused, normalize};
#[cfg(feature = "claude-code")]
use crate::schema::check::FieldCheck;
#[cfg(feature = "claude-code")]
use crate::schema::{canonicalize, closed_form};
use crate::texts::{Problem, Problems};

use super::validate::validate;
use super::verdict::Verdict;
use crate::pipeline::chain::ChainState;

impl Inner {
    /// What the PreToolUse chain decides about `call` for the session `context` describes.
    pub(crate) async fn pre_tool_use(&self, context: &HookContext, call: &ToolUse) -> ChainVerdict {
        let current = match normalize(call, &self.limits) {
            Ok(c) => c,
            Err(Refused(msg)) => {
                let problem = Problems::one(Problem::here(msg));
                return Verdict::invalid(&call.name, &problem).into_refusal(&[]);
            }
        };
        let Some(index) = self.find(&call.name) else {
            return Verdict::unknown(&call.name, &self.available).into_refusal(&[]);
        };
        self.decide_on(&self.tools[index], context, &current).await
    }

    /// [`pre_tool_use`](Self::pre_tool_use) for a host that runs its own tools (Claude Code's
    /// `Bash`, `Write`, an `mcp__…` tool): a tool the dispatcher does not know goes through the
    /// untyped hooks that match every tool (`open_chain`), with an open schema (any JSON object
    /// is valid input). With no such hook it is refused as `unknown_tool`, which the host reads
    /// as "no decision".
    #[cfg(feature = "claude-code")]
    pub(crate) async fn pre_tool_use_in_host(
        &self,
        context: &HookContext,
        call: &ToolUse,
    ) -> ChainVerdict {
        if self.open_chain.is_empty() || self.find(&call.name).is_some() {
            return self.pre_tool_use(context, call).await;
        }
        let current = match normalize(call, &self.limits) {
            Ok(c) => c,
            Err(Refused(msg)) => {
                let problem = Problems::one(Problem::here(msg));
                return Verdict::invalid(&call.name, &problem).into_refusal(&[]);
            }
        };
        let open = self.open_entry(&call.name);
        self.decide_on(&open, context, &current).await
    }

    /// Steps 3 and 4 for `tool`: validate `current`'s input, then run the chain.
    async fn decide_on(
        &self,
        tool: &ToolEntry,
        context: &HookContext,
        current: &ToolUse,
    ) -> ChainVerdict {
        let env = Env::new(context, &self.states);
        let args = match validate(tool, &current.input) {
            Ok(a) => a,
            Err(problems) => return Verdict::invalid(&tool.name, &problems).into_refusal(&[]),
        };
        let mut state = ChainState::default();
        match self
            .run_chain(tool, env, current, args, &mut state, &tracing::Span::none())
            .await
        {
            Ok(_args) => {
                let rewritten_by = state.by.iter().map(|p| (*p).to_owned()).collect();
                let input = match state.call {
                    Some(rewritten) => rewritten.input,
                    None => current.input.clone(),
                };
                if state.asks.is_empty() {
                    ChainVerdict::Allow {
                        input,
                        rewritten_by,
                    }
                } else {
                    ChainVerdict::Ask {
                        input,
                        rewritten_by,
                        asked_by: state.asks,
                    }
                }
            }
            Err(verdict) => verdict.into_refusal(&state.by),
        }
    }

    /// A tool entry for a host's tool named `name` that the dispatcher does not know: external
    /// (never run here), its input any JSON object, its chain `open_chain`.
    #[cfg(feature = "claude-code")]
    fn open_entry(&self, name: &str) -> ToolEntry {
        let def = ToolDef::external::<Map<String, Value>>(name.to_owned(), "");
        let canonical = canonicalize(&def.schema, false);
        ToolEntry {
            fields: FieldCheck::from_schema(&canonical),
            validation: closed_form(&def.schema, false),
            canonical,
            #[cfg(feature = "full-validation")]
            full: None,
            output_schema: None,
            description: String::new(),
            path: def.path,
            name: def.name,
            backend: Backend::Local(def.imp),
            chain: self.open_chain.clone(),
            observers: self.observers_of_unknown.clone(),
            timeout: None,
            strict: None,
            input_examples: Vec::new(),
            effect: None,
            unguarded: None,
        }
    }
}
