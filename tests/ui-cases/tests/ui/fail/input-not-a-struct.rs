use toolgate::tool;

/// Takes a list as its whole input.
#[tool]
fn tag(#[input] tags: Vec<String>) -> String {
    tags.join(",")
}

fn main() {}
