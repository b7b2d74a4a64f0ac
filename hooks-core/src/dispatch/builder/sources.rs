//! Steps 1 to 3 of `build()`: the items the sources give (registered, hand-built), the candidate
//! tools (from definitions and wrapped callers), and the tool filters.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::Source;
use super::problems::{BuildProblem, Problems};
use crate::base::sort::{Names, sort_by};
use crate::hook::caller::ToolCaller;
use crate::hook::definitions::{InputType, PostHookDef, PreHookDef, StopHookDef, ToolDef};
use crate::hook::effect::Effect;
use crate::hook::registry::{RegistrationKind, registered};
use crate::hook::state::StateKey;
use crate::pipeline::inner::Backend;
use crate::provider::mcp;
use crate::schema::{canonicalize, closed_form};

/// Every tool and hook definition the sources give, before any filter.
pub(super) struct Items {
    pub(super) tools: Vec<ToolDef>,
    pub(super) pre: Vec<PreHookDef>,
    pub(super) post: Vec<PostHookDef>,
    pub(super) stop: Vec<StopHookDef>,
    /// Every tool name registered or given anywhere (a matcher may name a tool that this
    /// dispatcher filters out, or that only another dispatcher takes).
    pub(super) known_tools: Names,
    /// Where the hooks given to the builder explicitly start in `pre` and `post` (the
    /// registered ones come first).
    pub(super) explicit: Explicit,
}

/// The positions in `Items::pre` and `Items::post` of the first hook given to the builder
/// explicitly (`.pre_hook(…)`, `.post_hook(…)`).
#[derive(Clone, Copy, Default)]
pub(super) struct Explicit {
    pub(super) pre: usize,
    pub(super) post: usize,
}

impl Items {
    /// Step 1: the registered items the sources select, each once; a source that selects
    /// nothing is a problem.
    pub(super) fn registered(sources: &[Source], problems: &mut Problems<'_>) -> Items {
        let mut items = Items {
            tools: Vec::new(),
            pre: Vec::new(),
            post: Vec::new(),
            stop: Vec::new(),
            known_tools: Names::default(),
            explicit: Explicit::default(),
        };
        let mut taken = Names::default();
        // Sorted by path: inventory's order is the link order, which varies between builds.
        let mut all: Vec<_> = registered().collect();
        sort_by(&mut all, |a, b| a.path.cmp(b.path));
        for reg in &all {
            if let RegistrationKind::Tool { name, .. } = reg.kind {
                items.known_tools.insert(name);
            }
        }
        for source in sources {
            let selected: Vec<_> = all
                .iter()
                .filter(|r| match source {
                    Source::All => true,
                    Source::Under(prefix) => under(r.path, prefix),
                    Source::Item(path) => r.path == path,
                })
                .collect();
            if selected.is_empty() {
                problems.push(match source {
                    Source::All => continue,
                    Source::Under(prefix) => BuildProblem::NothingUnder(prefix.clone()),
                    Source::Item(path) => BuildProblem::NoSuchItem(path.clone()),
                });
            }
            for reg in selected {
                if !taken.insert(reg.path) {
                    continue;
                }
                match reg.kind {
                    RegistrationKind::Tool { make, .. } => items.tools.push(make()),
                    RegistrationKind::PreHook(make) => items.pre.push(make()),
                    RegistrationKind::PostHook(make) => items.post.push(make()),
                    RegistrationKind::StopHook(make) => items.stop.push(make()),
                }
            }
        }
        items
    }

    /// The hand-built definitions, after the registered ones.
    pub(super) fn with(
        mut self,
        tools: Vec<ToolDef>,
        pre: Vec<PreHookDef>,
        post: Vec<PostHookDef>,
        stop: Vec<StopHookDef>,
    ) -> Items {
        for t in &tools {
            self.known_tools.insert(&t.name);
        }
        self.explicit = Explicit {
            pre: self.pre.len(),
            post: self.post.len(),
        };
        self.tools.extend(tools);
        self.pre.extend(pre);
        self.post.extend(post);
        self.stop.extend(stop);
        self
    }
}

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// A tool of the dispatcher to be, from a definition or a wrapped caller.
pub(super) struct Candidate {
    pub(super) name: Cow<'static, str>,
    pub(super) path: Cow<'static, str>,
    pub(super) description: Cow<'static, str>,
    /// Canonical (a caller's schema is used as given).
    pub(super) schema: Value,
    /// As generated (schemars' form, or the caller's), checked against the meta-schema.
    pub(super) raw: Value,
    /// What inputs are validated or explained against (`ToolEntry::validation`).
    pub(super) validation: Value,
    /// A wrapped caller's schema compiled by `boon` (step 4).
    #[cfg(feature = "full-validation")]
    pub(super) full: Option<crate::schema::full::Compiled>,
    /// MCP's `outputSchema`, when the tool has one.
    pub(super) output: Option<Value>,
    pub(super) backend: Backend,
    pub(super) states: Vec<StateKey>,
    pub(super) timeout: Option<Duration>,
    /// `strict = true` / `false`, or neither.
    pub(super) strict: Option<bool>,
    pub(super) input_examples: Vec<Value>,
    /// As declared; after step 11, as in force (an undeclared one may count as `write`).
    pub(super) effect: Option<Effect>,
    /// Why a write tool needs no guard.
    pub(super) unguarded: Option<Cow<'static, str>>,
    /// The argument type (`None` for a wrapped caller's tool, whose input stays JSON).
    pub(super) input: Option<InputType>,
}

/// Step 2: the candidate tools, the definitions' then the callers' (whose names become known;
/// a caller's `input_examples` are kept, and a value there that is not an array is a problem).
pub(super) fn candidates(
    tools: Vec<ToolDef>,
    callers: &[Arc<dyn ToolCaller>],
    known_tools: &mut Names,
    problems: &mut Problems<'_>,
) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = tools.into_iter().map(Candidate::of_definition).collect();
    for (ci, caller) in callers.iter().enumerate() {
        for def in caller.tool_definitions() {
            let candidate = Candidate::of_caller(ci, caller, &def, problems);
            known_tools.insert(&candidate.name);
            candidates.push(candidate);
        }
    }
    candidates
}

impl Candidate {
    /// A tool from its definition: its schema canonical, its validation schema closed unless
    /// it allows unknown fields, its MCP output schema from its output type.
    fn of_definition(t: ToolDef) -> Candidate {
        Candidate {
            schema: canonicalize(&t.schema, !t.additional_properties),
            validation: closed_form(&t.schema, !t.additional_properties),
            #[cfg(feature = "full-validation")]
            full: None,
            raw: t.schema,
            output: t.output_schema.as_ref().and_then(mcp::output_schema),
            name: t.name,
            path: t.path,
            description: t.description,
            backend: Backend::Local(t.imp),
            states: t.states,
            timeout: t.timeout,
            strict: t.strict,
            input_examples: t.input_examples,
            effect: t.effect,
            unguarded: t.unguarded,
            input: Some(t.input),
        }
    }

    /// A tool of the wrapped caller number `ci`, from the definition it gives (`{"name",
    /// "description", "input_schema", "input_examples", "annotations", "unguarded"}`): its
    /// schema used as given, its effect read from MCP's annotations, its path
    /// `<wrapped caller #ci>::name`. `input_examples` that are not an array is a problem.
    fn of_caller(
        ci: usize,
        caller: &Arc<dyn ToolCaller>,
        def: &Value,
        problems: &mut Problems<'_>,
    ) -> Candidate {
        let text = |key: &str| {
            def.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let name = text("name");
        let description = text("description");
        let schema = def.get("input_schema").cloned().unwrap_or(Value::Null);
        let path = format!("<wrapped caller #{ci}>::{name}");
        let input_examples = match def.get("input_examples") {
            None => Vec::new(),
            Some(Value::Array(examples)) => examples.clone(),
            Some(other) => {
                problems.push(BuildProblem::InvalidInputExample {
                    tool: name.clone(),
                    path: path.clone(),
                    index: None,
                    field: String::new(),
                    problem: format!(
                        "it must be an array of input objects, found a JSON {}",
                        crate::content::de::kind_of(other)
                    ),
                });
                Vec::new()
            }
        };
        let effect = def
            .get("annotations")
            .and_then(Effect::from_mcp_annotations);
        let unguarded = def
            .get("unguarded")
            .and_then(Value::as_str)
            .map(|r| Cow::Owned(r.to_owned()));
        Candidate {
            path: Cow::Owned(path),
            name: Cow::Owned(name),
            description: Cow::Owned(description),
            raw: schema.clone(),
            validation: schema.clone(),
            #[cfg(feature = "full-validation")]
            full: None,
            schema,
            output: None,
            backend: Backend::Caller {
                caller: Arc::clone(caller),
            },
            states: Vec::new(),
            timeout: None,
            strict: None,
            input_examples,
            effect,
            unguarded,
            input: None,
        }
    }
}

/// Step 3: `only_tools` and `without_tools`; a name no candidate has is a problem.
pub(super) fn filter(
    candidates: &mut Vec<Candidate>,
    only: Option<&[String]>,
    without: &[String],
    problems: &mut Problems<'_>,
) {
    let mut provided = Names::default();
    for c in candidates.iter() {
        provided.insert(&c.name);
    }
    if let Some(only) = only {
        for n in only {
            if !provided.contains(n) {
                problems.push(BuildProblem::UnknownFilterTool(n.clone()));
            }
        }
        candidates.retain(|c| only.iter().any(|n| *n == c.name));
    }
    for n in without {
        if !provided.contains(n) {
            problems.push(BuildProblem::UnknownFilterTool(n.clone()));
        }
    }
    candidates.retain(|c| !without.iter().any(|n| *n == c.name));
}
