//! One mistake in a tool is one error: the hooks naming the tool add none.
use toolgate::{Decision, ToolUse, post_hook, pre_hook, tool, audit::CallRecord};

/// Gets an order.
#[tool(nmae = "order")]
fn get_order(order_id: String) -> String {
    order_id
}

#[pre_hook(order = 1, tools = [get_order])]
fn only_own_orders(_call: &ToolUse) -> Decision {
    Decision::Allow
}

#[post_hook(tools = [get_order])]
fn observe(_record: &CallRecord<'_>) {}

fn main() {}
