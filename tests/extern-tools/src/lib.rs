//! Tools registered in a library crate that depends on `toolgate` alone (no serde, schemars or
//! inventory in its manifest), under `#![forbid(unsafe_code)]`. A binary gets them by linking
//! the crate: `use toolgate_extern_tools as _;` when nothing else names it.
#![forbid(unsafe_code)]

use toolgate::{Decision, HookContext, ToolUse, pre_hook, tool};

/// Looks up an account's balance, in cents.
#[tool]
pub fn account_balance(
    /// The account id, e.g. acc_1.
    account_id: String,
) -> Result<u64, toolgate::ToolError> {
    match account_id.as_str() {
        "acc_1" => Ok(12_500),
        other => Err(toolgate::ToolError::new(format!("No account '{other}'."))),
    }
}

/// Echoes its text (a name the test crate also uses, to show the duplicate check).
#[tool]
pub fn echo(
    /// The text.
    text: String,
) -> String {
    text
}

/// Only the session's own accounts: accounts are named after users here.
#[pre_hook(order = 10, tools = [account_balance])]
pub fn own_account(ctx: &HookContext, call: &ToolUse) -> Decision {
    if call.input["account_id"] == "acc_1" && ctx.user_id() == "u_001" {
        Decision::Allow
    } else {
        Decision::deny("that account is not yours.")
    }
}
