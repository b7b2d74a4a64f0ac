use toolgate::{Decision, ToolUse, pre_hook};

#[pre_hook(order = "10")]
fn quoted(_call: &ToolUse) -> Decision {
    Decision::Allow
}

#[pre_hook(order = 1.5)]
fn fractional(_call: &ToolUse) -> Decision {
    Decision::Allow
}

fn main() {}
