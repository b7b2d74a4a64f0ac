use toolgate::tool;

/// `effect` is `"read"` or `"write"`: MCP's `destructiveHint` is a separate key.
#[tool(effect = "delete")]
fn remove(x: u32) -> u32 {
    x
}

/// It is a string literal, not a path.
#[tool(effect = write)]
fn bare_word(x: u32) -> u32 {
    x
}

/// And it needs a value.
#[tool(effect)]
fn no_value(x: u32) -> u32 {
    x
}

fn main() {}
