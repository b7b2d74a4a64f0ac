use serde_json::{Value, json};
use toolgate::tool;

fn texts() -> Vec<String> {
    vec!["{\"x\": 1}".to_owned()]
}

fn with_argument(n: u32) -> Vec<Value> {
    vec![json!({"x": n})]
}

/// The function must return `Vec<serde_json::Value>`.
#[tool(input_examples = texts)]
fn wrong_return(x: u32) -> u32 {
    x
}

/// And take no argument.
#[tool(input_examples = with_argument)]
fn takes_an_argument(x: u32) -> u32 {
    x
}

/// And exist.
#[tool(input_examples = "no_such_function")]
fn missing(x: u32) -> u32 {
    x
}

fn main() {}
