//! Tool schemas: one canonical JSON Schema per tool, built once when the dispatcher is built,
//! then one transform per target.
//!
//! `generate` asks schemars (draft 2020-12, subschemas inlined, no `$schema`) for the argument
//! type's schema. [`canonicalize`] turns that into the canonical form every target starts from:
//! - no `$schema`, no `title` anywhere (titles name generated Rust structs), no root
//!   `description` (a `#[input]` struct's doc is about the Rust type; the tool's description is
//!   the function's);
//! - an optional or nullable value is always `{"anyOf": [X, {"type": "null"}]}` (schemars writes
//!   `type: [T, "null"]` and puts `null` in `enum`), with its description on the outside;
//! - a unit enum whose variants have doc comments (`oneOf` of `const`s) is a plain `enum`, the
//!   variants' docs appended to the description;
//! - integer and number `format`s (`uint32`, `int64`, `double`) are dropped; `minimum: 0` stays
//!   for unsigned integers;
//! - an object that merges alternatives into its own properties (a *merged object*: one with
//!   `properties` and an `anyOf`/`oneOf`, or an object with an `allOf`, which is what schemars
//!   writes for a `#[serde(flatten)]` enum, tagged any way or untagged, and for a struct that is
//!   only such a field) lists every property its alternatives name among its own properties
//!   (*hoisted*: a name several alternatives give different schemas gets their `anyOf`, or one
//!   string `enum` for tag `const`s), and requires the fields every alternative requires; its
//!   alternatives stay, as an `anyOf` (serde takes the first variant key it finds, so "exactly
//!   one" is more than it checks), and check the rest (which fields go together). An `anyOf` with
//!   an alternative that accepts anything (a flattened `Option` of an enum: `{}`) is dropped; a
//!   documented unit variant, which schemars writes as a string `const` alternative that never
//!   matches an object, is written as the key it is (`{"Unit": null}`);
//! - every object with `properties` says `additionalProperties: false` unless the tool opted
//!   out, except the alternatives of a merged object (the merged object is closed for them: it
//!   lists their properties) and an object with `patternProperties`. The dispatcher then rejects
//!   unknown fields in such objects wherever the schema reaches them: through properties, array
//!   items, map values (`HashMap<String, T>`) and the branches of an `anyOf`/`oneOf` (an enum
//!   with data: refused only when no branch accepts the input). It does not look past a `$ref`
//!   (a recursive type is checked down to its first `$ref`);
//! - `$ref`/`$defs` remain only for recursive types.
//!
//! - descriptions are unwrapped ([`unwrap_doc`]): a doc comment wrapped at 100 columns reads as
//!   one paragraph.
//!
//! So every input the argument type's `Deserialize` reads from a serialized value passes the
//! unknown-field check, and satisfies the canonical schema (the differential test in
//! `tests/schemas/differential.rs` checks both, with a real JSON Schema validator). The same
//! closing (`closed_form` of the raw schema) gives the *validation schema* the input walk
//! (`explain/`) explains a refused input against.
//!
//! Property order is declaration order: schemars' `preserve_order` feature is on, which also
//! turns `serde_json::Map` into an insertion-ordered map for every crate in the build.
//!
//! The Anthropic `input_schema` ([`anthropic_input_schema`]) is the canonical form without a root
//! `anyOf`/`oneOf`/`allOf` (Anthropic refuses one: "input_schema does not support oneOf, allOf, or
//! anyOf at the top level"; a merged root's properties already list every field). Every target's
//! transform is in its provider's file under [`crate::provider`]. Walking subschemas (and splitting
//! the nullable `anyOf`) is in `walk.rs`, shared by this module, the unknown-field check and the
//! transforms; the meta-schema check of a schema toolgate did not derive is in `meta.rs`.

pub(crate) mod check;
pub(crate) mod explain;
#[cfg(feature = "full-validation")]
pub(crate) mod full;
pub(crate) mod meta;
pub(crate) mod walk;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use walk::{for_each_subschema_mut, split_nullable};

/// The schema of `A` as schemars writes it (draft 2020-12, inlined, no `$schema`).
pub(crate) fn generate<A: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    settings
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value()
}

/// The canonical form of a raw schemars schema (see the module docs). `closed` adds
/// `additionalProperties: false` to every object that has `properties` (but the alternatives of
/// a merged object, and an object with `patternProperties`). Never fails: a keyword it does not
/// know is kept as it is.
///
/// Source of the rules it serves: Anthropic's tool-use docs ("Define tools": `input_schema` is
/// a JSON Schema object with `"type": "object"` at the root); the nullable `anyOf` form is the
/// one every target's transform starts from ([`crate::provider`]).
///
/// ```
/// use serde_json::json;
/// use toolgate_core::provider::canonicalize;
///
/// let raw = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "title": "Args",
///     "type": "object",
///     "properties": {
///         "unit": {"description": "The unit", "type": ["string", "null"],
///                  "enum": ["celsius", "fahrenheit", null]},
///         "n": {"type": "integer", "format": "uint32", "minimum": 0}
///     }
/// });
/// assert_eq!(canonicalize(&raw, true), json!({
///     "type": "object",
///     "properties": {
///         "unit": {"description": "The unit", "anyOf": [
///             {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]},
///         "n": {"type": "integer", "minimum": 0}
///     },
///     "additionalProperties": false
/// }));
///
/// // `struct Args { q: String, #[serde(flatten)] mode: Mode }` with
/// // `#[serde(tag = "kind")] enum Mode { Exact { id: u32 }, Fuzzy { text: String } }`:
/// let flattened = json!({
///     "type": "object",
///     "properties": {"q": {"type": "string"}},
///     "required": ["q"],
///     "oneOf": [
///         {"type": "object", "properties": {"kind": {"type": "string", "const": "Exact"},
///                                           "id": {"type": "integer", "format": "uint32",
///                                                  "minimum": 0}},
///          "required": ["kind", "id"]},
///         {"type": "object", "properties": {"kind": {"type": "string", "const": "Fuzzy"},
///                                           "text": {"type": "string"}},
///          "required": ["kind", "text"]}
///     ]
/// });
/// assert_eq!(canonicalize(&flattened, true), json!({
///     "type": "object",
///     "properties": {
///         "q": {"type": "string"},
///         "kind": {"type": "string", "enum": ["Exact", "Fuzzy"]},
///         "id": {"type": "integer", "minimum": 0},
///         "text": {"type": "string"}
///     },
///     "required": ["q", "kind"],
///     "anyOf": [
///         {"type": "object", "properties": {"kind": {"type": "string", "const": "Exact"},
///                                           "id": {"type": "integer", "minimum": 0}},
///          "required": ["kind", "id"]},
///         {"type": "object", "properties": {"kind": {"type": "string", "const": "Fuzzy"},
///                                           "text": {"type": "string"}},
///          "required": ["kind", "text"]}
///     ],
///     "additionalProperties": false
/// }));
/// ```
pub fn canonicalize(raw: &Value, closed: bool) -> Value {
    let mut v = raw.clone();
    if let Value::Object(root) = &mut v {
        root.remove("$schema");
        // The root's doc is the Rust argument type's; the tool's description says what the
        // tool does.
        root.remove("description");
    }
    close_root(&mut v, closed);
    canon(&mut v);
    attach_values_docs(&mut v);
    v
}

/// The raw schema closed as its canonical form is (see [`canonicalize`]: merged objects list
/// their alternatives' properties, objects with properties are closed when `closed`), every
/// other keyword as schemars wrote it (integer `format`s kept). The *validation schema* of a
/// derived tool: what an invalid input is explained against (`explain/`).
pub(crate) fn closed_form(raw: &Value, closed: bool) -> Value {
    let mut v = raw.clone();
    close_root(&mut v, closed);
    v
}

/// A root object without properties gets an empty `properties` (a tool without model
/// arguments: an object with no properties, which is not a map), then the whole schema is
/// closed ([`close`]).
fn close_root(v: &mut Value, closed: bool) {
    if let Value::Object(root) = v
        && root.get("type").and_then(Value::as_str) == Some("object")
        && !root.contains_key("properties")
        && !root.contains_key("additionalProperties")
        && !root.contains_key("patternProperties")
    {
        root.insert("properties".into(), Value::Object(Map::new()));
    }
    close(v, closed, false);
}

/// Combinators whose branches describe the same value as the schema holding them.
const ALTERNATIVES: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// Whether `map` is a merged object: `properties` beside an `anyOf`/`oneOf`, or an object
/// (`type: "object"` or `properties`) with an `allOf`.
pub(crate) fn is_merged(map: &Map<String, Value>) -> bool {
    let props = map.contains_key("properties");
    let object = props || map.get("type").and_then(Value::as_str) == Some("object");
    (props && (map.contains_key("anyOf") || map.contains_key("oneOf")))
        || (object && map.contains_key("allOf"))
}

/// Closes `v` and its subschemas (children first). `branch`: `v` is an alternative of a merged
/// object (or of one of its alternatives), which the merged object closes.
fn close(v: &mut Value, closed: bool, branch: bool) {
    let Value::Object(map) = v else { return };
    let merged = is_merged(map);
    for_each_subschema_mut(map, |keyword, _, child| {
        let inner = (merged || branch) && ALTERNATIVES.contains(&keyword);
        close(child, closed, inner);
    });
    if merged {
        // serde reads a flattened enum from the first key that names a variant (or the first
        // variant that fits): "exactly one" is more than it checks.
        if !map.contains_key("anyOf")
            && let Some(one_of) = map.remove("oneOf")
        {
            map.insert("anyOf".into(), one_of);
        }
        unit_variants_as_keys(map, 0);
        hoist(map);
        // `anyOf: [X, {}]` (a flattened `Option`) accepts anything: X's properties are listed
        // now, and nothing else of it needs saying.
        if let Some(Value::Array(branches)) = map.get("anyOf")
            && branches.iter().any(accepts_anything)
        {
            map.remove("anyOf");
        }
    }
    if closed
        && !branch
        && map.contains_key("properties")
        && !map.contains_key("additionalProperties")
        && !map.contains_key("patternProperties")
    {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// A unit variant of a flattened externally tagged enum is the key it names, with `null`
/// (`{"Unit": null}`, as serde reads and writes it), but schemars writes a documented one as a
/// string alternative (`{"type": "string", "const": "Unit"}`), which never matches the object it
/// is an alternative of. Such alternatives of a merged object (or of its alternatives) become
/// `{"type": "object", "properties": {"Unit": {"type": "null"}}, "required": ["Unit"]}` (a
/// string `enum` of several: an `anyOf` of those), their description kept.
fn unit_variants_as_keys(map: &mut Map<String, Value>, depth: usize) {
    if depth > 32 {
        return;
    }
    for key in ALTERNATIVES {
        let Some(Value::Array(branches)) = map.get_mut(key) else {
            continue;
        };
        for b in branches.iter_mut() {
            let Value::Object(bm) = b else { continue };
            let names: Vec<String> = match (bm.get("const"), bm.get("enum")) {
                (Some(Value::String(c)), _) => vec![c.clone()],
                (None, Some(Value::Array(vs))) if vs.iter().all(Value::is_string) => vs
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => {
                    unit_variants_as_keys(bm, depth + 1);
                    continue;
                }
            };
            if bm.get("type").is_some_and(|t| t != "string") || names.is_empty() {
                continue;
            }
            let key_of = |name: &str| {
                json!({"type": "object", "properties": {name: {"type": "null"}},
                       "required": [name]})
            };
            let mut replaced = match names.as_slice() {
                [one] => key_of(one),
                several => json!({"anyOf": several.iter().map(|n| key_of(n)).collect::<Vec<_>>()}),
            };
            if let (Some(d), Value::Object(r)) = (bm.get("description"), &mut replaced) {
                r.insert("description".into(), d.clone());
            }
            *b = replaced;
        }
    }
}

/// `true`, or an object schema with no keyword at all.
fn accepts_anything(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// Lists the properties a merged object's alternatives name among its own (in the order first
/// named, after its own), and requires the fields every alternative requires. The
/// alternatives' docs go with them: a variant key's (`{"Circle": {…}}`) becomes the key's
/// description, a tag's becomes `One of: `add_up`: Adds; `neg`: Negates.`, as for a documented
/// unit enum.
fn hoist(map: &mut Map<String, Value>) {
    let mut named: Vec<(String, Vec<Named>)> = Vec::new();
    for key in ALTERNATIVES {
        if let Some(Value::Array(branches)) = map.get(key) {
            for b in branches {
                gather_properties(b, &mut named, 0);
            }
        }
    }
    let always = always_required(map);
    let props = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(props) = props {
        for (name, found) in named {
            if !props.contains_key(&name) {
                props.insert(name, union(found));
            }
        }
    }
    let required = map
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(required) = required {
        for name in always {
            let name = Value::String(name);
            if !required.contains(&name) {
                required.push(name);
            }
        }
        if required.is_empty() {
            map.remove("required");
        }
    }
}

/// A property an alternative names: its schema, the alternative's doc, and whether it is the
/// alternative's only property (a variant key).
struct Named {
    schema: Value,
    doc: Option<String>,
    only: bool,
}

/// The properties an alternative names, its own and those of its alternatives (each distinct
/// schema once per name).
fn gather_properties(v: &Value, named: &mut Vec<(String, Vec<Named>)>, depth: usize) {
    let Value::Object(map) = v else { return };
    if depth > 32 {
        return;
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        let doc = map
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        for (name, schema) in props {
            let entry = Named {
                schema: schema.clone(),
                doc: doc.clone(),
                only: props.len() == 1,
            };
            match named.iter_mut().find(|(n, _)| n == name) {
                Some((_, found)) if found.iter().any(|f| f.schema == *schema) => {}
                Some((_, found)) => found.push(entry),
                None => named.push((name.clone(), vec![entry])),
            }
        }
    }
    for key in ALTERNATIVES {
        if let Some(Value::Array(branches)) = map.get(key) {
            for b in branches {
                gather_properties(b, named, depth + 1);
            }
        }
    }
}

/// One schema accepting every value the `found` schemas of one property accept: the only one
/// (with its variant's doc, for a variant key without a doc of its own); one schema when they
/// differ only in their descriptions (those joined with ` / `: a field that means one thing
/// per variant); one string `enum` for string `const`s (a tag: `{"type": "string", "const":
/// "A"}` and `… "B"`, described by the variants' docs); else their `anyOf`.
fn union(mut found: Vec<Named>) -> Value {
    if found.len() == 1 {
        let Named { schema, doc, only } = found.pop().expect("one");
        let mut schema = schema;
        if let (Value::Object(m), Some(doc), true) = (&mut schema, doc, only)
            && !m.contains_key("description")
        {
            m.insert("description".into(), Value::String(doc));
        }
        return schema;
    }
    let undocumented = |s: &Value| {
        let mut s = s.clone();
        if let Value::Object(m) = &mut s {
            m.remove("description");
        }
        s
    };
    let first = undocumented(&found[0].schema);
    if found.iter().all(|f| undocumented(&f.schema) == first) {
        let docs: Vec<&str> = found
            .iter()
            .filter_map(|f| f.schema.get("description").and_then(Value::as_str))
            .collect();
        let mut one = first;
        if let (Value::Object(m), false) = (&mut one, docs.is_empty()) {
            m.insert("description".into(), Value::String(docs.join(" / ")));
        }
        return one;
    }
    let tags: Option<Vec<(Value, Option<&str>)>> = found
        .iter()
        .map(|f| {
            let m = f.schema.as_object()?;
            let c = m.get("const").filter(|c| c.is_string())?;
            let plain = m
                .keys()
                .all(|k| matches!(k.as_str(), "const" | "type" | "description"));
            let typed = m.get("type").is_none_or(|t| t == "string");
            (plain && typed).then(|| (c.clone(), f.doc.as_deref()))
        })
        .collect();
    match tags {
        Some(tags) => {
            let docs: Vec<String> = tags
                .iter()
                .filter_map(|(c, d)| {
                    let d = (*d)?;
                    Some(format!(
                        "`{}`: {}",
                        c.as_str().unwrap_or_default(),
                        d.trim_end_matches('.')
                    ))
                })
                .collect();
            let values: Vec<Value> = tags.into_iter().map(|(c, _)| c).collect();
            let mut tag = json!({"type": "string", "enum": values});
            if !docs.is_empty() {
                tag["description"] = Value::String(format!("One of: {}.", docs.join("; ")));
            }
            tag
        }
        None => json!({ "anyOf": found.into_iter().map(|f| f.schema).collect::<Vec<_>>() }),
    }
}

/// The fields an object schema requires whatever alternative matches: its `required`, those of
/// each `allOf` branch, and those every `anyOf` (or every `oneOf`) branch requires.
fn always_required(map: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let add = |out: &mut Vec<String>, name: String| {
        if !out.contains(&name) {
            out.push(name);
        }
    };
    if let Some(Value::Array(required)) = map.get("required") {
        for r in required.iter().filter_map(Value::as_str) {
            add(&mut out, r.to_owned());
        }
    }
    let of = |v: &Value| match v {
        Value::Object(m) => always_required(m),
        _ => Vec::new(),
    };
    if let Some(Value::Array(all)) = map.get("allOf") {
        for name in all.iter().flat_map(of) {
            add(&mut out, name);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let mut common: Option<Vec<String>> = None;
            for b in branches {
                let r = of(b);
                common = Some(match common {
                    None => r,
                    Some(c) => c.into_iter().filter(|n| r.contains(n)).collect(),
                });
            }
            for name in common.unwrap_or_default() {
                add(&mut out, name);
            }
        }
    }
    out
}

const NUMERIC_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int128", "int", "uint8", "uint16", "uint32", "uint64",
    "uint128", "uint", "float", "double",
];

fn canon(v: &mut Value) {
    let Value::Object(map) = v else { return };
    map.remove("title");
    if let Some(Value::String(d)) = map.get_mut("description") {
        *d = unwrap_doc(d);
    }
    // Recurse first, so that children are canonical before this level is rewritten.
    for_each_subschema_mut(map, |_, _, child| canon(child));

    if let Some(Value::String(f)) = map.get("format")
        && NUMERIC_FORMATS.contains(&f.as_str())
    {
        map.remove("format");
    }

    documented_enum_to_enum(map);
    type_array_to_any_of(map);
}

/// `{"type": ["string", "null"], "enum": ["a", null], …}` → `{"anyOf": [{"type": "string",
/// "enum": ["a"], …}, {"type": "null"}]}`, keeping `description` and `default` outside.
fn type_array_to_any_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let non_null: Vec<Value> = types
        .iter()
        .filter(|t| t.as_str() != Some("null"))
        .cloned()
        .collect();
    let has_null = non_null.len() < types.len();
    if !has_null || non_null.len() != 1 {
        return;
    }
    let mut inner = std::mem::take(map);
    inner.insert(
        "type".into(),
        non_null.into_iter().next().unwrap_or(Value::Null),
    );
    if let Some(Value::Array(values)) = inner.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for key in [
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    ] {
        if let Some(val) = inner.remove(key) {
            map.insert(key.into(), val);
        }
    }
    map.insert(
        "anyOf".into(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
}

/// A unit enum with documented variants: `oneOf: [{const: "A", description: "first"}, …]` →
/// `{type: string, enum: ["A", …]}` with `A: first` appended to the description.
fn documented_enum_to_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = map.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut docs = Vec::new();
    for variant in variants {
        let Some(obj) = variant.as_object() else {
            return;
        };
        let Some(c) = obj.get("const") else { return };
        if !(c.is_string() || c.is_number() || c.is_boolean()) {
            return;
        }
        if obj
            .keys()
            .any(|k| !matches!(k.as_str(), "const" | "type" | "description"))
        {
            return;
        }
        if let Some(Value::String(d)) = obj.get("description") {
            let shown = c.as_str().map_or_else(|| c.to_string(), str::to_owned);
            docs.push(format!("`{shown}`: {}", d.trim_end_matches('.')));
        }
        values.push(c.clone());
    }
    if values.is_empty() || !values.iter().all(Value::is_string) {
        return;
    }
    map.remove("oneOf");
    map.insert("type".into(), Value::String("string".into()));
    map.insert("enum".into(), Value::Array(values));
    if !docs.is_empty() {
        // Attached to a description by `attach_values_docs`, once the nullable wrapper (whose
        // description is the field's doc) is known.
        let values_doc = format!("One of: {}.", docs.join("; "));
        map.insert(VALUES_DOC.into(), Value::String(values_doc));
    }
}

/// A private key carrying a documented enum's "One of: …" text during canonicalization.
const VALUES_DOC: &str = "x-toolgate-values-doc";

/// Appends each documented enum's values text to the description the model reads: the
/// description of the nullable wrapper around it when there is one (the field's doc), else its
/// own.
fn attach_values_docs(v: &mut Value) {
    let Value::Object(map) = v else { return };
    let mut hoisted = None;
    if map_has_description(map)
        && let Some(Value::Array(branches)) = map.get_mut("anyOf")
        && branches.len() == 2
    {
        for b in branches.iter_mut() {
            if let Value::Object(bm) = b
                && let Some(doc) = bm.remove(VALUES_DOC)
            {
                hoisted = Some(doc);
            }
        }
    }
    if let Some(doc) = hoisted.or_else(|| map.remove(VALUES_DOC)) {
        let doc = doc.as_str().unwrap_or_default().to_owned();
        let desc = match map.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{} {doc}", with_period(d)),
            _ => doc,
        };
        map.insert("description".into(), Value::String(desc));
    }
    for (_, child) in map.iter_mut() {
        match child {
            Value::Object(_) => attach_values_docs(child),
            Value::Array(items) => items.iter_mut().for_each(attach_values_docs),
            _ => {}
        }
    }
}

fn map_has_description(map: &Map<String, Value>) -> bool {
    map.get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| !d.is_empty())
}

fn with_period(s: &str) -> String {
    let s = s.trim_end();
    if s.ends_with(['.', '!', '?', ':']) {
        s.to_owned()
    } else {
        format!("{s}.")
    }
}

/// The Anthropic `input_schema`: the canonical form without a root `anyOf`, `oneOf` or `allOf`
/// (a merged root, whose properties list every field its alternatives name: a canonical schema
/// lists them already, and a wrapped caller's, used as given, gets them listed here, with the
/// fields every alternative requires). Never fails.
///
/// Source: Anthropic's tool-use docs ("Define tools"): `input_schema` is a JSON Schema object
/// with `"type": "object"` at the root; the API refuses a top-level combinator ("input_schema
/// does not support oneOf, allOf, or anyOf at the top level"). An optional field keeps its
/// nullable `anyOf` (`{"anyOf": [X, {"type": "null"}]}`) and stays out of `required`, so the
/// schema accepts every input the argument type does, `null` for an `Option` included; the
/// strict target, which must admit only what the type accepts, writes it as `X` alone
/// ([`without_null_branches`]).
///
/// ```
/// use serde_json::json;
/// use toolgate_core::provider::anthropic_input_schema;
///
/// let canonical = json!({
///     "type": "object",
///     "properties": {
///         "location": {"type": "string"},
///         "unit": {"description": "The unit", "anyOf": [
///             {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]},
///         "kind": {"type": "string", "enum": ["a", "b"]}
///     },
///     "required": ["location", "kind"],
///     "oneOf": [
///         {"type": "object", "properties": {"kind": {"const": "a"}}},
///         {"type": "object", "properties": {"kind": {"const": "b"}}}
///     ],
///     "additionalProperties": false
/// });
/// assert_eq!(anthropic_input_schema(&canonical), json!({
///     "type": "object",
///     "properties": {
///         "location": {"type": "string"},
///         "unit": {"description": "The unit", "anyOf": [
///             {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]},
///         "kind": {"type": "string", "enum": ["a", "b"]}
///     },
///     "required": ["location", "kind"],
///     "additionalProperties": false
/// }));
/// ```
pub fn anthropic_input_schema(canonical: &Value) -> Value {
    let mut v = canonical.clone();
    if let Value::Object(root) = &mut v
        && root.contains_key("properties")
        && ALTERNATIVES.iter().any(|k| root.contains_key(*k))
    {
        // Already done for a derived schema; a wrapped caller's is used as given, so its
        // alternatives' properties are listed here before the alternatives go.
        hoist(root);
        for key in ALTERNATIVES {
            root.remove(key);
        }
    }
    v
}

/// `schema` with every nullable `anyOf` collapsed to its non-null branch (the field's outer
/// keywords, such as its description, kept): an optional field is then said by `required`
/// alone, as the strict subsets want it (Anthropic's strict tool use; OpenAI's strict mode
/// writes it its own way). Never fails.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::provider::without_null_branches;
///
/// let field = json!({"description": "The unit", "anyOf": [
///     {"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]});
/// assert_eq!(without_null_branches(&field), json!({
///     "type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit"}));
/// ```
pub fn without_null_branches(schema: &Value) -> Value {
    let mut v = schema.clone();
    collapse_nullable(&mut v);
    v
}

fn collapse_nullable(v: &mut Value) {
    let (collapsed, was) = split_nullable(v);
    if was {
        *v = collapsed;
    }
    if let Value::Object(map) = v {
        for_each_subschema_mut(map, |_, _, child| collapse_nullable(child));
    }
}

/// Unwraps a doc comment into the text a model reads: lines of one paragraph are joined with a
/// space; a blank line (paragraph break) stays `\n\n`; lines that start a list item (`- `,
/// `* `, `+ `, `1. `), a table row (`|`) or a code fence, and the lines inside a fence, keep their
/// line break. Leading and trailing space is trimmed.
pub(crate) fn unwrap_doc(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut in_fence = false;
    let mut prev_blank = true;
    for raw in doc.trim().lines() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        let fence = trimmed.starts_with("```");
        if trimmed.is_empty() {
            if !prev_blank {
                out.push_str("\n\n");
            }
            prev_blank = true;
            continue;
        }
        let starts_block = fence
            || in_fence
            || trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed.starts_with("+ ")
            || trimmed.starts_with('|')
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !prev_blank {
            out.push(if starts_block { '\n' } else { ' ' });
        }
        out.push_str(if in_fence || fence { line } else { trimmed });
        if fence {
            in_fence = !in_fence;
        }
        prev_blank = false;
    }
    out
}

/// Whether `name` is a valid tool name for every target: `^[a-zA-Z0-9_-]{1,64}$` (Anthropic's
/// published pattern, narrowed to 64, which OpenAI and Gemini also accept).
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwraps_doc_comments() {
        assert_eq!(
            unwrap_doc(
                "Retrieves customer information based on their customer ID. Returns the\ncustomer's name, email, and phone number."
            ),
            "Retrieves customer information based on their customer ID. Returns the customer's name, email, and phone number."
        );
        assert_eq!(unwrap_doc("One.\n\nTwo\nlines."), "One.\n\nTwo lines.");
        assert_eq!(
            unwrap_doc("Units:\n- celsius\n- fahrenheit"),
            "Units:\n- celsius\n- fahrenheit"
        );
        assert_eq!(
            unwrap_doc("Steps:\n1. look\n2. act"),
            "Steps:\n1. look\n2. act"
        );
        assert_eq!(unwrap_doc("  padded  "), "padded");
    }

    #[test]
    fn documented_enum_values_reach_the_fields_description() {
        let variants = json!([
            {"description": "Window seat.", "type": "string", "const": "window"},
            {"description": "Aisle seat.", "type": "string", "const": "aisle"}
        ]);
        let raw = json!({
            "type": "object",
            "properties": {
                "seat": {"description": "Preferred seat", "anyOf": [{"oneOf": variants}, {"type": "null"}]},
                "plain": {"description": "Seat", "oneOf": variants},
                "bare": {"anyOf": [{"oneOf": variants}, {"type": "null"}]}
            }
        });
        let canonical = canonicalize(&raw, true);
        let values = "One of: `window`: Window seat; `aisle`: Aisle seat.";
        let enum_schema = json!({"type": "string", "enum": ["window", "aisle"]});
        assert_eq!(
            canonical["properties"]["seat"],
            json!({"description": format!("Preferred seat. {values}"), "anyOf": [enum_schema, {"type": "null"}]})
        );
        assert_eq!(
            canonical["properties"]["plain"],
            json!({"description": format!("Seat. {values}"), "type": "string", "enum": ["window", "aisle"]})
        );
        assert_eq!(
            canonical["properties"]["bare"]["anyOf"][0],
            json!({"type": "string", "enum": ["window", "aisle"], "description": values})
        );
        assert!(!canonical.to_string().contains("x-toolgate"));
    }

    #[test]
    fn canonical_form_of_an_optional_enum() {
        let raw = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "unit": {"description": "The unit", "type": ["string", "null"],
                         "enum": ["celsius", "fahrenheit", null]},
                "n": {"type": "integer", "format": "uint32", "minimum": 0}
            }
        });
        let canonical = canonicalize(&raw, true);
        assert_eq!(
            canonical,
            json!({
                "type": "object",
                "properties": {
                    "unit": {"description": "The unit", "anyOf": [
                        {"type": "string", "enum": ["celsius", "fahrenheit"]},
                        {"type": "null"}
                    ]},
                    "n": {"type": "integer", "minimum": 0}
                },
                "additionalProperties": false
            })
        );
        assert_eq!(
            without_null_branches(&canonical)["properties"]["unit"],
            json!({
                "type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit"
            })
        );
    }
}
