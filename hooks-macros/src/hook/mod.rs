//! `#[pre_hook]`, `#[post_hook]` and `#[stop_hook]`: parse the attribute and the function, check
//! them into a [`HookSpec`], then expand (serde_derive's `from_ast` → `check` → `ctxt.check()?` →
//! expand). With errors, the function and the errors.

mod check;
mod expand;

use proc_macro2::TokenStream;

use crate::args::Keys;
use crate::ctxt::Ctxt;
use crate::func::Func;
use crate::params::Subject;

pub(crate) use check::HookSpec;

/// Which hook attribute.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `#[pre_hook]`: PreToolUse.
    Pre,
    /// `#[post_hook]`: PostToolUse.
    Post,
    /// `#[stop_hook]`: Stop.
    Stop,
}

impl Kind {
    /// The arguments the attribute accepts.
    fn keys(self) -> Keys {
        match self {
            Kind::Pre => Keys {
                attr: "pre_hook",
                valid: &["order", "tools", "timeout_ms", "crate"],
            },
            Kind::Post => Keys {
                attr: "post_hook",
                valid: &["tools", "crate"],
            },
            Kind::Stop => Keys {
                attr: "stop_hook",
                valid: &["crate"],
            },
        }
    }

    /// What the function is, for messages.
    fn describe(self) -> &'static str {
        match self {
            Kind::Pre => "PreToolUse hook",
            Kind::Post => "PostToolUse observer",
            Kind::Stop => "Stop hook",
        }
    }

    /// What the hook is about, given by reference.
    fn subject(self) -> Subject {
        match self {
            Kind::Pre => Subject::ToolUse,
            Kind::Post => Subject::CallRecord,
            Kind::Stop => Subject::SessionSummary,
        }
    }
}

pub(crate) fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match Func::parse_item(item) {
        Ok(func) => func,
        Err(echo) => return echo,
    };
    let mut cx = Ctxt::new();
    let spec = HookSpec::from_ast(&mut cx, kind, args, func);
    match cx.check() {
        Ok(()) => expand::hook(&spec),
        Err(errors) => expand::fallback(&spec, &errors),
    }
}
