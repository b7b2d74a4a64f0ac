//! Per-tool and per-call provider options without editing JSON: Anthropic `input_examples`
//! (`#[tool(input_examples = …)]`, `ToolDef::input_examples`), checked at `build()`, against the
//! published example; `cache_control` on the last tool of a definitions call. (`strict = true` /
//! `strict = false` are in `strict_limits.rs`.)

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, ToolError,
    dispatch::{BuildProblem, ToolDef, sync_caller},
    provider::{CacheControl, CacheTtl, DefinitionOptions, Provider},
};

use crate::provider_rules::check;
use crate::providers::{assert_same_json, check_golden, definitions, load, target_of};

/// The published `get_weather` with its `input_examples` ("Define tools", "Providing tool use
/// examples"; `tests/fixtures/anthropic/tools/input_examples.json`).
mod examples {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};
    use toolgate::tool;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub(crate) enum Unit {
        Celsius,
        Fahrenheit,
    }

    pub(crate) fn weather_examples() -> Vec<Value> {
        vec![
            json!({"location": "San Francisco, CA", "unit": "fahrenheit"}),
            json!({"location": "Tokyo, Japan", "unit": "celsius"}),
            json!({"location": "New York, NY"}),
        ]
    }

    /// Get the current weather in a given location
    #[tool(input_examples = weather_examples)]
    fn get_weather(
        /// The city and state, e.g. San Francisco, CA
        location: String,
        /// The unit of temperature
        unit: Option<Unit>,
    ) -> String {
        format!("{location}: 15 {unit:?}")
    }
}

/// The string form of the path (serde's `default = "…"`), on a tool also marked
/// `strict = false`.
mod quoted {
    use serde_json::{Value, json};
    use toolgate::tool;

    pub(crate) mod data {
        use super::*;

        pub(crate) fn order_examples() -> Vec<Value> {
            vec![json!({"order_id": "o_1001"})]
        }
    }

    /// Retrieves the details of a specific order based on the order ID.
    #[tool(input_examples = "data::order_examples", strict = false)]
    fn get_order_details(
        /// The unique identifier for the order.
        order_id: String,
    ) -> String {
        order_id
    }
}

fn dispatcher(module: &str) -> Dispatcher {
    Dispatcher::builder()
        .registered_under(format!("{}::{module}", module_path!()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

// ================================================================ input_examples

#[test]
fn input_examples_follow_the_input_schema_as_published() {
    let d = dispatcher("examples");
    let published = load("tests/fixtures/anthropic/tools/input_examples.json");
    let mut tool = published["tools"][0].clone();
    // Deliberate difference: toolgate closes every object (ARCHITECTURE.md, "Contracts":
    // "Schemas").
    tool["input_schema"]["additionalProperties"] = json!(false);
    // And: an `Option` field also accepts `null` in a non-strict schema, as serde does, so every
    // input the tool accepts satisfies the schema sent.
    let unit = tool["input_schema"]["properties"]["unit"].take();
    let description = unit["description"].clone();
    let mut branch = unit;
    branch.as_object_mut().map(|o| o.remove("description"));
    tool["input_schema"]["properties"]["unit"] =
        json!({"description": description, "anyOf": [branch, {"type": "null"}]});
    assert_same_json(&d.tool_definitions()[0], &tool, "published get_weather");
    let keys: Vec<&String> = d.tool_definitions()[0]
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        ["name", "description", "input_schema", "input_examples"]
    );
    // Anthropic (default and strict) carry them; no other target has the field.
    for p in Provider::ALL {
        check_golden(&d, p, "examples");
    }
}

#[test]
fn the_path_may_be_a_string_and_strict_false_applies() {
    let d = dispatcher("quoted");
    assert_eq!(
        d.tool_definitions()[0]["input_examples"],
        json!([{"order_id": "o_1001"}])
    );
    assert_eq!(
        d.non_strict_tools(Provider::OpenAi)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec!["`get_order_details`: the tool is marked `strict = false`"]
    );
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// `get_weather`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Weather {
    /// The city and state, e.g. San Francisco, CA
    location: String,
    /// The unit of temperature
    unit: Option<Unit>,
    /// The day, `YYYY-MM-DD` (checked by its `Deserialize`, not by the schema).
    day: Option<Day>,
}

/// A day; its `Deserialize` refuses what is not `YYYY-MM-DD`, which the schema (a string)
/// cannot say.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(try_from = "String")]
#[schemars(with = "String")]
struct Day(#[allow(dead_code)] String);

impl TryFrom<String> for Day {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let digits = |r: std::ops::Range<usize>| {
            s.get(r)
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
        };
        if s.len() == 10
            && digits(0..4)
            && &s[4..5] == "-"
            && digits(5..7)
            && &s[7..8] == "-"
            && digits(8..10)
        {
            Ok(Day(s))
        } else {
            Err(format!("not a YYYY-MM-DD day: {s}"))
        }
    }
}

fn weather(examples: Vec<Value>) -> ToolDef {
    ToolDef::sync(
        "get_weather",
        "Get the current weather in a given location",
        |_env, w: Weather| Ok(w.location),
    )
    .input_examples(examples)
}

#[test]
fn every_invalid_example_is_a_build_problem_naming_its_index_and_the_problem() {
    let Err(e) = Dispatcher::builder()
        .tool(weather(vec![
            json!({"location": "Paris", "unit": "celsius", "day": "2026-03-01"}),
            json!({"location": "Paris", "unit": "kelvin"}),
            json!({"unit": "celsius"}),
            json!({"location": "Paris", "units": "celsius"}),
            // Valid: serde reads `null` as `None`, and the schema sent says so.
            json!({"location": "Paris", "unit": null}),
            json!("Paris"),
            json!({"location": "Paris", "day": "tomorrow"}),
        ]))
        .build()
    else {
        panic!("invalid examples were accepted")
    };
    let problem = |index, field: &str, problem: &str| BuildProblem::InvalidInputExample {
        tool: "get_weather".into(),
        path: "get_weather".into(),
        index: Some(index),
        field: field.into(),
        problem: problem.into(),
    };
    assert_eq!(
        e.problems,
        vec![
            problem(
                1,
                "unit",
                "expected one of `celsius`, `fahrenheit`, found the string \"kelvin\""
            ),
            problem(2, "", "missing field `location`"),
            problem(
                3,
                "",
                "unknown field `units`, expected one of `location`, `unit`, `day`"
            ),
            problem(5, "", "expected an object, found the string \"Paris\""),
            // The schema accepts any string; the type's own `Deserialize` does not.
            problem(6, "", "not a YYYY-MM-DD day: tomorrow"),
        ]
    );
    assert_eq!(
        e.problems[0].to_string(),
        "tool `get_weather` (get_weather): `input_examples[1]` is invalid at `unit`: expected \
         one of `celsius`, `fahrenheit`, found the string \"kelvin\"; fix the example or \
         remove it (the API refuses a request whose input_examples do not match the \
         input_schema)"
    );
}

#[test]
fn a_wrapped_callers_examples_are_kept_and_checked_against_its_schema() {
    // A nested dispatcher: the inner one's examples reach the outer one's definitions.
    let outer = Dispatcher::builder()
        .wrap(dispatcher("examples"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        outer.tool_definitions()[0]["input_examples"],
        Value::Array(examples::weather_examples())
    );
    let entry = |examples: Value| {
        json!({"name": "ping", "description": "Answers pong.",
               "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}},
                                "required": ["n"], "additionalProperties": false},
               "input_examples": examples})
    };
    let caller = |examples: Value| {
        sync_caller(vec![entry(examples)], |_ctx, _call| {
            Err(ToolError::new("not called"))
        })
    };
    let problems = |examples: Value| match Dispatcher::builder().wrap(caller(examples)).build() {
        Ok(_) => Vec::new(),
        Err(e) => e.problems,
    };
    let problem = |index, field: &str, problem: &str| BuildProblem::InvalidInputExample {
        tool: "ping".into(),
        path: "<wrapped caller #0>::ping".into(),
        index,
        field: field.into(),
        problem: problem.into(),
    };
    assert_eq!(problems(json!([{"n": 1}])), vec![]);
    assert_eq!(
        problems(json!([{"n": "one"}, {"n": 1, "m": 2}])),
        vec![
            problem(
                Some(0),
                "n",
                "expected an integer, found the string \"one\""
            ),
            problem(Some(1), "", "unknown field `m`, expected one of `n`"),
        ]
    );
    assert_eq!(
        problems(json!({"n": 1})),
        vec![problem(
            None,
            "",
            "it must be an array of input objects, found a JSON object"
        )]
    );
    assert_eq!(
        problems(json!({"n": 1}))[0].to_string(),
        "tool `ping` (<wrapped caller #0>::ping): `input_examples` is invalid: it must be an \
         array of input objects, found a JSON object; fix the example or remove it (the API \
         refuses a request whose input_examples do not match the input_schema)"
    );
}

// ================================================================ cache_control

#[test]
fn cache_control_goes_on_the_last_anthropic_entry_only() {
    let d = Dispatcher::builder()
        .registered_under(format!("{}::examples", module_path!()))
        .registered_under(format!("{}::quoted", module_path!()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let with = |provider, options: &DefinitionOptions| {
        d.tool_definitions_with(provider, options)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    for (cache_control, sent) in [
        (CacheControl::ephemeral(), json!({"type": "ephemeral"})),
        (
            CacheControl::ephemeral().ttl(CacheTtl::FiveMinutes),
            json!({"type": "ephemeral", "ttl": "5m"}),
        ),
        (
            CacheControl::ephemeral().ttl(CacheTtl::OneHour),
            json!({"type": "ephemeral", "ttl": "1h"}),
        ),
    ] {
        let options = DefinitionOptions::new().cache_control(cache_control);
        for p in [Provider::Anthropic, Provider::AnthropicStrict] {
            let mut expected = definitions(&d, p);
            assert_eq!(expected.len(), 2);
            expected[1]["cache_control"] = sent.clone();
            let got = with(p, &options);
            assert_eq!(got, expected, "{p}");
            for def in &got {
                assert_eq!(check(target_of(p), def), vec![], "{p}: {def}");
            }
        }
        for p in [
            Provider::OpenAi,
            Provider::OpenAiResponses,
            Provider::Gemini,
            Provider::Mcp,
        ] {
            assert_eq!(with(p, &options), definitions(&d, p), "{p}");
        }
    }
    // No option: the same entries as `tool_definitions_for`.
    for p in Provider::ALL {
        assert_eq!(
            with(p, &DefinitionOptions::new()),
            definitions(&d, p),
            "{p}"
        );
    }
    // No tools, no breakpoint.
    let empty = Dispatcher::builder()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let options = DefinitionOptions::new().cache_control(CacheControl::ephemeral());
    assert_eq!(
        empty.tool_definitions_with(Provider::Anthropic, &options),
        Ok(Vec::new())
    );
}
