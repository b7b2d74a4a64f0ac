//! A schema toolgate did not derive (a `#[schemars(schema_with = …)]` part, a wrapped caller's
//! `input_schema`) is checked against the JSON Schema meta-schema of its draft at `build()`: an
//! invalid one is a `BuildProblem` naming the tool and the keyword, and is never sent. A wrapped
//! caller's inputs are then validated against its schema in full.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, ToolError, ToolResult, ToolUse,
    dispatch::{BuildProblem, SyncCaller, sync_caller},
    provider::Provider,
};

mod typo {
    use toolgate::tool;

    /// The unit, with a hand-written schema that has a typo.
    fn unit_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "strin", "description": "The unit."})
    }

    /// Gets the weather.
    #[tool]
    pub(crate) fn get_weather(
        /// The city.
        city: String,
        #[schemars(schema_with = "unit_schema")] unit: String,
    ) -> String {
        format!("{city} in {unit}")
    }
}

const TYPES: &str = "(one of `array`, `boolean`, `integer`, `null`, `number`, `object`, `string`)";

#[test]
fn a_schema_with_typo_fails_the_build_naming_the_tool_and_the_keyword() {
    let e = Dispatcher::builder()
        .registered_under(format!("{}::typo", module_path!()))
        .build()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        e.problems,
        [BuildProblem::InvalidSchema {
            tool: "get_weather".into(),
            path: "schemas::meta::typo::get_weather".into(),
            draft: "JSON Schema 2020-12",
            keyword: "/properties/unit/type".into(),
            reason: format!("the string \"strin\" is not a JSON Schema type {TYPES}"),
        }]
    );
    assert_eq!(
        e.to_string(),
        format!(
            "the dispatcher cannot be built (1 problem):\n- tool `get_weather` \
             (schemas::meta::typo::get_weather) has an input schema that is not valid JSON \
             Schema 2020-12 at `/properties/unit/type`: the string \"strin\" is not a JSON \
             Schema type {TYPES}; fix the schema (its #[schemars(schema_with = …)] function, or \
             the wrapped caller's definition)"
        )
    );
}

/// A caller answering `ping` with its input, counting its calls.
fn caller(
    schema: Value,
    calls: Arc<AtomicUsize>,
) -> SyncCaller<impl Fn(&HookContext, &ToolUse) -> Result<String, ToolError> + Send + Sync + 'static>
{
    sync_caller(
        vec![json!({"name": "ping", "description": "Answers.", "input_schema": schema})],
        move |_ctx, call| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(call.input.to_string())
        },
    )
}

fn build_error(schema: Value) -> Vec<BuildProblem> {
    Dispatcher::builder()
        .wrap(caller(schema, Arc::default()))
        .build()
        .map(|_| ())
        .unwrap_err()
        .problems
}

fn invalid(keyword: &str, reason: &str, draft: &'static str) -> BuildProblem {
    BuildProblem::InvalidSchema {
        tool: "ping".into(),
        path: "<wrapped caller #0>::ping".into(),
        draft,
        keyword: keyword.into(),
        reason: reason.into(),
    }
}

#[test]
fn a_wrapped_callers_broken_schema_fails_the_build_with_every_fault() {
    // A remote server's draft-07 schema with three mistakes.
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "unit": {"type": "strin"},
            "count": {"type": "integer", "minimum": "0"},
            "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}}
        },
        "required": "unit",
        "definitions": {"Label": {"type": "string"}}
    });
    let d7 = "JSON Schema draft-07";
    assert_eq!(
        build_error(schema),
        [
            invalid(
                "/properties/unit/type",
                &format!("the string \"strin\" is not a JSON Schema type {TYPES}"),
                d7
            ),
            invalid(
                "/properties/count/minimum",
                "`minimum` must be a number, found the string \"0\"",
                d7
            ),
            invalid(
                "/properties/tags/items/$ref",
                "`$ref` `#/definitions/Tag` points to nothing in this schema",
                d7
            ),
            invalid(
                "/required",
                "`required` must be an array of field names, found the string \"unit\"",
                d7
            ),
        ]
    );
}

#[test]
fn a_reference_outside_the_schema_and_an_unknown_draft_fail_the_build() {
    assert_eq!(
        build_error(json!({"type": "object", "properties": {
            "a": {"$ref": "https://example.com/schemas/a.json"}}})),
        [invalid(
            "/properties/a/$ref",
            "`$ref` `https://example.com/schemas/a.json` points outside this schema; toolgate \
             resolves only references within it (`#`, `#/…`, `#name`), and the providers \
             resolve none",
            "JSON Schema 2020-12"
        )]
    );
    assert_eq!(
        build_error(json!({"$schema": "http://json-schema.org/draft-03/schema#",
                           "type": "object", "properties": {}})),
        [invalid(
            "/$schema",
            "unknown `$schema` `http://json-schema.org/draft-03/schema#`; toolgate knows JSON \
             Schema 2020-12, 2019-09, draft-07, draft-06 and draft-04",
            "JSON Schema 2020-12"
        )]
    );
}

/// A valid draft-07 schema using keywords the derived schemas never have.
fn rich_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 8},
            "step": {"type": "number", "multipleOf": 0.25, "exclusiveMinimum": 0},
            "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}, "uniqueItems": true},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}],
                     "additionalItems": false},
            "card": {"type": "string"},
            "cvc": {"type": "string"}
        },
        "required": ["name"],
        "dependencies": {"card": ["cvc"]},
        "additionalProperties": false,
        "definitions": {"Tag": {"type": "string", "maxLength": 3}}
    })
}

#[test]
fn a_wrapped_callers_inputs_are_validated_against_its_whole_schema() {
    let calls = Arc::new(AtomicUsize::new(0));
    let d = Dispatcher::builder()
        .wrap(caller(rich_schema(), calls.clone()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // Sent as given.
    assert_eq!(d.tool_definitions()[0]["input_schema"], rich_schema());
    let context = HookContext::builder("u_1", "sess_caller").build();
    // A fresh session per call: one session refuses a tool_use id reused with another input.
    let run = |input: Value| {
        toolgate::block_on(
            d.session(context.clone())
                .call(&ToolUse::new("t", "ping", input)),
        )
        .unwrap()
    };
    let ok = json!({"name": "ab", "step": 1.75, "tags": ["a", "b"], "pair": ["x", 2],
                    "card": "4111", "cvc": "123"});
    assert_eq!(run(ok.clone()), ToolResult::text("t", ok.to_string()));
    // An integer written with a fraction is an integer to JSON Schema.
    assert!(!run(json!({"name": "ab", "pair": ["x", 2.0]})).is_error);
    assert_eq!(
        run(
            json!({"name": "a", "step": 0.3, "tags": ["a", "a", "long"], "pair": ["x", 2, 3],
                   "card": "4111", "extra": true})
        )
        .content_text(),
        "Error: invalid input for tool `ping` (7 problems):\n\
         - at `name`: expected at least 2 characters, found 1\n\
         - at `step`: expected a multiple of 0.25, found the number 0.3\n\
         - at `tags`: expected unique items, but items 0 and 1 are equal\n\
         - at `tags[2]`: expected at most 3 characters, found 4\n\
         - at `pair`: expected at most 2 items, found 3\n\
         - and 2 more problems\n\
         Send an input that matches the tool's input_schema."
    );
    assert_eq!(
        run(json!({"name": "abcdefghi", "step": 0, "card": "4111"})).content_text(),
        "Error: invalid input for tool `ping` (3 problems):\n\
         - at `name`: expected at most 8 characters, found 9\n\
         - at `step`: expected a number > 0, found the number 0\n\
         - missing field `cvc`, required when `card` is given\n\
         Send an input that matches the tool's input_schema."
    );
    // The caller saw only the two valid inputs.
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_valid_callers_schema_is_sent_unchanged_to_every_target_that_takes_it() {
    let d = Dispatcher::builder()
        .wrap(caller(rich_schema(), Arc::default()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        d.tool_definitions_for(Provider::Mcp).unwrap()[0]["inputSchema"],
        rich_schema()
    );
}

#[test]
fn a_callers_root_alternatives_are_listed_for_anthropic_and_still_checked() {
    let schema = json!({
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "oneOf": [
            {"properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"properties": {"name": {"type": "string"}}, "required": ["name"]}
        ]
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let d = Dispatcher::builder()
        .wrap(caller(schema, calls.clone()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // Anthropic refuses a top-level `oneOf`: its fields are listed instead.
    let listed = json!({
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "id": {"type": "integer"},
            "name": {"type": "string"}
        },
        "required": ["q"]
    });
    assert_eq!(d.tool_definitions()[0]["input_schema"], listed);
    assert_eq!(
        d.tool_definitions_for(Provider::Mcp).unwrap()[0]["inputSchema"],
        listed
    );
    // The caller's own schema still decides.
    let context = HookContext::builder("u_1", "sess_alternatives").build();
    // A fresh session per call: one session refuses a tool_use id reused with another input.
    let run = |input: Value| {
        toolgate::block_on(
            d.session(context.clone())
                .call(&ToolUse::new("t", "ping", input)),
        )
        .unwrap()
    };
    assert!(!run(json!({"q": "x", "id": 1})).is_error);
    assert_eq!(
        run(json!({"q": "x"})).content_text(),
        "Error: invalid input for tool `ping`: an object does not match any of the 2 allowed \
         shapes. Send an input that matches the tool's input_schema."
    );
    assert_eq!(
        run(json!({"q": "x", "id": 1, "name": "n"})).content_text(),
        "Error: invalid input for tool `ping`: an object matches more than one of the 2 allowed \
         shapes. Send an input that matches the tool's input_schema."
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[cfg(feature = "full-validation")]
mod full {
    //! With the `full-validation` feature: regular expressions are checked at `build()`, and a
    //! caller's `pattern`, `patternProperties` and (draft-07) `format` are applied to its inputs.

    use super::*;

    #[test]
    fn an_invalid_regular_expression_fails_the_build() {
        assert_eq!(
            build_error(json!({"type": "object", "properties": {
                "code": {"type": "string", "pattern": "([a-z]+"}}})),
            [invalid(
                "/properties/code/pattern",
                "`([a-z]+` is not a valid regular expression: regex parse error: ([a-z]+ ^ \
                 error: unclosed group",
                "JSON Schema 2020-12"
            )]
        );
    }

    #[test]
    fn pattern_pattern_properties_and_format_are_applied_to_a_callers_inputs() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "code": {"type": "string", "pattern": "^RC-[0-9]+$"},
                "email": {"type": "string", "format": "email"},
                "labels": {"type": "object", "patternProperties": {"^x-": {"type": "string"}},
                           "additionalProperties": false}
            }
        });
        let calls = Arc::new(AtomicUsize::new(0));
        let d = Dispatcher::builder()
            .wrap(caller(schema, calls.clone()))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let context = HookContext::builder("u_1", "sess_full").build();
        // A fresh session per call: one session refuses a tool_use id reused with another input.
        let run = |input: Value| {
            toolgate::block_on(
                d.session(context.clone())
                    .call(&ToolUse::new("t", "ping", input)),
            )
            .unwrap()
        };
        assert!(
            !run(json!({"code": "RC-12", "email": "a@b.example", "labels": {"x-a": "1"}})).is_error
        );
        assert_eq!(
            run(json!({"code": "rc-12", "email": "nobody", "labels": {"y": "1"}})).content_text(),
            "Error: invalid input for tool `ping` (3 problems):\n\
             - at `code`: expected a string matching the pattern `^RC-[0-9]+$`, found the \
             string \"rc-12\"\n\
             - at `email`: expected a string in the format `email`, found the string \
             \"nobody\"\n\
             - at `labels`: unknown field `y`\n\
             Send an input that matches the tool's input_schema."
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
