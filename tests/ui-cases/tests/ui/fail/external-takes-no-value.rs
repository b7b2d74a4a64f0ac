use toolgate::tool;

/// Runs a shell command (Claude Code's `Bash`).
#[tool(external = true, name = "Bash")]
fn bash(command: String) {}

fn main() {}
