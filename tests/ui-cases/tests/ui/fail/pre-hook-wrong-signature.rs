use toolgate::{Decision, HookContext, ToolUse, pre_hook};

#[pre_hook(order = 1)]
fn takes_a_string(_ctx: &HookContext, tool_name: String) -> Decision {
    let _ = tool_name;
    Decision::Allow
}

#[pre_hook(order = 2)]
fn returns_a_bool(_call: &ToolUse) -> bool {
    true
}

fn main() {}
