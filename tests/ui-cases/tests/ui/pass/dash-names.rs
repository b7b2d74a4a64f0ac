//! Tool names `a-b` and `a_hb` in one module are different names, and both register.
use toolgate::{Dispatcher, tool};

/// First.
#[tool(name = "a-b")]
fn first() -> u8 {
    1
}

/// Second.
#[tool(name = "a_hb")]
fn second() -> u8 {
    2
}

fn main() {
    let d = Dispatcher::builder().registered_under(module_path!()).build().unwrap();
    assert_eq!(d.tool_names().collect::<Vec<_>>(), ["a-b", "a_hb"]);
    assert_eq!(first() + second(), 3);
}
