use toolgate::{Decision, ToolUse, pre_hook, tool};

/// Looks a user up.
#[tool]
fn lookup_user(user_id: String) -> String {
    user_id
}

fn helper() {}

#[pre_hook(order = 1, tools = [helper])]
fn on_helper(_call: &ToolUse) -> Decision {
    Decision::Allow
}

#[pre_hook(order = 2, tools = [lookup_usr])]
fn misspelled(_call: &ToolUse) -> Decision {
    Decision::Allow
}

fn main() {
    helper();
}
