use toolgate::{Decision, pre_hook, tool};

/// Searches the help centre.
#[tool(input = HelpQuery)]
fn help(query: String, limit: Option<u32>) -> String {
    format!("{query} {limit:?}")
}

/// Refunds an order.
#[tool(input = RefundRequest)]
fn refund(order_id: String, amount_cents: u64) -> String {
    format!("{order_id} {amount_cents}")
}

/// A hook on `HelpQuery` cannot rewrite the input into a `RefundRequest`.
#[pre_hook(order = 10)]
fn confused(query: &HelpQuery) -> Decision<RefundRequest> {
    Decision::Rewrite(RefundRequest {
        order_id: query.query.clone(),
        amount_cents: 1,
    })
}

/// Nor answer the untyped `Decision`, whose rewrite is JSON.
#[pre_hook(order = 20)]
fn untyped_answer(_query: &HelpQuery) -> Decision {
    Decision::Allow
}

fn main() {}
