use toolgate::{Decision, ToolUse, pre_hook};

#[pre_hook]
fn allow_everything(_call: &ToolUse) -> Decision {
    Decision::Allow
}

fn main() {}
