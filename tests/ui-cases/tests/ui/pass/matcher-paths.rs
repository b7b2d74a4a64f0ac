//! Every way a hook's `tools = [...]` names a `#[tool]` function finds its tool: by name in the
//! same module, through a glob import or a glob re-export, by relative, `self::`, `super::` and
//! `crate::` paths, a raw identifier, a tool beside a module of the same name, and from a hook
//! defined inside a function body.
use toolgate::{Decision, Dispatcher, ToolUse, post_hook, pre_hook, tool, audit::CallRecord};

/// The search backend, a module named like the tool that calls it.
mod search {
    pub fn run(query: String) -> String {
        query
    }
}

/// Searches.
#[tool]
fn search(
    /// The query.
    query: String,
) -> String {
    search::run(query)
}

/// Reports the type of a value.
#[tool]
fn r#type(
    /// The value.
    value: String,
) -> String {
    value
}

mod tools {
    use toolgate::{Decision, ToolUse, pre_hook, tool};

    /// Looks a user up.
    #[tool]
    pub fn lookup_user(
        /// The user's id.
        id: u32,
    ) -> String {
        id.to_string()
    }

    /// Finds an order.
    #[tool]
    pub(crate) fn find_order(
        /// The order's id.
        id: u32,
    ) -> String {
        id.to_string()
    }

    pub mod deeper {
        use toolgate::{Decision, ToolUse, pre_hook};

        #[pre_hook(order = 3, tools = [super::lookup_user, crate::search])]
        pub fn third(_call: &ToolUse) -> Decision {
            Decision::Allow
        }
    }

    #[pre_hook(order = 4, tools = [self::find_order])]
    fn fourth(_call: &ToolUse) -> Decision {
        Decision::Allow
    }
}

mod globbed {
    use crate::tools::*;
    use toolgate::{Decision, ToolUse, pre_hook};

    #[pre_hook(order = 2, tools = [lookup_user, find_order])]
    fn second(_call: &ToolUse) -> Decision {
        Decision::Allow
    }
}

mod reexport {
    pub use crate::tools::*;
}

#[pre_hook(order = 1, tools = [search, r#type, tools::lookup_user, reexport::find_order])]
fn first(_call: &ToolUse) -> Decision {
    Decision::Allow
}

#[post_hook(tools = [crate::tools::lookup_user])]
fn observe(_record: &CallRecord<'_>) {}

fn main() {
    #[pre_hook(order = 5, tools = [search, tools::lookup_user])]
    fn fifth(_call: &ToolUse) -> Decision {
        Decision::Allow
    }

    let d = Dispatcher::builder().registered_under(module_path!()).build().unwrap();
    let chain = |tool| d.pre_hook_chain(tool).unwrap();
    let path = |hook: &str| format!("{}::{hook}", module_path!());
    assert_eq!(
        chain("search"),
        [path("first"), path("tools::deeper::third"), path("fifth")]
    );
    assert_eq!(chain("type"), [path("first")]);
    assert_eq!(
        chain("lookup_user"),
        [
            path("first"),
            path("globbed::second"),
            path("tools::deeper::third"),
            path("fifth")
        ]
    );
    assert_eq!(
        chain("find_order"),
        [path("first"), path("globbed::second"), path("tools::fourth")]
    );
    assert_eq!(search("q".into()), "q");
}
