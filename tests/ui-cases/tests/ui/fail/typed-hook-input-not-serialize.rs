use schemars::JsonSchema;
use serde::Deserialize;
use toolgate::{Decision, pre_hook, tool};

/// The input of `search`: deserialized, never serialized.
#[derive(Deserialize, JsonSchema)]
pub struct Search {
    /// What to look for.
    pub query: String,
}

/// Searches.
#[tool]
fn search(#[input] search: Search) -> String {
    search.query
}

/// A typed rewrite is serialized back to the input, so the type must be `Serialize`.
#[pre_hook(order = 10)]
fn lowercase(search: &Search) -> Decision<Search> {
    Decision::Rewrite(Search {
        query: search.query.to_lowercase(),
    })
}

fn main() {}
