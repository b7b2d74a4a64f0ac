//! Tools that answer with content blocks (`toolgate::content::Content`): the blocks reach the
//! `tool_result` as they were built; a bad block is an internal `tool_error` (the model reads the
//! generic text, the audit line's `detail` says which block and why); an image over the result
//! limit is left out whole and the audit line's `content_bytes` keeps the full size; hand-built
//! tools answer with `String`, `Content` or `ToolResultContent`, sync or async.

use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, ToolError, ToolUse,
    audit::AuditLog,
    content::{Content, Document, INTERNAL_ERROR_MESSAGE, Image, ToolResultContent},
    dispatch::{BoxFuture, Env, Limits, ToolDef},
};

use crate::support::{TempDir, json_lines};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

mod tools {
    use toolgate::{
        ToolError,
        content::{Content, Document, Image},
        tool,
    };

    /// Draws a picture of the given size, as a PNG whose base64 is `bytes` long.
    #[tool]
    fn picture(
        /// The base64 length, a multiple of 4.
        bytes: usize,
    ) -> Content {
        Content::new()
            .text("Here is the picture.")
            .image(Image::png("A".repeat(bytes)))
    }

    /// A tool whose image is a data URL, a common mistake.
    #[tool]
    fn data_url() -> Content {
        Content::new().image(Image::png(format!("data:image/png;base64,{}", super::PNG)))
    }

    /// A document from a storage that may be down: `?` on a library error.
    #[tool]
    async fn stored_report(
        /// Whether the storage is down.
        down: bool,
    ) -> Result<Content, ToolError> {
        if down {
            Err(std::io::Error::other(
                "s3://reports-bucket?X-Amz-Signature=abc: timed out",
            ))?;
        }
        Ok(Content::new().document(Document::text("All good.")))
    }

    /// Nothing to show: no blocks at all.
    #[tool]
    fn empty() -> Content {
        Content::new().text("")
    }
}

fn dispatcher(dir: &TempDir, limits: Limits) -> Dispatcher {
    Dispatcher::builder()
        .registered_under(concat!(module_path!(), "::tools"))
        .limits(limits)
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `calls` in one session; the results as JSON, and the session's audit lines.
fn run(limits: Limits, calls: &[ToolUse]) -> (Vec<Value>, Vec<Value>) {
    let dir = TempDir::new("content");
    let d = dispatcher(&dir, limits);
    let s = d.session(HookContext::builder("u_1", "sess_content").build());
    let results = calls
        .iter()
        .map(|c| {
            let r = toolgate::block_on(s.call(c)).unwrap_or_else(|h| panic!("{h:?}"));
            serde_json::to_value(&r).unwrap()
        })
        .collect();
    s.end();
    (results, json_lines(&dir.path().join("audit_log.jsonl")))
}

#[test]
fn a_bad_block_is_an_internal_tool_error_naming_it_for_the_operator() {
    let (results, lines) = run(
        Limits::default(),
        &[ToolUse::new("toolu_1", "data_url", json!({}))],
    );
    assert_eq!(
        results[0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
               "content": INTERNAL_ERROR_MESSAGE})
    );
    assert_eq!(lines[0]["outcome"], "tool_error");
    assert_eq!(
        lines[0]["detail"],
        "the tool's content block 0 is not valid: (`image`) `source.data` is not base64: it is a \
         `data:` URL; give only the base64 after `base64,`"
    );
}

#[test]
fn a_library_error_of_a_content_tool_stays_internal() {
    let (results, lines) = run(
        Limits::default(),
        &[
            ToolUse::new("toolu_1", "stored_report", json!({"down": true})),
            ToolUse::new("toolu_2", "stored_report", json!({"down": false})),
            ToolUse::new("toolu_3", "empty", json!({})),
        ],
    );
    assert_eq!(
        results,
        [
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                   "content": INTERNAL_ERROR_MESSAGE}),
            json!({"type": "tool_result", "tool_use_id": "toolu_2", "content": [
                {"type": "document",
                 "source": {"type": "text", "media_type": "text/plain", "data": "All good."}}]}),
            // No blocks: a result without `content` (the Messages API's "empty tool result").
            json!({"type": "tool_result", "tool_use_id": "toolu_3"}),
        ]
    );
    assert_eq!(
        lines[0]["detail"],
        "s3://reports-bucket?X-Amz-Signature=abc: timed out"
    );
    assert_eq!([&lines[1]["outcome"], &lines[2]["outcome"]], ["ok", "ok"]);
}

#[test]
fn an_image_over_the_limit_is_left_out_whole_and_fits_a_raised_limit() {
    // A 5 MB image: its block is 5 000 000 bytes of base64 and 78 bytes of JSON around it; the
    // caption is 20 bytes.
    let five_mb = 5_000_000;
    let call = ToolUse::new("toolu_big", "picture", json!({"bytes": five_mb}));
    let (results, lines) = run(Limits::default(), std::slice::from_ref(&call));
    assert_eq!(
        results[0],
        json!({"type": "tool_result", "tool_use_id": "toolu_big", "content": [
            {"type": "text", "text": "Here is the picture."},
            {"type": "text", "text":
                "[toolgate: result cut at 20 of 5000098 bytes; left out: 1 image]"}
        ]})
    );
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[0]["content_bytes"], 5_000_098);
    assert_eq!(
        lines[0]["content"],
        "Here is the picture.\n[toolgate: result cut at 20 of 5000098 bytes; left out: 1 image]"
    );

    // With room for it, the image is kept whole and nothing is cut.
    let (results, lines) = run(
        Limits::default().max_result_bytes(6 << 20),
        std::slice::from_ref(&call),
    );
    let blocks = results[0]["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[1]["source"]["data"].as_str().unwrap().len(), five_mb);
    assert!(lines[0].get("content_bytes").is_none());
}

/// Arguments of the hand-built tools.
#[derive(Deserialize, schemars::JsonSchema)]
struct Pick {
    /// Which answer.
    which: String,
}

fn answer(which: &str) -> Result<Content, ToolError> {
    match which {
        "chart" => Ok(Content::new().text("chart:").image(Image::png(PNG))),
        "report" => Ok(Content::new().document(Document::pdf_url("https://x.test/r.pdf"))),
        _ => Err(ToolError::new(format!("no answer named {which}"))),
    }
}

fn later_content(_env: Env<'_>, args: Pick) -> BoxFuture<'_, Result<Content, ToolError>> {
    Box::pin(async move { answer(&args.which) })
}

fn later_text(_env: Env<'_>, args: Pick) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move { Ok(format!("text for {}", args.which)) })
}

fn later_either(_env: Env<'_>, args: Pick) -> BoxFuture<'_, Result<ToolResultContent, ToolError>> {
    Box::pin(async move {
        Ok(match args.which.as_str() {
            "text" => ToolResultContent::Text("plain".into()),
            // Blocks given as `ToolResultContent` are checked like `Content`.
            _ => ToolResultContent::Blocks(
                Content::new().image(Image::gif("R0lG=")).blocks().to_vec(),
            ),
        })
    })
}

#[test]
fn hand_built_tools_answer_with_text_content_or_either_sync_or_async() {
    let d = Dispatcher::builder()
        .tool(ToolDef::sync("now", "Answers now.", |_env, a: Pick| {
            answer(&a.which)
        }))
        .tool(ToolDef::new_async("later", "Answers later.", later_content))
        .tool(ToolDef::new_async(
            "later_text",
            "Answers text later.",
            later_text,
        ))
        .tool(ToolDef::new_async(
            "either",
            "Answers either.",
            later_either,
        ))
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_1", "sess_hand").build());
    let call = |id: &str, name: &str, which: &str| {
        let r = toolgate::block_on(s.call(&ToolUse::new(id, name, json!({"which": which}))))
            .unwrap_or_else(|h| panic!("{h:?}"));
        serde_json::to_value(&r).unwrap()
    };
    let chart = json!([{"type": "text", "text": "chart:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]);
    assert_eq!(call("t1", "now", "chart")["content"], chart);
    assert_eq!(call("t2", "later", "chart")["content"], chart);
    assert_eq!(
        call("t3", "later", "report")["content"],
        json!([{"type": "document", "source": {"type": "url", "url": "https://x.test/r.pdf"}}])
    );
    assert_eq!(
        call("t4", "now", "nothing"),
        json!({"type": "tool_result", "tool_use_id": "t4", "is_error": true,
               "content": "no answer named nothing"})
    );
    assert_eq!(call("t5", "later_text", "x")["content"], "text for x");
    assert_eq!(call("t6", "either", "text")["content"], "plain");
    // `R0lG=` is 5 bytes: not padded base64.
    assert_eq!(
        call("t7", "either", "image"),
        json!({"type": "tool_result", "tool_use_id": "t7", "is_error": true,
               "content": INTERNAL_ERROR_MESSAGE})
    );
    let summary = s.end();
    assert_eq!(summary.calls, 7);
}
