//! The output schema a `#[tool]` records from its return type (MCP's `outputSchema`): the `Ok`
//! type of a `Result` (however named) or the type itself, when it implements `JsonSchema` and its
//! schema is an object; nothing for any other return type.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, ToolError,
    dispatch::{ToolDef, sync_caller},
    provider::Provider,
};

mod tools {
    use super::*;
    use schemars::JsonSchema;
    use toolgate::{content::Content, tool};

    /// An order, as the tools return it.
    #[derive(Serialize, JsonSchema)]
    pub(crate) struct Order {
        /// The order's id.
        pub(crate) id: String,
        /// What was paid, in cents.
        pub(crate) amount_cents: u64,
        /// When it shipped, if it did (RFC 3339).
        pub(crate) shipped_at: Option<String>,
    }

    /// A `Result` under a name that does not say so.
    pub(crate) type Lookup = Result<Order, String>;

    /// A value known only by `Serialize`.
    #[derive(Serialize)]
    pub(crate) struct Opaque {
        pub(crate) n: u32,
    }

    /// An enum of two shapes: its schema's root is `oneOf`, not an object.
    #[derive(Serialize, JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)] // only its schema matters
    pub(crate) enum Either {
        /// A count.
        Count(u32),
        /// An order.
        Order(Order),
    }

    fn order() -> Order {
        Order {
            id: "o_1".into(),
            amount_cents: 2599,
            shipped_at: None,
        }
    }

    /// Plain struct.
    #[tool]
    fn plain() -> Order {
        order()
    }

    /// `Result` of a struct.
    #[tool]
    fn result() -> Result<Order, ToolError> {
        Ok(order())
    }

    /// An alias of a `Result`.
    #[tool]
    fn aliased() -> Lookup {
        Ok(order())
    }

    /// Async.
    #[tool]
    async fn later() -> Result<Order, String> {
        Ok(order())
    }

    /// A map.
    #[tool]
    fn counts() -> BTreeMap<String, u32> {
        BTreeMap::from([("a".to_owned(), 1)])
    }

    /// Text.
    #[tool]
    fn text() -> String {
        "t".into()
    }

    /// A number.
    #[tool]
    fn number() -> Result<u64, ToolError> {
        Ok(1)
    }

    /// A list.
    #[tool]
    fn list() -> Vec<Order> {
        vec![order()]
    }

    /// Maybe.
    #[tool]
    fn maybe() -> Option<Order> {
        None
    }

    /// Two shapes.
    #[tool]
    fn either() -> Either {
        Either::Count(1)
    }

    /// Any JSON.
    #[tool]
    fn any() -> Value {
        json!({})
    }

    /// Content blocks.
    #[tool]
    fn blocks() -> Content {
        Content::new().text("x")
    }

    /// Nothing.
    #[tool]
    fn nothing() {}

    /// No `JsonSchema`.
    #[tool]
    fn opaque() -> Opaque {
        Opaque { n: 1 }
    }

    /// An opaque return type, which the probe cannot name.
    #[tool]
    fn hidden() -> impl Serialize + Send + 'static {
        order()
    }
}

fn dispatcher() -> Dispatcher {
    Dispatcher::builder()
        .registered_under(concat!(module_path!(), "::tools"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The `Order` schema as MCP's `outputSchema`: no `$schema` or `title`, no integer `format`,
/// the optional field nullable (a `None` is serialized as `null`), no `additionalProperties`
/// added.
fn order_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The order's id."},
            "amount_cents": {"type": "integer", "description": "What was paid, in cents.",
                             "minimum": 0},
            "shipped_at": {"description": "When it shipped, if it did (RFC 3339).",
                           "anyOf": [{"type": "string"}, {"type": "null"}]}
        },
        "required": ["id", "amount_cents"]
    })
}

#[test]
fn object_outputs_have_an_output_schema_and_others_none() {
    let d = dispatcher();
    let schemas: BTreeMap<&str, Option<&Value>> =
        d.tool_names().map(|n| (n, d.output_schema(n))).collect();
    let order = order_schema();
    let counts = json!({"type": "object", "additionalProperties":
        {"type": "integer", "minimum": 0}});
    assert_eq!(
        schemas,
        BTreeMap::from([
            ("aliased", Some(&order)),
            ("any", None),
            ("blocks", None),
            ("counts", Some(&counts)),
            ("either", None),
            ("hidden", None),
            ("later", Some(&order)),
            ("list", None),
            ("maybe", None),
            ("nothing", None),
            ("number", None),
            ("opaque", None),
            ("plain", Some(&order)),
            ("result", Some(&order)),
            ("text", None),
        ])
    );
    // The MCP entries carry them; no other target does.
    let mcp = d.tool_definitions_for(Provider::Mcp).unwrap();
    let with: Vec<&str> = mcp
        .iter()
        .filter(|t| t.get("outputSchema").is_some())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(with, ["aliased", "counts", "later", "plain", "result"]);
    assert!(
        d.tool_definitions()
            .iter()
            .all(|t| t.get("outputSchema").is_none())
    );
}

/// Arguments of the hand-built tools.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[test]
fn a_hand_built_tool_declares_its_output_type_and_a_wrapped_caller_has_none() {
    let declared = ToolDef::sync("declared", "Declares its output.", |_env, _: NoArgs| {
        serde_json::to_string(&tools::Order {
            id: "o_2".into(),
            amount_cents: 1,
            shipped_at: Some("2026-11-24T15:40:00Z".into()),
        })
        .map_err(ToolError::internal)
    })
    .output_type::<tools::Order>();
    let not_object = ToolDef::sync("listed", "A list.", |_env, _: NoArgs| {
        Ok(String::from("[]"))
    })
    .output_type::<Vec<u32>>();
    let undeclared = ToolDef::sync("undeclared", "Says nothing.", |_env, _: NoArgs| {
        Ok(String::from("{}"))
    });
    let legacy = sync_caller(
        vec![json!({"name": "ping", "description": "Answers pong.",
                    "input_schema": {"type": "object", "properties": {}}})],
        |_ctx, _call| Ok("pong".into()),
    );
    let d = Dispatcher::builder()
        .tool(declared)
        .tool(not_object)
        .tool(undeclared)
        .wrap(legacy)
        .build()
        .unwrap();
    assert_eq!(d.output_schema("declared"), Some(&order_schema()));
    assert_eq!(d.output_schema("listed"), None);
    assert_eq!(d.output_schema("undeclared"), None);
    assert_eq!(d.output_schema("ping"), None);
}
