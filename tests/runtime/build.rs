//! `build()` lists every problem at once.

use schemars::JsonSchema;
use serde::Deserialize;
use toolgate::{
    Decision, Dispatcher,
    dispatch::{BuildProblem, PostHookDef, PreHookDef, StateKey, StopHookDef, ToolDef},
};

/// An argument struct.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Plain {
    /// A field.
    a: String,
}

/// An argument struct with an untyped property.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Untyped {
    /// Anything at all.
    payload: serde_json::Value,
    /// A nested struct with an untyped property.
    nested: Inner,
}

/// Nested.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Inner {
    /// Anything.
    extra: serde_json::Value,
}

struct Ledger;

fn ok<A>(_: toolgate::dispatch::Env<'_>, _: A) -> Result<String, toolgate::ToolError> {
    Ok(String::new())
}

#[test]
fn every_problem_is_reported_together() {
    let err = Dispatcher::builder()
        .tool(ToolDef::sync("dup", "First.", ok::<Plain>).path("app::a::dup"))
        .tool(ToolDef::sync("dup", "Second.", ok::<Plain>).path("app::b::dup"))
        .tool(ToolDef::sync("bad.name", "Dotted.", ok::<Plain>).path("app::bad"))
        .tool(ToolDef::sync("quiet", "  ", ok::<Plain>).path("app::quiet"))
        .tool(ToolDef::sync("stringly", "A string root.", ok::<String>).path("app::stringly"))
        .tool(ToolDef::sync("untyped", "Untyped.", ok::<Untyped>).path("app::untyped"))
        .tool(
            ToolDef::sync("ledgered", "Needs a ledger.", ok::<Plain>)
                .path("app::ledgered")
                .needs_state(StateKey::of::<Ledger>()),
        )
        .pre_hook(PreHookDef::sync("app::typo", 1, |_, _| Ok(Decision::Allow)).tools(["dupp"]))
        .stop_hook(
            StopHookDef::new("app::stop", |_, _| Ok(())).needs_state(StateKey::of::<Ledger>()),
        )
        .registered_under("app::nowhere")
        .item("app::no_such_item")
        .only_tools([
            "dup", "bad.name", "quiet", "stringly", "untyped", "ledgered", "ghost",
        ])
        .build()
        .unwrap_err();
    let ledger = std::any::type_name::<Ledger>();
    assert_eq!(
        err.problems,
        [
            BuildProblem::NothingUnder("app::nowhere".into()),
            BuildProblem::NoSuchItem("app::no_such_item".into()),
            BuildProblem::UnknownFilterTool("ghost".into()),
            BuildProblem::InvalidToolName {
                tool: "bad.name".into(),
                path: "app::bad".into()
            },
            BuildProblem::NoDescription {
                tool: "quiet".into(),
                path: "app::quiet".into()
            },
            BuildProblem::RootNotObject {
                tool: "stringly".into(),
                path: "app::stringly".into(),
                found: "`type: \"string\"`".into()
            },
            BuildProblem::OpenProperty {
                tool: "untyped".into(),
                path: "app::untyped".into(),
                property: "payload".into()
            },
            BuildProblem::OpenProperty {
                tool: "untyped".into(),
                path: "app::untyped".into(),
                property: "nested.extra".into()
            },
            BuildProblem::MissingState {
                item: "app::ledgered".into(),
                type_name: ledger
            },
            BuildProblem::DuplicateTool {
                tool: "dup".into(),
                paths: vec!["app::a::dup".into(), "app::b::dup".into()]
            },
            BuildProblem::UnknownMatcherTool {
                hook: "app::typo".into(),
                tool: "dupp".into()
            },
            BuildProblem::MissingState {
                item: "app::stop".into(),
                type_name: ledger
            },
        ]
    );
    let open_property = |property: &str| {
        format!(
            "tool `untyped` (app::untyped): property `{property}` accepts any JSON (its schema is \
             `true` or `{{}}`, as for serde_json::Value); give it an explicit schema with \
             #[schemars(schema_with = \"…\")] on the parameter or field, or use a typed struct"
        )
    };
    let lines = [
        "the dispatcher cannot be built (12 problems):".to_owned(),
        "- nothing is registered under module path `app::nowhere` (is the crate linked? add \
         `use my_crate as _;`)"
            .to_owned(),
        "- no registered item has the path `app::no_such_item`".to_owned(),
        "- the tool filter names `ghost`, which no source of this builder provides".to_owned(),
        "- tool `bad.name` (app::bad) has an invalid name: use 1 to 64 letters, digits, `_` or `-`"
            .to_owned(),
        "- tool `quiet` (app::quiet) has no description: the model needs one to choose the tool"
            .to_owned(),
        "- tool `stringly` (app::stringly) has an input schema whose root is `type: \"string\"`; \
         a tool's input must be a struct with named fields, whose schema is \
         `{\"type\": \"object\", …}`"
            .to_owned(),
        format!("- {}", open_property("payload")),
        format!("- {}", open_property("nested.extra")),
        format!(
            "- `app::ledgered` takes State<{ledger}>, but the builder was not given one: add \
             .state(…) with a {ledger}"
        ),
        "- two tools are named `dup`: app::a::dup and app::b::dup; rename one with \
         #[tool(name = \"…\")] or filter one out"
            .to_owned(),
        "- hook `app::typo` matches tool `dupp`, which is registered nowhere".to_owned(),
        format!(
            "- `app::stop` takes State<{ledger}>, but the builder was not given one: add \
             .state(…) with a {ledger}"
        ),
    ];
    assert_eq!(ledger, "runtime::build::Ledger");
    assert_eq!(err.to_string(), lines.join("\n"));
}

mod one {
    use toolgate::tool;

    /// Looks a user up (one).
    #[tool]
    pub(crate) fn lookup(
        /// The id.
        id: String,
    ) -> String {
        id
    }
}

mod two {
    use toolgate::tool;

    /// Looks a user up (two).
    #[tool]
    pub(crate) fn lookup(
        /// The id.
        id: String,
    ) -> String {
        id
    }
}

#[test]
fn two_tools_of_one_name_in_different_modules_name_both_paths() {
    let err = Dispatcher::builder()
        .registered_under(format!("{}::one", module_path!()))
        .registered_under(format!("{}::two", module_path!()))
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::DuplicateTool {
            tool: "lookup".into(),
            paths: vec![
                "runtime::build::one::lookup".into(),
                "runtime::build::two::lookup".into()
            ]
        }]
    );
    assert_eq!(
        err.to_string(),
        "the dispatcher cannot be built (1 problem):\n- two tools are named `lookup`: \
         runtime::build::one::lookup and runtime::build::two::lookup; rename one with \
         #[tool(name = \"…\")] or filter one out"
    );
    // Either one alone builds.
    for module in ["one", "two"] {
        let d = Dispatcher::builder()
            .registered_under(format!("{}::{module}", module_path!()))
            .build()
            .unwrap();
        assert_eq!(
            d.tool_path("lookup"),
            Some(format!("runtime::build::{module}::lookup").as_str())
        );
    }
}

mod explicit_schema {
    use schemars::{Schema, SchemaGenerator, json_schema};
    use toolgate::tool;

    fn any_object(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object", "description": "Free-form metadata."})
    }

    /// Stores metadata.
    #[tool]
    pub(crate) fn store(
        /// The key.
        key: String,
        #[schemars(schema_with = "any_object")] meta: serde_json::Value,
    ) -> String {
        format!("{key}={meta}")
    }
}

#[test]
fn a_value_with_an_explicit_schema_builds() {
    let d = Dispatcher::builder()
        .registered_under(format!("{}::explicit_schema", module_path!()))
        .build()
        .unwrap();
    assert_eq!(
        d.tool_definitions()[0]["input_schema"]["properties"]["meta"],
        serde_json::json!({"type": "object", "description": "Free-form metadata."})
    );
}

mod newtype_input {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use toolgate::tool;

    /// A list of ids: a newtype, whose schema is an array, not an object.
    #[derive(Deserialize, JsonSchema)]
    pub(crate) struct Ids(pub(crate) Vec<String>);

    /// Tags records.
    #[tool]
    pub(crate) fn tag(#[input] ids: Ids) -> usize {
        ids.0.len()
    }
}

#[test]
fn a_struct_input_that_is_not_a_struct_with_named_fields_fails_build() {
    let err = Dispatcher::builder()
        .registered_under(format!("{}::newtype_input", module_path!()))
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::RootNotObject {
            tool: "tag".into(),
            path: "runtime::build::newtype_input::tag".into(),
            found: "`type: \"array\"`".into()
        }]
    );
}

fn allow(
    _: toolgate::dispatch::Env<'_>,
    _: &toolgate::ToolUse,
) -> Result<Decision, toolgate::dispatch::HookError> {
    Ok(Decision::Allow)
}

#[test]
fn a_guard_is_never_dropped_silently() {
    // A guard is never dropped silently: a hook with an empty tool list (a config file's empty
    // list), or given to the builder explicitly for tools this dispatcher does not keep, fails the
    // build instead of leaving a tool unguarded.
    let none: Vec<&'static str> = Vec::new();
    let err = Dispatcher::builder()
        .tool(ToolDef::sync("faq", "Searches the FAQ.", ok::<Plain>).path("app::faq"))
        .tool(ToolDef::sync("refund", "Refunds an order.", ok::<Plain>).path("app::refund"))
        .pre_hook(PreHookDef::sync("app::empty_pre", 1, allow).tools(none.clone()))
        .pre_hook(PreHookDef::sync("app::refund_guard", 1, allow).tools(["refund"]))
        .pre_hook(PreHookDef::sync("app::only_typo", 1, allow).tools(["refnud"]))
        .pre_hook(PreHookDef::sync("app::faq_and_refund", 1, allow).tools(["faq", "refund"]))
        .pre_hook(PreHookDef::sync("app::everything", 1, allow))
        .post_hook(PostHookDef::sync("app::empty_post", |_, _| Ok(())).tools(none))
        .post_hook(PostHookDef::sync("app::refund_audit", |_, _| Ok(())).tools(["refund", "fqa"]))
        .without_tools(["refund"])
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        [
            BuildProblem::EmptyMatcher {
                hook: "app::empty_pre".into()
            },
            BuildProblem::UnknownMatcherTool {
                hook: "app::only_typo".into(),
                tool: "refnud".into()
            },
            BuildProblem::EmptyMatcher {
                hook: "app::empty_post".into()
            },
            BuildProblem::UnknownMatcherTool {
                hook: "app::refund_audit".into(),
                tool: "fqa".into()
            },
            BuildProblem::MatchesNoKeptTool {
                hook: "app::refund_guard".into(),
                tools: vec!["refund".into()]
            },
            BuildProblem::MatchesNoKeptTool {
                hook: "app::refund_audit".into(),
                tools: vec!["refund".into()]
            },
        ]
    );
    assert_eq!(
        err.to_string(),
        "the dispatcher cannot be built (6 problems):\n\
         - hook `app::empty_pre` has an empty tool list, so it would never run: name at least \
         one tool, or leave the list out to match every tool\n\
         - hook `app::only_typo` matches tool `refnud`, which is registered nowhere\n\
         - hook `app::empty_post` has an empty tool list, so it would never run: name at least \
         one tool, or leave the list out to match every tool\n\
         - hook `app::refund_audit` matches tool `fqa`, which is registered nowhere\n\
         - hook `app::refund_guard` was given to this builder, but none of its tools (`refund`) \
         is part of this dispatcher, so it would never run: keep one of them, or do not give \
         this builder the hook\n\
         - hook `app::refund_audit` was given to this builder, but none of its tools (`refund`) \
         is part of this dispatcher, so it would never run: keep one of them, or do not give \
         this builder the hook"
    );

    // With the tool kept, the same explicit hooks build and guard it.
    let d = Dispatcher::builder()
        .tool(ToolDef::sync("faq", "Searches the FAQ.", ok::<Plain>).path("app::faq"))
        .tool(ToolDef::sync("refund", "Refunds an order.", ok::<Plain>).path("app::refund"))
        .pre_hook(PreHookDef::sync("app::refund_guard", 1, allow).tools(["refund"]))
        .post_hook(PostHookDef::sync("app::refund_audit", |_, _| Ok(())).tools(["refund"]))
        .build()
        .unwrap();
    assert_eq!(d.pre_hook_chain("refund").unwrap(), ["app::refund_guard"]);
}
