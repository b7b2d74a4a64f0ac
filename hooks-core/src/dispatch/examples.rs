//! A tool's `input_examples` (Anthropic, "Define tools": "Each example must be valid according
//! to the tool's `input_schema`. Invalid examples return a 400 error"), checked once at
//! `build()` the way a call's input is checked, so a dispatcher never sends a request the API
//! refuses and never shows the model an example its own tool would refuse.
//!
//! Each example, in order: it must hold no field the schema does not declare (the unknown-field
//! check of every call), match the Anthropic `input_schema` that is sent with it (so `null` for
//! an optional field, which serde accepts but the sent schema does not, is refused), and, for a
//! Rust tool, be accepted by the argument type's `Deserialize` (a wrapped caller has no Rust
//! type: the schema is its validator). The first problem of each example is reported, with the
//! field's path inside the example.

use serde_json::Value;

use crate::base::panic::catch;
use crate::hook::erased::ErasedTool;
use crate::schema::anthropic_input_schema;
use crate::schema::check::FieldCheck;
use crate::schema::explain::{Integers, problems};
use crate::texts;

/// Why one example is invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExampleProblem {
    /// The example's position in `input_examples`, from 0.
    pub(crate) index: usize,
    /// Where in the example (`options.filters[2]`; empty at the top level).
    pub(crate) field: String,
    /// What is wrong there (`expected one of "celsius", "fahrenheit", found the string
    /// "kelvin"`).
    pub(crate) problem: String,
}

/// The problems of `examples` for a tool with this canonical and validation schema
/// (`ToolEntry::validation`) and, for a Rust tool, this implementation: at most one per
/// example, in order.
pub(crate) fn check(
    canonical: &Value,
    validation: &Value,
    imp: Option<&dyn ErasedTool>,
    examples: &[Value],
) -> Vec<ExampleProblem> {
    if examples.is_empty() {
        return Vec::new();
    }
    let fields = FieldCheck::from_schema(canonical);
    let sent = anthropic_input_schema(canonical);
    examples
        .iter()
        .enumerate()
        .filter_map(|(index, example)| {
            problem(&fields, &sent, validation, imp, example).map(|(field, problem)| {
                ExampleProblem {
                    index,
                    field,
                    problem,
                }
            })
        })
        .collect()
}

/// The first problem of one example, as `(field path, what)`.
fn problem(
    fields: &FieldCheck,
    sent: &Value,
    validation: &Value,
    imp: Option<&dyn ErasedTool>,
    example: &Value,
) -> Option<(String, String)> {
    if let Err(unknown) = fields.check(example) {
        let expected: Vec<&str> = unknown.expected.iter().map(String::as_str).collect();
        return Some((
            unknown.path_text(),
            texts::unknown_field(&unknown.field, &expected),
        ));
    }
    if let Some(m) = first_problem(sent, example, Integers::JsonSchema) {
        return Some(m);
    }
    let imp = imp?;
    match catch(|| imp.validate(example).map(drop)) {
        Ok(Ok(())) => None,
        Ok(Err(serde_message)) => Some(
            first_problem(validation, example, Integers::Serde)
                .unwrap_or((String::new(), serde_message)),
        ),
        Err(_) => Some((String::new(), texts::INPUT_UNREADABLE.to_owned())),
    }
}

/// The first problem the schema walk finds in `example`, as `(field path, what)`.
fn first_problem(schema: &Value, example: &Value, integers: Integers) -> Option<(String, String)> {
    let report = problems(schema, example, integers);
    report
        .problems
        .listed
        .into_iter()
        .next()
        .map(|p| (p.path, p.message))
}
