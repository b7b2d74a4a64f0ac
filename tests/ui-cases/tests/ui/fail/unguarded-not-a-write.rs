use toolgate::tool;

/// A read tool needs no guard anyway: `unguarded` is for write tools.
#[tool(effect = "read", unguarded = "it only reads")]
fn lookup(x: u32) -> u32 {
    x
}

/// Without an effect, there is nothing to excuse.
#[tool(unguarded = "tickets are cheap")]
fn undeclared(x: u32) -> u32 {
    x
}

fn main() {}
