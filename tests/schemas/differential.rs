//! The schema sent accepts every input serde accepts, proved differentially over the corpus
//! (`corpus.rs`) with a real JSON Schema validator (`boon`):
//!
//! - **non-strict targets** (Anthropic, MCP, OpenAI and OpenAI Responses and Anthropic strict
//!   where they emit a tool non-strict, and Gemini mapped back to JSON Schema: `nullable: true`
//!   is `anyOf` with `null`, `format: "enum"` is dropped): a value of the tool's input type is
//!   generated and serialized; the dispatcher accepts it (the unknown-field check and the type's
//!   `Deserialize`: outcome `ok`, the tool reads the same value), and it is valid against the
//!   canonical schema and against every such target's schema;
//! - **strict targets** (Anthropic strict, OpenAI, OpenAI Responses, for the tools they emit
//!   `strict: true`): instances are generated from the strict schema itself, and the tool's
//!   `Deserialize` accepts each, through the dispatcher too. Numbers are drawn within the bounds
//!   the definition states: in the schema, or, where the strict subset cannot hold a bound, in the
//!   `{minimum: …}` note the transform writes into the description (the model reads both);
//!   an integer with no stated bound within ±2³¹ (no corpus field is narrower than its stated
//!   bounds say).
//!
//! Gemini refuses some tools outright (a map, a tuple, a recursive type, a value that can only be
//! `null`, `allOf`): those are listed exactly, and the other targets still cover them.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use proptest::test_runner::{Config, TestRunner};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use toolgate::{Dispatcher, HookContext, ToolUse, audit::Outcome, provider, provider::Provider};

use crate::corpus;

/// Cases per corpus type and direction.
const CASES: u32 = 160;

/// The runner's settings: `CASES` cases, no regression file (the corpus is code, and a failure
/// prints its minimal input).
fn config() -> Config {
    Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    }
}

/// One compiled schema.
struct Validator {
    label: String,
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

fn compile(label: String, schema: &Value) -> Validator {
    let mut compiler = boon::Compiler::new();
    let url = "https://toolgate.invalid/schema.json";
    compiler
        .add_resource(url, schema.clone())
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let mut schemas = boon::Schemas::new();
    let index = compiler
        .compile(url, &mut schemas)
        .unwrap_or_else(|e| panic!("{label}: not valid JSON Schema: {e:#}\n{schema:#}"));
    Validator {
        label,
        schemas,
        index,
    }
}

/// A tool's schema for one target: the schema, and whether the target emits it strict.
struct TargetSchema {
    provider: Provider,
    schema: Value,
    strict: bool,
}

/// Every target's schema of `tool`; Gemini's mapped back to JSON Schema, or `None` when Gemini
/// cannot express the tool.
fn target_schemas(d: &Dispatcher, tool: &str) -> (Vec<TargetSchema>, Option<String>) {
    let canonical = d.canonical_schema(tool).expect("a corpus tool");
    let mut out = Vec::new();
    let mut gemini_refused = None;
    for p in Provider::ALL {
        let def = match provider::definition(p, tool, "A corpus tool.", canonical) {
            Ok(def) => def.value,
            Err(reason) => {
                assert_eq!(p, Provider::Gemini, "{tool}: {p} refuses it: {reason}");
                gemini_refused = Some(reason);
                continue;
            }
        };
        let (schema, strict) = match p {
            Provider::Anthropic | Provider::AnthropicStrict => {
                (def["input_schema"].clone(), def["strict"] == true)
            }
            Provider::OpenAi => (
                def["function"]["parameters"].clone(),
                def["function"]["strict"] == true,
            ),
            Provider::OpenAiResponses => (def["parameters"].clone(), def["strict"] == true),
            Provider::Gemini => (gemini_to_json_schema(&def["parameters"]), false),
            Provider::Mcp => (def["inputSchema"].clone(), false),
            other => panic!("a new provider: {other}"),
        };
        out.push(TargetSchema {
            provider: p,
            schema,
            strict,
        });
    }
    (out, gemini_refused)
}

/// Gemini's OpenAPI subset read as JSON Schema: `nullable: true` adds `null` (as an `anyOf`),
/// `format: "enum"` says nothing more than `enum`. Everything else means the same.
fn gemini_to_json_schema(v: &Value) -> Value {
    let Value::Object(map) = v else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, val) in map {
        match k.as_str() {
            "nullable" => {}
            "format" if val == "enum" => {}
            "properties" => {
                let props = val
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(n, s)| (n.clone(), gemini_to_json_schema(s)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" => {
                out.insert(k.clone(), gemini_to_json_schema(val));
            }
            "anyOf" => {
                let branches = val
                    .as_array()
                    .map(|b| b.iter().map(gemini_to_json_schema).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Array(branches));
            }
            _ => {
                out.insert(k.clone(), val.clone());
            }
        }
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        json!({"anyOf": [Value::Object(out), {"type": "null"}]})
    } else {
        Value::Object(out)
    }
}

/// Cases run, across the corpus and both directions.
static CASES_RUN: AtomicUsize = AtomicUsize::new(0);

fn dispatcher() -> Dispatcher {
    Dispatcher::builder()
        .registered_under(corpus::MODULE)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs both directions for one corpus type and its tool; returns the strict targets that
/// emitted it strict, and why Gemini refused it (if it did).
fn differential<T>(
    d: &Dispatcher,
    tool: &str,
    values: impl Strategy<Value = T>,
) -> (Vec<Provider>, Option<String>)
where
    T: Serialize + DeserializeOwned + std::fmt::Debug,
{
    let session = d.session(HookContext::builder("u_1", "sess_differential").build());
    let (targets, gemini_refused) = target_schemas(d, tool);
    let canonical = d.canonical_schema(tool).expect("a corpus tool").clone();
    let mut validators = vec![compile(format!("{tool}: canonical"), &canonical)];
    for t in targets.iter().filter(|t| !t.strict) {
        validators.push(compile(format!("{tool}: {}", t.provider), &t.schema));
    }

    // Non-strict: a serialized value passes the dispatcher and every schema.
    let mut runner = TestRunner::new(config());
    runner
        .run(&values, |value| {
            let input = serde_json::to_value(&value).expect("serializes");
            let call = ToolUse::new(next_id(), tool, input.clone());
            let result = toolgate::block_on(session.call(&call)).expect("no hook");
            prop_assert!(
                !result.is_error,
                "{tool}: the dispatcher refused {input}: {}",
                result.content_text()
            );
            let echoed: Value = serde_json::from_str(&result.content_text()).expect("JSON");
            prop_assert_eq!(&echoed, &input, "{}: the tool read another value", tool);
            for v in &validators {
                if let Err(e) = v.schemas.validate(&input, v.index) {
                    return Err(TestCaseError::fail(format!(
                        "{}: {input} is refused: {e}",
                        v.label
                    )));
                }
            }
            CASES_RUN.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));

    // Strict: every instance of the strict schema is a value the type accepts.
    let mut strict = Vec::new();
    for t in targets.iter().filter(|t| t.strict) {
        strict.push(t.provider);
        let instances = instances(&t.schema, &t.schema, 0);
        let mut runner = TestRunner::new(config());
        runner
            .run(&instances, |instance| {
                if let Err(e) = serde_json::from_value::<T>(instance.clone()) {
                    return Err(TestCaseError::fail(format!(
                        "{tool}: {} admits {instance}, which the type refuses: {e}",
                        t.provider
                    )));
                }
                let call = ToolUse::new(next_id(), tool, instance.clone());
                let result = toolgate::block_on(session.call(&call)).expect("no hook");
                prop_assert!(
                    !result.is_error,
                    "{tool}: {} admits {instance}, which the dispatcher refuses: {}",
                    t.provider,
                    result.content_text()
                );
                CASES_RUN.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let summary = session.end();
    assert_eq!(
        summary.outcomes.keys().copied().collect::<Vec<_>>(),
        [Outcome::Ok],
        "{tool}"
    );
    (strict, gemini_refused)
}

// ---------------------------------------------------------------- instances of a strict schema

/// The bounds a definition states for a value: its keywords, and the `{minimum: 0, …}` note a
/// strict transform moves into the description when its subset cannot hold them.
#[derive(Default)]
struct Bounds {
    min: Option<f64>,
    max: Option<f64>,
    ex_min: Option<f64>,
    ex_max: Option<f64>,
    min_len: Option<u64>,
    max_len: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
}

impl Bounds {
    fn of(map: &Map<String, Value>) -> Bounds {
        let mut stated: Map<String, Value> = map.clone();
        if let Some(note) = map
            .get("description")
            .and_then(Value::as_str)
            .and_then(|d| d.rsplit("\n\n").next())
            .and_then(|n| n.strip_prefix('{'))
            .and_then(|n| n.strip_suffix('}'))
        {
            for pair in note.split(", ") {
                if let Some((k, v)) = pair.split_once(": ")
                    && let Ok(v) = serde_json::from_str::<Value>(v)
                {
                    stated.insert(k.to_owned(), v);
                }
            }
        }
        let f = |k: &str| stated.get(k).and_then(Value::as_f64);
        let u = |k: &str| stated.get(k).and_then(Value::as_u64);
        Bounds {
            min: f("minimum"),
            max: f("maximum"),
            ex_min: f("exclusiveMinimum"),
            ex_max: f("exclusiveMaximum"),
            min_len: u("minLength"),
            max_len: u("maxLength"),
            min_items: u("minItems"),
            max_items: u("maxItems"),
        }
    }
}

/// The JSON values `schema` admits (for the keywords a strict subset holds), `$ref`s resolved in
/// `root`; past a depth of 3, alternatives without a `$ref` and empty arrays are preferred, so
/// a recursive schema's instances stay finite.
fn instances(schema: &Value, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    let Value::Object(map) = schema else {
        return Just(Value::Null).boxed();
    };
    if let Some(r) = map.get("$ref").and_then(Value::as_str) {
        let pointer = r.strip_prefix('#').expect("a local $ref");
        let target = root.pointer(pointer).expect("a $ref that resolves").clone();
        let root = root.clone();
        return instances(&target, &root, depth + 1);
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return proptest::sample::select(values.clone()).boxed();
    }
    if let Some(c) = map.get("const") {
        return Just(c.clone()).boxed();
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        let shallow: Vec<&Value> = branches
            .iter()
            .filter(|b| !b.to_string().contains("$ref"))
            .collect();
        let chosen: Vec<&Value> = if depth > 3 && !shallow.is_empty() {
            shallow
        } else {
            branches.iter().collect()
        };
        return Union::new(chosen.into_iter().map(|b| instances(b, root, depth + 1))).boxed();
    }
    let types: Vec<String> = match map.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ if map.contains_key("properties") => vec!["object".into()],
        other => panic!("no instances for a schema with type {other:?}: {schema}"),
    };
    let bounds = Bounds::of(map);
    Union::new(types.iter().map(|t| of_type(t, map, &bounds, root, depth))).boxed()
}

fn of_type(
    t: &str,
    map: &Map<String, Value>,
    b: &Bounds,
    root: &Value,
    depth: u32,
) -> BoxedStrategy<Value> {
    match t {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" => {
            let lo = b
                .min
                .map(|m| m.ceil() as i64)
                .or(b.ex_min.map(|m| m.floor() as i64 + 1))
                .unwrap_or(i64::from(i32::MIN))
                .max(i64::from(i32::MIN));
            let hi = b
                .max
                .map(|m| m.floor() as i64)
                .or(b.ex_max.map(|m| m.ceil() as i64 - 1))
                .unwrap_or(i64::from(i32::MAX))
                .min(i64::from(i32::MAX));
            (lo..=hi).prop_map(Value::from).boxed()
        }
        "number" => {
            let lo = b.min.or(b.ex_min).unwrap_or(-1e6);
            let hi = b.max.or(b.ex_max).unwrap_or(1e6);
            (lo..hi).prop_map(Value::from).boxed()
        }
        "string" => {
            let min = b.min_len.unwrap_or(0) as usize;
            let max = b.max_len.map_or(min.max(8), |m| m as usize);
            prop::collection::vec(any::<char>(), min..=max)
                .prop_map(|c| Value::String(c.into_iter().collect()))
                .boxed()
        }
        "array" => {
            let min = b.min_items.unwrap_or(0) as usize;
            if depth > 3 && min == 0 {
                return Just(Value::Array(Vec::new())).boxed();
            }
            let max = if depth > 3 {
                min
            } else {
                b.max_items.map_or(min.max(3), |m| m as usize)
            };
            let items = match map.get("items") {
                Some(items) => instances(items, root, depth + 1),
                None => panic!("an array without items in a strict schema"),
            };
            prop::collection::vec(items, min..=max)
                .prop_map(Value::Array)
                .boxed()
        }
        "object" => {
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = map
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(name, s)| {
                    let name = name.clone();
                    let value = instances(s, root, depth + 1);
                    if required.contains(&name.as_str()) {
                        value.prop_map(move |v| Some((name.clone(), v))).boxed()
                    } else {
                        proptest::option::of(value)
                            .prop_map(move |v| v.map(|v| (name.clone(), v)))
                            .boxed()
                    }
                })
                .collect();
            fields
                .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect()))
                .boxed()
        }
        other => panic!("no instances of type {other}"),
    }
}

// ---------------------------------------------------------------- the test

#[test]
fn every_serialized_input_passes_and_every_strict_instance_deserializes() {
    let d = dispatcher();
    use corpus::*;
    let runs: Vec<(&str, Vec<Provider>, Option<String>)> = vec![
        run(&d, "plain_tool", plain()),
        run(&d, "optional_tool", optional()),
        run(&d, "tagged_tool", tagged()),
        run(&d, "flat_ext_tool", flat_ext()),
        run(&d, "flat_int_tool", flat_int()),
        run(&d, "flat_adj_tool", flat_adj()),
        run(&d, "flat_unt_tool", flat_unt()),
        run(&d, "flat_two_tool", flat_two()),
        run(&d, "flat_opt_tool", flat_opt()),
        run(&d, "flat_struct_tool", flat_struct()),
        run(&d, "maps_tool", maps()),
        run(&d, "tuples_tool", tuples()),
        run(&d, "forest_tool", forest()),
        run(&d, "renamed_tool", renamed()),
    ];
    assert_eq!(
        runs.len(),
        d.tool_names().count(),
        "every corpus tool is run"
    );
    // Which tools each strict target emits strict (the rest it emits non-strict, with the
    // reason `non_strict_tools` gives), and which Gemini refuses: so no tool leaves a direction
    // silently.
    let strict_on = |p: Provider| -> Vec<&str> {
        runs.iter()
            .filter(|(_, s, _)| s.contains(&p))
            .map(|(n, _, _)| *n)
            .collect()
    };
    // A flattened `Option` of an enum is strict: its alternatives' keys are optional
    // properties, and serde reads the first variant key it finds.
    let strict = [
        "plain_tool",
        "optional_tool",
        "tagged_tool",
        "flat_opt_tool",
        "renamed_tool",
    ];
    assert_eq!(strict_on(Provider::AnthropicStrict), strict);
    // OpenAI's strict mode takes recursion too.
    let with_recursion = [
        "plain_tool",
        "optional_tool",
        "tagged_tool",
        "flat_opt_tool",
        "forest_tool",
        "renamed_tool",
    ];
    assert_eq!(strict_on(Provider::OpenAi), with_recursion);
    assert_eq!(strict_on(Provider::OpenAiResponses), with_recursion);
    let refused: Vec<(&str, &str)> = runs
        .iter()
        .filter_map(|(n, _, g)| g.as_deref().map(|g| (*n, g)))
        .collect();
    let map = "is a map (`additionalProperties` is a schema, as for HashMap<String, T>), which \
               Gemini's `parameters` cannot express";
    assert_eq!(
        refused,
        [
            ("flat_ext_tool", "property `Unit` can only be null"),
            ("flat_two_tool", "the input uses `allOf`"),
            ("flat_opt_tool", "property `Unit` can only be null"),
            ("flat_struct_tool", &format!("the input {map}")),
            ("maps_tool", &format!("property `by_name` {map}")),
            (
                "tuples_tool",
                "property `pair` uses a tuple (`prefixItems`)"
            ),
            (
                "forest_tool",
                "property `trees[].children[]` is a recursive type (`$ref`), which Gemini's \
                 `parameters` (an OpenAPI 3.0 subset without `$ref`) cannot express"
            ),
        ]
    );
    // 14 types × 160 serialized values, and 160 instances per strict definition (17).
    assert_eq!(CASES_RUN.load(Ordering::Relaxed), 14 * 160 + 17 * 160);
}

fn run<'a, T>(
    d: &Dispatcher,
    tool: &'a str,
    values: impl Strategy<Value = T>,
) -> (&'a str, Vec<Provider>, Option<String>)
where
    T: Serialize + DeserializeOwned + std::fmt::Debug,
{
    let (strict, gemini) = differential(d, tool, values);
    (tool, strict, gemini)
}

/// A new `tool_use` id per call: a session answers an id it has seen from its memory (or
/// refuses it with another input), so each case needs its own.
fn next_id() -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    format!(
        "toolu_{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}
