use toolgate::tool;

/// Reads the ledger.
#[tool(errors = "internal")]
fn read_ledger(day: u32) -> std::io::Result<u32> {
    Ok(day)
}

/// Reads the ledger, with the value not a string.
#[tool(errors = shown)]
fn read_ledger_bare(day: u32) -> std::io::Result<u32> {
    Ok(day)
}

/// Reads the ledger, with no value.
#[tool(errors)]
fn read_ledger_flag(day: u32) -> std::io::Result<u32> {
    Ok(day)
}

fn main() {}
