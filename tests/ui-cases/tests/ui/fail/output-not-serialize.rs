use toolgate::tool;

/// A value the tool's author forgot to make `Serialize`.
struct Chart {
    png_base64: String,
}

/// Draws a chart: the output must be `Serialize` (its JSON is the text), a `String`, or
/// `toolgate::content::Content` for an image.
#[tool]
fn draw_chart(metric: String) -> Chart {
    Chart { png_base64: metric }
}

fn main() {}
