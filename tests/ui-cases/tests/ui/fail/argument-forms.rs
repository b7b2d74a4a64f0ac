use toolgate::{Decision, ToolUse, pre_hook, tool};

/// Parenthesized values are not an accepted form.
#[tool(name("renamed"), allow_unknown_fields())]
fn parenthesized(x: u32) -> u32 {
    x
}

#[pre_hook(order = -9223372036854775809)]
fn below_i64(_call: &ToolUse) -> Decision {
    Decision::Allow
}

#[pre_hook(order = 1, timeout_ms = 0)]
async fn zero_deadline(_call: &ToolUse) -> Decision {
    Decision::Allow
}

fn main() {}
