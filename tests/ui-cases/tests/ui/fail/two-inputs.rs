use toolgate::tool;

/// One input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct A {
    /// A field.
    a: String,
}

/// Another input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct B {
    /// B field.
    b: String,
}

/// Wants the whole input twice.
#[tool]
fn both(#[input] a: A, #[input] b: B) -> String {
    format!("{}{}", a.a, b.b)
}

fn main() {}
