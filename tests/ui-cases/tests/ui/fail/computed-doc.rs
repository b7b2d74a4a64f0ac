use toolgate::tool;

#[doc = concat!("Looks ", "a user up.")]
#[tool]
fn lookup(id: String) -> String {
    id
}

fn main() {}
