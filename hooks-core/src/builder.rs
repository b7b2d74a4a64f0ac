//! [`DispatcherBuilder`]: where a dispatcher's tools and hooks come from, which it keeps, and
//! the checks that run once at start-up ([`BuildError`] lists every problem at once).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::audit::AuditLog;
use crate::caller::ToolCaller;
use crate::definitions::{Matcher, PostHookDef, PreHookDef, StopHookDef, ToolDef};
use crate::dispatcher::Dispatcher;
use crate::inner::{Backend, Inner, ToolEntry};
use crate::limits::Limits;
use crate::name_index::NameIndex;
use crate::provider::anthropic::entry as anthropic_entry;
use crate::registry::{RegistrationKind, registered};
use crate::schema::check::{FieldCheck, open_properties, root_problem};
use crate::schema::{canonicalize, is_valid_tool_name, unwrap_doc};
use crate::state::{StateKey, StateMap};
use crate::timer::Timer;

enum Source {
    All,
    Under(String),
    Item(String),
}

/// Builds a [`Dispatcher`]: where its tools and hooks come from, which tools it keeps, the states
/// it hands out, its audit log, limits and deadlines.
///
/// Sources add up: every registered item ([`registered`](Self::registered)), the items under a
/// module path ([`registered_under`](Self::registered_under), a specialist), single items by full
/// path ([`item`](Self::item)), hand-built definitions ([`tool`](Self::tool),
/// [`pre_hook`](Self::pre_hook), …) and wrapped callers ([`wrap`](Self::wrap)). Then
/// [`only_tools`](Self::only_tools) / [`without_tools`](Self::without_tools) filter the tools: a
/// filtered tool is gone from the definitions and from the callable surface alike, and a hook
/// whose matched tools are all gone is not part of the dispatcher.
#[derive(Default)]
#[must_use = "call .build() to get the Dispatcher"]
pub struct DispatcherBuilder {
    sources: Vec<Source>,
    tools: Vec<ToolDef>,
    pre_hooks: Vec<PreHookDef>,
    post_hooks: Vec<PostHookDef>,
    stop_hooks: Vec<StopHookDef>,
    callers: Vec<Arc<dyn ToolCaller>>,
    only: Option<Vec<String>>,
    without: Vec<String>,
    states: StateMap,
    audit: Option<AuditLog>,
    limits: Limits,
    timer: Option<Arc<dyn Timer>>,
    hook_timeout: Option<Duration>,
    tool_timeout: Option<Duration>,
}

impl DispatcherBuilder {
    /// Adds every item registered with the macros in the linked crates. A library crate's items
    /// are only linked when the binary uses the crate: write `use my_tools as _;` if nothing
    /// else names it. Tests should prefer [`registered_under`](Self::registered_under): one
    /// test binary shares one registry.
    pub fn registered(mut self) -> Self {
        self.sources.push(Source::All);
        self
    }

    /// Adds the registered items whose full path is under `module_path` (`"my_app::refunds"`
    /// takes `my_app::refunds::issue_refund` and `my_app::refunds::policy::deny_free`). Pass
    /// `module_path!()` for the current module. `build()` fails when nothing is registered there.
    pub fn registered_under(mut self, module_path: impl Into<String>) -> Self {
        self.sources.push(Source::Under(module_path.into()));
        self
    }

    /// Adds one registered item by its full path (`"my_app::tools::lookup_user"`). `build()`
    /// fails when no item has that path.
    pub fn item(mut self, path: impl Into<String>) -> Self {
        self.sources.push(Source::Item(path.into()));
        self
    }

    /// Adds several registered items by full path.
    pub fn items<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for p in paths {
            self.sources.push(Source::Item(p.into()));
        }
        self
    }

    /// Adds a hand-built tool.
    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a hand-built PreToolUse hook.
    pub fn pre_hook(mut self, hook: PreHookDef) -> Self {
        self.pre_hooks.push(hook);
        self
    }

    /// Adds a hand-built PostToolUse observer.
    pub fn post_hook(mut self, hook: PostHookDef) -> Self {
        self.post_hooks.push(hook);
        self
    }

    /// Adds a hand-built Stop hook.
    pub fn stop_hook(mut self, hook: StopHookDef) -> Self {
        self.stop_hooks.push(hook);
        self
    }

    /// Wraps a caller: the dispatcher takes it by value and owns it; its tools become this
    /// dispatcher's, reached only through this dispatcher's hooks.
    pub fn wrap(mut self, caller: impl ToolCaller) -> Self {
        self.callers.push(Arc::new(caller));
        self
    }

    /// Keeps only these tools (a specialist). `build()` fails on a name no source provides.
    pub fn only_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.only = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Removes these tools. `build()` fails on a name no source provides.
    pub fn without_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.without.extend(names.into_iter().map(Into::into));
        self
    }

    /// Gives the dispatcher a `State<T>` for the tools and hooks that ask for it. A second value
    /// of one type replaces the first.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states.insert(Arc::new(value));
        self
    }

    /// Gives the dispatcher a `State<T>` already in an `Arc`.
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.states.insert(value);
        self
    }

    /// Adds the built-in [`AuditLog`]: its observer runs after every other observer and its
    /// summary line after every other Stop hook.
    pub fn audit_log(mut self, log: AuditLog) -> Self {
        self.audit = Some(log);
        self
    }

    /// Sets the input and result bounds (default: [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Gives the dispatcher a timer, needed by any deadline.
    pub fn timer(mut self, timer: impl Timer) -> Self {
        self.timer = Some(Arc::new(timer));
        self
    }

    /// A default deadline for async PreToolUse hooks without their own `timeout_ms`; past it the
    /// agent halts with `hook_timeout`. Without a [`timer`](Self::timer), `build()` fails with
    /// [`BuildProblem::DeadlineWithoutTimer`] naming `DispatcherBuilder::hook_timeout`.
    pub fn hook_timeout(mut self, deadline: Duration) -> Self {
        self.hook_timeout = Some(deadline);
        self
    }

    /// A default deadline for async tools without their own `timeout_ms`; past it the outcome
    /// is `tool_timeout`. Without a [`timer`](Self::timer), `build()` fails with
    /// [`BuildProblem::DeadlineWithoutTimer`] naming `DispatcherBuilder::tool_timeout`.
    pub fn tool_timeout(mut self, deadline: Duration) -> Self {
        self.tool_timeout = Some(deadline);
        self
    }

    /// Checks everything and builds the dispatcher.
    ///
    /// # Errors
    /// A [`BuildError`] listing every problem found (see [`BuildProblem`]): two tools with one
    /// name; an invalid tool name or an empty description; a schema whose root is not an object;
    /// a property whose schema is a bare `true` or `{}`; a hook matcher naming a tool registered
    /// nowhere; an item asking for a `State<T>` the builder was not given; a source or filter
    /// naming nothing; a deadline without a timer.
    pub fn build(self) -> Result<Dispatcher, BuildError> {
        let mut problems = Vec::new();

        // 1. Registered items from the sources.
        let mut tools: Vec<ToolDef> = Vec::new();
        let mut pre: Vec<PreHookDef> = Vec::new();
        let mut post: Vec<PostHookDef> = Vec::new();
        let mut stop: Vec<StopHookDef> = Vec::new();
        let mut known_tools: BTreeSet<String> = BTreeSet::new();
        let mut taken: BTreeSet<&'static str> = BTreeSet::new();
        // Sorted by path: inventory's order is the link order, which varies between builds.
        let mut all: Vec<_> = registered().collect();
        all.sort_by_key(|r| r.path);
        for reg in &all {
            if let RegistrationKind::Tool { name, .. } = reg.kind {
                known_tools.insert(name.to_owned());
            }
        }
        for source in &self.sources {
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
                    RegistrationKind::Tool { make, .. } => tools.push(make()),
                    RegistrationKind::PreHook(make) => pre.push(make()),
                    RegistrationKind::PostHook(make) => post.push(make()),
                    RegistrationKind::StopHook(make) => stop.push(make()),
                }
            }
        }
        tools.extend(self.tools);
        pre.extend(self.pre_hooks);
        post.extend(self.post_hooks);
        stop.extend(self.stop_hooks);
        for t in &tools {
            known_tools.insert(t.name.to_string());
        }

        // 2. Tools, from definitions and callers.
        struct Candidate {
            name: Cow<'static, str>,
            path: Cow<'static, str>,
            description: Cow<'static, str>,
            schema: Value,
            raw: Value,
            backend: Backend,
            states: Vec<StateKey>,
            timeout: Option<Duration>,
        }
        let mut candidates: Vec<Candidate> = tools
            .into_iter()
            .map(|t| Candidate {
                schema: canonicalize(&t.schema, !t.additional_properties),
                raw: t.schema,
                name: t.name,
                path: t.path,
                description: t.description,
                backend: Backend::Local(t.imp),
                states: t.states,
                timeout: t.timeout,
            })
            .collect();
        for (ci, caller) in self.callers.iter().enumerate() {
            for def in caller.tool_definitions() {
                let name = def
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let description = def
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let schema = def.get("input_schema").cloned().unwrap_or(Value::Null);
                known_tools.insert(name.clone());
                candidates.push(Candidate {
                    path: Cow::Owned(format!("<wrapped caller #{ci}>::{name}")),
                    name: Cow::Owned(name),
                    description: Cow::Owned(description),
                    raw: schema.clone(),
                    schema,
                    backend: Backend::Caller {
                        caller: Arc::clone(caller),
                    },
                    states: Vec::new(),
                    timeout: None,
                });
            }
        }

        // 3. Filters.
        let provided: BTreeSet<String> = candidates.iter().map(|c| c.name.to_string()).collect();
        if let Some(only) = &self.only {
            for n in only {
                if !provided.contains(n) {
                    problems.push(BuildProblem::UnknownFilterTool(n.clone()));
                }
            }
            candidates.retain(|c| only.iter().any(|n| *n == c.name));
        }
        for n in &self.without {
            if !provided.contains(n) {
                problems.push(BuildProblem::UnknownFilterTool(n.clone()));
            }
        }
        candidates.retain(|c| !self.without.iter().any(|n| *n == c.name));

        // 4. Each tool on its own, then duplicates.
        let need_state = |item: &str, states: &[StateKey], problems: &mut Vec<BuildProblem>| {
            for key in states {
                if !self.states.contains(key) {
                    problems.push(BuildProblem::MissingState {
                        item: item.to_owned(),
                        type_name: key.type_name(),
                    });
                }
            }
        };
        let need_timer =
            |item: &str, deadline: Option<Duration>, problems: &mut Vec<BuildProblem>| {
                if deadline.is_some() && self.timer.is_none() {
                    problems.push(BuildProblem::DeadlineWithoutTimer {
                        item: item.to_owned(),
                    });
                }
            };
        let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in &candidates {
            by_name
                .entry(c.name.to_string())
                .or_default()
                .push(c.path.to_string());
            if !is_valid_tool_name(&c.name) {
                problems.push(BuildProblem::InvalidToolName {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                });
            }
            if c.description.trim().is_empty() {
                problems.push(BuildProblem::NoDescription {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                });
            }
            if let Some(found) = root_problem(&c.schema) {
                problems.push(BuildProblem::RootNotObject {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                    found,
                });
            }
            for property in open_properties(&c.schema) {
                problems.push(BuildProblem::OpenProperty {
                    tool: c.name.to_string(),
                    path: c.path.to_string(),
                    property,
                });
            }
            need_state(&c.path, &c.states, &mut problems);
            need_timer(&c.path, c.timeout, &mut problems);
        }
        for (name, paths) in &mut by_name {
            if paths.len() > 1 {
                paths.sort();
                problems.push(BuildProblem::DuplicateTool {
                    tool: name.clone(),
                    paths: paths.clone(),
                });
            }
        }
        let kept: BTreeSet<&str> = candidates.iter().map(|c| c.name.as_ref()).collect();

        // 5. Hooks: matchers, then which hooks this dispatcher keeps.
        let check_matcher = |path: &str, matcher: &Matcher, problems: &mut Vec<BuildProblem>| {
            if let Matcher::Tools(names) = matcher {
                for n in names {
                    if !known_tools.contains(n.as_ref()) {
                        problems.push(BuildProblem::UnknownMatcherTool {
                            hook: path.to_owned(),
                            tool: n.to_string(),
                        });
                    }
                }
            }
        };
        for h in &pre {
            check_matcher(&h.path, &h.matcher, &mut problems);
        }
        for h in &post {
            check_matcher(&h.path, &h.matcher, &mut problems);
        }
        let keeps = |m: &Matcher| match m {
            Matcher::All => true,
            Matcher::Tools(names) => names.iter().any(|n| kept.contains(n.as_ref())),
        };
        pre.retain(|h| keeps(&h.matcher));
        post.retain(|h| keeps(&h.matcher));
        for h in &pre {
            need_state(&h.path, &h.states, &mut problems);
            need_timer(&h.path, h.timeout, &mut problems);
        }
        for h in &post {
            need_state(&h.path, &h.states, &mut problems);
        }
        for h in &stop {
            need_state(&h.path, &h.states, &mut problems);
        }
        need_timer(
            "DispatcherBuilder::hook_timeout",
            self.hook_timeout,
            &mut problems,
        );
        need_timer(
            "DispatcherBuilder::tool_timeout",
            self.tool_timeout,
            &mut problems,
        );

        if !problems.is_empty() {
            return Err(BuildError { problems });
        }

        // 6. Assemble.
        pre.sort_by(|a, b| (a.order, a.path.as_ref()).cmp(&(b.order, b.path.as_ref())));
        post.sort_by(|a, b| a.path.cmp(&b.path));
        stop.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(log) = &self.audit {
            post.push(log.observer());
            stop.push(log.stop_hook());
        }
        candidates.sort_by(|a, b| a.name.cmp(&b.name));
        let mut entries = Vec::with_capacity(candidates.len());
        let mut definitions = Vec::with_capacity(candidates.len());
        for c in candidates {
            let chain: Box<[usize]> = pre
                .iter()
                .enumerate()
                .filter(|(_, h)| h.matcher.matches(&c.name))
                .map(|(i, _)| i)
                .collect();
            let observers: Box<[usize]> = post
                .iter()
                .enumerate()
                .filter(|(_, o)| o.matcher.matches(&c.name))
                .map(|(i, _)| i)
                .collect();
            let description = unwrap_doc(&c.description);
            definitions.push(anthropic_entry(&c.name, &description, &c.schema));
            entries.push(ToolEntry {
                description,
                observers,
                fields: FieldCheck::from_schema(&c.schema),
                canonical: c.schema,
                raw_schema: c.raw,
                name: c.name,
                path: c.path,
                backend: c.backend,
                chain,
                timeout: c.timeout,
            });
        }
        let available = entries
            .iter()
            .map(|t| t.name.as_ref())
            .collect::<Vec<_>>()
            .join(", ");
        let by_name = NameIndex::new(entries.iter().map(|t| t.name.as_ref()));
        Ok(Dispatcher {
            inner: Arc::new(Inner {
                by_name,
                tools: entries,
                definitions,
                pre_hooks: pre,
                observers_sync: post.iter().all(|o| o.imp.is_sync()),
                observers_of_unknown: post
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| matches!(o.matcher, Matcher::All))
                    .map(|(i, _)| i)
                    .collect(),
                observers: post,
                stop_hooks: stop,
                states: self.states,
                limits: self.limits,
                timer: self.timer,
                hook_timeout: self.hook_timeout,
                tool_timeout: self.tool_timeout,
                available,
                rendered: Default::default(),
            }),
        })
    }
}

impl Dispatcher {
    /// Starts an empty builder: add registered items ([`DispatcherBuilder::registered`],
    /// [`DispatcherBuilder::registered_under`], [`DispatcherBuilder::item`]) or hand-built ones.
    pub fn builder() -> DispatcherBuilder {
        DispatcherBuilder::default()
    }
}

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// One problem found by [`DispatcherBuilder::build`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Two or more tools share a name (a model could not tell them apart).
    #[error("two tools are named `{tool}`: {}; rename one with #[tool(name = \"…\")] or filter one out", paths.join(" and "))]
    DuplicateTool {
        /// The shared name.
        tool: String,
        /// The full paths of the tools.
        paths: Vec<String>,
    },
    /// A name outside `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("tool `{tool}` ({path}) has an invalid name: use 1 to 64 letters, digits, `_` or `-`")]
    InvalidToolName {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// An empty description.
    #[error("tool `{tool}` ({path}) has no description: the model needs one to choose the tool")]
    NoDescription {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
    },
    /// The input schema's root is not an object with properties.
    #[error(
        "tool `{tool}` ({path}) has an input schema whose root is {found}; a tool's input must be a struct with named fields, whose schema is `{{\"type\": \"object\", …}}`"
    )]
    RootNotObject {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// What the root is.
        found: String,
    },
    /// A property's schema is a bare `true` or `{}`.
    #[error(
        "tool `{tool}` ({path}): property `{property}` accepts any JSON (its schema is `true` or `{{}}`, as for serde_json::Value); give it an explicit schema with #[schemars(schema_with = \"…\")] on the parameter or field, or use a typed struct"
    )]
    OpenProperty {
        /// The name.
        tool: String,
        /// The tool's full path.
        path: String,
        /// The property's path (`options.extra`).
        property: String,
    },
    /// A hook's matcher names a tool that no source registers.
    #[error("hook `{hook}` matches tool `{tool}`, which is registered nowhere")]
    UnknownMatcherTool {
        /// The hook's full path.
        hook: String,
        /// The unknown tool name.
        tool: String,
    },
    /// An item takes a `State<T>` the builder was not given.
    #[error(
        "`{item}` takes State<{type_name}>, but the builder was not given one: add .state(…) with a {type_name}"
    )]
    MissingState {
        /// The item's full path.
        item: String,
        /// The state's type.
        type_name: &'static str,
    },
    /// `registered_under` found nothing.
    #[error(
        "nothing is registered under module path `{0}` (is the crate linked? add `use my_crate as _;`)"
    )]
    NothingUnder(String),
    /// `item` found nothing.
    #[error("no registered item has the path `{0}`")]
    NoSuchItem(String),
    /// `only_tools` or `without_tools` names a tool no source provides.
    #[error("the tool filter names `{0}`, which no source of this builder provides")]
    UnknownFilterTool(String),
    /// A deadline was set but there is no timer.
    #[error(
        "`{item}` has a deadline but the dispatcher has no timer: add .timer(…) (the `tokio` feature provides TokioTimer)"
    )]
    DeadlineWithoutTimer {
        /// The item (or builder setting) with the deadline.
        item: String,
    },
}

/// Every problem [`DispatcherBuilder::build`] found, reported together; `Display` writes one per
/// line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    /// The problems, in the order found.
    pub problems: Vec<BuildProblem>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the dispatcher cannot be built ({} problem{}):",
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            write!(f, "\n- {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}
