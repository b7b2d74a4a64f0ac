use toolgate::tool;

#[tool]
fn lookup_user(user_id: String) -> String {
    user_id
}

fn main() {}
