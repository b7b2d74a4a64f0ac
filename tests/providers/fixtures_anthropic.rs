//! The published Anthropic fixtures: tool definitions generated from `#[tool]` functions equal
//! the published JSON, every `tool_result` content form round-trips, and each published
//! response is answered like its published user message.

use crate::support::{self, fixture, official, optional_fields_nullable};
use serde_json::{Map, Value, json};
use toolgate::{Dispatcher, HookContext, Message, ToolResult, ToolUse, audit::Outcome};

fn dispatcher() -> Dispatcher {
    Dispatcher::builder()
        .registered_under(official::MODULE)
        .build()
        .expect("the official tools build")
}

fn session(d: &Dispatcher) -> toolgate::Session {
    d.session(HookContext::builder("u_test", "sess_fixtures").build())
}

/// Adds `additionalProperties: false` to every object schema with properties: the one
/// deliberate difference from the published definitions (unknown fields are invalid input).
fn closed(mut v: Value) -> Value {
    if let Value::Object(map) = &mut v {
        if map.contains_key("properties") {
            map.insert("additionalProperties".into(), Value::Bool(false));
        }
        for (_, child) in map.iter_mut() {
            *child = closed(child.take());
        }
    }
    v
}

#[test]
fn official_tool_definitions_equal_the_published_json() {
    let published = fixture("anthropic/tools/official_tools.json");
    let mut expected: Vec<Value> = published["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t["input_schema"] = closed(optional_fields_nullable(t["input_schema"].take()));
            t
        })
        .collect();
    expected.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let d = dispatcher();
    assert_eq!(d.tool_definitions(), expected.as_slice());
    // Property order is declaration order, not alphabetical.
    let weather = &d.tool_definitions()[d.tool_names().position(|n| n == "get_weather").unwrap()];
    let keys: Vec<&String> = weather["input_schema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["location", "unit"]);
}

mod open {
    //! A tool that opts out of `additionalProperties: false`.
    use toolgate::tool;

    pub(crate) const MODULE: &str = module_path!();

    /// Get the current time in a given timezone
    #[tool(allow_unknown_fields)]
    pub(crate) fn get_time_lenient(
        /// The timezone, e.g. America/New_York
        timezone: String,
    ) -> String {
        format!("time in {timezone}")
    }
}

#[test]
fn a_tool_that_opts_out_omits_additional_properties_and_accepts_unknown_fields() {
    let d = Dispatcher::builder()
        .registered_under(open::MODULE)
        .build()
        .unwrap();
    assert_eq!(
        d.tool_definitions(),
        &[json!({
            "name": "get_time_lenient",
            "description": "Get the current time in a given timezone",
            "input_schema": {
                "type": "object",
                "properties": {
                    "timezone": {"type": "string", "description": "The timezone, e.g. America/New_York"}
                },
                "required": ["timezone"]
            }
        })]
    );
    let s = session(&d);
    let call = ToolUse::new(
        "toolu_1",
        "get_time_lenient",
        json!({"timezone": "UTC", "extra": true}),
    );
    let r = toolgate::block_on(s.call(&call)).unwrap();
    assert_eq!(r, ToolResult::text("toolu_1", "time in UTC"));
}

/// A sample value for a schema: the first enum value, or a value of the schema's type. A
/// property named in [`KNOWN`] gets the value the fixture tools know, so every valid call
/// succeeds and its result is exact.
fn sample(schema: &Value) -> Value {
    // An optional field: a value of its non-null branch.
    if let Some(branch) = schema["anyOf"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["type"] != "null"))
    {
        return sample(branch);
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("string") => json!("C1"),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        Some("array") => json!([sample(&schema["items"])]),
        Some("object") => {
            let mut m = Map::new();
            for (k, s) in schema["properties"].as_object().into_iter().flatten() {
                let known = KNOWN.iter().find(|(name, _)| name == k);
                m.insert(
                    k.clone(),
                    known.map_or_else(|| sample(s), |(_, v)| json!(v)),
                );
            }
            Value::Object(m)
        }
        other => panic!("no sample for type {other:?}"),
    }
}

/// Property values the fixture tools answer without an error.
const KNOWN: [(&str, &str); 5] = [
    ("location", "Chicago, IL"),
    ("ticker", "MSFT"),
    ("order_id", "O7731"),
    ("customer_id", "C1"),
    ("timezone", "America/Chicago"),
];

/// Per fixture tool: its text with every property given (an enum gets its first value, so
/// `unit` is `celsius`), and with only the required ones (an optional property absent or null).
const EXPECTED: [(&str, &str, &str); 6] = [
    (
        "cancel_order",
        "Order O7731 cancelled.",
        "Order O7731 cancelled.",
    ),
    (
        "get_customer_info",
        "John Doe, john@example.com, 123-456-7890",
        "John Doe, john@example.com, 123-456-7890",
    ),
    (
        "get_order_details",
        r#"{"id":"O7731","product":"Widget C","quantity":3,"price":12.5,"status":"Shipped"}"#,
        r#"{"id":"O7731","product":"Widget C","quantity":3,"price":12.5,"status":"Shipped"}"#,
    ),
    (
        "get_stock_price",
        r#"{"ticker":"MSFT","price_usd":421.37}"#,
        r#"{"ticker":"MSFT","price_usd":421.37}"#,
    ),
    (
        "get_time",
        "Chicago time: 9:15 AM CST",
        "Chicago time: 9:15 AM CST",
    ),
    (
        "get_weather",
        "Chicago: 5°C, light rain",
        "Chicago: 41°F, light rain",
    ),
];

#[test]
fn the_schema_and_the_deserializer_agree_for_every_fixture_tool() {
    let d = dispatcher();
    let s = session(&d);
    let names: Vec<&str> = d.tool_names().collect();
    let expected_names: Vec<&str> = EXPECTED.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(names, expected_names);
    let mut oks = 0;
    // Each call its own id: a session answers an id once.
    let ids = std::cell::Cell::new(0);
    let next_id = || {
        ids.set(ids.get() + 1);
        format!("t{}", ids.get())
    };
    for def in d.tool_definitions() {
        let name = def["name"].as_str().unwrap();
        let (_, full_text, minimal_text) = EXPECTED.iter().find(|(n, _, _)| *n == name).unwrap();
        let schema = &def["input_schema"];
        let full = sample(schema);
        // Every property given: valid.
        let id = next_id();
        let r = toolgate::block_on(s.call(&ToolUse::new(&id, name, full.clone()))).unwrap();
        assert_eq!(r, ToolResult::text(id, *full_text), "{name}: {full}");
        oks += 1;
        // Only the required properties: valid.
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut minimal = full.clone();
        minimal
            .as_object_mut()
            .unwrap()
            .retain(|k, _| required.contains(&k.as_str()));
        let id = next_id();
        let r = toolgate::block_on(s.call(&ToolUse::new(&id, name, minimal.clone()))).unwrap();
        assert_eq!(r, ToolResult::text(id, *minimal_text), "{name}: {minimal}");
        oks += 1;
        // Each required property missing: invalid, naming it.
        for field in &required {
            let mut missing = full.clone();
            missing.as_object_mut().unwrap().remove(*field);
            let r = toolgate::block_on(s.call(&ToolUse::new(next_id(), name, missing))).unwrap();
            assert!(r.is_error);
            assert_eq!(
                r.content_text(),
                format!(
                    "Error: invalid input for tool `{name}`: missing field `{field}`. Send an \
                     input that matches the tool's input_schema."
                )
            );
        }
        // An optional property given as null: valid, as if it were absent.
        for (k, _) in schema["properties"].as_object().unwrap() {
            if required.contains(&k.as_str()) {
                continue;
            }
            let mut with_null = full.clone();
            with_null[k] = Value::Null;
            let id = next_id();
            let r = toolgate::block_on(s.call(&ToolUse::new(&id, name, with_null))).unwrap();
            assert_eq!(r, ToolResult::text(id, *minimal_text), "{name}.{k}");
            oks += 1;
        }
    }
    // Six tools, each called in full and minimal; `get_weather.unit` also as null.
    assert_eq!(oks, 13);
    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::Ok), Some(&13));
    assert_eq!(summary.outcomes.get(&Outcome::InvalidInput), Some(&6));
    assert_eq!(summary.calls, 19);
}

#[test]
fn every_tool_result_content_form_round_trips_unchanged() {
    let variants = fixture("anthropic/tool_results/09_tool_result_content_variants.json");
    for v in variants["variants"].as_array().unwrap() {
        let parsed: ToolResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(&serde_json::to_value(&parsed).unwrap(), v);
        let block: toolgate::content::ContentBlock = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(&serde_json::to_value(&block).unwrap(), v);
    }
    // The forms the crate models, read exactly.
    let error: ToolResult = serde_json::from_value(variants["variants"][5].clone()).unwrap();
    assert!(error.is_error);
    assert_eq!(
        error.content_text(),
        "ConnectionError: the weather service API is not available (HTTP 500)"
    );
    let cached: ToolResult = serde_json::from_value(variants["variants"][6].clone()).unwrap();
    assert_eq!(cached.extra["cache_control"], json!({"type": "ephemeral"}));
    let empty: ToolResult = serde_json::from_value(variants["variants"][3].clone()).unwrap();
    assert_eq!(empty.content, None);
}

/// The `tool_result` blocks of a user message: id, `is_error` and the content's text (a string,
/// or the text blocks of a content array joined).
fn shape(message: &Value) -> Vec<(String, bool, String)> {
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => {
                    blocks.iter().map(|c| c["text"].as_str().unwrap()).collect()
                }
                other => panic!("unexpected content {other}"),
            };
            (
                b["tool_use_id"].as_str().unwrap().to_owned(),
                b["is_error"].as_bool().unwrap_or(false),
                text,
            )
        })
        .collect()
}

#[test]
fn each_published_response_is_answered_like_its_published_user_message() {
    let d = dispatcher();
    // The published error texts of 04 and 06 were written by another host (and 06 lists the
    // cookbook's three tools, not this dispatcher's six): there toolgate's own exact message
    // replaces the published content; everything else must equal the fixture.
    let own_errors = [
        (
            "04_edge_missing_required_field",
            "Error: invalid input for tool `get_weather`: missing field `location`. Send an input \
             that matches the tool's input_schema.",
        ),
        (
            "06_edge_unknown_tool_name",
            "Error: unknown tool 'refund_order'. Available tools: cancel_order, \
             get_customer_info, get_order_details, get_stock_price, get_time, get_weather.",
        ),
    ];
    for case in [
        "01_single_tool_use",
        "02_parallel_tool_use",
        "03_text_then_tool_use",
        "04_edge_missing_required_field",
        "06_edge_unknown_tool_name",
    ] {
        let response: Message =
            serde_json::from_value(fixture(&format!("anthropic/responses/{case}.json"))).unwrap();
        let expected = fixture(&format!("anthropic/tool_results/{case}.user.json"));
        let mut expected = shape(&expected);
        if let Some((_, text)) = own_errors.iter().find(|(c, _)| *c == case) {
            assert_eq!(expected.len(), 1, "{case}");
            expected[0].2 = (*text).to_owned();
        }
        let s = session(&d);
        let answer = support::answer_of(toolgate::block_on(s.respond(&response)).unwrap());
        let answer = serde_json::to_value(&answer).unwrap();
        assert_eq!(answer["role"], "user", "{case}");
        assert_eq!(shape(&answer), expected, "{case}");
        // tool_result blocks come first.
        assert!(
            answer["content"]
                .as_array()
                .unwrap()
                .iter()
                .all(|b| b["type"] == "tool_result"),
            "{case}"
        );
    }
}

#[test]
fn string_results_equal_the_published_ones_exactly() {
    let d = dispatcher();
    for case in ["01_single_tool_use", "03_text_then_tool_use"] {
        let response: Message =
            serde_json::from_value(fixture(&format!("anthropic/responses/{case}.json"))).unwrap();
        let expected = fixture(&format!("anthropic/tool_results/{case}.user.json"));
        let answer =
            support::answer_of(toolgate::block_on(session(&d).respond(&response)).unwrap());
        assert_eq!(
            serde_json::to_value(&answer.content[0]).unwrap(),
            expected["content"][0],
            "{case}"
        );
    }
}

#[test]
fn the_unknown_tool_answer_names_the_tool_and_the_available_tools() {
    let d = dispatcher();
    let response: Message = serde_json::from_value(fixture(
        "anthropic/responses/06_edge_unknown_tool_name.json",
    ))
    .unwrap();
    let answer = support::answer_of(toolgate::block_on(session(&d).respond(&response)).unwrap());
    let result = answer.tool_results().next().unwrap();
    assert!(result.is_error);
    assert_eq!(
        result.content_text(),
        "Error: unknown tool 'refund_order'. Available tools: cancel_order, get_customer_info, \
         get_order_details, get_stock_price, get_time, get_weather."
    );
}

#[test]
fn the_request_assistant_turn_holds_role_and_content_only() {
    let d = dispatcher();
    let s = session(&d);
    let response: Message =
        serde_json::from_value(fixture("anthropic/responses/02_parallel_tool_use.json")).unwrap();
    let published = fixture("anthropic/tool_results/02_parallel_tool_use.user.json");
    let mut conversation = toolgate::content::Conversation::new();
    conversation
        .push_user_text("What's the weather in Chicago and Denver, and the time in Chicago?");
    conversation.push_response(&response);
    let answer = support::answer_of(toolgate::block_on(s.respond(&response)).unwrap());
    conversation.push(answer);
    let sent = serde_json::to_value(&conversation).unwrap();
    let response_json = fixture("anthropic/responses/02_parallel_tool_use.json");
    // The assistant turn: `role` and `content` only (no `id`, `type`, `model`, `stop_reason`,
    // `stop_sequence`, `usage`), its blocks unchanged.
    assert_eq!(
        sent[1],
        json!({"role": "assistant", "content": response_json["content"]})
    );
    // The answer: the published user message's shape (ids, order, block types, is_error).
    assert_eq!(sent[2]["role"], "user");
    let ids = |m: &Value| -> Vec<Value> {
        m["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| json!([b["type"], b["tool_use_id"], b.get("is_error")]))
            .collect()
    };
    assert_eq!(ids(&sent[2]), ids(&published));
    assert_eq!(sent.as_array().unwrap().len(), 3);
}
