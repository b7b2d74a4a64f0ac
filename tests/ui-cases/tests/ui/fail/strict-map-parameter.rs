use std::collections::{BTreeMap, HashMap};

use toolgate::tool;

/// A map or a tuple is never strict: `strict = true` cannot hold.
#[tool(strict = true)]
fn tag(
    /// Labels by name.
    labels: HashMap<String, String>,
    /// Counts by name, if any.
    counts: Option<BTreeMap<String, u32>>,
    /// A pair.
    pair: Vec<(u32, String)>,
    /// A plain field is fine.
    note: String,
) -> String {
    format!("{labels:?} {counts:?} {pair:?} {note}")
}

/// `strict = false` asks nothing of the schema.
#[tool(strict = false)]
fn tag_loosely(
    /// Labels by name.
    labels: HashMap<String, String>,
) -> usize {
    labels.len()
}

fn main() {}
