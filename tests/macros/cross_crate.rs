//! Registration across two crates of the workspace: tools and hooks of a library crate are
//! found once the crate is linked, hooks here can match its tools by path, and a tool name used
//! in both crates is a build error naming both paths.

use serde_json::json;
use toolgate::{Dispatcher, HookContext, ToolResult, ToolUse, dispatch::BuildProblem};
// Links the library crate, so its registrations are in this binary.
use toolgate_extern_tools as _;

mod local {
    use toolgate::{Decision, ToolUse, pre_hook, tool};

    /// Echoes its text, here too.
    #[tool]
    pub(crate) fn echo(
        /// The text.
        text: String,
    ) -> String {
        text
    }

    /// A local hook on the other crate's tool, named by its path.
    #[pre_hook(order = 5, tools = [toolgate_extern_tools::account_balance])]
    pub(crate) fn no_weekend_balance(call: &ToolUse) -> Decision {
        if call.input["account_id"] == "acc_weekend" {
            Decision::deny("balances are not shown on weekends.")
        } else {
            Decision::Allow
        }
    }
}

#[test]
fn a_library_crates_items_are_registered_once_linked() {
    let d = Dispatcher::builder()
        .registered_under("toolgate_extern_tools")
        .registered_under(format!("{}::local", module_path!()))
        .without_tools(["echo"])
        .build()
        .unwrap();
    assert_eq!(d.tool_names().collect::<Vec<_>>(), ["account_balance"]);
    assert_eq!(
        d.pre_hook_chain("account_balance").unwrap(),
        [
            "macros::cross_crate::local::no_weekend_balance",
            "toolgate_extern_tools::own_account"
        ]
    );
    let s = d.session(HookContext::builder("u_001", "sess_x").build());
    let call = |id, account| {
        toolgate::block_on(s.call(&ToolUse::new(
            id,
            "account_balance",
            json!({"account_id": account}),
        )))
        .unwrap()
    };
    assert_eq!(call("t1", "acc_1"), ToolResult::text("t1", "12500"));
    assert_eq!(
        call("t2", "acc_2"),
        ToolResult::error("t2", "BLOCKED: that account is not yours.")
    );
    assert_eq!(
        call("t3", "acc_weekend"),
        ToolResult::error("t3", "BLOCKED: balances are not shown on weekends.")
    );
}

#[test]
fn one_tool_name_in_two_crates_is_a_build_error_naming_both_paths() {
    let err = Dispatcher::builder()
        .registered_under("toolgate_extern_tools")
        .registered_under(format!("{}::local", module_path!()))
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::DuplicateTool {
            tool: "echo".into(),
            paths: vec![
                "macros::cross_crate::local::echo".into(),
                "toolgate_extern_tools::echo".into()
            ]
        }]
    );
}
