//! Panics in user code never escape the pipeline, even when the panic payload's own `drop`
//! panics, an error's `Display` panics, or an input type's `Deserialize` panics: every
//! `tool_use` still gets exactly one answer.

use std::fmt;

use crate::support::{
    self, HALT_TEXT, INJECTED, InjectedPayload, PANIC_TEXT, quiet_injected_panics,
};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::json;
use toolgate::{
    Decision, Dispatcher, HookContext, ToolError, ToolUse,
    audit::Outcome,
    content::INTERNAL_ERROR_MESSAGE,
    dispatch::{PreHookDef, ToolDef},
};

/// An error whose `Display` panics.
#[derive(Debug)]
struct BadDisplay;

impl fmt::Display for BadDisplay {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("{INJECTED}: Display of the error panicked");
    }
}

impl std::error::Error for BadDisplay {}

/// Arguments.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// What to do.
    mode: String,
}

/// Arguments whose `Deserialize` panics on one value.
#[derive(JsonSchema)]
struct Fragile {
    /// A number.
    n: u32,
}

impl<'de> Deserialize<'de> for Fragile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            n: u32,
        }
        let raw = Raw::deserialize(d)?;
        assert!(raw.n != 13, "{INJECTED}: unlucky number");
        Ok(Fragile { n: raw.n })
    }
}

fn dispatcher() -> Dispatcher {
    Dispatcher::builder()
        .tool(ToolDef::sync("act", "Acts.", |_env, a: Args| {
            match a.mode.as_str() {
                "payload" => std::panic::panic_any(InjectedPayload),
                "display" => Err(ToolError::internal(BadDisplay)),
                "converted" => Err(ToolError::from(BadDisplay)),
                "for_model" => Err(ToolError::for_model(BadDisplay)),
                _ => Ok("done".to_owned()),
            }
        }))
        .tool(ToolDef::sync("count", "Counts.", |_env, f: Fragile| {
            Ok(f.n.to_string())
        }))
        .pre_hook(
            PreHookDef::sync("app::hook", 1, |_env, call| {
                if call.input["mode"] == "hook_payload" {
                    std::panic::panic_any(InjectedPayload);
                }
                Ok(Decision::Allow)
            })
            .tools(["act"]),
        )
        .build()
        .unwrap()
}

#[test]
fn no_panic_escapes() {
    // Panics on purpose: kept off stderr, asserted below.
    quiet_injected_panics();
    let d = dispatcher();
    let s = d.session(HookContext::builder("u", "sess_panics").build());
    // Each call its own id: a session answers an id once.
    let n = std::cell::Cell::new(0);
    let run = |name: &str, input| {
        n.set(n.get() + 1);
        let call = ToolUse::new(format!("t{}", n.get()), name, input);
        toolgate::block_on(s.call(&call))
    };
    let (hook_halt, payload, display, converted, for_model, fragile, fine) = (
        run("act", json!({"mode": "hook_payload"})),
        run("act", json!({"mode": "payload"})),
        run("act", json!({"mode": "display"})),
        run("act", json!({"mode": "converted"})),
        run("act", json!({"mode": "for_model"})),
        run("count", json!({"n": 13})),
        run("count", json!({"n": 12})),
    );
    let halt = support::halt_of(hook_halt);
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(
        halt.detail,
        "the hook panicked: a panic with a non-string payload"
    );
    assert_eq!(halt.result().unwrap().content_text(), HALT_TEXT);
    // A payload whose drop panics: still the tool's `panicked` answer.
    let r = payload.unwrap();
    assert!(r.is_error);
    assert_eq!(r.content_text(), PANIC_TEXT);
    // `ToolError::internal` of an error whose Display panics: read by the pipeline, caught there.
    let r = display.unwrap();
    assert!(r.is_error);
    assert_eq!(r.content_text(), INTERNAL_ERROR_MESSAGE);
    // `ToolError::from` is internal too: Display read by the pipeline, caught there.
    assert_eq!(converted.unwrap().content_text(), INTERNAL_ERROR_MESSAGE);
    // `ToolError::for_model` reads Display inside the tool: the tool panicked.
    assert_eq!(for_model.unwrap().content_text(), PANIC_TEXT);
    assert_eq!(
        fragile.unwrap().content_text(),
        "Error: invalid input for tool `count`: the input could not be read (the tool's input \
         type failed on it). Send an input that matches the tool's input_schema."
    );
    assert_eq!(fine.unwrap().content_text(), "12");
    let summary = s.end();
    assert_eq!(summary.calls, 7);
    assert_eq!(
        summary.outcomes.into_iter().collect::<Vec<_>>(),
        [
            (Outcome::Ok, 1),
            (Outcome::ToolError, 2),
            (Outcome::Panicked, 2),
            (Outcome::InvalidInput, 1),
            (Outcome::HookFailed, 1),
        ]
    );
}
