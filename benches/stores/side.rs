//! What the store benches (`postgres.rs`, `sqlite.rs`) share: one read tool that answers with a
//! line of text, its dispatcher, fresh `tool_use` ids (a repeated id would be a replay), and the
//! median of the rounds.

use serde_json::json;
use toolgate::audit::AuditLog;
use toolgate::dispatch::{Effect, ToolDef};
use toolgate::{Dispatcher, ToolUse};

/// The tool's input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Lookup {
    /// The order.
    order_id: String,
}

/// What the tool answers for every call the benches make.
pub(crate) const ANSWER: &str = "order o_1001 is open";

/// A dispatcher with the `lookup` tool and no hook, writing to `log` when given.
pub(crate) fn dispatcher(log: Option<AuditLog>) -> Dispatcher {
    let mut b = Dispatcher::builder().tool(
        ToolDef::sync("lookup", "Looks an order up.", |_env, l: Lookup| {
            Ok(format!("order {} is open", l.order_id))
        })
        .effect(Effect::read()),
    );
    if let Some(log) = log {
        b = b.audit_log(log);
    }
    b.build().expect("the bench's dispatcher")
}

/// Fresh `tool_use` ids for one side: `toolu_<prefix>_<n>`.
pub(crate) struct Ids {
    prefix: String,
    n: u64,
}

impl Ids {
    pub(crate) fn new(prefix: impl Into<String>) -> Ids {
        Ids {
            prefix: prefix.into(),
            n: 0,
        }
    }

    /// The next call of `lookup` on `o_1001`.
    pub(crate) fn next(&mut self) -> ToolUse {
        self.n += 1;
        ToolUse::new(
            format!("toolu_{}_{}", self.prefix, self.n),
            "lookup",
            json!({"order_id": "o_1001"}),
        )
    }
}

/// The median of `xs` (the mean of the middle two for an even count; NaN for none).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
