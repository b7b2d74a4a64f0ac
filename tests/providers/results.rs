//! Tool results per target, against hand-checked golden files under
//! `tests/golden/<target>/results/<case>.json`: a text result, a JSON result, an image with
//! text, documents, images and PDFs by URL, and an error, each as the Messages API
//! `tool_result`, the OpenAI Chat Completions `role: "tool"` message, the Responses
//! `function_call_output`, the Gemini `functionResponse` part and the MCP `CallToolResult` (with
//! `structuredContent` for the JSON result, whose tool has an `outputSchema`); and the MCP
//! `tools/list` entries with their `outputSchema` (`tests/golden/mcp/results/tools_list.json`).

use serde_json::{Value, json};
use toolgate::provider::{gemini, mcp, openai, openai_responses};
use toolgate::{
    Dispatcher, HookContext, ToolResult, ToolUse, dispatch::Limits, provider::Provider,
};

/// A 1×1 PNG.
pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// A minimal PDF.
pub(crate) const PDF: &str = "JVBERi0xLjQKMSAwIG9iaiA8PC9UeXBlIC9DYXRhbG9nPj4gZW5kb2JqCnRyYWlsZXIgPDwvUm9vdCAxIDAgUj4+CiUlRU9GCg==";

mod result_tools {
    use schemars::JsonSchema;
    use serde::Serialize;
    use toolgate::{
        ToolError,
        content::{Content, Document, Image},
        tool,
    };

    /// Gets the forecast for a city, as a sentence.
    #[tool]
    fn get_forecast(
        /// The city, e.g. Lisbon.
        city: String,
    ) -> String {
        format!("{city}: 19°C, sunny")
    }

    /// Current weather data for a location (the MCP spec's `get_weather_data` example).
    #[derive(Serialize, JsonSchema)]
    pub(crate) struct WeatherData {
        /// Temperature in celsius
        temperature: f64,
        /// Weather conditions description
        conditions: String,
        /// Humidity percentage
        humidity: u8,
    }

    /// Get current weather data for a location
    #[tool]
    fn get_weather_data(
        /// City name or zip code
        location: String,
    ) -> WeatherData {
        let _ = location;
        WeatherData {
            temperature: 22.5,
            conditions: "Partly cloudy".into(),
            humidity: 65,
        }
    }

    /// Renders a chart of a metric, as a PNG with a caption.
    #[tool]
    fn render_chart(
        /// The metric, e.g. revenue.
        metric: String,
    ) -> Content {
        Content::new()
            .text(format!("{metric} by month, 2026"))
            .image(Image::png(super::PNG))
    }

    /// Fetches a quarter's report: the PDF and its summary.
    #[tool]
    fn fetch_report(
        /// The quarter, Q1 to Q4.
        quarter: String,
    ) -> Result<Content, ToolError> {
        if !["Q1", "Q2", "Q3", "Q4"].contains(&quarter.as_str()) {
            return Err(ToolError::new(format!(
                "No report for {quarter}; quarters are Q1 to Q4."
            )));
        }
        Ok(Content::new()
            .document(
                Document::pdf(super::PDF)
                    .title(format!("{quarter} 2026 report"))
                    .context("Board-approved figures."),
            )
            .document(Document::text("Revenue up 4%; costs flat.").title("Summary")))
    }

    /// Links to the published chart and report of a quarter.
    #[tool]
    fn report_links(
        /// The quarter, Q1 to Q4.
        quarter: String,
    ) -> Content {
        let q = quarter.to_lowercase();
        Content::new()
            .text(format!("Published material for {quarter}:"))
            .image(Image::url(format!(
                "https://reports.example.com/{q}/chart.png"
            )))
            .document(Document::pdf_url(format!(
                "https://reports.example.com/{q}/report.pdf"
            )))
    }
}

/// The cases: golden file name, and the call.
fn cases() -> Vec<(&'static str, ToolUse)> {
    vec![
        (
            "text",
            ToolUse::new("toolu_text", "get_forecast", json!({"city": "Lisbon"})),
        ),
        (
            "json",
            ToolUse::new(
                "toolu_json",
                "get_weather_data",
                json!({"location": "Lisbon"}),
            ),
        ),
        (
            "image_and_text",
            ToolUse::new("toolu_image", "render_chart", json!({"metric": "Revenue"})),
        ),
        (
            "document",
            ToolUse::new("toolu_document", "fetch_report", json!({"quarter": "Q3"})),
        ),
        (
            "links",
            ToolUse::new("toolu_links", "report_links", json!({"quarter": "Q3"})),
        ),
        (
            "error",
            ToolUse::new("toolu_error", "fetch_report", json!({"quarter": "Q5"})),
        ),
    ]
}

fn dispatcher(limits: Limits) -> Dispatcher {
    Dispatcher::builder()
        .registered_under(concat!(module_path!(), "::result_tools"))
        .limits(limits)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn run(d: &Dispatcher, call: &ToolUse) -> ToolResult {
    let session = d.session(HookContext::builder("u_1", "sess_results").build());
    toolgate::block_on(session.call(call)).unwrap_or_else(|h| panic!("halted: {h:?}"))
}

fn golden(target: &str, case: &str) -> Value {
    let path = format!(
        "{}/tests/golden/{target}/results/{case}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Equal as JSON and in key order (the golden files are written in the order the APIs
/// document their fields).
fn assert_golden(actual: &Value, target: &str, case: &str) {
    let expected = golden(target, case);
    assert_eq!(
        serde_json::to_string_pretty(actual).unwrap(),
        serde_json::to_string_pretty(&expected).unwrap(),
        "tests/golden/{target}/results/{case}.json"
    );
}

/// The Gemini part that made `call` (Gemini gives the call's `id` back in the answer).
fn gemini_call(call: &ToolUse) -> Value {
    json!({"functionCall": {"id": call.id, "name": call.name, "args": call.input}})
}

#[test]
fn every_result_matches_its_golden_file_for_every_target() {
    let d = dispatcher(Limits::default());
    for (case, call) in cases() {
        let result = run(&d, &call);
        assert_golden(&serde_json::to_value(&result).unwrap(), "anthropic", case);
        assert_golden(&openai::tool_message(&result), "openai", case);
        assert_golden(
            &openai_responses::function_call_output(&result),
            "openai-responses",
            case,
        );
        assert_golden(
            &gemini::function_response(&gemini_call(&call), &result),
            "gemini",
            case,
        );
        assert_golden(
            &mcp::call_tool_result(&result, d.output_schema(&call.name)),
            "mcp",
            case,
        );
    }
}

#[test]
fn mcp_tools_list_carries_the_output_schema_of_object_outputs_only() {
    let d = dispatcher(Limits::default());
    let tools = d.tool_definitions_for(Provider::Mcp).unwrap();
    assert_golden(&Value::Array(tools.to_vec()), "mcp", "tools_list");
    let with_schema: Vec<&str> = tools
        .iter()
        .filter(|t| t.get("outputSchema").is_some())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(with_schema, ["get_weather_data"]);
    // What the entries say is what the dispatcher gives the result conversion.
    assert_eq!(
        d.output_schema("get_weather_data"),
        tools[2].get("outputSchema")
    );
    assert_eq!(d.output_schema("get_forecast"), None);
    assert_eq!(d.output_schema("no_such_tool"), None);
    // The entry the public function makes is the dispatcher's.
    assert_eq!(
        mcp::tool_definition(
            "get_weather_data",
            "Get current weather data for a location",
            d.canonical_schema("get_weather_data").unwrap(),
            d.output_schema("get_weather_data"),
        ),
        tools[2]
    );
    // No other target shows an output schema.
    for p in [Provider::Anthropic, Provider::OpenAi, Provider::Gemini] {
        let defs = d.tool_definitions_for(p).unwrap();
        assert!(
            defs.iter().all(|t| !t.to_string().contains("Partly")
                && !t.to_string().contains("Humidity percentage")),
            "{p}"
        );
    }
}

#[test]
fn a_structured_result_cut_at_the_limit_is_an_mcp_error_saying_why() {
    // The JSON text is 63 bytes; a 40-byte limit cuts it, so it is no longer the object.
    let d = dispatcher(Limits::default().max_result_bytes(40));
    let call = ToolUse::new(
        "toolu_cut",
        "get_weather_data",
        json!({"location": "Lisbon"}),
    );
    let result = run(&d, &call);
    assert!(
        !result.is_error,
        "the Messages API result is a cut ok result"
    );
    assert_eq!(
        mcp::call_tool_result(&result, d.output_schema("get_weather_data")),
        json!({
            "content": [
                {"type": "text", "text": "{\"temperature\":22.5,\"conditions\":\"Partly\n\
                                          [toolgate: result cut at 40 of 63 bytes]"},
                {"type": "text", "text": "[toolgate: the structured result was left out: this \
                    text is not the whole JSON object the tool's outputSchema describes (it was \
                    cut at the result limit). Ask for less, for example a narrower query.]"}
            ],
            "isError": true
        })
    );
    // Without an output schema (a host that does not pass one), the cut text is an ok result.
    assert_eq!(
        mcp::call_tool_result(&result, None),
        json!({"content": [{"type": "text", "text": "{\"temperature\":22.5,\"conditions\":\"Partly\n\
                                                     [toolgate: result cut at 40 of 63 bytes]"}],
               "isError": false})
    );
}

#[test]
fn an_image_over_the_limit_is_left_out_whole_for_every_target() {
    // The chart's image block is 174 bytes of compact JSON; its caption 22 bytes.
    let d = dispatcher(Limits::default().max_result_bytes(100));
    let call = ToolUse::new("toolu_big", "render_chart", json!({"metric": "Revenue"}));
    let result = run(&d, &call);
    let marker = "[toolgate: result cut at 22 of 196 bytes; left out: 1 image]";
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"type": "tool_result", "tool_use_id": "toolu_big", "content": [
            {"type": "text", "text": "Revenue by month, 2026"},
            {"type": "text", "text": marker}
        ]})
    );
    assert_eq!(
        openai::tool_message(&result)["content"],
        json!(format!("Revenue by month, 2026\n{marker}"))
    );
    assert_eq!(
        mcp::call_tool_result(&result, None)["content"],
        json!([{"type": "text", "text": "Revenue by month, 2026"},
               {"type": "text", "text": marker}])
    );
}

/// A wrapped caller's blocks that no API but the Messages API has, and a failure with an image:
/// the notes name what was left out.
#[test]
fn blocks_an_api_cannot_carry_become_notes_naming_them() {
    let blocks: Vec<toolgate::content::ContentBlock> = serde_json::from_value(json!([
        {"type": "text", "text": "Sources:"},
        {"type": "search_result", "source": "https://kb.example.com/refunds",
         "title": "Refunds", "content": [{"type": "text", "text": "30 days."}]},
        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}}
    ]))
    .unwrap();
    let ok = ToolResult {
        tool_use_id: "call_1".into(),
        content: Some(toolgate::content::ToolResultContent::Blocks(blocks)),
        is_error: false,
        extra: Default::default(),
    };
    let search_note = "[toolgate: a search_result block was left out: this API's tool results \
                       have no such content]";
    let image_note = "[toolgate: an image (image/gif) was left out: this API's tool results take \
                      text only]";
    assert_eq!(
        openai::tool_message(&ok),
        json!({"role": "tool", "tool_call_id": "call_1", "content": format!(
            "Sources:\n[toolgate: a search_result block was left out: this API's tool results \
             take text only]\n{image_note}")})
    );
    assert_eq!(
        openai_responses::function_call_output(&ok),
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Sources:"},
            {"type": "input_text", "text": search_note},
            {"type": "input_image", "image_url": "data:image/gif;base64,R0lG"}
        ]})
    );
    assert_eq!(
        mcp::call_tool_result(&ok, None),
        json!({"content": [
            {"type": "text", "text": "Sources:"},
            {"type": "text", "text": search_note},
            {"type": "image", "data": "R0lG", "mimeType": "image/gif"}
        ], "isError": false})
    );
    // A failure is text wherever there is no error flag: the Responses API gets a string too.
    let failed = ToolResult {
        is_error: true,
        ..ok
    };
    assert_eq!(
        openai_responses::function_call_output(&failed)["output"],
        json!(format!(
            "Error: Sources:\n[toolgate: a search_result block was left out: this API's tool \
             results take text only]\n{image_note}"
        ))
    );
    assert_eq!(
        gemini::function_response(&json!({"functionCall": {"name": "kb"}}), &failed),
        json!({"functionResponse": {"name": "kb", "response": {"error": format!(
            "Sources:\n[toolgate: a search_result block was left out: this API's tool results \
             take text only]\n{image_note}")}}})
    );
}
