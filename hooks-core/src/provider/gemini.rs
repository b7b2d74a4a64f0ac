//! Gemini: the `functionDeclarations` entry, `functionCall` parts in, `functionResponse` parts
//! out.
//!
//! Documents: "Function calling", the `FunctionDeclaration` and `Schema` references (the entry
//! and its `parameters`), `FunctionCall` and `FunctionResponse` (the parts).
//!
//! The entry: `{"name": …, "description": …, "parameters": …}`, with `parameters` in Gemini's
//! OpenAPI 3.0 subset: one `type` per schema, lowercase (the REST API accepts Google's own
//! lowercase examples), a nullable value as its type plus `nullable: true`; no
//! `additionalProperties`, `$schema`, `$ref`, `const` (written as a one-value `enum`), `oneOf`
//! (written as `anyOf`), `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `if`; `enum` only
//! on strings, with `format: "enum"`; string `format` only `enum` or `date-time` (API error:
//! "only 'enum' and 'date-time' are supported for STRING type"); an object must list properties
//! (API error: "should be non-empty for OBJECT type"), so a tool without parameters has no
//! `parameters`; the name starts with a letter or `_` (Vertex AI). Property order is kept as
//! declared; `propertyOrdering` is not added (the published `parameters` examples do not use
//! it). A keyword that only narrows values is moved into the description; a tool the subset
//! cannot express (a recursive type, a map, a tuple, a non-string `enum`, …) is refused, by
//! name: one bad declaration fails the whole request.
//!
//! Calls and results: [`tool_use`] and [`function_response`]. A host answering a whole
//! candidate uses [`Session::respond_gemini_candidate`](crate::Session::respond_gemini_candidate):
//! it runs nothing when `finishReason` is `MAX_TOKENS` (the bare converters carry no finish
//! reason). Ids: Gemini's `id` is optional; a call without one keeps working, with the id
//! `gemini-{turn}-{i}` (the host's turn number, the call's position among the candidate's
//! calls from 0), so the same candidate retried gets the same ids and is answered from the
//! session's memory; ids must be unique in the candidate.

#[cfg(feature = "gemini")]
use serde_json::json;
use serde_json::{Map, Value};

use super::subset::{ALL_OF, at, inexpressible, is_a_map, join, relocate};
#[cfg(feature = "gemini")]
use super::{ConvertError, Turn, object, optional_string, readable_text, string_field, the_one};
use super::{Definition, Target, ToolSource};
#[cfg(feature = "gemini")]
use crate::content::de::kind_of;
#[cfg(feature = "gemini")]
use crate::content::message::{ToolResult, ToolUse};
use crate::schema::walk::split_null_branches;

/// [`Provider::Gemini`](super::Provider::Gemini).
pub(super) const TARGET: Target = Target {
    name: "gemini",
    strict: false,
    definition,
    request_limits: None,
    cache_control: false,
};

/// `{"name": …, "description": …, "parameters": …}` (no `parameters` for a tool without any).
///
/// # Errors
/// Why the tool cannot be expressed: a name that does not start with a letter or `_`, or a
/// schema outside the subset ([`parameters`]).
fn definition(tool: &ToolSource<'_>, _may_be_strict: bool) -> Result<Definition, String> {
    let ToolSource {
        name,
        description,
        canonical,
        ..
    } = *tool;
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return Err(format!(
            "the name `{name}` does not start with a letter or `_`, which Vertex AI \
             requires of a function name"
        ));
    }
    let mut entry = Map::new();
    entry.insert("name".into(), name.into());
    entry.insert("description".into(), description.into());
    if let Some(schema) = parameters(canonical)? {
        entry.insert("parameters".into(), schema);
    }
    Ok(Definition::plain(Value::Object(entry)))
}

/// `Schema` fields Gemini's `parameters` accepts and this transform keeps as they are.
const KEPT: &[&str] = &[
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
pub(super) fn parameters(canonical: &Value) -> Result<Option<Value>, String> {
    if let Some(Value::Object(props)) = canonical.get("properties")
        && props.is_empty()
    {
        return Ok(None);
    }
    node(canonical, "").map(Some)
}

/// The keywords [`node`] converts itself, or drops (`title`, `$schema`, the definitions a
/// `$ref` would point to, which Gemini's subset has no use for); every other keyword is kept
/// ([`KEPT`]) or moved into the description.
const CONVERTED: &[&str] = &[
    "type",
    "enum",
    "const",
    "format",
    "description",
    "items",
    "properties",
    "required",
    "additionalProperties",
    "anyOf",
    "oneOf",
    "title",
    "$schema",
    "$defs",
    "definitions",
];

/// One node in the subset, its subschemas converted too; `path` names it in a reason. The
/// stages write the node's fields in this order: its type, format and values, whether it is
/// nullable, its description, its subschemas, the rest of its keywords, then the notes (the
/// keywords moved into the description).
fn node(v: &Value, path: &str) -> Result<Value, String> {
    let (v, nullable) = split_null_branches(v, true);
    let map = expressible(&v, path)?;
    let Shape {
        ty,
        values,
        combinator,
    } = Shape::of(map, path)?;
    let mut out = Map::new();
    let mut notes = Map::new();
    if let Some(t) = ty {
        out.insert("type".into(), Value::String(t.to_owned()));
    }
    convert_format(
        map.get("format"),
        ty,
        values.is_some(),
        &mut out,
        &mut notes,
    );
    if let Some(vals) = values {
        out.insert("enum".into(), Value::Array(vals));
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    if let Some(d) = map.get("description") {
        out.insert("description".into(), d.clone());
    }
    convert_children(map, ty, combinator, path, &mut out)?;
    keep_or_note(map, &mut out, &mut notes);
    add_notes(&mut out, notes);
    Ok(Value::Object(out))
}

/// A node's keywords, when the subset can express the node at all: it is a JSON object (a
/// schema that is not one accepts any value), with no `$ref` (a recursive type), and none of
/// the keywords the subsets cannot express ([`inexpressible`], and `allOf` for Gemini).
fn expressible<'v>(v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, String> {
    let Value::Object(map) = v else {
        return Err(format!("{} accepts any JSON value", at(path)));
    };
    if map.contains_key("$ref") {
        return Err(format!(
            "{} is a recursive type (`$ref`), which Gemini's `parameters` (an OpenAPI 3.0 \
             subset without `$ref`) cannot express",
            at(path)
        ));
    }
    match inexpressible(map, path, ALL_OF) {
        Some(reason) => Err(reason),
        None => Ok(map),
    }
}

/// What a node's values are, in Gemini's terms.
struct Shape<'m> {
    /// Its one `type`; `string` for a node that has only `enum` (or `const`) values.
    ty: Option<&'m str>,
    /// Its `enum` values, strings only; a `const` is written as a one-value `enum`.
    values: Option<Vec<Value>>,
    /// Its `anyOf`, or its `oneOf` (which Gemini's subset writes as `anyOf`).
    combinator: Option<&'m Value>,
}

impl<'m> Shape<'m> {
    /// The shape of the node `map`.
    ///
    /// # Errors
    /// A node that can only be null, has several types, has non-string values, or has
    /// neither a type nor alternatives.
    fn of(map: &'m Map<String, Value>, path: &str) -> Result<Shape<'m>, String> {
        let ty = one_type(map, path)?;
        let values = enum_values(map, path)?;
        let ty = match (ty, &values) {
            (None, Some(_)) => Some("string"),
            (ty, _) => ty,
        };
        let combinator = map.get("anyOf").or_else(|| map.get("oneOf"));
        if ty.is_none() && combinator.is_none() {
            return Err(format!("{} has no `type`", at(path)));
        }
        Ok(Shape {
            ty,
            values,
            combinator,
        })
    }
}

/// A node's `type`, which Gemini wants one of per schema, and not `null` alone (a nullable
/// value is its type plus `nullable: true`).
fn one_type<'m>(map: &'m Map<String, Value>, path: &str) -> Result<Option<&'m str>, String> {
    match map.get("type") {
        None => Ok(None),
        Some(Value::String(t)) if t == "null" => Err(format!("{} can only be null", at(path))),
        Some(Value::String(t)) => Ok(Some(t)),
        Some(other) => Err(format!(
            "{} has several types ({other}); Gemini allows one `type` per schema",
            at(path)
        )),
    }
}

/// A node's allowed values: its `const` as one value, else its `enum`; Gemini allows them
/// only on strings.
fn enum_values(map: &Map<String, Value>, path: &str) -> Result<Option<Vec<Value>>, String> {
    let values = match (map.get("const"), map.get("enum")) {
        (Some(c), _) => vec![c.clone()],
        (None, Some(Value::Array(vals))) => vals.clone(),
        (None, _) => return Ok(None),
    };
    if !values.iter().all(Value::is_string) {
        return Err(format!(
            "{} has non-string `enum` values; Gemini allows `enum` only on strings",
            at(path)
        ));
    }
    Ok(Some(values))
}

/// `format`: `enum` for a string with values (how Gemini marks an `enum`); a format Gemini
/// accepts for the type (`date-time`, `float`, `double`, `int32`, `int64`) kept; any other
/// noted for the description (the API refuses it).
fn convert_format(
    format: Option<&Value>,
    ty: Option<&str>,
    has_values: bool,
    out: &mut Map<String, Value>,
    notes: &mut Map<String, Value>,
) {
    match (format, ty, has_values) {
        (_, Some("string"), true) => {
            out.insert("format".into(), "enum".into());
        }
        (Some(Value::String(f)), Some(t), false)
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
}

/// A node's subschemas, each converted: `items`, an object's properties
/// ([`convert_properties`]), and the alternatives (`anyOf`, or `oneOf` written as `anyOf`).
fn convert_children(
    map: &Map<String, Value>,
    ty: Option<&str>,
    combinator: Option<&Value>,
    path: &str,
    out: &mut Map<String, Value>,
) -> Result<(), String> {
    if let Some(items) = map.get("items") {
        out.insert("items".into(), node(items, &format!("{path}[]"))?);
    }
    if ty == Some("object") || map.contains_key("properties") {
        convert_properties(map, path, out)?;
    }
    if let Some(Value::Array(branches)) = combinator {
        let converted = branches
            .iter()
            .map(|b| node(b, path))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("anyOf".into(), Value::Array(converted));
    }
    Ok(())
}

/// An object's `properties`, each converted, and its `required` as given. Refused: a map
/// (`additionalProperties` a schema), and an object without declared properties (the API
/// wants them non-empty).
fn convert_properties(
    map: &Map<String, Value>,
    path: &str,
    out: &mut Map<String, Value>,
) -> Result<(), String> {
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
        converted.insert(name.clone(), node(p, &join(path, name))?);
    }
    out.insert("properties".into(), Value::Object(converted));
    if let Some(required) = map.get("required") {
        out.insert("required".into(), required.clone());
    }
    Ok(())
}

/// Every keyword of a node that is not [`CONVERTED`], in the node's order: kept as it is
/// when Gemini accepts it ([`KEPT`]), else noted for the description.
fn keep_or_note(
    map: &Map<String, Value>,
    out: &mut Map<String, Value>,
    notes: &mut Map<String, Value>,
) {
    for (k, val) in map {
        if CONVERTED.contains(&k.as_str()) {
            continue;
        }
        if KEPT.contains(&k.as_str()) {
            out.insert(k.clone(), val.clone());
        } else {
            notes.insert(k.clone(), val.clone());
        }
    }
}

/// The notes (the keywords Gemini's subset has no field for, such as those that only narrow
/// values) moved into the node's description ([`relocate`]), so the model still reads them.
fn add_notes(out: &mut Map<String, Value>, notes: Map<String, Value>) {
    if notes.is_empty() {
        return;
    }
    let keys: Vec<String> = notes.keys().cloned().collect();
    out.extend(notes);
    relocate(out, &keys);
}

// ---- calls in, results out ----

#[cfg(feature = "gemini")]
const WHAT: &str = "a Gemini functionCall";

#[cfg(feature = "gemini")]
/// The `FunctionCall` of a content part, or the value itself (a bare `FunctionCall`).
fn call_of(part: &Value) -> &Value {
    part.get("functionCall").unwrap_or(part)
}

#[cfg(feature = "gemini")]
/// A `functionCall` as a [`ToolUse`].
///
/// In: a content part `{"functionCall": {"name": "get_weather", "args": {…}, "id": "…"}}` or
/// the bare `FunctionCall`. `args` is already an object (not a string, unlike OpenAI); an
/// absent `args` means `{}`. Gemini's `id` is optional and often absent: the `ToolUse` id is
/// then `fallback_id` (choose one unique within the session, e.g. `"gemini-3-0"` for turn 3,
/// part 0), used for the audit line; [`function_response`] echoes only an id Gemini gave.
///
/// # Errors
/// [`ConvertError`] when the call is not an object, or `name` is missing or not a string,
/// or `id` is neither absent nor a string.
pub fn tool_use(part: &Value, fallback_id: impl Into<String>) -> Result<ToolUse, ConvertError> {
    let obj = object(call_of(part), WHAT)?;
    let name = string_field(obj, "name", WHAT)?;
    let id = match obj.get("id") {
        None | Some(Value::Null) => fallback_id.into(),
        Some(Value::String(s)) if s.is_empty() => fallback_id.into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(ConvertError::new(
                WHAT,
                format!("`id` must be a string, found {}", kind_of(other)),
            ));
        }
    };
    let input = obj.get("args").cloned().unwrap_or(Value::Null);
    Ok(ToolUse::new(id, name, input))
}

#[cfg(feature = "gemini")]
/// A whole candidate (or a `GenerateContentResponse` with one candidate), for
/// [`Session::respond_gemini_candidate`](crate::Session::respond_gemini_candidate): the
/// `functionCall` parts of `content.parts`, in order, a call without an id getting
/// `gemini-{turn}-{i}` (`i`: its position among the candidate's calls, from 0); its
/// `finishReason`, and whether that is `MAX_TOKENS`.
pub(crate) fn candidate_turn(candidate: &Value, turn: usize) -> Result<Turn<'_>, ConvertError> {
    const CANDIDATE: &str = "a Gemini candidate";
    let obj = object(the_one(candidate, "candidates", CANDIDATE)?, CANDIDATE)?;
    let parts: &[Value] = match obj.get("content").and_then(|c| c.get("parts")) {
        None | Some(Value::Null) => &[],
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(ConvertError::new(
                CANDIDATE,
                format!("`content.parts` must be an array, found {}", kind_of(other)),
            ));
        }
    };
    let items: Vec<&Value> = parts
        .iter()
        .filter(|p| p.get("functionCall").is_some())
        .collect();
    let uses = items
        .iter()
        .enumerate()
        .map(|(i, p)| tool_use(p, format!("gemini-{turn}-{i}")))
        .collect::<Result<Vec<_>, _>>()?;
    let stop_reason = optional_string(obj, "finishReason", CANDIDATE)?;
    let truncated = (stop_reason.as_deref() == Some("MAX_TOKENS"))
        .then(|| "finishReason: \"MAX_TOKENS\"".to_owned());
    Ok(Turn {
        id: Some(std::borrow::Cow::Owned(format!("gemini-{turn}"))),
        uses,
        items,
        stop_reason,
        truncated,
    })
}

#[cfg(feature = "gemini")]
/// The `functionResponse` part that answers `function_call` (the part or `FunctionCall`
/// the model sent): `{"functionResponse": {"id": "…", "name": "get_weather", "response":
/// {"output": "19°C, sunny"}}}`, or `{"error": "…"}` inside `response` for a failed result
/// (`FunctionResponse.response`: "Use "output" key to specify function output and "error"
/// key to specify error details"). `name` is the call's; `id` is there only when the call
/// had one. A call without a string `name` (one [`tool_use`] refuses, so the host should not
/// be answering it) gets `"name": ""`, and a non-string `name` is echoed as given: this
/// function never fails. The text is the content as is (`BLOCKED: …` stays); a result of
/// content blocks is its texts joined with `\n`, an image or a PDF replaced by a note naming it
/// (Gemini 3's `functionResponse.parts` are not sent; see [`provider`](super)).
pub fn function_response(function_call: &Value, result: &ToolResult) -> Value {
    let call = call_of(function_call);
    let mut response = Map::new();
    if let Some(id @ Value::String(s)) = call.get("id")
        && !s.is_empty()
    {
        response.insert("id".into(), id.clone());
    }
    let name = call.get("name").cloned().unwrap_or_else(|| json!(""));
    response.insert("name".into(), name);
    let key = if result.is_error { "error" } else { "output" };
    response.insert("response".into(), json!({ key: readable_text(result) }));
    json!({ "functionResponse": response })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root(props: Value) -> Value {
        json!({"type": "object", "properties": props, "additionalProperties": false})
    }

    #[test]
    fn gemini_drops_null_from_a_wider_union() {
        let schema = root(json!({"id": {"description": "An id.", "anyOf": [
            {"type": "string"}, {"type": "integer"}, {"type": "null"}]}}));
        let gemini = parameters(&schema)
            .expect("Gemini expresses a union")
            .expect("the tool has parameters");
        assert_eq!(
            gemini["properties"]["id"],
            json!({"nullable": true, "description": "An id.",
                   "anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
    }

    #[test]
    fn gemini_moves_exclusive_minimum_and_multiple_of_into_the_description() {
        let schema = root(
            json!({"step": {"type": "number", "description": "Step size.",
            "exclusiveMinimum": 0, "multipleOf": 0.5, "maximum": 10}}),
        );
        assert_eq!(
            parameters(&schema),
            Ok(Some(json!({"type": "object", "properties": {"step": {
                "type": "number", "maximum": 10,
                "description": "Step size.\n\n{exclusiveMinimum: 0, multipleOf: 0.5}"}}})))
        );
    }

    #[test]
    #[cfg(feature = "gemini")]
    fn a_gemini_call_without_a_name_is_answered_with_an_empty_name() {
        let result = ToolResult::text("gemini-0-0", "19°C, sunny");
        assert_eq!(
            function_response(&json!({"functionCall": {"args": {}}}), &result),
            json!({"functionResponse": {"name": "", "response": {"output": "19°C, sunny"}}})
        );
    }
}
