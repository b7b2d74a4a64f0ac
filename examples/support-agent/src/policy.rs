//! The agent's rules, each a `#[pre_hook]`: cheap and decisive checks first, the one that
//! awaits the ledger last.
//!
//! | order | hook | tools | rule |
//! |---|---|---|---|
//! | 10 | `premium_only` | `prepare_case_file`, `issue_refund` | only premium customers |
//! | 20 | `no_case_files_during_deploy` | `prepare_case_file` | not Thursdays 02:00–04:00 UTC |
//! | 30 | `own_records_only` | `lookup_user`, `get_order_details`, `prepare_case_file`, `issue_refund` | the session's user and their orders only |
//! | 40 | `cap_faq_limit` | `search_faq` | `limit` above 5 is rewritten to 5 |
//! | 45 | `large_refund_needs_approval` | `issue_refund` | a refund above 20000 cents needs a person's approval (`ask`) |
//! | 50 | `weekly_refund_limit` | `issue_refund` | at most 50000 cents per customer per ISO week |
//!
//! The rules that read one tool's input take it typed (`&FaqQuery`, `&RefundRequest`, the
//! structs `#[tool(input = …)]` generates): the fields are there, with their types, and a rewrite
//! is a value of the same struct. `own_records_only` reads the `user_id` and `order_id` of four
//! tools with four input types, so it reads the JSON input (see its doc comment).
//!
//! Every fact a rule decides on comes from the session's `HookContext` (user, tier, clock) or
//! the shop's own records, never from what the model claims. A denial tells the model why and,
//! where there is one, what to do instead.

use std::time::SystemTime;

use jiff::civil::Weekday;
use serde_json::Value;
use toolgate::{Decision, HookContext, State, ToolUse, pre_hook};

use super::tools::{FaqQuery, RefundRequest};

use super::ledger::{IsoWeek, Ledger, OutOfRange, utc};
use super::seed;
// Matchers name tools by path (`tools::issue_refund`), so a misspelling does not compile.
use super::tools;

// The limit lives with the ledger, which checks it again where a refund is recorded.
pub use super::ledger::{WEEKLY_REFUND_LIMIT_CENTS, WeeklyRefundLimit};

/// Refunds above this many cents need a person's approval.
pub const APPROVAL_ABOVE_CENTS: u64 = 20_000;

/// The most entries `search_faq` may return.
pub const FAQ_LIMIT_MAX: u32 = 5;

/// Whether `at` falls in the weekly deploy window: Thursdays from 02:00 (inclusive) to 04:00
/// (exclusive), UTC.
pub fn in_deploy_window(at: SystemTime) -> Result<bool, OutOfRange> {
    let t = utc(at)?;
    Ok(t.weekday() == Weekday::Thursday && (2..4).contains(&t.hour()))
}

/// A string field of a validated input (absent when the tool has no such field).
fn field<'a>(call: &'a ToolUse, name: &str) -> Option<&'a str> {
    call.input.get(name).and_then(Value::as_str)
}

/// Case files and refunds are for premium customers. The tier is the host's fact; a model that
/// was talked into "this is really a credit, not a refund" still cannot open a case.
#[pre_hook(order = 10, tools = [tools::prepare_case_file, tools::issue_refund])]
pub fn premium_only(ctx: &HookContext) -> Decision {
    match ctx.tier() {
        Some("premium") => Decision::Allow,
        tier => Decision::deny_instead(
            format!(
                "case files and refunds are for premium customers, and this customer's tier is \
                 {}.",
                tier.unwrap_or("unknown")
            ),
            "Answer from the refund policy (search_faq), or tell the customer that upgrading to \
             premium includes refunds handled by support.",
        ),
    }
}

/// No case files during the weekly deploy window (Thursdays 02:00–04:00 UTC, by the context's
/// clock): the case system is being redeployed.
#[pre_hook(order = 20, tools = [tools::prepare_case_file])]
pub fn no_case_files_during_deploy(ctx: &HookContext) -> Result<Decision, OutOfRange> {
    if !in_deploy_window(ctx.now())? {
        return Ok(Decision::Allow);
    }
    Ok(Decision::deny_instead(
        "case files cannot be opened during the weekly deploy window, Thursdays 02:00 to 04:00 \
         UTC.",
        "Tell the customer the case will be opened after 04:00 UTC today, and keep the details \
         they gave so you can call prepare_case_file then.",
    ))
}

/// A `user_id` in the input must be the session's user, and an `order_id` one of that user's
/// orders. An order that does not exist is denied with the same words as another customer's,
/// so the hook tells nobody whether an order id exists.
///
/// Untyped on purpose: it guards four tools whose inputs are four types, and reads the same two
/// fields of each by name. A typed hook takes one type, so this rule would be four hooks (and a
/// fifth tool with a `user_id` would need a fifth); as one `&ToolUse` hook it reads "whatever
/// the tool, these two fields belong to the signed-in customer".
#[pre_hook(order = 30, tools = [tools::lookup_user, tools::get_order_details, tools::prepare_case_file, tools::issue_refund])]
pub fn own_records_only(ctx: &HookContext, call: &ToolUse) -> Decision {
    if let Some(user_id) = field(call, "user_id")
        && user_id != ctx.user_id()
    {
        return Decision::deny_instead(
            format!(
                "this conversation can only use the signed-in customer's own account, and \
                 {user_id} is not it."
            ),
            format!(
                "Use the signed-in customer's id, {}, or ask them what they need for their own \
                 account.",
                ctx.user_id()
            ),
        );
    }
    if let Some(order_id) = field(call, "order_id") {
        let owned = seed::order(order_id).is_some_and(|o| o.owner == ctx.user_id());
        if !owned {
            return Decision::deny_instead(
                format!("order {order_id} is not one of the signed-in customer's orders."),
                "Ask the customer to check the order number (lookup_user lists their orders).",
            );
        }
    }
    Decision::Allow
}

/// `search_faq` returns at most 5 entries: a larger `limit` is rewritten to 5 (the call goes on;
/// the audit line records the rewrite). Typed: it applies to the tool that takes a `FaqQuery`.
#[pre_hook(order = 40)]
pub fn cap_faq_limit(query: &FaqQuery) -> Decision<FaqQuery> {
    match query.limit {
        Some(limit) if limit > FAQ_LIMIT_MAX => Decision::Rewrite(FaqQuery {
            query: query.query.clone(),
            limit: Some(FAQ_LIMIT_MAX),
        }),
        _ => Decision::Allow,
    }
}

/// A refund above 20000 cents needs a person's approval (typed, as the weekly limit): the hook asks ([`Decision::ask`]), the
/// later rules still decide (the weekly limit still denies), and the host's approver answers
/// inline, or the turn pauses until a person decides (`--resume … --approve` / `--deny`).
#[pre_hook(order = 45, tools = [tools::issue_refund])]
pub fn large_refund_needs_approval(request: &RefundRequest) -> Decision<RefundRequest> {
    let amount = request.amount_cents;
    if amount > APPROVAL_ABOVE_CENTS {
        Decision::ask(format!(
            "a refund of {amount} cents is above {APPROVAL_ABOVE_CENTS} cents and needs a \
             person's approval"
        ))
    } else {
        Decision::Allow
    }
}

/// A customer gets at most 50000 cents (the [`WeeklyRefundLimit`] state) of refunds per ISO week
/// (UTC, by the context's clock):
/// the refunds the ledger holds for the order's owner this week, from every conversation and
/// worker on the store, plus this one must not exceed it (the ledger checks it again where the
/// refund is recorded: another worker may pay this customer in between). Awaits the ledger, so
/// it runs last. A clock outside the calendar's range is an `Err`:
/// the agent halts (fail closed). Typed: it applies to the tool that takes a `RefundRequest`,
/// whose two fields are there by type (no missing-field case to fail on).
#[pre_hook(order = 50, tools = [tools::issue_refund])]
pub async fn weekly_refund_limit(
    ctx: &HookContext,
    request: &RefundRequest,
    ledger: State<Ledger>,
    limit: State<WeeklyRefundLimit>,
) -> Result<Decision<RefundRequest>, String> {
    let WeeklyRefundLimit(limit) = *limit;
    let (order_id, amount) = (request.order_id.as_str(), request.amount_cents);
    // An order the shop does not have has no owner and no refunds to count: the refund tool
    // refuses it itself (and in the agent `own_records_only` denied it already).
    let Some(order) = seed::order(order_id) else {
        return Ok(Decision::Allow);
    };
    let week = IsoWeek::of(ctx.now()).map_err(|e| e.to_string())?;
    // A ledger that cannot be read cannot be checked: the rule fails and the agent halts.
    let already = ledger
        .refunded_in_week(order.owner, week)
        .await
        .map_err(|e| e.to_string())?;
    let total = already.saturating_add(amount);
    if total <= limit {
        return Ok(Decision::Allow);
    }
    let left = limit.saturating_sub(already);
    let instead = if left == 0 {
        "No more refunds can be issued to this customer this week; tell them the rest will be \
         reviewed by a human agent."
            .to_owned()
    } else {
        format!(
            "Refund at most {left} cents now and tell the customer the rest will be reviewed by \
             a human agent."
        )
    };
    Ok(Decision::deny_instead(
        format!(
            "a refund of {amount} cents would bring this customer's refunds in ISO week {week} to \
             {total} cents, above the weekly limit of {limit} cents \
             ({already} cents already refunded this week)."
        ),
        instead,
    ))
}
