use toolgate::tool;

/// A tool whose function name is 65 characters long.
#[tool]
fn a_tool_name_that_is_sixty_five_characters_long_and_one_too_many_x(x: String) -> String {
    x
}

fn main() {}
