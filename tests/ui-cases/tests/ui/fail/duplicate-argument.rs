use toolgate::tool;

/// Looks a user up.
#[tool(name = "lookup", name = "find")]
fn lookup_user(user_id: String) -> String {
    user_id
}

fn main() {}
