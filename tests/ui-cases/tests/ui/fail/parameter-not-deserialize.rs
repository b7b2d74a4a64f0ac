use toolgate::tool;

struct Coordinates {
    lat: f64,
    lon: f64,
}

/// Gets the weather at a point.
#[tool]
fn get_weather(at: Coordinates) -> String {
    format!("{} {}", at.lat, at.lon)
}

fn main() {}
