use toolgate::tool;

/// Examples are not written inline as JSON.
#[tool(input_examples = "{\"x\": 1}")]
fn inline_json(x: u32) -> u32 {
    x
}

/// Nor as a number.
#[tool(input_examples = 3)]
fn numeric(x: u32) -> u32 {
    x
}

/// Nor left out.
#[tool(input_examples)]
fn bare(x: u32) -> u32 {
    x
}

fn main() {}
