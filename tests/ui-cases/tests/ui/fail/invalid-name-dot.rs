use toolgate::tool;

/// Looks a user up.
#[tool(name = "users.lookup")]
fn lookup_user(user_id: String) -> String {
    user_id
}

fn main() {}
