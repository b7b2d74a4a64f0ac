//! The README's tool and hook answering one assistant message as the Messages API returned it:
//! `cargo run --example quickstart` prints the user message the host sends back, one
//! `tool_result` per `tool_use` (the tests run it and check what it prints).

use toolgate::{Decision, Dispatcher, HookContext, Message, Reply, ToolUse, pre_hook, tool};

/// Gets one of the customer's orders: what was paid, in cents.
#[tool]
fn get_order(
    /// The order's id, e.g. `o_1001`.
    order_id: String,
) -> String {
    format!("order {order_id}: 2599 cents paid")
}

/// Customers read their own orders only. The user comes from the host's trusted context,
/// never from the model's input; an order that does not exist gets the same answer.
#[pre_hook(order = 10, tools = [get_order])]
fn own_orders_only(ctx: &HookContext, call: &ToolUse) -> Decision {
    let owner = match call.input["order_id"].as_str() {
        Some("o_1001") => Some("u_001"),
        _ => None,
    };
    if owner == Some(ctx.user_id()) {
        Decision::Allow
    } else {
        Decision::deny_instead(
            "that order is not one of this customer's orders.",
            "Ask the customer to check the order number.",
        )
    }
}

/// The model's answer to "Where are my orders o_1001 and o_3001?": two `tool_use` blocks in one
/// message, the second for another customer's order.
const RESPONSE: &str = r#"{
  "id": "msg_01QsT8vLw3Zk5Xn2Bd7Rf9Gh", "type": "message", "role": "assistant",
  "model": "claude-sonnet-4-5",
  "content": [
    {"type": "text", "text": "I'll look up both orders."},
    {"type": "tool_use", "id": "toolu_01Gq5Wd8Ek2Rt6Yu1Io4Pa7S",
     "name": "get_order", "input": {"order_id": "o_1001"}},
    {"type": "tool_use", "id": "toolu_01Hr6Xe9Fl3Su7Zv2Jp5Qb8T",
     "name": "get_order", "input": {"order_id": "o_3001"}}
  ],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 412, "output_tokens": 96}
}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dispatcher = Dispatcher::builder()
        .registered_under(module_path!())
        .build()?;
    // The host opens a session with what it knows about the signed-in user.
    let session = dispatcher.session(HookContext::builder("u_001", "sess_1").build());
    let message: Message = serde_json::from_str(RESPONSE)?;
    match toolgate::block_on(session.respond(&message))? {
        Reply::Answer(answer) => println!("{}", serde_json::to_string_pretty(&answer)?),
        other => println!("nothing to send back: {other:?}"),
    }
    Ok(())
}
