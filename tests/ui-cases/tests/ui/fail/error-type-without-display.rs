use toolgate::tool;

#[derive(Debug, serde::Serialize)]
struct Opaque;

/// Fails with an error type the model cannot read.
#[tool]
fn fails(x: u32) -> Result<u32, Opaque> {
    if x > 1 { Err(Opaque) } else { Ok(x) }
}

fn main() {}
