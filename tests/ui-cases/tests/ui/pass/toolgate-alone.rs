//! Generated code reaches serde, schemars and inventory through `::toolgate::__private`: this
//! file names no crate but `toolgate`, and forbids unsafe code.
#![forbid(unsafe_code)]

use toolgate::{
    Decision, Dispatcher, HookContext, State, ToolUse,
    audit::{CallRecord, SessionSummary},
    post_hook, pre_hook, stop_hook, tool,
};

struct Counter(std::sync::atomic::AtomicU32);

/// Greets someone.
#[tool]
fn greet(
    /// Who to greet.
    name: String,
    /// How many exclamation marks.
    excitement: Option<u8>,
    ctx: &HookContext,
    counter: State<Counter>,
) -> Result<String, std::fmt::Error> {
    counter.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let marks = "!".repeat(excitement.unwrap_or(1) as usize);
    Ok(format!("Hello {name}{marks} (from {})", ctx.user_id()))
}

#[pre_hook(order = 1, tools = [greet])]
async fn no_shouting(call: &ToolUse, _counter: State<Counter>) -> Decision {
    if call.input["excitement"].as_u64().unwrap_or(0) > 3 {
        Decision::deny("no shouting.")
    } else {
        Decision::Allow
    }
}

#[post_hook(tools = [greet])]
fn observe(_record: &CallRecord<'_>) {}

#[stop_hook]
fn done(_ctx: &HookContext, _summary: &SessionSummary) -> Result<(), String> {
    Ok(())
}

fn main() {
    let d = Dispatcher::builder()
        .registered_under(module_path!())
        .state(Counter(std::sync::atomic::AtomicU32::new(0)))
        .build()
        .unwrap();
    let s = d.session(HookContext::builder("u_1", "s_1").build());
    let call = ToolUse::new(
        "t",
        "greet",
        toolgate::__private::serde_json::json!({"name": "Ada"}),
    );
    let r = toolgate::block_on(s.call(&call)).unwrap();
    assert_eq!(r.content_text(), "Hello Ada! (from u_1)");
}
