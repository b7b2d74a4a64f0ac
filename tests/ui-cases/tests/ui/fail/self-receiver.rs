use toolgate::tool;

struct Directory;

impl Directory {
    /// Looks a user up.
    #[tool]
    fn lookup_user(&self, user_id: String) -> String {
        user_id
    }
}

fn main() {}
