//! A misspelled matcher path is one error each, about the path as written.
use toolgate::{Decision, ToolUse, post_hook, pre_hook, audit::CallRecord};

mod tools {
    use toolgate::tool;

    /// Gets an order.
    #[tool]
    pub fn get_order(order_id: String) -> String {
        order_id
    }
}

#[pre_hook(order = 1, tools = [tools::get_ordr])]
fn misspelled_function(_call: &ToolUse) -> Decision {
    Decision::Allow
}

#[post_hook(tools = [toolgate_extern_tools::account_balanse])]
fn misspelled_extern(_record: &CallRecord<'_>) {}

fn main() {}
