//! What the model reads when a tool fails: only text written for the model is shown to it:
//! `ToolError::new`, a `String`/`&str` error, and errors opted in with `#[tool(errors = "shown")]`
//! or `ToolError::for_model`. Every other error is internal: the model reads
//! `INTERNAL_ERROR_MESSAGE`, the audit line's `detail` gets the error's `Display` and its whole
//! `source()` chain. Each conversion path is pinned: the `tool_result` and the audit line's
//! `detail`.

use std::error::Error;
use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, ToolError, ToolUse,
    audit::AuditLog,
    content::INTERNAL_ERROR_MESSAGE,
    dispatch::{BoxFuture, Env, ToolDef},
};

use crate::support::{self, TempDir};

/// The DSN a database driver puts in its error text, password included.
const DSN_ERROR: &str = "postgres://billing:s3cr3t@db-7/ledger: connection refused";

/// What the driver error was caused by.
const DSN_CAUSE: &str = "tcp connect to 10.0.3.7:5432 refused";

/// `DSN_ERROR: DSN_CAUSE`, the whole chain.
pub(crate) const DSN_CHAIN: &str = "postgres://billing:s3cr3t@db-7/ledger: connection refused: tcp connect \
     to 10.0.3.7:5432 refused";

/// The refusal written for the model.
pub(crate) const REFUSED: &str = "Refund refused: refund at most 599 cents.";

/// What the refusal was caused by (operator detail).
pub(crate) const REFUSED_CAUSE: &str = "ledger row 42 is locked by transaction 9001";

/// A database driver's error: its `Display` names the DSN, password included; its source is the
/// socket error.
#[derive(Debug)]
pub(crate) struct DriverError(std::io::Error);

impl DriverError {
    pub(crate) fn new() -> Self {
        DriverError(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            DSN_CAUSE,
        ))
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(DSN_ERROR)
    }
}

impl Error for DriverError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.0)
    }
}

/// The driver's query: always refused.
pub(crate) fn query() -> Result<String, DriverError> {
    Err(DriverError::new())
}

/// An error whose `Display` is written for the model; its source is operator detail.
#[derive(Debug)]
pub(crate) struct Refused(std::io::Error);

impl Refused {
    pub(crate) fn new() -> Self {
        Refused(std::io::Error::other(REFUSED_CAUSE))
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REFUSED)
    }
}

impl Error for Refused {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.0)
    }
}

/// The ledger's refund: always refused.
pub(crate) fn refund() -> Result<String, Refused> {
    Err(Refused::new())
}

/// A `Display`-only error like `anyhow::Error`: no `std::error::Error` impl; `{}` is the
/// outermost message, `{:#}` the whole chain joined with `": "`.
#[derive(Debug)]
pub(crate) struct Report(Vec<&'static str>);

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.write_str(&self.0.join(": "))
        } else {
            f.write_str(self.0[0])
        }
    }
}

/// A `Display`-only error whose alternate form does not start with its `Display` (`.1`), or is
/// its `Display` (`.1` empty).
#[derive(Debug)]
pub(crate) struct Coded(&'static str, &'static str);

impl fmt::Display for Coded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if f.alternate() && !self.1.is_empty() {
            self.1
        } else {
            self.0
        })
    }
}

mod paths {
    //! One tool per conversion path, each failing every time.
    use super::*;
    use toolgate::tool;

    /// A `String` error: written by the tool's author, shown.
    #[tool]
    pub(crate) fn string_error() -> Result<u32, String> {
        Err("The ledger is closed on Sundays; try again on Monday.".to_owned())
    }

    /// A `&'static str` error: shown.
    #[tool]
    pub(crate) fn str_error() -> Result<u32, &'static str> {
        Err("No customer has that id; check it with the customer.")
    }

    /// `ToolError::new`: shown.
    #[tool]
    pub(crate) fn tool_error_new() -> Result<u32, ToolError> {
        Err(ToolError::new("Order o_9 was not found; check the id."))
    }

    /// A driver error forwarded with `?` into `ToolError`: internal.
    #[tool]
    pub(crate) fn tool_error_question_mark() -> Result<String, ToolError> {
        let rows = query()?;
        Ok(rows)
    }

    /// `ToolError::internal`: internal.
    #[tool]
    pub(crate) fn tool_error_internal() -> Result<String, ToolError> {
        query().map_err(ToolError::internal)
    }

    /// `ToolError::for_model`: the value's `Display` shown, its source to `detail`.
    #[tool]
    pub(crate) fn tool_error_for_model() -> Result<u32, ToolError> {
        Err(ToolError::for_model(Refused::new()))
    }

    /// An `io::Error` whose text holds the DSN: internal.
    #[tool]
    pub(crate) fn io_error() -> std::io::Result<u32> {
        Err(std::io::Error::other(DSN_ERROR))
    }

    /// The driver's error type itself: internal, with its chain.
    #[tool]
    pub(crate) fn driver_error() -> Result<String, DriverError> {
        query()
    }

    /// The same, async.
    #[tool]
    pub(crate) async fn driver_error_async() -> Result<String, DriverError> {
        query()
    }

    /// A `Display`-only error (anyhow-like): internal, its alternate form to `detail`.
    #[tool]
    pub(crate) fn report_error() -> Result<u32, Report> {
        Err(Report(vec![DSN_ERROR, DSN_CAUSE]))
    }

    /// A boxed `Send + Sync` error: internal, with its chain.
    #[tool]
    pub(crate) fn boxed_error() -> Result<u32, Box<dyn Error + Send + Sync>> {
        Err(Box::new(DriverError::new()))
    }

    /// A boxed error that is not `Send`: internal, its chain read at once.
    #[tool]
    pub(crate) fn boxed_local_error() -> Result<u32, Box<dyn Error>> {
        Err(Box::new(DriverError::new()))
    }

    /// An error type written for the model, opted in on the tool.
    #[tool(errors = "shown")]
    pub(crate) fn refused_shown() -> Result<u32, Refused> {
        Err(Refused::new())
    }

    /// The same, async.
    #[tool(errors = "shown")]
    pub(crate) async fn refused_shown_async() -> Result<u32, Refused> {
        Err(Refused::new())
    }

    /// An `io::Error` opted in: its `Display` shown, no source, no `detail`.
    #[tool(errors = "shown")]
    pub(crate) fn io_shown() -> std::io::Result<u32> {
        Err(std::io::Error::other(
            "The export is still running; ask again in a minute.",
        ))
    }

    /// A `Display`-only error opted in: `{}` shown, the rest of `{:#}` to `detail`.
    #[tool(errors = "shown")]
    pub(crate) fn report_shown() -> Result<u32, Report> {
        Err(Report(vec![REFUSED, REFUSED_CAUSE]))
    }

    /// A `Display`-only error opted in whose `{:#}` says something else: all of it to `detail`.
    #[tool(errors = "shown")]
    pub(crate) fn coded_shown() -> Result<u32, Coded> {
        Err(Coded(
            "The export is still running.",
            "export job 7 (state=running)",
        ))
    }

    /// A `Display`-only error opted in whose `{:#}` is its `{}`: no `detail`.
    #[tool(errors = "shown")]
    pub(crate) fn plain_display_shown() -> Result<u32, Coded> {
        Err(Coded("The export is still running.", ""))
    }

    /// The same, not opted in: internal, its text to `detail`.
    #[tool]
    pub(crate) fn plain_display_error() -> Result<u32, Coded> {
        Err(Coded("The export is still running.", ""))
    }

    /// A boxed error opted in.
    #[tool(errors = "shown")]
    pub(crate) fn boxed_shown() -> Result<u32, Box<dyn Error + Send + Sync>> {
        Err(Box::new(Refused::new()))
    }

    /// A boxed error that is not `Send`, opted in.
    #[tool(errors = "shown")]
    pub(crate) fn boxed_local_shown() -> Result<u32, Box<dyn Error>> {
        Err(Box::new(Refused::new()))
    }

    /// `errors = "shown"` on a `String` error: shown, as without it.
    #[tool(errors = "shown")]
    pub(crate) fn string_shown() -> Result<u32, String> {
        Err("The ledger is closed on Sundays; try again on Monday.".to_owned())
    }

    /// `errors = "shown"` does not reach inside a `ToolError`: a driver error forwarded with `?`
    /// is internal there.
    #[tool(errors = "shown")]
    pub(crate) fn tool_error_shown() -> Result<String, ToolError> {
        let rows = query()?;
        Ok(rows)
    }
}

/// Calls each tool of `paths` once (`tool_use` id `toolu_<tool>`) with an audit log, and returns,
/// per tool: the `tool_result` as JSON, and the audit line's `content` and `detail`.
fn run_paths(tools: &[&str]) -> Vec<(String, Value, Value, Option<Value>)> {
    let dir = TempDir::new("errors");
    let d = Dispatcher::builder()
        .registered_under(format!("{}::paths", module_path!()))
        .audit_log(AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_001", "sess_errors").build());
    let results: Vec<Value> = tools
        .iter()
        .map(|t| {
            let call = ToolUse::new(format!("toolu_{t}"), *t, json!({}));
            serde_json::to_value(toolgate::block_on(s.call(&call)).unwrap()).unwrap()
        })
        .collect();
    drop(s);
    let lines = support::json_lines(&dir.join("audit_log.jsonl"));
    assert_eq!(lines.len(), tools.len());
    tools
        .iter()
        .zip(results)
        .zip(lines)
        .map(|((t, result), line)| {
            assert_eq!(line["tool"], *t);
            assert_eq!(line["outcome"], "tool_error");
            (
                (*t).to_owned(),
                result,
                line["content"].clone(),
                line.get("detail").cloned(),
            )
        })
        .collect()
}

/// What `run_paths` should give for `tool`: an `is_error` result with `content`, the same
/// `content` on the audit line, and `detail`.
fn failed(
    tool: &str,
    content: &str,
    detail: Option<&str>,
) -> (String, Value, Value, Option<Value>) {
    (
        tool.to_owned(),
        json!({"type": "tool_result", "tool_use_id": format!("toolu_{tool}"), "is_error": true,
               "content": content}),
        json!(content),
        detail.map(|d| json!(d)),
    )
}

#[test]
fn a_driver_error_forwarded_with_question_mark_keeps_its_password_out_of_the_result() {
    let got = run_paths(&["tool_error_question_mark"]);
    assert_eq!(
        got,
        [failed(
            "tool_error_question_mark",
            INTERNAL_ERROR_MESSAGE,
            Some(DSN_CHAIN)
        )]
    );
    let (_, result, content, detail) = &got[0];
    assert!(!result.to_string().contains("s3cr3t"), "{result}");
    assert!(!content.to_string().contains("s3cr3t"), "{content}");
    assert!(detail.as_ref().unwrap().to_string().contains("s3cr3t"));
}

#[test]
fn each_conversion_path_without_an_opt_in() {
    let sunday = "The ledger is closed on Sundays; try again on Monday.";
    assert_eq!(
        run_paths(&[
            "string_error",
            "str_error",
            "tool_error_new",
            "tool_error_question_mark",
            "tool_error_internal",
            "tool_error_for_model",
            "io_error",
            "driver_error",
            "driver_error_async",
            "report_error",
            "plain_display_error",
            "boxed_error",
            "boxed_local_error",
        ]),
        [
            failed("string_error", sunday, None),
            failed(
                "str_error",
                "No customer has that id; check it with the customer.",
                None
            ),
            failed(
                "tool_error_new",
                "Order o_9 was not found; check the id.",
                None
            ),
            failed(
                "tool_error_question_mark",
                INTERNAL_ERROR_MESSAGE,
                Some(DSN_CHAIN)
            ),
            failed(
                "tool_error_internal",
                INTERNAL_ERROR_MESSAGE,
                Some(DSN_CHAIN)
            ),
            failed("tool_error_for_model", REFUSED, Some(REFUSED_CAUSE)),
            failed("io_error", INTERNAL_ERROR_MESSAGE, Some(DSN_ERROR)),
            failed("driver_error", INTERNAL_ERROR_MESSAGE, Some(DSN_CHAIN)),
            failed(
                "driver_error_async",
                INTERNAL_ERROR_MESSAGE,
                Some(DSN_CHAIN)
            ),
            failed("report_error", INTERNAL_ERROR_MESSAGE, Some(DSN_CHAIN)),
            failed(
                "plain_display_error",
                INTERNAL_ERROR_MESSAGE,
                Some("The export is still running.")
            ),
            failed("boxed_error", INTERNAL_ERROR_MESSAGE, Some(DSN_CHAIN)),
            failed("boxed_local_error", INTERNAL_ERROR_MESSAGE, Some(DSN_CHAIN)),
        ]
    );
}

#[test]
fn each_conversion_path_with_errors_shown() {
    assert_eq!(
        run_paths(&[
            "refused_shown",
            "refused_shown_async",
            "io_shown",
            "report_shown",
            "coded_shown",
            "plain_display_shown",
            "boxed_shown",
            "boxed_local_shown",
            "string_shown",
            "tool_error_shown",
        ]),
        [
            failed("refused_shown", REFUSED, Some(REFUSED_CAUSE)),
            failed("refused_shown_async", REFUSED, Some(REFUSED_CAUSE)),
            failed(
                "io_shown",
                "The export is still running; ask again in a minute.",
                None
            ),
            failed("report_shown", REFUSED, Some(REFUSED_CAUSE)),
            failed(
                "coded_shown",
                "The export is still running.",
                Some("export job 7 (state=running)")
            ),
            failed("plain_display_shown", "The export is still running.", None),
            failed("boxed_shown", REFUSED, Some(REFUSED_CAUSE)),
            failed("boxed_local_shown", REFUSED, Some(REFUSED_CAUSE)),
            failed(
                "string_shown",
                "The ledger is closed on Sundays; try again on Monday.",
                None
            ),
            failed("tool_error_shown", INTERNAL_ERROR_MESSAGE, Some(DSN_CHAIN)),
        ]
    );
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// A hand-built async tool that forwards the driver error with `?`.
fn lookup_async(_env: Env<'_>, _args: NoArgs) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move {
        let rows = query()?;
        Ok(rows)
    })
}

#[test]
fn hand_built_tools_forwarding_with_question_mark_are_internal() {
    let dir = TempDir::new("errors-by-hand");
    let d = Dispatcher::builder()
        .tool(ToolDef::sync("lookup", "Looks up.", |_env, _: NoArgs| {
            let rows = query()?;
            Ok(rows)
        }))
        .tool(ToolDef::new_async(
            "lookup_async",
            "Looks up, async.",
            lookup_async,
        ))
        .tool(ToolDef::sync("refund", "Refunds.", |_env, _: NoArgs| {
            let done = refund().map_err(ToolError::for_model)?;
            Ok(done)
        }))
        .audit_log(AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_001", "sess_by_hand").build());
    let results: Vec<Value> = ["lookup", "lookup_async", "refund"]
        .iter()
        .map(|t| {
            let call = ToolUse::new(format!("toolu_{t}"), *t, json!({}));
            serde_json::to_value(toolgate::block_on(s.call(&call)).unwrap()).unwrap()
        })
        .collect();
    drop(s);
    assert_eq!(
        results,
        [
            json!({"type": "tool_result", "tool_use_id": "toolu_lookup", "is_error": true,
                   "content": INTERNAL_ERROR_MESSAGE}),
            json!({"type": "tool_result", "tool_use_id": "toolu_lookup_async", "is_error": true,
                   "content": INTERNAL_ERROR_MESSAGE}),
            json!({"type": "tool_result", "tool_use_id": "toolu_refund", "is_error": true,
                   "content": REFUSED}),
        ]
    );
    let details: Vec<Value> = support::json_lines(&dir.join("audit_log.jsonl"))
        .iter()
        .map(|l| json!([l["tool"], l["content"], l["detail"]]))
        .collect();
    assert_eq!(
        details,
        [
            json!(["lookup", INTERNAL_ERROR_MESSAGE, DSN_CHAIN]),
            json!(["lookup_async", INTERNAL_ERROR_MESSAGE, DSN_CHAIN]),
            json!(["refund", REFUSED, REFUSED_CAUSE]),
        ]
    );
}

#[test]
fn tool_error_values_say_what_the_model_reads_and_what_the_operator_logs() {
    // The blanket `From` is internal: what `?` does.
    let e = ToolError::from(DriverError::new());
    assert_eq!(
        (e.message(), e.is_internal(), e.detail().as_deref()),
        (INTERNAL_ERROR_MESSAGE, true, Some(DSN_CHAIN))
    );
    let e = ToolError::for_model(Refused::new());
    assert_eq!(
        (e.message(), e.is_internal(), e.detail().as_deref()),
        (REFUSED, false, Some(REFUSED_CAUSE))
    );
    // `for_model` of a `&str` (through `Box<dyn Error>`): shown, nothing for `detail`.
    let e = ToolError::for_model("Try again in a minute.");
    assert_eq!(
        (e.message(), e.is_internal(), e.detail().as_deref()),
        ("Try again in a minute.", false, None)
    );
    let e = ToolError::new("Order o_9 was not found.");
    assert_eq!(
        (e.message(), e.is_internal(), e.detail().as_deref()),
        ("Order o_9 was not found.", false, None)
    );
    // Debug is operator-side: it carries the detail; Display is what the model reads.
    let e = ToolError::from(DriverError::new());
    assert_eq!(e.to_string(), INTERNAL_ERROR_MESSAGE);
    assert_eq!(
        format!("{e:?}"),
        format!(
            "ToolError {{ message: {INTERNAL_ERROR_MESSAGE:?}, internal: true, detail: \
             Some({DSN_CHAIN:?}) }}"
        )
    );
}
