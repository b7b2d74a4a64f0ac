//! Step 3 of a call: the input validated against the tool's argument type (a `#[tool]`, a
//! [`ToolDef`](crate::dispatch::ToolDef)) or a wrapped caller's schema, every problem listed for
//! the model.

use serde_json::Value;

use crate::base::panic::catch;
use crate::hook::erased::Args;
use crate::pipeline::inner::{Backend, ToolEntry};
use crate::schema::explain::{Integers, problems};
use crate::texts::{self, Problem, Problems};

/// Validates an input for a tool. On failure: every problem found, for the model (see
/// `texts::invalid_input`).
///
/// A `#[tool]` or [`ToolDef`](crate::dispatch::ToolDef): the unknown-field check, then the argument
/// type's `Deserialize` (user code: a panic in it is a refusal, not an escape); when either
/// refuses, the input walk (`schema/explain/`) lists every problem against the tool's validation
/// schema, unknown fields and wrong values alike; when the walk finds nothing, the unknown field
/// found, or serde's own message (cut to a bound), without a path.
///
/// A wrapped caller: the input walk against the caller's schema is the validator; with the
/// `full-validation` feature, the schema compiled by `boon` then applies the keywords the walk
/// does not (`pattern`, …). Its arguments are `()` (its input goes to it as JSON); boxing a
/// zero-sized value allocates nothing.
pub(super) fn validate(tool: &ToolEntry, input: &Value) -> Result<Args, Problems> {
    let imp = match &tool.backend {
        Backend::Local(imp) => imp,
        Backend::Caller { .. } => return validate_for_caller(tool, input),
    };
    let unknown = tool.fields.check(input).err();
    let mut serde_message = None;
    if unknown.is_none() {
        match catch(|| imp.validate(input)) {
            Ok(Ok(args)) => return Ok(args),
            Ok(Err(message)) => serde_message = Some(message),
            Err(p) => {
                tracing::error!(target: "toolgate::validation", tool = %tool.name, panic = %p,
                    "the tool's input type panicked while deserializing");
                return Err(Problems::one(Problem::here(
                    texts::INPUT_UNREADABLE.to_owned(),
                )));
            }
        }
    }
    let report = problems(&tool.validation, input, Integers::Serde);
    if !report.problems.is_empty() {
        return Err(report.problems);
    }
    let problem = match (unknown, serde_message) {
        (Some(e), _) => {
            let expected: Vec<&str> = e.expected.iter().map(String::as_str).collect();
            Problem {
                path: e.path_text(),
                message: texts::unknown_field(&e.field, &expected),
            }
        }
        (None, Some(message)) => Problem::here(texts::deserializer_message(&message)),
        (None, None) => Problem::here(texts::INPUT_UNREADABLE.to_owned()),
    };
    Err(Problems::one(problem))
}

/// A wrapped caller's input against its schema (see [`validate`]).
fn validate_for_caller(tool: &ToolEntry, input: &Value) -> Result<Args, Problems> {
    let report = problems(&tool.validation, input, Integers::JsonSchema);
    if !report.problems.is_empty() {
        return Err(report.problems);
    }
    if report.incomplete {
        return Err(Problems::one(Problem::here(
            texts::TOO_COMPLEX_TO_CHECK.to_owned(),
        )));
    }
    #[cfg(feature = "full-validation")]
    if let Some(full) = &tool.full {
        full.validate(input)?;
    }
    Ok(Box::new(()))
}
