//! Steps 4 to 11 of `build()`: the start-up checks of the kept tools (schema, name,
//! description, input examples, duplicates, strict mode) and of the hooks (matchers, typed
//! inputs, which hooks are kept, states, guarded writes), each pushing its [`BuildProblem`]s.

use std::borrow::Cow;

use super::problems::{BuildProblem, Problems};
use super::sources::{Candidate, Explicit};
use crate::audit::AuditLog;
use crate::base::sort::{Names, sort_by};
use crate::dispatch::examples;
use crate::hook::definitions::{InputType, Matcher, PostHookDef, PreHookDef, StopHookDef};
use crate::hook::effect::Effect;
use crate::pipeline::inner::Backend;
use crate::provider::{Provider, ToolSource, marked_strict_problems};
use crate::schema::check::{open_properties, root_problem};
use crate::schema::meta;
use crate::schema::{is_valid_tool_name, unwrap_doc};

/// Step 4: one kept tool's schema against the JSON Schema meta-schema of its draft
/// (`schema::meta`; with the `full-validation` feature, also compiled by `boon`, which keeps a
/// wrapped caller's compiled schema for validating its inputs). Every tool's schema is checked:
/// a derived one may hold a `#[schemars(schema_with = …)]` part, and a wrapped caller's (a
/// remote server's) is whatever it sent. `false` when the schema is invalid (each fault is an
/// [`BuildProblem::InvalidSchema`]); the tool's other schema checks are then skipped, since they
/// would read a schema that means nothing.
pub(super) fn check_schema(c: &mut Candidate, problems: &mut Problems<'_>) -> bool {
    let (draft, mut faults) = meta::check(&c.raw);
    #[cfg(feature = "full-validation")]
    if faults.is_empty() {
        match crate::schema::full::compile(&c.raw) {
            Ok(compiled) => {
                if matches!(c.backend, Backend::Caller { .. }) {
                    c.full = Some(compiled);
                }
            }
            Err(f) => faults = f,
        }
    }
    let valid = faults.is_empty();
    for fault in faults.drain(..) {
        problems.push(BuildProblem::InvalidSchema {
            tool: c.name.to_string(),
            path: c.path.to_string(),
            draft: draft.name(),
            keyword: fault.pointer,
            reason: fault.reason,
        });
    }
    valid
}

/// Step 4: one kept tool on its own: its name, description, schema (when it is valid JSON
/// Schema) and states.
pub(super) fn check_tool(c: &Candidate, schema_valid: bool, problems: &mut Problems<'_>) {
    let tool = || c.name.to_string();
    let path = || c.path.to_string();
    if !is_valid_tool_name(&c.name) {
        problems.push(BuildProblem::InvalidToolName {
            tool: tool(),
            path: path(),
        });
    }
    if c.description.trim().is_empty() {
        problems.push(BuildProblem::NoDescription {
            tool: tool(),
            path: path(),
        });
    }
    if let Some(found) = root_problem(&c.schema).filter(|_| schema_valid) {
        problems.push(BuildProblem::RootNotObject {
            tool: tool(),
            path: path(),
            found,
        });
    }
    let open = if schema_valid {
        open_properties(&c.schema)
    } else {
        Vec::new()
    };
    for property in open {
        problems.push(BuildProblem::OpenProperty {
            tool: tool(),
            path: path(),
            property,
        });
    }
    problems.need_states(&c.path, &c.states);
}

/// Step 5: a kept tool's input examples, each checked as a call's input is (`examples.rs`).
pub(super) fn check_input_examples(c: &Candidate, problems: &mut Problems<'_>) {
    let imp = match &c.backend {
        Backend::Local(imp) => Some(imp.as_ref()),
        Backend::Caller { .. } => None,
    };
    for p in examples::check(&c.schema, &c.validation, imp, &c.input_examples) {
        problems.push(BuildProblem::InvalidInputExample {
            tool: c.name.to_string(),
            path: c.path.to_string(),
            index: Some(p.index),
            field: p.field,
            problem: p.problem,
        });
    }
}

/// Step 6: two kept tools with one name, named by their sorted paths.
pub(super) fn check_duplicates(candidates: &[Candidate], problems: &mut Problems<'_>) {
    let mut named: Vec<(&str, &str)> = Vec::with_capacity(candidates.len());
    for c in candidates {
        named.push((&c.name, &c.path));
    }
    sort_by(&mut named, |a, b| a.cmp(b));
    let mut rest = named.as_slice();
    while let Some(&(name, _)) = rest.first() {
        let same = rest.iter().take_while(|(n, _)| *n == name).count();
        if same > 1 {
            problems.push(BuildProblem::DuplicateTool {
                tool: name.to_owned(),
                paths: rest[..same].iter().map(|(_, p)| (*p).to_owned()).collect(),
            });
        }
        rest = &rest[same..];
    }
}

/// Step 7: the tools marked `strict = true`, for every strict target: each one's schema fits the
/// target's strict subset and its limits on one schema, and together they fit its limits on a
/// request (a marked tool is never emitted non-strict, so the dispatcher cannot be built
/// otherwise). Tools in name order, targets in [`Provider::ALL`] order.
pub(super) fn check_marked_strict(candidates: &[Candidate], problems: &mut Problems<'_>) {
    let mut marked: Vec<(&Candidate, String)> = candidates
        .iter()
        .filter(|c| c.strict == Some(true))
        .map(|c| (c, unwrap_doc(&c.description)))
        .collect();
    if marked.is_empty() {
        return;
    }
    sort_by(&mut marked, |a, b| a.0.name.cmp(&b.0.name));
    for provider in Provider::ALL.into_iter().filter(|p| p.is_strict()) {
        let sources = marked.iter().map(|(c, description)| ToolSource {
            name: &c.name,
            description,
            canonical: &c.schema,
            strict: c.strict,
            input_examples: &c.input_examples,
            output_schema: c.output.as_ref(),
        });
        let (not_strict, over) = marked_strict_problems(provider, sources);
        for (i, reason) in not_strict {
            let c = marked[i].0;
            problems.push(BuildProblem::CannotBeStrict {
                tool: c.name.to_string(),
                path: c.path.to_string(),
                provider,
                reason,
            });
        }
        if let Some(reason) = over {
            problems.push(BuildProblem::StrictLimit {
                provider,
                tools: marked.iter().map(|(c, _)| c.name.to_string()).collect(),
                reason,
            });
        }
    }
}

/// Step 8: every hook's matcher names at least one tool, and every tool it names is known
/// somewhere.
pub(super) fn check_matchers(
    pre: &[PreHookDef],
    post: &[PostHookDef],
    known_tools: &Names,
    problems: &mut Problems<'_>,
) {
    let matchers = pre
        .iter()
        .map(|h| (&h.path, &h.matcher))
        .chain(post.iter().map(|h| (&h.path, &h.matcher)));
    for (path, matcher) in matchers {
        if let Matcher::Tools(names) = matcher {
            if names.is_empty() {
                problems.push(BuildProblem::EmptyMatcher {
                    hook: path.to_string(),
                });
            }
            for n in names {
                if !known_tools.contains(n.as_ref()) {
                    problems.push(BuildProblem::UnknownMatcherTool {
                        hook: path.to_string(),
                        tool: n.to_string(),
                    });
                }
            }
        }
    }
}

/// Step 8 too: every tool the audit log's redaction names is known somewhere (a misspelled tool
/// would leave its fields in clear).
pub(super) fn check_redaction(
    audit: Option<&AuditLog>,
    known_tools: &Names,
    problems: &mut Problems<'_>,
) {
    for tool in audit.into_iter().flat_map(|a| a.redaction().tools()) {
        if !known_tools.contains(tool) {
            problems.push(BuildProblem::UnknownRedactionTool(tool.to_owned()));
        }
    }
}

/// Each candidate's input type by tool name, sorted by name (the last candidate of a name
/// wins, as a map would keep it).
pub(super) struct Inputs(Vec<(String, Option<InputType>)>);

impl Inputs {
    pub(super) fn of(candidates: &[Candidate]) -> Inputs {
        let mut all: Vec<(String, Option<InputType>)> = Vec::with_capacity(candidates.len());
        for c in candidates {
            all.push((c.name.to_string(), c.input));
        }
        sort_by(&mut all, |a, b| a.0.cmp(&b.0));
        let mut unique: Vec<(String, Option<InputType>)> = Vec::with_capacity(all.len());
        for (name, input) in all {
            match unique.last_mut() {
                Some(last) if last.0 == name => last.1 = input,
                _ => unique.push((name, input)),
            }
        }
        Inputs(unique)
    }

    fn get(&self, name: &str) -> Option<&Option<InputType>> {
        let at = self
            .0
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        Some(&self.0[at].1)
    }
}

/// Step 8 too: a typed PreToolUse hook's tools follow from its input type. Without `tools`, it
/// matches every tool of the builder's sources (before the tool filters) that takes its type,
/// and none is a problem; with `tools`, every named tool of those sources must take its type.
/// (Step 9 then keeps or drops it like any hook.)
pub(super) fn resolve_typed_hooks(
    pre: &mut [PreHookDef],
    inputs: &Inputs,
    problems: &mut Problems<'_>,
) {
    for hook in pre.iter_mut() {
        let Some(wanted) = hook.input else {
            continue;
        };
        match &hook.matcher {
            Matcher::All => {
                let names: Vec<Cow<'static, str>> = inputs
                    .0
                    .iter()
                    .filter(|(_, input)| input.is_some_and(|i| i.id == wanted.id))
                    .map(|(name, _)| Cow::Owned(name.clone()))
                    .collect();
                if names.is_empty() {
                    problems.push(BuildProblem::NoToolTakesHookInput {
                        hook: hook.path.to_string(),
                        input: wanted.name.to_owned(),
                    });
                }
                hook.matcher = Matcher::Tools(names);
            }
            Matcher::Tools(names) => {
                for name in names {
                    let Some(input) = inputs.get(name.as_ref()) else {
                        continue;
                    };
                    if input.is_some_and(|i| i.id == wanted.id) {
                        continue;
                    }
                    problems.push(BuildProblem::HookInputMismatch {
                        hook: hook.path.to_string(),
                        tool: name.to_string(),
                        input: wanted.name.to_owned(),
                        tool_input: match input {
                            Some(i) => format!("`{}`", i.name),
                            None => "JSON (a wrapped caller's tool)".to_owned(),
                        },
                    });
                }
            }
        }
    }
}

/// Step 9: the hooks this dispatcher keeps: those matching every tool, or one it kept. A
/// registered hook whose tools were all filtered out is left out silently (that is how a
/// specialist is built); one given to the builder explicitly is a problem, since the caller
/// meant it to guard this dispatcher (only the tools known somewhere are named: an unknown one
/// is already a problem of step 8, an empty list too).
pub(super) fn keep_hooks(
    pre: &mut Vec<PreHookDef>,
    post: &mut Vec<PostHookDef>,
    kept: &[Candidate],
    (explicit, known_tools): (Explicit, &Names),
    problems: &mut Problems<'_>,
) {
    let mut kept_names = Names::default();
    for c in kept {
        kept_names.insert(&c.name);
    }
    let kept = kept_names;
    let keeps = |m: &Matcher| match m {
        Matcher::All => true,
        Matcher::Tools(names) => names.iter().any(|n| kept.contains(n.as_ref())),
    };
    let given = pre
        .get(explicit.pre..)
        .unwrap_or_default()
        .iter()
        .map(|h| (&h.path, &h.matcher))
        .chain(
            post.get(explicit.post..)
                .unwrap_or_default()
                .iter()
                .map(|h| (&h.path, &h.matcher)),
        );
    for (path, matcher) in given {
        let Matcher::Tools(names) = matcher else {
            continue;
        };
        let known: Vec<String> = names
            .iter()
            .filter(|n| known_tools.contains(n.as_ref()))
            .map(|n| n.to_string())
            .collect();
        if !known.is_empty() && !keeps(matcher) {
            problems.push(BuildProblem::MatchesNoKeptTool {
                hook: path.to_string(),
                tools: known,
            });
        }
    }
    pre.retain(|h| keeps(&h.matcher));
    post.retain(|h| keeps(&h.matcher));
}

/// Step 10: the kept hooks' states.
pub(super) fn check_hooks(
    pre: &[PreHookDef],
    post: &[PostHookDef],
    stop: &[StopHookDef],
    problems: &mut Problems<'_>,
) {
    for h in pre {
        problems.need_states(&h.path, &h.states);
    }
    for h in post {
        problems.need_states(&h.path, &h.states);
    }
    for h in stop {
        problems.need_states(&h.path, &h.states);
    }
}

/// Step 11: every `write` tool is guarded by a PreToolUse hook this dispatcher kept that can
/// deny or ask (one matching every tool counts; one that only rewrites, `rewrites_only`, does
/// not), or says why it needs none, in words. With
/// `undeclared_effects_are_writes`, a tool whose effect is undeclared becomes `write` here.
pub(super) fn check_guarded_writes(
    candidates: &mut [Candidate],
    pre: &[PreHookDef],
    undeclared_writes: bool,
    problems: &mut Problems<'_>,
) {
    for c in candidates {
        let declared = c.effect.is_some();
        if !declared && undeclared_writes {
            c.effect = Some(Effect::write());
        }
        if !c.effect.is_some_and(|e| e.is_write()) {
            continue;
        }
        match c.unguarded.as_deref() {
            Some(reason) if reason.trim().is_empty() => {
                problems.push(BuildProblem::UnguardedWithoutReason {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                });
            }
            Some(_) => {}
            None if pre.iter().any(|h| h.refuses && h.matcher.matches(&c.name)) => {}
            None => problems.push(BuildProblem::UnguardedWrite {
                tool: c.name.to_string(),
                path: c.path.to_string(),
                declared,
                only_rewritten_by: pre
                    .iter()
                    .filter(|h| h.matcher.matches(&c.name))
                    .map(|h| h.path.to_string())
                    .collect(),
            }),
        }
    }
}
