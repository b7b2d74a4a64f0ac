use schemars::JsonSchema;
use serde::Deserialize;
use toolgate::{Decision, HookContext, pre_hook, tool};

/// `input` takes a plain identifier.
#[tool(input = "HelpQuery")]
fn quoted(query: String) -> String {
    query
}

/// Not a path.
#[tool(input = inputs::HelpQuery)]
fn pathed(query: String) -> String {
    query
}

/// Its input struct.
#[derive(Deserialize, JsonSchema)]
pub struct Lookup {
    /// The id.
    pub id: String,
}

/// An `#[input]` struct has a name already.
#[tool(input = LookupInput)]
fn lookup(#[input] lookup: Lookup) -> String {
    lookup.id
}

/// A hook takes one typed input.
#[pre_hook(order = 1)]
fn two_inputs(_a: &Lookup, _b: &Lookup, _ctx: &HookContext) -> Decision<Lookup> {
    Decision::Allow
}

fn main() {}
