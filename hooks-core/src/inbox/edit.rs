//! A person's edit checked before it is accepted: a JSON object within the input bounds that
//! fits the tool's input schema, every problem listed with its path, with the same walk that
//! explains a model's invalid input (`schema/explain/`), its integers read as the tool reads
//! them. The check at resume stays: the edit is validated again and every PreToolUse hook
//! decides on it (ARCHITECTURE.md, "Contracts": "The PreToolUse chain and rewrites").

use serde_json::Value;

use crate::pipeline::limits::Limits;
use crate::pipeline::normalize::{Refused, check_bounds};
use crate::schema::explain::{Integers as Walk, problems};
use crate::texts::{self, Problem};

use super::decide::EditProblem;
use super::store::{Integers, ToolSchema};

/// Every problem of `input` as an input of `tool` (the first five and a last one counting the
/// others); empty when it fits.
pub(crate) fn check_edit(tool: &ToolSchema, input: &Value) -> Vec<EditProblem> {
    let whole = |message: String| {
        vec![EditProblem {
            path: String::new(),
            message,
        }]
    };
    if !input.is_object() {
        return whole(Refused::not_object(input).0);
    }
    if let Err(Refused(why)) = check_bounds(input, &Limits::default()) {
        return whole(why);
    }
    let integers = match tool.integers {
        Integers::Serde => Walk::Serde,
        Integers::JsonSchema => Walk::JsonSchema,
    };
    let report = problems(&tool.input_schema, input, integers);
    let mut found: Vec<EditProblem> = report
        .problems
        .listed
        .iter()
        .map(|Problem { path, message }| EditProblem {
            path: path.clone(),
            message: message.clone(),
        })
        .collect();
    let others = report.problems.others(found.len());
    if !others.is_empty() {
        found.push(EditProblem {
            path: String::new(),
            message: others,
        });
    }
    if found.is_empty() && report.incomplete {
        return whole(texts::TOO_COMPLEX_TO_CHECK.to_owned());
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refund() -> ToolSchema {
        ToolSchema {
            name: "refund".to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "amount_cents": {"type": "integer", "format": "uint64", "minimum": 0}
                },
                "required": ["order_id", "amount_cents"],
                "additionalProperties": false
            }),
            integers: Integers::Serde,
        }
    }

    #[test]
    fn an_edit_that_fits_has_no_problem() {
        let ok = json!({"order_id": "o_1", "amount_cents": 20000});
        assert_eq!(check_edit(&refund(), &ok), []);
    }

    #[test]
    fn every_problem_is_listed_with_its_path_and_json_types_are_kept() {
        let bad = json!({"order_id": 7, "amount_cents": "20000", "tool": "other"});
        let problem = |path: &str, message: &str| EditProblem {
            path: path.to_owned(),
            message: message.to_owned(),
        };
        assert_eq!(
            check_edit(&refund(), &bad),
            [
                problem("order_id", "expected a string, found the number 7"),
                problem(
                    "amount_cents",
                    "expected an integer ≥ 0, found the string \"20000\""
                ),
                problem(
                    "",
                    "unknown field `tool`, expected one of `order_id`, `amount_cents`"
                ),
            ]
        );
        let not_object = check_edit(&refund(), &json!([1]));
        assert_eq!(not_object.len(), 1);
        assert_eq!(not_object[0].path, "");
    }

    #[test]
    fn integers_are_read_as_the_tool_reads_them() {
        let float = json!({"order_id": "o_1", "amount_cents": 20000.0});
        assert_eq!(check_edit(&refund(), &float).len(), 1);
        let mut caller = refund();
        caller.integers = Integers::JsonSchema;
        assert_eq!(check_edit(&caller, &float), []);
    }
}
