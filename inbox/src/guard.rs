//! What every request passes before a handler sees it, and what every answer carries: the
//! `Host` the page serves (DNS rebinding), the methods it takes, a POST's `Origin` and size, a
//! proxy's address; the security headers (a strict Content-Security-Policy, no framing, no
//! sniffing, nothing cached, never a CORS header). Then who is signed in ([`signed`]) and their
//! CSRF token ([`csrf_ok`]), which the handlers check once they have read the body.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::auth::{Auth, Signed, derived_csrf, equal};

/// The page's Content-Security-Policy: nothing but its own style sheet and script (served as
/// files: no inline script or style runs), its own server-sent events, forms posted to itself,
/// never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// The session cookie's name over plain HTTP (loopback).
pub(crate) const SESSION_COOKIE: &str = "toolgate_inbox";
/// The sign-in form's own cookie over plain HTTP (a random value the form repeats: no sign-in
/// from elsewhere).
pub(crate) const SIGN_IN_COOKIE: &str = "toolgate_inbox_sign_in";

/// The session cookie's name: with `Secure` cookies (the page served over https), the
/// `__Host-` prefixed name, which a browser accepts only from a secure origin, with `Path=/` and
/// no `Domain` (RFC 6265bis, "The __Host- Prefix"), so a sibling subdomain or a plain-http page
/// cannot plant a session cookie beside the real one; else [`SESSION_COOKIE`].
pub(crate) fn session_cookie(secure: bool) -> &'static str {
    if secure {
        "__Host-toolgate_inbox"
    } else {
        SESSION_COOKIE
    }
}

/// The sign-in form's cookie's name, prefixed as [`session_cookie`]'s.
pub(crate) fn sign_in_cookie(secure: bool) -> &'static str {
    if secure {
        "__Host-toolgate_inbox_sign_in"
    } else {
        SIGN_IN_COOKIE
    }
}

/// The guard: refuses what no handler may see, and sets the security headers on every answer.
pub(crate) async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let mut response = match refusal(&app, &req) {
        Some(refused) => refused,
        None => next.run(req).await,
    };
    let h = response.headers_mut();
    let set = |h: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        h.insert(name, HeaderValue::from_static(value));
    };
    set(h, header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY);
    set(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(h, header::X_FRAME_OPTIONS, "DENY");
    set(h, header::REFERRER_POLICY, "same-origin");
    h.insert(
        header::HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        set(h, header::CACHE_CONTROL, "no-store");
    }
    // Never a CORS header, whatever a handler did.
    h.remove(header::ACCESS_CONTROL_ALLOW_ORIGIN);
    h.remove(header::ACCESS_CONTROL_ALLOW_CREDENTIALS);
    response
}

/// Why `req` is refused before any handler, or `None`.
fn refusal(app: &App, req: &Request) -> Option<Response> {
    let method = req.method();
    if method != Method::GET && method != Method::HEAD && method != Method::POST {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "this inbox takes GET and POST only",
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, POST"));
        return Some(r);
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase)
        .or_else(|| {
            req.uri()
                .authority()
                .map(|a| a.as_str().to_ascii_lowercase())
        });
    if !host.is_some_and(|h| app.hosts.contains(&h)) {
        return Some(text(
            StatusCode::MISDIRECTED_REQUEST,
            "refused: the Host header is not one this inbox serves (its --public-url or its \
             listening address)",
        ));
    }
    if let Auth::Proxy(proxy) = &app.auth
        && !peer(req).is_some_and(|ip| proxy.peers.contains(&ip))
    {
        return Some(text(
            StatusCode::FORBIDDEN,
            "refused: this inbox takes requests from its proxy only",
        ));
    }
    if method == Method::POST {
        if !origin_ok(&app.origins, req.headers()) {
            return Some(text(
                StatusCode::FORBIDDEN,
                "refused: a POST must come from this inbox's own pages (its Origin header)",
            ));
        }
        let length = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if length.is_some_and(|n| n > app.body_limit as u64) {
            return Some(too_large(app.body_limit));
        }
    }
    None
}

/// Whether a POST's `Origin` (or, without one, its `Referer`'s origin) is this page's. An
/// `Origin` that is not text is refused, never passed over for the `Referer`.
fn origin_ok(origins: &[String], headers: &HeaderMap) -> bool {
    let value = |name| headers.get(name).map(|v| v.to_str().ok());
    let origin = match value(header::ORIGIN) {
        Some(Some(o)) => o.to_ascii_lowercase(),
        Some(None) => return false,
        None => match value(header::REFERER).flatten().and_then(origin_of) {
            Some(o) => o,
            None => return false,
        },
    };
    origins.contains(&origin)
}

/// `scheme://host[:port]` of a URL, lowercase.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{host}").to_ascii_lowercase())
}

/// The peer's address, when the server recorded it.
pub(crate) fn peer(req: &Request) -> Option<IpAddr> {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}

/// Who is signed in on `req` for a page a person opens: nobody signed in with tokens is sent to
/// the sign-in page (303); any other refusal is its status and sentence (boxed: the rare path).
pub(crate) fn signed_page(app: &App, req: &Request) -> Result<Signed, Box<Response>> {
    match signed(app, req) {
        Ok(who) => Ok(who),
        Err((StatusCode::UNAUTHORIZED, _)) if matches!(app.auth, Auth::Tokens(_)) => {
            Err(Box::new(see_other("/sign-in")))
        }
        Err((status, why)) => Err(Box::new(text(status, why))),
    }
}

/// Who is signed in on `req`, or why nobody is (the status and the sentence).
pub(crate) fn signed(app: &App, req: &Request) -> Result<Signed, (StatusCode, &'static str)> {
    match &app.auth {
        Auth::Tokens(_) => cookie(req.headers(), session_cookie(app.secure_cookies))
            .and_then(|id| app.sessions.find(id))
            .ok_or((StatusCode::UNAUTHORIZED, "sign in first")),
        Auth::Proxy(proxy) => proxy
            .identity(peer(req), req.headers())
            .map(|identity| Signed {
                csrf: derived_csrf(&app.secret, &identity),
                identity,
                session: false,
            })
            .map_err(|(code, why)| {
                (
                    StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN),
                    why,
                )
            }),
        Auth::Local(identity) => Ok(Signed {
            csrf: derived_csrf(&app.secret, identity),
            identity: identity.clone(),
            session: false,
        }),
    }
}

/// Whether `given` is the signed-in person's CSRF token (compared in constant time).
pub(crate) fn csrf_ok(who: &Signed, given: Option<&str>) -> bool {
    given.is_some_and(|g| equal(g.as_bytes(), who.csrf.as_bytes()))
}

/// The value of the cookie `name`.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value: `HttpOnly; SameSite=Strict; Path=/`, `Secure` when `secure`, and
/// `Max-Age=0` to remove it.
pub(crate) fn set_cookie(name: &str, value: &str, secure: bool, remove: bool) -> HeaderValue {
    let mut text = format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict");
    if secure {
        text.push_str("; Secure");
    }
    if remove {
        text.push_str("; Max-Age=0");
    }
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A plain-text answer.
pub(crate) fn text(status: StatusCode, body: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{body}\n"),
    )
        .into_response()
}

/// `413` for a body over `limit` bytes.
pub(crate) fn too_large(limit: usize) -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("refused: the body is over this inbox's bound of {limit} bytes\n"),
    )
        .into_response()
}

/// `404` for any other path.
pub(crate) async fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "no such page in this inbox")
}

/// `303 See Other` to `to` (a path of this page).
pub(crate) fn see_other(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// The body of `req`, at most `limit` bytes.
///
/// # Errors
/// `413` when it is larger (nothing more is read).
pub(crate) async fn body(req: Request, limit: usize) -> Result<axum::body::Bytes, Response> {
    axum::body::to_bytes(req.into_body(), limit)
        .await
        .map_err(|_| too_large(limit))
}

/// The pairs of a form body or a query string.
pub(crate) fn pairs(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The first value of `name` in `pairs`.
pub(crate) fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_the_scheme_and_host_of_a_url() {
        assert_eq!(
            origin_of("http://127.0.0.1:8080/turn?x=1").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            origin_of("https://Inbox.Example.com").as_deref(),
            Some("https://inbox.example.com")
        );
        assert_eq!(origin_of("/relative"), None);
    }

    #[test]
    fn an_origin_that_is_not_text_is_refused_not_passed_over_for_the_referer() {
        let own = vec!["http://127.0.0.1:8080".to_owned()];
        let mut h = HeaderMap::new();
        h.insert(
            header::REFERER,
            HeaderValue::from_static("http://127.0.0.1:8080/turn"),
        );
        assert!(origin_ok(&own, &h), "no Origin: the Referer's");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_bytes(b"http://evil.example\xff").unwrap(),
        );
        assert!(!origin_ok(&own, &h), "an Origin is read, or refused");
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!origin_ok(&own, &h));
    }

    #[test]
    fn a_cookie_is_found_by_its_exact_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; toolgate_inbox_x=2; toolgate_inbox=3"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("3"));
        assert_eq!(cookie(&h, "b"), None);
    }

    #[test]
    fn secure_cookies_take_the_host_prefix_and_plain_ones_do_not() {
        assert_eq!(
            set_cookie(session_cookie(true), "abc", true, false),
            "__Host-toolgate_inbox=abc; Path=/; HttpOnly; SameSite=Strict; Secure"
        );
        assert_eq!(
            set_cookie(sign_in_cookie(true), "", true, true),
            "__Host-toolgate_inbox_sign_in=; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age=0"
        );
        assert_eq!(
            set_cookie(session_cookie(false), "abc", false, false),
            "toolgate_inbox=abc; Path=/; HttpOnly; SameSite=Strict"
        );
        assert_eq!(sign_in_cookie(false), SIGN_IN_COOKIE);
        // Over https a cookie without the prefix (one a sibling subdomain could set) is not
        // the session's.
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("toolgate_inbox=planted; __Host-toolgate_inbox=real"),
        );
        assert_eq!(cookie(&h, session_cookie(true)), Some("real"));
    }
}
