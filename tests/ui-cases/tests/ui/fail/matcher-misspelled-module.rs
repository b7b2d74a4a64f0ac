//! A misspelled module in a matcher path is one error, on the module as written. (rustc holds
//! back the crate's other "cannot find" errors until it is fixed, as for any failed glob import.)
use toolgate::{Decision, ToolUse, pre_hook};

mod tools {
    use toolgate::tool;

    /// Gets an order.
    #[tool]
    pub fn get_order(order_id: String) -> String {
        order_id
    }
}

#[pre_hook(order = 1, tools = [tols::get_order])]
fn misspelled_module(_call: &ToolUse) -> Decision {
    Decision::Allow
}

fn main() {}
