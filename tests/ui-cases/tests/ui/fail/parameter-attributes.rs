use toolgate::{HookContext, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    /// What to look for.
    text: String,
}

/// `#[serde]` on the whole input or an injected parameter means nothing.
#[tool]
fn search(
    #[serde(default)]
    #[input]
    query: Query,
    #[serde(skip)] ctx: &HookContext,
) -> String {
    let _ = ctx;
    query.text
}

/// A borrowed type inside `Option` cannot be deserialized into.
#[tool]
fn greet(
    /// Who to greet.
    name: Option<&str>,
) -> String {
    name.unwrap_or("you").to_owned()
}

/// `#[cfg_attr]` could remove a parameter from the schema.
#[tool]
fn counted(
    /// How many.
    #[cfg_attr(all(), cfg(any()))]
    n: u32,
) -> u32 {
    n
}

fn main() {}
