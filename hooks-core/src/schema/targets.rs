//! One transform per target, each starting from the canonical schema ([`super::canonicalize`]).
//!
//! [`definition`] turns a tool's name, description and canonical schema into one entry of a
//! target's tool list:
//!
//! | [`Provider`] | entry | schema |
//! |---|---|---|
//! | `Anthropic` | `{name, description, input_schema}` | [`anthropic_input_schema`] |
//! | `AnthropicStrict` | the same with `strict: true` | its strict subset, below |
//! | `OpenAi` | `{type: "function", function: {name, description, parameters, strict}}` | strict subset, below |
//! | `OpenAiResponses` | `{type: "function", name, description, parameters, strict}` | the same |
//! | `Gemini` | `{name, description, parameters}` | the OpenAPI 3.0 subset, below |
//! | `Mcp` | `{name, description, inputSchema}` | [`anthropic_input_schema`] |
//!
//! A constraint a target does not support but that only narrows values (`minimum`, `maxLength`,
//! an unsupported string `format`, `default` for OpenAI strict, …) is removed and written at the
//! end of the description as `{minimum: 0, maxLength: 40}`, as Anthropic's SDKs do ("Structured
//! outputs", "How SDK transformation works"): the model still reads it, and the dispatcher
//! validates every input against the Rust type anyway. A construct a target cannot express
//! (a map, a recursive type, a tuple, `not`, …) is not dropped: a strict target emits the tool
//! non-strict and says why ([`Definition::non_strict`]); Gemini refuses the tool ([`definition`]
//! returns the reason).
//!
//! **Anthropic strict** (docs: "Strict tool use", "JSON Schema limitations"): every object
//! `additionalProperties: false`; no numeric bounds (`minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `multipleOf`), no string length bounds, `minItems` only 0 or 1, no other
//! array bounds, string `format` only `date-time`, `time`, `date`, `duration`, `email`,
//! `hostname`, `uri`, `ipv4`, `ipv6`, `uuid`; no recursion; `oneOf` written as `anyOf`.
//!
//! **OpenAI strict** (docs: "Function calling", "Structured Outputs", "Supported schemas"):
//! every object `additionalProperties: false` and every property in `required`; an optional
//! (nullable) scalar as a type union with `"null"` (`{"type": ["string", "null"], "enum":
//! ["celsius", "fahrenheit"]}`, `null` not added to `enum`, as in the guide's `get_weather`); an
//! optional object or array as `anyOf: [X, {"type": "null"}]`; a field that may be omitted but not
//! `null` (`#[serde(default)]`) becomes required: the model must then give a value; no `oneOf`
//! (written as `anyOf`), `allOf`, `not`, `if`/`then`/`else`; no `default`; string `format` only
//! `date-time`, `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`; no
//! `minLength`/`maxLength`, `uniqueItems`, `minProperties`/`maxProperties`; `$defs` and recursion
//! allowed; at most 10 levels of object nesting (the root object is level 1). `strict` is always
//! sent, `true` or `false`: Chat Completions and Responses default differently.
//!
//! **Gemini `parameters`** (docs: "Function calling", `FunctionDeclaration`, `Schema`): one
//! `type` per schema, lowercase (the REST API accepts Google's own lowercase examples), a
//! nullable value as its type plus `nullable: true`; no `additionalProperties`, `$schema`, `$ref`,
//! `const` (written as a one-value `enum`), `oneOf` (written as `anyOf`), `exclusiveMinimum`,
//! `exclusiveMaximum`, `multipleOf`, `if`; `enum` only on strings, with `format: "enum"`; string
//! `format` only `enum` or `date-time` (API error: "only 'enum' and 'date-time' are supported for
//! STRING type"); an object must list properties (API error: "should be non-empty for OBJECT
//! type"), so a tool without parameters has no `parameters`; the name starts with a letter or
//! `_` (Vertex AI). Property order is kept as declared; `propertyOrdering` is not added (the
//! published `parameters` examples do not use it).

use std::fmt;

use serde_json::{Map, Value, json};

use super::anthropic_input_schema;
use super::walk::{split_null_branches, split_nullable, try_for_each_subschema_mut};
use crate::provider::Provider;

/// One tool's entry in a target's tool list.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Definition {
    /// The entry, in the target's wire format (see the module docs).
    pub value: Value,
    /// For a strict target (`AnthropicStrict`, `OpenAi`, `OpenAiResponses`): why the tool had to
    /// be emitted non-strict (``property `labels` is a map …``); `None` when it is strict, and
    /// always `None` for the other targets.
    pub non_strict: Option<String>,
}

/// The Anthropic `tools` entry of one tool: `{"name": …, "description": …, "input_schema": …}`
/// (the builder makes every dispatcher's default definitions with it).
pub(crate) fn anthropic_entry(name: &str, description: &str, canonical: &Value) -> Value {
    json!({
        "name": name,
        "description": description,
        "input_schema": anthropic_input_schema(canonical),
    })
}

/// The entry of one tool for `provider`, from the tool's `name`, `description` (already
/// unwrapped) and canonical schema.
///
/// # Errors
/// For [`Provider::Gemini`] only: the reason the tool cannot be expressed in Gemini's
/// `parameters` (a recursive type, a map, a tuple, `not`/`if`, a non-string `enum`, a name that
/// does not start with a letter or `_`). Every other target can express every canonical schema
/// (a strict one falls back to non-strict).
pub fn definition(
    provider: Provider,
    name: &str,
    description: &str,
    canonical: &Value,
) -> Result<Definition, String> {
    let plain = |value| Definition {
        value,
        non_strict: None,
    };
    match provider {
        Provider::Anthropic => Ok(plain(anthropic_entry(name, description, canonical))),
        Provider::AnthropicStrict => {
            let schema = anthropic_input_schema(canonical);
            Ok(match anthropic_strict(&schema) {
                Ok(strict) => plain(json!({
                    "name": name,
                    "description": description,
                    "input_schema": strict,
                    "strict": true,
                })),
                Err(reason) => Definition {
                    value: json!({
                        "name": name,
                        "description": description,
                        "input_schema": schema,
                    }),
                    non_strict: Some(reason),
                },
            })
        }
        Provider::OpenAi | Provider::OpenAiResponses => {
            let (parameters, strict, non_strict) = match openai_strict(canonical) {
                Ok(s) => (s, true, None),
                Err(reason) => (anthropic_input_schema(canonical), false, Some(reason)),
            };
            let function = json!({
                "name": name,
                "description": description,
                "parameters": parameters,
                "strict": strict,
            });
            let value = if provider == Provider::OpenAi {
                json!({"type": "function", "function": function})
            } else {
                let mut flat = Map::new();
                flat.insert("type".into(), "function".into());
                if let Value::Object(f) = function {
                    flat.extend(f);
                }
                Value::Object(flat)
            };
            Ok(Definition { value, non_strict })
        }
        Provider::Gemini => {
            if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                return Err(format!(
                    "the name `{name}` does not start with a letter or `_`, which Vertex AI \
                     requires of a function name"
                ));
            }
            let mut entry = Map::new();
            entry.insert("name".into(), name.into());
            entry.insert("description".into(), description.into());
            if let Some(parameters) = gemini_parameters(canonical)? {
                entry.insert("parameters".into(), parameters);
            }
            Ok(plain(Value::Object(entry)))
        }
        Provider::Mcp => Ok(plain(json!({
            "name": name,
            "description": description,
            "inputSchema": anthropic_input_schema(canonical),
        }))),
    }
}

/// A tool a strict target had to emit non-strict, and why (for a host to log at start-up).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NonStrictTool {
    /// The tool's name.
    pub tool: String,
    /// Why its schema is outside the strict subset (``property `labels` is a map …``).
    pub reason: String,
}

impl fmt::Display for NonStrictTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.tool, self.reason)
    }
}

/// One tool a target cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaProblem {
    /// The tool's name.
    pub tool: String,
    /// Why (``property `tree.children[]` is a recursive type …``).
    pub reason: String,
}

/// The tools a target cannot express, all of them (today only Gemini refuses tools: a
/// recursive type, a map, a tuple, …). Other targets of the same dispatcher are unaffected.
///
/// `Display` (one line per tool):
///
/// ```text
/// gemini cannot express 1 tool; filter it out for this target (DispatcherBuilder::without_tools) or change its input type:
/// - `walk_tree`: property `tree.children[]` is a recursive type (`$ref`), which Gemini's `parameters` (an OpenAPI 3.0 subset without `$ref`) cannot express
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaError {
    /// The target.
    pub provider: Provider,
    /// One entry per tool, in the dispatcher's tool order (by name).
    pub problems: Vec<SchemaProblem>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(
            f,
            "{} cannot express {n} tool{}; filter {} out for this target \
             (DispatcherBuilder::without_tools) or change {} input type:",
            self.provider,
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            if n == 1 { "its" } else { "their" },
        )?;
        for p in &self.problems {
            write!(f, "\n- `{}`: {}", p.tool, p.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for SchemaError {}

/// The definitions of a dispatcher's tools for one target, built once (lazily) per dispatcher.
#[derive(Debug)]
pub(crate) struct Rendered {
    pub(crate) definitions: Vec<Value>,
    pub(crate) non_strict: Vec<NonStrictTool>,
}

/// Renders every tool `(name, description, canonical)` for `provider`, collecting every tool
/// the target cannot express.
pub(crate) fn render<'a>(
    provider: Provider,
    tools: impl Iterator<Item = (&'a str, &'a str, &'a Value)>,
) -> Result<Rendered, SchemaError> {
    let mut rendered = Rendered {
        definitions: Vec::new(),
        non_strict: Vec::new(),
    };
    let mut problems = Vec::new();
    for (name, description, canonical) in tools {
        match definition(provider, name, description, canonical) {
            Ok(d) => {
                if let Some(reason) = d.non_strict {
                    rendered.non_strict.push(NonStrictTool {
                        tool: name.to_owned(),
                        reason,
                    });
                }
                rendered.definitions.push(d.value);
            }
            Err(reason) => problems.push(SchemaProblem {
                tool: name.to_owned(),
                reason,
            }),
        }
    }
    if problems.is_empty() {
        Ok(rendered)
    } else {
        Err(SchemaError { provider, problems })
    }
}

// ---- shared helpers ----

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// How a path is named in a reason: `property `a.b``, or `the input` at the root.
fn at(path: &str) -> String {
    if path.is_empty() {
        "the input".to_owned()
    } else {
        format!("property `{path}`")
    }
}

/// The keys a target does not accept on this node: `always`, plus `format` when its value is
/// not one of `formats`.
fn keys_to_move(map: &Map<String, Value>, always: &[&str], formats: &[&str]) -> Vec<String> {
    let mut moved: Vec<String> = always.iter().map(|s| (*s).to_owned()).collect();
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !formats.contains(&f))
    {
        moved.push("format".into());
    }
    moved
}

/// Moves `keys` (those present) out of `map` and appends them to its description as
/// `{key: value, …}` (values as compact JSON), after a blank line.
fn relocate(map: &mut Map<String, Value>, keys: &[String]) {
    let moved: Vec<String> = keys
        .iter()
        .filter_map(|k| map.remove(k).map(|v| format!("{k}: {v}")))
        .collect();
    if moved.is_empty() {
        return;
    }
    let note = format!("{{{}}}", moved.join(", "));
    let text = match map.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d}\n\n{note}"),
        _ => note,
    };
    map.insert("description".into(), Value::String(text));
}

/// Keywords no target's subset can express, and how a reason names them.
const INEXPRESSIBLE: &[(&str, &str)] = &[
    ("not", "`not`"),
    ("if", "`if`/`then`/`else`"),
    ("then", "`if`/`then`/`else`"),
    ("else", "`if`/`then`/`else`"),
    ("prefixItems", "a tuple (`prefixItems`)"),
    ("patternProperties", "`patternProperties`"),
    ("propertyNames", "`propertyNames`"),
    ("dependentSchemas", "dependent schemas"),
    ("dependentRequired", "dependent schemas"),
    ("unevaluatedProperties", "`unevaluated*` keywords"),
    ("unevaluatedItems", "`unevaluated*` keywords"),
];

/// `allOf`, which OpenAI strict and Gemini cannot express (an `extra` of [`inexpressible`]).
const ALL_OF: &[(&str, &str)] = &[("allOf", "`allOf`")];

/// Why a keyword makes a schema inexpressible in a subset, if it does: the first of
/// [`INEXPRESSIBLE`] and then `extra` that `map` has.
fn inexpressible(map: &Map<String, Value>, path: &str, extra: &[(&str, &str)]) -> Option<String> {
    INEXPRESSIBLE
        .iter()
        .chain(extra)
        .find(|(k, _)| map.contains_key(*k))
        .map(|(_, what)| format!("{} uses {what}", at(path)))
}

/// Why an object schema's `additionalProperties` cannot be closed, if it cannot: a map
/// (`additionalProperties` is a schema) or an object with no declared properties.
fn open_object(map: &Map<String, Value>, path: &str) -> Option<String> {
    match map.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) | None if !map.contains_key("properties") => Some(format!(
            "{} is an object with no declared properties (it accepts any keys)",
            at(path)
        )),
        Some(Value::Bool(true)) | None => None,
        Some(_) => Some(is_a_map(path)),
    }
}

/// The reason a map (`additionalProperties` is a schema) cannot be closed.
fn is_a_map(path: &str) -> String {
    format!(
        "{} is a map (`additionalProperties` is a schema, as for HashMap<String, T>)",
        at(path)
    )
}

fn is_object_schema(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties")
}

// ---- Anthropic strict ----

/// String formats Anthropic strict tool use accepts ("JSON Schema limitations").
const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Bounds no strict target accepts as-is (moved into the description).
const ANTHROPIC_BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
    "contains",
];

/// The Anthropic `input_schema` narrowed to the strict subset, or why it cannot be.
fn anthropic_strict(schema: &Value) -> Result<Value, String> {
    let mut v = schema.clone();
    anthropic_node(&mut v, "")?;
    Ok(v)
}

fn anthropic_node(v: &mut Value, path: &str) -> Result<(), String> {
    let Value::Object(map) = v else {
        return match v {
            Value::Bool(false) => Ok(()),
            _ => Err(format!("{} accepts any JSON value", at(path))),
        };
    };
    if map.contains_key("$ref") {
        return Err(format!(
            "{} refers back to a type that contains it (`$ref`): Anthropic strict tool use does \
             not support recursive schemas",
            at(path)
        ));
    }
    if let Some(reason) = inexpressible(map, path, &[]) {
        return Err(reason);
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    if is_object_schema(map) {
        if let Some(reason) = open_object(map, path) {
            return Err(reason);
        }
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    let mut moved = keys_to_move(map, ANTHROPIC_BOUNDS, ANTHROPIC_FORMATS);
    if map
        .get("minItems")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 1)
    {
        moved.push("minItems".into());
    }
    relocate(map, &moved);
    walk_children(map, path, &mut |_, child, p| anthropic_node(child, p))
}

/// Calls `f(keyword, child, path)` on every subschema of `map` but a bool
/// `additionalProperties`, in [`super::walk::try_for_each_subschema_mut`]'s order. The path is
/// `path.name` under `properties`, `keyword.name` under the other maps (`$defs.Node`),
/// `path[]` under `items`, and `path` under the rest.
fn walk_children(
    map: &mut Map<String, Value>,
    path: &str,
    f: &mut dyn FnMut(&str, &mut Value, &str) -> Result<(), String>,
) -> Result<(), String> {
    try_for_each_subschema_mut(map, |keyword, name, child| {
        let p = match (keyword, name) {
            ("properties", Some(name)) => join(path, name),
            (_, Some(name)) => join(keyword, name),
            ("items", None) => format!("{path}[]"),
            ("additionalProperties", None) if child.is_boolean() => return Ok(()),
            (_, None) => path.to_owned(),
        };
        f(keyword, child, &p)
    })
}

// ---- OpenAI strict ----

/// String formats OpenAI Structured Outputs accepts ("Supported schemas").
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords OpenAI strict mode does not accept but that only narrow values.
const OPENAI_MOVED: &[&str] = &[
    "default",
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
];

/// Deepest object nesting OpenAI strict mode accepts (the root object is level 1). Source:
/// OpenAI's "Structured Outputs" guide, "Supported schemas", "Objects have limitations on nesting
/// depth and size": "A schema may have up to 5000 object properties total, with up to 10 levels
/// of nesting." (earlier versions said 100 properties and 5 levels). `$defs` entries start their
/// own count; [`definition`] emits a deeper tool non-strict.
pub const OPENAI_MAX_NESTING: usize = 10;

/// The canonical schema in OpenAI's strict subset, or why it cannot be.
fn openai_strict(canonical: &Value) -> Result<Value, String> {
    let mut v = canonical.clone();
    openai_node(&mut v, "", 0)?;
    Ok(v)
}

fn openai_node(v: &mut Value, path: &str, depth: usize) -> Result<(), String> {
    if let Some(merged) = nullable_scalar(v) {
        *v = merged;
    }
    let Value::Object(map) = v else {
        return match v {
            Value::Bool(false) => Ok(()),
            _ => Err(format!("{} accepts any JSON value", at(path))),
        };
    };
    if let Some(Value::String(target)) = map.get("$ref") {
        if !target.starts_with('#') {
            return Err(format!(
                "{} refers to an external schema (`$ref: {target}`)",
                at(path)
            ));
        }
        return Ok(());
    }
    if let Some(reason) = inexpressible(map, path, ALL_OF) {
        return Err(reason);
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    let object = is_object_schema(map);
    let depth = if object { depth + 1 } else { depth };
    if object {
        if depth > OPENAI_MAX_NESTING {
            return Err(format!(
                "{} is an object nested {depth} levels deep; OpenAI strict mode allows \
                 {OPENAI_MAX_NESTING}",
                at(path)
            ));
        }
        if let Some(reason) = open_object(map, path) {
            return Err(reason);
        }
        map.insert("additionalProperties".into(), Value::Bool(false));
        let keys: Vec<Value> = match map.get("properties") {
            Some(Value::Object(props)) => props.keys().map(|k| Value::String(k.clone())).collect(),
            _ => Vec::new(),
        };
        map.insert("required".into(), Value::Array(keys));
    }
    let moved = keys_to_move(map, OPENAI_MOVED, OPENAI_FORMATS);
    relocate(map, &moved);
    walk_children(map, path, &mut |keyword, child, p| {
        // `$defs` start a new nesting count: they are reached through `$ref`.
        let d = if matches!(keyword, "$defs" | "definitions") {
            0
        } else {
            depth
        };
        openai_node(child, p, d)
    })
}

/// `{"anyOf": [{"type": "string", …}, {"type": "null"}], "description": …}` →
/// `{"type": ["string", "null"], …, "description": …}` when the non-null branch is a plain
/// scalar (one `type` of `string`, `number`, `integer` or `boolean`, no combinator or `$ref`).
fn nullable_scalar(v: &Value) -> Option<Value> {
    let (Value::Object(mut merged), true) = split_nullable(v) else {
        return None;
    };
    let ty = merged.get("type")?.as_str()?.to_owned();
    if !matches!(ty.as_str(), "string" | "number" | "integer" | "boolean")
        || ["anyOf", "oneOf", "allOf", "$ref"]
            .iter()
            .any(|k| merged.contains_key(*k))
    {
        return None;
    }
    merged.insert("type".into(), json!([ty, "null"]));
    Some(Value::Object(merged))
}

// ---- Gemini ----

/// `Schema` fields Gemini's `parameters` accepts and this transform keeps as they are.
const GEMINI_KEPT: &[&str] = &[
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "default",
    "example",
];

/// The Gemini `parameters` of a canonical schema: `Ok(None)` for a tool without parameters.
fn gemini_parameters(canonical: &Value) -> Result<Option<Value>, String> {
    if let Some(Value::Object(props)) = canonical.get("properties")
        && props.is_empty()
    {
        return Ok(None);
    }
    gemini_node(canonical, "").map(Some)
}

fn gemini_node(v: &Value, path: &str) -> Result<Value, String> {
    let (v, nullable) = split_null_branches(v, true);
    let Value::Object(map) = &v else {
        return Err(format!("{} accepts any JSON value", at(path)));
    };
    if map.contains_key("$ref") {
        return Err(format!(
            "{} is a recursive type (`$ref`), which Gemini's `parameters` (an OpenAPI 3.0 \
             subset without `$ref`) cannot express",
            at(path)
        ));
    }
    if let Some(reason) = inexpressible(map, path, ALL_OF) {
        return Err(reason);
    }
    let mut out = Map::new();
    let mut notes = Map::new();

    // type
    let mut ty = match map.get("type") {
        None => None,
        Some(Value::String(t)) if t == "null" => {
            return Err(format!("{} can only be null", at(path)));
        }
        Some(Value::String(t)) => Some(t.clone()),
        Some(other) => {
            return Err(format!(
                "{} has several types ({other}); Gemini allows one `type` per schema",
                at(path)
            ));
        }
    };
    let mut values = match map.get("enum") {
        Some(Value::Array(vals)) => Some(vals.clone()),
        _ => None,
    };
    if let Some(c) = map.get("const") {
        values = Some(vec![c.clone()]);
    }
    if let Some(vals) = &values {
        if !vals.iter().all(Value::is_string) {
            return Err(format!(
                "{} has non-string `enum` values; Gemini allows `enum` only on strings",
                at(path)
            ));
        }
        if ty.is_none() {
            ty = Some("string".into());
        }
    }
    let combinator = map.get("anyOf").or_else(|| map.get("oneOf"));
    if ty.is_none() && combinator.is_none() {
        return Err(format!("{} has no `type`", at(path)));
    }
    if let Some(t) = &ty {
        out.insert("type".into(), Value::String(t.clone()));
    }
    match (map.get("format"), ty.as_deref(), &values) {
        (_, Some("string"), Some(_)) => {
            out.insert("format".into(), "enum".into());
        }
        (Some(Value::String(f)), Some(t), None)
            if matches!(
                (t, f.as_str()),
                ("string", "date-time")
                    | ("number", "float" | "double")
                    | ("integer", "int32" | "int64")
            ) =>
        {
            out.insert("format".into(), Value::String(f.clone()));
        }
        (Some(f), _, _) => {
            notes.insert("format".into(), f.clone());
        }
        _ => {}
    }
    if let Some(vals) = values {
        out.insert("enum".into(), Value::Array(vals));
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    if let Some(d) = map.get("description") {
        out.insert("description".into(), d.clone());
    }

    // children
    if let Some(items) = map.get("items") {
        out.insert("items".into(), gemini_node(items, &format!("{path}[]"))?);
    }
    if ty.as_deref() == Some("object") || map.contains_key("properties") {
        if !matches!(map.get("additionalProperties"), None | Some(Value::Bool(_))) {
            return Err(format!(
                "{}, which Gemini's `parameters` cannot express",
                is_a_map(path)
            ));
        }
        let props = match map.get("properties") {
            Some(Value::Object(props)) if !props.is_empty() => props,
            _ => {
                return Err(format!(
                    "{} is an object with no declared properties, which Gemini's `parameters` \
                     refuses (\"should be non-empty for OBJECT type\")",
                    at(path)
                ));
            }
        };
        let mut converted = Map::new();
        for (name, p) in props {
            converted.insert(name.clone(), gemini_node(p, &join(path, name))?);
        }
        out.insert("properties".into(), Value::Object(converted));
        if let Some(required) = map.get("required") {
            out.insert("required".into(), required.clone());
        }
    }
    if let Some(Value::Array(branches)) = combinator {
        let converted = branches
            .iter()
            .map(|b| gemini_node(b, path))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("anyOf".into(), Value::Array(converted));
    }

    // the rest: kept, or moved into the description
    for (k, val) in map {
        let handled = matches!(
            k.as_str(),
            "type"
                | "enum"
                | "const"
                | "format"
                | "description"
                | "items"
                | "properties"
                | "required"
                | "additionalProperties"
                | "anyOf"
                | "oneOf"
                | "title"
                | "$schema"
                | "$defs"
                | "definitions"
        );
        if handled {
            continue;
        }
        if GEMINI_KEPT.contains(&k.as_str()) {
            out.insert(k.clone(), val.clone());
        } else {
            notes.insert(k.clone(), val.clone());
        }
    }
    if !notes.is_empty() {
        let keys: Vec<String> = notes.keys().cloned().collect();
        out.extend(notes);
        relocate(&mut out, &keys);
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocates_bounds_into_the_description() {
        let mut map = json!({"type": "integer", "minimum": 0, "description": "How many."})
            .as_object()
            .cloned()
            .unwrap_or_default();
        relocate(&mut map, &["minimum".to_owned(), "maximum".to_owned()]);
        assert_eq!(
            Value::Object(map),
            json!({"type": "integer", "description": "How many.\n\n{minimum: 0}"})
        );
    }

    #[test]
    fn merges_a_nullable_scalar_into_a_type_union() {
        let v = json!({"description": "Units.", "anyOf": [
            {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]});
        assert_eq!(
            nullable_scalar(&v),
            Some(
                json!({"type": ["string", "null"], "enum": ["celsius", "fahrenheit"],
                        "description": "Units."})
            )
        );
        let object = json!({"anyOf": [{"type": "object", "properties": {}}, {"type": "null"}]});
        assert_eq!(nullable_scalar(&object), None);
    }

    fn root(props: Value) -> Value {
        json!({"type": "object", "properties": props, "additionalProperties": false})
    }

    #[test]
    fn a_tool_without_parameters() {
        let empty = root(json!({}));
        let gemini = definition(Provider::Gemini, "ping", "Answers pong.", &empty);
        assert_eq!(
            gemini.map(|d| d.value),
            Ok(json!({"name": "ping", "description": "Answers pong."}))
        );
        let openai = definition(Provider::OpenAiResponses, "ping", "Answers pong.", &empty);
        assert_eq!(
            openai.map(|d| d.value),
            Ok(
                json!({"type": "function", "name": "ping", "description": "Answers pong.",
                      "parameters": {"type": "object", "properties": {}, "required": [],
                                     "additionalProperties": false},
                      "strict": true})
            )
        );
    }

    #[test]
    fn one_of_becomes_any_of_and_const_a_gemini_enum() {
        let schema = root(json!({"shape": {"oneOf": [
            {"type": "object", "properties": {"kind": {"type": "string", "const": "circle"},
                                              "r": {"type": "number"}},
             "required": ["kind", "r"], "additionalProperties": false},
            {"type": "object", "properties": {"kind": {"type": "string", "const": "square"},
                                              "side": {"type": "number"}},
             "required": ["kind", "side"], "additionalProperties": false}
        ]}}));
        let strict = openai_strict(&schema).expect("a oneOf of closed objects is strict");
        assert_eq!(strict["properties"]["shape"]["oneOf"], Value::Null);
        assert_eq!(
            strict["properties"]["shape"]["anyOf"][1]["properties"]["kind"],
            json!({"type": "string", "const": "square"})
        );
        let gemini = gemini_parameters(&schema)
            .expect("Gemini expresses a oneOf of objects")
            .expect("the tool has parameters");
        assert_eq!(
            gemini["properties"]["shape"]["anyOf"][0],
            json!({"type": "object",
                   "properties": {"kind": {"type": "string", "format": "enum",
                                           "enum": ["circle"]},
                                  "r": {"type": "number"}},
                   "required": ["kind", "r"]})
        );
    }

    #[test]
    fn gemini_drops_null_from_a_wider_union() {
        let schema = root(json!({"id": {"description": "An id.", "anyOf": [
            {"type": "string"}, {"type": "integer"}, {"type": "null"}]}}));
        let gemini = gemini_parameters(&schema)
            .expect("Gemini expresses a union")
            .expect("the tool has parameters");
        assert_eq!(
            gemini["properties"]["id"],
            json!({"nullable": true, "description": "An id.",
                   "anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
    }

    #[test]
    fn what_each_target_cannot_express() {
        let tuple = root(json!({"pair": {"type": "array", "prefixItems": [
            {"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2}}));
        let all_of = root(json!({"x": {"allOf": [{"type": "string"}, {"minLength": 1}]}}));
        let numbers = root(json!({"level": {"type": "integer", "enum": [1, 2, 3]}}));
        assert_eq!(
            openai_strict(&tuple),
            Err("property `pair` uses a tuple (`prefixItems`)".to_owned())
        );
        assert_eq!(
            openai_strict(&all_of),
            Err("property `x` uses `allOf`".to_owned())
        );
        assert_eq!(
            gemini_parameters(&numbers),
            Err(
                "property `level` has non-string `enum` values; Gemini allows `enum` only on \
                 strings"
                    .to_owned()
            )
        );
        assert_eq!(
            definition(Provider::Gemini, "3d_print", "Prints.", &numbers).map(|d| d.value),
            Err(
                "the name `3d_print` does not start with a letter or `_`, which Vertex AI \
                 requires of a function name"
                    .to_owned()
            )
        );
        // Anthropic strict accepts `allOf` (narrowing each branch) but not the tuple; the
        // integer enum is fine for OpenAI strict.
        assert_eq!(
            anthropic_strict(&all_of),
            Ok(root(json!({"x": {"allOf": [
                {"type": "string"}, {"description": "{minLength: 1}"}]}})))
        );
        assert_eq!(
            anthropic_strict(&tuple),
            Err("property `pair` uses a tuple (`prefixItems`)".to_owned())
        );
        assert_eq!(
            openai_strict(&numbers),
            Ok(json!({"type": "object",
                      "properties": {"level": {"type": "integer", "enum": [1, 2, 3]}},
                      "additionalProperties": false, "required": ["level"]}))
        );
    }

    #[test]
    fn openai_strict_moves_default_and_requires_a_defaulted_field() {
        // `#[serde(default = "five")] n: u32`: not in `required`, with a `default`.
        let schema = json!({"type": "object",
            "properties": {"q": {"type": "string"},
                           "n": {"type": "integer", "minimum": 0, "default": 5,
                                 "description": "How many."}},
            "required": ["q"], "additionalProperties": false});
        assert_eq!(
            openai_strict(&schema),
            Ok(json!({"type": "object",
                "properties": {"q": {"type": "string"},
                               "n": {"type": "integer", "minimum": 0,
                                     "description": "How many.\n\n{default: 5}"}},
                "required": ["q", "n"], "additionalProperties": false}))
        );
    }

    #[test]
    fn anthropic_strict_moves_min_items_above_one_and_writes_one_of_as_any_of() {
        let schema = root(json!({
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "notes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        }));
        assert_eq!(
            anthropic_strict(&schema),
            Ok(root(json!({
                "tags": {"type": "array", "items": {"type": "string"},
                         "description": "{minItems: 2}"},
                "notes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            })))
        );
    }

    #[test]
    fn gemini_moves_exclusive_minimum_and_multiple_of_into_the_description() {
        let schema = root(
            json!({"step": {"type": "number", "description": "Step size.",
            "exclusiveMinimum": 0, "multipleOf": 0.5, "maximum": 10}}),
        );
        assert_eq!(
            gemini_parameters(&schema),
            Ok(Some(json!({"type": "object", "properties": {"step": {
                "type": "number", "maximum": 10,
                "description": "Step size.\n\n{exclusiveMinimum: 0, multipleOf: 0.5}"}}})))
        );
    }
}
