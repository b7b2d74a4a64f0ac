use toolgate::{Decision, ToolUse, post_hook, pre_hook, audit::CallRecord};

// A guard that matches no tool would guard nothing: an empty list does not compile, for
// PreToolUse and PostToolUse hooks alike.

#[pre_hook(order = 1, tools = [])]
fn guards_nothing(_call: &ToolUse) -> Decision {
    Decision::Allow
}

#[post_hook(tools = [])]
fn observes_nothing(_record: &CallRecord<'_>) {}

fn main() {}
