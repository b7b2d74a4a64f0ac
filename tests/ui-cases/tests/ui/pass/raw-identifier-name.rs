use toolgate::{Dispatcher, tool};

/// Reports the type of a value.
#[tool]
fn r#type(
    /// The value.
    r#value: String,
) -> String {
    format!("string of {}", r#value.len())
}

fn main() {
    let d = Dispatcher::builder().registered_under(module_path!()).build().unwrap();
    let def = &d.tool_definitions()[0];
    assert_eq!(def["name"], "type");
    assert_eq!(def["input_schema"]["required"][0], "value");
    assert_eq!(r#type("ab".into()), "string of 2");
}
