use toolgate::tool;

/// `strict` takes `true` or `false`, not a string.
#[tool(strict = "yes")]
fn quoted(x: u32) -> u32 {
    x
}

/// Nor a number.
#[tool(strict = 1)]
fn numeric(x: u32) -> u32 {
    x
}

/// Nor nothing: `strict = false` is a setting too, so the value is written.
#[tool(strict)]
fn bare(x: u32) -> u32 {
    x
}

fn main() {}
