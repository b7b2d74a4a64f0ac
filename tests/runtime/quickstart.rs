//! `examples/quickstart.rs`, run as its user runs it (`cargo run --example quickstart`, a child
//! process): the user message it prints for its recorded response, and its tool and hook, which
//! are the README's word for word.

use std::path::Path;
use std::process::Command;

use crate::support;

/// What the example prints: one `tool_result` per `tool_use`, in order; the other customer's
/// order blocked by `own_orders_only`'s text.
const PRINTED: &str = r#"{
  "role": "user",
  "content": [
    {
      "type": "tool_result",
      "tool_use_id": "toolu_01Gq5Wd8Ek2Rt6Yu1Io4Pa7S",
      "content": "order o_1001: 2599 cents paid"
    },
    {
      "type": "tool_result",
      "tool_use_id": "toolu_01Hr6Xe9Fl3Su7Zv2Jp5Qb8T",
      "content": "BLOCKED: that order is not one of this customer's orders. Ask the customer to check the order number.",
      "is_error": true
    }
  ]
}
"#;

#[test]
fn quickstart_answers_each_tool_use_and_blocks_the_other_customers_order() {
    let out = Command::new(support::example_binary("quickstart"))
        .output()
        .expect("the example runs");
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (Some(0), PRINTED.to_owned(), String::new())
    );
}

#[test]
fn quickstart_has_the_readmes_tool_and_hook_word_for_word() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/quickstart.rs")).unwrap();
    // From the tool's doc comment to the hook's closing brace, in the README's code block.
    let start = readme
        .find("/// Gets one of the customer's orders")
        .expect("the README shows the tool");
    let end = start
        + readme[start..]
            .find("\n}\n\nfn main")
            .expect("the README's hook ends before its main")
        + "\n}\n".len();
    let items = &readme[start..end];
    assert!(items.contains("#[tool]") && items.contains("#[pre_hook("));
    assert!(
        example.contains(items),
        "examples/quickstart.rs no longer has the README's tool and hook:\n{items}"
    );
}
