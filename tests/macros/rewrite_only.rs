//! A PreToolUse hook that only rewrites (it returns `Rewrite`) can never refuse a call, so it
//! is no write tool's guard: `build()` names the write tool it alone matches as unguarded,
//! with the hook and how to say why the tool needs no guard; a hook that returns `Decision`
//! still guards, async or typed; the rewrite itself applies as any rewrite does.

use serde_json::json;
use toolgate::dispatch::{BuildProblem, PreHookDef, ToolDef};
use toolgate::{Dispatcher, HookContext, Rewrite, ToolUse};

mod tools {
    use toolgate::{Decision, HookContext, Rewrite, ToolUse, pre_hook, tool};

    /// Labels of an issue.
    #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    pub(super) struct Labels {
        /// The issue's number.
        pub(super) number: u64,
        /// The labels to set.
        pub(super) labels: Vec<String>,
    }

    /// Sets an issue's labels.
    #[tool(effect = "write")]
    pub(super) fn set_labels(#[input] l: Labels) -> String {
        format!("#{}: {}", l.number, l.labels.join(","))
    }

    /// Closes an issue.
    #[tool(effect = "write", input = Close)]
    pub(super) fn close_issue(
        /// The issue's number.
        number: u64,
    ) -> String {
        format!("closed #{number}")
    }

    /// Labels are lower case: a rewrite that can never refuse.
    #[pre_hook(order = 5)]
    pub(super) fn lower_case_labels(l: &Labels) -> Rewrite<Labels> {
        if l.labels.iter().all(|x| *x == x.to_lowercase()) {
            return Rewrite::Keep;
        }
        Rewrite::To(Labels {
            number: l.number,
            labels: l.labels.iter().map(|x| x.to_lowercase()).collect(),
        })
    }

    /// A close's input as JSON, trimmed of nothing: a `&ToolUse` hook that only rewrites, and
    /// may fail (an error halts; it still cannot refuse).
    #[pre_hook(order = 6, tools = [close_issue])]
    pub(super) async fn number_as_given(call: &ToolUse) -> Result<Rewrite, String> {
        match call.input.get("number") {
            Some(_) => Ok(Rewrite::Keep),
            None => Err("no number".into()),
        }
    }

    /// Maintainers close issues.
    #[pre_hook(order = 10, tools = [close_issue])]
    pub(super) fn maintainers_close(ctx: &HookContext) -> Decision {
        match ctx.tier() {
            Some("maintainer") => Decision::Allow,
            _ => Decision::deny("only maintainers close issues."),
        }
    }

    /// Labels need a maintainer too: a typed hook that can refuse.
    #[pre_hook(order = 10)]
    pub(super) async fn maintainers_label(ctx: &HookContext, _l: &Labels) -> Decision<Labels> {
        match ctx.tier() {
            Some("maintainer") => Decision::Allow,
            _ => Decision::deny("only maintainers label issues."),
        }
    }
}

fn path(item: &str) -> String {
    format!("{}::tools::{item}", module_path!())
}

#[test]
fn a_write_tool_matched_only_by_rewriting_hooks_is_unguarded_at_build() {
    let err = Dispatcher::builder()
        .item(path("set_labels"))
        .item(path("close_issue"))
        .item(path("lower_case_labels"))
        .item(path("number_as_given"))
        .build()
        .expect_err("no hook can refuse a write");
    assert_eq!(
        err.problems,
        vec![
            BuildProblem::UnguardedWrite {
                tool: "set_labels".into(),
                path: path("set_labels"),
                declared: true,
                only_rewritten_by: vec![path("lower_case_labels")],
            },
            BuildProblem::UnguardedWrite {
                tool: "close_issue".into(),
                path: path("close_issue"),
                declared: true,
                only_rewritten_by: vec![path("number_as_given")],
            },
        ]
    );
    assert_eq!(
        err.problems[0].to_string(),
        format!(
            "tool `set_labels` ({}) writes (`effect = \"write\"`), but no PreToolUse hook of this \
             dispatcher guards it (`{}` matches it but only rewrites: it returns `Rewrite`, so \
             it can never refuse a call): add a #[pre_hook] that returns `Decision` and whose \
             `tools` names it, or say why it needs none with #[tool(effect = \"write\", \
             unguarded = \"…\")] (ToolDef::unguarded)",
            path("set_labels"),
            path("lower_case_labels")
        )
    );
}

#[test]
fn a_hook_that_can_refuse_guards_and_the_rewrite_still_applies() {
    let d = Dispatcher::builder()
        .registered_under(format!("{}::tools", module_path!()))
        .build()
        .expect("every write tool has a hook that can refuse");
    let maintainer = HookContext::builder("octocat", "sess_1")
        .tier("maintainer")
        .build();
    let session = d.session(maintainer);
    let call = ToolUse::new(
        "toolu_1",
        "set_labels",
        json!({"number": 7, "labels": ["Bug", "P1"]}),
    );
    let result = toolgate::block_on(session.call(&call)).unwrap();
    assert_eq!(result.content_text(), "#7: bug,p1");
    let visitor = d.session(HookContext::builder("someone", "sess_2").build());
    let close = ToolUse::new("toolu_2", "close_issue", json!({"number": 7}));
    let result = toolgate::block_on(visitor.call(&close)).unwrap();
    assert_eq!(
        result.content_text(),
        "BLOCKED: only maintainers close issues."
    );
}

#[test]
fn a_hook_given_by_hand_and_declared_rewrite_only_guards_nothing() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Note {
        /// The text.
        #[allow(dead_code)]
        text: String,
    }
    let tool = || {
        ToolDef::sync("add_note", "Adds a note.", |_env, _n: Note| {
            Ok(String::from("added"))
        })
        .effect(toolgate::dispatch::Effect::write())
    };
    let trim = || {
        PreHookDef::sync("app::trim", 5, |_env, call: &ToolUse| {
            let text = call.input["text"].as_str().unwrap_or_default();
            Ok(match text.trim() {
                t if t == text => Rewrite::Keep,
                t => Rewrite::To(json!({"text": t})),
            }
            .into())
        })
    };
    let hook = trim().rewrites_only();
    assert!(!hook.can_refuse());
    let err = Dispatcher::builder()
        .tool(tool())
        .pre_hook(hook)
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        vec![BuildProblem::UnguardedWrite {
            tool: "add_note".into(),
            path: "add_note".into(),
            declared: true,
            only_rewritten_by: vec!["app::trim".into()],
        }]
    );
    // Not declared so, the same hook counts: it returns `Decision`, which could refuse.
    assert!(trim().can_refuse());
    let d = Dispatcher::builder().tool(tool()).pre_hook(trim()).build();
    assert!(d.is_ok());
    // A tool that says why it needs no guard builds beside a rewrite-only hook.
    let said = Dispatcher::builder()
        .tool(tool().unguarded("notes are the user's own scratch pad"))
        .pre_hook(trim().rewrites_only())
        .build();
    assert!(said.is_ok());
}
