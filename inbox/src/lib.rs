//! The approval inbox's page: people decide a toolgate agent's paused calls in a browser, signed
//! in, under a policy. It is the HTTP half of `toolgate_core::approval::inbox` (feature `inbox`),
//! which holds every rule that must hold (one decision per call, the policy applied by the store
//! in the decision's own atomic step, expiry by the store's clock, edits checked against the
//! tool's schema); this crate shows the calls, turns a person's form into a
//! [`DecisionRequest`](toolgate_core::approval::inbox::DecisionRequest) for the signed-in
//! [`Identity`](toolgate_core::approval::inbox::Identity), and closes the browser's attacks.
//!
//! `toolgate inbox SOURCE --listen ADDR` serves it; a host mounts [`InboxPage::router`] (an axum
//! `Router`, a tower service) in its own server, behind its own middleware:
//!
//! ```
//! use std::sync::Arc;
//! use toolgate_core::approval::inbox::{Action, Identity, Inbox, MemoryDecisionLog, Policy};
//! use toolgate_core::store::MemoryPendingStore;
//! use toolgate_inbox::{Auth, InboxPage, Tokens, new_token};
//!
//! let inbox = Inbox::builder(Arc::new(MemoryPendingStore::new()))
//!     .policy(Policy::new().allow("group:leads", &[Action::Approve, Action::Decline], &["*"]))
//!     .decision_log(Arc::new(MemoryDecisionLog::new()))
//!     .build()?;
//! let (token, hash) = new_token()?;
//! let tokens = Tokens::parse(&format!(
//!     "[[person]]\nid = \"lead@example.com\"\ngroups = [\"leads\"]\ntoken_sha256 = \"{hash}\"\n"
//! ))?;
//! let page = InboxPage::builder(Arc::new(inbox), Auth::Tokens(tokens))
//!     .public_url("https://inbox.example.com")?
//!     .build()?;
//! let router: axum::Router = page.router();
//! # let _ = (router, token);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it promises (docs/inbox.md, "Security")
//!
//! - `decided_by` is the signed-in identity ([`Auth`]): a token's session, a trusted proxy's
//!   header from the proxy's addresses only, or the one local person; never a form field (a JSON
//!   body naming one is refused: unknown fields are refused).
//! - Without authentication ([`Auth::Local`]) [`serve`] listens on a loopback address only.
//! - Every request's `Host` is one this page serves (DNS rebinding); no CORS header is ever
//!   sent; every POST carries an `Origin` (or `Referer`) of this page and the identity's CSRF
//!   token; cookies are `HttpOnly; SameSite=Strict` (`Secure` when the public URL is https); a
//!   strict Content-Security-Policy ([`CONTENT_SECURITY_POLICY`]); bodies are bounded.
//! - Nothing secret (a token, a session id, the store's password) is put in a page, a log line or
//!   an error.

mod app;
mod auth;
mod decide;
mod events;
mod guard;
mod pages;
mod serve;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod source;

pub use app::{InboxPage, InboxPageBuilder};
pub use auth::{Auth, Person, ProxyAuth, SESSION_TTL, Tokens, new_token};
pub use guard::CONTENT_SECURITY_POLICY;
pub use serve::{Listening, bind, serve, serve_blocking};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use source::Source;

use toolgate_core::approval::inbox::Policy;

/// Why the page could not be set up or served.
#[derive(Debug)]
#[non_exhaustive]
pub enum PageError {
    /// A file or setting is wrong: the sentence says which and how.
    Config(String),
    /// Without authentication the page listens on loopback only: the address asked for.
    NotLoopback(String),
    /// The address could not be listened on.
    Listen(std::io::Error),
    /// The store could not be opened.
    Store(String),
    /// The operating system gave no random numbers.
    Random(String),
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::Config(why) | PageError::Store(why) => f.write_str(why),
            PageError::NotLoopback(addr) => write!(
                f,
                "without authentication the inbox listens on a loopback address only \
                 (127.0.0.1 or ::1), not {addr}: give --tokens FILE or --trusted-proxy ADDR"
            ),
            PageError::Listen(e) => write!(f, "cannot listen: {e}"),
            PageError::Random(e) => write!(f, "no random numbers from the system: {e}"),
        }
    }
}

impl std::error::Error for PageError {}

/// Reads a policy file: TOML of [`Policy`]'s shape (unknown keys refused, so a typo never widens
/// or narrows the policy silently).
///
/// ```toml
/// # Leads approve, edit and decline refunds; a refund needs two of them.
/// two_person = ["issue_refund"]
///
/// [[rules]]
/// who = ["group:support-leads"]
/// may = ["approve", "edit", "decline"]
/// tools = ["issue_refund"]
/// ```
///
/// # Errors
/// [`PageError::Config`] naming the file and the problem.
pub fn read_policy(path: &std::path::Path) -> Result<Policy, PageError> {
    let named = |e: String| PageError::Config(format!("{}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| named(e.to_string()))?;
    parse_policy(&text).map_err(named)
}

/// Reads a policy file's text ([`read_policy`]).
///
/// # Errors
/// The problem, as TOML or the policy's own check says it.
pub fn parse_policy(text: &str) -> Result<Policy, String> {
    toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())
}
