//! The walk's problems for schemas and inputs of every kind, in the documented order.

use super::*;
use serde_json::json;

/// The problems of `input` as `(path, message)`, the count of the others after them.
fn all(schema: &Value, input: Value) -> (Vec<(String, String)>, usize) {
    let report = problems(schema, &input, Integers::Serde);
    let listed = report
        .problems
        .listed
        .into_iter()
        .map(|p| (p.path, p.message))
        .collect();
    (listed, report.problems.more)
}

/// The first problem, when there is one.
fn at(schema: &Value, input: Value) -> Option<(String, String)> {
    all(schema, input).0.into_iter().next()
}

fn some(path: &str, message: &str) -> Option<(String, String)> {
    Some((path.to_owned(), message.to_owned()))
}

fn pair(path: &str, message: &str) -> (String, String) {
    (path.to_owned(), message.to_owned())
}

#[test]
fn names_each_mismatch_in_input_order() {
    let schema = json!({
        "type": "object",
        "properties": {
            "order_id": {"type": "string"},
            "amount_cents": {"type": "integer", "format": "uint64", "minimum": 0},
            "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", null]},
            "evidence": {"type": "array", "items": {"type": "string"}},
            "small": {"type": "integer", "format": "uint8", "minimum": 0}
        },
        "required": ["order_id", "amount_cents"]
    });
    assert_eq!(
        at(&schema, json!({"order_id": "o_1", "amount_cents": "ten"})),
        some(
            "amount_cents",
            "expected an integer ≥ 0, found the string \"ten\""
        )
    );
    // Both, in the input's order.
    assert_eq!(
        all(&schema, json!({"amount_cents": -1, "order_id": 5})),
        (
            vec![
                pair(
                    "amount_cents",
                    "expected an integer ≥ 0, found the number -1"
                ),
                pair("order_id", "expected a string, found the number 5"),
            ],
            0
        )
    );
    assert_eq!(
        at(&schema, json!({"order_id": "o_1", "amount_cents": 1.5})),
        some(
            "amount_cents",
            "expected an integer ≥ 0, found the number 1.5"
        )
    );
    assert_eq!(
        at(&schema, json!({"order_id": "o_1"})),
        some("", "missing field `amount_cents`")
    );
    assert_eq!(
        at(
            &schema,
            json!({"order_id": "o_1", "amount_cents": 1, "unit": "Celsius"})
        ),
        some(
            "unit",
            "expected one of `celsius`, `fahrenheit` (or null), found the string \"Celsius\""
        )
    );
    assert_eq!(
        at(
            &schema,
            json!({"order_id": "o_1", "amount_cents": 1, "evidence": ["a", 7]})
        ),
        some("evidence[1]", "expected a string, found the number 7")
    );
    assert_eq!(
        at(
            &schema,
            json!({"order_id": "o_1", "amount_cents": 1, "small": 256})
        ),
        some(
            "small",
            "expected an integer from 0 to 255, found the number 256"
        )
    );
    assert_eq!(
        at(
            &schema,
            json!({"order_id": "o_1", "amount_cents": 1, "unit": null})
        ),
        None
    );
}

#[test]
fn follows_refs_options_and_documented_enums() {
    let schema = json!({
        "type": "object",
        "properties": {
            "node": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
            "pace": {"oneOf": [
                {"const": "relaxed", "type": "string", "description": "One a day."},
                {"const": "packed", "type": "string"}
            ]}
        },
        "$defs": {"Node": {
            "type": "object",
            "properties": {"value": {"type": "boolean"}, "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
            "required": ["value"]
        }}
    });
    assert_eq!(
        at(
            &schema,
            json!({"node": {"value": true, "next": {"value": "yes"}}})
        ),
        some(
            "node.next.value",
            "expected true or false, found the string \"yes\""
        )
    );
    assert_eq!(
        at(&schema, json!({"node": {"next": null}})),
        some("node", "missing field `value`")
    );
    assert_eq!(
        at(&schema, json!({"pace": "lazy"})),
        some(
            "pace",
            "expected one of `relaxed`, `packed`, found the string \"lazy\""
        )
    );
    assert_eq!(at(&schema, json!({"pace": "packed", "node": null})), None);
}

#[test]
fn checks_tuples_and_maps_and_cuts_long_values() {
    let schema = json!({
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
            "labels": {"type": "object", "additionalProperties": {"type": "integer"}}
        }
    });
    assert_eq!(
        at(&schema, json!({"pair": ["a"]})),
        some("pair", "expected at least 2 items, found 1")
    );
    assert_eq!(
        at(&schema, json!({"pair": ["a", "b"]})),
        some("pair[1]", "expected an integer, found the string \"b\"")
    );
    assert_eq!(
        at(&schema, json!({"labels": {"x": 1, "y": true}})),
        some("labels.y", "expected an integer, found the boolean true")
    );
    // A value is quoted to 64 characters of its JSON text (the opening quote is one).
    let long = "z".repeat(100);
    assert_eq!(
        at(&schema, json!({"labels": {"x": long}})),
        some(
            "labels.x",
            &format!(
                "expected an integer, found the string \"{}…",
                "z".repeat(63)
            )
        )
    );
}

#[test]
fn unknown_fields_and_mismatches_come_in_one_list_in_input_order() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "object", "properties": {"c": {"type": "string"}},
                  "required": ["c"], "additionalProperties": false}
        },
        "required": ["a", "b", "d"],
        "additionalProperties": false
    });
    assert_eq!(
        all(&schema, json!({"x": 1, "b": {"y": 2}, "a": "one"})),
        (
            vec![
                pair("", "unknown field `x`, expected one of `a`, `b`"),
                pair("b", "unknown field `y`, expected one of `c`"),
                pair("b", "missing field `c`"),
                pair("a", "expected an integer, found the string \"one\""),
                pair("", "missing field `d`"),
            ],
            0
        )
    );
}

#[test]
fn more_than_five_problems_are_counted() {
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let (listed, more) = all(&schema, json!([1, 2, 3, 4, 5, 6, 7]));
    assert_eq!(listed.len(), 5);
    assert_eq!(
        listed[4],
        pair("[4]", "expected a string, found the number 5")
    );
    assert_eq!(more, 2);
    // Past MAX_COLLECTED, the count is a lower bound.
    let many: Vec<u32> = (0..2000).collect();
    let report = problems(&schema, &json!(many), Integers::Serde);
    assert_eq!(report.problems.more, MAX_COLLECTED - MAX_LISTED_PROBLEMS);
    assert!(report.problems.more_at_least);
}

#[test]
fn the_tagged_alternative_reports() {
    // `#[serde(tag = "kind")] enum Shape { Circle { r: f64 }, Square { side: f64 } }`.
    let shape = json!({"oneOf": [
        {"type": "object", "properties": {"kind": {"type": "string", "const": "circle"},
                                          "r": {"type": "number"}},
         "required": ["kind", "r"], "additionalProperties": false},
        {"type": "object", "properties": {"kind": {"type": "string", "const": "square"},
                                          "side": {"type": "number"}},
         "required": ["kind", "side"], "additionalProperties": false}
    ]});
    assert_eq!(
        all(&shape, json!({"kind": "square", "r": 1})),
        (
            vec![
                pair("", "unknown field `r`, expected one of `kind`, `side`"),
                pair("", "missing field `side`"),
            ],
            0
        )
    );
    assert_eq!(
        all(&shape, json!({"kind": "triangle", "r": 1})),
        (
            vec![pair(
                "kind",
                "expected one of `circle`, `square`, found the string \"triangle\""
            )],
            0
        )
    );
    // Untagged, no alternative close.
    let untagged = json!({"anyOf": [
        {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]},
        {"type": "object", "properties": {"side": {"type": "number"}}, "required": ["side"]}
    ]});
    assert_eq!(
        at(&untagged, json!({"edge": 1})),
        some("", "an object does not match any of the 2 allowed shapes")
    );
    assert_eq!(
        at(&shape, json!("square")),
        some(
            "",
            "the string \"square\" does not match any of the 2 allowed shapes"
        )
    );
}

#[test]
fn applies_the_validation_keywords_of_a_callers_schema() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 4},
            "step": {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0},
            "tags": {"type": "array", "uniqueItems": true, "contains": {"const": "x"}},
            "n": {"type": "integer", "maximum": 9, "exclusiveMaximum": 5},
            "mode": {"not": {"const": "off"}},
            "opts": {"type": "object", "minProperties": 1, "propertyNames": {"maxLength": 3},
                     "dependentRequired": {"a": ["b"]}}
        }
    });
    let walk = |input: Value| -> Vec<(String, String)> {
        problems(&schema, &input, Integers::JsonSchema)
            .problems
            .listed
            .into_iter()
            .map(|p| (p.path, p.message))
            .collect()
    };
    assert_eq!(
        walk(json!({"name": "é", "step": 0.75, "tags": ["a", "a"], "n": 5.0})),
        vec![
            pair("name", "expected at least 2 characters, found 1"),
            pair("step", "expected a multiple of 0.5, found the number 0.75"),
            pair("tags", "expected unique items, but items 0 and 1 are equal"),
            pair(
                "tags",
                "expected at least 1 item of the kind this array must contain, found 0"
            ),
            pair("n", "expected an integer < 5, found the number 5.0"),
        ]
    );
    assert_eq!(
        walk(json!({"name": "abcde", "step": 0, "mode": "off", "opts": {}})),
        vec![
            pair("name", "expected at most 4 characters, found 5"),
            pair("step", "expected a number > 0, found the number 0"),
            pair("mode", "the string \"off\" is not allowed here"),
            pair("opts", "expected at least 1 field, found 0"),
        ]
    );
    assert_eq!(
        walk(json!({"opts": {"long": 1, "a": 2}, "step": 1.5, "tags": ["x"], "n": 4})),
        vec![
            pair("opts", "the field name `long` is not allowed here"),
            pair("opts", "missing field `b`, required when `a` is given"),
        ]
    );
}

#[test]
fn draft_07_tuples_and_ref_siblings() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": false},
            "r": {"$ref": "#/definitions/S", "minLength": 10}
        },
        "definitions": {"S": {"type": "string"}}
    });
    let walk = |input: Value| {
        problems(&schema, &input, Integers::JsonSchema)
            .problems
            .listed
    };
    assert_eq!(
        walk(json!({"pair": ["a", "b"], "r": "short"})),
        vec![Problem {
            path: "pair".into(),
            message: "expected at most 1 item, found 2".into()
        }]
    );
}
