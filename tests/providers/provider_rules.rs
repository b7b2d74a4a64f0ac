//! A validator of tool definitions, one [`Rule`] per requirement of the providers' own documents
//! (Anthropic's Messages API, "Define tools" and "Strict tool use"; OpenAI's "Function calling" and
//! "Structured Outputs"; Gemini's "Function calling", `FunctionDeclaration` and `Schema`; MCP's
//! `tools/list`), of toolgate's own schema rules (ARCHITECTURE.md, "Contracts": "Schemas"), and of
//! two API errors the Gemini rules quote. It is written from those texts, not from toolgate's
//! transforms, and proven in `providers.rs` (`proven!`, one test per rule, and
//! `every_rule_has_a_breaking_case`): at least one breaking schema per rule.

use serde_json::{Map, Value};

/// The format a definition is checked as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Anthropic `tools` entry; strict rules apply when it says `strict: true`.
    Anthropic,
    /// OpenAI Chat Completions `tools` entry.
    OpenAiChat,
    /// OpenAI Responses `tools` entry.
    OpenAiResponses,
    /// Gemini `functionDeclarations` entry.
    Gemini,
    /// MCP `tools/list` entry.
    Mcp,
}

/// Defines [`Rule`] and [`ALL_RULES`] from one list, so that `ALL_RULES` cannot miss a variant.
macro_rules! rules {
    ($($(#[$doc:meta])* $rule:ident,)*) => {
        /// One requirement. The doc comment of each says where it comes from.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Rule {
            $($(#[$doc])* $rule,)*
        }

        /// Every rule, in declaration order, for the proof that each one is exercised.
        pub(crate) const ALL_RULES: &[Rule] = &[$(Rule::$rule,)*];
    };
}

rules! {
    // ---- Anthropic (Messages API, "Define tools"; ARCHITECTURE.md, "Contracts": "Schemas") ----
    /// `{name, description, input_schema}`, optional `strict`, `input_examples`,
    /// `cache_control`; nothing else.
    AnthropicShape,
    /// Names `^[a-zA-Z0-9_-]{1,64}$` (Anthropic; OpenAI: letters, digits, `_`, `-`, at most 64).
    ToolName,
    /// The schema's root is `"type": "object"` (Anthropic `input_schema`, OpenAI strict, MCP
    /// `inputSchema`, Gemini `parameters`).
    RootObject,
    /// No top-level `oneOf`/`anyOf`/`allOf` in `input_schema` (Anthropic).
    RootCombinator,
    /// No `$schema` (ARCHITECTURE.md, "Contracts": "Schemas").
    NoSchemaKeyword,
    /// No root `title` (ARCHITECTURE.md, "Contracts": "Schemas").
    NoRootTitle,
    /// No `$ref` but for recursion: every `$ref` points into `$defs` at a schema that reaches
    /// itself (ARCHITECTURE.md, "Contracts": "Schemas").
    RefOnlyForRecursion,
    /// No `format` like `uint32` (ARCHITECTURE.md, "Contracts": "Schemas").
    NoNumericFormat,
    /// No type arrays (ARCHITECTURE.md, "Contracts": "Schemas").
    NoTypeArray,
    /// `additionalProperties: false` on every object with properties (ARCHITECTURE.md, "Contracts":
    /// "Schemas"; the golden tools do not opt out).
    ClosedObjects,

    // ---- Anthropic strict (Messages API, "Strict tool use") ----
    /// `additionalProperties: false` on every object, maps included.
    StrictEveryObjectClosed,
    /// No numeric or length bounds.
    StrictNoBounds,
    /// No recursion.
    StrictNoRecursion,
    /// `minItems` only 0 or 1.
    StrictMinItems,
    /// String `format` from the short fixed list.
    StrictFormat,

    // ---- OpenAI ("Function calling", "Structured Outputs") ----
    /// Chat: `{type: "function", function: {name, description, parameters, strict}}`;
    /// Responses: `{type: "function", name, description, parameters, strict}`; `strict` sent
    /// explicitly as a boolean.
    OpenAiShape,
    /// Strict: `additionalProperties: false` on every object.
    OpenAiClosed,
    /// Strict: every property in `required`.
    OpenAiAllRequired,
    /// Strict: no `oneOf`, `allOf`, `not`, `if`/`then`/`else`.
    OpenAiNoComposition,
    /// Strict: at most 10 levels of (object) nesting.
    OpenAiNesting,
    /// Strict: no `default` (API: "'default' is not permitted").
    OpenAiNoDefault,
    /// Strict: `$defs` and recursion allowed, so every `$ref` must resolve inside the schema.
    OpenAiRefResolves,

    // ---- Gemini ("Function calling", `FunctionDeclaration`, `Schema`) ----
    /// `{name, description, parameters}` (or `parametersJsonSchema`, not both).
    GeminiShape,
    /// Letters, digits, `_ : . -`, at most 64, starting with a letter or `_` (Vertex).
    GeminiName,
    /// One `type` per schema (a single string, not `null`: `nullable: true` instead); a schema
    /// without `type` is only an `anyOf`.
    GeminiOneType,
    /// Rejected: `additionalProperties`, `$schema`, `$ref`, `const`, `oneOf`,
    /// `exclusiveMinimum`/`exclusiveMaximum`, `multipleOf`, `if`.
    GeminiRejectedKeyword,
    /// Only `Schema` fields (the API rejects unknown names such as `uniqueItems`, `$defs`).
    GeminiSchemaField,
    /// An object lists at least one property (API error: "should be non-empty for OBJECT type").
    GeminiObjectProperties,
    /// String `format` only `enum` or `date-time` (API error: "only 'enum' and 'date-time' are
    /// supported for STRING type").
    GeminiStringFormat,

    // ---- MCP (spec: `tools/list`) ----
    /// `{name, description, inputSchema}` (optional `title`, `outputSchema`, `annotations`).
    McpShape,
}

/// A broken rule and where (a JSON pointer-like path into the definition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) rule: Rule,
    pub(crate) at: String,
}

/// Every violation of `definition` as a `target` entry.
pub(crate) fn check(target: Target, definition: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(entry) = definition.as_object() else {
        let rule = match target {
            Target::Anthropic => Rule::AnthropicShape,
            Target::OpenAiChat | Target::OpenAiResponses => Rule::OpenAiShape,
            Target::Gemini => Rule::GeminiShape,
            Target::Mcp => Rule::McpShape,
        };
        out.push(Violation {
            rule,
            at: String::new(),
        });
        return out;
    };
    match target {
        Target::Anthropic => anthropic(entry, &mut out),
        Target::OpenAiChat | Target::OpenAiResponses => openai(target, entry, &mut out),
        Target::Gemini => gemini(entry, &mut out),
        Target::Mcp => mcp(entry, &mut out),
    }
    out
}

fn push(out: &mut Vec<Violation>, rule: Rule, at: &str) {
    out.push(Violation {
        rule,
        at: at.to_owned(),
    });
}

fn keys_within(entry: &Map<String, Value>, allowed: &[&str]) -> bool {
    entry.keys().all(|k| allowed.contains(&k.as_str()))
}

fn anthropic_name(name: Option<&Value>) -> bool {
    name.and_then(Value::as_str).is_some_and(|n| {
        (1..=64).contains(&n.len())
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

// ---------------------------------------------------------------- Anthropic

fn anthropic(entry: &Map<String, Value>, out: &mut Vec<Violation>) {
    let shape_ok = keys_within(
        entry,
        &[
            "name",
            "description",
            "input_schema",
            "strict",
            "input_examples",
            "cache_control",
        ],
    ) && entry.get("description").is_some_and(Value::is_string)
        && entry.get("input_schema").is_some_and(Value::is_object)
        && entry.get("strict").is_none_or(Value::is_boolean);
    if !shape_ok {
        push(out, Rule::AnthropicShape, "");
    }
    if !anthropic_name(entry.get("name")) {
        push(out, Rule::ToolName, "/name");
    }
    let Some(schema) = entry.get("input_schema") else {
        return;
    };
    anthropic_schema(schema, "/input_schema", out);
    if entry.get("strict") == Some(&Value::Bool(true)) {
        anthropic_strict(schema, "/input_schema", out);
    }
}

/// The schema rules Anthropic's default `input_schema` and MCP's `inputSchema` share.
fn anthropic_schema(schema: &Value, at: &str, out: &mut Vec<Violation>) {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        push(out, Rule::RootObject, at);
    }
    if ["oneOf", "anyOf", "allOf"]
        .iter()
        .any(|k| schema.get(*k).is_some())
    {
        push(out, Rule::RootCombinator, at);
    }
    if schema.get("title").is_some() {
        push(out, Rule::NoRootTitle, at);
    }
    let recursive = recursive_defs(schema);
    walk(schema, at, &mut |node, path| {
        let Some(map) = node.as_object() else { return };
        if map.contains_key("$schema") {
            push(out, Rule::NoSchemaKeyword, path);
        }
        if let Some(r) = map.get("$ref") {
            let ok = r
                .as_str()
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .is_some_and(|name| recursive.iter().any(|d| d == name));
            if !ok {
                push(out, Rule::RefOnlyForRecursion, path);
            }
        }
        if let Some(Value::String(f)) = map.get("format")
            && is_numeric_format(f)
        {
            push(out, Rule::NoNumericFormat, path);
        }
        if map.get("type").is_some_and(Value::is_array) {
            push(out, Rule::NoTypeArray, path);
        }
        if map.contains_key("properties")
            && map.get("additionalProperties") != Some(&Value::Bool(false))
        {
            push(out, Rule::ClosedObjects, path);
        }
    });
}

fn is_numeric_format(f: &str) -> bool {
    let digits = f.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let prefix = &f[..f.len() - digits.len()];
    matches!(prefix, "int" | "uint" | "float" | "double")
        && digits.bytes().all(|b| b.is_ascii_digit())
}

const ANTHROPIC_STRICT_FORMATS: &[&str] = &[
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

fn anthropic_strict(schema: &Value, at: &str, out: &mut Vec<Violation>) {
    if !recursive_defs(schema).is_empty() {
        push(out, Rule::StrictNoRecursion, at);
    }
    walk(schema, at, &mut |node, path| {
        let Some(map) = node.as_object() else { return };
        let object = map.get("type").and_then(Value::as_str) == Some("object")
            || map.contains_key("properties");
        if object && map.get("additionalProperties") != Some(&Value::Bool(false)) {
            push(out, Rule::StrictEveryObjectClosed, path);
        }
        if [
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "maxItems",
        ]
        .iter()
        .any(|k| map.contains_key(*k))
        {
            push(out, Rule::StrictNoBounds, path);
        }
        if let Some(n) = map.get("minItems")
            && !(n == 0 || n == 1)
        {
            push(out, Rule::StrictMinItems, path);
        }
        if let Some(f) = map.get("format")
            && !f
                .as_str()
                .is_some_and(|f| ANTHROPIC_STRICT_FORMATS.contains(&f))
        {
            push(out, Rule::StrictFormat, path);
        }
    });
}

// ---------------------------------------------------------------- OpenAI

fn openai(target: Target, entry: &Map<String, Value>, out: &mut Vec<Violation>) {
    let function = if target == Target::OpenAiChat {
        let ok = keys_within(entry, &["type", "function"])
            && entry.get("type") == Some(&Value::String("function".into()));
        match entry.get("function").and_then(Value::as_object) {
            Some(f) if ok => Some(f),
            _ => {
                push(out, Rule::OpenAiShape, "");
                entry.get("function").and_then(Value::as_object)
            }
        }
    } else {
        if entry.get("type") != Some(&Value::String("function".into())) {
            push(out, Rule::OpenAiShape, "/type");
        }
        Some(entry)
    };
    let Some(function) = function else { return };
    let base = if target == Target::OpenAiChat {
        "/function"
    } else {
        ""
    };
    let mut allowed = vec!["name", "description", "parameters", "strict"];
    if target == Target::OpenAiResponses {
        allowed.push("type");
    }
    let shape_ok = keys_within(function, &allowed)
        && function.get("description").is_some_and(Value::is_string)
        && function.get("parameters").is_some_and(Value::is_object)
        && function.get("strict").is_some_and(Value::is_boolean);
    if !shape_ok {
        push(out, Rule::OpenAiShape, base);
    }
    if !anthropic_name(function.get("name")) {
        push(out, Rule::ToolName, &format!("{base}/name"));
    }
    if function.get("strict") != Some(&Value::Bool(true)) {
        return;
    }
    let Some(schema) = function.get("parameters") else {
        return;
    };
    let at = format!("{base}/parameters");
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        push(out, Rule::RootObject, &at);
    }
    walk(schema, &at, &mut |node, path| {
        let Some(map) = node.as_object() else { return };
        let object = type_includes(map, "object") || map.contains_key("properties");
        if object && map.get("additionalProperties") != Some(&Value::Bool(false)) {
            push(out, Rule::OpenAiClosed, path);
        }
        if let Some(Value::Object(props)) = map.get("properties") {
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if props.keys().any(|k| !required.contains(&k.as_str())) {
                push(out, Rule::OpenAiAllRequired, path);
            }
        }
        if ["oneOf", "allOf", "not", "if", "then", "else"]
            .iter()
            .any(|k| map.contains_key(*k))
        {
            push(out, Rule::OpenAiNoComposition, path);
        }
        if map.contains_key("default") {
            push(out, Rule::OpenAiNoDefault, path);
        }
        if let Some(r) = map.get("$ref")
            && r.as_str().is_none_or(|r| resolve(schema, r).is_none())
        {
            push(out, Rule::OpenAiRefResolves, path);
        }
    });
    if object_depth(schema) > 10 {
        push(out, Rule::OpenAiNesting, &at);
    }
}

fn type_includes(map: &Map<String, Value>, ty: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

/// The deepest chain of object schemas (the root object counts 1), not following `$ref`.
fn object_depth(v: &Value) -> usize {
    let Some(map) = v.as_object() else { return 0 };
    let here = usize::from(type_includes(map, "object") || map.contains_key("properties"));
    let mut deepest = 0;
    for_each_child(map, &mut |child, _| {
        deepest = deepest.max(object_depth(child));
    });
    here + deepest
}

/// Resolves a local `$ref` (`#`, `#/$defs/Node`) against the root.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

// ---------------------------------------------------------------- Gemini

/// The fields of Gemini's `Schema` (ai.google.dev/api/caching#Schema).
const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

const GEMINI_REJECTED: &[&str] = &[
    "additionalProperties",
    "$schema",
    "$ref",
    "const",
    "oneOf",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "if",
];

const GEMINI_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "array", "object", "STRING", "NUMBER", "INTEGER",
    "BOOLEAN", "ARRAY", "OBJECT",
];

fn gemini(entry: &Map<String, Value>, out: &mut Vec<Violation>) {
    let both = entry.contains_key("parameters") && entry.contains_key("parametersJsonSchema");
    let shape_ok = keys_within(
        entry,
        &[
            "name",
            "description",
            "parameters",
            "parametersJsonSchema",
            "response",
            "responseJsonSchema",
            "behavior",
        ],
    ) && entry.get("description").is_some_and(Value::is_string)
        && !both;
    if !shape_ok {
        push(out, Rule::GeminiShape, "");
    }
    let name_ok = entry.get("name").and_then(Value::as_str).is_some_and(|n| {
        (1..=64).contains(&n.len())
            && n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'.' | b'-'))
    });
    if !name_ok {
        push(out, Rule::GeminiName, "/name");
    }
    let Some(schema) = entry.get("parameters") else {
        return;
    };
    if !schema
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("object"))
    {
        push(out, Rule::RootObject, "/parameters");
    }
    walk(schema, "/parameters", &mut |node, path| {
        let Some(map) = node.as_object() else {
            push(out, Rule::GeminiOneType, path);
            return;
        };
        match map.get("type") {
            Some(Value::String(t)) if GEMINI_TYPES.contains(&t.as_str()) => {}
            None if map.contains_key("anyOf") => {}
            _ => push(out, Rule::GeminiOneType, path),
        }
        for key in map.keys() {
            if GEMINI_REJECTED.contains(&key.as_str()) {
                push(out, Rule::GeminiRejectedKeyword, &format!("{path}/{key}"));
            } else if !GEMINI_FIELDS.contains(&key.as_str()) {
                push(out, Rule::GeminiSchemaField, &format!("{path}/{key}"));
            }
        }
        let ty = map.get("type").and_then(Value::as_str).unwrap_or_default();
        if ty.eq_ignore_ascii_case("object")
            && map
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(|p| p.is_empty())
        {
            push(out, Rule::GeminiObjectProperties, path);
        }
        if ty.eq_ignore_ascii_case("string")
            && let Some(f) = map.get("format")
            && !(f == "enum" || f == "date-time")
        {
            push(out, Rule::GeminiStringFormat, path);
        }
    });
}

// ---------------------------------------------------------------- MCP

fn mcp(entry: &Map<String, Value>, out: &mut Vec<Violation>) {
    let shape_ok = keys_within(
        entry,
        &[
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ],
    ) && entry.get("name").is_some_and(Value::is_string)
        && entry.get("description").is_some_and(Value::is_string)
        && entry.get("inputSchema").is_some_and(Value::is_object);
    if !shape_ok {
        push(out, Rule::McpShape, "");
    }
    if let Some(schema) = entry.get("inputSchema")
        && schema.get("type").and_then(Value::as_str) != Some("object")
    {
        push(out, Rule::RootObject, "/inputSchema");
    }
}

// ---------------------------------------------------------------- walking

/// Calls `f` on every schema object nested in `map` (properties, items, combinators, `$defs`,
/// …) with its path.
fn for_each_child(map: &Map<String, Value>, f: &mut dyn FnMut(&Value, String)) {
    for key in [
        "properties",
        "$defs",
        "definitions",
        "patternProperties",
        "dependentSchemas",
    ] {
        if let Some(Value::Object(children)) = map.get(key) {
            for (name, child) in children {
                f(child, format!("/{key}/{name}"));
            }
        }
    }
    for key in [
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
    ] {
        if let Some(child @ Value::Object(_)) = map.get(key) {
            f(child, format!("/{key}"));
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get(key) {
            for (i, child) in children.iter().enumerate() {
                f(child, format!("/{key}/{i}"));
            }
        }
    }
}

/// Calls `f` on `v` and every schema nested in it, depth first.
fn walk(v: &Value, at: &str, f: &mut dyn FnMut(&Value, &str)) {
    f(v, at);
    if let Some(map) = v.as_object() {
        for_each_child(map, &mut |child, rel| walk(child, &format!("{at}{rel}"), f));
    }
}

/// The names of the `$defs` entries that reach themselves through `$ref`.
fn recursive_defs(root: &Value) -> Vec<String> {
    let Some(Value::Object(defs)) = root.get("$defs") else {
        return Vec::new();
    };
    let refs_of = |v: &Value| {
        let mut names = Vec::new();
        walk(v, "", &mut |node, _| {
            if let Some(r) = node.get("$ref").and_then(Value::as_str)
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                names.push(name.to_owned());
            }
        });
        names
    };
    defs.iter()
        .filter(|(name, def)| {
            let mut seen: Vec<String> = Vec::new();
            let mut todo = refs_of(def);
            while let Some(next) = todo.pop() {
                if next == **name {
                    return true;
                }
                if seen.contains(&next) {
                    continue;
                }
                if let Some(d) = defs.get(&next) {
                    todo.extend(refs_of(d));
                }
                seen.push(next);
            }
            false
        })
        .map(|(name, _)| name.clone())
        .collect()
}
