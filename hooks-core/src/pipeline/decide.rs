//! The PreToolUse chain asked on its own: steps 1 to 4 of a call (normalize, look up, validate,
//! the chain), never the tool, never the observers, nothing counted in a session.

use crate::content::ToolUse;
use crate::context::HookContext;
use crate::inner::Inner;
use crate::normalize::{Refused, normalize};
use crate::pre_tool_use::PreToolUse;
use crate::state::Env;
use crate::texts::{Problem, Problems};

use super::verdict::Verdict;
use super::{Rewrites, validate};

impl Inner {
    /// What the PreToolUse chain decides about `call` for the session `context` describes.
    pub(crate) async fn pre_tool_use(&self, context: &HookContext, call: &ToolUse) -> PreToolUse {
        let env = Env::new(context, &self.states);
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
        let tool = &self.tools[index];
        let args = match validate(tool, &current.input) {
            Ok(a) => a,
            Err(problems) => return Verdict::invalid(&tool.name, &problems).into_refusal(&[]),
        };
        let mut rewrites = Rewrites::default();
        match self
            .run_chain(tool, env, &current, args, &mut rewrites)
            .await
        {
            Ok(_args) => {
                let rewritten_by = rewrites.by.iter().map(|p| (*p).to_owned()).collect();
                let input = match rewrites.call {
                    Some(rewritten) => rewritten.input,
                    None => current.input.clone(),
                };
                if rewrites.asks.is_empty() {
                    PreToolUse::Allow {
                        input,
                        rewritten_by,
                    }
                } else {
                    PreToolUse::Ask {
                        input,
                        rewritten_by,
                        asked_by: rewrites.asks,
                    }
                }
            }
            Err(verdict) => verdict.into_refusal(&rewrites.by),
        }
    }
}
