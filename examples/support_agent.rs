//! Placeholder until the support agent lands: one tool, one hook, one session.
use serde_json::json;
use toolgate::{Decision, Dispatcher, HookContext, ToolUse, pre_hook, tool};

/// Look up a customer by id.
#[tool]
fn lookup_user(
    /// The customer's id, e.g. u_001.
    user_id: String,
) -> String {
    format!("customer {user_id}")
}

/// Only the session's own user may be looked up.
#[pre_hook(order = 10, tools = [lookup_user])]
fn own_user_only(ctx: &HookContext, call: &ToolUse) -> Decision {
    if call.input["user_id"] == ctx.user_id() {
        Decision::Allow
    } else {
        Decision::deny("you can only look up your own account.")
    }
}

fn main() {
    let dispatcher = Dispatcher::builder()
        .registered_under(module_path!())
        .build()
        .expect("the dispatcher builds");
    let session = dispatcher.session(HookContext::builder("u_001", "sess_demo").build());
    for (id, user) in [("toolu_1", "u_001"), ("toolu_2", "u_999")] {
        let call = ToolUse::new(id, "lookup_user", json!({ "user_id": user }));
        let result = toolgate::block_on(session.call(&call)).expect("no hook failed");
        println!("{id} {user}: {}", result.content_text());
    }
    println!("{:?}", session.end());
}
