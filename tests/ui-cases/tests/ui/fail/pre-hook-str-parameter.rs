use toolgate::{Decision, pre_hook};

// The tool's name is on the `tool_use` block: a hook reads it from `&ToolUse`.
#[pre_hook(order = 1)]
fn by_name(tool_name: &str) -> Decision {
    let _ = tool_name;
    Decision::Allow
}

fn main() {}
