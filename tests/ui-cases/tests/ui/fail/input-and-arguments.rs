use toolgate::tool;

/// The input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    /// What to find.
    text: String,
}

/// Mixes a whole-input struct with a model argument.
#[tool]
fn search(#[input] query: Query, limit: u32) -> String {
    format!("{} {limit}", query.text)
}

fn main() {}
