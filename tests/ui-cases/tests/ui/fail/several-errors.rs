use toolgate::tool;

#[tool(name = "bad name", colour = "blue")]
fn lookup_user<T>(user_id: &str, _: T) -> String {
    user_id.to_owned()
}

fn main() {}
