//! [`InboxPage`]: the page's settings and shared state, and its routes.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use toolgate_core::approval::inbox::Inbox;

use crate::PageError;
use crate::auth::{Auth, Sessions, random_hex};

/// The page, ready to serve: [`router`](Self::router) for a host's server, [`serve`](crate::serve)
/// for its own.
#[derive(Clone)]
pub struct InboxPage {
    pub(crate) app: Arc<App>,
}

impl std::fmt::Debug for InboxPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxPage")
            .field("hosts", &self.app.hosts)
            .field("origins", &self.app.origins)
            .finish_non_exhaustive()
    }
}

/// What every request handler shares.
pub(crate) struct App {
    pub(crate) inbox: Arc<Inbox>,
    pub(crate) auth: Auth,
    pub(crate) sessions: Sessions,
    /// This process's random secret (CSRF tokens of identities without a session).
    pub(crate) secret: String,
    /// `Host` header values served, lowercase.
    pub(crate) hosts: Vec<String>,
    /// `Origin` values a POST may come from.
    pub(crate) origins: Vec<String>,
    pub(crate) secure_cookies: bool,
    pub(crate) body_limit: usize,
    pub(crate) poll: Duration,
    pub(crate) page_size: usize,
    /// The live-update streams that may be open at once (each holds a permit while it lasts).
    pub(crate) streams: Arc<tokio::sync::Semaphore>,
    pub(crate) max_streams: usize,
}

/// An [`InboxPage`] being set up: [`InboxPage::builder`].
#[must_use = "call .build() to get the page"]
pub struct InboxPageBuilder {
    inbox: Arc<Inbox>,
    auth: Auth,
    hosts: Vec<String>,
    origins: Vec<String>,
    secure: bool,
    body_limit: usize,
    poll: Duration,
    page_size: usize,
    max_streams: usize,
}

impl InboxPage {
    /// The largest request body taken by default: 64 KiB (an edited input, a reason).
    pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;
    /// How often the live updates look at the store by default: every second.
    pub const DEFAULT_POLL: Duration = Duration::from_secs(1);
    /// How many live-update streams may be open at once by default: 100 (each reads the store
    /// every poll interval while it is open).
    pub const DEFAULT_MAX_STREAMS: usize = 100;

    /// A page over `inbox`, whose people sign in by `auth`.
    pub fn builder(inbox: Arc<Inbox>, auth: Auth) -> InboxPageBuilder {
        InboxPageBuilder {
            inbox,
            auth,
            hosts: Vec::new(),
            origins: Vec::new(),
            secure: false,
            body_limit: InboxPage::DEFAULT_BODY_LIMIT,
            poll: InboxPage::DEFAULT_POLL,
            page_size: 50,
            max_streams: InboxPage::DEFAULT_MAX_STREAMS,
        }
    }

    /// The routes, for a host's server (an axum `Router`; every route behind the page's own
    /// guard: `Host`, `Origin`, CSRF, the security headers). A proxy identity needs the peer's
    /// address: serve it with `into_make_service_with_connect_info::<SocketAddr>()`.
    ///
    /// | route | what |
    /// |---|---|
    /// | `GET /` | the waiting calls, grouped by turn, with the filters |
    /// | `GET /turn?session=S&turn=T` | one turn: every call, its input, its decisions, the forms |
    /// | `POST /decide` | a form's decision (then back to the turn, `303`) |
    /// | `POST /api/decide` | a decision as JSON (`X-CSRF-Token`, `Idempotency-Key` headers) |
    /// | `GET /events` | live updates (server-sent events) |
    /// | `GET /sign-in`, `POST /sign-in`, `POST /sign-out` | tokens only |
    /// | `GET /static/inbox.css`, `/static/inbox.js` | the page's style and script |
    pub fn router(&self) -> Router {
        let app = Arc::clone(&self.app);
        Router::new()
            .route("/", get(crate::pages::list::page))
            .route("/turn", get(crate::pages::turn::page))
            .route("/decide", post(crate::decide::form))
            .route("/api/decide", post(crate::decide::api))
            .route("/events", get(crate::events::stream))
            .route(
                "/sign-in",
                get(crate::pages::sign_in::page).post(crate::pages::sign_in::submit),
            )
            .route("/sign-out", post(crate::pages::sign_in::sign_out))
            .route("/static/inbox.css", get(crate::pages::style))
            .route("/static/inbox.js", get(crate::pages::script))
            .fallback(crate::guard::not_found)
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&app),
                crate::guard::guard,
            ))
            .with_state(app)
    }

    /// The `Host` values this page serves.
    pub fn hosts(&self) -> &[String] {
        &self.app.hosts
    }
}

impl InboxPageBuilder {
    /// The URL people open (`https://inbox.example.com`, `http://127.0.0.1:8080`): its host is
    /// served, its origin is the one POSTs must come from, and with `https` the cookies are
    /// `Secure`. A default port given (`https://inbox.example.com:443`) is also served without
    /// it, as browsers send it.
    ///
    /// # Errors
    /// [`PageError::Config`] when it is not `http://` or `https://` and a host, with no path
    /// beyond `/`.
    pub fn public_url(mut self, url: &str) -> Result<InboxPageBuilder, PageError> {
        let bad = || {
            PageError::Config(format!(
                "--public-url {url}: expected http:// or https:// and a host (and port), no path"
            ))
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
        let host = rest.strip_suffix('/').unwrap_or(rest);
        let valid = matches!(scheme, "http" | "https")
            && !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
        if !valid {
            return Err(bad());
        }
        let host = host.to_ascii_lowercase();
        self.secure |= scheme == "https";
        // Browsers leave the scheme's default port out of `Host` and `Origin`: served both ways.
        let default_port = if scheme == "https" { ":443" } else { ":80" };
        if let Some(bare) = host.strip_suffix(default_port) {
            self.origins.push(format!("{scheme}://{bare}"));
            self.hosts.push(bare.to_owned());
        } else {
            self.origins.push(format!("{scheme}://{host}"));
        }
        self.hosts.push(host);
        Ok(self)
    }

    /// Also serves requests whose `Host` is `host` (`127.0.0.1:8080`), from `http://host`.
    pub fn allow_host(mut self, host: &str) -> InboxPageBuilder {
        let host = host.to_ascii_lowercase();
        self.origins.push(format!("http://{host}"));
        self.hosts.push(host);
        self
    }

    /// The largest request body taken (default [`InboxPage::DEFAULT_BODY_LIMIT`]); a larger one
    /// is refused with `413` and nothing read further.
    pub fn body_limit(mut self, bytes: usize) -> InboxPageBuilder {
        self.body_limit = bytes;
        self
    }

    /// How often the live updates look at the store (default [`InboxPage::DEFAULT_POLL`]).
    pub fn poll_every(mut self, every: Duration) -> InboxPageBuilder {
        self.poll = every.max(Duration::from_millis(50));
        self
    }

    /// How many live-update streams (`GET /events`) may be open at once, across everyone
    /// (default [`InboxPage::DEFAULT_MAX_STREAMS`], at least 1): one more is refused with `503`
    /// until one closes, so tabs or a script left open cannot make the page read the store
    /// without bound. The pages and their forms work without the live updates.
    pub fn max_streams(mut self, n: usize) -> InboxPageBuilder {
        self.max_streams = n.max(1);
        self
    }

    /// How many calls the list shows a page (default 50, at most 500).
    pub fn page_size(mut self, n: usize) -> InboxPageBuilder {
        self.page_size = n.clamp(1, 500);
        self
    }

    pub(crate) fn auth_ref(&self) -> &Auth {
        &self.auth
    }

    pub(crate) fn has_hosts(&self) -> bool {
        !self.hosts.is_empty()
    }

    /// The page.
    ///
    /// # Errors
    /// [`PageError::Random`] when the system gives no random numbers.
    pub fn build(self) -> Result<InboxPage, PageError> {
        let app = App {
            inbox: self.inbox,
            auth: self.auth,
            sessions: Sessions::default(),
            secret: random_hex()?,
            hosts: self.hosts,
            origins: self.origins,
            secure_cookies: self.secure,
            body_limit: self.body_limit,
            poll: self.poll,
            page_size: self.page_size,
            streams: Arc::new(tokio::sync::Semaphore::new(self.max_streams)),
            max_streams: self.max_streams,
        };
        Ok(InboxPage { app: Arc::new(app) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_core::approval::inbox::{Identity, Policy};
    use toolgate_core::store::MemoryPendingStore;

    fn page(url: &str) -> InboxPage {
        let inbox = Inbox::builder(Arc::new(MemoryPendingStore::new()))
            .policy(Policy::new())
            .decision_log(Arc::new(
                toolgate_core::approval::inbox::MemoryDecisionLog::new(),
            ))
            .build()
            .unwrap();
        InboxPage::builder(Arc::new(inbox), Auth::Local(Identity::new("me")))
            .public_url(url)
            .unwrap()
            .build()
            .unwrap()
    }

    #[test]
    fn a_public_url_with_its_default_port_serves_what_browsers_send() {
        // Browsers leave the default port out of Host and Origin.
        let p = page("https://Inbox.Example.com:443/");
        assert_eq!(p.hosts(), ["inbox.example.com", "inbox.example.com:443"]);
        assert_eq!(p.app.origins, ["https://inbox.example.com"]);
        let p = page("http://inbox.example.com:80");
        assert_eq!(p.hosts(), ["inbox.example.com", "inbox.example.com:80"]);
        assert_eq!(p.app.origins, ["http://inbox.example.com"]);
        let p = page("https://inbox.example.com:8443");
        assert_eq!(p.hosts(), ["inbox.example.com:8443"]);
        assert_eq!(p.app.origins, ["https://inbox.example.com:8443"]);
    }
}
