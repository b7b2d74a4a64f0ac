//! Strict targets and the providers' published limits: Anthropic's limits on a request's strict
//! tools together (20 tools, 24 optional and 16 union-typed parameters), the order in which tools
//! are admitted and demoted, OpenAI's limits on one schema, and the tools marked `strict = true` or
//! `strict = false`. Every request is also checked by [`over_anthropic_limits`], a count written
//! from the documentation's words, not from toolgate's.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher,
    dispatch::{BuildProblem, ToolDef},
    provider::Provider,
};

use crate::provider_rules::check;
use crate::providers::{check_golden, definitions, name_of, target_of};

/// A tool of 25 optional parameters, the published limit being 24 for a whole request.
mod wide {
    use toolgate::tool;

    /// Files a support ticket; every field is optional.
    #[tool]
    #[allow(clippy::too_many_arguments)]
    fn file_ticket(
        f01: Option<String>,
        f02: Option<String>,
        f03: Option<String>,
        f04: Option<String>,
        f05: Option<String>,
        f06: Option<String>,
        f07: Option<String>,
        f08: Option<String>,
        f09: Option<String>,
        f10: Option<String>,
        f11: Option<String>,
        f12: Option<String>,
        f13: Option<String>,
        f14: Option<String>,
        f15: Option<String>,
        f16: Option<String>,
        f17: Option<String>,
        f18: Option<String>,
        f19: Option<String>,
        f20: Option<String>,
        f21: Option<String>,
        f22: Option<String>,
        f23: Option<String>,
        f24: Option<String>,
        f25: Option<String>,
    ) -> String {
        let given = [
            f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11, f12, f13, f14, f15, f16, f17,
            f18, f19, f20, f21, f22, f23, f24, f25,
        ];
        format!("ticket with {} field(s)", given.iter().flatten().count())
    }
}

/// Tools marked `strict = true` that no strict target (a map) or only OpenAI (a recursive
/// type) can take strict: `build()` refuses them. The macro cannot see inside `#[input]`.
mod marked {
    pub(crate) mod map {
        use std::collections::HashMap;

        use schemars::JsonSchema;
        use serde::Deserialize;
        use toolgate::tool;

        #[derive(Debug, Deserialize, JsonSchema)]
        pub(crate) struct Labels {
            /// Labels by name.
            labels: HashMap<String, String>,
        }

        /// Sets labels.
        #[tool(strict = true)]
        fn tag_all(#[input] args: Labels) -> usize {
            args.labels.len()
        }
    }

    pub(crate) mod tree {
        use schemars::JsonSchema;
        use serde::Deserialize;
        use toolgate::tool;

        #[derive(Debug, Deserialize, JsonSchema)]
        pub(crate) struct Node {
            /// The children.
            children: Vec<Node>,
        }

        /// Counts the nodes of a tree.
        #[tool(strict = true)]
        fn count_nodes(
            /// The tree.
            tree: Node,
        ) -> usize {
            fn count(n: &Node) -> usize {
                1 + n.children.iter().map(count).sum::<usize>()
            }
            count(&tree)
        }
    }

    /// 1001 enum values: over OpenAI's limit on one schema, nothing for Anthropic.
    pub(crate) mod levels {
        use toolgate::tool;

        pub(crate) fn level_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
            let values: Vec<String> = (0..1001).map(|i| format!("l{i}")).collect();
            schemars::json_schema!({"type": "string", "enum": values})
        }

        /// Picks a level.
        #[tool]
        fn pick_level(
            /// The level.
            #[schemars(schema_with = "level_schema")]
            level: serde_json::Value,
        ) -> String {
            level.to_string()
        }

        /// Picks a level, strictly.
        #[tool(strict = true)]
        fn pick_level_strictly(
            /// The level.
            #[schemars(schema_with = "level_schema")]
            level: serde_json::Value,
        ) -> String {
            level.to_string()
        }
    }
}

// ================================================================ hand-built tools

/// A struct of `Option<String>` fields: that many optional parameters.
macro_rules! optional_fields {
    ($name:ident: $($field:ident),*) => {
        #[derive(Deserialize, JsonSchema)]
        struct $name {
            $(#[allow(dead_code)] $field: Option<String>,)*
        }
    };
}

optional_fields!(Twelve: o01, o02, o03, o04, o05, o06, o07, o08, o09, o10, o11, o12);
optional_fields!(Thirteen: o01, o02, o03, o04, o05, o06, o07, o08, o09, o10, o11, o12, o13);
optional_fields!(One: o01);

#[derive(Deserialize, JsonSchema)]
struct Required {
    #[allow(dead_code)]
    id: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// A data-carrying enum: one `anyOf` in the strict schema, one union-typed parameter.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Either {
    Num(f64),
    Text(String),
}

/// A struct of `Either` fields: that many union-typed parameters, no optional one.
macro_rules! union_fields {
    ($name:ident: $($field:ident),*) => {
        #[derive(Deserialize, JsonSchema)]
        struct $name {
            $(#[allow(dead_code)] $field: Either,)*
        }
    };
}

union_fields!(NineUnions: u1, u2, u3, u4, u5, u6, u7, u8, u9);
union_fields!(EightUnions: u1, u2, u3, u4, u5, u6, u7, u8);

/// A tool that takes `A` and answers the empty text.
fn tool<A>(name: &'static str) -> ToolDef
where
    A: serde::de::DeserializeOwned + JsonSchema + Send + 'static,
{
    ToolDef::sync(name, "A tool of the limits tests.", |_env, _args: A| {
        Ok(String::new())
    })
}

fn build(tools: Vec<ToolDef>) -> Dispatcher {
    tools
        .into_iter()
        .fold(Dispatcher::builder(), |b, t| b.tool(t))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `non_strict_tools` as `` `tool`: reason `` lines.
fn listed(d: &Dispatcher, provider: Provider) -> Vec<String> {
    d.non_strict_tools(provider)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The names of the entries sent with `strict: true`, in order.
fn strict_names(d: &Dispatcher, provider: Provider) -> Vec<String> {
    definitions(d, provider)
        .iter()
        .filter(|def| {
            let strict = match provider {
                Provider::OpenAi => &def["function"]["strict"],
                _ => &def["strict"],
            };
            strict == &json!(true)
        })
        .map(|def| name_of(provider, def))
        .collect()
}

/// Which of Anthropic's published limits a request's `tools` break, counted from the words of
/// "Structured outputs", "Schema complexity limits": tools with `strict: true`; "each parameter
/// not listed in `required`" of their schemas; "parameters that use `anyOf` or type arrays".
fn over_anthropic_limits(tools: &[Value]) -> Vec<String> {
    fn walk(v: &Value, optional: &mut usize, unions: &mut usize) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    let required = map.get("required").and_then(Value::as_array);
                    *optional += props
                        .keys()
                        .filter(|k| {
                            !required.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(k)))
                        })
                        .count();
                }
                let type_array = map
                    .get("type")
                    .and_then(Value::as_array)
                    .is_some_and(|t| t.len() > 1);
                if type_array || map.contains_key("anyOf") {
                    *unions += 1;
                }
                for child in map.values() {
                    walk(child, optional, unions);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, optional, unions)),
            _ => {}
        }
    }
    let strict: Vec<&Value> = tools
        .iter()
        .filter(|t| t["strict"] == json!(true))
        .collect();
    let (mut optional, mut unions) = (0, 0);
    for t in &strict {
        walk(&t["input_schema"], &mut optional, &mut unions);
    }
    let mut over = Vec::new();
    if strict.len() > 20 {
        over.push(format!("{} strict tools", strict.len()));
    }
    if optional > 24 {
        over.push(format!("{optional} optional parameters"));
    }
    if unions > 16 {
        over.push(format!("{unions} union-typed parameters"));
    }
    over
}

/// Every definition of every provider follows its rules, and the Anthropic strict request keeps
/// to the published limits.
fn check_every_target(d: &Dispatcher) {
    for p in Provider::ALL {
        for def in definitions(d, p) {
            assert_eq!(check(target_of(p), &def), vec![], "{p}: {def}");
        }
    }
    assert_eq!(
        over_anthropic_limits(&definitions(d, Provider::AnthropicStrict)),
        Vec::<String>::new()
    );
}

// ================================================================ 25 optional parameters

#[test]
fn a_tool_of_25_optional_parameters_is_sent_non_strict_to_anthropic_and_strict_to_openai() {
    let d = Dispatcher::builder()
        .registered_under(format!("{}::wide", module_path!()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    for p in Provider::ALL {
        check_golden(&d, p, "wide");
    }
    assert_eq!(
        listed(&d, Provider::AnthropicStrict),
        vec![
            "`file_ticket`: its 25 optional parameters would bring the optional parameters of \
             the request's strict tools to 25 (Anthropic strict tool use allows 24 in one \
             request)"
        ]
    );
    // The non-strict entry is the default one, exactly.
    assert_eq!(
        definitions(&d, Provider::AnthropicStrict),
        d.tool_definitions().to_vec()
    );
    // OpenAI makes every optional field required and nullable: no limit on that.
    for p in [Provider::OpenAi, Provider::OpenAiResponses] {
        assert_eq!(listed(&d, p), Vec::<String>::new(), "{p}");
        assert_eq!(strict_names(&d, p), vec!["file_ticket"], "{p}");
    }
    check_every_target(&d);
    // Sent strict, the same entry would break the published limits: its optional fields, which
    // also take `null` in the default entry (an `anyOf` with `{"type": "null"}` each), count as
    // union-typed parameters too.
    let mut forced = d.tool_definitions().to_vec();
    forced[0]["strict"] = json!(true);
    assert_eq!(
        over_anthropic_limits(&forced),
        vec!["25 optional parameters", "25 union-typed parameters"]
    );
}

// ================================================================ the order

#[test]
fn tools_are_admitted_by_name_and_a_later_tool_that_fits_stays_strict() {
    // Given in another order: the order is the names', not the builder's.
    let d = build(vec![
        tool::<Required>("d_required"),
        tool::<One>("c_one"),
        tool::<Twelve>("b_twelve"),
        tool::<Twelve>("a_twelve"),
    ]);
    assert_eq!(
        listed(&d, Provider::AnthropicStrict),
        vec![
            "`c_one`: its 1 optional parameter would bring the optional parameters of the \
             request's strict tools to 25 (Anthropic strict tool use allows 24 in one request)"
        ]
    );
    assert_eq!(
        strict_names(&d, Provider::AnthropicStrict),
        vec!["a_twelve", "b_twelve", "d_required"]
    );
    // The demoted entry is the default one, exactly; the others carry `strict: true`.
    let strict = definitions(&d, Provider::AnthropicStrict);
    assert_eq!(strict[2], d.tool_definitions()[2]);
    assert_eq!(
        strict[3],
        json!({"name": "d_required", "description": "A tool of the limits tests.",
               "input_schema": {"type": "object", "properties": {"id": {"type": "string"}},
                                "required": ["id"], "additionalProperties": false},
               "strict": true})
    );
    for p in [Provider::OpenAi, Provider::OpenAiResponses] {
        assert_eq!(listed(&d, p), Vec::<String>::new(), "{p}");
    }
    check_every_target(&d);
}

#[test]
fn a_tool_marked_strict_is_admitted_first_and_a_later_one_gives_way() {
    let d = build(vec![
        tool::<Twelve>("a_twelve"),
        tool::<Twelve>("b_twelve"),
        tool::<One>("c_one").strict(true),
        tool::<Required>("d_required"),
    ]);
    assert_eq!(
        listed(&d, Provider::AnthropicStrict),
        vec![
            "`b_twelve`: its 12 optional parameters would bring the optional parameters of the \
             request's strict tools to 25 (Anthropic strict tool use allows 24 in one request)"
        ]
    );
    assert_eq!(
        strict_names(&d, Provider::AnthropicStrict),
        vec!["a_twelve", "c_one", "d_required"]
    );
    check_every_target(&d);
}

#[test]
fn a_tool_marked_non_strict_is_non_strict_everywhere_and_counts_for_nothing() {
    let d = build(vec![
        tool::<Thirteen>("a_thirteen").strict(false),
        tool::<Twelve>("b_twelve"),
        tool::<Twelve>("c_twelve"),
    ]);
    let marked = "`a_thirteen`: the tool is marked `strict = false`";
    for p in [
        Provider::AnthropicStrict,
        Provider::OpenAi,
        Provider::OpenAiResponses,
    ] {
        assert_eq!(listed(&d, p), vec![marked], "{p}");
        assert_eq!(strict_names(&d, p), vec!["b_twelve", "c_twelve"], "{p}");
    }
    // Its OpenAI entry: `strict: false` and the Anthropic schema, as for any non-strict tool.
    assert_eq!(
        definitions(&d, Provider::OpenAiResponses)[0],
        json!({"type": "function", "name": "a_thirteen",
               "description": "A tool of the limits tests.",
               "parameters": d.tool_definitions()[0]["input_schema"].clone(),
               "strict": false})
    );
    for p in [Provider::Anthropic, Provider::Gemini, Provider::Mcp] {
        assert_eq!(listed(&d, p), Vec::<String>::new(), "{p}");
    }
    check_every_target(&d);
}

#[test]
fn union_typed_parameters_are_counted_across_the_request() {
    let d = build(vec![
        tool::<NineUnions>("u_nine"),
        tool::<EightUnions>("v_eight"),
        tool::<Required>("w_required"),
    ]);
    assert_eq!(
        listed(&d, Provider::AnthropicStrict),
        vec![
            "`v_eight`: its 8 union-typed parameters would bring the union-typed parameters of \
             the request's strict tools to 17 (Anthropic strict tool use allows 16 in one \
             request)"
        ]
    );
    assert_eq!(
        strict_names(&d, Provider::AnthropicStrict),
        vec!["u_nine", "w_required"]
    );
    check_every_target(&d);
}

#[test]
fn the_twenty_first_strict_tool_by_name_is_sent_non_strict() {
    const NAMES: [&str; 21] = [
        "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09", "t10", "t11", "t12", "t13",
        "t14", "t15", "t16", "t17", "t18", "t19", "t20", "t21",
    ];
    let d = build(NAMES.iter().rev().map(|n| tool::<NoArgs>(n)).collect());
    assert_eq!(
        listed(&d, Provider::AnthropicStrict),
        vec![
            "`t21`: the request already holds 20 strict tools (Anthropic strict tool use allows \
             20 in one request)"
        ]
    );
    assert_eq!(
        strict_names(&d, Provider::AnthropicStrict),
        NAMES[..20].to_vec()
    );
    // OpenAI documents no such limit.
    assert_eq!(strict_names(&d, Provider::OpenAi), NAMES.to_vec());
    check_every_target(&d);
}

// ================================================================ `strict = true` that cannot hold

#[test]
fn tools_marked_strict_over_a_limit_together_fail_the_build() {
    let Err(e) = Dispatcher::builder()
        .tool(tool::<Twelve>("a_twelve").strict(true))
        .tool(tool::<Twelve>("b_twelve").strict(true))
        .tool(tool::<One>("c_one").strict(true))
        .tool(tool::<Required>("d_required"))
        .build()
    else {
        panic!("25 optional parameters marked strict were accepted")
    };
    assert_eq!(
        e.problems,
        vec![BuildProblem::StrictLimit {
            provider: Provider::AnthropicStrict,
            tools: vec!["a_twelve".into(), "b_twelve".into(), "c_one".into()],
            reason: "together they hold 25 optional parameters (Anthropic strict tool use allows \
                     24 in one request)"
                .into(),
        }]
    );
    assert_eq!(
        e.to_string(),
        "the dispatcher cannot be built (1 problem):\n- the tools marked `strict = true` \
         (a_twelve, b_twelve, c_one) cannot all be strict for anthropic-strict: together they \
         hold 25 optional parameters (Anthropic strict tool use allows 24 in one request); mark \
         fewer tools `strict = true` or make parameters required"
    );
}

#[test]
fn a_tool_marked_strict_that_a_strict_target_cannot_take_strict_fails_the_build() {
    let build = |module: &str| {
        Dispatcher::builder()
            .registered_under(format!("{}::marked::{module}", module_path!()))
            .build()
    };
    let map = "property `labels` is a map (`additionalProperties` is a schema, as for \
               HashMap<String, T>)";
    let path = "providers::strict_limits::marked::map::tag_all";
    let Err(e) = build("map") else {
        panic!("a map marked strict was accepted")
    };
    assert_eq!(
        e.problems,
        [
            Provider::AnthropicStrict,
            Provider::OpenAi,
            Provider::OpenAiResponses
        ]
        .map(|provider| BuildProblem::CannotBeStrict {
            tool: "tag_all".into(),
            path: path.into(),
            provider,
            reason: map.into(),
        })
        .to_vec()
    );
    assert_eq!(
        e.problems[0].to_string(),
        format!(
            "tool `tag_all` ({path}) is marked `strict = true`, but anthropic-strict cannot take \
             it strict: {map}; remove `strict = true` (the tool is then sent non-strict where it \
             must be) or change its input type"
        )
    );
    // Recursion: OpenAI strict takes it, Anthropic strict does not.
    let Err(e) = build("tree") else {
        panic!("a recursive type marked strict was accepted")
    };
    assert_eq!(
        e.problems,
        vec![BuildProblem::CannotBeStrict {
            tool: "count_nodes".into(),
            path: "providers::strict_limits::marked::tree::count_nodes".into(),
            provider: Provider::AnthropicStrict,
            reason: "property `tree.children[]` refers back to a type that contains it (`$ref`): \
                     Anthropic strict tool use does not support recursive schemas"
                .into(),
        }]
    );
}

// ================================================================ OpenAI: one schema

#[test]
fn a_schema_over_an_openai_limit_is_non_strict_there_and_a_marked_one_fails_the_build() {
    let d = Dispatcher::builder()
        .item(format!("{}::marked::levels::pick_level", module_path!()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let over = "`pick_level`: the schema has 1001 enum values; OpenAI strict mode allows 1000 in \
                one schema";
    for p in [Provider::OpenAi, Provider::OpenAiResponses] {
        assert_eq!(listed(&d, p), vec![over], "{p}");
        assert_eq!(strict_names(&d, p), Vec::<String>::new(), "{p}");
    }
    // Anthropic publishes no limit on enum values.
    assert_eq!(
        strict_names(&d, Provider::AnthropicStrict),
        vec!["pick_level"]
    );
    check_every_target(&d);

    let Err(e) = Dispatcher::builder()
        .item(format!(
            "{}::marked::levels::pick_level_strictly",
            module_path!()
        ))
        .build()
    else {
        panic!("a schema over OpenAI's limits marked strict was accepted")
    };
    assert_eq!(
        e.problems,
        [Provider::OpenAi, Provider::OpenAiResponses]
            .map(|provider| BuildProblem::CannotBeStrict {
                tool: "pick_level_strictly".into(),
                path: "providers::strict_limits::marked::levels::pick_level_strictly".into(),
                provider,
                reason: "the schema has 1001 enum values; OpenAI strict mode allows 1000 in one \
                         schema"
                    .into(),
            })
            .to_vec()
    );
}
