//! What a `#[tool]`'s return value becomes, decided by its type and not by its spelling: a
//! `Result` under an alias is a result; a struct whose name ends in `Result` is an output.

use serde::Serialize;
use serde_json::json;
use toolgate::{Dispatcher, HookContext, ToolResult, ToolUse};

mod tools {
    use super::*;
    use toolgate::tool;

    /// A `Result` under a name that does not say so.
    pub(crate) type Outcome = Result<String, String>;

    /// Found records.
    #[derive(Serialize)]
    pub(crate) struct SearchResult {
        pub(crate) hits: u32,
    }

    /// Fails when asked to.
    #[tool]
    pub(crate) fn aliased(
        /// Whether to fail.
        fail: bool,
    ) -> Outcome {
        if fail {
            Err("the lookup failed".to_owned())
        } else {
            Ok("found".to_owned())
        }
    }

    /// Counts hits.
    #[tool]
    pub(crate) fn counted(
        /// How many hits.
        hits: u32,
    ) -> SearchResult {
        SearchResult { hits }
    }

    /// An `io::Result`: its error is internal (the model reads the generic text; the error goes
    /// to the audit line's `detail`).
    #[tool]
    pub(crate) fn read_config(
        /// Whether the file is missing.
        missing: bool,
    ) -> std::io::Result<u32> {
        if missing {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "config.toml is missing",
            ))
        } else {
            Ok(7)
        }
    }

    /// Async, returning the alias.
    #[tool]
    pub(crate) async fn aliased_async(
        /// Whether to fail.
        fail: bool,
    ) -> Outcome {
        aliased(fail)
    }
}

fn call(name: &str, input: serde_json::Value) -> ToolResult {
    let d = Dispatcher::builder()
        .registered_under(format!("{}::tools", module_path!()))
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_1", "sess_returns").build());
    toolgate::block_on(s.call(&ToolUse::new("toolu_1", name, input))).unwrap()
}

fn answer(r: &ToolResult) -> (bool, String) {
    (r.is_error, r.content_text().into_owned())
}

#[test]
fn an_aliased_result_is_a_result() {
    assert_eq!(
        answer(&call("aliased", json!({"fail": true}))),
        (true, "the lookup failed".to_owned())
    );
    assert_eq!(
        answer(&call("aliased", json!({"fail": false}))),
        (false, "found".to_owned())
    );
    assert_eq!(
        answer(&call("aliased_async", json!({"fail": true}))),
        (true, "the lookup failed".to_owned())
    );
}

#[test]
fn a_struct_named_like_a_result_is_an_output() {
    assert_eq!(
        answer(&call("counted", json!({"hits": 3}))),
        (false, r#"{"hits":3}"#.to_owned())
    );
}

#[test]
fn a_path_qualified_result_is_a_result() {
    assert_eq!(
        answer(&call("read_config", json!({"missing": true}))),
        (true, toolgate::content::INTERNAL_ERROR_MESSAGE.to_owned())
    );
    assert_eq!(
        answer(&call("read_config", json!({"missing": false}))),
        (false, "7".to_owned())
    );
}
