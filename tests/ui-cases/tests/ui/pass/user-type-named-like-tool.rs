use toolgate::{Dispatcher, tool};

/// The user's own types, named like the tools.
#[allow(dead_code)]
struct LookupUser {
    id: u32,
}
#[allow(dead_code)]
struct Search;
#[allow(dead_code)]
enum Args {
    One,
}

/// Looks a user up.
#[tool]
fn lookup_user(
    /// The user's id.
    id: u32,
) -> String {
    let _ = LookupUser { id };
    id.to_string()
}

/// Searches.
#[tool]
fn search(
    /// The query.
    query: String,
) -> String {
    let _ = Search;
    query
}

fn main() {
    let d = Dispatcher::builder().registered_under(module_path!()).build().unwrap();
    assert_eq!(d.tool_names().collect::<Vec<_>>(), ["lookup_user", "search"]);
    assert_eq!(lookup_user(7), "7");
}
