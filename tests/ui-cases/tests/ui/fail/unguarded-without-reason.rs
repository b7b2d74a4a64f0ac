use toolgate::tool;

/// The reason is the point: a blank one is refused.
#[tool(effect = "write", unguarded = "  ")]
fn blank(x: u32) -> u32 {
    x
}

/// It is words, not a flag.
#[tool(effect = "write", unguarded)]
fn flag(x: u32) -> u32 {
    x
}

/// Nor a boolean.
#[tool(effect = "write", unguarded = true)]
fn boolean(x: u32) -> u32 {
    x
}

fn main() {}
