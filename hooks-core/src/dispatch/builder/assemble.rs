//! Step 12 of `build()`, once every check passed: the dispatcher's tables (tools sorted by name
//! with their chains and observers, hooks in run order, the definitions rendered).

use std::sync::Arc;

use serde_json::Value;

use super::DispatcherBuilder;
use super::sources::Candidate;
use crate::approval::seal::Sealing;
use crate::audit::AuditLog;
use crate::base::sort::sort_by;
use crate::base::timer::DefaultTimer;
use crate::hook::definitions::{Matcher, PostHookDef, PreHookDef, StopHookDef};
use crate::hook::state::StateMap;
use crate::pipeline::inner::{Inner, ToolEntry};
use crate::pipeline::limits::Limits;
use crate::pipeline::name_index::NameIndex;
use crate::provider::anthropic::entry as anthropic_entry;
use crate::schema::check::FieldCheck;
use crate::schema::unwrap_doc;

/// A kept tool as the dispatcher holds it (its chain and observers by index, its unknown-field
/// check, its description unwrapped), and its Anthropic `tools` entry.
fn tool_entry(c: Candidate, pre: &[PreHookDef], post: &[PostHookDef]) -> (ToolEntry, Value) {
    let description = unwrap_doc(&c.description);
    let definition = anthropic_entry(&c.name, &description, &c.schema, &c.input_examples);
    let tool = ToolEntry {
        description,
        chain: matching(pre, |h| h.matcher.matches(&c.name)),
        observers: matching(post, |o| o.matcher.matches(&c.name)),
        fields: FieldCheck::from_schema(&c.schema),
        canonical: c.schema,
        validation: c.validation,
        #[cfg(feature = "full-validation")]
        full: c.full,
        output_schema: c.output,
        name: c.name,
        path: c.path,
        backend: c.backend,
        timeout: c.timeout,
        strict: c.strict,
        input_examples: c.input_examples,
        effect: c.effect,
        unguarded: c.unguarded,
    };
    (tool, definition)
}

/// Step 12, once every check passed: hooks in run order (the audit log last), tools sorted by
/// name with their chains and observers resolved, the definitions rendered; default settings,
/// which `build()` replaces with the builder's.
pub(super) fn assemble(
    mut candidates: Vec<Candidate>,
    mut pre: Vec<PreHookDef>,
    mut post: Vec<PostHookDef>,
    mut stop: Vec<StopHookDef>,
    audit: Option<&AuditLog>,
) -> Inner {
    sort_by(&mut pre, |a, b| {
        (a.order, a.path.as_ref()).cmp(&(b.order, b.path.as_ref()))
    });
    sort_by(&mut post, |a, b| a.path.cmp(&b.path));
    sort_by(&mut stop, |a, b| a.path.cmp(&b.path));
    if let Some(log) = audit {
        post.push(log.observer());
        stop.push(log.stop_hook());
    }
    sort_by(&mut candidates, |a, b| a.name.cmp(&b.name));
    let mut tools = Vec::with_capacity(candidates.len());
    let mut definitions = Vec::with_capacity(candidates.len());
    for c in candidates {
        let (tool, definition) = tool_entry(c, &pre, &post);
        tools.push(tool);
        definitions.push(definition);
    }
    let open_chain = matching(&pre, |h| {
        matches!(h.matcher, Matcher::All) && h.input.is_none()
    });
    let available = tools
        .iter()
        .map(|t| t.name.as_ref())
        .collect::<Vec<_>>()
        .join(", ");
    Inner {
        by_name: NameIndex::new(tools.iter().map(|t| t.name.as_ref())),
        tools,
        definitions,
        pre_hooks: pre,
        observers_sync: post.iter().all(|o| o.imp.is_sync()),
        hook_runs: false,
        span_content: None,
        sealing: Sealing::default(),
        observers_of_unknown: matching(&post, |o| matches!(o.matcher, Matcher::All)),
        open_chain,
        observers: post,
        stop_hooks: stop,
        states: StateMap::default(),
        limits: Limits::default(),
        timer: Arc::new(DefaultTimer),
        hook_timeout: None,
        tool_timeout: None,
        approver: None,
        approval_timeout: None,
        pending_ttl: DispatcherBuilder::DEFAULT_PENDING_TTL,
        max_concurrent_reads: DispatcherBuilder::DEFAULT_MAX_CONCURRENT_READS,
        claim_lease: DispatcherBuilder::DEFAULT_CLAIM_LEASE,
        fixed_claim_lease: DispatcherBuilder::DEFAULT_FIXED_CLAIM_LEASE,
        leases: Default::default(),
        available,
        rendered: Default::default(),
    }
}

/// The indices of the `items` for which `keep` holds, in order.
fn matching<T>(items: &[T], keep: impl Fn(&T) -> bool) -> Box<[usize]> {
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| keep(item))
        .map(|(i, _)| i)
        .collect()
}
