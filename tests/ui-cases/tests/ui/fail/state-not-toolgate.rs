use toolgate::tool;

/// A US state, not toolgate's State<T>.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct State<T>(T);

/// Looks up a sales tax rate.
#[tool]
fn tax_rate(state: State<String>) -> String {
    state.0
}

fn main() {}
