//! MCP: `tools/list` entries, `tools/call` requests in, `CallToolResult` out.
//!
//! Documents: the Model Context Protocol specification, "Tools" (`tools/list`, `tools/call`,
//! "Error Handling").
//!
//! The entry: `{"name": …, "description": …, "inputSchema": …}`, with the Anthropic
//! `input_schema` ([`anthropic_input_schema`]) as `inputSchema`: a JSON Schema object whose root
//! is `"type": "object"`, which is all the spec asks. A tool error is a result with `isError:
//! true`, not a JSON-RPC error, so the model sees it.
//!
//! Calls and results: [`tool_use`] and [`call_tool_result`].

use serde_json::{Value, json};

use super::{ConvertError, Definition, Target, ToolSource, object, string_field};
use crate::content::{ToolResult, ToolUse, kind_of};
use crate::schema::anthropic_input_schema;

/// [`Provider::Mcp`](super::Provider::Mcp).
pub(super) const TARGET: Target = Target {
    name: "mcp",
    strict: false,
    definition,
    request_limits: None,
    cache_control: false,
};

/// `{"name": …, "description": …, "inputSchema": …}`. Never an error.
fn definition(tool: &ToolSource<'_>, _may_be_strict: bool) -> Result<Definition, String> {
    Ok(Definition::plain(json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": anthropic_input_schema(tool.canonical),
    })))
}

// ---- calls in, results out ----

const WHAT: &str = "an MCP tools/call request";

/// A JSON-RPC `tools/call` request as a [`ToolUse`].
///
/// In: `{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name":
/// "get_weather", "arguments": {…}}}`. The `ToolUse` id is the request id as text (`"7"`);
/// an absent `arguments` means `{}`.
///
/// # Errors
/// [`ConvertError`] when the request is not an object, `method` is present and not
/// `"tools/call"`, `id` is not a string or number, or `params.name` is missing.
pub fn tool_use(request: &Value) -> Result<ToolUse, ConvertError> {
    let obj = object(request, WHAT)?;
    if let Some(m) = obj.get("method")
        && m != "tools/call"
    {
        return Err(ConvertError::new(
            WHAT,
            format!("expected method \"tools/call\", found {m}"),
        ));
    }
    let id = match obj.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(ConvertError::new(
                WHAT,
                format!(
                    "`id` must be a string or a number, found {}",
                    kind_of(other)
                ),
            ));
        }
        None => return Err(ConvertError::new(WHAT, "`id` is missing")),
    };
    let params = obj
        .get("params")
        .ok_or_else(|| ConvertError::new(WHAT, "`params` is missing"))?;
    let params = object(params, WHAT)?;
    let name = string_field(params, "name", WHAT)?;
    let input = params.get("arguments").cloned().unwrap_or(Value::Null);
    Ok(ToolUse::new(id, name, input))
}

/// A result as an MCP `CallToolResult`: `{"content": [{"type": "text", "text": "…"}],
/// "isError": false}` (`content` is `[]` for an absent content). A failure is a result with
/// `isError: true`, not a JSON-RPC error, so the model sees it (spec: "Error Handling").
pub fn call_tool_result(result: &ToolResult) -> Value {
    let content = match &result.content {
        None => json!([]),
        Some(c) => json!([{"type": "text", "text": c.text().into_owned()}]),
    };
    json!({"content": content, "isError": result.is_error})
}
