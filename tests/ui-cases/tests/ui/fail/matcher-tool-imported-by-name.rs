use toolgate::{Decision, ToolUse, pre_hook};

mod tools {
    use toolgate::tool;

    /// Looks a user up.
    #[tool]
    pub fn lookup_user(user_id: String) -> String {
        user_id
    }
}

// Brings the function, not its tool.
use tools::lookup_user;

#[pre_hook(order = 1, tools = [lookup_user])]
fn on_lookup(_call: &ToolUse) -> Decision {
    Decision::Allow
}

fn main() {
    lookup_user(String::new());
}
