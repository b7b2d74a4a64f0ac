use toolgate::tool;

/// MCP gives `destructiveHint` and `idempotentHint` a meaning for a write tool only.
#[tool(effect = "read", destructive, idempotent = true)]
fn lookup(x: u32) -> u32 {
    x
}

/// `open_world` describes reads and writes, but needs the effect it describes.
#[tool(open_world, destructive = false)]
fn undeclared(x: u32) -> u32 {
    x
}

/// A hint is a flag or `true` / `false`.
#[tool(effect = "write", destructive = "yes", unguarded = "tests only")]
fn quoted(x: u32) -> u32 {
    x
}

fn main() {}
