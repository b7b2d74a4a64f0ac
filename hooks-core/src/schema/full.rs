//! Full JSON Schema validation with `boon` (the `full-validation` feature): the meta-schema
//! check of a schema toolgate did not derive, against its draft's own meta-schema, regular
//! expressions included; and, for a wrapped caller, every input against its schema, the
//! keywords the input walk (`explain/`) does not apply included (`pattern`,
//! `patternProperties`, `format` as the draft asserts it, `unevaluatedProperties`,
//! `unevaluatedItems`, `$dynamicRef`).
//!
//! The schema is compiled once, at `build()`, as a document of its own
//! (`https://toolgate.invalid/input_schema.json`) with a loader that loads nothing: a `$ref` to
//! another document (`file:///…`, `https://…`) is a fault, never a read from disk or network.
//! A panic inside the validator is caught and reported as a fault (at `build()`) or a refusal
//! (at a call), so a bad schema or input can only fail closed.

use std::error::Error;

use boon::{CompileError, Compiler, ErrorKind, InstanceToken, SchemaIndex, Schemas, UrlLoader};
use serde_json::Value;

use super::explain::found;
use super::meta::Fault;
use crate::base::panic::catch;
use crate::texts::{self, MAX_LISTED_PROBLEMS, Problem, Problems};

/// The address a schema is compiled under (never fetched: `.invalid` is reserved).
const URL: &str = "https://toolgate.invalid/input_schema.json";

/// A schema compiled by `boon`.
pub(crate) struct Compiled {
    schemas: Schemas,
    index: SchemaIndex,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compiled")
    }
}

/// Loads nothing: every schema toolgate validates against is one document.
struct NoLoader;

impl UrlLoader for NoLoader {
    fn load(&self, url: &str) -> Result<Value, Box<dyn Error>> {
        Err(format!("toolgate loads no schema from `{url}`").into())
    }
}

/// Compiles `schema`, checking it against its draft's meta-schema; the faults found when it is
/// not valid (each at a JSON pointer into the schema).
pub(crate) fn compile(schema: &Value) -> Result<Compiled, Vec<Fault>> {
    let compiled = catch(|| {
        let mut compiler = Compiler::new();
        compiler.use_loader(Box::new(NoLoader));
        compiler
            .add_resource(URL, schema.clone())
            .map_err(|e| faults(&e))?;
        let mut schemas = Schemas::new();
        match compiler.compile(URL, &mut schemas) {
            Ok(index) => Ok(Compiled { schemas, index }),
            Err(e) => Err(faults(&e)),
        }
    });
    compiled.unwrap_or_else(|panic| {
        Err(vec![Fault {
            pointer: String::new(),
            reason: format!("the JSON Schema validator failed on this schema: {panic}"),
        }])
    })
}

/// The faults a compile error stands for.
fn faults(e: &CompileError) -> Vec<Fault> {
    match e {
        CompileError::ValidationError { src, .. } => {
            let mut out = Vec::new();
            leaves(src, &mut |location, kind| {
                let reason = match kind {
                    ErrorKind::Format { got, want, err } => format!(
                        "`{}` is not a valid {}: {}",
                        texts::quoted(got.as_str().unwrap_or_default()),
                        if *want == "regex" {
                            "regular expression"
                        } else {
                            want
                        },
                        one_line(&err.to_string())
                    ),
                    other => one_line(&other.to_string()),
                };
                out.push(Fault {
                    pointer: location.to_owned(),
                    reason,
                });
            });
            out
        }
        CompileError::InvalidRegex { url, regex, src } => vec![Fault {
            pointer: pointer_of(url),
            reason: format!(
                "`{}` is not a valid regular expression: {}",
                texts::quoted(regex),
                one_line(&src.to_string())
            ),
        }],
        other => vec![Fault {
            pointer: String::new(),
            reason: other.to_string(),
        }],
    }
}

/// A message of several lines (a regular expression's parse error) on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The JSON pointer in a compiled schema's URL (`…#/properties/a/pattern` →
/// `/properties/a/pattern`).
fn pointer_of(url: &str) -> String {
    url.split_once('#')
        .map(|(_, p)| p.to_owned())
        .unwrap_or_default()
}

/// Calls `f(instance location, kind)` for every leaf of a validation error tree.
fn leaves<'s, 'v>(e: &boon::ValidationError<'s, 'v>, f: &mut dyn FnMut(&str, &ErrorKind<'s, 'v>)) {
    if e.causes.is_empty() {
        f(&e.instance_location.to_string(), &e.kind);
    }
    for cause in &e.causes {
        leaves(cause, f);
    }
}

impl Compiled {
    /// Validates `input`: `Ok` when it is valid; else its problems, in the input's order (the
    /// same order as the input walk's), each written for the model with its value quoted
    /// ([`found`]).
    pub(crate) fn validate(&self, input: &Value) -> Result<(), Problems> {
        let outcome = catch(|| {
            let Err(error) = self.schemas.validate(input, self.index) else {
                return Vec::new();
            };
            let mut hits: Vec<(Vec<u32>, Problem)> = Vec::new();
            collect(&error, input, &mut hits);
            hits
        });
        let mut hits = match outcome {
            Ok(hits) if hits.is_empty() => return Ok(()),
            Ok(hits) => hits,
            Err(_) => {
                return Err(Problems::one(Problem::here(
                    "the input could not be checked against the tool's input_schema".into(),
                )));
            }
        };
        hits.sort_by(|a, b| a.0.cmp(&b.0));
        hits.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        let more = hits.len().saturating_sub(MAX_LISTED_PROBLEMS);
        hits.truncate(MAX_LISTED_PROBLEMS);
        Err(Problems {
            listed: hits.into_iter().map(|(_, p)| p).collect(),
            more,
            more_at_least: false,
        })
    }
}

/// The leaves of `e` as problems with their positions in `input`.
fn collect(e: &boon::ValidationError<'_, '_>, input: &Value, out: &mut Vec<(Vec<u32>, Problem)>) {
    if !e.causes.is_empty() {
        for cause in &e.causes {
            collect(cause, input, out);
        }
        return;
    }
    let mut at = input;
    let mut pos = Vec::new();
    let mut path = String::new();
    for token in &e.instance_location.tokens {
        match token {
            InstanceToken::Prop(key) => {
                let index = at
                    .as_object()
                    .and_then(|m| m.keys().position(|k| k == key.as_ref()))
                    .unwrap_or(0);
                pos.push(index as u32);
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                at = at.get(key.as_ref()).unwrap_or(&Value::Null);
            }
            InstanceToken::Item(i) => {
                pos.push(*i as u32);
                path.push_str(&format!("[{i}]"));
                at = at.get(*i).unwrap_or(&Value::Null);
            }
        }
    }
    let message = match &e.kind {
        ErrorKind::Pattern { want, .. } => format!(
            "expected a string matching the pattern `{}`, found {}",
            texts::quoted(want),
            found(at)
        ),
        ErrorKind::Format { want, .. } => {
            format!(
                "expected a string in the format `{want}`, found {}",
                found(at)
            )
        }
        ErrorKind::AdditionalProperties { got } => {
            let names: Vec<String> = got
                .iter()
                .map(|k| format!("`{}`", texts::quoted(k)))
                .collect();
            format!("unknown field {}", names.join(", "))
        }
        ErrorKind::PropertyName { prop } => {
            format!(
                "the field name `{}` is not allowed here",
                texts::quoted(prop)
            )
        }
        other => format!(
            "{} does not match the tool's input_schema (`{}`)",
            found(at),
            keyword(other)
        ),
    };
    out.push((pos, Problem { path, message }));
}

/// The keyword an error kind reports.
fn keyword(kind: &ErrorKind<'_, '_>) -> &'static str {
    match kind {
        ErrorKind::Type { .. } => "type",
        ErrorKind::Enum { .. } => "enum",
        ErrorKind::Const { .. } => "const",
        ErrorKind::Format { .. } => "format",
        ErrorKind::MinProperties { .. } => "minProperties",
        ErrorKind::MaxProperties { .. } => "maxProperties",
        ErrorKind::AdditionalProperties { .. } => "additionalProperties",
        ErrorKind::Required { .. } => "required",
        ErrorKind::Dependency { .. } => "dependencies",
        ErrorKind::DependentRequired { .. } => "dependentRequired",
        ErrorKind::MinItems { .. } => "minItems",
        ErrorKind::MaxItems { .. } => "maxItems",
        ErrorKind::Contains => "contains",
        ErrorKind::MinContains { .. } => "minContains",
        ErrorKind::MaxContains { .. } => "maxContains",
        ErrorKind::UniqueItems { .. } => "uniqueItems",
        ErrorKind::AdditionalItems { .. } => "additionalItems",
        ErrorKind::MinLength { .. } => "minLength",
        ErrorKind::MaxLength { .. } => "maxLength",
        ErrorKind::Pattern { .. } => "pattern",
        ErrorKind::Minimum { .. } => "minimum",
        ErrorKind::Maximum { .. } => "maximum",
        ErrorKind::ExclusiveMinimum { .. } => "exclusiveMinimum",
        ErrorKind::ExclusiveMaximum { .. } => "exclusiveMaximum",
        ErrorKind::MultipleOf { .. } => "multipleOf",
        ErrorKind::Not => "not",
        ErrorKind::AllOf => "allOf",
        ErrorKind::AnyOf => "anyOf",
        ErrorKind::OneOf(_) => "oneOf",
        ErrorKind::FalseSchema => "false",
        ErrorKind::PropertyName { .. } => "propertyNames",
        ErrorKind::ContentSchema => "contentSchema",
        ErrorKind::ContentEncoding { .. } => "contentEncoding",
        ErrorKind::ContentMediaType { .. } => "contentMediaType",
        ErrorKind::Reference { kw, .. } => kw,
        _ => "a keyword",
    }
}
