use toolgate::tool;

/// Looks a user up.
#[tool]
fn lookup_user(user_id: &str) -> String {
    user_id.to_owned()
}

fn main() {}
