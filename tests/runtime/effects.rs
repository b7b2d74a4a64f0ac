//! Effects (`#[tool(effect = …)]`, `ToolDef::effect`, a wrapped caller's `annotations`) and the
//! rule that no write tool goes without a PreToolUse hook unless it says why.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    BuildError, Decision, Dispatcher, ToolError,
    dispatch::{BuildProblem, Effect, PreHookDef, ToolDef, sync_caller},
    tool,
};

/// An argument struct.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Order {
    /// The order.
    order_id: String,
}

fn ok(_: toolgate::dispatch::Env<'_>, _: Order) -> Result<String, ToolError> {
    Ok(String::new())
}

fn refund() -> ToolDef {
    ToolDef::sync("refund", "Refunds an order.", ok).path("app::refund")
}

fn lookup() -> ToolDef {
    ToolDef::sync("lookup", "Looks an order up.", ok).path("app::lookup")
}

fn allow(path: &'static str) -> PreHookDef {
    PreHookDef::sync(path, 10, |_, _| Ok(Decision::Allow))
}

fn problems(built: Result<Dispatcher, BuildError>) -> Vec<BuildProblem> {
    built.expect_err("the build must fail").problems
}

#[test]
fn a_write_tool_without_a_hook_is_a_build_error_naming_it() {
    let err = Dispatcher::builder()
        .tool(refund().effect(Effect::write()))
        .tool(lookup().effect(Effect::read()))
        .build()
        .expect_err("an unguarded write tool");
    assert_eq!(
        err.problems,
        vec![BuildProblem::UnguardedWrite {
            tool: "refund".into(),
            path: "app::refund".into(),
            declared: true,
            only_rewritten_by: vec![],
        }]
    );
    assert_eq!(
        err.to_string(),
        "the dispatcher cannot be built (1 problem):\n- tool `refund` (app::refund) writes \
         (`effect = \"write\"`), but no PreToolUse hook of this dispatcher guards it: add a \
         #[pre_hook] that returns `Decision` and whose `tools` names it, or say why it needs none \
         with #[tool(effect = \"write\", unguarded = \"…\")] (ToolDef::unguarded)"
    );
}

#[test]
fn a_hook_on_another_tool_does_not_guard_a_write_tool() {
    let built = Dispatcher::builder()
        .tool(refund().effect(Effect::write().destructive(true)))
        .tool(lookup().effect(Effect::read()))
        .pre_hook(allow("app::only_lookups").tools(["lookup"]))
        .build();
    assert_eq!(
        problems(built),
        vec![BuildProblem::UnguardedWrite {
            tool: "refund".into(),
            path: "app::refund".into(),
            declared: true,
            only_rewritten_by: vec![],
        }]
    );
}

#[test]
fn a_hook_naming_the_tool_or_matching_every_tool_guards_it() {
    for hook in [
        allow("app::guard").tools(["refund"]),
        allow("app::every_tool"),
    ] {
        let dispatcher = Dispatcher::builder()
            .tool(refund().effect(Effect::write().idempotent(false)))
            .tool(lookup().effect(Effect::read()))
            .pre_hook(hook)
            .build()
            .expect("a guarded write tool builds");
        assert_eq!(
            dispatcher.tool_effect("refund"),
            Some(Effect::write().idempotent(false))
        );
        assert_eq!(dispatcher.tool_effect("lookup"), Some(Effect::read()));
        assert_eq!(dispatcher.unguarded_reason("refund"), None);
        assert_eq!(dispatcher.tool_effect("nothing"), None);
    }
}

#[test]
fn a_write_tool_that_says_why_builds_and_the_reason_is_answered() {
    let dispatcher = Dispatcher::builder()
        .tool(
            refund()
                .effect(Effect::write())
                .unguarded("a sandbox: refunds go to a test ledger"),
        )
        .build()
        .expect("a write tool with a reason builds");
    assert_eq!(
        dispatcher.unguarded_reason("refund"),
        Some("a sandbox: refunds go to a test ledger")
    );
    assert_eq!(dispatcher.tool_effect("refund"), Some(Effect::write()));
}

#[test]
fn a_blank_reason_is_no_reason() {
    let built = Dispatcher::builder()
        .tool(refund().effect(Effect::write()).unguarded("  \n"))
        .build();
    let problems = problems(built);
    assert_eq!(
        problems,
        vec![BuildProblem::UnguardedWithoutReason {
            tool: "refund".into(),
            path: "app::refund".into(),
        }]
    );
    assert_eq!(
        problems[0].to_string(),
        "tool `refund` (app::refund) says it needs no PreToolUse hook but gives no reason: write \
         why in `unguarded = \"…\"`, or guard it with a #[pre_hook]"
    );
}

#[test]
fn undeclared_effects_count_as_writes_only_when_the_builder_says_so() {
    let plain = Dispatcher::builder()
        .tool(refund())
        .build()
        .expect("an undeclared tool is not checked by default");
    assert_eq!(plain.tool_effect("refund"), None);

    let built = Dispatcher::builder()
        .tool(refund())
        .tool(lookup().effect(Effect::read()))
        .undeclared_effects_are_writes()
        .build();
    let problems = problems(built);
    assert_eq!(
        problems,
        vec![BuildProblem::UnguardedWrite {
            tool: "refund".into(),
            path: "app::refund".into(),
            declared: false,
            only_rewritten_by: vec![],
        }]
    );
    assert_eq!(
        problems[0].to_string(),
        "tool `refund` (app::refund) declares no effect, which this builder counts as a write \
         (undeclared_effects_are_writes), but no PreToolUse hook of this dispatcher guards it: \
         add a #[pre_hook] that returns `Decision` and whose `tools` names it, or say why it needs none \
         with #[tool(effect = \"write\", unguarded = \"…\")] (ToolDef::unguarded)"
    );

    let guarded = Dispatcher::builder()
        .tool(refund())
        .pre_hook(allow("app::guard").tools(["refund"]))
        .undeclared_effects_are_writes()
        .build()
        .expect("a guarded undeclared tool builds");
    assert_eq!(guarded.tool_effect("refund"), Some(Effect::write()));
}

fn remote(annotations: Value, unguarded: Option<&str>) -> impl toolgate::dispatch::ToolCaller {
    let mut entry = json!({
        "name": "delete_file",
        "description": "Deletes a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "annotations": annotations,
    });
    if let Some(reason) = unguarded {
        entry["unguarded"] = Value::from(reason);
    }
    sync_caller(vec![entry], |_, _| Ok("deleted".into()))
}

#[test]
fn a_wrapped_caller_declares_effects_in_mcp_annotations() {
    let write = json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false});
    let built = Dispatcher::builder()
        .wrap(remote(write.clone(), None))
        .build();
    assert_eq!(
        problems(built),
        vec![BuildProblem::UnguardedWrite {
            tool: "delete_file".into(),
            path: "<wrapped caller #0>::delete_file".into(),
            declared: true,
            only_rewritten_by: vec![],
        }]
    );

    let dispatcher = Dispatcher::builder()
        .wrap(remote(
            write.clone(),
            Some("a scratch directory, wiped hourly"),
        ))
        .build()
        .expect("a remote write tool with a reason builds");
    let effect = Effect::write().destructive(true).open_world(false);
    assert_eq!(dispatcher.tool_effect("delete_file"), Some(effect));
    assert_eq!(
        dispatcher.unguarded_reason("delete_file"),
        Some("a scratch directory, wiped hourly")
    );
    assert_eq!(Value::Object(effect.mcp_annotations()), write);
    // Neither key reaches a model API.
    assert_eq!(
        dispatcher.tool_definitions(),
        [json!({
            "name": "delete_file",
            "description": "Deletes a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        })]
    );

    let read = Dispatcher::builder()
        .wrap(remote(json!({"readOnlyHint": true}), None))
        .build()
        .expect("a remote read tool needs no guard");
    assert_eq!(read.tool_effect("delete_file"), Some(Effect::read()));

    // No `readOnlyHint`: undeclared, a write when the builder says so.
    let built = Dispatcher::builder()
        .wrap(remote(json!({"title": "Delete"}), None))
        .undeclared_effects_are_writes()
        .build();
    assert_eq!(
        problems(built),
        vec![BuildProblem::UnguardedWrite {
            tool: "delete_file".into(),
            path: "<wrapped caller #0>::delete_file".into(),
            declared: false,
            only_rewritten_by: vec![],
        }]
    );
}

#[test]
fn effects_map_to_mcp_annotations_and_back() {
    let cases = [
        (Effect::read(), json!({"readOnlyHint": true})),
        (
            Effect::read().open_world(true),
            json!({"readOnlyHint": true, "openWorldHint": true}),
        ),
        (Effect::write(), json!({"readOnlyHint": false})),
        (
            Effect::write()
                .destructive(false)
                .idempotent(true)
                .open_world(false),
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true,
                   "openWorldHint": false}),
        ),
    ];
    for (effect, annotations) in cases {
        assert_eq!(Value::Object(effect.mcp_annotations()), annotations);
        assert_eq!(Effect::from_mcp_annotations(&annotations), Some(effect));
    }
    // The write-only hints leave a read effect as it was, as MCP gives them no meaning there.
    assert_eq!(
        Effect::read().destructive(true).idempotent(true),
        Effect::read()
    );
    assert_eq!(
        Effect::from_mcp_annotations(&json!({"readOnlyHint": true, "destructiveHint": false})),
        Some(Effect::read())
    );
    assert_eq!(Effect::from_mcp_annotations(&json!({})), None);
    assert_eq!(
        Effect::from_mcp_annotations(&json!({"readOnlyHint": "yes"})),
        None
    );
}

/// Tools declared with the macro, built from this module.
mod declared {
    use toolgate::{Decision, pre_hook, tool};

    /// Looks an order up.
    #[tool(effect = "read", open_world = false)]
    pub(super) fn find_order(
        /// The order.
        order_id: String,
    ) -> String {
        order_id
    }

    /// Refunds an order.
    #[tool(effect = "write", destructive, idempotent = false)]
    pub(super) fn give_refund(
        /// The order.
        order_id: String,
    ) -> String {
        order_id
    }

    /// Files a note.
    #[tool(effect = "write", unguarded = "notes are internal and append-only")]
    pub(super) fn file_note(
        /// The note.
        text: String,
    ) -> String {
        text
    }

    /// Guards refunds.
    #[pre_hook(order = 1, tools = [give_refund])]
    pub(super) fn refunds_guard() -> Decision {
        Decision::Allow
    }
}

#[test]
fn the_macro_declares_effects_and_reasons() {
    let path = concat!(module_path!(), "::declared");
    let dispatcher = Dispatcher::builder()
        .registered_under(path)
        .build()
        .expect("every write tool is guarded or says why");
    assert_eq!(
        dispatcher.tool_effect("find_order"),
        Some(Effect::read().open_world(false))
    );
    assert_eq!(
        dispatcher.tool_effect("give_refund"),
        Some(Effect::write().destructive(true).idempotent(false))
    );
    assert_eq!(dispatcher.tool_effect("file_note"), Some(Effect::write()));
    assert_eq!(
        dispatcher.unguarded_reason("file_note"),
        Some("notes are internal and append-only")
    );
    // The rustdoc addition is not part of what the model reads.
    assert_eq!(
        dispatcher.tool_definitions()[0]["description"],
        "Files a note."
    );

    // Without its hook, the refund tool is named.
    let err = Dispatcher::builder()
        .items([
            format!("{path}::find_order"),
            format!("{path}::give_refund"),
            format!("{path}::file_note"),
        ])
        .build()
        .expect_err("the refund tool lost its hook");
    assert_eq!(
        err.problems,
        vec![BuildProblem::UnguardedWrite {
            tool: "give_refund".into(),
            path: format!("{path}::give_refund"),
            declared: true,
            only_rewritten_by: vec![],
        }]
    );
}

/// An undeclared macro tool, for `undeclared_effects_are_writes` on registered items.
#[tool]
fn undeclared_ping() -> String {
    "pong".into()
}

#[test]
fn an_undeclared_registered_tool_counts_as_a_write_when_asked() {
    let path = concat!(module_path!(), "::undeclared_ping");
    let err = Dispatcher::builder()
        .item(path)
        .undeclared_effects_are_writes()
        .build()
        .expect_err("undeclared counts as write");
    assert_eq!(
        err.problems,
        vec![BuildProblem::UnguardedWrite {
            tool: "undeclared_ping".into(),
            path: path.into(),
            declared: false,
            only_rewritten_by: vec![],
        }]
    );
}

#[test]
fn a_wrapped_dispatcher_passes_its_effects_and_its_guards_on() {
    let inner = Dispatcher::builder()
        .tool(refund().effect(Effect::write().destructive(true)))
        .tool(lookup().effect(Effect::read()))
        .tool(
            ToolDef::sync("note", "Files a note.", ok)
                .path("app::note")
                .effect(Effect::write())
                .unguarded("notes are append-only"),
        )
        .pre_hook(allow("app::inner_guard").tools(["refund"]))
        .build()
        .expect("the inner dispatcher builds");
    let outer = Dispatcher::builder()
        .wrap(inner)
        .undeclared_effects_are_writes()
        .build()
        .expect("the inner write tools are guarded inside");
    assert_eq!(
        outer.tool_effect("refund"),
        Some(Effect::write().destructive(true))
    );
    assert_eq!(outer.tool_effect("lookup"), Some(Effect::read()));
    assert_eq!(
        outer.unguarded_reason("refund"),
        Some("guarded inside the wrapped dispatcher by app::inner_guard")
    );
    assert_eq!(
        outer.unguarded_reason("note"),
        Some("notes are append-only")
    );
    assert_eq!(outer.unguarded_reason("lookup"), None);
    // The outer dispatcher's API entries carry neither key.
    assert_eq!(
        outer.tool_definitions()[0]
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec![
            "name".to_owned(),
            "description".to_owned(),
            "input_schema".to_owned()
        ])
    );
}
