//! The agent's six tools, each a `#[tool]` function. The doc comments are what the model reads
//! (the tool's `description` and each property's).
//!
//! The tools check what only they can check (an empty evidence list, an amount above what is
//! left to refund, an order that does not exist) and answer with an error the model can act on
//! (`tool_error`). Who may call them is the hooks' business (`policy.rs`): by the time a tool
//! runs, its input matched the schema and every PreToolUse hook allowed it.
//!
//! `search_faq` and `issue_refund` name their generated input structs (`input = FaqQuery`,
//! `input = RefundRequest`), so the rules on them take their input typed (`policy.rs`).
//!
//! Each tool declares its effect: the three lookups read, `prepare_case_file`, `issue_refund`
//! and `create_jira_ticket` write. The agent's builder counts an undeclared tool as a write
//! (`undeclared_effects_are_writes`), so a tool added without an effect or a write tool added
//! without a rule does not build. `create_jira_ticket` has no rule, and says why in
//! `unguarded = …`.
//!
//! Only text written for the model reaches it: the tools' own messages are `ToolError::new`, and
//! the ledger's `RefundRefused` (whose `Display` is written for the model) is opted in with
//! `ToolError::for_model`. Any other error (a calendar failure here, a database error in a real
//! shop) is internal: the model reads the generic message and the audit line's `detail` keeps
//! the error.

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use toolgate::{HookContext, State, ToolError, tool};

use super::ledger::{IsoWeek, Ledger, RefundError, WeeklyRefundLimit};
use super::seed;

/// The queue `create_jira_ticket` files into: numbers tickets `SUP-1`, `SUP-2`, … per
/// dispatcher.
#[derive(Debug, Default)]
pub struct TicketQueue {
    last: AtomicU32,
}

/// The answer for an order id the shop does not have: written for the model
/// (`ToolError::new`), so the model reads it as is.
///
/// Kept on purpose although the agent never reaches it: `own_records_only` denies an unknown
/// order before any tool runs. A tool is also callable directly, or by a dispatcher with other
/// hooks, and a missing order must then be an error the model can act on, not a panic.
fn no_such_order(order_id: &str) -> ToolError {
    ToolError::new(format!(
        "No order has the id {order_id}; check the order number with the customer."
    ))
}

/// Looks up a customer account: its tier (`free` or `premium`) and the ids of its orders.
/// Returns `{"user_id": "u_001", "tier": "premium", "orders": ["o_1001", …]}`.
#[tool(effect = "read", open_world = false)]
pub fn lookup_user(
    /// The customer's id, e.g. `u_001`.
    user_id: String,
) -> Result<Value, ToolError> {
    let customer = seed::customer(&user_id).ok_or_else(|| {
        ToolError::new(format!(
            "No customer has the id {user_id}; check the id with the customer."
        ))
    })?;
    let orders: Vec<&str> = seed::orders_of(customer.user_id)
        .map(|o| o.order_id)
        .collect();
    Ok(json!({
        "user_id": customer.user_id,
        "tier": customer.tier,
        "orders": orders,
    }))
}

/// Gets one order: its owner, what was paid and what was refunded so far, in cents. Returns
/// `{"order_id": "o_1001", "user_id": "u_001", "amount_cents": 2599, "refunded_cents": 0}`.
#[tool(effect = "read", open_world = false)]
pub async fn get_order_details(
    /// The order's id, e.g. `o_1001`.
    order_id: String,
    ledger: State<Ledger>,
) -> Result<Value, ToolError> {
    let order = seed::order(&order_id).ok_or_else(|| no_such_order(&order_id))?;
    let refunded = ledger.refunded_for_order(order.order_id).await?;
    Ok(json!({
        "order_id": order.order_id,
        "user_id": order.owner,
        "amount_cents": order.amount_cents,
        "refunded_cents": refunded,
    }))
}

/// Searches the help centre (refund windows, damaged or missing orders, shipping fees,
/// premium). Returns the best-matching entries first, as `[{"question": "…", "answer": "…"}]`
/// (an empty array when nothing matches).
#[tool(effect = "read", open_world = false, input = FaqQuery)]
pub fn search_faq(
    /// What the customer asked, in their words.
    query: String,
    /// How many entries to return, at most 5 (default 3).
    limit: Option<u32>,
) -> Value {
    let entries: Vec<Value> = seed::search_faq(&query)
        .into_iter()
        // Lossless: `usize` is at least 32 bits on every target toolgate supports.
        .take(limit.unwrap_or(3) as usize)
        .map(|e| json!({ "question": e.question, "answer": e.answer }))
        .collect();
    Value::Array(entries)
}

/// Prepares a case file for a problem with one of the customer's orders (damaged, missing,
/// wrong item), the step before a refund. Needs at least one piece of evidence. Returns
/// `{"case_id": "case_o_1001", "status": "open", …}`.
#[tool(
    effect = "write",
    destructive = false,
    idempotent = true,
    open_world = false
)]
pub fn prepare_case_file(
    /// The customer's id, e.g. `u_001`.
    user_id: String,
    /// The order the case is about, e.g. `o_1001`.
    order_id: String,
    /// What went wrong, in a sentence.
    reason: String,
    /// What backs the claim: file names of photos or screenshots, or short descriptions. At
    /// least one.
    evidence: Vec<String>,
) -> Result<Value, ToolError> {
    let order = seed::order(&order_id).ok_or_else(|| no_such_order(&order_id))?;
    if evidence.is_empty() {
        return Err(ToolError::new(
            "A case file needs at least one piece of evidence (a photo, a screenshot, a \
             tracking page). Ask the customer for one, then call prepare_case_file again with it \
             in `evidence`.",
        ));
    }
    Ok(json!({
        "case_id": format!("case_{}", order.order_id),
        "user_id": user_id,
        "order_id": order.order_id,
        "reason": reason,
        "evidence": evidence,
        "status": "open",
    }))
}

/// Refunds part or all of an order to the customer's original payment method. Refunds on one
/// order cannot add up to more than was paid for it. Returns `{"refund_id": "re_0001",
/// "order_id": "o_1001", "amount_cents": 2599, "refunded_total_cents": 2599, "status":
/// "issued"}`.
#[tool(
    effect = "write",
    destructive = true,
    idempotent = false,
    open_world = true,
    input = RefundRequest
)]
pub async fn issue_refund(
    /// The order to refund, e.g. `o_1001`.
    order_id: String,
    /// The amount to refund, in cents (2599 is $25.99).
    amount_cents: u64,
    ctx: &HookContext,
    ledger: State<Ledger>,
    limit: State<WeeklyRefundLimit>,
) -> Result<Value, ToolError> {
    let order = seed::order(&order_id).ok_or_else(|| no_such_order(&order_id))?;
    if amount_cents == 0 {
        return Err(ToolError::new(
            "amount_cents must be at least 1: give the amount to refund in cents.",
        ));
    }
    // Internal (what `?` does with a library error): the model reads the generic message.
    let week = IsoWeek::of(ctx.now())?;
    // Written for the model: shown on purpose; a ledger that failed is internal.
    let recorded = ledger
        .record_refund(order, amount_cents, week, limit.0)
        .await
        .map_err(|e| match e {
            RefundError::Refused(refused) => ToolError::for_model(refused),
            RefundError::OverWeeklyLimit(over) => ToolError::for_model(over),
            RefundError::Failed(failed) => ToolError::from(failed),
        })?;
    let refund = &recorded.refund;
    Ok(json!({
        "refund_id": refund.refund_id,
        "order_id": refund.order_id,
        "amount_cents": refund.amount_cents,
        "refunded_total_cents": recorded.order_refunded_cents,
        "status": "issued",
    }))
}

/// Files a ticket for the engineering team about a bug or an outage customers run into (not for
/// a single customer's refund). Returns `{"ticket": "SUP-1", "status": "open"}`.
//
// Not guarded by a rule, on purpose (`unguarded = …` below): a ticket moves no money and shows
// no customer's data, any signed-in customer may report a bug, and engineering triage closes
// duplicates. A rule would have nothing from the trusted context to decide on.
#[tool(
    effect = "write",
    destructive = false,
    idempotent = false,
    open_world = false,
    unguarded = "a ticket files into engineering's own queue: it moves no money, shows no \
                 customer's data, and triage closes duplicates"
)]
pub fn create_jira_ticket(
    /// One line saying what is broken.
    summary: String,
    /// What happens, for whom, and since when.
    description: String,
    queue: State<TicketQueue>,
) -> Value {
    let number = queue.last.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    json!({
        "ticket": format!("SUP-{number}"),
        "summary": summary,
        "description_chars": description.chars().count(),
        "status": "open",
    })
}
