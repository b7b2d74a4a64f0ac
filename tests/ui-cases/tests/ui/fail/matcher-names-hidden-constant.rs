use toolgate::{Decision, ToolUse, pre_hook, tool};

/// Looks a user up.
#[tool]
fn lookup_user(user_id: String) -> String {
    user_id
}

#[pre_hook(order = 1, tools = [__toolgate_tool_lookup_user])]
fn on_lookup(_call: &ToolUse) -> Decision {
    Decision::Allow
}

fn main() {}
