use toolgate::tool;

/// A struct the return type misspells.
#[derive(serde::Serialize)]
struct Chart {
    title: String,
}

/// Draws a chart. The misspelled return type is one error, not one per use the macro makes of
/// it (its output schema probe names the type too).
#[tool]
fn draw_chart(metric: String) -> Chrat {
    Chart { title: metric }
}

fn main() {}
