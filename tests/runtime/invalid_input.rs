//! What the model reads about an invalid input: every problem found, in the input's order, up to
//! five and then a count (one retry fixes the call); and model input quoted back cut to 64
//! characters, so one call cannot produce an error the model then carries in every request.

use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    dispatch::Limits,
};

use crate::support::{self, TempDir};

mod items {
    use std::collections::BTreeMap;

    use schemars::JsonSchema;
    use serde::{Deserialize, Deserializer};
    use toolgate::{Decision, ToolUse, pre_hook, tool};

    /// A label's look.
    #[derive(Deserialize, JsonSchema)]
    pub(crate) struct Label {
        /// Its colour.
        pub(crate) color: String,
    }

    /// A reason code, `RC-…`, read by hand: its error quotes the input.
    pub(crate) struct Code(pub(crate) String);

    impl<'de> Deserialize<'de> for Code {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let s = String::deserialize(d)?;
            if s.starts_with("RC-") {
                Ok(Code(s))
            } else {
                Err(serde::de::Error::custom(format!("not a reason code: {s}")))
            }
        }
    }

    impl JsonSchema for Code {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Code".into()
        }
        fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
            schemars::json_schema!({"type": "string"})
        }
    }

    /// Opens a refund case.
    #[tool]
    pub(crate) fn open_case(
        /// The order.
        order_id: String,
        /// The amount, in cents.
        amount_cents: u64,
        /// What the customer sent.
        evidence: Vec<String>,
        /// Labels, by name.
        labels: Option<BTreeMap<String, Label>>,
        /// The reason code.
        code: Option<Code>,
    ) -> String {
        let colors: Vec<String> = labels
            .unwrap_or_default()
            .into_values()
            .map(|l| l.color)
            .collect();
        let _ = (evidence, colors, code.map(|c| c.0));
        format!("case for {order_id}: {amount_cents} cents")
    }

    /// A broken policy: rewrites every call into one with three problems.
    #[pre_hook(order = 1)]
    pub(crate) fn scramble(call: &ToolUse) -> Decision {
        if call.input.get("scramble").is_some() || call.input["order_id"] == "scramble" {
            Decision::Rewrite(serde_json::json!({"order_id": 1}))
        } else {
            Decision::Allow
        }
    }
}

fn dispatcher(audit: Option<AuditLog>, limits: Limits) -> Dispatcher {
    let mut b = Dispatcher::builder()
        .item(format!("{}::items::open_case", module_path!()))
        .limits(limits);
    if let Some(log) = audit {
        b = b.audit_log(log);
    }
    b.build().unwrap()
}

fn call(d: &Dispatcher, name: &str, input: Value) -> ToolResult {
    let s = d.session(HookContext::builder("u_1", "sess_invalid").build());
    toolgate::block_on(s.call(&ToolUse::new("toolu_1", name, input))).unwrap()
}

/// The error text of a call, checked to be an `is_error` result.
fn error(d: &Dispatcher, input: Value) -> String {
    let r = call(d, "open_case", input);
    assert!(r.is_error);
    r.content_text().into_owned()
}

const TAIL: &str = "Send an input that matches the tool's input_schema.";

// ================================================================ every problem, one retry

#[test]
fn an_unknown_field_and_a_wrong_type_are_both_listed() {
    let d = dispatcher(None, Limits::default());
    assert_eq!(
        error(
            &d,
            json!({"order_id": 5, "amount_cents": 1, "evidence": [], "note": "x"})
        ),
        format!(
            "Error: invalid input for tool `open_case` (2 problems):\n\
             - at `order_id`: expected a string, found the number 5\n\
             - unknown field `note`, expected one of `order_id`, `amount_cents`, `evidence`, \
             `labels`, `code`\n{TAIL}"
        )
    );
}

#[test]
fn two_missing_fields_are_both_listed_in_the_schemas_order() {
    let d = dispatcher(None, Limits::default());
    assert_eq!(
        error(&d, json!({"evidence": []})),
        format!(
            "Error: invalid input for tool `open_case` (2 problems):\n\
             - missing field `order_id`\n- missing field `amount_cents`\n{TAIL}"
        )
    );
}

#[test]
fn a_wrong_item_inside_an_array_is_named_by_its_index() {
    let d = dispatcher(None, Limits::default());
    assert_eq!(
        error(
            &d,
            json!({"order_id": "o_1", "amount_cents": 1, "evidence": ["a", 7, "c"]})
        ),
        format!(
            "Error: invalid input for tool `open_case` at `evidence[1]`: expected a string, \
             found the number 7. {TAIL}"
        )
    );
}

#[test]
fn more_problems_than_the_bound_are_counted_after_the_first_five() {
    let d = dispatcher(None, Limits::default());
    assert_eq!(
        error(
            &d,
            json!({"order_id": 1, "amount_cents": "x", "evidence": [1, 2, 3], "a": 1, "b": 2})
        ),
        format!(
            "Error: invalid input for tool `open_case` (7 problems):\n\
             - at `order_id`: expected a string, found the number 1\n\
             - at `amount_cents`: expected an integer ≥ 0, found the string \"x\"\n\
             - at `evidence[0]`: expected a string, found the number 1\n\
             - at `evidence[1]`: expected a string, found the number 2\n\
             - at `evidence[2]`: expected a string, found the number 3\n\
             - and 2 more problems\n{TAIL}"
        )
    );
}

#[test]
fn problems_inside_a_map_value_come_with_the_keys_path() {
    let d = dispatcher(None, Limits::default());
    assert_eq!(
        error(
            &d,
            json!({"order_id": "o_1", "amount_cents": 1, "evidence": [],
                   "labels": {"bug": {"color": "red"}, "wip": {"colour": "grey"}}})
        ),
        format!(
            "Error: invalid input for tool `open_case` (2 problems):\n\
             - at `labels.wip`: unknown field `colour`, expected one of `color`\n\
             - at `labels.wip`: missing field `color`\n{TAIL}"
        )
    );
}

#[test]
fn a_rewrite_with_several_problems_names_the_first_and_counts_the_rest() {
    let dir = TempDir::new("invalid-rewrite");
    let d = Dispatcher::builder()
        .registered_under(format!("{}::items", module_path!()))
        .audit_log(AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let r = call(
        &d,
        "open_case",
        json!({"order_id": "scramble", "amount_cents": 1, "evidence": []}),
    );
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `open_case`: a policy rewrite of this call produced an \
         input that is invalid at `order_id` (expected a string, found the number 1; and 2 more \
         problems). This is a problem on our side; do not retry the same call."
    );
    let line = &support::json_lines(&dir.join("audit_log.jsonl"))[0];
    assert_eq!(line["outcome"], "invalid_input");
    assert_eq!(
        line["detail"],
        format!(
            "PreToolUse hook `{}::items::scramble` rewrote the input into an invalid one at \
             `order_id`: expected a string, found the number 1 (and 2 more problems)",
            module_path!()
        )
    );
}

// ================================================================ bounded quotes

/// 240 000 bytes of a two-byte character.
fn huge() -> String {
    "é".repeat(120_000)
}

/// The first `n` characters of [`huge`], then `…`.
fn cut(n: usize) -> String {
    format!("{}…", "é".repeat(n))
}

fn assert_short(text: &str) {
    assert!(text.len() < 1024, "{} bytes: {text}", text.len());
}

#[test]
fn a_240_kb_non_ascii_key_is_quoted_to_64_characters_and_the_audit_line_keeps_the_input() {
    let dir = TempDir::new("huge-key");
    let d = dispatcher(Some(AuditLog::open(&dir).unwrap()), Limits::default());
    let mut input = json!({"order_id": "o_1", "amount_cents": 5, "evidence": []});
    input[huge()] = json!(1);
    let text = error(&d, input.clone());
    assert_eq!(
        text,
        format!(
            "Error: invalid input for tool `open_case`: unknown field `{}`, expected one of \
             `order_id`, `amount_cents`, `evidence`, `labels`, `code`. {TAIL}",
            cut(64)
        )
    );
    assert_short(&text);
    // The audit line records the input as received: it is within the input limits.
    let line = &support::json_lines(&dir.join("audit_log.jsonl"))[0];
    assert_eq!(line["input"], input);
    assert_eq!(line["content"], text);
    assert_eq!(line["outcome"], "invalid_input");
}

#[test]
fn past_the_input_limits_the_audit_line_keeps_a_note_instead() {
    let dir = TempDir::new("huge-key-limited");
    let limits = Limits::default().max_input_bytes(100_000);
    let d = dispatcher(Some(AuditLog::open(&dir).unwrap()), limits);
    let mut input = json!({"order_id": "o_1"});
    input[huge()] = json!(1);
    let text = error(&d, input);
    assert_eq!(
        text,
        format!(
            "Error: invalid input for tool `open_case`: the input is too large: 240022 bytes or \
             more, over the limit of 100000 bytes; send a smaller input. {TAIL}"
        )
    );
    let line = &support::json_lines(&dir.join("audit_log.jsonl"))[0];
    assert_eq!(
        line["input"],
        "[input not recorded: over the input limits (100000 bytes, 32 levels)]"
    );
}

#[test]
fn a_240_kb_wrong_typed_value_is_quoted_to_64_characters() {
    let d = dispatcher(None, Limits::default());
    let text = error(
        &d,
        json!({"order_id": "o_1", "amount_cents": huge(), "evidence": []}),
    );
    // 64 characters of the value's JSON text: its opening quote and 63 characters.
    assert_eq!(
        text,
        format!(
            "Error: invalid input for tool `open_case` at `amount_cents`: expected an integer \
             ≥ 0, found the string \"{}. {TAIL}",
            cut(63)
        )
    );
    assert_short(&text);
}

#[test]
fn a_240_kb_tool_name_is_quoted_to_64_characters() {
    let d = dispatcher(None, Limits::default());
    let r = call(&d, &huge(), json!({}));
    assert_eq!(
        r,
        ToolResult::error(
            "toolu_1",
            format!(
                "Error: unknown tool '{}'. Available tools: open_case.",
                cut(64)
            )
        )
    );
    assert_short(&r.content_text());
}

#[test]
fn a_240_kb_map_key_in_a_path_is_quoted_to_64_characters() {
    let d = dispatcher(None, Limits::default());
    let mut labels = json!({});
    labels[huge()] = json!({"color": 3});
    let text = error(
        &d,
        json!({"order_id": "o_1", "amount_cents": 5, "evidence": [], "labels": labels}),
    );
    // The whole path is one quote: `labels.` and 57 characters of the key.
    assert_eq!(
        text,
        format!(
            "Error: invalid input for tool `open_case` at `labels.{}`: expected a string, found \
             the number 3. {TAIL}",
            cut(57)
        )
    );
    assert_short(&text);
}

#[test]
fn a_deserializers_own_message_is_cut_to_160_characters() {
    let d = dispatcher(None, Limits::default());
    let text = error(
        &d,
        json!({"order_id": "o_1", "amount_cents": 5, "evidence": [], "code": huge()}),
    );
    // The schema says only "a string": the walk finds nothing, serde's message is the reason.
    let message = format!("not a reason code: {}", "é".repeat(120_000));
    let kept: String = message.chars().take(160).collect();
    assert_eq!(
        text,
        format!("Error: invalid input for tool `open_case`: {kept}…. {TAIL}")
    );
    assert_short(&text);
    let s = d.session(HookContext::builder("u_1", "sess_ok").build());
    let ok = ToolUse::new(
        "t",
        "open_case",
        json!({"order_id": "o_1", "amount_cents": 5, "evidence": [], "code": "RC-1"}),
    );
    assert_eq!(
        toolgate::block_on(s.call(&ok)).unwrap(),
        ToolResult::text("t", "case for o_1: 5 cents")
    );
    assert_eq!(s.end().outcomes.get(&Outcome::Ok), Some(&1));
}
