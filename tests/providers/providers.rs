//! Tool definitions for every provider (hand-written golden files under `tests/golden/`, the
//! published fixtures, and every emitted schema checked by the rule validator in
//! `provider_rules.rs`), and tool calls and results converted from and to each provider's
//! format, through the same pipeline and outcomes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};
use toolgate::provider::{gemini, mcp, openai, openai_responses};
use toolgate::{
    Dispatcher, HookContext, ToolResult, ToolUse, audit::Outcome, dispatch::BuildProblem,
    provider::Provider,
};

use crate::provider_rules::{ALL_RULES, Rule, Target, check};
use crate::support::optional_fields_nullable;

// ================================================================ tools

/// The tools of OpenAI's function-calling guide
/// (`tests/fixtures/openai/tools_chat_completions.json`).
mod openai_fixture {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use toolgate::{Decision, ToolError, ToolUse, pre_hook, tool};

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub(crate) enum Units {
        Celsius,
        Fahrenheit,
    }

    /// Retrieves current weather for the given location.
    #[tool]
    fn get_weather(
        /// City and country e.g. Bogotá, Colombia
        location: String,
        /// Units the temperature will be returned in.
        units: Option<Units>,
    ) -> Result<String, ToolError> {
        match (location.as_str(), units) {
            ("Lisbon, Portugal", Some(Units::Celsius)) => Ok("19°C, sunny".into()),
            ("Lisbon, Portugal", Some(Units::Fahrenheit)) => Ok("66°F, sunny".into()),
            ("Quito, Ecuador", None) => Ok("14°C, overcast".into()),
            (other, _) => Err(ToolError::new(format!("no weather station near {other}"))),
        }
    }

    /// Send an email to a given recipient with a subject and message.
    #[tool]
    fn send_email(
        /// The recipient email address.
        to: String,
        /// Email subject line.
        subject: String,
        /// Body of the email message.
        body: String,
    ) -> &'static str {
        let _ = (to, subject, body);
        "success"
    }

    /// Mail to the `blocked.example` domain is refused.
    #[pre_hook(order = 10, tools = [send_email])]
    fn no_blocked_domain(call: &ToolUse) -> Decision {
        let to = call.input["to"].as_str().unwrap_or_default();
        if to.ends_with("@blocked.example") {
            Decision::deny_instead(
                "mail to blocked.example is not allowed.",
                "Ask the user for another address.",
            )
        } else {
            Decision::Allow
        }
    }

    // No doc comments on the input struct, `options` or its type: the published schema has no
    // description there, and schemars would add one.
    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct KnowledgeQuery {
        /// The user question or search query.
        query: String,
        options: SearchOptions,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct SearchOptions {
        /// Number of top results to return.
        num_results: f64,
        /// Optional domain to narrow the search (e.g. 'finance', 'medical'). Pass null if not
        /// needed.
        domain_filter: Option<String>,
        /// How to sort results. Pass null if not needed.
        sort_by: Option<SortBy>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub(crate) enum SortBy {
        Relevance,
        Date,
        Popularity,
        Alphabetical,
    }

    /// Query a knowledge base to retrieve relevant info on a topic.
    #[tool]
    fn search_knowledge_base(#[input] q: KnowledgeQuery) -> String {
        format!(
            "{} result(s) for {:?} in {:?} by {:?}",
            q.options.num_results, q.query, q.options.domain_filter, q.options.sort_by
        )
    }

    /// Get current temperature for provided coordinates in celsius.
    #[tool]
    fn get_weather_coords(latitude: f64, longitude: f64) -> String {
        format!("14°C at {latitude},{longitude}")
    }
}

/// The `parameters` declarations of `tests/fixtures/gemini/function_declarations.json` (the
/// Anthropic docs' `get_weather` and the cookbook's `get_order_details`).
mod gemini_fixture {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use toolgate::{ToolError, tool};

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub(crate) enum Unit {
        Celsius,
        Fahrenheit,
    }

    /// Get the current weather in a given location
    #[tool]
    fn get_weather(
        /// The city and state, e.g. San Francisco, CA
        location: String,
        /// The unit of temperature, either 'celsius' or 'fahrenheit'
        unit: Option<Unit>,
    ) -> String {
        match unit {
            Some(Unit::Fahrenheit) => format!("59°F in {location}"),
            _ => format!("15°C in {location}"),
        }
    }

    /// Retrieves the details of a specific order based on the order ID. Returns the order ID,
    /// product name, quantity, price, and order status.
    #[tool]
    fn get_order_details(
        /// The unique identifier for the order.
        order_id: String,
    ) -> Result<String, ToolError> {
        if order_id == "o_1001" {
            Ok("o_1001: 1 x Kettle, 39.90 EUR, shipped".into())
        } else {
            Err(ToolError::new(format!("order {order_id} was not found")))
        }
    }
}

/// Every kind of type a tool's input may hold: `Option` of a scalar, an enum and a struct; unit
/// enums with and without doc comments; `Vec` of structs; structs nested two deep; `u32`, `u64`,
/// `i64`, `f64`, `bool`; a recursive type; `HashMap<String, T>`; `serde_json::Value` with a schema.
mod coverage {
    use std::collections::HashMap;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use toolgate::tool;

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct Traveler {
        /// Full name, as on the passport.
        name: String,
        /// Home address.
        home: Address,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct Address {
        /// City.
        city: String,
        /// ISO 3166-1 alpha-2 country code, e.g. PT.
        country: String,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct Stop {
        /// City of the stop.
        city: String,
        /// Nights spent there.
        nights: u32,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(crate) enum Cabin {
        Economy,
        Business,
    }

    /// How full the days are.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(crate) enum Pace {
        /// One sight a day.
        Relaxed,
        /// As many sights as fit.
        Packed,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(crate) enum Seat {
        Window,
        Aisle,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct Loyalty {
        /// Programme name.
        programme: String,
        /// Membership number.
        number: String,
    }

    /// Plans a trip and returns its itinerary id.
    #[tool]
    #[allow(clippy::too_many_arguments)]
    fn plan_trip(
        /// Who travels.
        traveler: Traveler,
        /// Stops, in order.
        stops: Vec<Stop>,
        /// Cabin class.
        cabin: Cabin,
        /// How busy the days are.
        pace: Pace,
        /// Number of travelers.
        party_size: u32,
        /// Budget in euro cents.
        budget_cents: u64,
        /// Offset from UTC, in minutes.
        utc_offset_minutes: i64,
        /// Longest walk per day, in kilometres.
        max_walk_km: f64,
        /// Book refundable fares only.
        refundable_only: bool,
        /// A note for the travel agent.
        note: Option<String>,
        /// Preferred seat.
        seat: Option<Seat>,
        /// Loyalty programme to credit.
        loyalty: Option<Loyalty>,
    ) -> String {
        format!(
            "trip for {} of {}, {} ({}) {:?} {:?} x{party_size} {budget_cents} \
             {utc_offset_minutes} {max_walk_km} {refundable_only} {note:?} {seat:?} {}: {}",
            traveler.name,
            traveler.home.city,
            traveler.home.country,
            stops
                .iter()
                .map(|s| format!("{}/{}", s.city, s.nights))
                .collect::<Vec<_>>()
                .join(","),
            cabin,
            pace,
            loyalty
                .as_ref()
                .map_or(String::new(), |l| format!("{}:{}", l.programme, l.number)),
            "itinerary it_1",
        )
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct Node {
        /// The node's label.
        label: String,
        /// The node's children.
        children: Vec<Node>,
    }

    fn count(node: &Node) -> usize {
        let _ = &node.label;
        1 + node.children.iter().map(count).sum::<usize>()
    }

    /// Counts the nodes of a tree.
    #[tool]
    fn walk_tree(
        /// The tree to walk.
        tree: Node,
    ) -> usize {
        count(&tree)
    }

    /// Sets labels on an item.
    #[tool]
    fn tag_items(
        /// The item to label.
        item_id: String,
        /// Labels to set, by name.
        labels: HashMap<String, String>,
    ) -> String {
        format!("{item_id}: {} label(s)", labels.len())
    }

    fn event_payload_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "maxLength": 40},
                "source": {"type": "string", "format": "uri"},
                "at": {"type": "string", "format": "date-time"}
            },
            "required": ["kind", "at"]
        })
    }

    /// Stores an analytics event.
    #[tool]
    fn store_event(
        /// The event id.
        event_id: String,
        /// The event: its kind, source page and time.
        #[schemars(schema_with = "event_payload_schema")]
        payload: serde_json::Value,
    ) -> String {
        format!("{event_id}: {}", payload["kind"])
    }
}

/// A `serde_json::Value` parameter without a schema: `build()` must refuse it.
mod open_value {
    use toolgate::tool;

    /// Stores anything.
    #[tool]
    fn store_anything(
        /// Anything at all.
        payload: serde_json::Value,
    ) -> String {
        payload.to_string()
    }
}

/// Objects nested 10 and 11 levels deep (the root object is level 1), around OpenAI strict
/// mode's limit of 10.
mod deep {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use toolgate::tool;

    macro_rules! nest {
        ($($outer:ident > $inner:ident),*) => {$(
            #[derive(Debug, Deserialize, JsonSchema)]
            pub(crate) struct $outer {
                next: $inner,
            }
            impl $outer {
                fn leaf(&self) -> &str {
                    self.next.leaf()
                }
            }
        )*};
    }
    nest!(
        D1 > D2,
        D2 > D3,
        D3 > D4,
        D4 > D5,
        D5 > D6,
        D6 > D7,
        D7 > D8,
        D8 > D9,
        D9 > D10
    );

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct D10 {
        leaf: String,
    }
    impl D10 {
        fn leaf(&self) -> &str {
            &self.leaf
        }
    }

    /// Reads a leaf eleven objects deep.
    #[tool]
    fn eleven_levels(next: D1) -> String {
        next.leaf().to_owned()
    }

    /// Reads a leaf ten objects deep.
    #[tool]
    fn ten_levels(next: D2) -> String {
        next.leaf().to_owned()
    }
}

/// A map of structs and a data-carrying enum: the unknown-field check reaches map values and
/// enum branches.
mod nested_inputs {
    use std::collections::HashMap;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use toolgate::tool;

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) struct Label {
        /// A CSS colour name.
        color: String,
    }

    /// Sets labels by name.
    #[tool]
    fn set_labels(
        /// Labels by name.
        labels: HashMap<String, Label>,
    ) -> String {
        let colors: Vec<&str> = labels.values().map(|l| l.color.as_str()).collect();
        colors.join(",")
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    pub(crate) enum Shape {
        Circle { r: f64 },
        Square { side: f64 },
    }

    /// Computes a shape's area.
    #[tool]
    fn area(
        /// The shape.
        shape: Shape,
    ) -> String {
        match shape {
            Shape::Circle { r } => format!("{:.1}", std::f64::consts::PI * r * r),
            Shape::Square { side } => format!("{:.1}", side * side),
        }
    }
}

// ================================================================ helpers

fn dispatcher(module: &str) -> Dispatcher {
    match Dispatcher::builder()
        .registered_under(format!("{}::{module}", module_path!()))
        .build()
    {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    }
}

fn context() -> HookContext {
    HookContext::builder("u_001", "sess_providers")
        .tier("premium")
        .build()
}

pub(crate) fn manifest_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub(crate) fn load(rel: &str) -> Value {
    let path = manifest_path(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

pub(crate) fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Equal as JSON values, and every `properties` map lists its keys in the same order
/// (declaration order is part of the contract; other key orders are not).
pub(crate) fn assert_same_json(actual: &Value, expected: &Value, what: &str) {
    assert_eq!(
        actual,
        expected,
        "{what}: the emitted JSON differs; it is:\n{}",
        pretty(actual)
    );
    same_property_order(actual, expected, what, "");
}

fn same_property_order(actual: &Value, expected: &Value, what: &str, at: &str) {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            if at.ends_with("/properties") {
                let a_keys: Vec<&String> = a.keys().collect();
                let e_keys: Vec<&String> = e.keys().collect();
                assert_eq!(a_keys, e_keys, "{what}: property order at {at}");
            }
            for (k, av) in a {
                if let Some(ev) = e.get(k) {
                    same_property_order(av, ev, what, &format!("{at}/{k}"));
                }
            }
        }
        (Value::Array(a), Value::Array(e)) => {
            for (i, (av, ev)) in a.iter().zip(e).enumerate() {
                same_property_order(av, ev, what, &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

/// The tool name of a definition in `provider`'s format.
pub(crate) fn name_of(provider: Provider, definition: &Value) -> String {
    let name = match provider {
        Provider::OpenAi => &definition["function"]["name"],
        _ => &definition["name"],
    };
    name.as_str().unwrap_or_default().to_owned()
}

pub(crate) fn target_of(provider: Provider) -> Target {
    match provider {
        Provider::OpenAi => Target::OpenAiChat,
        Provider::OpenAiResponses => Target::OpenAiResponses,
        Provider::Gemini => Target::Gemini,
        Provider::Mcp => Target::Mcp,
        _ => Target::Anthropic,
    }
}

pub(crate) fn definitions(d: &Dispatcher, provider: Provider) -> Vec<Value> {
    match d.tool_definitions_for(provider) {
        Ok(defs) => defs.to_vec(),
        Err(e) => panic!("{provider}: {e}"),
    }
}

/// Compares every definition of `d` for `provider` with its golden file
/// `tests/golden/<provider>/<set>/<tool>.json`, checks that no golden file is left over, and
/// runs the validator on each definition.
///
/// `TOOLGATE_BLESS=1` rewrites the set's existing files whose JSON differs from what is emitted (as
/// trybuild's `TRYBUILD=overwrite` does): review the diff before committing it.
pub(crate) fn check_golden(d: &Dispatcher, provider: Provider, set: &str) {
    let dir = format!("tests/golden/{provider}/{set}");
    let defs = definitions(d, provider);
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        for def in &defs {
            let path = manifest_path(&format!("{dir}/{}.json", name_of(provider, def)));
            let differs = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|old| old != *def);
            if differs {
                std::fs::write(&path, format!("{}\n", pretty(def)))
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
        }
    }
    let mut files: Vec<String> = std::fs::read_dir(manifest_path(&dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut names: Vec<String> = defs
        .iter()
        .map(|def| format!("{}.json", name_of(provider, def)))
        .collect();
    names.sort();
    assert_eq!(files, names, "{dir}: golden files and tools differ");
    for def in &defs {
        let name = name_of(provider, def);
        let expected = load(&format!("{dir}/{name}.json"));
        assert_same_json(def, &expected, &format!("{dir}/{name}"));
        assert_eq!(
            check(target_of(provider), def),
            vec![],
            "{dir}/{name} breaks its target's rules"
        );
    }
}

// ================================================================ golden files

#[test]
fn openai_fixture_tools_match_their_golden_files_for_every_provider() {
    let d = dispatcher("openai_fixture");
    for p in Provider::ALL {
        check_golden(&d, p, "openai_fixture");
    }
}

#[test]
fn gemini_fixture_tools_match_their_golden_files_for_every_provider() {
    let d = dispatcher("gemini_fixture");
    for p in Provider::ALL {
        check_golden(&d, p, "gemini_fixture");
    }
}

#[test]
fn coverage_tools_match_their_golden_files_for_every_provider() {
    let d = dispatcher("coverage");
    for p in Provider::ALL {
        if p == Provider::Gemini {
            continue;
        }
        check_golden(&d, p, "coverage");
    }
    // Gemini cannot express the recursive and the map tool; without them, the rest matches.
    let without = Dispatcher::builder()
        .registered_under(format!("{}::coverage", module_path!()))
        .without_tools(["walk_tree", "tag_items"])
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    check_golden(&without, Provider::Gemini, "coverage");
}

#[test]
fn default_definitions_are_the_anthropic_golden_files() {
    assert_eq!(Provider::default(), Provider::Anthropic);
    for module in ["openai_fixture", "gemini_fixture", "coverage"] {
        let d = dispatcher(module);
        let dir = format!("tests/golden/anthropic/{module}");
        let files = std::fs::read_dir(manifest_path(&dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .count();
        assert_eq!(d.tool_definitions().len(), files, "{dir}");
        for def in d.tool_definitions() {
            let name = name_of(Provider::Anthropic, def);
            let expected = load(&format!("{dir}/{name}.json"));
            assert_same_json(
                def,
                &expected,
                &format!("default definitions: {dir}/{name}"),
            );
        }
    }
}

// ================================================================ published fixtures

#[test]
fn openai_strict_definitions_equal_the_published_ones() {
    // Every published tool comes out exactly, `additionalProperties: false`, the `null` in the
    // type union (not in `enum`) and `required` listing every property included.
    let published = load("tests/fixtures/openai/tools_chat_completions.json");
    let d = dispatcher("openai_fixture");
    let ours = definitions(&d, Provider::OpenAi);
    let published = published["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(published.len(), 4);
    assert_eq!(ours.len(), 4);
    for tool in &published {
        let name = name_of(Provider::OpenAi, tool);
        let mine = ours
            .iter()
            .find(|d| name_of(Provider::OpenAi, d) == name)
            .unwrap_or_else(|| panic!("no definition for {name}"));
        assert_same_json(mine, tool, &format!("published {name}"));
    }
    assert!(d.non_strict_tools(Provider::OpenAi).is_empty());
}

#[test]
fn gemini_definitions_equal_the_published_parameters_declarations() {
    let published = load("tests/fixtures/gemini/function_declarations.json");
    let declarations = published["tools"][0]["functionDeclarations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let d = dispatcher("gemini_fixture");
    let ours = definitions(&d, Provider::Gemini);
    let mut compared = 0;
    for decl in &declarations {
        // Deliberate difference: the published `search_knowledge_base` uses
        // `parametersJsonSchema` (plain JSON Schema); toolgate emits `parameters` only, so it
        // is not compared (`compared` below counts the two that are).
        if decl.get("parameters").is_none() {
            continue;
        }
        let name = name_of(Provider::Gemini, decl);
        let mine = ours
            .iter()
            .find(|d| name_of(Provider::Gemini, d) == name)
            .unwrap_or_else(|| panic!("no definition for {name}"));
        assert_same_json(mine, decl, &format!("published {name}"));
        assert_eq!(check(Target::Gemini, decl), vec![], "the published {name}");
        compared += 1;
    }
    assert_eq!(compared, 2);
}

#[test]
fn anthropic_definitions_equal_the_published_ones_but_closed() {
    let published = load("tests/fixtures/anthropic/tools/official_tools.json");
    let d = dispatcher("gemini_fixture");
    for name in ["get_weather", "get_order_details"] {
        let mut tool = published["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} is not published"));
        // Deliberate differences: toolgate closes every object (`additionalProperties: false`;
        // ARCHITECTURE.md, "Contracts": "Schemas") because the dispatcher refuses unknown fields,
        // and an optional field accepts `null` as its `Option<T>` does.
        tool["input_schema"] = optional_fields_nullable(tool["input_schema"].take());
        tool["input_schema"]["additionalProperties"] = json!(false);
        let mine = definitions(&d, Provider::Anthropic)
            .into_iter()
            .find(|t| t["name"] == name)
            .unwrap_or_default();
        assert_same_json(&mine, &tool, &format!("published {name}"));
    }
}

// ================================================================ what targets cannot express

#[test]
fn strict_targets_list_the_tools_they_emit_non_strict_with_the_reason() {
    let d = dispatcher("coverage");
    let listed = |p| -> Vec<String> {
        d.non_strict_tools(p)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let map = "`tag_items`: property `labels` is a map (`additionalProperties` is a schema, as \
               for HashMap<String, T>)";
    assert_eq!(listed(Provider::OpenAi), vec![map.to_owned()]);
    assert_eq!(listed(Provider::OpenAiResponses), vec![map.to_owned()]);
    assert_eq!(
        listed(Provider::AnthropicStrict),
        vec![
            map.to_owned(),
            "`walk_tree`: property `tree.children[]` refers back to a type that contains it \
             (`$ref`): Anthropic strict tool use does not support recursive schemas"
                .to_owned(),
        ]
    );
    for p in [Provider::Anthropic, Provider::Gemini, Provider::Mcp] {
        assert_eq!(listed(p), Vec::<String>::new(), "{p}");
    }
}

#[test]
fn gemini_refuses_recursive_and_map_tools_by_name_and_other_targets_are_unaffected() {
    let d = dispatcher("coverage");
    let Err(e) = d.tool_definitions_for(Provider::Gemini) else {
        panic!("gemini accepted a recursive type")
    };
    assert_eq!(e.provider, Provider::Gemini);
    assert_eq!(
        e.to_string(),
        "gemini cannot express 2 tools; filter them out for this target \
         (DispatcherBuilder::without_tools) or change their input type:\n\
         - `tag_items`: property `labels` is a map (`additionalProperties` is a schema, as for \
         HashMap<String, T>), which Gemini's `parameters` cannot express\n\
         - `walk_tree`: property `tree.children[]` is a recursive type (`$ref`), which Gemini's \
         `parameters` (an OpenAPI 3.0 subset without `$ref`) cannot express"
    );
    for p in Provider::ALL {
        if p != Provider::Gemini {
            assert_eq!(definitions(&d, p).len(), 4, "{p}");
        }
    }
}

#[test]
fn openai_strict_allows_ten_levels_of_nesting_and_not_eleven() {
    let d = dispatcher("deep");
    let listed: Vec<String> = d
        .non_strict_tools(Provider::OpenAi)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        listed,
        vec![
            "`eleven_levels`: property `next.next.next.next.next.next.next.next.next.next` is an \
             object nested 11 levels deep; OpenAI strict mode allows 10"
                .to_owned()
        ]
    );
    let defs = definitions(&d, Provider::OpenAi);
    let strict: BTreeMap<String, Value> = defs
        .iter()
        .map(|def| {
            (
                name_of(Provider::OpenAi, def),
                def["function"]["strict"].clone(),
            )
        })
        .collect();
    assert_eq!(strict["eleven_levels"], json!(false));
    assert_eq!(strict["ten_levels"], json!(true));
    for def in &defs {
        assert_eq!(check(Target::OpenAiChat, def), vec![]);
    }
}

#[test]
fn a_value_without_a_schema_fails_build_saying_how_to_give_one() {
    let Err(e) = Dispatcher::builder()
        .registered_under(format!("{}::open_value", module_path!()))
        .build()
    else {
        panic!("a bare serde_json::Value property was accepted")
    };
    assert_eq!(
        e.problems,
        vec![BuildProblem::OpenProperty {
            tool: "store_anything".into(),
            path: "providers::providers::open_value::store_anything".into(),
            property: "payload".into(),
        }]
    );
    assert_eq!(
        e.problems[0].to_string(),
        "tool `store_anything` (providers::providers::open_value::store_anything): property \
         `payload` accepts any JSON (its schema is `true` or `{}`, as for serde_json::Value); give \
         it an explicit schema with #[schemars(schema_with = \"…\")] on the parameter or field, \
         or use a typed struct"
    );
}

#[test]
fn a_value_with_schema_with_on_a_flat_parameter_is_validated_against_that_schema() {
    let d = dispatcher("coverage");
    let ok = ToolUse::new(
        "toolu_1",
        "store_event",
        json!({"event_id": "ev_1", "payload": {"kind": "click", "at": "2026-01-02T03:04:05Z"}}),
    );
    let (results, _) = run(&d, &[ok]);
    assert_eq!(
        results,
        vec![ToolResult::text("toolu_1", "ev_1: \"click\"")]
    );
    let unknown = ToolUse::new(
        "toolu_2",
        "store_event",
        json!({"event_id": "ev_2", "payload": {"kind": "click", "at": "x", "user": "u_9"}}),
    );
    let (results, _) = run(&d, &[unknown]);
    assert_eq!(
        results,
        vec![ToolResult::error(
            "toolu_2",
            "Error: invalid input for tool `store_event` at `payload`: unknown field `user`, \
             expected one of `kind`, `source`, `at`. Send an input that matches the tool's \
             input_schema."
        )]
    );
}

// ================================================================ the validator, proven

fn anthropic_base() -> Value {
    json!({
        "name": "get_time",
        "description": "Get the current time in a given timezone",
        "input_schema": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
            "additionalProperties": false
        }
    })
}

fn anthropic_strict_base() -> Value {
    let mut v = anthropic_base();
    v["strict"] = json!(true);
    v
}

fn openai_base() -> Value {
    json!({"type": "function", "function": {
        "name": "get_time",
        "description": "Get the current time in a given timezone",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
            "additionalProperties": false
        },
        "strict": true
    }})
}

fn gemini_base() -> Value {
    json!({
        "name": "get_time",
        "description": "Get the current time in a given timezone",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"]
        }
    })
}

fn mcp_base() -> Value {
    json!({
        "name": "get_time",
        "description": "Get the current time in a given timezone",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
            "additionalProperties": false
        }
    })
}

/// `base` with the value at JSON pointer `at` set to `value` (objects on the way must exist).
fn with(mut base: Value, at: &str, value: Value) -> Value {
    let (parent, key) = at.rsplit_once('/').unwrap_or(("", at));
    match base.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key.to_owned(), value);
        }
        _ => panic!("no object at {parent}"),
    }
    base
}

/// `base` without the key at JSON pointer `at`.
fn without(mut base: Value, at: &str) -> Value {
    let (parent, key) = at.rsplit_once('/').unwrap_or(("", at));
    if let Some(Value::Object(map)) = base.pointer_mut(parent) {
        map.remove(key);
    }
    base
}

/// The breaking definitions: each breaks exactly its rule.
fn breaking_cases() -> Vec<(Rule, Target, Value)> {
    let a = Target::Anthropic;
    let o = Target::OpenAiChat;
    let g = Target::Gemini;
    let tz = "/input_schema/properties/timezone";
    let otz = "/function/parameters/properties/timezone";
    let gtz = "/parameters/properties/timezone";
    let node = json!({
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        "required": ["children"],
        "additionalProperties": false
    });
    let mut deep = json!({"type": "string"});
    for _ in 0..11 {
        deep = json!({"type": "object", "properties": {"next": deep}, "required": ["next"],
                      "additionalProperties": false});
    }
    let mut cases = vec![
        (
            Rule::AnthropicShape,
            a,
            with(anthropic_base(), "/input_schema_extra", json!({})),
        ),
        (
            Rule::ToolName,
            a,
            with(anthropic_base(), "/name", json!("get time")),
        ),
        (
            Rule::RootObject,
            a,
            with(
                anthropic_base(),
                "/input_schema",
                json!({"type": "array", "items": {"type": "string"}}),
            ),
        ),
        (
            Rule::RootCombinator,
            a,
            with(
                anthropic_base(),
                "/input_schema/anyOf",
                json!([{"required": ["timezone"]}]),
            ),
        ),
        (
            Rule::NoSchemaKeyword,
            a,
            with(
                anthropic_base(),
                "/input_schema/$schema",
                json!("https://json-schema.org/draft/2020-12/schema"),
            ),
        ),
        (
            Rule::NoRootTitle,
            a,
            with(
                anthropic_base(),
                "/input_schema/title",
                json!("__ToolgateArgs"),
            ),
        ),
        (
            Rule::RefOnlyForRecursion,
            a,
            with(
                with(anthropic_base(), tz, json!({"$ref": "#/$defs/Tz"})),
                "/input_schema/$defs",
                json!({"Tz": {"type": "string"}}),
            ),
        ),
        (
            Rule::NoNumericFormat,
            a,
            with(
                anthropic_base(),
                tz,
                json!({"type": "integer", "format": "uint32", "minimum": 0}),
            ),
        ),
        (
            Rule::NoTypeArray,
            a,
            with(anthropic_base(), tz, json!({"type": ["string", "null"]})),
        ),
        (
            Rule::ClosedObjects,
            a,
            without(anthropic_base(), "/input_schema/additionalProperties"),
        ),
        (
            Rule::StrictEveryObjectClosed,
            a,
            with(
                anthropic_strict_base(),
                tz,
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
            ),
        ),
        (
            Rule::StrictNoBounds,
            a,
            with(
                anthropic_strict_base(),
                tz,
                json!({"type": "string", "maxLength": 40}),
            ),
        ),
        (
            Rule::StrictNoBounds,
            a,
            with(
                anthropic_strict_base(),
                tz,
                json!({"type": "integer", "minimum": 0}),
            ),
        ),
        (
            Rule::StrictNoRecursion,
            a,
            with(
                with(anthropic_strict_base(), tz, json!({"$ref": "#/$defs/Node"})),
                "/input_schema/$defs",
                json!({"Node": node}),
            ),
        ),
        (
            Rule::StrictMinItems,
            a,
            with(
                anthropic_strict_base(),
                tz,
                json!({"type": "array", "items": {"type": "string"}, "minItems": 2}),
            ),
        ),
        (
            Rule::StrictFormat,
            a,
            with(
                anthropic_strict_base(),
                tz,
                json!({"type": "string", "format": "uri-reference"}),
            ),
        ),
        (
            Rule::OpenAiShape,
            o,
            without(openai_base(), "/function/strict"),
        ),
        (
            Rule::OpenAiClosed,
            o,
            without(openai_base(), "/function/parameters/additionalProperties"),
        ),
        (
            Rule::OpenAiAllRequired,
            o,
            with(
                openai_base(),
                "/function/parameters/properties/note",
                json!({"type": ["string", "null"]}),
            ),
        ),
        (
            Rule::OpenAiNoComposition,
            o,
            with(
                openai_base(),
                otz,
                json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
            ),
        ),
        (
            Rule::OpenAiNesting,
            o,
            with(
                openai_base(),
                "/function/parameters/properties/timezone",
                deep,
            ),
        ),
        (
            Rule::OpenAiNoDefault,
            o,
            with(
                openai_base(),
                otz,
                json!({"type": "string", "default": "UTC"}),
            ),
        ),
        (
            Rule::OpenAiRefResolves,
            o,
            with(openai_base(), otz, json!({"$ref": "#/$defs/Missing"})),
        ),
        (
            Rule::GeminiShape,
            g,
            with(
                gemini_base(),
                "/parametersJsonSchema",
                json!({"type": "object"}),
            ),
        ),
        (
            Rule::GeminiName,
            g,
            with(gemini_base(), "/name", json!("3d_print")),
        ),
        (
            Rule::GeminiOneType,
            g,
            with(gemini_base(), gtz, json!({"type": ["string", "null"]})),
        ),
        (
            Rule::GeminiSchemaField,
            g,
            with(
                gemini_base(),
                gtz,
                json!({"type": "string", "examples": ["UTC"]}),
            ),
        ),
        (
            Rule::GeminiObjectProperties,
            g,
            with(gemini_base(), gtz, json!({"type": "object"})),
        ),
        (
            Rule::GeminiStringFormat,
            g,
            with(
                gemini_base(),
                gtz,
                json!({"type": "string", "format": "uri"}),
            ),
        ),
        (
            Rule::McpShape,
            Target::Mcp,
            without(
                with(
                    mcp_base(),
                    "/input_schema",
                    mcp_base()["inputSchema"].clone(),
                ),
                "/inputSchema",
            ),
        ),
    ];
    // One case per keyword Gemini rejects (`Rule::GeminiRejectedKeyword`).
    for (key, value) in [
        ("additionalProperties", json!(false)),
        (
            "$schema",
            json!("https://json-schema.org/draft/2020-12/schema"),
        ),
        ("$ref", json!("#/$defs/Tz")),
        ("const", json!("UTC")),
        ("oneOf", json!([{"type": "string"}])),
        ("exclusiveMinimum", json!(0)),
        ("exclusiveMaximum", json!(10)),
        ("multipleOf", json!(2)),
        ("if", json!({"type": "string"})),
    ] {
        cases.push((
            Rule::GeminiRejectedKeyword,
            g,
            with(gemini_base(), &format!("{gtz}/{key}"), value),
        ));
    }
    cases
}

/// Checks that the base definitions are clean and that every breaking case of `rule` breaks
/// exactly `rule`.
fn prove(rule: Rule) {
    for (target, base) in [
        (Target::Anthropic, anthropic_base()),
        (Target::Anthropic, anthropic_strict_base()),
        (Target::OpenAiChat, openai_base()),
        (Target::Gemini, gemini_base()),
        (Target::Mcp, mcp_base()),
    ] {
        assert_eq!(check(target, &base), vec![], "{target:?} base");
    }
    let cases: Vec<_> = breaking_cases()
        .into_iter()
        .filter(|(r, _, _)| *r == rule)
        .collect();
    assert!(!cases.is_empty(), "{rule:?} has no breaking case");
    for (_, target, def) in cases {
        let mut broken: Vec<Rule> = check(target, &def).into_iter().map(|v| v.rule).collect();
        broken.dedup();
        assert_eq!(broken, vec![rule], "{}", pretty(&def));
    }
}

#[test]
fn every_rule_has_a_breaking_case() {
    let cases = breaking_cases();
    for rule in ALL_RULES {
        assert!(
            cases.iter().any(|(r, _, _)| r == rule),
            "{rule:?} has no breaking case for {}",
            proving_test(*rule)
        );
    }
    // Each rule has its own test.
    let mut tests: Vec<&str> = ALL_RULES.iter().map(|r| proving_test(*r)).collect();
    tests.sort_unstable();
    tests.dedup();
    assert_eq!(tests.len(), ALL_RULES.len());
}

/// One test per rule, and [`proving_test`]: its exhaustive `match` makes a rule missing from
/// the list a compile error.
macro_rules! proven {
    ($($test:ident: $rule:ident,)*) => {
        $(
            #[test]
            fn $test() {
                prove(Rule::$rule);
            }
        )*

        /// The name of the test that proves `rule`.
        fn proving_test(rule: Rule) -> &'static str {
            match rule {
                $(Rule::$rule => stringify!($test),)*
            }
        }
    };
}

proven! {
    rule_anthropic_shape: AnthropicShape,
    rule_tool_name: ToolName,
    rule_root_object: RootObject,
    rule_root_combinator: RootCombinator,
    rule_no_schema_keyword: NoSchemaKeyword,
    rule_no_root_title: NoRootTitle,
    rule_ref_only_for_recursion: RefOnlyForRecursion,
    rule_no_numeric_format: NoNumericFormat,
    rule_no_type_array: NoTypeArray,
    rule_closed_objects: ClosedObjects,
    rule_strict_every_object_closed: StrictEveryObjectClosed,
    rule_strict_no_bounds: StrictNoBounds,
    rule_strict_no_recursion: StrictNoRecursion,
    rule_strict_min_items: StrictMinItems,
    rule_strict_format: StrictFormat,
    rule_openai_shape: OpenAiShape,
    rule_openai_closed: OpenAiClosed,
    rule_openai_all_required: OpenAiAllRequired,
    rule_openai_no_composition: OpenAiNoComposition,
    rule_openai_nesting: OpenAiNesting,
    rule_openai_no_default: OpenAiNoDefault,
    rule_openai_ref_resolves: OpenAiRefResolves,
    rule_gemini_shape: GeminiShape,
    rule_gemini_name: GeminiName,
    rule_gemini_one_type: GeminiOneType,
    rule_gemini_rejected_keyword: GeminiRejectedKeyword,
    rule_gemini_schema_field: GeminiSchemaField,
    rule_gemini_object_properties: GeminiObjectProperties,
    rule_gemini_string_format: GeminiStringFormat,
    rule_mcp_shape: McpShape,
}

// ================================================================ calls in, results out

/// Runs each call in a session of its own (the calls stand for several providers'
/// conversations, and may share an id); the outcomes of all of them, counted.
fn run(d: &Dispatcher, calls: &[ToolUse]) -> (Vec<ToolResult>, BTreeMap<Outcome, u64>) {
    let mut outcomes = BTreeMap::new();
    let results = calls
        .iter()
        .map(|c| {
            let session = d.session(context());
            let r = match toolgate::block_on(session.call(c)) {
                Ok(r) => r,
                Err(e) => panic!("no answer: {e:?}"),
            };
            for (o, n) in session.end().outcomes {
                *outcomes.entry(o).or_insert(0) += n;
            }
            r
        })
        .collect();
    (results, outcomes)
}

#[test]
fn openai_chat_tool_calls_run_and_answer_with_one_tool_message_each() {
    let completion = load("tests/fixtures/openai/chat_completion_parallel_tool_calls.json");
    let expected = load("tests/fixtures/openai/chat_tool_messages.json");
    let message = &completion["choices"][0]["message"];
    let calls = openai::tool_uses(message).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        calls,
        vec![
            ToolUse::new(
                "call_Lq8Vn2Rt6Yx0Pz4Mk7Bw1Jd",
                "get_weather",
                json!("{\"location\":\"Lisbon, Portugal\",\"units\":\"celsius\"}"),
            ),
            ToolUse::new(
                "call_Hs3Fd9Gk1Jl5Zx7Cv2Bn8Mq",
                "get_weather",
                json!("{\"location\":\"Quito, Ecuador\",\"units\":null}"),
            ),
            ToolUse::new(
                "call_Wp6Te4Ry2Ui8Oa0Sd3Fg5Hj",
                "send_email",
                json!(
                    "{\"to\":\"maria@example.com\",\"subject\":\"Weather\",\"body\":\"Sending the forecast shortly.\"}"
                ),
            ),
        ]
    );
    let (results, outcomes) = run(&dispatcher("openai_fixture"), &calls);
    assert_eq!(outcomes, BTreeMap::from([(Outcome::Ok, 3)]));
    let messages: Vec<Value> = results.iter().map(openai::tool_message).collect();
    let tail = expected["messages_tail"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // After the assistant message, one `role: "tool"` message per call, in the order of its
    // `tool_calls`, with their ids.
    let call_ids: Vec<&Value> = tail[0]["tool_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool_calls in {}", tail[0]))
        .iter()
        .map(|c| &c["id"])
        .collect();
    let answer_ids: Vec<&Value> = messages.iter().map(|m| &m["tool_call_id"]).collect();
    assert_eq!(answer_ids, call_ids);
    assert_eq!(messages[0], tail[1]);
    // The published second answer uses the array form of `content`; toolgate sends the string,
    // the blocks' text.
    let mut published = tail[2].clone();
    published["content"] = published["content"][0]["text"].clone();
    assert_eq!(
        messages[1],
        json!({"role": "tool", "tool_call_id": "call_Hs3Fd9Gk1Jl5Zx7Cv2Bn8Mq",
               "content": "14°C, overcast"})
    );
    assert_eq!(messages[1], published);
    assert_eq!(messages[2], tail[3]);
}

#[test]
fn openai_failures_say_so_in_the_text() {
    let d = dispatcher("openai_fixture");
    let calls = [
        ToolUse::new(
            "call_1",
            "get_weather",
            json!("{\"location\":\"Atlantis\",\"units\":null}"),
        ),
        ToolUse::new(
            "call_2",
            "send_email",
            json!("{\"to\":\"x@blocked.example\",\"subject\":\"s\",\"body\":\"b\"}"),
        ),
        ToolUse::new("call_3", "get_weather", json!("{\"location\": \"Lisbon\"")),
    ];
    let (results, outcomes) = run(&d, &calls);
    assert_eq!(
        outcomes,
        BTreeMap::from([
            (Outcome::ToolError, 1),
            (Outcome::Blocked, 1),
            (Outcome::InvalidInput, 1)
        ])
    );
    let contents: Vec<Value> = results
        .iter()
        .map(|r| openai::tool_message(r)["content"].clone())
        .collect();
    assert_eq!(
        contents,
        vec![
            json!("Error: no weather station near Atlantis"),
            json!(
                "BLOCKED: mail to blocked.example is not allowed. Ask the user for another address."
            ),
            json!(
                "Error: invalid input for tool `get_weather`: the input must be a JSON object, but \
                 it is a string that is not valid JSON (EOF while parsing an object at line 1 \
                 column 21). Send an input that matches the tool's input_schema."
            ),
        ]
    );
    // The Responses API answers the same way, as `function_call_output` items.
    assert_eq!(
        openai_responses::function_call_output(&results[0]),
        json!({"type": "function_call_output", "call_id": "call_1",
               "output": "Error: no weather station near Atlantis"})
    );
}

#[test]
fn responses_function_calls_run_and_answer_with_function_call_outputs() {
    // A Responses API `output` as the API reference shows it: a reasoning item, a function call
    // and an assistant message.
    let response = json!({
        "id": "resp_67ccd2bed1ec8190b14f964abc054267",
        "object": "response",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_12345xyz", "call_id": "call_12345xyz",
             "name": "get_weather",
             "arguments": "{\"location\":\"Lisbon, Portugal\",\"units\":\"fahrenheit\"}",
             "status": "completed"},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
        ]
    });
    let calls = openai_responses::tool_uses(&response).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        calls,
        vec![ToolUse::new(
            "call_12345xyz",
            "get_weather",
            json!("{\"location\":\"Lisbon, Portugal\",\"units\":\"fahrenheit\"}")
        )]
    );
    let (results, _) = run(&dispatcher("openai_fixture"), &calls);
    assert_eq!(
        openai_responses::function_call_output(&results[0]),
        json!({"type": "function_call_output", "call_id": "call_12345xyz",
               "output": "66°F, sunny"})
    );
    assert_eq!(
        openai_responses::tool_use(&json!({"type": "message"})).map_err(|e| e.to_string()),
        Err(
            "cannot read an OpenAI Responses function_call item: expected type \
             \"function_call\", found \"message\""
                .to_owned()
        )
    );
}

#[test]
fn gemini_function_calls_run_and_answer_with_function_responses() {
    // Gemini parts: `args` is an object; the first call has no id, the second has one.
    let parts = json!([
        {"functionCall": {"name": "get_weather",
                          "args": {"location": "Boston, MA", "unit": "fahrenheit"}}},
        {"functionCall": {"id": "fc-7", "name": "get_order_details",
                          "args": {"order_id": "o_404"}}},
        {"functionCall": {"name": "cancel_order", "args": {"order_id": "o_1001"}}}
    ]);
    let parts = parts.as_array().cloned().unwrap_or_default();
    let calls: Vec<ToolUse> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            gemini::tool_use(p, format!("gemini-0-{i}")).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            ToolUse::new(
                "gemini-0-0",
                "get_weather",
                json!({"location": "Boston, MA", "unit": "fahrenheit"})
            ),
            ToolUse::new("fc-7", "get_order_details", json!({"order_id": "o_404"})),
            ToolUse::new("gemini-0-2", "cancel_order", json!({"order_id": "o_1001"})),
        ]
    );
    let (results, outcomes) = run(&dispatcher("gemini_fixture"), &calls);
    assert_eq!(
        outcomes,
        BTreeMap::from([
            (Outcome::Ok, 1),
            (Outcome::ToolError, 1),
            (Outcome::UnknownTool, 1)
        ])
    );
    let answers: Vec<Value> = parts
        .iter()
        .zip(&results)
        .map(|(p, r)| gemini::function_response(p, r))
        .collect();
    assert_eq!(
        answers,
        vec![
            json!({"functionResponse": {"name": "get_weather",
                                        "response": {"output": "59°F in Boston, MA"}}}),
            json!({"functionResponse": {"id": "fc-7", "name": "get_order_details",
                                        "response": {"error": "order o_404 was not found"}}}),
            json!({"functionResponse": {"name": "cancel_order", "response": {
                "error": "Error: unknown tool 'cancel_order'. Available tools: \
                          get_order_details, get_weather."}}}),
        ]
    );
}

#[test]
fn mcp_tools_call_requests_run_and_answer_with_is_error() {
    let d = dispatcher("openai_fixture");
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "send_email",
        "arguments": {"to": "x@blocked.example", "subject": "s", "body": "b"}}});
    let call = mcp::tool_use(&request).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        call,
        ToolUse::new(
            "7",
            "send_email",
            json!({"to": "x@blocked.example", "subject": "s", "body": "b"})
        )
    );
    let (results, _) = run(&d, &[call]);
    assert_eq!(
        mcp::call_tool_result(&results[0], None),
        json!({"content": [{"type": "text", "text":
            "BLOCKED: mail to blocked.example is not allowed. Ask the user for another address."}],
            "isError": true})
    );
    let ok = ToolResult::text("7", "success");
    assert_eq!(
        mcp::call_tool_result(&ok, None),
        json!({"content": [{"type": "text", "text": "success"}], "isError": false})
    );
}

#[test]
fn enum_values_are_matched_exactly_and_the_error_names_the_accepted_ones() {
    // The same call, as each provider sends it: "Celsius" for `celsius`.
    let args = json!({"location": "Lisbon, Portugal", "units": "Celsius"});
    let calls = vec![
        ToolUse::new("call_a", "get_weather", args.clone()),
        openai::tool_use(&json!({"id": "call_a", "type": "function", "function": {
            "name": "get_weather", "arguments": args.to_string()}}))
        .unwrap_or_else(|e| panic!("{e}")),
        openai_responses::tool_use(&json!({"type": "function_call", "call_id": "call_a",
            "name": "get_weather", "arguments": args.to_string()}))
        .unwrap_or_else(|e| panic!("{e}")),
        gemini::tool_use(
            &json!({"functionCall": {"id": "call_a", "name": "get_weather", "args": args}}),
            "unused",
        )
        .unwrap_or_else(|e| panic!("{e}")),
        mcp::tool_use(
            &json!({"jsonrpc": "2.0", "id": "call_a", "method": "tools/call",
            "params": {"name": "get_weather", "arguments": args}}),
        )
        .unwrap_or_else(|e| panic!("{e}")),
    ];
    let (results, outcomes) = run(&dispatcher("openai_fixture"), &calls);
    assert_eq!(outcomes, BTreeMap::from([(Outcome::InvalidInput, 5)]));
    let expected = ToolResult::error(
        "call_a",
        "Error: invalid input for tool `get_weather` at `units`: expected one of `celsius`, \
         `fahrenheit` (or null), found the string \"Celsius\". Send an input that matches the \
         tool's input_schema.",
    );
    for r in &results {
        assert_eq!(r, &expected);
    }
}

#[test]
fn unknown_fields_in_map_values_and_enum_variants_are_invalid_input() {
    let d = dispatcher("nested_inputs");
    let calls = [
        ToolUse::new(
            "c1",
            "set_labels",
            json!({"labels": {"bug": {"color": "red"}}}),
        ),
        ToolUse::new(
            "c2",
            "set_labels",
            json!({"labels": {"bug": {"color": "red"}, "wip": {"colour": "grey"}}}),
        ),
        ToolUse::new("c3", "area", json!({"shape": {"Square": {"side": 2.0}}})),
        ToolUse::new(
            "c4",
            "area",
            json!({"shape": {"Square": {"side": 2.0, "r": 1.0}}}),
        ),
    ];
    let (results, outcomes) = run(&d, &calls);
    assert_eq!(
        outcomes,
        BTreeMap::from([(Outcome::Ok, 2), (Outcome::InvalidInput, 2)])
    );
    assert_eq!(
        results,
        vec![
            ToolResult::text("c1", "red"),
            ToolResult::error(
                "c2",
                "Error: invalid input for tool `set_labels` (2 problems):\n- at `labels.wip`: \
                 unknown field `colour`, expected one of `color`\n- at `labels.wip`: missing \
                 field `color`\nSend an input that matches the tool's input_schema."
            ),
            ToolResult::text("c3", "4.0"),
            ToolResult::error(
                "c4",
                "Error: invalid input for tool `area` at `shape.Square`: unknown field `r`, \
                 expected one of `side`. Send an input that matches the tool's input_schema."
            ),
        ]
    );
}

#[test]
fn malformed_provider_items_are_host_errors_naming_what_is_missing() {
    let e =
        |r: Result<ToolUse, toolgate::provider::ConvertError>| r.map_err(|e| e.to_string()).err();
    assert_eq!(
        e(openai::tool_use(
            &json!({"type": "function", "function": {"name": "x"}})
        )),
        Some("cannot read an OpenAI tool call: `id` is missing".into())
    );
    assert_eq!(
        e(openai::tool_use(&json!({"id": "call_1", "type": "custom",
                                   "custom": {"name": "x", "input": "y"}}))),
        Some(
            "cannot read an OpenAI tool call: only `function` tool calls are supported, found \
             type \"custom\""
                .into()
        )
    );
    assert_eq!(
        e(gemini::tool_use(
            &json!({"functionCall": {"args": {}}}),
            "g-0"
        )),
        Some("cannot read a Gemini functionCall: `name` is missing".into())
    );
    assert_eq!(
        e(mcp::tool_use(
            &json!({"jsonrpc": "2.0", "id": null, "method": "tools/call",
                                "params": {"name": "x"}})
        )),
        Some(
            "cannot read an MCP tools/call request: `id` must be a string or a number, found null"
                .into()
        )
    );
    assert_eq!(
        openai::tool_uses(&json!({"role": "assistant", "content": "Hi", "tool_calls": null})),
        Ok(vec![])
    );
}

#[test]
fn provider_names_parse_and_print() {
    let names: Vec<String> = Provider::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        [
            "anthropic",
            "anthropic-strict",
            "openai",
            "openai-responses",
            "gemini",
            "mcp"
        ]
    );
    for p in Provider::ALL {
        assert_eq!(p.name().parse::<Provider>(), Ok(p));
    }
    assert_eq!("OpenAI".parse::<Provider>(), Ok(Provider::OpenAi));
    assert_eq!(
        "claude".parse::<Provider>().map_err(|e| e.to_string()),
        Err(
            "unknown provider `claude`: expected one of anthropic, anthropic-strict, openai, \
             openai-responses, gemini, mcp"
                .to_owned()
        )
    );
    let strict: Vec<Provider> = Provider::ALL
        .into_iter()
        .filter(|p| p.is_strict())
        .collect();
    assert_eq!(
        strict,
        [
            Provider::AnthropicStrict,
            Provider::OpenAi,
            Provider::OpenAiResponses
        ]
    );
}
