//! Bounds on untrusted input and on results: an input over the byte or depth limit is
//! `invalid_input` with a clear message before any hook or tool sees it (directly, as a JSON
//! string, or through a hook's rewrite); a result over the limit is cut with a marker and the
//! audit line's `content_bytes` keeps its full size (at the limit exactly, an image over it, more
//! blocks than `MAX_RESULT_BLOCKS`). Defaults: 1 MiB input, 32 levels, 256 KiB result.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::{TempDir, json_lines};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolResult, ToolUse,
    audit::AuditLog,
    content::{ContentBlock, ToolResultContent},
    dispatch::{BoxFuture, Limits, PreHookDef, ToolCaller, ToolDef},
};

const MIB: usize = 1 << 20;

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to echo.
    text: String,
}

/// Arguments of `open` (unknown fields allowed, so any object is valid).
#[derive(Deserialize, JsonSchema)]
struct Open {
    /// An optional note.
    #[allow(dead_code)]
    note: Option<String>,
}

/// Arguments of `produce`.
#[derive(Deserialize, JsonSchema)]
struct Produce {
    /// How many bytes to return.
    bytes: usize,
    /// The character to repeat.
    fill: char,
    /// Return the text as an error.
    error: bool,
}

#[derive(Default)]
struct Seen {
    hooks: AtomicUsize,
    tools: AtomicUsize,
}

struct Fixture {
    seen: Arc<Seen>,
    dir: TempDir,
    dispatcher: Dispatcher,
}

fn fixture(limits: Option<Limits>, rewrite_to: Option<Value>) -> Fixture {
    let seen = Arc::new(Seen::default());
    let dir = TempDir::new("limits");
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
    let mut b = Dispatcher::builder()
        .tool(ToolDef::sync(
            "echo",
            "Echoes a text.",
            move |_env, a: Echo| {
                s1.tools.fetch_add(1, Ordering::SeqCst);
                Ok(a.text)
            },
        ))
        .tool(
            ToolDef::sync("open", "Accepts any object.", move |_env, _a: Open| {
                s2.tools.fetch_add(1, Ordering::SeqCst);
                Ok("opened".to_owned())
            })
            .allow_unknown_fields(),
        )
        .tool(ToolDef::sync(
            "produce",
            "Returns a text of the asked size.",
            move |_env, a: Produce| {
                s3.tools.fetch_add(1, Ordering::SeqCst);
                let text: String =
                    std::iter::repeat_n(a.fill, a.bytes / a.fill.len_utf8()).collect();
                if a.error {
                    Err(toolgate::ToolError::new(text))
                } else {
                    Ok(text)
                }
            },
        ))
        .pre_hook(PreHookDef::sync("tests::policy", 1, move |_env, _call| {
            s4.hooks.fetch_add(1, Ordering::SeqCst);
            Ok(match &rewrite_to {
                Some(v) => Decision::Rewrite(v.clone()),
                None => Decision::Allow,
            })
        }))
        .audit_log(AuditLog::open(dir.path()).unwrap());
    if let Some(l) = limits {
        b = b.limits(l);
    }
    Fixture {
        seen,
        dispatcher: b.build().unwrap(),
        dir,
    }
}

impl Fixture {
    fn call(&self, name: &str, input: Value) -> ToolResult {
        let s = self
            .dispatcher
            .session(HookContext::builder("u_1", "sess_limits").build());
        let r = toolgate::block_on(s.call(&ToolUse::new("toolu_1", name, input))).unwrap();
        s.end();
        r
    }

    fn lines(&self) -> Vec<Value> {
        json_lines(&self.dir.path().join("audit_log.jsonl"))
    }

    fn untouched(&self) -> bool {
        self.seen.hooks.load(Ordering::SeqCst) == 0 && self.seen.tools.load(Ordering::SeqCst) == 0
    }
}

fn nested(levels: usize) -> Value {
    let mut v = json!({});
    for _ in 1..levels {
        v = json!({ "a": v });
    }
    v
}

#[test]
fn the_default_limits_are_stated() {
    let l = Limits::default();
    assert_eq!(
        (l.max_input_bytes, l.max_input_depth, l.max_result_bytes),
        (1_048_576, 32, 262_144)
    );
}

#[test]
fn an_input_over_one_mib_is_invalid_before_any_hook_or_tool_sees_it() {
    // `{"text":"…"}` is the text plus 11 bytes of compact JSON.
    let at_limit = fixture(None, None);
    let r = at_limit.call("echo", json!({ "text": "x".repeat(MIB - 11) }));
    assert!(!r.is_error);
    assert_eq!(
        r.content_text().len(),
        262_144 + "\n[toolgate: result cut at 262144 of 1048565 bytes]".len()
    );

    let over = fixture(None, None);
    let r = over.call("echo", json!({ "text": "x".repeat(MIB - 10) }));
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `echo`: the input is too large: 1048577 bytes or more, \
         over the limit of 1048576 bytes; send a smaller input. Send an input that matches the \
         tool's input_schema."
    );
    assert!(over.untouched());
    let lines = over.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["outcome"], "invalid_input");
    // The refused input is not copied into the audit log.
    assert_eq!(
        lines[0]["input"],
        "[input not recorded: over the input limits (1048576 bytes, 32 levels)]"
    );
}

#[test]
fn an_input_nested_far_past_the_limit_is_refused_and_never_serialized() {
    // Built directly (a host that does not parse with serde_json's depth limit of 128): 100 000
    // levels would overflow the stack of any recursive walk or serializer.
    // Built without `json!` (which would serialize its arguments, recursively).
    let mut deep = Value::String("bottom".into());
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut input = serde_json::Map::new();
    input.insert("text".into(), deep);
    let f = fixture(None, None);
    let call = ToolUse::new("toolu_1", "echo", Value::Object(input));
    let s = f
        .dispatcher
        .session(HookContext::builder("u_1", "sess_limits").build());
    let r = toolgate::block_on(s.call(&call)).unwrap();
    s.end();
    // serde_json drops a `Value` recursively: this one would overflow the test's own stack.
    std::mem::forget(call);
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `echo`: the input is nested more than 32 levels deep; \
         flatten it. Send an input that matches the tool's input_schema."
    );
    assert!(f.untouched());
    let lines = f.lines();
    assert_eq!(
        lines[0]["input"],
        "[input not recorded: over the input limits (1048576 bytes, 32 levels)]"
    );
}

#[test]
fn an_input_string_over_the_limit_is_not_parsed() {
    let f = fixture(None, None);
    let text = serde_json::to_string(&json!({ "text": "y".repeat(MIB) })).unwrap();
    let r = f.call("echo", Value::String(text.clone()));
    assert_eq!(
        r.content_text(),
        format!(
            "Error: invalid input for tool `echo`: the input is too large: {} bytes or more, \
             over the limit of 1048576 bytes; send a smaller input. Send an input that matches \
             the tool's input_schema.",
            text.len()
        )
    );
    assert!(f.untouched());
}

#[test]
fn an_input_deeper_than_32_levels_is_invalid_before_any_hook_or_tool_sees_it() {
    let f = fixture(None, None);
    let r = f.call("open", nested(32));
    assert_eq!((r.is_error, r.content_text().as_ref()), (false, "opened"));
    assert_eq!(f.seen.hooks.load(Ordering::SeqCst), 1);

    let f = fixture(None, None);
    for deep in [
        nested(33),
        // An object holding 32 nested arrays: 33 levels.
        serde_json::from_str(&format!("{{\"a\":{}{}}}", "[".repeat(32), "]".repeat(32))).unwrap(),
    ] {
        let r = f.call("open", deep);
        assert!(r.is_error);
        assert_eq!(
            r.content_text(),
            "Error: invalid input for tool `open`: the input is nested more than 32 levels \
             deep; flatten it. Send an input that matches the tool's input_schema."
        );
    }
    assert!(f.untouched());
    assert_eq!(f.lines().len(), 2);
}

#[test]
fn an_input_string_nested_past_the_json_parsers_limit_is_invalid_not_a_crash() {
    let f = fixture(None, None);
    let deep = format!("{}{}", "{\"a\":".repeat(5000), "}".repeat(5000));
    let r = f.call("open", Value::String(deep));
    assert!(r.is_error);
    // serde_json stops at 128 levels: the 128th `{` starts at column 5 × 127 + 1.
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `open`: the input must be a JSON object, but it is a \
         string that is not valid JSON (recursion limit exceeded at line 1 column 636). Send an \
         input that matches the tool's input_schema."
    );
    assert!(f.untouched());
}

#[test]
fn custom_limits_apply_and_a_rewrite_over_them_is_invalid() {
    let limits = Limits::default().max_input_bytes(64).max_input_depth(2);
    let f = fixture(Some(limits), None);
    let r = f.call("open", json!({"a": {"b": {}}}));
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `open`: the input is nested more than 2 levels deep; \
         flatten it. Send an input that matches the tool's input_schema."
    );
    // `{"text":"` + 60 + `"}`: 71 bytes.
    let r = f.call("echo", json!({ "text": "z".repeat(60) }));
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `echo`: the input is too large: 71 bytes or more, over \
         the limit of 64 bytes; send a smaller input. Send an input that matches the tool's \
         input_schema."
    );
    assert!(f.untouched());
    let short = fixture(Some(Limits::default().max_result_bytes(10)), None);
    let r = short.call("echo", json!({ "text": "0123456789abc" }));
    assert_eq!(
        r.content_text(),
        "0123456789\n[toolgate: result cut at 10 of 13 bytes]"
    );

    // A hook's rewrite is held to the same bounds: invalid_input, the tool never runs.
    let f = fixture(Some(limits), Some(json!({ "text": "w".repeat(100) })));
    let r = f.call("echo", json!({"text": "short"}));
    assert!(r.is_error);
    // The rewrite `{"text":"` + 100 + `"}`: 111 bytes.
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `echo`: a policy rewrite of this call produced an input \
         that is invalid (the input is too large: 111 bytes or more, over the limit of 64 bytes; \
         send a smaller input). This is a problem on our side; do not retry the same call."
    );
    assert_eq!(f.seen.tools.load(Ordering::SeqCst), 0);
    let line = &f.lines()[0];
    assert_eq!(line["outcome"], "invalid_input");
    assert_eq!(line["rewritten_by"], json!(["tests::policy"]));
    assert_eq!(
        line["detail"],
        "PreToolUse hook `tests::policy` rewrote the input into an invalid one: the input is too \
         large: 111 bytes or more, over the limit of 64 bytes; send a smaller input"
    );
}

#[test]
fn a_result_over_256_kib_is_cut_with_a_marker_and_its_full_size_is_audited() {
    let f = fixture(None, None);
    let r = f.call(
        "produce",
        json!({"bytes": 300_000, "fill": "a", "error": false}),
    );
    assert!(!r.is_error);
    let text = r.content_text();
    let marker = "\n[toolgate: result cut at 262144 of 300000 bytes]";
    assert_eq!(text.len(), 262_144 + marker.len());
    assert!(text[..262_144].bytes().all(|b| b == b'a'));
    assert_eq!(&text[262_144..], marker);

    // Multi-byte characters: the cut moves back to a character boundary.
    let r = f.call(
        "produce",
        json!({"bytes": 300_000, "fill": "€", "error": true}),
    );
    assert!(r.is_error);
    // `€` is 3 bytes: the cut falls back to 262143 = 3 × 87381.
    assert_eq!(
        r.content_text(),
        format!(
            "{}\n[toolgate: result cut at 262143 of 300000 bytes]",
            "€".repeat(87_381)
        )
    );

    let r = f.call(
        "produce",
        json!({"bytes": 100, "fill": "b", "error": false}),
    );
    assert_eq!(r.content_text(), "b".repeat(100));

    let lines = f.lines();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[0]["content_bytes"], 300_000);
    assert_eq!(
        lines[0]["content"].as_str().unwrap().len(),
        262_144 + marker.len()
    );
    assert_eq!(lines[1]["outcome"], "tool_error");
    assert_eq!(lines[1]["content_bytes"], 300_000);
    assert!(
        lines[2].get("content_bytes").is_none(),
        "only when the content was cut"
    );
}

/// A wrapped caller whose results are content blocks.
struct Blocks;

impl ToolCaller for Blocks {
    fn tool_definitions(&self) -> Vec<Value> {
        vec![
            json!({"name": "pictures", "description": "Returns pictures.",
                    "input_schema": {"type": "object", "properties": {}}}),
        ]
    }

    fn call_tool<'a>(
        &'a self,
        _context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<toolgate::dispatch::CallAnswer, toolgate::Halt>> {
        let text = |t: String| json!({"type": "text", "text": t});
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            text("caption".into()),
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "A".repeat(200_000)}},
            text("z".repeat(100_000)),
        ]))
        .unwrap();
        Box::pin(std::future::ready(Ok(
            toolgate::dispatch::CallAnswer::from_result(ToolResult {
                tool_use_id: call.id.clone(),
                content: Some(ToolResultContent::Blocks(blocks)),
                is_error: false,
                extra: Default::default(),
            }),
        )))
    }
}

#[test]
fn a_block_result_from_a_wrapped_caller_is_cut_too() {
    let dir = TempDir::new("limits-blocks");
    let d = Dispatcher::builder()
        .wrap(Blocks)
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_1", "sess_blocks").build());
    let r = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "pictures", json!({})))).unwrap();
    let Some(ToolResultContent::Blocks(blocks)) = &r.content else {
        panic!("blocks stay blocks");
    };
    // 7 bytes of caption + the image block's compact JSON + 100 000 bytes of text.
    let image = serde_json::to_string(&blocks[1]).unwrap().len();
    assert_eq!(image, 200_078);
    assert_eq!(blocks.len(), 4);
    let ContentBlock::Text(cut) = &blocks[2] else {
        panic!("the crossing text block is cut")
    };
    assert_eq!(cut.text.len(), 262_144 - 7 - image);
    let ContentBlock::Text(marker) = &blocks[3] else {
        panic!("a marker block")
    };
    assert_eq!(
        marker.text,
        "[toolgate: result cut at 262144 of 300085 bytes]"
    );
    s.end();
    assert_eq!(
        json_lines(&dir.path().join("audit_log.jsonl"))[0]["content_bytes"],
        300_085
    );
}

/// A wrapped caller that answers `pictures` with the blocks it holds (a remote server's items).
struct Answers(Vec<Value>);

impl ToolCaller for Answers {
    fn tool_definitions(&self) -> Vec<Value> {
        Blocks.tool_definitions()
    }

    fn call_tool<'a>(
        &'a self,
        _context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<toolgate::dispatch::CallAnswer, toolgate::Halt>> {
        let blocks: Vec<ContentBlock> =
            serde_json::from_value(Value::Array(self.0.clone())).unwrap();
        Box::pin(std::future::ready(Ok(
            toolgate::dispatch::CallAnswer::from_result(ToolResult {
                tool_use_id: call.id.clone(),
                content: Some(ToolResultContent::Blocks(blocks)),
                is_error: false,
                extra: Default::default(),
            }),
        )))
    }
}

/// `pictures` answered by `blocks` through a dispatcher with `limits`: the result as JSON and
/// the audit line's `content_bytes`.
fn answered(blocks: Vec<Value>, limits: Limits) -> (Value, Value) {
    let dir = TempDir::new("limits-answers");
    let d = Dispatcher::builder()
        .wrap(Answers(blocks))
        .limits(limits)
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_1", "sess_answers").build());
    let r = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "pictures", json!({})))).unwrap();
    s.end();
    let line = &json_lines(&dir.path().join("audit_log.jsonl"))[0];
    (
        serde_json::to_value(&r).unwrap()["content"].clone(),
        line["content_bytes"].clone(),
    )
}

/// A result exactly at the limit is kept whole (no `content_bytes`), one byte more is cut; an
/// image larger than the limit as the first block leaves only the marker, never half an image.
#[test]
fn a_result_at_the_limit_is_whole_one_byte_more_is_cut_and_a_first_image_over_it_left_out() {
    let f = fixture(Some(Limits::default().max_result_bytes(10)), None);
    let at = f.call("produce", json!({"bytes": 10, "fill": "a", "error": false}));
    assert_eq!(at.content_text(), "aaaaaaaaaa");
    let over = f.call("produce", json!({"bytes": 11, "fill": "a", "error": false}));
    assert_eq!(
        over.content_text(),
        "aaaaaaaaaa\n[toolgate: result cut at 10 of 11 bytes]"
    );
    let sizes: Vec<Value> = f
        .lines()
        .iter()
        .map(|l| l["content_bytes"].clone())
        .collect();
    assert_eq!(sizes, [Value::Null, json!(11)]);

    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                    "data": "A".repeat(100)}});
    let (content, bytes) = answered(
        vec![image, json!({"type": "text", "text": "caption"})],
        Limits::default().max_result_bytes(64),
    );
    assert_eq!(
        content,
        json!([{"type": "text",
                "text": "[toolgate: result cut at 0 of 185 bytes; left out: 1 image, 1 text block]"}])
    );
    assert_eq!(bytes, json!(185));
}

/// A text block counts its text only, so many small blocks (a remote server's items) fit the
/// byte limit however many they are: past `MAX_RESULT_BLOCKS` the result keeps its first blocks
/// and the marker, 1024 in all, and the audit line keeps the full size.
#[test]
fn a_result_of_more_blocks_than_the_bound_keeps_its_first_ones_and_a_marker() {
    use toolgate::dispatch::MAX_RESULT_BLOCKS;
    assert_eq!(MAX_RESULT_BLOCKS, 1024);
    let many = vec![json!({"type": "text", "text": "a"}); 100_000];
    let (content, bytes) = answered(many, Limits::default());
    let content = content.as_array().unwrap();
    assert_eq!(content.len(), MAX_RESULT_BLOCKS);
    assert!(
        content[..1023]
            .iter()
            .all(|b| *b == json!({"type": "text", "text": "a"}))
    );
    assert_eq!(
        content[1023],
        json!({"type": "text",
               "text": "[toolgate: result cut at 1023 of 100000 blocks; left out: 98977 text blocks]"})
    );
    assert_eq!(bytes, json!(100_000));
    // At the bound, nothing is cut.
    let (content, bytes) = answered(
        vec![json!({"type": "text", "text": ""}); MAX_RESULT_BLOCKS],
        Limits::default(),
    );
    assert_eq!(content.as_array().unwrap().len(), MAX_RESULT_BLOCKS);
    assert_eq!(bytes, Value::Null);
}

#[test]
fn a_huge_unknown_tool_name_is_shown_cut_to_64_characters() {
    let f = fixture(None, None);
    let name = "n".repeat(MIB);
    let r = f.call(&name, json!({}));
    assert_eq!(
        r.content_text(),
        format!(
            "Error: unknown tool '{}…'. Available tools: echo, open, produce.",
            "n".repeat(64)
        )
    );
    assert!(f.untouched());
    assert_eq!(f.lines()[0]["outcome"], "unknown_tool");
}
