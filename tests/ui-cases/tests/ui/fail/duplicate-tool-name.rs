use toolgate::tool;

/// Finds a user.
#[tool(name = "lookup")]
fn find_user(id: String) -> String {
    id
}

/// Finds an order.
#[tool(name = "lookup")]
fn find_order(id: String) -> String {
    id
}

fn main() {}
