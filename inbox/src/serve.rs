//! Serving the page on an address of its own: [`bind`] checks the address against the
//! authentication (loopback only without one), derives the `Host` values it serves, and listens;
//! [`serve`] answers until the process ends.

use std::net::{SocketAddr, TcpListener};

use crate::app::{InboxPage, InboxPageBuilder};
use crate::{Auth, PageError};

/// A page bound to its address, not yet answering: [`serve`] it.
#[derive(Debug)]
pub struct Listening {
    page: InboxPage,
    listener: TcpListener,
    addr: SocketAddr,
}

impl Listening {
    /// The address listened on (its port when `:0` was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page.
    pub fn page(&self) -> &InboxPage {
        &self.page
    }
}

/// Listens on `addr` for `page`, whose people sign in by `auth`.
///
/// The `Host` values served are the public URL's (`--public-url`), and for an address of its
/// own, `IP:PORT` (a loopback address: also `localhost:PORT`). Listening on every address
/// (`0.0.0.0`, `::`) needs a public URL, since no `Host` can be derived from it.
///
/// # Errors
/// [`PageError::NotLoopback`] when `auth` is [`Auth::Local`] (no authentication) and `addr` is
/// not a loopback address; [`PageError::Config`] for every address without a public URL;
/// [`PageError::Listen`] when the address cannot be listened on.
pub fn bind(page: InboxPageBuilder, addr: SocketAddr) -> Result<Listening, PageError> {
    let (local, has_hosts) = page.peek();
    if local && !addr.ip().is_loopback() {
        return Err(PageError::NotLoopback(addr.to_string()));
    }
    if addr.ip().is_unspecified() && !has_hosts {
        return Err(PageError::Config(format!(
            "listening on every address ({addr}) needs --public-url, the URL people open: no Host \
             can be derived from it"
        )));
    }
    let listener = TcpListener::bind(addr).map_err(PageError::Listen)?;
    listener.set_nonblocking(true).map_err(PageError::Listen)?;
    let addr = listener.local_addr().map_err(PageError::Listen)?;
    let mut page = page;
    if !addr.ip().is_unspecified() {
        page = page.allow_host(&addr.to_string());
        if addr.ip().is_loopback() {
            page = page.allow_host(&format!("localhost:{}", addr.port()));
        }
    }
    Ok(Listening {
        page: page.build()?,
        listener,
        addr,
    })
}

/// Answers requests on `listening` until the process ends (on the tokio runtime it runs on).
///
/// # Errors
/// The I/O error that stopped the server.
pub async fn serve(listening: Listening) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listening.listener)?;
    let service = listening
        .page
        .router()
        .into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service).await
}

impl InboxPageBuilder {
    /// Whether the page has no authentication, and whether it has hosts already.
    fn peek(&self) -> (bool, bool) {
        (matches!(self.auth_ref(), Auth::Local(_)), self.has_hosts())
    }
}

/// [`serve`] on a runtime of its own (two worker threads, and the blocking threads the stores'
/// calls run on), blocking the calling thread until the server stops.
///
/// # Errors
/// The I/O error that stopped the server, or why the runtime could not start.
pub fn serve_blocking(listening: Listening) -> std::io::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(serve(listening))
}
