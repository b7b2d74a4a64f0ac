//! A tool defined inside a function body cannot be named by a hook: its companion is not in the
//! module the matcher looks in.
use toolgate::{Decision, ToolUse, pre_hook, tool};

fn main() {
    /// Looks a user up.
    #[tool]
    fn lookup_user(user_id: String) -> String {
        user_id
    }

    #[pre_hook(order = 1, tools = [lookup_user])]
    fn on_lookup(_call: &ToolUse) -> Decision {
        Decision::Allow
    }

    lookup_user(String::new());
}
