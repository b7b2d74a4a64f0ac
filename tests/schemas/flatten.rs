//! A `#[serde(flatten)]` enum inside an `#[input]` struct: its schema lists every field its
//! variants have (so no valid input is refused as having an unknown field), Anthropic gets no
//! top-level alternatives, the strict targets emit it non-strict and say why, and an unknown
//! field, a wrong tag or a missing variant field is still refused, by name.

use serde_json::{Value, json};
use toolgate::{Dispatcher, HookContext, ToolResult, ToolUse, provider::Provider};

use crate::corpus;

fn dispatcher() -> Dispatcher {
    Dispatcher::builder()
        .registered_under(corpus::MODULE)
        .only_tools(["flat_int_tool", "flat_ext_tool"])
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn call(d: &Dispatcher, tool: &str, input: Value) -> ToolResult {
    let s = d.session(HookContext::builder("u_1", "sess_flatten").build());
    toolgate::block_on(s.call(&ToolUse::new("toolu_1", tool, input))).unwrap()
}

const TAIL: &str = "Send an input that matches the tool's input_schema.";

#[test]
fn a_flattened_internally_tagged_enum_lists_its_variants_fields_and_requires_its_tag() {
    let d = dispatcher();
    let variant = |tag: &str, doc: &str, fields: Value, required: Value| {
        let mut props = json!({"op": {"type": "string", "const": tag}});
        for (k, v) in fields.as_object().unwrap() {
            props[k] = v.clone();
        }
        json!({"type": "object", "properties": props, "required": required, "description": doc})
    };
    let int = |doc: &str| json!({"type": "integer", "description": doc});
    assert_eq!(
        d.canonical_schema("flat_int_tool"),
        Some(&json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "A query."},
                "op": {"type": "string", "enum": ["add_up", "neg", "noop"],
                       "description": "One of: `add_up`: Adds; `neg`: Negates; `noop`: Does nothing."},
                "a": {"type": "integer", "description": "Left. / The operand."},
                "b": {"type": "integer", "description": "Right."}
            },
            "required": ["q", "op"],
            "anyOf": [
                variant("add_up", "Adds.", json!({"a": int("Left."), "b": int("Right.")}),
                        json!(["op", "a", "b"])),
                variant("neg", "Negates.", json!({"a": int("The operand.")}), json!(["op", "a"])),
                variant("noop", "Does nothing.", json!({}), json!(["op"]))
            ],
            "additionalProperties": false
        }))
    );
    // Anthropic refuses a top-level `anyOf`: the listed properties stand alone.
    let anthropic = d.tool_definitions_for(Provider::Anthropic).unwrap();
    assert_eq!(
        anthropic[1],
        json!({
            "name": "flat_int_tool",
            "description": "Echoes a flattened internally tagged enum.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "q": {"type": "string", "description": "A query."},
                    "op": {"type": "string", "enum": ["add_up", "neg", "noop"],
                           "description": "One of: `add_up`: Adds; `neg`: Negates; `noop`: Does nothing."},
                    "a": {"type": "integer", "description": "Left. / The operand."},
                    "b": {"type": "integer", "description": "Right."}
                },
                "required": ["q", "op"],
                "additionalProperties": false
            }
        })
    );
    let reason = "the input has properties of its own beside `anyOf` alternatives (a \
                  #[serde(flatten)] enum), which a strict schema cannot express: it closes \
                  every object (`additionalProperties: false`), so the alternatives' fields \
                  could not be given";
    for p in [
        Provider::AnthropicStrict,
        Provider::OpenAi,
        Provider::OpenAiResponses,
    ] {
        let listed: Vec<String> = d
            .non_strict_tools(p)
            .iter()
            .map(|t| t.to_string())
            .collect();
        assert_eq!(
            listed,
            [
                format!("`flat_ext_tool`: {reason}"),
                format!("`flat_int_tool`: {reason}")
            ],
            "{p}"
        );
    }
}

#[test]
fn every_variant_is_accepted_and_a_wrong_input_is_refused_by_name() {
    let d = dispatcher();
    for (input, echoed) in [
        (
            json!({"q": "x", "op": "add_up", "a": 1, "b": 2}),
            r#"{"q":"x","op":"add_up","a":1,"b":2}"#,
        ),
        (
            json!({"q": "x", "op": "neg", "a": 3}),
            r#"{"q":"x","op":"neg","a":3}"#,
        ),
        (json!({"op": "noop", "q": "x"}), r#"{"q":"x","op":"noop"}"#),
    ] {
        assert_eq!(
            call(&d, "flat_int_tool", input),
            ToolResult::text("toolu_1", echoed)
        );
    }
    let refused = |input: Value| call(&d, "flat_int_tool", input).content_text().into_owned();
    assert_eq!(
        refused(json!({"q": "x", "op": "noop", "extra": 1})),
        format!(
            "Error: invalid input for tool `flat_int_tool`: unknown field `extra`, expected one \
             of `q`, `op`, `a`, `b`. {TAIL}"
        )
    );
    assert_eq!(
        refused(json!({"q": "x", "op": "mul", "a": 1})),
        format!(
            "Error: invalid input for tool `flat_int_tool` at `op`: expected one of `add_up`, \
             `neg`, `noop`, found the string \"mul\". {TAIL}"
        )
    );
    assert_eq!(
        refused(json!({"q": "x", "op": "add_up", "a": 1})),
        format!("Error: invalid input for tool `flat_int_tool`: missing field `b`. {TAIL}")
    );
    assert_eq!(
        refused(json!({"q": "x"})),
        format!("Error: invalid input for tool `flat_int_tool`: missing field `op`. {TAIL}")
    );
}

#[test]
fn a_documented_unit_variant_of_a_flattened_enum_is_the_key_it_names() {
    let d = dispatcher();
    let anthropic = d.tool_definitions_for(Provider::Anthropic).unwrap();
    assert_eq!(
        anthropic[0]["input_schema"],
        json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "A query."},
                "Circle": {"type": "object", "description": "A circle.",
                           "properties": {"r": {"type": "number", "description": "Its radius."}},
                           "required": ["r"], "additionalProperties": false},
                "Square": {"type": "integer", "minimum": 0, "maximum": 255,
                           "description": "A square."},
                "Unit": {"type": "null", "description": "Nothing."}
            },
            "required": ["q"],
            "additionalProperties": false
        })
    );
    for (input, echoed) in [
        (json!({"q": "x", "Unit": null}), r#"{"q":"x","Unit":null}"#),
        (json!({"q": "x", "Square": 4}), r#"{"q":"x","Square":4}"#),
        (
            json!({"q": "x", "Circle": {"r": 0.5}}),
            r#"{"q":"x","Circle":{"r":0.5}}"#,
        ),
        // serde reads the first variant key it finds.
        (
            json!({"q": "x", "Square": 4, "Unit": null}),
            r#"{"q":"x","Square":4}"#,
        ),
    ] {
        assert_eq!(
            call(&d, "flat_ext_tool", input),
            ToolResult::text("toolu_1", echoed)
        );
    }
    assert_eq!(
        call(
            &d,
            "flat_ext_tool",
            json!({"q": "x", "Circle": {"radius": 1}})
        )
        .content_text(),
        format!(
            "Error: invalid input for tool `flat_ext_tool` (2 problems):\n\
             - at `Circle`: unknown field `radius`, expected one of `r`\n\
             - at `Circle`: missing field `r`\n{TAIL}"
        )
    );
}
