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
/// others); empty when it fits. A problem at a value the edit left as the turn showed it
/// (`shown`, the effective input as kept) is not the person's: the shown input passed the
/// tool's validation when the call paused, and a field the audit hides shows its placeholder
/// there (`"[redacted]"`, put back with its real value at resume), which may not fit the
/// field's type.
pub(crate) fn check_edit(tool: &ToolSchema, input: &Value, shown: &Value) -> Vec<EditProblem> {
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
    let kept = |path: &str| match (value_at(input, path), value_at(shown, path)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    let mut found: Vec<EditProblem> = report
        .problems
        .listed
        .iter()
        .filter(|p| !kept(&p.path))
        .map(|Problem { path, message }| EditProblem {
            path: path.clone(),
            message: message.clone(),
        })
        .collect();
    // The problems past the listed ones, which the walk counted without their paths.
    let others = report.problems.others(report.problems.listed.len());
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

/// The value at `path` of `input`, the path as the walk writes it (`order.items[0].sku`, `""`
/// for the input itself); `None` when there is none, or the path does not read (a key holding
/// `.` or `[`).
fn value_at<'v>(input: &'v Value, path: &str) -> Option<&'v Value> {
    let mut at = input;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let (index, tail) = after.split_once(']')?;
            at = at.get(index.parse::<usize>().ok()?)?;
            rest = tail;
        } else {
            let key = rest.trim_start_matches('.');
            let end = key.find(['.', '[']).unwrap_or(key.len());
            at = at.get(&key[..end])?;
            rest = &key[end..];
        }
    }
    Some(at)
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
        assert_eq!(check_edit(&refund(), &ok, &ok), []);
    }

    #[test]
    fn every_problem_is_listed_with_its_path_and_json_types_are_kept() {
        let bad = json!({"order_id": 7, "amount_cents": "20000", "tool": "other"});
        let problem = |path: &str, message: &str| EditProblem {
            path: path.to_owned(),
            message: message.to_owned(),
        };
        assert_eq!(
            check_edit(&refund(), &bad, &json!({})),
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
        let not_object = check_edit(&refund(), &json!([1]), &json!({}));
        assert_eq!(not_object.len(), 1);
        assert_eq!(not_object[0].path, "");
    }

    #[test]
    fn a_value_the_edit_left_as_shown_is_not_the_persons_problem() {
        // A hidden number shows its placeholder; the person changed only the order.
        let shown = json!({"order_id": "o_1", "amount_cents": "[redacted]"});
        let edit = json!({"order_id": "o_2", "amount_cents": "[redacted]"});
        assert_eq!(check_edit(&refund(), &edit, &shown), []);
        let changed = json!({"order_id": "o_2", "amount_cents": "12"});
        assert_eq!(check_edit(&refund(), &changed, &shown).len(), 1);
    }

    #[test]
    fn a_path_reads_back_the_value_it_names() {
        let v = json!({"a": {"b": [{"c": 1}, {"c": 2}]}, "d": 3});
        assert_eq!(value_at(&v, ""), Some(&v));
        assert_eq!(value_at(&v, "a.b[1].c"), Some(&json!(2)));
        assert_eq!(value_at(&v, "d"), Some(&json!(3)));
        assert_eq!(value_at(&v, "a.b[2]"), None);
        assert_eq!(value_at(&v, "a.x"), None);
    }

    #[test]
    fn integers_are_read_as_the_tool_reads_them() {
        let float = json!({"order_id": "o_1", "amount_cents": 20000.0});
        assert_eq!(check_edit(&refund(), &float, &json!({})).len(), 1);
        let mut caller = refund();
        caller.integers = Integers::JsonSchema;
        assert_eq!(check_edit(&caller, &float, &json!({})), []);
    }
}
