//! `#[tool(crate = path)]` and `#[pre_hook(crate = path)]` for a crate that re-exports toolgate
//! under another path.

mod facade {
    pub use toolgate as engine;
}

use facade::engine::{Decision, Dispatcher, ToolUse, pre_hook, tool};

/// Counts the letters of a word.
#[tool(crate = crate::facade::engine)]
fn letters(
    /// The word.
    word: String,
) -> usize {
    word.chars().count()
}

#[pre_hook(order = 1, crate = crate::facade::engine)]
fn no_empty(call: &ToolUse) -> Decision {
    if call.input["word"] == "" { Decision::deny("empty word") } else { Decision::Allow }
}

fn main() {
    let d = Dispatcher::builder().registered_under(module_path!()).build().unwrap();
    assert_eq!(d.pre_hook_chain("letters").unwrap(), [concat!(module_path!(), "::no_empty")]);
    assert_eq!(letters("héllo".into()), 5);
}
