//! A paused call whose input has fields the audit log hides, shared by the sealed-input tests
//! of every pending-turn store (`tests/runtime/sealed.rs` in memory, `tests/stores/sqlite.rs`,
//! `tests/postgres/sealed.rs`): a `pay` tool whose input holds a card number (masked to its
//! last four digits) and a PIN nested under `card` (masked whole), and a token that a
//! PreToolUse rewrite adds (masked whole); payments above 20 000 cents wait for a person.
//!
//! [`SECRETS`] are distinctive strings: a test checks that no byte of what a store keeps holds
//! one, as text or as hex, and that the resumed tool got each one.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, Message, ToolUse,
    approval::{SealKey, SealKeys},
    audit::{AuditLogBuilder, AuditRecord, AuditSink, Redaction},
    dispatch::{DispatcherBuilder, Effect, HookError, PreHookDef, ToolDef},
};

/// The card's PIN, hidden by the rule `/card/pin`.
pub(crate) const PIN: &str = "pin-Zq8v-4417";
/// The token the rewrite adds, hidden by the rule `/token`.
pub(crate) const TOKEN: &str = "tok_live_Wm3xR9SECRET";
/// The card number, masked by its rule to its last four digits.
pub(crate) const CARD: &str = "4242424242424242";
/// Every value no kept byte may hold.
pub(crate) const SECRETS: [&str; 3] = [PIN, TOKEN, CARD];

/// The session and user of every sealed-input test.
pub(crate) const SESSION: &str = "sess_sealed";
pub(crate) const USER: &str = "u_sealed";

/// A card.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Card {
    /// The card number.
    number: String,
    /// The PIN.
    pin: String,
}

/// A payment.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Pay {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
    /// The card charged.
    card: Card,
    /// The payment provider's token (added by a hook, never by the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

/// The inputs the `pay` tool ran with, in order.
#[derive(Clone, Default)]
pub(crate) struct Paid(Arc<Mutex<Vec<Value>>>);

impl Paid {
    /// The inputs so far.
    pub(crate) fn inputs(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }
}

/// An audit sink that keeps every line's JSON (already redacted).
#[derive(Clone, Default)]
pub(crate) struct Lines(Arc<Mutex<Vec<Value>>>);

impl AuditSink for Lines {
    fn record(&self, record: &AuditRecord) -> Result<(), HookError> {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_value(record).unwrap());
        Ok(())
    }
}

impl Lines {
    /// The lines so far.
    pub(crate) fn all(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }
}

/// An audit log into `lines`.
pub(crate) fn kept(lines: &Lines) -> AuditLogBuilder {
    toolgate::audit::AuditLog::builder().sink(lines.clone())
}

/// The audit log's rules: the card number cut to its last four digits, the PIN and the token
/// hidden whole.
pub(crate) fn rules() -> Redaction {
    Redaction::new()
        .field_with("pay", "/card/number", |v| {
            let digits = v.as_str().unwrap_or_default();
            let last = &digits[digits.len().saturating_sub(4)..];
            json!(format!("{}{last}", "*".repeat(digits.len() - last.len())))
        })
        .unwrap()
        .field("pay", "/card/pin")
        .unwrap()
        .field("pay", "/token")
        .unwrap()
}

/// The key `k1` (64 bytes of `byte`).
pub(crate) fn key(id: &str, byte: u8) -> SealKey {
    SealKey::new(id, &[byte; SealKey::LEN]).unwrap()
}

/// The keys of the tests' dispatchers: `k1`.
pub(crate) fn keys() -> SealKeys {
    SealKeys::new(key("k1", 0x5a))
}

/// The `pay` dispatcher: see [`builder`]; `keys` seal (none: the dispatcher has no key).
pub(crate) fn dispatcher(
    audit: AuditLogBuilder,
    paid: &Paid,
    keys: Option<SealKeys>,
) -> Dispatcher {
    let b = builder(audit, paid);
    match keys {
        Some(keys) => b.seal_keys(keys),
        None => b,
    }
    .build()
    .unwrap()
}

/// The `pay` dispatcher's builder: the tool records its inputs in `paid`; `app::attach_token`
/// adds [`TOKEN`] to every payment; `app::large_payment` asks a person about payments above
/// 20 000 cents; `audit` gets [`rules`].
pub(crate) fn builder(audit: AuditLogBuilder, paid: &Paid) -> DispatcherBuilder {
    let record = paid.clone();
    Dispatcher::builder()
        .tool(
            ToolDef::sync("pay", "Charges a card.", move |_env, p: Pay| {
                record
                    .0
                    .lock()
                    .unwrap()
                    .push(serde_json::to_value(&p).unwrap());
                Ok(format!("paid {} on {}", p.amount_cents, p.order_id))
            })
            .effect(Effect::write()),
        )
        .pre_hook(PreHookDef::sync(
            "app::attach_token",
            5,
            |_env, call: &ToolUse| {
                if call.input.get("token").is_some() {
                    return Ok(Decision::Allow);
                }
                let mut input = call.input.clone();
                input["token"] = json!(TOKEN);
                Ok(Decision::rewrite(input))
            },
        ))
        .pre_hook(PreHookDef::sync(
            "app::large_payment",
            10,
            |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n > 20_000 => Decision::ask("payments above 20000 cents"),
                    _ => Decision::Allow,
                })
            },
        ))
        .audit_log(audit.redaction(rules()).build().unwrap())
}

/// The input the model sends for a payment.
pub(crate) fn sent(order: &str, cents: u64) -> Value {
    json!({"order_id": order, "amount_cents": cents, "card": {"number": CARD, "pin": PIN}})
}

/// The turn: `toolu_small` (900 cents, runs at once) and `toolu_big` (25 000 cents, waits).
pub(crate) fn message() -> Message {
    super::assistant_with_id(
        "msg_sealed",
        json!([
            {"type": "tool_use", "id": "toolu_small", "name": "pay", "input": sent("o_0", 900)},
            {"type": "tool_use", "id": "toolu_big", "name": "pay", "input": sent("o_1", 25000)}
        ]),
        "tool_use",
    )
}

/// What a tool runs with for `sent(order, cents)`: the token added.
pub(crate) fn real(order: &str, cents: u64) -> Value {
    json!({"order_id": order, "amount_cents": cents, "card": {"number": CARD, "pin": PIN},
           "token": TOKEN})
}

/// The waiting call's `input` as the paused turn shows it.
pub(crate) fn shown_input() -> Value {
    json!({"order_id": "o_1", "amount_cents": 25000,
           "card": {"number": "************4242", "pin": "[redacted]"}})
}

/// The waiting call's `effective_input` as the paused turn shows it.
pub(crate) fn shown_effective() -> Value {
    json!({"order_id": "o_1", "amount_cents": 25000,
           "card": {"number": "************4242", "pin": "[redacted]"}, "token": "[redacted]"})
}

/// The resumed turn's answer when the big payment is approved.
pub(crate) fn resumed_answer() -> Value {
    json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_small", "content": "paid 900 on o_0"},
        {"type": "tool_result", "tool_use_id": "toolu_big", "content": "paid 25000 on o_1"}
    ]})
}

/// Lowercase hex of `text`'s bytes.
fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Which of [`SECRETS`] `bytes` holds, as text or as hex (either case): none, for a kept byte.
pub(crate) fn secrets_in(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes).to_lowercase();
    let mut found = Vec::new();
    for secret in SECRETS {
        if text.contains(&secret.to_lowercase()) {
            found.push(secret.to_owned());
        }
        if text.contains(&hex(secret)) {
            found.push(format!("{secret} as hex"));
        }
    }
    found
}

/// Every file under `dir` (its folders walked) that holds one of [`SECRETS`], with what it
/// holds; an empty list when none does. `files` counts the files read.
pub(crate) fn files_holding_secrets(dir: &Path, files: &mut usize) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_holding_secrets(&path, files));
            continue;
        }
        *files += 1;
        let held = secrets_in(&std::fs::read(&path).unwrap());
        if !held.is_empty() {
            found.push(format!("{}: {held:?}", path.display()));
        }
    }
    found
}
