//! What a list of the inbox asks for ([`Query`]: a state, filters, an order, a page size and a
//! [`Cursor`]) and what it gets ([`Page`]).

use std::time::Duration;

use super::call::{CallState, Cursor, InboxCall};

/// The order of a list: by when the store kept each turn (and a call's place in its turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Order {
    /// The oldest first (the default: the call closest to its expiry first).
    #[default]
    OldestFirst,
    /// The newest first.
    NewestFirst,
}

/// What a list of the inbox asks for: the calls in one state (or every state), those matching
/// every filter given, in an order, a page at a time.
///
/// ```
/// use std::time::Duration;
/// use toolgate_core::approval::inbox::{CallState, Query};
///
/// // The page's default view: waiting refunds that expire within the hour, newest first.
/// let q = Query::waiting()
///     .tool("issue_refund")
///     .expires_within(Duration::from_secs(3600))
///     .newest_first()
///     .limit(20);
/// assert_eq!(q.state(), Some(CallState::Waiting));
/// assert_eq!(q.page_size(), 20);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub(crate) state: Option<CallState>,
    pub(crate) tool: Option<String>,
    pub(crate) asked_by: Option<String>,
    pub(crate) user_id: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) expires_within: Option<Duration>,
    pub(crate) order: Order,
    pub(crate) limit: usize,
    pub(crate) after: Option<Cursor>,
}

impl Default for Query {
    /// [`Query::waiting`].
    fn default() -> Self {
        Query::waiting()
    }
}

impl Query {
    /// The page size when none is given.
    pub const DEFAULT_LIMIT: usize = 50;
    /// The largest page a list returns (a larger [`limit`](Self::limit) is cut to it).
    pub const MAX_LIMIT: usize = 500;

    /// The calls waiting for a person now: not decided, not expired, their turn not taken by
    /// a resume. Oldest first, [`DEFAULT_LIMIT`](Self::DEFAULT_LIMIT) a page.
    pub fn waiting() -> Query {
        Query::in_state(Some(CallState::Waiting))
    }

    /// Every call whatever its state (a waiting call past its expiry reads `expired`).
    pub fn all() -> Query {
        Query::in_state(None)
    }

    fn in_state(state: Option<CallState>) -> Query {
        Query {
            state,
            tool: None,
            asked_by: None,
            user_id: None,
            session_id: None,
            expires_within: None,
            order: Order::OldestFirst,
            limit: Query::DEFAULT_LIMIT,
            after: None,
        }
    }

    /// The calls in `state` only ([`CallState::Expired`]: those nobody decided in time, taken
    /// for a resume or not yet).
    pub fn in_state_of(mut self, state: CallState) -> Query {
        self.state = Some(state);
        self
    }

    /// Calls of the tool named `tool` only.
    pub fn tool(mut self, tool: impl Into<String>) -> Query {
        self.tool = Some(tool.into());
        self
    }

    /// Calls the PreToolUse hook `hook` (its full path, as `asked_by` names it) asked about.
    pub fn asked_by(mut self, hook: impl Into<String>) -> Query {
        self.asked_by = Some(hook.into());
        self
    }

    /// Calls made on behalf of the user `user_id` only.
    pub fn user(mut self, user_id: impl Into<String>) -> Query {
        self.user_id = Some(user_id.into());
        self
    }

    /// Calls of the session `session_id` only.
    pub fn session(mut self, session_id: impl Into<String>) -> Query {
        self.session_id = Some(session_id.into());
        self
    }

    /// Calls whose expiry comes within `window` from now (by the store's clock), not yet past.
    pub fn expires_within(mut self, window: Duration) -> Query {
        self.expires_within = Some(window);
        self
    }

    /// The newest first.
    pub fn newest_first(mut self) -> Query {
        self.order = Order::NewestFirst;
        self
    }

    /// The oldest first (the default).
    pub fn oldest_first(mut self) -> Query {
        self.order = Order::OldestFirst;
        self
    }

    /// At most `n` calls a page (at least 1, at most [`MAX_LIMIT`](Self::MAX_LIMIT)).
    pub fn limit(mut self, n: usize) -> Query {
        self.limit = n.clamp(1, Query::MAX_LIMIT);
        self
    }

    /// The page after `cursor` (a [`Page::next`] of the same query).
    pub fn after(mut self, cursor: Cursor) -> Query {
        self.after = Some(cursor);
        self
    }

    /// The state asked for (`None`: every state).
    pub fn state(&self) -> Option<CallState> {
        self.state
    }

    /// The page size.
    pub fn page_size(&self) -> usize {
        self.limit
    }

    /// The order.
    pub fn order(&self) -> Order {
        self.order
    }

    /// The tool filter.
    pub fn tool_filter(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The asking hook filter.
    pub fn asked_by_filter(&self) -> Option<&str> {
        self.asked_by.as_deref()
    }

    /// The user filter.
    pub fn user_filter(&self) -> Option<&str> {
        self.user_id.as_deref()
    }

    /// The session filter.
    pub fn session_filter(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The expiry window.
    pub fn expiry_window(&self) -> Option<Duration> {
        self.expires_within
    }

    /// The cursor the page starts after.
    pub fn cursor(&self) -> Option<Cursor> {
        self.after
    }
}

/// One page of a list: its calls in the query's order, and the cursor of the next page when
/// there are more.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page {
    /// The calls.
    pub calls: Vec<InboxCall>,
    /// Where the next page starts, when more calls match.
    pub next: Option<Cursor>,
}

impl Page {
    /// The page of `rows` fetched for `query` (at most `limit + 1`: one more than a page says
    /// there is a next one).
    pub(crate) fn of(mut rows: Vec<InboxCall>, query: &Query) -> Page {
        let more = rows.len() > query.limit;
        rows.truncate(query.limit);
        let next = if more {
            rows.last().map(InboxCall::cursor)
        } else {
            None
        };
        Page { calls: rows, next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_size_is_kept_within_its_bounds() {
        assert_eq!(Query::waiting().limit(0).page_size(), 1);
        assert_eq!(Query::waiting().limit(10_000).page_size(), Query::MAX_LIMIT);
        assert_eq!(Query::default(), Query::waiting());
    }
}
