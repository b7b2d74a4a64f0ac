//! [`Effect`]: what a tool does to the world (reads it, or writes to it), in the vocabulary of
//! MCP's tool annotations.

use serde_json::{Map, Value};

/// What a tool does to the world: reads it, or writes to it, with MCP's optional hints.
///
/// A tool's effect is declared with `#[tool(effect = "read" | "write")]` or
/// [`ToolDef::effect`](crate::dispatch::ToolDef::effect); a wrapped caller declares it per tool in
/// the `annotations` of its definitions (MCP's own shape). It decides two things:
///
/// - **No write tool without a guard.**
///   [`DispatcherBuilder::build`](crate::dispatch::DispatcherBuilder::build) fails with
///   [`BuildProblem::UnguardedWrite`](crate::dispatch::BuildProblem::UnguardedWrite) when a `write`
///   tool has no PreToolUse hook in its chain, unless the tool says why it needs none
///   (`#[tool(effect = "write", unguarded = "…")]`,
///   [`ToolDef::unguarded`](crate::dispatch::ToolDef::unguarded)).
///   [`DispatcherBuilder::undeclared_effects_are_writes`](crate::dispatch::DispatcherBuilder::undeclared_effects_are_writes)
///   makes every tool without a declared effect count as `write`.
/// - **What a client is told.** [`Effect::mcp_annotations`] gives MCP's `annotations` object of a
///   `tools/list` entry, and [`Dispatcher::tool_effect`](crate::Dispatcher::tool_effect) answers
///   it per tool (for the MCP server, and for running read tools of one message concurrently).
///
/// # The mapping to MCP (specification 2025-06-18, "Tool annotations")
///
/// | toolgate | MCP `annotations` |
/// |---|---|
/// | `effect = "read"` | `"readOnlyHint": true` |
/// | `effect = "write"` | `"readOnlyHint": false` |
/// | `destructive = true` / `false` (write only) | `"destructiveHint": true` / `false` |
/// | `idempotent = true` / `false` (write only) | `"idempotentHint": true` / `false` |
/// | `open_world = true` / `false` | `"openWorldHint": true` / `false` |
///
/// A hint not declared is left out, so a client applies MCP's defaults, which are the cautious
/// reading (`destructiveHint: true`, `idempotentHint: false`, `openWorldHint: true`). MCP gives
/// `destructiveHint` and `idempotentHint` a meaning only when `readOnlyHint` is false, so they are
/// refused on a read tool (a compile error for `#[tool]`; [`Effect::destructive`] and
/// [`Effect::idempotent`] leave a read effect unchanged). Annotations are hints for clients and the
/// model's host, never a security boundary: toolgate's own rule is the guard requirement above.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::dispatch::Effect;
///
/// let refund = Effect::write().destructive(true).idempotent(false);
/// assert!(refund.is_write());
/// assert_eq!(
///     serde_json::Value::Object(refund.mcp_annotations()),
///     json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false})
/// );
/// assert_eq!(Effect::from_mcp_annotations(&json!({"readOnlyHint": true})), Some(Effect::read()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Effect {
    read_only: bool,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
}

impl Effect {
    /// A tool that only reads (`readOnlyHint: true`): a lookup, a search. It needs no guard.
    pub const fn read() -> Self {
        Effect {
            read_only: true,
            destructive: None,
            idempotent: None,
            open_world: None,
        }
    }

    /// A tool that changes something (`readOnlyHint: false`): a refund, a ticket, an email. A
    /// PreToolUse hook must guard it, or it must say why it needs none.
    pub const fn write() -> Self {
        Effect {
            read_only: false,
            destructive: None,
            idempotent: None,
            open_world: None,
        }
    }

    /// Declares whether the write may destroy or overwrite (`destructiveHint`); MCP's default
    /// when undeclared is `true`. Ignored on a read effect (MCP gives it no meaning there).
    pub const fn destructive(mut self, destructive: bool) -> Self {
        if !self.read_only {
            self.destructive = Some(destructive);
        }
        self
    }

    /// Declares whether calling again with the same input has no further effect
    /// (`idempotentHint`); MCP's default when undeclared is `false`. Ignored on a read effect.
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        if !self.read_only {
            self.idempotent = Some(idempotent);
        }
        self
    }

    /// Declares whether the tool reaches beyond the host's own systems (the web, a payment
    /// provider: `openWorldHint`); MCP's default when undeclared is `true`.
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// Whether the tool only reads.
    pub const fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the tool writes (the guard requirement applies).
    pub const fn is_write(&self) -> bool {
        !self.read_only
    }

    /// `destructiveHint` as declared (`None`: undeclared, or a read effect).
    pub const fn destructive_hint(&self) -> Option<bool> {
        self.destructive
    }

    /// `idempotentHint` as declared (`None`: undeclared, or a read effect).
    pub const fn idempotent_hint(&self) -> Option<bool> {
        self.idempotent
    }

    /// `openWorldHint` as declared (`None`: undeclared).
    pub const fn open_world_hint(&self) -> Option<bool> {
        self.open_world
    }

    /// MCP's `annotations` object for a `tools/list` entry: `readOnlyHint` always, the other
    /// hints when declared, in the order of the specification (`readOnlyHint`,
    /// `destructiveHint`, `idempotentHint`, `openWorldHint`).
    pub fn mcp_annotations(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("readOnlyHint".into(), Value::Bool(self.read_only));
        let hints = [
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ];
        for (key, hint) in hints {
            if let Some(b) = hint {
                out.insert(key.into(), Value::Bool(b));
            }
        }
        out
    }

    /// The effect an MCP `annotations` object declares (a remote server's `tools/list` entry):
    /// `readOnlyHint: true` is [`read`](Self::read), `false` is [`write`](Self::write), the other
    /// boolean hints carried over. `None` when `readOnlyHint` is absent or not a boolean: the
    /// effect is then undeclared (MCP's default reading is "not read-only", which
    /// [`DispatcherBuilder::undeclared_effects_are_writes`](crate::dispatch::DispatcherBuilder::undeclared_effects_are_writes)
    /// makes toolgate's too). A hint that is not a boolean is ignored.
    pub fn from_mcp_annotations(annotations: &Value) -> Option<Effect> {
        let hint = |key: &str| annotations.get(key).and_then(Value::as_bool);
        let mut effect = match hint("readOnlyHint")? {
            true => Effect::read(),
            false => Effect::write(),
        };
        if let Some(b) = hint("destructiveHint") {
            effect = effect.destructive(b);
        }
        if let Some(b) = hint("idempotentHint") {
            effect = effect.idempotent(b);
        }
        if let Some(b) = hint("openWorldHint") {
            effect = effect.open_world(b);
        }
        Some(effect)
    }
}
